#!/usr/bin/env bash
# The links side by side in one run, on a machine with or without iproute2 (the GPU machine has
# none): in a network namespace of its own (unshare -n), a veth pair made with rtnetlink
# (scripts/netns-veth.py), then `gpunic bench loopback` with the CPU executor over shm, udp
# (127.0.0.1 <-> 127.0.0.2), packet and xdp (the forwarder on one end of the pair, the sensor on
# the other): the closed-loop round trip, then the throughput search. Prints a Markdown table.
# Not a test. docs/BENCHMARKS.md, "Links", has its results.
#
# usage: links-compare.sh GPUNIC [COUNT] [TP_COUNT]     (root: a namespace and raw sockets)
set -u
GPUNIC=$(realpath "$1")
COUNT=${2:-20000}
TP_COUNT=${3:-20000}
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "links-compare: needs root (a network namespace, raw sockets)" >&2; exit 77; }
command -v unshare >/dev/null || { echo "links-compare: needs unshare (util-linux)" >&2; exit 77; }
# libxdp finds its own BPF objects (multiprog dispatcher, default AF_XDP program) in
# LIBXDP_OBJECT_PATH, else in the directory it was built for (/usr/lib/x86_64-linux-gnu/bpf, not
# there on the GPU machine); a libxdp from unpacked .debs (scripts/fetch-debs.sh) has them beside
# it. The xdp link asks for neither (it attaches its own program with libbpf and creates its
# socket with XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD): this only keeps libxdp whole.
if [ -z "${LIBXDP_OBJECT_PATH:-}" ]; then
	xdplib=$(ldd "$GPUNIC" 2>/dev/null | awk '$1 ~ /^libxdp\.so/ { print $3; exit }')
	if [ -n "$xdplib" ] && [ -d "$(dirname "$xdplib")/bpf" ]; then
		export LIBXDP_OBJECT_PATH
		LIBXDP_OBJECT_PATH=$(dirname "$xdplib")/bpf
	fi
fi
exec unshare -n bash -s "$GPUNIC" "$COUNT" "$TP_COUNT" "$here" <<'INNER'
set -u
GPUNIC=$1 COUNT=$2 TP_COUNT=$3 here=$4
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 "$here/netns-veth.py" glA glB 3000 || exit 1
summary() {
	python3 - "$1" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
s = [x for x in j["series"] if x["label"] == "cpu"]
x = j["meta"]["extra"]
if sys.argv[2] == "lat":
    u = s[0]["us"] if s else {}
    print("%.2f | %.2f | %s/%s" % (u.get("p50", 0), u.get("p99", 0),
          x.get("cpu.verified", "?"), x.get("cpu.sent", "?")), end="")
else:
    r = x.get("cpu.throughput_best_msgs_per_s")
    print(" | %s" % ("%.0f" % r if r else "none"))
PY
}
echo "| link | p50 µs | p99 µs | verified/sent | zero-loss msg/s |"
echo "|---|---:|---:|---|---:|"
for l in shm udp packet:glA,glB xdp:glA:0,glB:0; do
	k=${l%%:*}
	echo -n "| $k | "
	if "$GPUNIC" bench loopback --link "$l" --count "$COUNT" --interval-us 0 --executors cpu \
		--no-plot --out "$WORK/$k-lat" >"$WORK/$k-lat.txt" 2>&1; then
		summary "$WORK/$k-lat/summary.json" lat
	else
		echo -n "failed: $(grep -m1 -iE 'error|cannot|fail' "$WORK/$k-lat.txt") | | "
	fi
	if "$GPUNIC" bench loopback --link "$l" --throughput --throughput-count "$TP_COUNT" \
		--executors cpu --no-plot --out "$WORK/$k-tp" >"$WORK/$k-tp.txt" 2>&1; then
		summary "$WORK/$k-tp/summary.json" tp
	else
		echo " | failed"
	fi
done
INNER
