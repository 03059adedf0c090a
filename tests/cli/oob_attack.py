#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Attack the out-of-band port of a running `gpunic loop` (tests/cli/oob_attack_test.sh).

usage: oob_attack.py HOST PORT ACTION... ; each ACTION one connection, in order:
  garbage      49 bytes of 0xa5
  badversion   a 56-byte message with the right magic and version 1 (before kinds and
               sessions: the loop speaks version 2 only)
  truncated    the first 20 bytes of a valid message, then close
  forged       a well-formed end-of-run message of another session from a QP that is not the
               sensor's (during the run: the loop knows its sensor and answers no one else)
  stale        a well-formed end-of-run message before any hello (a client of an earlier
               session: the loop must not take it for the end of this one's run)
  silent       connect, send nothing, hold until the listener closes (at most 20 s)
  hold         as silent, but the next actions go on meanwhile (a second client comes while
               this one holds the port); checked at the end
  refused      the connection must be refused (nothing listens at HOST for us)
  sleep:S      no connection: wait S seconds
  alive:FILE   no connection: the process whose PID FILE holds must still run (the attacks
               came during the run)
  siege:FILE   two silent connections queued at the listener at all times (each replaced
               once the listener dropped it) until the process whose PID FILE holds has ended:
               whatever that process sends meanwhile waits behind them
  touch:FILE   no connection: create FILE (tells the test where the attack is)
Every connection must receive nothing. Prints one line per action; exits 1 at the first breach.
"""
import os
import socket
import struct
import sys
import threading
import time

MAGIC = 0x47504E51
BYE = 3


def message(version=2, kind=BYE):
    # magic, version, kind, session, qpn, psn, ip, mac, udp port, va, rkey, len
    # (docs/INTEROP.md)
    return struct.pack("!IIIQIII6sHQII", MAGIC, version, kind, 0x5e55, 0x123, 0x456,
                       0x0a000063, b"\x02\x00\x0a\x00\x00\x63", 4791, 0, 0, 0)


def connect(host, port):
    for _ in range(400):
        try:
            return socket.create_connection((host, port), timeout=5)
        except ConnectionRefusedError:
            time.sleep(0.05)
    sys.exit("no listener at %s:%d" % (host, port))


def heard(s, wait):
    """What the listener sent before closing or before @wait seconds passed."""
    s.settimeout(wait)
    got = b""
    try:
        while True:
            b = s.recv(4096)
            if not b:
                break
            got += b
    except (socket.timeout, ConnectionResetError):
        pass
    return got


def silent(s, act, breaches):
    t0 = time.monotonic()
    got = heard(s, 20.0)
    held = time.monotonic() - t0
    s.close()
    if got:
        breaches.append("%s: the listener answered %d bytes" % (act, len(got)))
    elif held >= 15.0:
        # dropped once its time is up, not at the loop's overall timeout
        breaches.append("%s: held the port %.1f s" % (act, held))
    else:
        print("%s: answered nothing, closed after %.1f s" % (act, held), flush=True)


def pid_of(path):
    for _ in range(200):
        if os.path.exists(path):
            break
        time.sleep(0.05)
    return int(open(path).read())


def running(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def siege(host, port, path, breaches):
    pid, holders = pid_of(path), []
    while running(pid) and not breaches:
        holders = [t for t in holders if t.is_alive()]
        while len(holders) < 2 and running(pid):
            try:
                s = socket.create_connection((host, port), timeout=5)
            except OSError:
                # the run is ending: the loop may close its port before the sensor exits
                time.sleep(0.05)
                continue
            t = threading.Thread(target=silent, args=(s, "siege", breaches))
            t.start()
            holders.append(t)
        time.sleep(0.1)
    for t in holders:
        t.join()
    print("siege: over", flush=True)


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    breaches, holders = [], []
    for act in sys.argv[3:]:
        if breaches:
            break
        if act.startswith("sleep:"):
            time.sleep(float(act[6:]))
            continue
        if act.startswith("alive:"):
            for _ in range(200):
                if os.path.exists(act[6:]):
                    break
                time.sleep(0.05)
            try:
                os.kill(int(open(act[6:]).read()), 0)
            except (OSError, ValueError):
                sys.exit("alive: the run was over before the attack ended")
            print("alive: the run still going")
            continue
        if act.startswith("siege:"):
            siege(host, port, act[6:], breaches)
            continue
        if act.startswith("touch:"):
            open(act[6:], "w").close()
            continue
        if act == "refused":
            try:
                socket.create_connection((host, port), timeout=5).close()
                sys.exit("refused: %s:%d accepted a connection" % (host, port))
            except (ConnectionRefusedError, socket.timeout, OSError) as e:
                print("refused: %s" % e.__class__.__name__)
            continue
        s = connect(host, port)
        if act in ("silent", "hold"):
            t = threading.Thread(target=silent, args=(s, act, breaches))
            t.start()
            if act == "hold":
                holders.append(t)
            else:
                t.join()
            continue
        t0 = time.monotonic()
        if act == "garbage":
            s.sendall(b"\xa5" * 49)
        elif act == "badversion":
            s.sendall(message(version=1))
        elif act in ("forged", "stale"):
            s.sendall(message())
        elif act == "truncated":
            s.sendall(message()[:20])
            s.shutdown(socket.SHUT_WR)
        else:
            sys.exit("unknown action " + act)
        got = heard(s, 3.0)
        s.close()
        if got:
            breaches.append("%s: the listener answered %d bytes" % (act, len(got)))
        else:
            print("%s: answered nothing, closed after %.1f s" % (act, time.monotonic() - t0),
                  flush=True)
    for t in holders:
        t.join()
    if breaches:
        sys.exit("; ".join(breaches))
    return 0


if __name__ == "__main__":
    sys.exit(main())
