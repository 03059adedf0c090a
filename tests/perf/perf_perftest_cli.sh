#!/bin/bash
# SPDX-License-Identifier: MIT
# gpunic perf as perftest users type it: perftest's command lines (those the rxe interop suite
# gives ib_write_lat and friends, tests/interop/gpunic-steps.txt, -d/-x/-F included) run
# unchanged as `gpunic perf` server and client on one host, with no extra flag; perftest's
# banner and address lines; "Waiting for client to connect..."; flags that cannot apply refused
# with their reason and exit 2; the out-of-band listener on loopback unless --oob-bind says
# otherwise, and deaf to garbage and silence; a sweep's rows printed as they complete.
# usage: perf_perftest_cli.sh CASE GPUNIC WORKDIR
#
# Each case runs in a network namespace of its own where the kernel allows one: the defaults
# under test (TCP 18515, UDP 4791 on 127.0.0.1) are fixed, and other suites use them too.
set -u
case_name=$1
G=$2
W=$3/$case_name
here=$(cd "$(dirname "$0")" && pwd)
STEPS=$here/../interop/gpunic-steps.txt

if [ -z "${GPUNIC_PERF_NETNS:-}" ] && unshare -rn true 2>/dev/null; then
	GPUNIC_PERF_NETNS=1 exec unshare -rn bash -c \
		'ip link set lo up 2>/dev/null || ifconfig lo up 2>/dev/null; exec bash "$@"' \
		bash "$0" "$@"
fi
mkdir -p "$W"
rm -f "$W"/*.log

fail() {
	echo "FAIL: $*"
	for f in "$W"/*.log; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done
	exit 1
}

has() { grep -qF -- "$2" "$W/$1.log" || fail "$1.log lacks '$2'"; }

# server ARGS... -- CLIENT-HOST: the same words on both sides, the client's ending in its host;
# both must exit 0.
pair() {
	local host=${!#} args=("${@:1:$#-1}")

	timeout 120 "$G" perf "${args[@]}" >"$W/server.log" 2>&1 &
	local spid=$!
	timeout 120 "$G" perf "${args[@]}" "$host" >"$W/client.log" 2>&1
	local crc=$?
	wait $spid
	local src=$?
	[ $crc -eq 0 ] || fail "gpunic perf ${args[*]} $host: client exit $crc"
	[ $src -eq 0 ] || fail "gpunic perf ${args[*]}: server exit $src"
}

# What perftest prints about a connection, on both sides.
check_banner() {
	local title=$1 conn=${2:-RC} f
	for f in server client; do
		has $f "$title"
		has $f " Dual-port       : OFF"
		has $f " Number of qps   : 1"
		has $f " Connection type : $conn"
		has $f " Mtu             : 1024[B]"
		has $f " Link type       : Ethernet"
		has $f " GID index       : 1"
		has $f " Data ex. method : Ethernet"
		has $f " local address: LID 0000 QPN 0x"
		has $f " remote address: LID 0000 QPN 0x"
		has $f "-d rxe0 -x 1 accepted, not used"
	done
	has client " TX depth        : "
}

case $case_name in
same_host)
	# the client's RoCE address steps aside from the server's (it failed with "Address
	# already in use" unless given --ip 127.0.0.2)
	pair write_lat -d rxe0 -x 1 -c RC -m 1024 -s 64 -n 20 -F 127.0.0.1
	check_banner "RDMA_Write Latency Test"
	has server " GID: 00:00:00:00:00:00:00:00:00:00:255:255:127:00:00:01"
	has client " GID: 00:00:00:00:00:00:00:00:00:00:255:255:127:00:00:02"
	hex='0x[0-9a-f]+'
	grep -qE "^ local address: LID 0000 QPN $hex PSN $hex RKey $hex VAddr $hex\$" \
		"$W/client.log" || fail "no perftest-shaped local address line"
	# perftest's box, before anything else the server says
	[ "$(sed -n 3p "$W/server.log")" = "* Waiting for client to connect... *" ] ||
		fail "the server did not start with 'Waiting for client to connect...'"
	has client "link udp:127.0.0.2"
	has client "#bytes #iterations"
	;;
interop_lines)
	# every perftest command line of the rxe suite, as the tool's name says: ib_X -> perf X
	[ -r "$STEPS" ] || fail "no $STEPS"
	n=0
	while IFS= read -r line; do
		read -r -a w <<<"$line"
		t=${w[0]#ib_}
		c=$(sed -n 's/.*-c \([RU]C\).*/\1/p' <<<"$line")
		pair "$t" "${w[@]:1}" 127.0.0.1
		case $t in
		send_lat) check_banner "Send Latency Test" "$c" ;;
		write_lat) check_banner "RDMA_Write Latency Test" "$c" ;;
		read_lat) check_banner "RDMA_Read Latency Test" "$c" ;;
		write_bw) check_banner "RDMA_Write BW Test" "$c" ;;
		send_bw) check_banner "Send BW Test" "$c" ;;
		read_bw) check_banner "RDMA_Read BW Test" "$c" ;;
		atomic_*) check_banner "Atomic ${line##*-A } " "$c" ;;
		*) fail "$line: no test named $t" ;;
		esac
		grep -q "MISMATCH" "$W/server.log" "$W/client.log" && fail "$line: wrong data"
		n=$((n + 1))
	done < <(awk -F'|' '$4 ~ /^ *ib_/ { sub(/^ +/, "", $4); sub(/ +$/, "", $4); print $4 }' \
		"$STEPS" | sort -u)
	[ $n -ge 10 ] || fail "only $n perftest lines found in $STEPS"
	echo "$n perftest command lines ran unchanged"
	;;
not_applicable)
	while IFS='|' read -r flag why; do
		# shellcheck disable=SC2086
		"$G" perf write_bw $flag >"$W/na.log" 2>&1
		rc=$?
		[ $rc -eq 2 ] || fail "'gpunic perf write_bw $flag': exit $rc, want 2"
		has na "$why"
	done <<'EOF'
-R|-R does not apply: gpunic has no rdma_cm; the TCP exchange is used
--rdma_cm|--rdma_cm does not apply: gpunic has no rdma_cm
-z|-z does not apply: gpunic has no rdma_cm
-b|-b does not apply: gpunic perf measures one direction per run
-e|-e does not apply: gpunic's executors poll their CQs
-O|-O does not apply: the softnic has one port
-D 5|-D does not apply: both sides run -n iterations
-q 2|invalid value '2' for -q/--qp: must be 1
-s 0|invalid value '0' for -s/--size: must be 1..8388608
-n 0|invalid value '0' for -n/--iters: must be 1..10000000
-x 256|invalid value '256' for -x/--gid-index: must be 0..255
-i 0|invalid value '0' for -i/--ib-port: must be 1..255
-I 973|invalid value '973' for -I/--inline_size: must be 0..972
-m 1000|invalid value '1000' for -m/--mtu: must be 256, 512, 1024, 2048 or 4096
--timeout 0|invalid value '0' for --timeout: must be 0.001..3600
--timeout 1e3|invalid value '1e3' for --timeout: must be 0.001..3600
--psn 16777216|invalid value '16777216' for --psn: must be 0..16777215
--use_cuda=x|invalid value 'x' for --use_cuda: must be 0..255
--oob-bind 1.2.3|invalid value '1.2.3' for --oob-bind
--bogus|unknown option '--bogus'
EOF
	"$G" perf read_lat -I 16 >"$W/na.log" 2>&1
	[ $? -eq 2 ] || fail "read_lat -I 16: want exit 2"
	has na "-I does not apply"
	;;
help)
	"$G" perf --help >"$W/help.log" 2>&1 || fail "--help: exit $?"
	"$G" perf -v --help >/dev/null 2>&1 || fail "-v --help: exit $?"
	for w in "Exit status:" "  0  " "  1  " "  2  usage error" "--oob-bind" "--psn" \
		"--use_cuda=N" "--report_gbits" "-I, --inline_size" "-F, --CPU-freq" \
		"--timeout SECONDS" "-v, --verbose"; do
		has help "$w"
	done
	[ "$(grep -A3 '^Exit status:' "$W/help.log" | tail -n +2 | grep -c '^  [0-9]  ')" -ge 3 ] ||
		fail "the Exit status block does not list 0, 1 and 2"
	;;
oob_bind)
	# a second address on this host: a client there is refused by the default listener
	# (127.0.0.1) and served by one on 0.0.0.0
	ip addr add 10.77.0.1/32 dev lo 2>/dev/null || { echo "SKIP: cannot add an address"; exit 77; }
	timeout 30 "$G" perf write_lat -n 5 --timeout 3 >"$W/server.log" 2>&1 &
	spid=$!
	sleep 0.5
	ss -Hltn 2>/dev/null | grep -q '127.0.0.1:18515' || fail "no listener on 127.0.0.1:18515"
	ss -Hltn 2>/dev/null | grep -q '0.0.0.0:18515' && fail "the default listener is on 0.0.0.0"
	timeout 30 "$G" perf write_lat -n 5 --timeout 1 10.77.0.1 >"$W/client.log" 2>&1
	[ $? -eq 1 ] || fail "a client of 10.77.0.1 reached the loopback listener"
	wait $spid
	timeout 60 "$G" perf write_lat -n 5 --oob-bind 0.0.0.0 >"$W/server.log" 2>&1 &
	spid=$!
	timeout 60 "$G" perf write_lat -n 5 10.77.0.1 >"$W/client.log" 2>&1 ||
		fail "a client of 10.77.0.1 against --oob-bind 0.0.0.0: exit $?"
	wait $spid || fail "the --oob-bind 0.0.0.0 server: exit $?"
	# same host on a real address: the client keeps it and takes a free UDP port
	grep -qE 'link udp:10\.77\.0\.1:[0-9]+$' "$W/client.log" || fail "client link not moved"
	;;
stray_clients)
	# garbage and silence on the listener are dropped with a line; the run goes on
	timeout 90 "$G" perf write_lat -n 5 --timeout 60 >"$W/server.log" 2>&1 &
	spid=$!
	for _ in $(seq 100); do ss -Hltn | grep -q '127.0.0.1:18515' && break; sleep 0.05; done
	exec 3<>/dev/tcp/127.0.0.1/18515 || fail "cannot connect"
	printf '%049d' 0 >&3
	exec 3>&-
	exec 4<>/dev/tcp/127.0.0.1/18515 || fail "cannot connect"
	timeout 60 "$G" perf write_lat -n 5 127.0.0.1 >"$W/client.log" 2>&1 ||
		fail "the client after a garbage and a silent connection: exit $?"
	exec 4>&-
	wait $spid || fail "the server after a garbage and a silent connection: exit $?"
	has server "dropped a connection from 127.0.0.1: not perftest's exchange; still waiting"
	has server "dropped a connection from 127.0.0.1: it sent nothing; still waiting"
	has client "peer gpunic"
	;;
udp_port_taken)
	# RoCEv2's UDP port taken on the server's address: the server fails before it listens,
	# naming the port and its holder (it listened, took the client, and then the client saw
	# only "the peer closed the connection"); a udp link that cannot bind says the same
	python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 4791))
print("bound", flush=True)
time.sleep(60)' >"$W/holder.log" 2>&1 &
	hpid=$!
	for _ in $(seq 100); do grep -q bound "$W/holder.log" && break; sleep 0.05; done
	timeout 30 "$G" perf write_lat -n 5 >"$W/server.log" 2>&1
	rc=$?
	ss -Hltn 2>/dev/null | grep -q '127.0.0.1:18515' && { kill $hpid; fail "it listened"; }
	timeout 30 "$G" pingpong -n 5 --link udp:127.0.0.1 --ip 127.0.0.1 >"$W/pingpong.log" 2>&1
	prc=$?
	kill $hpid
	[ $rc -eq 1 ] || fail "server exit $rc with UDP 4791 taken"
	has server "UDP 127.0.0.1:4791, where this server's link receives, is in use by pid $hpid (python3)"
	[ $prc -eq 1 ] || fail "pingpong exit $prc with UDP 4791 taken"
	has pingpong "link 'udp:127.0.0.1': UDP 127.0.0.1:4791 is in use by pid $hpid (python3)"
	;;
pingpong_defaults)
	# gpunic pingpong needs no --link and --ip, as perf: the out-of-band connection's address
	# on a udp link, the client on this host stepping aside to another loopback address (it
	# refused to start without both, exit 2)
	timeout 60 "$G" pingpong -n 20 >"$W/server.log" 2>&1 &
	spid=$!
	timeout 60 "$G" pingpong -n 20 127.0.0.1 >"$W/client.log" 2>&1
	crc=$?
	wait $spid
	src=$?
	[ $crc -eq 0 ] && [ $src -eq 0 ] || fail "pingpong with no --link and --ip: exit $crc/$src"
	has server "link udp:127.0.0.1 (the out-of-band connection's address"
	has client "link udp:127.0.0.2 (the out-of-band connection's address"
	has client "20 iters in"
	# --ip alone is a udp link on it
	timeout 60 "$G" pingpong -n 20 --ip 127.0.0.7 >"$W/server.log" 2>&1 &
	spid=$!
	timeout 60 "$G" pingpong -n 20 --ip 127.0.0.8 127.0.0.1 >"$W/client.log" 2>&1 ||
		fail "pingpong --ip alone: client exit $?"
	wait $spid || fail "pingpong --ip alone: server exit $?"
	has server "GID ::ffff:127.0.0.7"
	# a shm name without its leading '/' (it failed, exit 1, with no reason)
	timeout 60 "$G" pingpong -n 20 --link "shm:gpunic-ppdef-$$,a,create" --ip 10.0.0.1 \
		>"$W/server.log" 2>&1 &
	spid=$!
	sleep 0.3
	timeout 60 "$G" pingpong -n 20 --link "shm:gpunic-ppdef-$$,b" --ip 10.0.0.2 127.0.0.1 \
		>"$W/client.log" 2>&1 || fail "pingpong on shm:NAME without '/': client exit $?"
	wait $spid || fail "pingpong on shm:NAME without '/': server exit $?"
	# a shm link without --ip is a usage error that says so
	timeout 10 "$G" pingpong --link "shm:/gpunic-ppdef-$$,a,create" >"$W/usage.log" 2>&1
	[ $? -eq 2 ] || fail "pingpong --link shm:... without --ip: not a usage error"
	has usage "needs --ip, this end's address on it"
	;;
client_vanishes)
	# a client killed in the middle of the test: its server says the client went away (it
	# said "Input/output error", "Broken pipe" or "Connection timed out", as the test broke).
	# write_bw's server is passive: it meets the closed connection at once, however loaded
	# the machine is
	timeout 60 "$G" perf write_bw -n 10000000 --timeout 10 >"$W/server.log" 2>&1 &
	spid=$!
	# not under timeout(1): the kill below must reach gpunic itself
	"$G" perf write_bw -n 10000000 127.0.0.1 >"$W/client.log" 2>&1 &
	cpid=$!
	for _ in $(seq 400); do grep -q "remote address" "$W/client.log" && break; sleep 0.05; done
	sleep 0.5
	kill -KILL $cpid
	wait $cpid 2>/dev/null
	wait $spid
	rc=$?
	[ $rc -eq 1 ] || fail "server exit $rc after its client was killed"
	has server "gpunic perf: the client went away during the test: its connection closed"
	grep -q "Input/output error" "$W/server.log" && fail "the server blamed an I/O error"
	;;
psn)
	# the first PSN as given, one below the wrap: both directions cross 0xffffff -> 0
	pair write_lat -n 50 --psn 16777215 127.0.0.1
	has server "PSN 0xffffff"
	has client "PSN 0xffffff"
	;;
use_cuda)
	# perftest's --use_cuda=N is the GPU executor on GPU N: without a GPU it fails as
	# --executor gpu does (exit 1, the reason), never as an unknown option
	timeout 30 "$G" perf write_lat --use_cuda=0 --timeout 2 127.0.0.1 >"$W/cuda.log" 2>&1
	rc=$?
	[ $rc -ne 2 ] || fail "--use_cuda=0: exit 2 (refused)"
	if grep -q "executor gpu needs a GPU" "$W/cuda.log"; then
		[ $rc -eq 1 ] || fail "--use_cuda=0 without a GPU: exit $rc, want 1"
	else
		echo "SKIP: a GPU answered (--use_cuda=0 ran the GPU executor)"
		exit 77
	fi
	"$G" perf write_lat --use_cuda=0 --executor cpu >"$W/na.log" 2>&1
	[ $? -eq 2 ] || fail "--use_cuda with --executor cpu: want exit 2"
	;;
samples)
	# -U: each iteration's latency in order, -H sorted, then the row (as perftest)
	timeout 120 "$G" perf write_lat --pair --executor cpu -n 6 -U -H >"$W/pair.log" 2>&1 ||
		fail "write_lat -U -H: exit $?"
	[ "$(grep -c '^#, usec$' "$W/pair.log")" -eq 4 ] || fail "no -U and -H listings per side"
	[ "$(grep -cE '^[1-5], [0-9.e+-]+$' "$W/pair.log")" -eq 20 ] || fail "not 5 samples each"
	awk '/^#, usec$/ { n++; prev = -1; next } n % 2 == 0 && /^[1-5], / {
		if ($2 + 0 < prev) bad = 1; prev = $2 + 0 } END { exit bad }' "$W/pair.log" ||
		fail "-H listing not sorted"
	"$G" perf write_bw -U >"$W/na.log" 2>&1
	[ $? -eq 2 ] || fail "write_bw -U: want exit 2"
	has na "-U and -H are for *_lat"
	;;
sweep_streams)
	# each size's row is out while the sweep still runs (it was printed only at the end)
	out=$W/pair.log
	timeout 120 "$G" perf write_bw --pair --executor cpu -a -n 100 --report_gbits >"$out" 2>&1 &
	pid=$!
	seen=0
	while kill -0 $pid 2>/dev/null; do
		if grep -qE '^ +2 +100 ' "$out"; then
			grep -qE '^ *8388608 ' "$out" || seen=1
			break
		fi
		sleep 0.02
	done
	wait $pid || fail "the sweep failed: exit $?"
	[ $seen -eq 1 ] || fail "no row was printed before the sweep ended"
	grep -q 'BW peak\[Gb/sec\]' "$out" || fail "--report_gbits: no Gb/sec header"
	[ "$(grep -cE '^ *[0-9]+ +100 ' "$out")" -ge 23 ] || fail "not every size reported"
	;;
*)
	echo "unknown case $case_name"
	exit 2
	;;
esac
echo "PASS: $case_name"
