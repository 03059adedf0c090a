#!/usr/bin/env bash
# scripts/netns-veth.py in a network namespace of its own (never the host's): it must leave
# both ends of the pair and lo up, with the MTU asked for, and refuse to make a pair twice.
# usage: netns_veth_test.sh NETNS_VETH_PY PYTHON     Exit: 0 pass, 1 fail, 77 skipped (not root)
set -u
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (a network namespace)"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: no unshare (util-linux)"; exit 77; }
exec unshare -n "$2" - "$1" "$2" <<'PY'
import fcntl, socket, struct, subprocess, sys
helper, py = sys.argv[1], sys.argv[2]
subprocess.run([py, helper, "tva", "tvb", "2500"], check=True)
s = socket.socket()

def ifreq(name, req, fmt):
    return struct.unpack(fmt, fcntl.ioctl(s, req, struct.pack(fmt, name.encode(), 0)))[1]

for n in ("tva", "tvb", "lo"):
    assert ifreq(n, 0x8913, "16sH") & 1, n + " is not up"        # SIOCGIFFLAGS, IFF_UP
for n in ("tva", "tvb"):
    assert ifreq(n, 0x8921, "16si") == 2500, n + ": wrong MTU"    # SIOCGIFMTU
again = subprocess.run([py, helper, "tva", "tvb"], capture_output=True, text=True)
assert again.returncode == 1 and "exists" in again.stderr, again
print("PASS: veth pair tva <-> tvb up, MTU 2500; a second one refused: " + again.stderr.strip())
PY
