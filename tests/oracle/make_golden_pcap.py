#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write tests/data/rxe_golden.pcap: the three frames Linux rxe sent in a QEMU guest
(docs/WIRE.md 3.2 says which). Standard library only; the pcap format
is written here by hand so that gpunic's libpcap reader is checked against an independent writer.

usage: make_golden_pcap.py OUT.pcap          write the file
       make_golden_pcap.py --check FILE      exit 1 unless FILE holds exactly these bytes
"""
import struct
import sys

# (a) UC SEND_ONLY_WITH_IMMEDIATE, "hello", imm 0x11223344, PSN 0xFFFFFE, pad 3
GOLDEN_A = """
52 54 00 00 00 01 52 54 00 00 00 02 08 00 45 00
00 38 77 a5 40 00 40 11 af 0d 0a 00 00 02 0a 00
00 01 c1 21 12 b7 00 24 00 00 25 30 ff ff 00 00
00 11 00 ff ff fe 11 22 33 44 68 65 6c 6c 6f 00
00 00 23 2b 8a 17
"""
# (b) RC ACKNOWLEDGE, PSN 0xFFFFFE, syndrome 0x1F, MSN 1
GOLDEN_B = """
52 54 00 00 00 02 52 54 00 00 00 01 08 00 45 00
00 30 78 f0 40 00 40 11 ad ca 0a 00 00 01 0a 00
00 02 c1 44 12 b7 00 1c 00 00 11 00 ff ff 00 00
00 12 00 ff ff fe 1f 00 00 01 43 51 06 09
"""
# (c) UC RDMA_WRITE_ONLY_WITH_IMMEDIATE, RETH + ImmDt, "hellowr", pad 1
GOLDEN_C = """
52 54 00 00 00 01 52 54 00 00 00 02 08 00 45 00
00 48 77 dc 40 00 40 11 ae c6 0a 00 00 02 0a 00
00 01 c1 21 12 b7 00 34 00 00 2b 10 ff ff 00 00
00 11 00 00 00 02 00 00 56 09 ee d3 be e0 00 00
02 cc 00 00 00 07 99 aa bb cc 68 65 6c 6c 6f 77
72 00 8e 4d 79 49
"""

FRAMES = [bytes.fromhex(h) for h in (GOLDEN_A, GOLDEN_B, GOLDEN_C)]
LENGTHS = [70, 62, 86]
TS_SEC = 1700000000  # fixed timestamps: frame i at TS_SEC + i seconds + i microseconds


def pcap_bytes():
    # Classic pcap, little-endian, v2.4, thiszone 0, sigfigs 0, snaplen 65535, LINKTYPE_ETHERNET
    out = [struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1)]
    for i, f in enumerate(FRAMES, 1):
        out.append(struct.pack('<IIII', TS_SEC + i, i, len(f), len(f)))
        out.append(f)
    return b''.join(out)


def main():
    assert [len(f) for f in FRAMES] == LENGTHS, 'a golden hex dump lost a byte'
    data = pcap_bytes()
    if len(sys.argv) == 3 and sys.argv[1] == '--check':
        with open(sys.argv[2], 'rb') as fh:
            have = fh.read()
        if have != data:
            print(f'{sys.argv[2]} differs from what {sys.argv[0]} writes: regenerate it')
            return 1
        return 0
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-2:], file=sys.stderr)
        return 2
    with open(sys.argv[1], 'wb') as fh:
        fh.write(data)
    return 0


if __name__ == '__main__':
    sys.exit(main())
