#!/usr/bin/env bash
# The conventions every gpunic command keeps on its command line (README, "Conventions of the
# command line"), and the report lines and rdma-core flags that go with them:
#   help           every --help ends with an "Exit status:" block; `gpunic help CMD` prints it
#   usage          every invalid value is answered with what the option takes, exit 2
#   numbers        decimal or 0x hex in every command, a leading 0 refused; times decimal
#   timeouts       --timeout SECONDS with decimals; the old spellings still work
#   verbose        -v raises the library's log level, --quiet lowers it
#   pingpong_flags rdma-core's flags: accepted and reported, implemented, or refused with why
#   pingpong_pair  -c, --psn across the 24-bit wrap, -d/-i/-g/-l/-N reported, receive errors
#   oob_bind       pingpong's server listens on 127.0.0.1 unless --oob-bind says otherwise
#   loop_reports   the loop's report lines say what happened (handler, skipped immediates,
#                  a bye from the wrong address, runts); the dgram exchange names port 4791
#   psn_wrap       sensor and loop both start at 0xfffff0: both directions cross the wrap
#   man_page       help2man makes a page from --help (skipped without help2man)
#
# usage: cli_conventions.sh CASE GPUNIC WORKDIR PYTHON SOURCE_DIR
# Exit: 0 pass, 1 fail, 77 skipped.
set -u

case_name=$1
GPUNIC=$2
WORK=$3/conv-$case_name
PY=${4:-/usr/bin/python3}
SRC=${5:-}
here=$(cd "$(dirname "$0")" && pwd)

rm -rf "$WORK"
mkdir -p "$WORK"
# Unique per run: parallel ctest runs (and other build trees) never share a port or cable.
uniq=$(( ($$ * 7 + RANDOM) % 15000 ))
UDP_A=$(( 45000 + (uniq * 2) % 15000 ))
UDP_B=$(( UDP_A + 1 ))
CABLE=/gpunic-conv-$$-$RANDOM
MINE=(sensor loop pingpong immtest doctor decode)

# fail, check_json
# shellcheck source=tests/cli_lib.sh
. "$(dirname "$0")/../cli_lib.sh"
OOB_PORT=$(free_tcp_port)
[ -n "$OOB_PORT" ] || fail "no free TCP port for the out-of-band exchange"

# expect RC PATTERN ARGS...: gpunic ARGS exits RC and prints PATTERN (stdout or stderr)
expect() {
	local want=$1 pattern=$2
	shift 2
	"$GPUNIC" "$@" >"$WORK/x.out" 2>"$WORK/x.err"
	local rc=$?
	[ $rc -eq "$want" ] || fail "gpunic $*: exit $rc, expected $want"
	cat "$WORK/x.out" "$WORK/x.err" | grep -q -- "$pattern" ||
		fail "gpunic $*: no '$pattern' in its output"
}

# pp_pair NAME SERVER-ARGS -- CLIENT-ARGS: gpunic pingpong (or immtest, in ARGS) both ways
pp_pair() {
	local name=$1 sargs=() cargs=()
	shift
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do sargs+=("$1"); shift; done
	shift
	cargs=("$@")
	"$GPUNIC" "${sargs[@]}" -p "$OOB_PORT" --link "shm:$CABLE-$name,a,create" --ip 10.0.0.1 \
		>"$WORK/$name-server.out" 2>"$WORK/$name-server.err" &
	local spid=$!
	# the server listens once its end of the cable exists: the client's end needs it
	for _ in $(seq 200); do
		[ -n "$(listener "$OOB_PORT")" ] && break
		sleep 0.05
	done
	"$GPUNIC" "${cargs[@]}" -p "$OOB_PORT" --link "shm:$CABLE-$name,b" --ip 10.0.0.2 127.0.0.1 \
		>"$WORK/$name-client.out" 2>"$WORK/$name-client.err"
	local crc=$?
	wait $spid
	local src=$?
	[ $crc -eq 0 ] && [ $src -eq 0 ] || fail "$name: client exit $crc, server exit $src"
}

# listener PORT: the address a TCP socket listens on PORT with, from /proc/net/tcp
listener() {
	"$PY" - "$1" <<'PY'
import socket, struct, sys
port = int(sys.argv[1])
for line in open('/proc/net/tcp').readlines()[1:]:
    f = line.split()
    addr, p = f[1].split(':')
    if f[3] == '0A' and int(p, 16) == port:   # 0A: LISTEN
        print(socket.inet_ntoa(struct.pack('<I', int(addr, 16))))
PY
}

# loop_with_fake_sensor KIND OUT LOOP-ARGS...: gpunic loop LOOP-ARGS (stdout to OUT, stderr
# beside it as .err) against fake_sensor.py over the KIND (dgram or udp) link; the fake sensor
# must end well, the loop with exit 1: it echoed nothing
loop_with_fake_sensor() {
	local kind=$1 out=$2 lpid rc
	shift 2
	"$GPUNIC" loop --executor cpu "$@" --oob-port "$OOB_PORT" --timeout 30 \
		>"$out" 2>"${out%.*}.err" &
	lpid=$!
	"$PY" "$here/fake_sensor.py" "$kind" "$OOB_PORT" "$UDP_A" "$UDP_B" \
		>"$WORK/fs.out" 2>"$WORK/fs.err" ||
		{ kill $lpid; wait $lpid; fail "fake sensor ($kind): $(cat "$WORK/fs.err")"; }
	# the fake sensor's messages are none the loop can echo: a run that echoed nothing
	# must not look like one that worked (it exited 0)
	wait $lpid
	rc=$?
	[ $rc -eq 1 ] || fail "loop ($kind): exit $rc, not 1, after echoing nothing"
	grep -q "gpunic loop: nothing was echoed (the sensor said it sent 0)" "${out%.*}.err" ||
		fail "loop ($kind): it does not say it echoed nothing"
}

# waits_for TEXT CMD...: gpunic CMD says TEXT on stderr (within 10 s: a loaded machine's margin;
# the line comes before any wait) and is still waiting a second later; then it is stopped
waits_for() {
	local text=$1 pid rc
	shift
	"$GPUNIC" "$@" >"$WORK/w.out" 2>"$WORK/w.err" &
	pid=$!
	for _ in $(seq 200); do grep -qF -- "$text" "$WORK/w.err" && break; sleep 0.05; done
	sleep 1
	kill -0 "$pid" 2>/dev/null
	rc=$?
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	rm -f "/dev/shm$CABLE-w"
	grep -qF -- "$text" "$WORK/w.err" || fail "gpunic $*: does not say '$text': $(cat "$WORK/w.err")"
	[ $rc -eq 0 ] || fail "gpunic $*: stopped waiting after a second: $(cat "$WORK/w.err")"
}

# serve_and_look BIND-ARGS...: start a pingpong server (CMD="perf write_lat": a perf server,
# CMD=immtest an immtest one), say where it listens, stop it
serve_and_look() {
	# shellcheck disable=SC2086
	"$GPUNIC" ${CMD:-pingpong} -p "$OOB_PORT" --link "shm:$CABLE,a,create" --ip 10.0.0.1 \
		--timeout 20 "$@" >"$WORK/srv.out" 2>"$WORK/srv.err" &
	local spid=$! where=""
	for _ in $(seq 100); do
		where=$(listener "$OOB_PORT")
		[ -n "$where" ] && break
		sleep 0.05
	done
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	rm -f "/dev/shm${CABLE},a,create" "/dev/shm${CABLE}"
	echo "$where"
}

case $case_name in
help)
	for c in "${MINE[@]}"; do
		"$GPUNIC" "$c" --help >"$WORK/$c.out" 2>&1 || fail "$c --help: exit $?"
		# the block is the help's last: its header, then 0, 1 and 2, nothing else after
		"$PY" - "$WORK/$c.out" <<'PY' || fail "$c --help: no Exit status block at its end"
import re, sys
text = open(sys.argv[1]).read()
head, sep, block = text.rpartition('\nExit status:\n')
assert sep, 'no "Exit status:" line'
codes = re.findall(r'^  (\d+)  ', block, re.M)
assert codes[:3] == ['0', '1', '2'], codes
assert 'usage' in block.split('\n  2  ')[1].split('\n')[0], 'code 2 is not the usage error'
PY
		"$GPUNIC" help "$c" >"$WORK/$c-help.out" 2>&1 || fail "gpunic help $c: exit $?"
		cmp -s "$WORK/$c.out" "$WORK/$c-help.out" ||
			fail "gpunic help $c differs from gpunic $c --help"
	done
	"$GPUNIC" help >"$WORK/top.out" 2>&1 || fail "gpunic help: exit $?"
	grep -q "^Exit status:" "$WORK/top.out" || fail "gpunic help: no Exit status block"
	expect 2 "unknown command 'nosuch'" help nosuch
	;;
usage)
	# every invalid value says what the option takes; every usage error exits 2
	expect 2 "invalid value 'garbage' for --link: must be shm:" loop --link garbage
	expect 2 "invalid value '1' for --slots: must be 2..32768" loop --slots 1
	expect 2 "invalid value '8' for --size: must be 16..4096" sensor --size 8
	expect 2 "for --count: must be 1..10000000" sensor --count 0
	expect 2 "invalid value 'auto' for --sensor-engine: must be inline or thread" \
		bench loopback --sensor-engine auto
	expect 2 "for --psn: must be 0..0xffffff" sensor --psn 0x1000000
	expect 2 "for --oob-bind: must be an IPv4 address" loop --oob-bind everywhere
	expect 2 "for --peer-qpn: must be 2..0xffffff" loop --peer-qpn 1 --peer-ip 10.0.0.1
	expect 2 "for --size: must be 1..1073741824" pingpong -s 0
	expect 2 "for --mtu: must be 256, 512, 1024, 2048 or 4096" pingpong -m 1500
	expect 2 "for --rx-depth: must be 2..4096" pingpong -r 1
	expect 2 "for --ib-port: must be 1..255" pingpong -i 0
	expect 2 "for --port: must be 1..65535" immtest -p 0
	expect 2 "for --gid-idx: must be 0..255" immtest -g 256
	expect 2 "for --gpu: must be a CUDA device ordinal, 0..255" doctor --gpu 999
	expect 2 "for --gpu: must be a CUDA device ordinal, 0..255" doctor --device x
	expect 2 "for --port: must be 1..65535" decode --port 0 a.pcap
	expect 2 "unknown option '--bogus'" pingpong --bogus
	expect 2 "unknown option '--bogus'" immtest --bogus
	expect 2 "unknown option '--bogus'" doctor --bogus
	# a server that does not resolve is a usage error, not "No route to host" (exit 1)
	expect 2 "gpunic perf: cannot resolve host '300.1.1.1'" perf write_lat 300.1.1.1
	expect 2 "gpunic pingpong: cannot resolve host '300.1.1.1'" pingpong \
		--link "shm:$CABLE,a,create" --ip 10.0.0.1 300.1.1.1
	expect 2 "gpunic immtest: cannot resolve host '10.1.1.256'" immtest \
		--link "shm:$CABLE,a,create" --ip 10.0.0.1 10.1.1.256
	expect 2 "gpunic sensor: cannot resolve host '300.1.1.1'" sensor --oob-host 300.1.1.1
	;;
numbers)
	# one rule for every number (include/gpunic/parse.h): decimal or 0x hex; a leading 0 is
	# refused (perftest and rdma-core read it as octal); no sign. A hex value is accepted when
	# the command goes on to the next option and refuses that one instead.
	expect 2 "invalid value '8' for --size" sensor --count 0x10 --size 8
	expect 2 "invalid value 'x' for --gpu" loop --slots 0x400 --gpu x
	expect 2 "invalid value '8' for --size" bench loopback --count 0x10 --cpus 0,0x1,2 --size 8
	expect 2 "invalid value '1500' for --mtu" pingpong -s 0x40 -m 1500
	expect 2 "invalid value '256' for --gid-idx" immtest -p 0x4000 -g 256
	expect 2 "invalid value '1500' for -m/--mtu" perf write_lat -s 0x20 -m 1500
	expect 2 "unknown option '--bogus'" doctor --gpu 0x0 --bogus
	expect 1 "" decode --port 0x12b7 "$WORK/none.pcap"
	expect 2 "invalid value '010' for --count" sensor --count 010
	expect 2 "invalid value '010' for --slots" loop --slots 010
	expect 2 "invalid value '010' for --count" bench loopback --count 010
	expect 2 "invalid value '0,01,2' for --cpus" bench loopback --cpus 0,01,2
	expect 2 "invalid value '010' for --size" pingpong -s 010
	expect 2 "invalid value '010' for --port" immtest -p 010
	expect 2 "invalid value '010' for -s/--size" perf write_lat -s 010
	expect 2 "invalid value '010' for --gpu" doctor --gpu 010
	expect 2 "invalid value '010' for --port" decode --port 010 a.pcap
	expect 2 "invalid value '+8' for --size" sensor --size +8
	expect 2 "invalid value '010' for --psn" sensor --psn 010
	# times are decimal, up to 3 decimals, no leading 0 either
	expect 2 "invalid value '1e1' for --interval-us" sensor --interval-us 1e1
	expect 2 "invalid value '0x10' for --interval-us" bench loopback --interval-us 0x10
	expect 2 "invalid value '2.5' for --size" sensor --interval-us 2.5 --size 2.5
	;;
timeouts)
	# --timeout SECONDS with decimals; the old --oob-timeout-s and --timeout-ms still parse
	expect 2 "for --timeout: must be 0.001..3600 seconds" loop --timeout 0
	expect 2 "for --timeout: must be 0.001..3600 seconds" loop --timeout 1.2345
	expect 2 "for --timeout: must be 0.001..3600 seconds" sensor --oob-timeout-s -1
	expect 2 "for --reply-timeout: must be 0.001..3600 seconds" sensor --reply-timeout x
	expect 2 "for --timeout-ms: must be 1..3600000 milliseconds" sensor --timeout-ms 0
	expect 2 "for --timeout: must be 0..86400 seconds" pingpong --timeout 1e3
	for spelling in --timeout --oob-timeout-s; do
		start=$(date +%s%N)
		"$GPUNIC" loop --executor cpu --link "shm:$CABLE,a,create" --oob-port "$OOB_PORT" \
			"$spelling" 0.3 >"$WORK/t.out" 2>"$WORK/t.err"
		rc=$?
		ms=$(( ($(date +%s%N) - start) / 1000000 ))
		[ $rc -eq 1 ] || fail "loop $spelling 0.3 without a sensor: exit $rc, expected 1"
		grep -q "waiting for the sensor on TCP port .*: Connection timed out" "$WORK/t.err" ||
			fail "loop $spelling: no reason"
		# and it said what it waited for, as perftest's server does
		grep -q "waiting for the sensor's exchange on 127.0.0.1:$OOB_PORT ..." "$WORK/t.err" ||
			fail "loop: no waiting line"
		# 0.3 s, not 0 or 1 s: the decimals were kept (a generous bound for a loaded box)
		[ $ms -ge 250 ] && [ $ms -lt 10000 ] || fail "loop $spelling 0.3 took $ms ms"
	done
	# pingpong's old -t (a timeout) is rdma-core's CQE timestamps now: refused, with the way
	expect 2 "use --timeout SECONDS" pingpong -t --link "shm:$CABLE,a,create" --ip 10.0.0.1
	;;
waiting)
	# A client with no server says at once what it waits for (it printed nothing for 60 s);
	# a server waits for its client until one comes, as perftest's does, unless --timeout
	# (the loop gave up after 60 s), and says so
	waits_for "gpunic sensor: waiting for the loop at 127.0.0.1:$OOB_PORT ..." \
		sensor --oob-port "$OOB_PORT" --link "shm:$CABLE-w,a,create"
	waits_for "gpunic perf: waiting for the server at 127.0.0.1:$OOB_PORT ..." \
		perf write_lat --executor cpu -p "$OOB_PORT" 127.0.0.1
	for c in pingpong immtest; do
		waits_for "gpunic $c: waiting for the server at 127.0.0.1:$OOB_PORT ..." \
			"$c" -p "$OOB_PORT" --link "shm:$CABLE-w,a,create" --ip 10.0.0.1 127.0.0.1
		waits_for "gpunic $c: waiting for a client on 127.0.0.1:$OOB_PORT (until one comes)" \
			"$c" -p "$OOB_PORT" --link "shm:$CABLE-w,a,create" --ip 10.0.0.1
	done
	waits_for "waiting for the sensor's exchange on 127.0.0.1:$OOB_PORT (until it comes)" \
		loop --executor cpu --oob-port "$OOB_PORT" --link "shm:$CABLE-w,a,create"
	waits_for "gpunic perf: waiting for a client on 127.0.0.1:$OOB_PORT (until one comes)" \
		perf write_lat --executor cpu -p "$OOB_PORT"
	# with --timeout the wait has an end, and the line says it
	"$GPUNIC" pingpong -p "$OOB_PORT" --link "shm:$CABLE-w,a,create" --ip 10.0.0.1 \
		--timeout 0.3 >"$WORK/pt.out" 2>"$WORK/pt.err"
	rc=$?
	rm -f "/dev/shm$CABLE-w"
	[ $rc -eq 1 ] || fail "pingpong --timeout 0.3 with no client: exit $rc"
	grep -q "waiting for a client on 127.0.0.1:$OOB_PORT (up to 0.300 s)" "$WORK/pt.err" &&
		grep -q "accept: no client within --timeout" "$WORK/pt.err" ||
		fail "pingpong --timeout 0.3: $(cat "$WORK/pt.err")"
	;;
verbose)
	"$GPUNIC" loop --executor cpu --link "shm:$CABLE,a,create" --oob-port "$OOB_PORT" \
		--timeout 0.1 >"$WORK/plain.out" 2>"$WORK/plain.err"
	grep -q "gpunic: info:" "$WORK/plain.err" && fail "info messages without -v"
	"$GPUNIC" loop -v --executor cpu --link "shm:$CABLE,a,create" --oob-port "$OOB_PORT" \
		--timeout 0.1 >"$WORK/v.out" 2>"$WORK/v.err"
	grep -q "gpunic: info:" "$WORK/v.err" || fail "loop -v: no info messages"
	# -v raises the level GPUNIC_LOG_LEVEL set, whatever it was
	GPUNIC_LOG_LEVEL=err "$GPUNIC" loop -v --executor cpu --link "shm:$CABLE,a,create" \
		--oob-port "$OOB_PORT" --timeout 0.1 >"$WORK/ev.out" 2>"$WORK/ev.err"
	grep -q "gpunic: info:" "$WORK/ev.err" || fail "GPUNIC_LOG_LEVEL=err loop -v: no info"
	GPUNIC_LOG_LEVEL=info "$GPUNIC" loop --quiet --executor cpu --link "shm:$CABLE,a,create" \
		--oob-port "$OOB_PORT" --timeout 0.1 >"$WORK/q.out" 2>"$WORK/q.err"
	grep -q "gpunic: info:" "$WORK/q.err" && fail "loop --quiet still prints info"
	for c in sensor pingpong immtest doctor decode; do
		"$GPUNIC" "$c" -v --verbose --quiet --bogus >"$WORK/x.out" 2>"$WORK/x.err"
		grep -q "unknown option '--bogus'" "$WORK/x.err" ||
			fail "$c does not take -v, --verbose and --quiet"
	done
	;;
pingpong_flags)
	for f in -e --events -t --ts -o --odp -O --iodp -P --prefetch -j --dm --ud; do
		expect 2 "does not apply: " pingpong "$f" --link "shm:$CABLE,a,create" --ip 10.0.0.1
	done
	expect 2 "-e/--events does not apply: gpunic's CQs have no completion channel" pingpong -e
	expect 2 "-t/--ts does not apply: gpunic's CQEs carry no completion timestamp" pingpong -t
	expect 2 "unknown option '-t'" immtest -t 10
	;;
pingpong_pair)
	# rdma-core's command line, unchanged but for gpunic's link: -d/-i/-g/-l/-N are reported,
	# -c checks every byte, and --psn starts both sides 16 short of the 24-bit wrap
	pp_pair pp pingpong -d rxe0 -i 1 -g 1 -l 3 -N -c -n 100 -s 1000 --psn 0xfffff0 \
		--timeout 30.5 -- \
		pingpong -d rxe0 -i 1 -g 1 -c -n 100 -s 1000 --psn 0xfffff0 --timeout 30.5
	for side in server client; do
		out=$WORK/pp-$side.out
		grep -q "PSN 0xfffff0" "$out" || fail "$side: local PSN is not --psn's"
		grep -q "^100 iters in" "$out" || fail "$side: no summary"
		grep -q -- "-d rxe0: gpunic has no RDMA device" "$out" || fail "$side: -d not reported"
		grep -q -- "-i 1: the softnic has one port" "$out" || fail "$side: -i not reported"
		grep -q -- "-g 1: gpunic's one GID" "$out" || fail "$side: -g not reported"
		grep -q "^ receive errors: 0 frames the link threw away" "$out" ||
			fail "$side: no receive errors line"
	done
	grep -q -- "-l 3: .*service level is not used" "$WORK/pp-server.out" || fail "-l not reported"
	grep -q -- "-N: gpunic writes the mlx5 send WQE itself" "$WORK/pp-server.out" ||
		fail "-N not reported"
	pp_pair it immtest -d rxe0 -- immtest -g 1 --timeout 20.5
	grep -q "immtest: PASS" "$WORK/it-client.out" || fail "immtest did not pass"
	;;
oob_bind)
	where=$(serve_and_look)
	[ "$where" = 127.0.0.1 ] || fail "pingpong server listens on '$where', not 127.0.0.1"
	where=$(serve_and_look --oob-bind 0.0.0.0)
	[ "$where" = 0.0.0.0 ] || fail "pingpong --oob-bind 0.0.0.0 listens on '$where'"
	where=$(serve_and_look --bind 127.0.0.1)
	[ "$where" = 127.0.0.1 ] || fail "pingpong --bind (the old name) listens on '$where'"
	"$GPUNIC" pingpong --help | grep -q -- "--oob-bind=A.B.C.D the server's TCP listen" ||
		fail "pingpong --help does not describe --oob-bind"
	for CMD in "perf write_lat --executor cpu" immtest; do
		where=$(serve_and_look)
		[ "$where" = 127.0.0.1 ] || fail "$CMD server listens on '$where', not 127.0.0.1"
	done
	# and docs/SECURITY.md says so, not that they listen on every address (it did)
	"$PY" - "$SRC/docs/SECURITY.md" <<'PY' || fail "docs/SECURITY.md: the servers' listen address"
import re, sys
text = open(sys.argv[1]).read()
sec = text[text.index('### 2.7 Out-of-band listener'):]
sec = sec[:sec.index('\n## ')]
claim = re.search(r'every one of these listeners is on\s+127\.0\.0\.1', sec)
assert claim, 'no sentence saying the listeners bind 127.0.0.1'
head = sec[:claim.start()]
for cmd in ('gpunic loop', 'perf', 'pingpong', 'immtest'):
    assert cmd in head, cmd + ' is not among the listeners named'
assert not re.search(r'(perf|pingpong) servers listen on every address', sec), 'the old claim'
PY
	;;
loop_reports)
	# the handler of a host-thread executor is not called a GPU's
	"$GPUNIC" loop --executor cpu --handler gpu-db --link "shm:$CABLE,a,create" \
		--oob-port "$OOB_PORT" --timeout 0.1 >"$WORK/h.out" 2>"$WORK/h.err"
	grep -q "handler doorbell (GPU_DB's path, rung by the host thread)" "$WORK/h.out" ||
		fail "loop --executor cpu --handler gpu-db: handler line"
	# dgram: the exchange names port 4791; runts and a bye from another address reported
	loop_with_fake_sensor dgram "$WORK/d.out" \
		--link "dgram:127.0.0.1:$UDP_A,127.0.0.1:$UDP_B" --ip 10.0.0.1
	grep -q "^ receive errors: 3 frames the link threw away (runt" "$WORK/d.out" ||
		fail "loop: the 3 runts are not reported"
	grep -q "ignored an end-of-run message from QP 0x123 at 10.0.0.9: the sensor's QP from another address (the sensor is QP 0x123 at 10.0.0.2)" \
		"$WORK/d.err" || fail "loop: the bye from another address is not said as such"
	# udp: a WRITE_WITH_IMM whose immediate names no slot is a skipped message, no syndrome
	loop_with_fake_sensor udp "$WORK/u.json" --json --link "udp:127.0.0.1:$UDP_A"
	"$PY" - "$WORK/u.json" <<'PY' || fail "loop --json: $(cat "$WORK/u.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j['errors'] == 1 and j['last_error'] == 'skipped-message', j
assert j['nic']['rx_errors'] == {'link': 0, 'malformed': 0, 'wire': {}}, j['nic']
PY
	loop_with_fake_sensor udp "$WORK/u.out" --link "udp:127.0.0.1:$UDP_A"
	grep -q "executor errors 1 (last: a message skipped, no error CQE" "$WORK/u.out" ||
		fail "loop: a skipped immediate is reported as something else"
	grep -q "syndrome 0x0" "$WORK/u.out" && fail "loop: 'syndrome 0x0' for a skipped message"
	;;
psn_wrap)
	# both ends start 16 PSNs short of 0xffffff: the sensor's messages and the loop's echoes
	# cross the 24-bit wrap, and every message must still come back verified
	for mode in write-imm send; do
		"$GPUNIC" loop --json --executor cpu --mode "$mode" --psn 0xfffff0 \
			--link "shm:$CABLE,a,create" --oob-port "$OOB_PORT" --timeout 60 \
			>"$WORK/loop-$mode.out" 2>"$WORK/loop-$mode.err" &
		lpid=$!
		"$GPUNIC" sensor --json --mode "$mode" --psn 0xfffff0 --link "shm:$CABLE,b" \
			--oob-port "$OOB_PORT" --timeout 60 --count 500 --interval-us 0 \
			>"$WORK/sensor-$mode.out" 2>"$WORK/sensor-$mode.err"
		src=$?
		[ $src -eq 0 ] || { kill $lpid; wait $lpid; fail "$mode: sensor exit $src"; }
		wait $lpid || fail "$mode: loop exit $?"
		"$PY" - "$WORK/sensor-$mode.out" "$WORK/loop-$mode.out" <<'PY' ||
import json, sys
s = json.load(open(sys.argv[1]))
l = json.load(open(sys.argv[2]))
r = s['run']
assert r['sent'] == 500 and r['verified'] == 500, r
assert r['lost'] == 0 and r['corrupt'] == 0 and r['dup'] == 0 and r['reorder'] == 0, r
assert l['echoed'] == 500 and l['errors'] == 0 and l['end'] == 'sensor-done', l
assert l['qp']['rx_messages'] == 500 and l['qp']['tx_messages'] == 500, l['qp']
PY
			fail "$mode: not every message came back across the PSN wrap"
	done
	;;
man_page)
	h2m=$(command -v help2man) || { echo "SKIP: no help2man (Debian package help2man)"; exit 77; }
	[ -n "$SRC" ] || fail "no source directory given"
	page=$WORK/gpunic-loop.1
	cmake -DGPUNIC="$GPUNIC" -DCMD=loop -DOUT="$page" -DHELP2MAN="$h2m" -DVERSION=0.0.0 \
		-P "$SRC/cmake/gpunic_man.cmake" >"$WORK/man.out" 2>&1 || fail "man page script"
	grep -q '^\.TH GPUNIC-LOOP "1"' "$page" || fail "no .TH GPUNIC-LOOP header"
	grep -q '^gpunic-loop \\- the forwarder on the GPU host' "$page" || fail "no NAME line"
	grep -q 'Exit status:' "$page" || fail "no exit status in the page"
	grep -q -- '\\-\\-oob\\-bind' "$page" || fail "no --oob-bind in the page"
	[ ! -e "$page.d" ] || fail "the wrapper script was left behind"
	;;
*)
	echo "unknown case $case_name" >&2
	exit 1
	;;
esac
echo "PASS: $case_name"
exit 0
