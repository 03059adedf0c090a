#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A running `gpunic loop` whose out-of-band port is attacked (issue 16 item 6): garbage, a bad
# version, a truncated message and silent clients, before the sensor (a silent one holding the
# port while the real sensor queues behind it) and during the run; from another network
# namespace (a non-loopback address) too. The run must complete with every message echoed and
# no attacker may receive a byte. cli_pair_shm_stray_clients (cli_test.sh) covers the two stray
# clients that come and go before the sensor; this covers the rest, and (bye_behind_silent) the
# sensor's end-of-run message queued behind silent clients (issue 36 item 3).
#
# usage: oob_attack_test.sh CASE GPUNIC WORKDIR PYTHON
# Exit: 0 pass, 1 fail, 77 skipped (netns: not root, or no network namespaces here).
set -u

case_name=$1
GPUNIC=$2
WORK=$3/$case_name
PY=${4:-/usr/bin/python3}
ATTACK=$(dirname "$0")/oob_attack.py

rm -rf "$WORK"
mkdir -p "$WORK"
CABLE=/gpunic-oobattack-$$-$RANDOM
NS_A=gpunic-oob-a-$$
NS_B=gpunic-oob-b-$$
NET=10.$(( 200 + $$ % 50 )).$(( $$ / 50 % 250 ))
pids=()

# fail, check_json
# shellcheck source=tests/cli_lib.sh
. "$(dirname "$0")/../cli_lib.sh"
OOB_PORT=$(free_tcp_port)
[ -n "$OOB_PORT" ] || fail "no free TCP port for the out-of-band exchange"

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	rm -f "/dev/shm$CABLE"
}
trap cleanup EXIT

# in NS CMD...: run CMD in network namespace NS ("" runs it here)
in_ns() {
	local ns=$1
	shift
	if [ -n "$ns" ]; then ip netns exec "$ns" "$@"; else "$@"; fi
}

# checks NAME COUNT: the sensor verified COUNT echoes, the loop ended by the sensor's bye
checks() {
	"$PY" - "$WORK/$1-sensor.out" "$WORK/$1-loop.out" "$2" <<'PY' || fail "$1: counts"
import json, sys
s = json.load(open(sys.argv[1]))["run"]
l = json.load(open(sys.argv[2]))
n = int(sys.argv[3])
assert s["sent"] == n and s["verified"] == n and s["lost"] == 0 and s["corrupt"] == 0, s
assert l["end"] == "sensor-done" and l["sensor_sent"] == n and l["echoed"] == n, l
assert l["errors"] == 0, l
PY
}

# run NAME NS LOOP-ARGS -- SENSOR-ARGS -- ATTACK-HOST ATTACK-NS ACTIONS...: the loop and the
# sensor in NS, the attacker in ATTACK-NS. The attacker's first actions run before the
# sensor starts; "touch:$WORK/go" in ACTIONS starts it.
run() {
	local name=$1 ns=$2 largs=() sargs=() ahost ans
	shift 2
	while [ "$1" != "--" ]; do largs+=("$1"); shift; done
	shift
	while [ "$1" != "--" ]; do sargs+=("$1"); shift; done
	shift
	ahost=$1 ans=$2
	shift 2
	rm -f "$WORK/go" "$WORK/sensor.pid"
	in_ns "$ns" "$GPUNIC" loop --json --oob-port "$OOB_PORT" --oob-timeout-s 60 --executor cpu \
		--link "shm:$CABLE,a,create" "${largs[@]}" \
		>"$WORK/$name-loop.out" 2>"$WORK/$name-loop.err" &
	local lpid=$!
	pids+=("$lpid")
	in_ns "$ans" "$PY" "$ATTACK" "$ahost" "$OOB_PORT" "$@" \
		>"$WORK/$name-attack.out" 2>"$WORK/$name-attack.err" &
	local apid=$!
	pids+=("$apid")
	for _ in $(seq 600); do [ -e "$WORK/go" ] && break; sleep 0.05; done
	[ -e "$WORK/go" ] || fail "$name: the attacker never let the sensor go"
	in_ns "$ns" "$GPUNIC" sensor --json --oob-port "$OOB_PORT" --oob-timeout-s 60 \
		--link "shm:$CABLE,b" "${sargs[@]}" \
		>"$WORK/$name-sensor.out" 2>"$WORK/$name-sensor.err" &
	local spid=$!
	pids+=("$spid")
	echo "$spid" > "$WORK/sensor.pid.tmp" && mv "$WORK/sensor.pid.tmp" "$WORK/sensor.pid"
	wait "$apid" || fail "$name: attacker: $(cat "$WORK/$name-attack.err")"
	wait "$spid" || fail "$name: sensor exit $?"
	wait "$lpid" || fail "$name: loop exit $?"
}

case $case_name in
loopback)
	# A silent client holds the port when the sensor comes: the sensor queues and gets
	# through once the silent one is dropped (5 s, src/ep/oob.c OOB_PEER_MS). 6 s later, with
	# the run going (8000 messages 2 ms apart: at least 16 s; the attacks take about 5 s of
	# it, and a loaded machine only makes the paced run longer), every kind of bad client
	# once more, and the sensor still alive after them.
	run loopback "" -- --count 8000 --interval-us 2000 -- 127.0.0.1 "" \
		stale hold sleep:0.5 touch:"$WORK/go" sleep:6 silent garbage badversion forged \
		truncated alive:"$WORK/sensor.pid"
	checks loopback 8000
	"$PY" - "$WORK/loopback-loop.out" <<'PY' || fail "the loop's out-of-band counts"
import json, sys
o = json.load(open(sys.argv[1]))["oob"]
assert o["refused"] == 2 and o["dropped"] >= 3 and o["repeated"] == 0, o
PY
	grep -q "ignored an end-of-run message from QP 0x123 at 10.0.0.99: no hello yet" \
		"$WORK/loopback-loop.err" || fail "the loop did not report the stale message"
	n=$(grep -c "dropped a connection" "$WORK/loopback-loop.err")
	[ "$n" -ge 3 ] || fail "the loop logged $n dropped connections, expected at least 3"
	grep -q "ignored an end-of-run message from QP 0x123 at 10.0.0.99: another session" \
		"$WORK/loopback-loop.err" || fail "the loop did not report the forged message"
	;;
queued_hello)
	# Silent clients take the loop's port before the sensor, more than its listen queue holds
	# and for longer than the sensor waits for one answer: the sensor gives up on a hello the
	# loop reads later and says hello again. The loop must not act on a hello whose sender
	# has gone, nor take the sensor's next hello for "ready" and its "ready" for the end of
	# the run (it did, and ended at once with "the sensor is done (it sent 0)").
	run queued_hello "" -- --count 2000 --interval-us 0 -- 127.0.0.1 "" \
		hold hold sleep:0.3 touch:"$WORK/go"
	checks queued_hello 2000
	;;
bye_behind_silent)
	# Silent clients hold the port from the sensor's start until it has ended, two queued at
	# any time, 5 s each: the sensor's end-of-run message waits behind them, longer than the
	# 2 s the sensor used to give it. The sensor must wait for the loop's answer and say
	# nothing false ("the loop did not take the end-of-run message", while the loop took it
	# later), and the loop must end by that message.
	run bye_behind_silent "" -- --count 2000 --interval-us 2000 -- 127.0.0.1 "" \
		touch:"$WORK/go" siege:"$WORK/sensor.pid"
	checks bye_behind_silent 2000
	"$PY" -c 'import json, sys; e = json.load(open(sys.argv[1]))["end_of_run"]
assert e == "confirmed", e' "$WORK/bye_behind_silent-sensor.out" ||
		fail "the sensor does not report the loop's answer to its end-of-run message"
	! grep -q "end-of-run" "$WORK/bye_behind_silent-sensor.err" ||
		fail "the sensor warned: $(cat "$WORK/bye_behind_silent-sensor.err")"
	;;
netns)
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for network namespaces"; exit 77; }
	command -v ip >/dev/null || { echo "SKIP: no ip (iproute2)"; exit 77; }
	ip netns add "$NS_A" 2>"$WORK/netns.err" ||
		{ echo "SKIP: no network namespaces here: $(cat "$WORK/netns.err")"; exit 77; }
	ip netns add "$NS_B" || fail "second namespace"
	# the pair is made inside A with its peer end in B: the host's namespace is never touched
	ip -n "$NS_A" link add gnoa type veth peer name gnob netns "$NS_B" ||
		{ echo "SKIP: no veth here"; exit 77; }
	ip -n "$NS_A" addr add "$NET.1/24" dev gnoa
	ip -n "$NS_B" addr add "$NET.2/24" dev gnob
	for ns in "$NS_A" "$NS_B"; do
		ip -n "$ns" link set lo up
	done
	ip -n "$NS_A" link set gnoa up
	ip -n "$NS_B" link set gnob up
	# 1. the default listener (127.0.0.1) is not reachable from B at A's address, while the
	# loop runs (the sensor still alive after the attempt: the loop still listened)
	run default "$NS_A" -- --count 3000 --interval-us 2000 -- "$NET.1" "$NS_B" \
		touch:"$WORK/go" sleep:1 refused alive:"$WORK/sensor.pid"
	checks default 3000
	# 2. --oob-bind A's address: B, a non-loopback client, sends garbage and holds the port
	# silently when the sensor (which connects to that address from A) comes, and attacks
	# again while it runs (3000 messages 2 ms apart: 6 s, the attacks less than 1 s)
	run bound "$NS_A" --oob-bind "$NET.1" -- --oob-host "$NET.1" --count 3000 \
		--interval-us 2000 -- "$NET.1" "$NS_B" garbage hold sleep:0.5 touch:"$WORK/go" sleep:6 \
		garbage truncated alive:"$WORK/sensor.pid"
	checks bound 3000
	;;
*)
	echo "unknown case $case_name" >&2
	exit 1
	;;
esac
echo "PASS: $case_name"
exit 0
