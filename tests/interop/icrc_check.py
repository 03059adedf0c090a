#!/usr/bin/python3
"""Check the ICRC of every RoCEv2 frame in pcaps, and cut captures into test steps.

    /usr/bin/python3 tests/interop/icrc_check.py [-v] [--split DIR] CAP.pcap...

Each IPv4/UDP frame to port 4791 gets its ICRC computed two independent ways, and both must
equal the 4 bytes on the wire:
  1. from scratch with zlib.crc32 over 8 x 0xFF, the IPv4 header with TOS, TTL and checksum set to
     all ones, the UDP header with its checksum set to all ones, and the BTH with byte 4
     (FECN/BECN/resv6) set to all ones, followed by the rest of the packet up to the ICRC;
  2. by scapy.contrib.roce: BTH.compute_icrc on the dissected frame (what BTH.post_build runs
     when the icrc field is left empty).
The ICRC is located from the IP total length, never from the frame's end (short frames carry
Ethernet padding after it). Exit status: 0 when every RoCE frame checks, 1 otherwise.

--split DIR writes one pcap per step: the guests send an ICMP echo request with 200+N data bytes
(pattern 0x5a) before step N (guest/gn.sh gn_marker); frames before the first marker are step 0.
Use Debian's /usr/bin/python3: it sees python3-scapy (a pyenv python3 does not).
"""
import argparse
import os
import struct
import sys
import zlib

ROCE_PORT = 4791
PCAP_HDR = struct.Struct("<IHHiIII")
REC_HDR = struct.Struct("<IIII")

OPCODE_NAMES = {
    0x00: "SEND_FIRST", 0x01: "SEND_MIDDLE", 0x02: "SEND_LAST", 0x03: "SEND_LAST_IMM",
    0x04: "SEND_ONLY", 0x05: "SEND_ONLY_IMM", 0x06: "WRITE_FIRST", 0x07: "WRITE_MIDDLE",
    0x08: "WRITE_LAST", 0x09: "WRITE_LAST_IMM", 0x0A: "WRITE_ONLY", 0x0B: "WRITE_ONLY_IMM",
    0x0C: "READ_REQ", 0x0D: "READ_RESP_FIRST", 0x0E: "READ_RESP_MIDDLE", 0x0F: "READ_RESP_LAST",
    0x10: "READ_RESP_ONLY", 0x11: "ACK", 0x12: "ATOMIC_ACK", 0x13: "CMP_SWAP", 0x14: "FETCH_ADD",
}


def opcode_name(op):
    base = OPCODE_NAMES.get(op & 0x1F, "0x%02x" % op)
    return {0x00: "RC_", 0x20: "UC_"}.get(op & 0xE0, "0x%02x:" % (op & 0xE0)) + base


def read_pcap(path):
    """Yield (ts_sec, ts_usec, frame bytes) from a classic little- or big-endian pcap."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < PCAP_HDR.size:
        return
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        rec = REC_HDR
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        rec = struct.Struct(">IIII")
    else:
        raise ValueError("%s: not a pcap file" % path)
    off = PCAP_HDR.size
    while off + rec.size <= len(data):
        sec, usec, incl, _ = rec.unpack_from(data, off)
        off += rec.size
        yield sec, usec, data[off:off + incl]
        off += incl


def write_pcap(path, records):
    """Write (ts_sec, ts_usec, frame) records as a little-endian, microsecond, Ethernet pcap."""
    with open(path, "wb") as f:
        f.write(PCAP_HDR.pack(0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for sec, usec, frame in records:
            f.write(REC_HDR.pack(sec, usec, len(frame), len(frame)))
            f.write(frame)


def ipv4_udp(frame):
    """Return (ihl, total_len, proto) of an untagged IPv4 frame, or None."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[14] >> 4 != 4:
        return None
    ihl = (frame[14] & 0x0F) * 4
    total = struct.unpack_from("!H", frame, 16)[0]
    if ihl < 20 or total < ihl or 14 + total > len(frame):
        return None
    return ihl, total, frame[23]


def roce_payload(frame):
    """Return (ihl, total) when frame is IPv4/UDP to port 4791, else None."""
    hdr = ipv4_udp(frame)
    if not hdr or hdr[2] != 17:
        return None
    ihl, total, _ = hdr
    if total < ihl + 8 + 12 + 4:
        return None
    if struct.unpack_from("!H", frame, 14 + ihl + 2)[0] != ROCE_PORT:
        return None
    return ihl, total


def marker_step(frame):
    """Return N when frame is a step marker (ICMP echo request, 200+N data bytes of 0x5a)."""
    hdr = ipv4_udp(frame)
    if not hdr or hdr[2] != 1:
        return None
    ihl, total, _ = hdr
    icmp = frame[14 + ihl:14 + total]
    if len(icmp) < 8 or icmp[0] != 8:
        return None
    data = icmp[8:]
    # busybox ping writes a 4-byte timestamp over the start of the pattern
    if not 200 <= len(data) <= 455 or data[4:] != b"\x5a" * (len(data) - 4):
        return None
    return len(data) - 200


def icrc_zlib(frame, ihl, total):
    """ICRC from first principles (masking per IBTA Annex A17 / rxe_icrc.c)."""
    ip = bytearray(frame[14:14 + ihl])
    udp = bytearray(frame[14 + ihl:22 + ihl])
    ib = bytearray(frame[22 + ihl:14 + total - 4])
    ip[1] = 0xFF               # TOS (DSCP + ECN)
    ip[8] = 0xFF               # TTL
    ip[10:12] = b"\xff\xff"    # header checksum
    udp[6:8] = b"\xff\xff"     # UDP checksum
    ib[4] = 0xFF               # BTH FECN | BECN | resv6
    crc = zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(ib)) & 0xFFFFFFFF
    return struct.pack("<I", crc)


_scapy = None


def icrc_scapy(frame, total):
    """ICRC as scapy.contrib.roce computes it (independent code path)."""
    global _scapy
    if _scapy is None:
        import logging
        logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
        from scapy.all import Ether, raw
        from scapy.contrib.roce import BTH
        _scapy = (Ether, raw, BTH)
    Ether, raw, BTH = _scapy
    pkt = Ether(frame[:14 + total])
    if not pkt.haslayer(BTH):
        return None
    # What BTH.post_build does when the icrc field is None, without re-building the whole frame.
    return pkt[BTH].compute_icrc(None)


_checked = {}


def check_frame(frame):
    """Return None for non-RoCE frames, else dict(ok, opcode, psn, qpn, wire, zlib, scapy).

    Results are memoised by frame bytes: both ends of a wire capture the same frames, and scapy
    is the slow part."""
    if frame not in _checked:
        _checked[frame] = _check_frame(frame)
    return _checked[frame]


def _check_frame(frame):
    r = roce_payload(frame)
    if not r:
        return None
    ihl, total = r
    bth = 14 + ihl + 8
    wire = frame[14 + total - 4:14 + total]
    a = icrc_zlib(frame, ihl, total)
    b = icrc_scapy(frame, total)
    return {
        "ok": wire == a == b,
        "opcode": frame[bth],
        "qpn": struct.unpack_from("!I", frame, bth + 4)[0] & 0xFFFFFF,
        "psn": struct.unpack_from("!I", frame, bth + 8)[0] & 0xFFFFFF,
        "wire": wire.hex(), "zlib": a.hex(), "scapy": b.hex() if b else None,
    }


class Segment:
    def __init__(self, step):
        self.step = step
        self.records = []      # every frame of the step, the marker included
        self.roce = []         # RoCE frames only
        self.good = 0
        self.bad = 0
        self.opcodes = {}
        self.seen = set()
        self.dups = 0          # frames seen before in this step: RC retransmissions

    def summary(self):
        return {"step": self.step, "frames": len(self.roce), "icrc_ok": self.good,
                "icrc_bad": self.bad, "dups": self.dups,
                "opcodes": {"0x%02x" % k: v for k, v in sorted(self.opcodes.items())}}


def analyse(path, verbose=False, out=sys.stdout):
    """Check one pcap; return (list of Segment, good, bad)."""
    segs = [Segment(0)]
    good = bad = 0
    for i, (sec, usec, frame) in enumerate(read_pcap(path), 1):
        n = marker_step(frame)
        if n is not None and n != segs[-1].step:
            segs.append(Segment(n))
        seg = segs[-1]
        seg.records.append((sec, usec, frame))
        c = check_frame(frame)
        if c is None:
            continue
        seg.roce.append((sec, usec, frame))
        seg.opcodes[c["opcode"]] = seg.opcodes.get(c["opcode"], 0) + 1
        ident = (frame[26:34], c["qpn"], c["psn"], c["opcode"])  # IP src+dst, QPN, PSN, opcode
        seg.dups += ident in seg.seen
        seg.seen.add(ident)
        if c["ok"]:
            good += 1
            seg.good += 1
        else:
            bad += 1
            seg.bad += 1
        if verbose or not c["ok"]:
            print("%s frame %d step %d %-22s qpn 0x%06x psn %8d icrc wire %s zlib %s scapy %s %s"
                  % (os.path.basename(path), i, seg.step, opcode_name(c["opcode"]), c["qpn"],
                     c["psn"], c["wire"], c["zlib"], c["scapy"], "ok" if c["ok"] else "MISMATCH"),
                  file=out)
    return segs, good, bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pcaps", nargs="+")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every RoCE frame")
    ap.add_argument("--split", metavar="DIR", help="write DIR/<pcap>.stepN.pcap per step")
    args = ap.parse_args()
    total_bad = 0
    for path in args.pcaps:
        segs, good, bad = analyse(path, args.verbose)
        total_bad += bad
        print("%s: ICRC OK: %d BAD: %d (%d steps)" % (path, good, bad, len(segs)))
        if args.split:
            os.makedirs(args.split, exist_ok=True)
            stem = os.path.splitext(os.path.basename(path))[0]
            for s in segs:
                write_pcap(os.path.join(args.split, "%s.step%d.pcap" % (stem, s.step)), s.records)
    return 1 if total_bad else 0


if __name__ == "__main__":
    sys.exit(main())
