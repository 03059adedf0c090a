#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A TCP relay that delays and splits what it carries, for the out-of-band exchanges.

usage: oob_relay.py LISTEN_PORT TARGET_PORT [--first-ms N] [--gap-ms N] [--chunk N]
                    [--hold-first-answer-ms N]

Listens on 127.0.0.1:LISTEN_PORT; each connection is relayed to 127.0.0.1:TARGET_PORT. In each
direction the first byte waits --first-ms after it arrived at the relay, then the bytes go
--chunk at a time, --gap-ms apart: a slow path or a loaded peer, the cases where a side that
timed its read from the listening window (or wrote first) lost the exchange.
--hold-first-answer-ms holds the first connection's answer (target to client) that long instead:
a client that gives up on it and retries while the target already took its message.
One line per connection on stdout: "conn N up BYTES down BYTES" (up: client to target). Runs
until killed.
"""
import argparse
import socket
import sys
import threading
import time


def pump(src, dst, first_s, gap_s, chunk, count, key):
    first = True
    try:
        while True:
            data = src.recv(4096)
            if not data:
                break
            for i in range(0, len(data), chunk):
                time.sleep(first_s if first else gap_s)
                first = False
                dst.sendall(data[i:i + chunk])
                count[key] += len(data[i:i + chunk])
    except OSError:
        pass
    # pass the half-close on: the far side then sees EOF where it would have
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def connect_target(port):
    # the target may not listen yet: it is started at about the same time
    for _ in range(600):
        try:
            return socket.create_connection(("127.0.0.1", port))
        except OSError:
            time.sleep(0.05)
    return None


def serve(n, client, args):
    target = connect_target(args.target)
    if target is None:
        print("conn %d no target" % n, flush=True)
        client.close()
        return
    for s in (client, target):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    count = {"up": 0, "down": 0}
    f, g = args.first_ms / 1000.0, args.gap_ms / 1000.0
    fd = args.hold_first_answer_ms / 1000.0 if n == 1 and args.hold_first_answer_ms else f
    t = [threading.Thread(target=pump, args=(client, target, f, g, args.chunk, count, "up")),
         threading.Thread(target=pump, args=(target, client, fd, g, args.chunk, count, "down"))]
    for x in t:
        x.start()
    for x in t:
        x.join()
    client.close()
    target.close()
    print("conn %d up %d down %d" % (n, count["up"], count["down"]), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("listen", type=int)
    p.add_argument("target", type=int)
    p.add_argument("--first-ms", type=int, default=700)
    p.add_argument("--gap-ms", type=int, default=15)
    p.add_argument("--chunk", type=int, default=1)
    p.add_argument("--hold-first-answer-ms", type=int, default=0)
    args = p.parse_args()
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", args.listen))
    ls.listen(8)
    print("listening", flush=True)
    n = 0
    while True:
        c, _ = ls.accept()
        n += 1
        threading.Thread(target=serve, args=(n, c, args), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
