#!/bin/bash
# SPDX-License-Identifier: MIT
# Every out-of-band exchange gpunic speaks, through a relay (oob_relay.py) that holds each
# direction's first byte for 700 ms (longer than the loop's old 500 ms listening window) and
# then passes one byte every 15 ms: gpunic's own (loop <-> sensor: QP info, ready, bye),
# rdma-core pingpong's, perftest's. Both sides must complete, and the relay must have carried
# every connection whole. loop_late_answer: a relay that passes everything at once but holds the
# loop's first answer 20 s, longer than the sensor waits for one answer (15 s, src/ep/oob.c).
# usage: oob_relay_test.sh CASE GPUNIC WORKDIR PYTHON
set -u
case_name=$1
G=$2
W=$3/relay_$case_name
PY=${4:-python3}
rm -rf "$W"
mkdir -p "$W"
command -v "$PY" > /dev/null || { echo "SKIP: no $PY"; exit 77; }
# two free TCP ports below the ephemeral range: the gpunic listener and the relay, where the
# other side connects (free_tcp_port; this script's own fail() is defined below)
# shellcheck source=tests/cli_lib.sh
. "$(dirname "$0")/../cli_lib.sh"
PORT=$(free_tcp_port)
RPORT=$(free_tcp_port)
while [ -n "$PORT" ] && [ "$RPORT" = "$PORT" ]; do RPORT=$(free_tcp_port); done
CABLE=/gpunic-ep-relay-$$-$RANDOM
rpid=

fail() {
	echo "FAIL: $*"
	for f in "$W"/*.log; do echo "--- $f"; tail -30 "$f"; done
	exit 1
}

[ -n "$PORT" ] && [ -n "$RPORT" ] || fail "no two free TCP ports"

cleanup() {
	[ -n "$rpid" ] && kill "$rpid" 2>/dev/null
	rm -f "/dev/shm$CABLE"
}
trap cleanup EXIT

relay_args=(--first-ms 700 --gap-ms 15)
[ "$case_name" = loop_late_answer ] &&
	relay_args=(--first-ms 0 --gap-ms 0 --chunk 4096 --hold-first-answer-ms 20000)
"$PY" "$(dirname "$0")/oob_relay.py" "$RPORT" "$PORT" "${relay_args[@]}" \
	> "$W/relay.log" 2>&1 &
rpid=$!
for _ in $(seq 400); do grep -q listening "$W/relay.log" && break; sleep 0.05; done
grep -q listening "$W/relay.log" || fail "the relay did not start"

# relayed N BYTES-UP BYTES-DOWN: the relay carried at least N connections, each of exactly
# these sizes (a connection cut short would show fewer bytes). The relay logs a connection
# once both its halves closed, a moment after the programs ended: up to 10 s on a loaded box.
relayed() {
	local n=$1 up=$2 down=$3 got
	for _ in $(seq 200); do
		got=$(grep -c "^conn [0-9]* up $up down $down\$" "$W/relay.log")
		[ "$got" -ge "$n" ] && return
		sleep 0.05
	done
	fail "the relay carried $got whole connections, expected $n"
}

# up FILE: the server printed its local address, so its cable is whole (a client that opens
# the cable while the server is still creating it fails)
up() {
	for _ in $(seq 400); do grep -q "local address" "$1" && return; sleep 0.05; done
	fail "the server did not come up"
}

# both SERVER-PID CLIENT-RC WHAT: the client exited 0 and so does the server
both() {
	local spid=$1 crc=$2 what=$3 src
	wait "$spid"
	src=$?
	[ "$crc" -eq 0 ] || fail "$what client exit $crc"
	[ "$src" -eq 0 ] || fail "$what server exit $src"
}

# loop_through_relay PYTHON-ASSERT: gpunic loop listening on PORT, the sensor connecting
# through the relay; both exit 0, every one of 300 messages echoed, and PYTHON-ASSERT (about l,
# the loop's JSON) holds
loop_through_relay() {
	"$G" loop --json --oob-port "$PORT" --timeout 60 --executor cpu \
		--link "shm:$CABLE,a,create" > "$W/loop.log" 2> "$W/loop-err.log" &
	local lpid=$!
	"$G" sensor --json --oob-port "$RPORT" --timeout 60 --link "shm:$CABLE,b" \
		--count 300 --interval-us 0 > "$W/sensor.log" 2> "$W/sensor-err.log"
	both $lpid $? "loop/sensor"
	"$PY" - "$W/sensor.log" "$W/loop.log" "$1" <<'PY' || fail "counts"
import json, sys
s = json.load(open(sys.argv[1]))["run"]
l = json.load(open(sys.argv[2]))
assert s["sent"] == 300 and s["verified"] == 300 and s["lost"] == 0, s
assert l["end"] == "sensor-done" and l["sensor_sent"] == 300 and l["echoed"] == 300, l
exec(sys.argv[3])
PY
}

case $case_name in
loop)
	# all three of the loop's exchanges (QP info, ready, bye) through the relay
	loop_through_relay ""
	relayed 3 56 56
	;;
loop_late_answer)
	# The sensor gives up on the first answer (15 s) and says hello again; the loop, which took
	# the first hello, answers this one again, as the same session's, and takes neither it for
	# "ready" nor "ready" for the end of the run (it took them so, and ended with "the sensor
	# is done (it sent 0)", before messages had kinds and sessions).
	loop_through_relay 'assert l["oob"]["repeated"] >= 1 and l["oob"]["refused"] == 0, l["oob"]'
	grep -q "asked for its hello again" "$W/loop-err.log" || fail "no repeated hello logged"
	;;
pingpong)
	# rdma-core's text message each way, then "done"
	"$G" pingpong -p "$PORT" --timeout 60 -n 50 -s 512 --chk --link "shm:$CABLE,a,create" \
		--ip 10.0.0.1 > "$W/server.log" 2>&1 &
	spid=$!
	up "$W/server.log"
	"$G" pingpong -p "$RPORT" --timeout 60 -n 50 -s 512 --chk --link "shm:$CABLE,b" --ip 10.0.0.2 \
		127.0.0.1 > "$W/client.log" 2>&1
	both $spid $? pingpong
	grep -q "50 iters in" "$W/client.log" || fail "no client summary"
	grep -q "50 iters in" "$W/server.log" || fail "no server summary"
	relayed 1 57 52
	;;
perftest)
	# perftest's versions, sys data, MTU, keys, bandwidth reports and closing handshake
	"$G" perf write_bw --executor cpu -c RC -p "$PORT" --timeout 60 -n 40 -s 3000 \
		--link "shm:$CABLE,a,create" --ip 10.0.0.1 > "$W/server.log" 2>&1 &
	spid=$!
	"$G" perf write_bw 127.0.0.1 --executor cpu -c RC -p "$RPORT" --timeout 60 -n 40 -s 3000 \
		--link "shm:$CABLE,b" --ip 10.0.0.2 > "$W/client.log" 2>&1
	both $spid $? "perf write_bw"
	grep -q "data verified: " "$W/server.log" || fail "no verification line"
	for _ in $(seq 200); do grep -q "^conn 1 up [1-9]" "$W/relay.log" && break; sleep 0.05; done
	grep -q "^conn 1 up [1-9][0-9]* down [1-9]" "$W/relay.log" || fail "nothing relayed"
	;;
*)
	echo "unknown case $case_name"
	exit 2
	;;
esac
echo PASS
