#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""scapy (scapy.contrib.roce) as an independent oracle for gpunic's decoder and encoder.

  scapy_oracle.py decode --gpunic BIN --workdir DIR [--count N] [--seed S]
      scapy builds N random RoCEv2 frames and computes their ICRC; `gpunic decode` must decode
      every field back and report icrc_ok. Every 16th frame has its ICRC corrupted and must be
      rejected as "icrc"; frames under 60 bytes get Ethernet minimum-frame padding.
  scapy_oracle.py encode --encoder BIN --workdir DIR [--count N] [--seed S]
      encode_random writes N random frames; scapy must dissect the values gpunic was given,
      and its recomputed ICRC (icrc=None) must equal gpunic's, so must the IPv4 checksum.

Needs Debian's python3-scapy, so run it with /usr/bin/python3 (the pyenv python3 does not see
it: docs/WIRE.md). Exit status: 0 pass, 1 mismatch, 77 scapy missing (CTest skip).
The seed comes from --seed or GPUNIC_ORACLE_SEED; a failure prints it.
"""
import argparse
import json
import os
import random
import struct
import subprocess
import sys

try:
    from scapy.all import IP, UDP, Ether, Raw, raw
    from scapy.contrib.roce import BTH
except ImportError as e:
    print(f'SKIP: scapy is not importable by {sys.executable}: {e}')
    sys.exit(77)

ROCE_PORT = 4791

# The opcode table written again from the IBA / docs/WIRE.md section 4, independently of
# gpunic's: extension headers after the BTH in wire order, and the payload rule.
# kind: 'full' = FIRST/MIDDLE (PMTU-sized, no pad), 'end' = LAST/ONLY, None = no payload.
RETH, AETH, IMMDT, ATMETH, ATMACK, IETH = 'reth', 'aeth', 'imm', 'atmeth', 'atmack', 'ieth'
HDR_BYTES = {RETH: 16, AETH: 4, IMMDT: 4, ATMETH: 28, ATMACK: 8, IETH: 4}
_SHARED = {
    0x00: ([], 'full'), 0x01: ([], 'full'), 0x02: ([], 'end'), 0x03: ([IMMDT], 'end'),
    0x04: ([], 'end'), 0x05: ([IMMDT], 'end'), 0x06: ([RETH], 'full'), 0x07: ([], 'full'),
    0x08: ([], 'end'), 0x09: ([IMMDT], 'end'), 0x0A: ([RETH], 'end'),
    0x0B: ([RETH, IMMDT], 'end'),
}
OPCODES = dict(_SHARED)
OPCODES.update({
    0x0C: ([RETH], None), 0x0D: ([AETH], 'full'), 0x0E: ([], 'full'), 0x0F: ([AETH], 'end'),
    0x10: ([AETH], 'end'), 0x11: ([AETH], None), 0x12: ([AETH, ATMACK], None),
    0x13: ([ATMETH], None), 0x14: ([ATMETH], None), 0x16: ([IETH], 'end'),
    0x17: ([IETH], 'end'),
})
OPCODES.update({0x20 | op: v for op, v in _SHARED.items()})


class Mismatch(Exception):
    pass


def rand_fields(rng, op):
    """Random values for every header the opcode carries (as gpunic decode names them)."""
    f = {}
    for h in OPCODES[op][0]:
        if h == RETH:
            f.update(reth_va=rng.getrandbits(64), reth_rkey=rng.getrandbits(32),
                     reth_len=rng.getrandbits(32))
        elif h == AETH:
            f.update(aeth_syndrome=rng.getrandbits(7), aeth_msn=rng.getrandbits(24))
        elif h == IMMDT:
            f.update(imm=rng.getrandbits(32))
        elif h == ATMETH:
            f.update(atomic_va=rng.getrandbits(64) & ~7, atomic_rkey=rng.getrandbits(32),
                     atomic_swap_add=rng.getrandbits(64), atomic_compare=rng.getrandbits(64))
        elif h == ATMACK:
            f.update(atomic_orig=rng.getrandbits(64))
        elif h == IETH:
            f.update(ieth_rkey=rng.getrandbits(32))
    return f


def pack_ext(op, f):
    """Extension headers as raw bytes: scapy has no RETH/ImmDt/AtomicETH classes."""
    out = b''
    for h in OPCODES[op][0]:
        if h == RETH:
            out += struct.pack('!QII', f['reth_va'], f['reth_rkey'], f['reth_len'])
        elif h == AETH:
            out += struct.pack('!I', f['aeth_syndrome'] << 24 | f['aeth_msn'])
        elif h == IMMDT:
            out += struct.pack('!I', f['imm'])
        elif h == ATMETH:
            out += struct.pack('!QIQQ', f['atomic_va'], f['atomic_rkey'],
                               f['atomic_swap_add'], f['atomic_compare'])
        elif h == ATMACK:
            out += struct.pack('!Q', f['atomic_orig'])
        elif h == IETH:
            out += struct.pack('!I', f['ieth_rkey'])
    return out


def unpack_ext(op, data):
    """Inverse of pack_ext, for frames gpunic built; returns (fields, header bytes)."""
    f, off = {}, 0
    for h in OPCODES[op][0]:
        n = HDR_BYTES[h]
        b = data[off:off + n]
        if len(b) != n:
            raise Mismatch(f'frame too short for its {h}')
        if h == RETH:
            f['reth_va'], f['reth_rkey'], f['reth_len'] = struct.unpack('!QII', b)
        elif h == AETH:
            w, = struct.unpack('!I', b)
            f['aeth_syndrome'], f['aeth_msn'] = w >> 24, w & 0xFFFFFF
        elif h == IMMDT:
            f['imm'], = struct.unpack('!I', b)
        elif h == ATMETH:
            (f['atomic_va'], f['atomic_rkey'], f['atomic_swap_add'],
             f['atomic_compare']) = struct.unpack('!QIQQ', b)
        elif h == ATMACK:
            f['atomic_orig'], = struct.unpack('!Q', b)
        elif h == IETH:
            f['ieth_rkey'], = struct.unpack('!I', b)
        off += n
    return f, off


def rand_paylen(rng, kind):
    if kind is None:
        return 0
    if kind == 'full':
        return 4 * rng.randint(0, 75)
    return rng.randint(0, 300)


def mac(rng):
    b = [rng.getrandbits(8) for _ in range(6)]
    b[0] &= 0xFE
    return ':'.join(f'{x:02x}' for x in b)


def ip4(rng):
    return '.'.join(str(rng.getrandbits(8)) for _ in range(4))


def write_pcap(path, frames):
    """Classic little-endian pcap of raw frames (scapy's writer would rebuild them)."""
    with open(path, 'wb') as fh:
        fh.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            fh.write(struct.pack('<IIII', 1700000000, i, len(fr), len(fr)))
            fh.write(fr)


def read_pcap(path):
    with open(path, 'rb') as fh:
        data = fh.read()
    magic, = struct.unpack('<I', data[:4])
    if magic != 0xa1b2c3d4:
        raise Mismatch(f'{path}: not a little-endian microsecond pcap (magic {magic:#x})')
    off, frames = 24, []
    while off < len(data):
        _, _, caplen, _ = struct.unpack('<IIII', data[off:off + 16])
        frames.append(data[off + 16:off + 16 + caplen])
        off += 16 + caplen
    return frames


def icrc_of(frame):
    """The ICRC value of a frame: 4 bytes LSB first, located from the IP total length."""
    tot, = struct.unpack('!H', frame[16:18])
    return struct.unpack('<I', frame[14 + tot - 4:14 + tot])[0]


# ------------------------------------------------------------------ decode: scapy -> gpunic

def scapy_frame(rng, n):
    """One random frame built by scapy; returns (bytes, fields `gpunic decode` must print)."""
    op = rng.choice(sorted(OPCODES))
    hdrs, kind = OPCODES[op]
    paylen = rand_paylen(rng, kind)
    pad = -paylen & 3
    ext = rand_fields(rng, op)
    want = dict(ext)
    want.update(frame=n, opcode=op, transport='UC' if op & 0x20 else 'RC',
                se=rng.random() < 0.5, migreq=rng.random() < 0.5, pad=pad, tver=0,
                pkey=rng.choice([0xFFFF, 0x7FFF]), qpn=rng.getrandbits(24),
                ack_req=rng.random() < 0.5, psn=rng.getrandbits(24), payload_len=paylen,
                fecn=rng.random() < 0.5, becn=rng.random() < 0.5, resv7=0,
                dst_mac=mac(rng), src_mac=mac(rng), src_ip=ip4(rng), dst_ip=ip4(rng),
                tos=rng.getrandbits(8), ttl=rng.getrandbits(8), ip_id=rng.getrandbits(16),
                df=rng.random() < 0.5, sport=rng.getrandbits(16), dport=ROCE_PORT,
                udp_csum=rng.getrandbits(16))
    payload = bytes(rng.getrandbits(8) for _ in range(paylen))
    p = (Ether(dst=want['dst_mac'], src=want['src_mac']) /
         IP(src=want['src_ip'], dst=want['dst_ip'], tos=want['tos'], ttl=want['ttl'],
            id=want['ip_id'], flags='DF' if want['df'] else 0) /
         UDP(sport=want['sport'], dport=ROCE_PORT, chksum=want['udp_csum']) /
         BTH(opcode=op, solicited=int(want['se']), migreq=int(want['migreq']),
             padcount=pad, version=0, pkey=want['pkey'], fecn=int(want['fecn']),
             becn=int(want['becn']), resv6=rng.getrandbits(6), dqpn=want['qpn'],
             ackreq=int(want['ack_req']), resv7=0, psn=want['psn']) /
         Raw(pack_ext(op, ext) + payload + b'\0' * pad))
    frame = raw(p)
    want['icrc'] = icrc_of(frame)
    return frame, want


def check_decoded(got, want):
    bad = []
    for k, v in want.items():
        g = got.get(k)
        if isinstance(g, str) and g.startswith('0x') and isinstance(v, int):
            g = int(g, 16)
        if g != v:
            bad.append(f'{k}: gpunic {got.get(k)!r}, scapy {v!r}')
    return bad


def run_decode(args, rng):
    frames, wants = [], []
    for n in range(1, args.count + 1):
        frame, want = scapy_frame(rng, n)
        if n % 16 == 0:
            # Break the ICRC: gpunic must reject it and compute scapy's value itself.
            frame = frame[:-1] + bytes([frame[-1] ^ 0x5A])
            want.update(error='icrc', icrc_ok=False, icrc_calc=want['icrc'],
                        icrc=icrc_of(frame))
        else:
            want.update(icrc_ok=True, icrc_calc=want['icrc'])
        want['frame_bytes'] = len(frame)
        if len(frame) < 60:
            frame += b'\0' * (60 - len(frame))  # Ethernet minimum-frame padding after ICRC
        want.update(len=len(frame), caplen=len(frame))
        frames.append(frame)
        wants.append(want)
    path = os.path.join(args.workdir, 'scapy_frames.pcap')
    write_pcap(path, frames)
    res = subprocess.run([args.gpunic, 'decode', path], capture_output=True, text=True)
    if res.returncode != 0:
        raise Mismatch(f'gpunic decode exited {res.returncode}: {res.stderr.strip()}')
    lines = res.stdout.splitlines()
    if len(lines) != len(wants):
        raise Mismatch(f'gpunic decode printed {len(lines)} lines for {len(wants)} frames')
    failures = 0
    for line, want in zip(lines, wants):
        got = json.loads(line)
        if 'error' not in want and 'error' in got:
            bad = [f'rejected as {got["error"]}']
        else:
            bad = check_decoded(got, want)
        if bad:
            failures += 1
            if failures <= 10:
                print(f'frame {want["frame"]} (opcode {want["opcode"]:#04x}): ' +
                      '; '.join(bad))
    rejected = sum(1 for w in wants if 'error' in w)
    want_summary = f'{len(wants)} frames, {len(wants) - rejected} decoded, {rejected} rejected'
    if want_summary not in res.stderr:
        raise Mismatch(f'summary "{res.stderr.strip()}" lacks "{want_summary}"')
    if failures:
        raise Mismatch(f'{failures} of {len(wants)} frames decoded differently (pcap: {path})')
    print(f'decode: {len(wants)} scapy frames, every field and ICRC matched '
          f'({rejected} corrupted ones rejected)')


# ------------------------------------------------------------------ encode: gpunic -> scapy

def dissect(frame):
    """Ether(frame) with the UDP payload taken as BTH: scapy picks the UDP payload class by
    either port, so a random source port such as 500 would make it ISAKMP."""
    q = Ether(frame)
    if UDP in q and not q.haslayer(BTH):
        q[UDP].decode_payload_as(BTH)
    return q


def check_encoded(frame, want):
    bad = []
    q = dissect(frame)
    if not q.haslayer(BTH):
        return ['scapy did not dissect a BTH']
    b = q[BTH]
    for name, field in (('opcode', 'opcode'), ('se', 'solicited'), ('migreq', 'migreq'),
                        ('pkey', 'pkey'), ('qpn', 'dqpn'), ('ack_req', 'ackreq'),
                        ('psn', 'psn')):
        if int(getattr(b, field)) != int(want[name]):
            bad.append(f'BTH {field} {getattr(b, field)!r}, wanted {want[name]!r}')
    resv8a = b.fecn << 7 | b.becn << 6 | b.resv6
    if resv8a != want['resv8a'] or b.version != 0 or b.resv7 != 0:
        bad.append(f'BTH byte 4 {resv8a:#x} (wanted {want["resv8a"]:#x}), tver {b.version}, '
                   f'resv7 {b.resv7}')
    if b.padcount != -want['paylen'] & 3:
        bad.append(f'pad {b.padcount} for {want["paylen"]} payload bytes')
    ip, udp = q[IP], q[UDP]
    for name, got in (('tos', ip.tos), ('ttl', ip.ttl), ('ip_id', ip.id),
                      ('df', int(ip.flags) == 2), ('sport', udp.sport),
                      ('udp_csum', udp.chksum)):
        if got != want[name]:
            bad.append(f'{name} {got!r}, wanted {want[name]!r}')
    if udp.dport != ROCE_PORT or ip.proto != 17:
        bad.append(f'UDP dport {udp.dport}, IP proto {ip.proto}')
    # Everything between BTH and ICRC, from the UDP length.
    body = raw(udp)[8 + 12:udp.len - 4]
    ext, hlen = unpack_ext(want['opcode'], body)
    for k, v in ext.items():
        if want.get(k) != v:
            bad.append(f'{k} {v:#x}, wanted {want.get(k)!r}')
    paylen = len(body) - hlen - b.padcount
    if paylen != want['paylen'] or udp.len != 8 + 12 + len(body) + 4:
        bad.append(f'payload {paylen} bytes (wanted {want["paylen"]}), UDP length {udp.len}')
    if ip.len != len(frame) - 14:
        bad.append(f'IP total length {ip.len} for a {len(frame)}-byte frame')
    # scapy recomputes IPv4 checksum and ICRC from scratch.
    q2 = dissect(frame)
    del q2[IP].chksum
    q2[BTH].icrc = None
    rebuilt = raw(q2)
    if icrc_of(rebuilt) != icrc_of(frame):
        bad.append(f'ICRC gpunic {icrc_of(frame):#010x}, scapy {icrc_of(rebuilt):#010x}')
    if rebuilt[14:34] != frame[14:34]:
        bad.append(f'IPv4 header gpunic {frame[14:34].hex()}, scapy {rebuilt[14:34].hex()}')
    if rebuilt != frame:
        bad.append('scapy rebuilt a different frame')
    return bad


def run_encode(args, seed):
    path = os.path.join(args.workdir, 'gpunic_frames.pcap')
    res = subprocess.run([args.encoder, str(seed), str(args.count), path],
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise Mismatch(f'encode_random exited {res.returncode}: {res.stderr.strip()}')
    wants = [json.loads(line) for line in res.stdout.splitlines()]
    frames = read_pcap(path)
    if len(frames) != args.count or len(wants) != args.count:
        raise Mismatch(f'{len(frames)} frames and {len(wants)} records for {args.count}')
    failures = 0
    opcodes = set()
    for frame, want in zip(frames, wants):
        opcodes.add(want['opcode'])
        bad = check_encoded(frame, want)
        if bad:
            failures += 1
            if failures <= 10:
                print(f'frame {want["frame"]} (opcode {want["opcode"]:#04x}): ' +
                      '; '.join(bad))
    if failures:
        raise Mismatch(f'{failures} of {len(frames)} gpunic frames disagree with scapy '
                       f'(pcap: {path})')
    if opcodes != set(OPCODES):
        raise Mismatch(f'encoder never produced opcodes {sorted(set(OPCODES) - opcodes)}')
    print(f'encode: {len(frames)} gpunic frames over {len(opcodes)} opcodes; scapy agrees on '
          'every field, IPv4 checksum and ICRC')


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('mode', choices=['decode', 'encode'])
    ap.add_argument('--gpunic', help='the gpunic CLI (decode mode)')
    ap.add_argument('--encoder', help='the encode_random helper (encode mode)')
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--count', type=int, default=2500)
    ap.add_argument('--seed', type=lambda s: int(s, 0),
                    default=int(os.environ.get('GPUNIC_ORACLE_SEED', '0x5eed'), 0))
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    try:
        if args.mode == 'decode':
            if not args.gpunic:
                ap.error('decode needs --gpunic')
            run_decode(args, random.Random(args.seed))
        else:
            if not args.encoder:
                ap.error('encode needs --encoder')
            run_encode(args, args.seed)
    except Mismatch as e:
        print(f'FAIL ({args.mode}, seed {args.seed:#x}): {e}')
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
