#!/usr/bin/env python3
# A sensor in a few lines, for what `gpunic sensor` never does: it speaks gpunic's out-of-band
# exchange with `gpunic loop` (docs/INTEROP.md, "Driving gpunic loop from another RoCE stack")
# and then misbehaves on purpose, so that cli_conventions.sh can check the loop's report lines.
#
# usage: fake_sensor.py dgram OOB_PORT LOOP_UDP_PORT MY_UDP_PORT
#   the loop runs on dgram:127.0.0.1:LOOP_UDP_PORT,127.0.0.1:MY_UDP_PORT. Checks that the
#   loop's message names UDP port 4791, sends 3 runts (datagrams shorter than an Ethernet
#   header), a bye with the right QPN from another address (which must get no answer), then
#   the real bye.
# usage: fake_sensor.py udp OOB_PORT LOOP_UDP_PORT MY_UDP_PORT
#   the loop runs on udp:127.0.0.1:LOOP_UDP_PORT. Sends one WRITE_WITH_IMM whose immediate
#   names no slot of the ring (5000 of 1024), then the bye.
# Exit: 0 done, 1 a check failed (said on stderr).
import os
import socket
import struct
import sys
import time

MAGIC, VERSION = 0x47504E51, 2
# magic version kind session qpn psn ip mac port va rkey len: 56 bytes
FMT = '!IIIQIII6sHQII'
SIZE = struct.calcsize(FMT)
HELLO, READY, BYE = 1, 2, 3
MY_QPN, MY_PSN = 0x123, 0x100
SESSION = struct.unpack('!Q', os.urandom(8))[0] | 1


def ip4(s):
    return struct.unpack('!I', socket.inet_aton(s))[0]


def msg(kind, ip, port, va=0):
    mac = bytes([2, 0]) + struct.pack('!I', ip)
    return struct.pack(FMT, MAGIC, VERSION, kind, SESSION, MY_QPN, MY_PSN, ip, mac, port, va,
                       0, 0)


def exchange(oob_port, m, deadline=30.0, answered=True):
    """One exchange: connect (the loop may not listen yet), write ours, read the loop's; with
    answered=False the loop must close the connection without a byte (it knows its sensor)."""
    end = time.monotonic() + deadline
    while True:
        try:
            s = socket.create_connection(('127.0.0.1', oob_port), timeout=5)
            break
        except OSError:
            if time.monotonic() > end:
                sys.exit('fake_sensor: no loop on TCP port %d' % oob_port)
            time.sleep(0.05)
    s.sendall(m)
    got = b''
    if not answered:
        got = s.recv(SIZE)
        s.close()
        if got:
            sys.exit('fake_sensor: the loop answered a stranger %d bytes' % len(got))
        return None
    while len(got) < SIZE:
        chunk = s.recv(SIZE - len(got))
        if not chunk:
            sys.exit('fake_sensor: the loop closed after %d bytes' % len(got))
        got += chunk
    s.close()
    f = struct.unpack(FMT, got)
    if f[2:4] != struct.unpack('!IQ', m[8:20]):
        sys.exit('fake_sensor: the answer carries kind %d session %x, not ours' % f[2:4])
    return {'qpn': f[4], 'psn': f[5], 'ip': f[6], 'port': f[8], 'va': f[9], 'rkey': f[10]}


def write_imm(loop, imm):
    """UC RDMA WRITE Only with Immediate (0x2b), 0 bytes, the ICRC left zero (udp: unchecked)."""
    bth = struct.pack('!BBHI I', 0x2b, 0, 0xffff, loop['qpn'] & 0xffffff, MY_PSN)
    reth = struct.pack('!QII', loop['va'], loop['rkey'], 0)
    return bth + reth + struct.pack('!I', imm) + bytes(4)


def main():
    kind, oob_port, loop_port, my_port = sys.argv[1], *map(int, sys.argv[2:5])
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(('127.0.0.1', my_port))
    me = ip4('10.0.0.2') if kind == 'dgram' else ip4('127.0.0.1')
    port = 4791 if kind == 'dgram' else my_port
    loop = exchange(oob_port, msg(HELLO, me, port))
    if kind == 'dgram' and loop['port'] != 4791:
        sys.exit('fake_sensor: the loop says its RoCEv2 UDP port is %d, not 4791'
                 % loop['port'])
    exchange(oob_port, msg(READY, me, port))   # "ready": the loop's QP is connected
    if kind == 'dgram':
        for _ in range(3):
            udp.sendto(b'runt!', ('127.0.0.1', loop_port))
    else:
        udp.sendto(write_imm(loop, 5000), ('127.0.0.1', loop_port))
    time.sleep(0.5)                            # the engine polls the link meanwhile
    if kind == 'dgram':
        # the sensor's QPN from another address: answered nothing, the loop keeps waiting
        exchange(oob_port, msg(BYE, ip4('10.0.0.9'), port), answered=False)
    exchange(oob_port, msg(BYE, me, port))     # bye: va = messages sent (none counted)
    print('fake_sensor: done, the loop is QP 0x%x' % loop['qpn'])


if __name__ == '__main__':
    main()
