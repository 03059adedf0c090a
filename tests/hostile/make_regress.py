#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Writes the hand-made hostile inputs of tests/hostile/regress in fuzz_recv's input format
(fuzz/recv_env.h): records of <flags u8> <length u16 LE> <Ethernet frame>. The harness repairs
addresses, lengths, checksums and ICRC (FZ_FIX_*), so each frame here only says what is wrong
with it. Crash inputs found by fuzz_recv are copied next to these as crash-<sha1> files.

Usage: make_regress.py <dir>     (plain Python, no scapy)
"""
import os
import struct
import sys

FIX_ADDR, FIX_PSN, FIX_RKEY, FIX_VA, FIX_LEN, FIX_ICRC = 1, 2, 4, 8, 16, 32
FIX_ALL = 0x3F
QP_RC, QP_UC, QP_REQ = 0, 1, 2
KEY_RW, KEY_RO, KEY_LOCAL, KEY_OTHER, KEY_STALE, KEY_GUESS = 0, 1, 2, 3, 4, 5
RW_BYTES = 65536
# requester PSNs relative to its first: SEND 0-2, WRITE 3, READ 4-6, READ 7


def frame(opcode, qp, psn, ext=b"", payload=b"", pad=None, ackreq=1):
    pad = (-len(payload)) & 3 if pad is None else pad
    eth = bytes(12) + b"\x08\x00"
    ip = bytes([0x45, 0]) + bytes(18)
    ip = ip[:8] + bytes([64, 17]) + ip[10:]
    udp = struct.pack("!HHHH", 0xC000, 4791, 0, 0)
    bth = struct.pack("!BBHII", opcode, pad << 4, 0xFFFF, qp, (ackreq << 31) | (psn & 0xFFFFFF))
    return eth + ip + udp + bth + ext + payload + bytes(pad) + bytes(4)


def reth(va, key, length):
    return struct.pack("!QII", va & (2**64 - 1), key, length & 0xFFFFFFFF)


def aeth(syndrome, msn=1):
    return struct.pack("!I", syndrome << 24 | msn)


def rec(f, flags=FIX_ALL):
    return bytes([flags]) + struct.pack("<H", len(f)) + f


def inputs():
    # responder: WRITEs that must never land outside the region
    yield "write_before_region", rec(frame(0x0A, QP_RC, 0, reth(-16, KEY_RW, 64), bytes(64)))
    yield "write_past_end", rec(frame(0x0A, QP_RC, 0, reth(RW_BYTES - 8, KEY_RW, 64), bytes(64)))
    yield "write_wrapping_va", rec(frame(0x2A, QP_UC, 0, reth(2**64 - 32, KEY_RW, 64),
                                         bytes(64)), FIX_ALL & ~FIX_VA)
    yield "write_multi_overrun", b"".join([
        rec(frame(0x06, QP_RC, 0, reth(RW_BYTES - 1024, KEY_RW, 1024), bytes(1024))),
        rec(frame(0x07, QP_RC, 1, payload=bytes(1024))),       # past the RETH length
        rec(frame(0x08, QP_RC, 2, payload=bytes(512))),
    ])
    yield "write_keys", b"".join(
        rec(frame(0x2A, QP_UC, i, reth(0, k, 32), bytes(32)))
        for i, k in enumerate((KEY_RO, KEY_LOCAL, KEY_OTHER, KEY_STALE, KEY_GUESS)))
    yield "uc_send_overflows_recv", b"".join(
        [rec(frame(0x20, QP_UC, 0, payload=bytes(256)))] +
        [rec(frame(0x21, QP_UC, i, payload=bytes(256))) for i in range(1, 8)] +
        [rec(frame(0x22, QP_UC, 8, payload=bytes(100)))])
    yield "read_huge_and_wrapping", b"".join([
        rec(frame(0x0C, QP_RC, 0, reth(0, KEY_RW, 0x80000000))),
        rec(frame(0x0C, QP_RC, 0, reth(0, KEY_RW, 0xFFFFFFFF))),
        rec(frame(0x0C, QP_RC, 0, reth(2**64 - 8, KEY_RW, 64)), FIX_ALL & ~FIX_VA),
    ])
    yield "read_then_duplicate_larger", b"".join([
        rec(frame(0x0C, QP_RC, 0, reth(0, KEY_RO, 2048))),
        rec(frame(0x0C, QP_RC, 0, reth(0, KEY_RO, 4096))),     # replay asks for more
        rec(frame(0x0C, QP_RC, 1, reth(4000, KEY_RO, 2048))),  # and past the region
    ])
    yield "pad_and_runt", b"".join([
        rec(frame(0x24, QP_UC, 0, payload=b"abc", pad=3)),
        rec(frame(0x24, QP_UC, 1, payload=b"", pad=3)),
        rec(frame(0x24, QP_UC, 2)[:44]),
        rec(bytes(14)),
        rec(bytes(0)),
    ])
    # completer: answers that do not match what is outstanding
    yield "completer_nonsense", b"".join([
        rec(frame(0x0F, QP_REQ, 6, aeth(0x1F), bytes(100))),        # LAST before FIRST
        rec(frame(0x0D, QP_REQ, 4, aeth(0x1F), bytes(300))),        # FIRST too long
        rec(frame(0x10, QP_REQ, 7, aeth(0x1F), bytes(64))),         # ONLY longer than 8
        rec(frame(0x11, QP_REQ, 0x800000, aeth(0x1F))),             # ACK far away
        rec(frame(0x11, QP_REQ, 1, aeth(0x60))),                    # NAK seq
        rec(frame(0x11, QP_REQ, 1, aeth(0x20))),                    # RNR NAK
        rec(frame(0x11, QP_REQ, 1, aeth(0x40))),                    # reserved syndrome
        rec(frame(0x12, QP_REQ, 1, aeth(0x1F) + bytes(8))),         # atomic ACK
        rec(frame(0x11, QP_REQ, 7, aeth(0x63))),                    # NAK remote op
    ])
    yield "completer_read_replay", b"".join([
        rec(frame(0x0D, QP_REQ, 4, aeth(0x1F), bytes(256))),
        rec(frame(0x0D, QP_REQ, 4, aeth(0x1F), bytes(256))),        # FIRST again
        rec(frame(0x0E, QP_REQ, 5, payload=bytes(256))),
        rec(frame(0x0F, QP_REQ, 6, aeth(0x1F), bytes(188))),
        rec(frame(0x0F, QP_REQ, 6, aeth(0x1F), bytes(188))),        # LAST again
        rec(frame(0x10, QP_REQ, 7, aeth(0x1F), bytes(8))),
    ])
    yield "oversized", rec(frame(0x24, QP_UC, 0, payload=bytes(9000)))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in inputs():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
