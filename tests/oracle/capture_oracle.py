#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""scapy (scapy.contrib.roce) recomputes the ICRC of every frame in a softnic capture.

  capture_oracle.py FILE.pcap [FILE.pcap ...]

Each frame must be IPv4/UDP/BTH; scapy rebuilds it with its own ICRC (icrc=None) and IPv4
checksum, which must equal the four bytes on the wire and the header gpunic sent. Exit status:
0 pass, 1 mismatch, 77 scapy missing (CTest skip). Run it with /usr/bin/python3 (Debian's
python3-scapy; roce-wire.md pitfall 19).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# scapy_oracle exits 77 itself when scapy is missing
from scapy_oracle import IP, UDP, BTH, dissect, icrc_of, raw, read_pcap  # noqa: E402


def check_file(path):
    frames = read_pcap(path)
    if not frames:
        return [f'{path}: no frames']
    bad = []
    for n, frame in enumerate(frames, 1):
        q = dissect(frame)
        if not q.haslayer(BTH) or not q.haslayer(IP) or not q.haslayer(UDP):
            bad.append(f'{path} frame {n}: scapy sees no IPv4/UDP/BTH')
            continue
        q2 = dissect(frame)
        del q2[IP].chksum
        q2[BTH].icrc = None
        rebuilt = raw(q2)
        if icrc_of(rebuilt) != icrc_of(frame):
            bad.append(f'{path} frame {n} (opcode {q[BTH].opcode:#04x} psn {q[BTH].psn:#x}): '
                       f'ICRC on the wire {icrc_of(frame):#010x}, scapy {icrc_of(rebuilt):#010x}')
        if rebuilt[14:34] != frame[14:34]:
            bad.append(f'{path} frame {n}: IPv4 header {frame[14:34].hex()}, '
                       f'scapy {rebuilt[14:34].hex()}')
    print(f'{path}: {len(frames)} frames, {len(frames) - len(bad)} with scapy\'s ICRC')
    return bad


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    bad = []
    for path in sys.argv[1:]:
        bad += check_file(path)
    for line in bad[:20]:
        print(line)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
