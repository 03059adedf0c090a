#!/usr/bin/env bash
# run-oob-check.sh: one guest, and the host as its peer on the out-of-band NIC, both ways:
#   host -> guest: the guest listens on TCP 18515, the host connects to 127.0.0.1:<hostfwd port>;
#   guest -> host: the host listens on 127.0.0.1:<port>, the guest connects to 10.0.2.100:18517.
# This is the path that pingpong/perftest in a guest will use to exchange QP numbers with gpunic on
# the host, while their RoCE frames go over the wire NIC. It is also the template for a test with
# the host as the peer (guest/gn.sh gn_tool_server/gn_tool_client, lib.sh gn_await_line).
#
#   tests/interop/run-oob-check.sh [-o OUTDIR]
#
# Exit status: 0 pass, 1 fail, 77 skipped (no packages/QEMU/TCG here).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

OUT=""
[ "${1:-}" = -o ] && OUT=$2
OUT=${OUT:-$GN_CACHE/runs/oob-$(date +%Y%m%d-%H%M%S)}
TMO=${GPUNIC_INTEROP_TIMEOUT:-180}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
trap 'gn_guests_stop; [ -n "${hp:-}" ] && kill "$hp" 2>/dev/null' EXIT
trap 'exit 130' INT TERM

t0=$(date +%s)
guest=$("$here/build-guest.sh" -q)
rc=$?
[ $rc = 77 ] && { echo "run-oob-check: SKIP (guest image cannot be built here)"; exit 77; }
[ $rc != 0 ] && { echo "run-oob-check: FAIL: build-guest.sh exited $rc"; exit 1; }
qemu-system-x86_64 -accel help 2>/dev/null | grep -qx tcg ||
	{ echo "run-oob-check: SKIP (qemu-system-x86_64 without TCG)"; exit 77; }
gn_pick_ports || exit 1
HOST_PORT=$((GN_BASE + 90))   # the host's listener, reached from the guest at 10.0.2.100:18517
IN_PORT=$(gn_hostfwd_port 0 0) # the host reaches the guest's TCP 18515 here

cat >"$OUT/tests.sh" <<'EOF'
. /lib/gn.sh
gn_tool_server oob_in 60 nc -l -p 18515
gn_res received "$(cat /tmp/oob_in.log)"
gn_tool_client oob_out 60 sh -c 'echo to-host | nc "$0" 18517'
gn_res reply "$(cat /tmp/oob_out.log)"
EOF
gn_mk_overlay "$OUT/overlay.cpio" "$OUT/tests.sh"
gn_initrd "$OUT/initrd" "$guest" "$OUT/overlay.cpio"

# The host's side: one connection, reads a line, answers "pong <line>".
$GN_PY - "$HOST_PORT" >"$OUT/host.txt" 2>&1 <<'EOF' &
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1)
s.settimeout(150)
c, _ = s.accept()
c.settimeout(30)
line = c.recv(100).decode().strip()
print("host got:", line, flush=True)
c.sendall(("pong " + line + "\n").encode())
c.close()
EOF
hp=$!

gn_log "guest booting (ports $GN_BASE+, output $OUT)"
# No RoCE peer here: the wire NIC points at a port nobody uses.
gn_guest_start name=a idx=0 out="$OUT" guest="$guest" initrd="$OUT/initrd" tmo="$TMO" \
	mac=52:54:00:00:00:01 ip=10.0.0.1/24 peer=10.0.0.2 wire_peer="$((GN_BASE + 99))" \
	guestfwd="18517:$HOST_PORT"
ok=1
if gn_await_line "$OUT/a.results" '^GNRES listening oob_in' 120; then
	$GN_PY - "$IN_PORT" >"$OUT/host-in.txt" 2>&1 <<'EOF' || ok=0
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
c.sendall(b"to-guest\n")
c.shutdown(socket.SHUT_WR)
c.close()
EOF
else
	[ -s "$OUT/a.console.log" ] || { echo "run-oob-check: SKIP (the guest printed nothing)"; exit 77; }
	ok=0
fi
gn_guests_wait
wait "$hp" 2>/dev/null
hp=""

check() { # check WHAT FILE REGEX
	if grep -qE "$3" "$2" 2>/dev/null; then echo "PASS  $1"; else echo "FAIL  $1"; ok=0; fi
}
{
	echo "ports: host 127.0.0.1:$IN_PORT -> guest 10.0.2.15:18515 (hostfwd);" \
		"guest 10.0.2.100:18517 -> host 127.0.0.1:$HOST_PORT (guestfwd)"
	check "guest booted, rxe0 up" "$OUT/a.results" '^GNRES boot ok .*active_mtu=1024'
	check "host -> guest (hostfwd)" "$OUT/a.results" '^GNRES received to-guest'
	check "guest -> host (guestfwd)" "$OUT/host.txt" '^host got: to-host'
	check "host reply reaches guest" "$OUT/a.results" '^GNRES reply pong to-host'
	echo "time $(($(date +%s) - t0)) s"
} | tee "$OUT/report.txt"
grep -q '^FAIL' "$OUT/report.txt" && ok=0
rm -f "$OUT/initrd"
[ $ok = 1 ] && { echo "PASS"; exit 0; }
echo "FAIL (see $OUT)"
exit 1
