#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Hostile-peer tests: scapy crafts RoCEv2 frames and sends them, one Ethernet frame per UDP
datagram, to hostile_target (a gpunic NIC on a dgram link, see hostile_target.c).

Each case starts a fresh target, attacks it, and checks that
  - the target did not crash and no guard byte or protected region changed,
  - every hostile frame was dropped and counted under the reason the case expects (exact counts),
  - the legitimate RC and UC streams between the target and its second NIC went on: more
    messages arrived during the case, every one verified, none bad, both QPs still RTS.

Usage: /usr/bin/python3 hostile.py --target PATH CASE     (exit 77 when scapy is missing)
"""
import argparse
import json
import random
import socket
import struct
import subprocess
import sys
import time

try:
    from scapy.all import Ether, IP, UDP, Raw, raw
    from scapy.contrib.roce import BTH
except ImportError as e:  # Debian python3-scapy provides both
    print(f"SKIP: scapy with contrib.roce is not available ({e})")
    sys.exit(77)

RC_SEND_ONLY = 0x04
RC_WRITE_FIRST = 0x06
RC_WRITE_ONLY = 0x0A
RC_READ_REQUEST = 0x0C
RC_COMPARE_SWAP = 0x13
RC_FETCH_ADD = 0x14
UC_SEND_MIDDLE = 0x21
UC_SEND_ONLY = 0x24
UC_WRITE_ONLY = 0x2A
PSN_MASK = 0xFFFFFF
WAIT_S = 20.0


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def free_udp_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


class Target:
    """A running hostile_target and a socket to throw frames at it."""

    def __init__(self, exe):
        port, peer = free_udp_ports(2)
        self.proc = subprocess.Popen([exe, str(port), str(peer)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        line = self.proc.stdout.readline()
        check(line, "target did not start")
        self.info = json.loads(line)
        self.addr = ("127.0.0.1", port)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        self.sent = 0

    def cmd(self, c):
        self.proc.stdin.write(c + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        check(line, f"target died during '{c}' (exit {self.proc.poll()})")
        return json.loads(line)

    def stats(self):
        return self.cmd("stats")

    def rearm(self):
        check(self.cmd("rearm").get("ok"), "rearm failed")

    def send(self, frame):
        self.sock.sendto(frame, self.addr)
        self.sent += 1

    def quit(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        rc = self.proc.wait(timeout=30)
        return rc, (json.loads(line) if line else None)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    # -- frames ---------------------------------------------------------------------------

    def qpn(self, name):
        return self.info["qps"][name]["qpn"]

    def psn(self, name, delta=0):
        return (self.info["qps"][name]["rq_psn"] + delta) & PSN_MASK

    def frame(self, opcode, qpn, psn, ext=b"", payload=b"", ackreq=0, src=None, dst=None,
              dmac=None, icrc=None):
        pad = (-len(payload)) & 3
        p = (Ether(src="02:00:00:00:00:66", dst=dmac or self.info["t_mac"]) /
             IP(src=src or self.info["a_ip"], dst=dst or self.info["t_ip"], id=0, flags="DF",
                ttl=64) /
             UDP(sport=0xC066, dport=4791, chksum=0) /
             BTH(opcode=opcode, padcount=pad, pkey=0xFFFF, dqpn=qpn, psn=psn, ackreq=ackreq,
                 icrc=icrc) /
             Raw(ext + payload + b"\0" * pad))
        return raw(p)

    def write(self, name, opcode, psn, va, rkey, length, payload=None, **kw):
        payload = bytes(length) if payload is None else payload
        return self.frame(opcode, self.qpn(name), psn, reth(va, rkey, length), payload, **kw)


def reth(va, rkey, length):
    return struct.pack("!QII", va & (2**64 - 1), rkey & 0xFFFFFFFF, length & 0xFFFFFFFF)


def drop(s, reason):
    return s["drops"][reason]


def qdrop(s, qp, reason):
    return s["qps"][qp]["drops"][reason]


def qstate(s, qp):
    return s["qps"][qp]["state"]


def wait_for(t, pred, what, timeout=WAIT_S):
    end = time.monotonic() + timeout
    while True:
        s = t.stats()
        if pred(s):
            return s
        if time.monotonic() > end:
            raise Failure(f"timed out waiting for {what}: {json.dumps(s)}")
        time.sleep(0.01)


def expect_delta(t, base, get, n, what):
    """Wait until get(stats) - get(base) reaches n, then check it is exactly n."""
    s = wait_for(t, lambda s: get(s) - get(base) >= n, f"{what} += {n}")
    time.sleep(0.05)
    s = t.stats()
    check(get(s) - get(base) == n, f"{what}: expected +{n}, got +{get(s) - get(base)}")
    print(f"  ok: {what} +{n}")
    return s


# ------------------------------------------------------------------------------- cases

def case_forged_qpn(t, rnd):
    ours = {q["qpn"] for q in t.info["qps"].values()}
    base = t.stats()
    n = 0
    while n < 300:
        qpn = rnd.randrange(1 << 24)
        if qpn in ours:
            continue
        t.send(t.frame(UC_SEND_ONLY, qpn, rnd.randrange(1 << 24), payload=b"x" * 16))
        n += 1
    s = expect_delta(t, base, lambda s: drop(s, "unknown_qpn"), 300, "unknown_qpn")
    # the legitimate RC QP only hears its peer (10.0.0.2): the attacker's address is refused,
    # and so are frames for another IP or MAC
    for i in range(100):
        t.send(t.frame(RC_SEND_ONLY, t.qpn("lrc"), i, payload=b"spoof"))
    for i in range(50):
        t.send(t.frame(UC_SEND_ONLY, t.qpn("hu"), t.psn("hu"), dst="10.0.0.9"))
    for i in range(50):
        t.send(t.frame(UC_SEND_ONLY, t.qpn("hu"), t.psn("hu"), dmac="02:00:00:00:00:09"))
    expect_delta(t, s, lambda s: drop(s, "not_for_us"), 200, "not_for_us")


def case_psn_window(t, rnd):
    base = t.stats()
    # UC: a MIDDLE far from the expected PSN is dropped and counted, every time
    for i in range(100):
        t.send(t.frame(UC_SEND_MIDDLE, t.qpn("hu"), t.psn("hu", 0x400000 + i), payload=bytes(1024)))
    s = expect_delta(t, base, lambda s: qdrop(s, "hu", "psn"), 100, "hu psn")
    check(qstate(s, "hu") == "RTS", "UC QP left RTS")
    # RC: a gap gets one sequence NAK, then silence; far behind is a duplicate (re-ACKed)
    g = t.grant = t.info["grant"]
    for i in range(50):
        t.send(t.write("hr", RC_WRITE_ONLY, t.psn("hr", 0x100000 + i), g["va"], g["rkey"], 8))
    s = expect_delta(t, s, lambda s: qdrop(s, "hr", "psn"), 50, "hr psn (ahead)")
    check(s["qps"]["hr"]["naks_sent"] - base["qps"]["hr"]["naks_sent"] == 1,
          "RC gap must cost exactly one sequence NAK")
    for i in range(50):
        t.send(t.write("hr", RC_WRITE_ONLY, t.psn("hr", -0x200000 - i), g["va"], g["rkey"], 8))
    s = expect_delta(t, s, lambda s: qdrop(s, "hr", "psn"), 50, "hr psn (behind)")
    check(qstate(s, "hr") == "RTS", "RC QP left RTS on PSN errors")
    # and the expected PSN still works
    t.send(t.write("hr", RC_WRITE_ONLY, t.psn("hr"), g["va"] + 64, g["rkey"], 16,
                   payload=b"in-window-write!", ackreq=1))
    expect_delta(t, s, lambda s: s["qps"]["hr"]["rx_messages"], 1, "hr rx_messages")


def case_rkeys(t, rnd):
    g, sec, ro = t.info["grant"], t.info["secret"], t.info["ro"]
    base = t.stats()
    # UC: guessed tags of the granted key's index, random keys, another PD's real key
    guesses = [(g["rkey"] & ~0xFF) | tag for tag in range(256) if tag != g["rkey"] & 0xFF]
    guesses += [rnd.randrange(1 << 32) | 0x01000000 for _ in range(200)]
    guesses += [sec["rkey"]] * 45
    for i, key in enumerate(guesses):
        t.send(t.write("hu", UC_WRITE_ONLY, t.psn("hu", i), sec["va"], key, 32))
    s = expect_delta(t, base, lambda s: qdrop(s, "hu", "rkey"), len(guesses), "hu rkey")
    # the read-only region's key does not grant writes
    for i in range(20):
        t.send(t.write("hu", UC_WRITE_ONLY, t.psn("hu", 1000 + i), ro["va"], ro["rkey"], 32))
    s = expect_delta(t, s, lambda s: qdrop(s, "hu", "access"), 20, "hu access")
    # RC: one bad key ends the connection (NAK, ERR); everything after is a state drop
    t.send(t.write("hr", RC_WRITE_ONLY, t.psn("hr"), g["va"], g["rkey"] ^ 0x80, 32, ackreq=1))
    s = expect_delta(t, s, lambda s: qdrop(s, "hr", "rkey"), 1, "hr rkey")
    check(qstate(s, "hr") == "ERR", "RC QP must go to ERR on an rkey violation")
    for i in range(30):
        t.send(t.write("hr", RC_WRITE_ONLY, t.psn("hr", 1 + i), g["va"], g["rkey"], 32))
    s = expect_delta(t, s, lambda s: drop(s, "qp_state"), 30, "qp_state")
    t.rearm()
    t.send(t.write("hr", RC_WRITE_ONLY, t.psn("hr"), sec["va"], sec["rkey"], 32, ackreq=1))
    s = expect_delta(t, s, lambda s: qdrop(s, "hr", "rkey"), 1, "hr rkey (other PD)")
    check(qstate(s, "hr") == "ERR", "RC QP must go to ERR on another PD's key")


def case_bounds(t, rnd):
    g = t.info["grant"]
    cases = [
        (g["va"] + g["len"] - 10, 64),        # runs off the end
        (g["va"] - 8, 16),                    # starts before
        (g["va"] + g["len"], 4),              # starts at the end
        (2**64 - 16, 64),                     # wraps past 2^64
        (2**64 - 1, 1),                       # last byte of the address space
        (g["va"] + 2**63, 8),                 # far away
    ]
    base = t.stats()
    for i, (va, n) in enumerate(cases * 20):
        t.send(t.write("hu", UC_WRITE_ONLY, t.psn("hu", i), va, g["rkey"], n))
    s = expect_delta(t, base, lambda s: qdrop(s, "hu", "bounds"), len(cases) * 20, "hu bounds")
    # RETH length far beyond the granted region, a small payload: the length check fires first
    for i in range(20):
        t.send(t.frame(UC_WRITE_ONLY, t.qpn("hu"), t.psn("hu", 500 + i),
                       reth(g["va"], g["rkey"], 0xFFFFFFF0), b"\0" * 16))
    s = expect_delta(t, s, lambda s: qdrop(s, "hu", "length"), 20, "hu length (reth)")
    # RC READ past the end and wrapping: NAK + ERR each, rearmed in between
    for va, n in ((g["va"] + g["len"] - 100, 200), (2**64 - 64, 128)):
        t.send(t.frame(RC_READ_REQUEST, t.qpn("hr"), t.psn("hr"), reth(va, g["rkey"], n),
                       ackreq=1))
        s = expect_delta(t, s, lambda s: qdrop(s, "hr", "bounds"), 1, "hr bounds (READ)")
        check(qstate(s, "hr") == "ERR", "RC QP must go to ERR on a bounds violation")
        t.rearm()


def case_lengths(t, rnd):
    g = t.info["grant"]
    base = t.stats()
    # RETH says 100, the packet carries 48
    for i in range(30):
        t.send(t.write("hu", UC_WRITE_ONLY, t.psn("hu", i), g["va"], g["rkey"], 100,
                       payload=bytes(48)))
    # ONLY larger than the path MTU (1024)
    for i in range(30):
        t.send(t.frame(UC_SEND_ONLY, t.qpn("hu"), t.psn("hu", 100 + i), payload=bytes(1100)))
    # FIRST shorter than the path MTU
    for i in range(30):
        t.send(t.frame(UC_WRITE_ONLY - 4, t.qpn("hu"), t.psn("hu", 200 + i),
                       reth(g["va"], g["rkey"], 4096), bytes(100)))
    s = expect_delta(t, base, lambda s: qdrop(s, "hu", "length"), 90, "hu length")
    # IPv4 total length and UDP length that disagree with the frame
    good = t.write("hu", UC_WRITE_ONLY, t.psn("hu", 300), g["va"], g["rkey"], 8)
    for delta in (1, 4, 100, -1, -20):
        f = bytearray(good)
        tot = struct.unpack("!H", f[16:18])[0] + delta
        f[16:18] = struct.pack("!H", tot & 0xFFFF)
        f[24:26] = b"\0\0"
        f[24:26] = struct.pack("!H", ip_csum(bytes(f[14:34])))
        for _ in range(10):
            t.send(bytes(f))
    s = expect_delta(t, s, lambda s: s["wire"]["ip_length"] + s["wire"]["udp_length"], 50,
                     "wire ip/udp length")
    f = bytearray(good)
    f[38:40] = struct.pack("!H", struct.unpack("!H", f[38:40])[0] + 8)
    for _ in range(20):
        t.send(bytes(f))
    expect_delta(t, s, lambda s: s["wire"]["udp_length"], 20, "wire udp_length")


def ip_csum(hdr):
    total = sum(struct.unpack("!10H", hdr))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def case_truncated_oversized(t, rnd):
    g = t.info["grant"]
    good = t.write("hu", UC_WRITE_ONLY, t.psn("hu"), g["va"], g["rkey"], 100)
    base = t.stats()
    runts = 0
    for n in range(len(good)):
        t.send(good[:n])
        runts += n < 14
    # every prefix of 14 bytes or more is a malformed frame; shorter ones never reach the NIC
    s = expect_delta(t, base, lambda s: drop(s, "malformed") + drop(s, "bad_icrc"),
                     len(good) - runts, "malformed + bad_icrc (truncated)")
    check(s["link_rx_errors"] - base["link_rx_errors"] == runts, "runts counted by the link")
    # larger than any RoCEv2 frame (4096-byte MTU): the link refuses them, the NIC counts them
    for n in (4096 + 200, 9000, 16384, 65000):
        for _ in range(5):
            t.send(t.write("hu", UC_WRITE_ONLY, t.psn("hu", 1), g["va"], g["rkey"], n))
    s = expect_delta(t, s, lambda s: drop(s, "malformed"), 20, "malformed (oversized)")
    check(s["link_rx_errors"] - base["link_rx_errors"] == runts + 20,
          "oversized frames counted by the link")


def case_icrc(t, rnd):
    g = t.info["grant"]
    base = t.stats()
    for i in range(100):
        t.send(t.write("hu", UC_WRITE_ONLY, t.psn("hu", i), g["va"], g["rkey"], 64,
                       icrc=rnd.randrange(1 << 32)))
    for i in range(100):
        f = bytearray(t.write("hu", UC_WRITE_ONLY, t.psn("hu", 200 + i), g["va"], g["rkey"], 64))
        f[-5 - rnd.randrange(64)] ^= 1 + rnd.randrange(255)   # one payload byte
        t.send(bytes(f))
    s = expect_delta(t, base, lambda s: drop(s, "bad_icrc"), 200, "bad_icrc")
    check(s["qps"]["hu"]["rx_messages"] == base["qps"]["hu"]["rx_messages"],
          "a frame with a bad ICRC was executed")


def case_rc_opcode_on_uc(t, rnd):
    g = t.info["grant"]
    base = t.stats()
    for i in range(50):
        t.send(t.frame(RC_SEND_ONLY, t.qpn("hu"), t.psn("hu", i), payload=b"rc on uc"))
        t.send(t.write("hu", RC_WRITE_ONLY, t.psn("hu", i), g["va"], g["rkey"], 8))
        t.send(t.frame(RC_READ_REQUEST, t.qpn("hu"), t.psn("hu", i), reth(g["va"], g["rkey"], 8)))
    s = expect_delta(t, base, lambda s: qdrop(s, "hu", "opcode_qp_type"), 150,
                     "hu opcode_qp_type")
    for i in range(50):
        t.send(t.frame(UC_SEND_ONLY, t.qpn("hr"), t.psn("hr", i), payload=b"uc on rc"))
    s = expect_delta(t, s, lambda s: qdrop(s, "hr", "opcode_qp_type"), 50, "hr opcode_qp_type")
    check(qstate(s, "hu") == "RTS" and qstate(s, "hr") == "RTS", "QPs left RTS")
    # atomics on a QP that grants no remote atomic (hr: write and read only): a remote access
    # error, NAK and ERR, never executed and never a plain ACK as if done
    for opcode in (RC_COMPARE_SWAP, RC_FETCH_ADD):
        atmeth = struct.pack("!QIQQ", g["va"], g["rkey"], 1, 0)
        t.send(t.frame(opcode, t.qpn("hr"), t.psn("hr"), atmeth, ackreq=1))
        s = expect_delta(t, s, lambda s: qdrop(s, "hr", "access"), 1,
                         "hr access (atomic)")
        check(qstate(s, "hr") == "ERR" and s["qps"]["hr"]["rx_messages"] == 0,
              "an atomic request was executed")
        t.rearm()


def case_read_without_access(t, rnd):
    g = t.info["grant"]
    base = t.stats()
    # hn's QP grants no remote read: class D, NAK and ERR
    t.send(t.frame(RC_READ_REQUEST, t.qpn("hn"), t.psn("hn"), reth(g["va"], g["rkey"], 64),
                   ackreq=1))
    s = expect_delta(t, base, lambda s: qdrop(s, "hn", "access"), 1, "hn access")
    check(qstate(s, "hn") == "ERR", "READ without remote read must end the RC connection")
    check(s["qps"]["hn"]["naks_sent"] - base["qps"]["hn"]["naks_sent"] == 1, "one NAK sent")
    t.rearm()
    # the local-only receive region has an rkey but no remote rights
    s = t.stats()
    al = t.info["alocal"]
    t.send(t.frame(RC_READ_REQUEST, t.qpn("hr"), t.psn("hr"), reth(al["va"], al["rkey"], 64),
                   ackreq=1))
    s = expect_delta(t, s, lambda s: qdrop(s, "hr", "access"), 1, "hr access (READ, MR)")
    check(qstate(s, "hr") == "ERR", "READ of a local-only region must end the RC connection")
    t.rearm()
    # a READ that is allowed still works afterwards (control)
    ro = t.info["ro"]
    t.send(t.frame(RC_READ_REQUEST, t.qpn("hr"), t.psn("hr"), reth(ro["va"], ro["rkey"], 64),
                   ackreq=1))
    time.sleep(0.1)
    s2 = t.stats()
    check(qstate(s2, "hr") == "RTS", "an allowed READ moved the QP out of RTS")
    check(sum(s2["qps"]["hr"]["drops"].values()) == sum(s["qps"]["hr"]["drops"].values()),
          "an allowed READ was dropped")


def attacker_drops(s):
    """Drops not caused by the legitimate streams (theirs are all on lrc and luc)."""
    legit = sum(s["qps"]["lrc"]["drops"].values()) + sum(s["qps"]["luc"]["drops"].values())
    return sum(s["drops"].values()) - legit + s["link_rx_errors"]


def case_flood(t, rnd):
    g = t.info["grant"]
    ours = {q["qpn"] for q in t.info["qps"].values()}
    base = t.stats()
    kinds = {"unknown_qpn": 0, "rkey": 0, "garbage": 0}
    total = 0
    for batch in range(50):
        for _ in range(100):
            k = rnd.randrange(3)
            if k == 0:
                qpn = rnd.randrange(1 << 24)
                while qpn in ours:
                    qpn = rnd.randrange(1 << 24)
                t.send(t.frame(UC_SEND_ONLY, qpn, rnd.randrange(1 << 24),
                               payload=rnd.randbytes(rnd.randrange(64))))
                kinds["unknown_qpn"] += 1
            elif k == 1:
                t.send(t.write("hu", UC_WRITE_ONLY, t.psn("hu", total), g["va"],
                               g["rkey"] ^ (1 + rnd.randrange(255)), rnd.randrange(1, 256)))
                kinds["rkey"] += 1
            else:
                eth = bytes.fromhex(t.info["t_mac"].replace(":", "")) + bytes(6) + b"\x08\x00"
                t.send(eth + rnd.randbytes(rnd.randrange(600)))
                kinds["garbage"] += 1
            total += 1
        # pace: let the target account for this batch before the next (no kernel drops)
        wait_for(t, lambda s: attacker_drops(s) - attacker_drops(base) >= total,
                 f"flood batch {batch}")
    time.sleep(0.1)
    s = t.stats()
    accounted = attacker_drops(s) - attacker_drops(base)
    check(accounted == total, f"flood: {total} frames sent, {accounted} drops counted")
    check(drop(s, "unknown_qpn") - drop(base, "unknown_qpn") == kinds["unknown_qpn"],
          "flood: unknown_qpn count")
    check(qdrop(s, "hu", "rkey") - qdrop(base, "hu", "rkey") == kinds["rkey"], "flood: rkey count")
    print(f"  ok: flood of {total} frames, every one counted ({kinds})")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True)
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    t = Target(args.target)
    try:
        start = wait_for(t, lambda s: s["legit"]["rc_ok"] > 20 and s["legit"]["uc_ok"] > 20,
                         "legitimate traffic to start")
        print(f"case {args.case}")
        CASES[args.case](t, random.Random(0x5EED))
        # the legitimate streams went on through the attack and are still going
        end = wait_for(t, lambda s: s["legit"]["rc_ok"] >= start["legit"]["rc_ok"] + 50 and
                       s["legit"]["uc_ok"] >= start["legit"]["uc_ok"] + 50,
                       "legitimate traffic to continue")
        lg = end["legit"]
        check(lg["rc_bad"] == 0 and lg["uc_bad"] == 0 and lg["send_errors"] == 0,
              f"legitimate traffic saw errors: {lg}")
        check(lg["l_rc_state"] == "RTS" and lg["l_uc_state"] == "RTS",
              f"legitimate QPs left RTS: {lg}")
        check(qstate(end, "lrc") == "RTS" and qstate(end, "luc") == "RTS",
              "target's legitimate QPs left RTS")
        check(end["guards_ok"], "guard bytes or protected regions changed")
        rc, final = t.quit()
        check(rc == 0, f"target exit status {rc}")
        check(final and final["guards_ok"], "guards broken at exit")
        print(f"PASS {args.case}: legit rc {lg['rc_ok']} uc {lg['uc_ok']} messages verified, "
              f"guards intact")
        return 0
    except Failure as e:
        print(f"FAIL {args.case}: {e}")
        return 1
    finally:
        t.kill()


if __name__ == "__main__":
    sys.exit(main())
