#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""CLI tests of `gpunic decode`: flags, exit codes, unreadable files, and the JSON of rejected
frames. Frames are crafted here from the rxe golden frames, with IPv4 checksum and ICRC
recomputed in Python (zlib), so each carries exactly the one fault under test.
Standard library only.

usage: decode_cli.py CASE GPUNIC_CLI WORKDIR      (CASE: see CASES at the bottom)
"""
import json
import os
import random
import struct
import subprocess
import sys
import zlib

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'oracle'))
from make_golden_pcap import FRAMES as GOLDEN  # noqa: E402

GOLDEN_A, GOLDEN_B, GOLDEN_C = GOLDEN


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


# ------------------------------------------------------------------ frames and files

def ip_checksum(hdr):
    s = sum(struct.unpack('!10H', hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def fix(frame):
    """Recompute IPv4 checksum and ICRC (docs/WIRE.md 3) of an edited RoCEv2 frame."""
    f = bytearray(frame)
    f[24:26] = b'\0\0'
    f[24:26] = struct.pack('!H', ip_checksum(bytes(f[14:34])))
    tot, = struct.unpack('!H', f[16:18])
    end = 14 + tot - 4
    m = bytearray(f[14:end])
    m[1] = m[8] = 0xFF
    m[10:12] = m[26:28] = b'\xff\xff'
    m[32] = 0xFF
    f[end:end + 4] = struct.pack('<I', zlib.crc32(b'\xff' * 8 + bytes(m)))
    return bytes(f)


def edit(frame, off, data):
    return frame[:off] + data + frame[off + len(data):]


def with_payload(frame, extra):
    """Insert @extra before the ICRC, growing the IP and UDP lengths to match."""
    tot, = struct.unpack('!H', frame[16:18])
    end = 14 + tot - 4
    f = frame[:end] + extra + frame[end:]
    f = edit(f, 16, struct.pack('!H', tot + len(extra)))
    f = edit(f, 38, struct.pack('!H', tot - 20 + len(extra)))
    return fix(f)


def write_pcap(path, frames, linktype=1):
    with open(path, 'wb') as fh:
        fh.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, linktype))
        for i, fr in enumerate(frames, 1):
            fh.write(struct.pack('<IIII', 1700000000, i, len(fr), len(fr)))
            fh.write(fr)


def arp_frame():
    return (bytes.fromhex('ffffffffffff 525400000002 0806') +
            bytes.fromhex('0001 0800 06 04 0001 525400000002 0a000002 000000000000 0a000001') +
            b'\0' * 18)


def tcp_frame():
    f = edit(GOLDEN_A, 23, b'\x06')  # IP protocol TCP, the rest left as it is
    return fix(f)


def send_only_empty():
    """UC SEND_ONLY, no payload: 58 bytes, padded to the 60-byte Ethernet minimum."""
    eth_ip_udp = GOLDEN_A[:42]
    bth = bytes.fromhex('24 00 ffff 00 000011 00 000007')
    f = bytearray(eth_ip_udp + bth + b'\0' * 4)
    f[16:18] = struct.pack('!H', len(f) - 14)
    f[38:40] = struct.pack('!H', len(f) - 34)
    return fix(bytes(f)) + b'\0\0'


# Each: (frame, expected fields in the JSON line, keys that must be absent)
def rejected_frames():
    a = GOLDEN_A
    return [
        (arp_frame(), dict(error='not_ipv4', ethertype=0x0806, src_mac='52:54:00:00:00:02',
                           dst_mac='ff:ff:ff:ff:ff:ff'), ['src_ip', 'opcode']),
        (tcp_frame(), dict(error='not_udp', src_ip='10.0.0.2', ip_id=0x77A5),
         ['sport', 'opcode']),
        (fix(edit(a, 36, b'\x00\x35')), dict(error='udp_port', dport=53, sport=0xC121),
         ['opcode', 'icrc']),
        (edit(a, len(a) - 1, b'\x00'), dict(error='icrc', icrc_ok=False, icrc='0x008a2b23',
                                            icrc_calc='0x178a2b23', opcode=0x25, imm=0x11223344,
                                            payload_len=5), []),
        (a[:50], dict(error='ip_length', len=50, caplen=50, src_ip='10.0.0.2'),
         ['sport', 'opcode']),
        (a[:10], dict(error='eth_truncated', len=10), ['src_mac', 'src_ip']),
        (fix(edit(a, 42, b'\x64')), dict(error='opcode_unknown', opcode=0x64,
                                         opcode_name='UNKNOWN', transport='UD', qpn=0x11),
         ['imm', 'payload_len', 'icrc']),
        (fix(edit(a, 43, b'\x31')), dict(error='tver', tver=1, pad=3), ['imm']),
        (fix(edit(a, 44, b'\x00\x00')), dict(error='pkey', pkey=0), ['imm']),
        (fix(edit(a, 42, b'\x20')), dict(error='pad', opcode=0x20, pad=3), ['payload_len']),
        (with_payload(GOLDEN_B, b'\xab' * 4), dict(error='payload_unexpected',
                                                    aeth_syndrome=0x1F, aeth_msn=1),
         ['payload_len']),
        (send_only_empty(), dict(len=60, frame_bytes=58, opcode=0x24, payload_len=0,
                                 psn=7, icrc_ok=True), ['error']),
    ]


# ------------------------------------------------------------------ running the CLI

def run(cli, *args):
    return subprocess.run([cli, 'decode', *args], capture_output=True, text=True)


def expect_exit(res, code, *needles):
    check(res.returncode == code,
          f'exit {res.returncode}, wanted {code}; stderr: {res.stderr.strip()!r}')
    for n in needles:
        check(n in res.stderr, f'stderr {res.stderr.strip()!r} lacks {n!r}')


def json_lines(res):
    out = []
    for line in res.stdout.splitlines():
        obj = json.loads(line)
        check(isinstance(obj, dict) and next(iter(obj)) == 'frame', f'bad line {line}')
        out.append(obj)
    return out


def expect_fields(obj, want, absent):
    for k, v in want.items():
        check(obj.get(k) == v, f'frame {obj["frame"]} {k}: {obj.get(k)!r}, wanted {v!r}')
    for k in absent:
        check(k not in obj, f'frame {obj["frame"]}: {k} should be absent ({obj})')


# ------------------------------------------------------------------ cases

def case_help(cli, work):
    for flag in ('--help', '-h'):
        res = run(cli, flag)
        expect_exit(res, 0)
        check(res.stdout.startswith('usage: gpunic decode'), f'{flag}: {res.stdout[:80]!r}')
        check('--no-icrc' in res.stdout and '--port' in res.stdout, 'help lists no flags')


def case_usage_errors(cli, work):
    expect_exit(run(cli), 2, 'no capture file')
    expect_exit(run(cli, 'a.pcap', 'b.pcap'), 2, 'more than one')
    expect_exit(run(cli, '--bogus', 'a.pcap'), 2, "'--bogus'")
    expect_exit(run(cli, '-x', 'a.pcap'), 2, "'-x'")
    expect_exit(run(cli, 'a.pcap', '--port'), 2, 'needs a value')
    for bad in ('0', '65536', 'abc', '12x', '-1', ''):
        expect_exit(run(cli, '--port', bad, 'a.pcap'), 2, 'for --port: must be 1..65535')


def case_missing_file(cli, work):
    path = os.path.join(work, 'does-not-exist.pcap')
    res = run(cli, path)
    expect_exit(res, 1, path, 'No such file')
    check(res.stdout == '', 'output for a missing file')
    expect_exit(run(cli, work), 1, 'Is a directory')


def case_garbage_file(cli, work):
    for name, data in (('garbage.pcap', bytes(range(256)) * 4), ('empty.pcap', b''),
                       ('text.pcap', b'not a capture\n')):
        path = os.path.join(work, name)
        with open(path, 'wb') as fh:
            fh.write(data)
        res = run(cli, path)
        expect_exit(res, 1, path)
        check(res.stdout == '', f'{name}: printed {res.stdout!r}')


def case_truncated_file(cli, work):
    path = os.path.join(work, 'cut.pcap')
    write_pcap(path, GOLDEN)
    with open(path, 'r+b') as fh:
        fh.truncate(os.path.getsize(path) - 20)
    res = run(cli, path)
    expect_exit(res, 1, 'after frame 2', 'truncated', '2 frames, 2 decoded')
    check(len(json_lines(res)) == 2, 'frames before the cut not printed')


def case_not_ethernet(cli, work):
    path = os.path.join(work, 'rawip.pcap')
    write_pcap(path, [GOLDEN_A[14:]], linktype=101)
    expect_exit(run(cli, path), 1, 'link type RAW is not Ethernet')


def case_rejected_frames(cli, work):
    cases = rejected_frames()
    path = os.path.join(work, 'rejected.pcap')
    write_pcap(path, [c[0] for c in cases])
    res = run(cli, path)
    expect_exit(res, 0)
    lines = json_lines(res)
    check(len(lines) == len(cases), f'{len(lines)} lines for {len(cases)} frames')
    for obj, (_, want, absent) in zip(lines, cases):
        expect_fields(obj, want, absent)
    check(f'{path}: 12 frames, 1 decoded, 11 rejected (eth_truncated 1, not_ipv4 1, '
          'ip_length 1, not_udp 1, udp_port 1, opcode_unknown 1, tver 1, pkey 1, pad 1, '
          'payload_unexpected 1, icrc 1)\n' in res.stderr, f'summary: {res.stderr.strip()!r}')


def case_port(cli, work):
    moved = fix(edit(GOLDEN_A, 36, struct.pack('!H', 1234)))
    path = os.path.join(work, 'port.pcap')
    write_pcap(path, [moved, GOLDEN_B])
    default, other = json_lines(run(cli, path)), json_lines(run(cli, '--port', '1234', path))
    expect_fields(default[0], dict(error='udp_port', dport=1234), ['opcode'])
    expect_fields(default[1], dict(opcode=0x11, icrc_ok=True), ['error'])
    expect_fields(other[0], dict(dport=1234, opcode=0x25, imm=0x11223344, icrc_ok=True),
                  ['error'])
    expect_fields(other[1], dict(error='udp_port', dport=4791), ['opcode'])


def case_no_icrc(cli, work):
    bad = edit(GOLDEN_A, len(GOLDEN_A) - 1, b'\x00')
    path = os.path.join(work, 'noicrc.pcap')
    write_pcap(path, [bad, GOLDEN_C])
    res = run(cli, '--no-icrc', path)
    expect_exit(res, 0, '2 frames, 2 decoded, 0 rejected')
    lines = json_lines(res)
    expect_fields(lines[0], dict(icrc='0x008a2b23', icrc_bytes='232b8a00', payload_len=5),
                  ['error', 'icrc_ok', 'icrc_calc'])
    expect_fields(lines[1], dict(icrc='0x49794d8e', reth_len=7), ['error', 'icrc_ok'])


def case_mutations(cli, work):
    """Golden frames with random bytes flipped, cut or appended, and pure noise: every frame
    gets exactly one valid JSON line, and the summary accounts for each (run it under ASan)."""
    rng = random.Random(int(os.environ.get('GPUNIC_ORACLE_SEED', '0x5eed'), 0))
    frames = []
    for i in range(3000):
        f = bytearray(rng.choice(GOLDEN))
        for _ in range(rng.randint(1, 4)):
            op = rng.randrange(4)
            if op == 0 and f:
                f[rng.randrange(len(f))] ^= 1 << rng.randrange(8)
            elif op == 1:
                del f[rng.randrange(len(f) + 1):]
            elif op == 2:
                f += bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 40)))
            elif len(f) > 42:
                f[rng.randrange(14, 42)] = rng.getrandbits(8)  # IP/UDP headers
        if i % 10 == 0:
            f = bytearray(rng.getrandbits(8) for _ in range(rng.randint(0, 120)))
        frames.append(bytes(f))
    path = os.path.join(work, 'mutated.pcap')
    write_pcap(path, frames)
    res = run(cli, path)
    expect_exit(res, 0, f'{len(frames)} frames')
    lines = json_lines(res)
    check([o['frame'] for o in lines] == list(range(1, len(frames) + 1)), 'frame numbers')
    decoded = sum(1 for o in lines if 'error' not in o)
    check(f'{len(frames)} frames, {decoded} decoded, {len(frames) - decoded} rejected'
          in res.stderr, f'summary {res.stderr.strip()!r} vs {decoded} decoded lines')
    for o in lines:
        check(('icrc_ok' in o) == (o.get('error') in (None, 'icrc')), f'icrc_ok in {o}')


def case_without_libpcap(cli, work):
    expect_exit(run(cli, os.path.join(work, 'x.pcap')), 1, 'built without libpcap')
    expect_exit(run(cli, '--help'), 0)
    expect_exit(run(cli, '--bogus', 'x.pcap'), 2)


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith('case_')}


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in CASES:
        print(f'usage: decode_cli.py {{{"|".join(CASES)}}} GPUNIC_CLI WORKDIR', file=sys.stderr)
        return 2
    name, cli, work = sys.argv[1:]
    work = os.path.join(work, name)
    os.makedirs(work, exist_ok=True)
    try:
        CASES[name](cli, work)
    except Fail as e:
        print(f'FAIL {name}: {e}')
        return 1
    print(f'{name}: ok')
    return 0


if __name__ == '__main__':
    sys.exit(main())
