#!/usr/bin/env bash
# The raw Ethernet links end to end through the real CLI: two gpunic processes, one in each of
# two network namespaces joined by a veth pair this script creates and removes (never traffic in
# the host's own namespace). The out-of-band exchange runs over the kernel's TCP on the same
# pair (10.78.0.0/24); RoCEv2 runs on gpunic's own addresses (10.77.0.1, .2) through the
# packet or xdp link. No timing is asserted: exit codes, verification lines and JSON only.
#
# usage: raw_cli_test.sh CASE GPUNIC WORKDIR PYTHON
#   CASE: perf_packet perf_xdp loop_packet loop_xdp bench_packet bench_xdp
# Exit: 0 pass, 1 fail, 77 skipped (not root, no iproute2, no namespaces, no xdp link).
set -u

case_name=$1
GPUNIC=$2
WORK=$3/$case_name-$$
PY=${4:-/usr/bin/python3}

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root: network namespaces, veth pairs and raw sockets"
command -v ip >/dev/null || skip "no iproute2 (ip): install iproute2"

NS_A=gpunic-t-$$-a
NS_B=gpunic-t-$$-b
IF_A=gc$(( $$ % 1000000 ))a
IF_B=gc$(( $$ % 1000000 ))b
RIP_A=10.77.0.1 RIP_B=10.77.0.2         # gpunic's RoCEv2 addresses
KIP_A=10.78.0.1 KIP_B=10.78.0.2         # the kernels' addresses (the TCP exchange)
MAC_A=02:00:0a:4d:00:01 MAC_B=02:00:0a:4d:00:02
OOB_PORT=18515
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# fail, check_json
# shellcheck source=tests/cli_lib.sh
. "$(dirname "$0")/../cli_lib.sh"

# namespaces a killed run left behind (its pid gone)
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^gpunic-t-'); do
	pid=${ns#gpunic-t-}
	pid=${pid%%-*}
	kill -0 "$pid" 2>/dev/null || ip netns del "$ns" 2>/dev/null
done

mkdir -p "$WORK"
ip netns add "$NS_A" 2>/dev/null || skip "network namespaces unavailable (ip netns add failed)"
ip netns add "$NS_B" 2>/dev/null || skip "network namespaces unavailable (ip netns add failed)"
# bench: both ports of the wire in one namespace, for the one process that drives both ends
case $case_name in bench_*) NS_B=$NS_A ;; esac
ip link add "$IF_A" netns "$NS_A" type veth peer name "$IF_B" netns "$NS_B" 2>/dev/null ||
	skip "no veth pairs (ip link add type veth failed)"
# xdp: native XDP on veth takes frames up to a page (PMTU 2048); packet: jumbo (PMTU 4096)
mtu=9000
case $case_name in *xdp*) mtu=3000 ;; esac
for end in "A $NS_A $IF_A $MAC_A $KIP_A" "B $NS_B $IF_B $MAC_B $KIP_B"; do
	set -- $end
	ip -n "$2" link set lo up || fail "lo up in $2"
	ip -n "$2" link set "$3" address "$4" mtu "$mtu" up || fail "setting up $3"
	case $case_name in bench_*) ;; *) ip -n "$2" addr add "$5/24" dev "$3" || fail "address on $3" ;; esac
	ip netns exec "$2" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null
done

kind=${case_name#*_}
if [ "$kind" = xdp ]; then
	LINK_A="xdp:$IF_A:0,ip=$RIP_A"
	LINK_B="xdp:$IF_B:0,ip=$RIP_B"
else
	LINK_A="packet:$IF_A,ip=$RIP_A"
	LINK_B="packet:$IF_B,ip=$RIP_B"
fi
# The xdp link may be left out of this build: a run that failed for that is skipped, saying so.
fail_or_skip() {
	grep -qs "xdp link: built without libxdp" "$WORK"/*.err && skip "xdp link: built without libxdp"
	fail "$@"
}

# perf TEST CONN EXTRA...: a server in A, a client in B; both must exit 0.
perf() {
	local test=$1 conn=$2 tag="$1-$2"
	shift 2
	OOB_PORT=$((OOB_PORT + 1))
	ip netns exec "$NS_A" "$GPUNIC" perf "$test" --executor cpu -c "$conn" -p "$OOB_PORT" \
		--timeout 30 --link "$LINK_A" --ip "$RIP_A" --oob-bind "$KIP_A" "$@" \
		>"$WORK/$tag-server.out" 2>"$WORK/$tag-server.err" &
	local spid=$!
	pids+=("$spid")
	ip netns exec "$NS_B" "$GPUNIC" perf "$test" "$KIP_A" --executor cpu -c "$conn" \
		-p "$OOB_PORT" --timeout 30 --link "$LINK_B" --ip "$RIP_B" "$@" \
		>"$WORK/$tag-client.out" 2>"$WORK/$tag-client.err"
	local crc=$?
	wait "$spid"
	local src=$?
	[ $crc -eq 0 ] && [ $src -eq 0 ] || fail_or_skip "perf $test $conn: client exit $crc, server exit $src"
	grep -q "#bytes" "$WORK/$tag-client.out" || fail "perf $test $conn: no table"
	case $test in
	send_bw | write_bw)
		grep -q "data verified: .* 0 errors" "$WORK/$tag-server.out" ||
			fail "perf $test $conn: no verification line" ;;
	read_bw)
		grep -q "data verified: .* 0 errors" "$WORK/$tag-client.out" ||
			fail "perf $test $conn: no verification line" ;;
	atomic_*)
		grep -q "atomic values verified: 300 fetched values" "$WORK/$tag-client.out" &&
			grep -q "every target exact" "$WORK/$tag-server.out" ||
			fail "perf $test: atomics not verified" ;;
	esac
	echo "ok: perf $test $conn $*"
}

# loop MODE COUNT: `gpunic loop` in A, `gpunic sensor` in B, closed loop; nothing lost.
loop() {
	local mode=$1 count=$2
	ip netns exec "$NS_A" "$GPUNIC" loop --json --executor cpu --mode "$mode" \
		--link "$LINK_A" --ip "$RIP_A" --oob-bind "$KIP_A" --oob-port "$OOB_PORT" \
		--oob-timeout-s 60 \
		>"$WORK/loop-$mode.out" 2>"$WORK/loop-$mode.err" &
	local lpid=$!
	pids+=("$lpid")
	ip netns exec "$NS_B" "$GPUNIC" sensor --json --mode "$mode" --link "$LINK_B" \
		--ip "$RIP_B" --oob-host "$KIP_A" --oob-port "$OOB_PORT" --oob-timeout-s 60 \
		--count "$count" --warmup 20 --interval-us 0 \
		>"$WORK/sensor-$mode.out" 2>"$WORK/sensor-$mode.err"
	local src=$?
	wait "$lpid"
	local lrc=$?
	[ $src -eq 0 ] && [ $lrc -eq 0 ] || fail_or_skip "loop $mode: sensor exit $src, loop exit $lrc"
	check_json "$WORK/sensor-$mode.out" \
		"j['run']['sent'] == $count" "j['run']['verified'] == $count" \
		'j["run"]["lost"] == 0 and j["run"]["corrupt"] == 0 and j["run"]["dup"] == 0' \
		'j["run"]["latency_ns"]["min"] > 0'
	check_json "$WORK/loop-$mode.out" 'j["end"] == "sensor-done"' \
		"j['echoed'] == $count + 20" 'j["errors"] == 0'
	echo "ok: loop $mode $count over $kind"
	OOB_PORT=$((OOB_PORT + 1))
}

# bench: `gpunic bench loopback` with the forwarder on one port and the sensor on the other,
# closed loop (one message in flight, so a slow machine delays but loses nothing).
bench() {
	local mode=$1 count=$2 link=$kind:$IF_A,$IF_B
	[ "$kind" = xdp ] && link=xdp:$IF_A:0,$IF_B:0
	ip netns exec "$NS_A" "$GPUNIC" bench loopback --link "$link" --mode "$mode" \
		--count "$count" --interval-us 0 --executors cpu --no-plot --timeout 60 \
		--out "$WORK/bench-$mode" >"$WORK/bench-$mode.out" 2>"$WORK/bench-$mode.err" ||
		fail_or_skip "bench $mode over $kind: exit $?"
	check_json "$WORK/bench-$mode/summary.json" "j['meta']['link'] == '$kind'" \
		"[s for s in j['series'] if s['label'] == 'cpu'][0]['count'] == $count" \
		"all(s['loss']['lost'] == 0 and s['loss']['corrupt'] == 0 for s in j['series'])"
	echo "ok: bench $mode $count over $kind"
}

case $case_name in
bench_packet | bench_xdp)
	bench write-imm 500
	bench send 300
	;;
perf_packet | perf_xdp)
	perf send_lat RC -n 200 -s 3000
	perf write_lat UC -n 200 -s 3000
	perf read_lat RC -n 200 -s 3000
	perf send_bw RC -n 40 -s 3000
	perf write_bw UC -n 40 -s 3000
	perf read_bw RC -n 40 -s 3000
	perf put_bw RC -n 40 -s 3000
	perf atomic_lat RC -n 300 -A FETCH_AND_ADD
	perf atomic_bw RC -n 300 -A CMP_AND_SWAP
	;;
loop_packet | loop_xdp)
	loop write-imm 2000
	loop send 1000
	;;
*)
	echo "unknown case $case_name" >&2
	exit 1
	;;
esac
echo "PASS: $case_name"
exit 0
