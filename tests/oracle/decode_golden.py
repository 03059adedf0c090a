#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`gpunic decode` on the three frames Linux rxe sent (tests/data/rxe_golden.pcap, made by
make_golden_pcap.py; docs/WIRE.md 3.2): every field must be what EXPECTED below says of those
frames. Standard library only.

usage: decode_golden.py GPUNIC_CLI tests/data/rxe_golden.pcap
"""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_golden_pcap  # noqa: E402  (the committed file must still be what it writes)

COMMON = {
    'tos': 0, 'df': True, 'mf': False, 'frag_off': 0, 'ttl': 64, 'dport': 4791, 'udp_csum': 0,
    'se': False, 'migreq': False, 'tver': 0, 'pkey': 0xFFFF, 'fecn': False, 'becn': False,
    'resv7': 0, 'ack_req': False, 'icrc_ok': True,
}

EXPECTED = [
    # (a) UC SEND_ONLY_WITH_IMMEDIATE "hello", imm 0x11223344, PSN 0xFFFFFE, pad 3
    dict(COMMON, frame=1, len=70, caplen=70, ts=1700000001.000001,
         dst_mac='52:54:00:00:00:01', src_mac='52:54:00:00:00:02',
         src_ip='10.0.0.2', dst_ip='10.0.0.1', ip_id=0x77A5, sport=0xC121, frame_bytes=70,
         opcode=0x25, opcode_name='UC_SEND_ONLY_WITH_IMMEDIATE', transport='UC', pad=3,
         qpn=0x11, psn=0xFFFFFE, imm=0x11223344, payload_len=5,
         icrc='0x178a2b23', icrc_bytes='232b8a17', icrc_calc='0x178a2b23'),
    # (b) RC ACKNOWLEDGE, PSN 0xFFFFFE, syndrome 0x1F (ACK, no credit limit), MSN 1
    dict(COMMON, frame=2, len=62, caplen=62, ts=1700000002.000002,
         dst_mac='52:54:00:00:00:02', src_mac='52:54:00:00:00:01',
         src_ip='10.0.0.1', dst_ip='10.0.0.2', ip_id=0x78F0, sport=0xC144, frame_bytes=62,
         opcode=0x11, opcode_name='RC_ACKNOWLEDGE', transport='RC', pad=0, qpn=0x12,
         psn=0xFFFFFE, aeth_syndrome=0x1F, aeth_name='ACK', aeth_msn=1, payload_len=0,
         icrc='0x09065143', icrc_bytes='43510609', icrc_calc='0x09065143'),
    # (c) UC RDMA_WRITE_ONLY_WITH_IMMEDIATE: RETH then ImmDt, "hellowr", pad 1
    dict(COMMON, frame=3, len=86, caplen=86, ts=1700000003.000003,
         dst_mac='52:54:00:00:00:01', src_mac='52:54:00:00:00:02',
         src_ip='10.0.0.2', dst_ip='10.0.0.1', ip_id=0x77DC, sport=0xC121, frame_bytes=86,
         opcode=0x2B, opcode_name='UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE', transport='UC', pad=1,
         qpn=0x11, psn=2, reth_va='0x00005609eed3bee0', reth_rkey=0x2CC, reth_len=7,
         imm=0x99AABBCC, payload_len=7,
         icrc='0x49794d8e', icrc_bytes='8e4d7949', icrc_calc='0x49794d8e'),
]

# Headers a frame does not carry must not be printed.
ABSENT = [
    ['reth_va', 'aeth_syndrome', 'atomic_va', 'ieth_rkey', 'error'],
    ['reth_va', 'imm', 'atomic_va', 'atomic_orig', 'ieth_rkey', 'error'],
    ['aeth_syndrome', 'atomic_va', 'ieth_rkey', 'error'],
]


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    cli, pcap = sys.argv[1:]
    with open(pcap, 'rb') as fh:
        if fh.read() != make_golden_pcap.pcap_bytes():
            print(f'FAIL: {pcap} is not what make_golden_pcap.py writes; regenerate it')
            return 1
    res = subprocess.run([cli, 'decode', pcap], capture_output=True, text=True)
    if res.returncode != 0:
        print(f'FAIL: gpunic decode exited {res.returncode}: {res.stderr.strip()}')
        return 1
    lines = res.stdout.splitlines()
    bad = []
    if len(lines) != len(EXPECTED):
        bad.append(f'{len(lines)} JSON lines for {len(EXPECTED)} frames')
    for line, want, absent in zip(lines, EXPECTED, ABSENT):
        got = json.loads(line)
        for k, v in want.items():
            if got.get(k) != v:
                bad.append(f'frame {want["frame"]} {k}: got {got.get(k)!r}, want {v!r}')
        bad += [f'frame {want["frame"]}: unexpected {k}' for k in absent if k in got]
    if 'gpunic decode: ' + pcap + ': 3 frames, 3 decoded, 0 rejected' not in res.stderr:
        bad.append(f'summary: {res.stderr.strip()!r}')
    for b in bad:
        print('FAIL:', b)
    if not bad:
        print('golden rxe frames: all fields match')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
