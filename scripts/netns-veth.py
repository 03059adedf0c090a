#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Make a veth pair in the current network namespace, with rtnetlink only: for machines without
iproute2 (the GPU machine has none), where the raw links are benched between the pair's ends.
Run it inside a namespace of its own (`unshare -n`), never the host's.

usage: netns-veth.py IF_A IF_B [MTU]   brings lo up, makes IF_A <-> IF_B with MTU (default
                                       3000, under what native XDP on veth takes), both up
Exit: 0, or 1 with the kernel's error (EPERM without CAP_NET_ADMIN)."""
import os
import socket
import struct
import sys

RTM_NEWLINK = 16
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 0x1, 0x4, 0x200, 0x400
NLMSG_ERROR = 2
IFLA_IFNAME, IFLA_MTU, IFLA_LINKINFO = 3, 4, 18
IFLA_INFO_KIND, IFLA_INFO_DATA = 1, 2
VETH_INFO_PEER = 1
IFF_UP = 1


def attr(kind, data):
    """One rtattr, padded to four bytes."""
    n = 4 + len(data)
    return struct.pack("=HH", n, kind) + data + b"\0" * (-n % 4)


def ifinfo(index=0, flags=0, change=0):
    return struct.pack("=BxHiII", socket.AF_UNSPEC, 0, index, flags, change)


def request(sock, body, flags):
    msg = struct.pack("=IHHII", 16 + len(body), RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK | flags,
                      1, 0) + body
    sock.send(msg)
    reply = sock.recv(65536)
    kind = struct.unpack_from("=H", reply, 4)[0]
    err = struct.unpack_from("=i", reply, 16)[0] if kind == NLMSG_ERROR else 0
    if err:
        raise OSError(-err, os.strerror(-err))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    a, b = sys.argv[1], sys.argv[2]
    mtu = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # NETLINK_ROUTE
    try:
        peer = ifinfo() + attr(IFLA_IFNAME, b.encode() + b"\0") + attr(IFLA_MTU,
                                                                      struct.pack("=I", mtu))
        info = attr(IFLA_INFO_KIND, b"veth") + attr(IFLA_INFO_DATA, attr(VETH_INFO_PEER, peer))
        request(s, ifinfo() + attr(IFLA_IFNAME, a.encode() + b"\0") +
                attr(IFLA_MTU, struct.pack("=I", mtu)) + attr(IFLA_LINKINFO, info),
                NLM_F_CREATE | NLM_F_EXCL)
        for name in ("lo", a, b):
            request(s, ifinfo(socket.if_nametoindex(name), IFF_UP, IFF_UP), 0)
    except OSError as e:
        sys.exit("netns-veth: %s" % e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
