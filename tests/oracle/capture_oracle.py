#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""scapy (scapy.contrib.roce) recomputes the ICRC of every frame in a softnic capture.

  capture_oracle.py [--atomics EXPECTED] FILE.pcap [FILE.pcap ...]

Each frame must be IPv4/UDP/BTH; scapy rebuilds it with its own ICRC (icrc=None) and IPv4
checksum, which must equal the four bytes on the wire and the header gpunic sent.

--atomics: every RC COMPARE_SWAP / FETCH_ADD request and ATOMIC ACKNOWLEDGE in the captures is
unpacked here (AtomicETH: VA, R_Key, swap/add, compare; AtomicAckETH: original data, all
big-endian, IBA 9.3.3) and must be one of the lines of EXPECTED, and every line must be seen:
  OPCODE PSN VA RKEY SWAP_ADD COMPARE     (a request; hex)
  OPCODE PSN ORIG                         (an ATOMIC ACKNOWLEDGE; hex)

Exit status: 0 pass, 1 mismatch, 77 scapy missing (CTest skip). Run it with /usr/bin/python3
(Debian's python3-scapy; docs/WIRE.md).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# scapy_oracle exits 77 itself when scapy is missing
from scapy_oracle import (IP, UDP, BTH, Mismatch, dissect, icrc_of, raw,  # noqa: E402
                          read_pcap, unpack_ext)

ATOMIC_OPCODES = (0x12, 0x13, 0x14)   # RC ATOMIC_ACKNOWLEDGE, COMPARE_SWAP, FETCH_ADD


def read_expected(path):
    """The expected atomic frames, as tuples of ints keyed by (opcode, psn)."""
    want = {}
    with open(path) as f:
        for line in f:
            v = tuple(int(x, 16) for x in line.split())
            if v:
                want[v[:2]] = v
    return want


def atomic_fields(q):
    """What this frame's atomic headers say, from the bytes after the BTH (not gpunic's)."""
    udp = q[UDP]
    op = q[BTH].opcode
    f, _ = unpack_ext(op, raw(udp)[8 + 12:udp.len - 4])
    if op == 0x12:
        return (op, q[BTH].psn, f['atomic_orig'])
    return (op, q[BTH].psn, f['atomic_va'], f['atomic_rkey'], f['atomic_swap_add'],
            f['atomic_compare'])


def check_file(path, want=None, seen=None):
    frames = read_pcap(path)
    if not frames:
        return [f'{path}: no frames']
    bad = []
    for n, frame in enumerate(frames, 1):
        q = dissect(frame)
        if not q.haslayer(BTH) or not q.haslayer(IP) or not q.haslayer(UDP):
            bad.append(f'{path} frame {n}: scapy sees no IPv4/UDP/BTH')
            continue
        if want is not None and q[BTH].opcode in ATOMIC_OPCODES:
            try:
                got = atomic_fields(q)
            except Mismatch as e:
                bad.append(f'{path} frame {n}: {e}')
                continue
            exp = want.get(got[:2])
            if exp != got:
                bad.append(f'{path} frame {n}: atomic fields ' +
                           ' '.join(f'{x:#x}' for x in got) + ', expected ' +
                           (' '.join(f'{x:#x}' for x in exp) if exp else 'no such frame'))
            seen.add(got[:2])
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
    args = sys.argv[1:]
    want = seen = None
    if len(args) >= 2 and args[0] == '--atomics':
        want, seen = read_expected(args[1]), set()
        args = args[2:]
    if not args:
        print(__doc__)
        return 2
    bad = []
    for path in args:
        bad += check_file(path, want, seen)
    if want is not None:
        missing = sorted(set(want) - seen)
        bad += [f'atomic frame opcode {op:#x} psn {psn:#x} not in the capture'
                for op, psn in missing]
        print(f'{len(seen)} atomic requests and ATOMIC ACKs unpacked by scapy, '
              f'{len(want)} expected')
    for line in bad[:20]:
        print(line)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
