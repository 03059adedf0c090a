#!/usr/bin/env bash
# Round trips and rates of the links side by side, in one run (docs/BENCHMARKS.md, "Links"):
# `gpunic loop` (CPU executor) echoes 32-byte WRITE_WITH_IMM messages from `gpunic sensor`,
# closed loop, over shm (one namespace), and over udp, packet and xdp on a veth pair between two
# network namespaces this script makes and removes; then the sensor paced at a few intervals on
# packet and xdp, for the rate with nothing lost. Not a test: it prints a Markdown table.
#
# usage: [CLOSED=0] [PACED='20 10'] [KEEP=DIR] raw_bench.sh GPUNIC [COUNT]   (root, iproute2, python3)
set -u
GPUNIC=$1
COUNT=${2:-20000}
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 77; }
NS_A=gpunic-b-$$-a NS_B=gpunic-b-$$-b IF_A=gb$$a IF_B=gb$$b
WORK=$(mktemp -d)
trap 'ip netns del $NS_A 2>/dev/null; ip netns del $NS_B 2>/dev/null; rm -rf $WORK' EXIT
ip netns add $NS_A && ip netns add $NS_B || exit 1
ip link add $IF_A netns $NS_A type veth peer name $IF_B netns $NS_B || exit 1
for e in "$NS_A $IF_A 02:00:0a:4d:00:01 10.78.0.1" "$NS_B $IF_B 02:00:0a:4d:00:02 10.78.0.2"; do
	set -- $e
	ip -n $1 link set lo up
	# MTU 3000: under what native XDP on veth takes, the same wire for every link
	ip -n $1 link set $2 address $3 mtu 3000 up
	ip -n $1 addr add $4/24 dev $2
	ip netns exec $1 sysctl -qw net.ipv6.conf.all.disable_ipv6=1
done
port=20000

# run NAME LOOP-NS LOOP-LINK SENSOR-NS SENSOR-LINK INTERVAL-US: one closed or paced run
run() {
	local name=$1 lns=$2 llink=$3 sns=$4 slink=$5 iv=$6
	port=$((port + 1))
	$lns "$GPUNIC" loop --json --executor cpu --link "$llink" --ip 10.77.0.1 \
		--oob-bind 0.0.0.0 --oob-port $port --oob-timeout-s 30 \
		>"$WORK/$name.loop" 2>"$WORK/$name.lerr" &
	local lpid=$!
	$sns "$GPUNIC" sensor --json --link "$slink" --ip 10.77.0.2 --oob-host $OOB_HOST \
		--oob-port $port --oob-timeout-s 30 --size 32 --count "$COUNT" --warmup 1000 \
		--interval-us "$iv" >"$WORK/$name.json" 2>"$WORK/$name.err"
	wait $lpid
	[ -n "${KEEP:-}" ] && cp "$WORK/$name".* "$KEEP"/
	python3 - "$WORK/$name.json" "$name" "$iv" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["run"]; l = j["latency_ns"]
print("| %s | %s | %.2f | %.2f | %.2f | %.0f | %d/%d |" % (sys.argv[2],
      "closed" if sys.argv[3] == "0" else sys.argv[3] + " us", l["p50"] / 1e3, l["p90"] / 1e3,
      l["p99"] / 1e3, j["msg_rate_per_s"], j["verified"], j["sent"]))
PY
}

A="ip netns exec $NS_A" B="ip netns exec $NS_B"
echo "| link | sensor pacing | p50 us | p90 us | p99 us | msg/s | verified/sent |"
echo "|---|---|---|---|---|---|---|"
if [ "${CLOSED:-1}" = 1 ]; then
	OOB_HOST=127.0.0.1
	run shm "$A" "shm:/gpunic-bench-$$,a,create" "$A" "shm:/gpunic-bench-$$,b" 0
	OOB_HOST=10.78.0.1
	run udp "$A" "udp:10.78.0.1" "$B" "udp:10.78.0.2" 0
	run packet "$A" "packet:$IF_A,ip=10.77.0.1" "$B" "packet:$IF_B,ip=10.77.0.2" 0
	run xdp "$A" "xdp:$IF_A:0,ip=10.77.0.1" "$B" "xdp:$IF_B:0,ip=10.77.0.2" 0
	run xdp-skb "$A" "xdp:$IF_A:0,ip=10.77.0.1,skb" "$B" "xdp:$IF_B:0,ip=10.77.0.2,skb" 0
fi
OOB_HOST=10.78.0.1
for iv in ${PACED:-20 10 5 2 1}; do
	run packet "$A" "packet:$IF_A,ip=10.77.0.1" "$B" "packet:$IF_B,ip=10.77.0.2" $iv
	run xdp "$A" "xdp:$IF_A:0,ip=10.77.0.1" "$B" "xdp:$IF_B:0,ip=10.77.0.2" $iv
done
