#!/usr/bin/env bash
# CLI-level tests of the loopback experiment: `gpunic bench loopback`, `gpunic sensor` and
# `gpunic loop` run as a user runs them, their JSON checked with python3's json module.
# Nothing here is timed: counts are small and the runs closed-loop or paced at 50 us, so a
# 2-core CI machine and the sanitizer build pass them.
#
# usage: cli_test.sh CASE GPUNIC WORKDIR PYTHON [PLUGIN]
# PLUGIN: a shared library of RPC handlers (tests/rpc/rpc_plugin.c), for `loop --handler-lib`.
# Exit: 0 pass, 1 fail, 77 skipped (e.g. a GPU case on a machine that has a GPU).
set -u

case_name=$1
GPUNIC=$2
WORK=$3/$case_name
PY=${4:-/usr/bin/python3}
PLUGIN=${5:-}

rm -rf "$WORK"
mkdir -p "$WORK"
# Unique per run, so parallel ctest runs (and other build trees) never share a port or cable.
uniq=$(( ($$ * 7 + RANDOM) % 20000 ))
UDP_PORT=$(( 50000 + uniq % 10000 ))
CABLE=/gpunic-clitest-$$-$RANDOM

FAIL_TAIL=40
# fail, check_json
# shellcheck source=tests/cli_lib.sh
. "$(dirname "$0")/../cli_lib.sh"
OOB_PORT=$(free_tcp_port)
[ -n "$OOB_PORT" ] || fail "no free TCP port for the out-of-band exchange"

# check_json FILE PYTHON-EXPRESSION...: as cli_lib.sh's, and every JSON output must name the
# gpunic that made it (version and commit).
check_json() {
	local file=$1
	shift
	json_checks "$file" "isinstance(top.get('version'), str) and top['version']" \
		"isinstance(top.get('commit'), str) and top['commit']" "$@"
}

# The bench's summary.json: the cpu series complete, nothing lost, every sample verified.
check_bench_summary() {
	local dir=$1 count=$2
	[ -s "$dir/summary.json" ] || fail "no $dir/summary.json"
	check_json "$dir/summary.json" \
		'j["schema"] == "gpunic-report-1"' \
		'[s["label"] for s in j["series"]].count("cpu") == 1' \
		"[s for s in j['series'] if s['label'] == 'cpu'][0]['count'] == $count" \
		"[s for s in j['series'] if s['label'] == 'cpu'][0]['loss'] == {'sent': $count, 'received': $count, 'lost': 0, 'dup': 0, 'reorder': 0, 'corrupt': 0}" \
		"j['meta']['extra']['cpu.verified'] == $count" \
		'j["meta"]["extra"]["cpu.all_verified"] is True' \
		'j["meta"]["extra"]["cpu.error_completions"] == 0' \
		'j["meta"]["extra"]["gpu_status"].startswith("present") == (j["meta"]["gpu"] is not None)'
	[ -s "$dir/cpu.csv" ] || fail "no per-series CSV"
	# The samples file holds one line per verified sample, plus its header.
	[ "$(wc -l < "$dir/cpu.csv")" -eq $((count + 1)) ] || fail "cpu.csv has the wrong length"
}

no_gpu() {  # no_gpu OUTPUT-FILE: the command said there is no GPU
	grep -q "needs a GPU, and there is none" "$1"
}

# run_pair NAME LOOP-ARGS -- SENSOR-ARGS: loop and sensor as two processes.
run_pair() {
	local name=$1
	shift
	local largs=() sargs=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do largs+=("$1"); shift; done
	shift
	sargs=("$@")
	"$GPUNIC" loop --json --oob-port "$OOB_PORT" --oob-timeout-s 60 "${largs[@]}" \
		>"$WORK/$name-loop.out" 2>"$WORK/$name-loop.err" &
	local lpid=$!
	"$GPUNIC" sensor --json --oob-port "$OOB_PORT" --oob-timeout-s 60 "${sargs[@]}" \
		>"$WORK/$name-sensor.out" 2>"$WORK/$name-sensor.err"
	local src=$?
	if [ $src -ne 0 ]; then
		kill "$lpid" 2>/dev/null
		wait "$lpid"
		fail "$name: sensor exit $src"
	fi
	wait "$lpid"
	local lrc=$?
	[ $lrc -eq 0 ] || fail "$name: loop exit $lrc"
}

check_pair() {  # check_pair NAME COUNT [WARMUP]: the loop echoed COUNT + WARMUP
	local name=$1 count=$2 total=$(( $2 + ${3:-0} ))
	check_json "$WORK/$name-sensor.out" \
		'j["command"] == "sensor"' \
		"j['run']['sent'] == $count" \
		"j['run']['verified'] == $count" \
		'j["run"]["lost"] == 0 and j["run"]["corrupt"] == 0 and j["run"]["dup"] == 0' \
		"j['run']['latency_ns']['count'] == $count" \
		'j["run"]["latency_ns"]["min"] > 0'
	check_json "$WORK/$name-loop.out" \
		'j["command"] == "loop"' \
		'j["end"] == "sensor-done"' \
		"j['sensor_sent'] == $total" \
		"j['echoed'] == $total" \
		'j["errors"] == 0'
}

expect_usage_error() {  # expect_usage_error PATTERN ARGS...: exit 2 and PATTERN on stderr
	local pattern=$1
	shift
	"$GPUNIC" "$@" >"$WORK/usage.out" 2>"$WORK/usage.err"
	local rc=$?
	[ $rc -eq 2 ] || fail "gpunic $*: exit $rc, expected 2"
	grep -q -- "$pattern" "$WORK/usage.err" || fail "gpunic $*: no '$pattern' on stderr"
}

case $case_name in
bench_cpu)
	"$GPUNIC" bench loopback --executors cpu --count 2000 --warmup 100 --interval-us 0 \
		--no-plot --out "$WORK/report" >"$WORK/bench.out" 2>"$WORK/bench.err" ||
		fail "bench exit $?"
	check_bench_summary "$WORK/report" 2000
	grep -q "samples" "$WORK/bench.out" || fail "no table printed"
	grep -q "report: $WORK/report/summary.json" "$WORK/bench.out" || fail "no report path"
	;;
bench_interrupt)
	# SIGINT stops the bench within a round trip, the report of what completed kept: a
	# 10-million-message run (its cpu-floor alone takes seconds, gnuplot minutes over that
	# many samples) interrupted after 2 s. It kept going until the series in hand was done
	# and its plots drawn (171 s with a large --count); 30 s is the bound: what the report
	# takes to write a few seconds' samples on a loaded 2-core machine, with a wide margin.
	"$GPUNIC" bench loopback --executors cpu --count 10000000 --warmup 0 --interval-us 0 \
		--host-noise-ms 0 --out "$WORK/report" >"$WORK/bench.out" 2>"$WORK/bench.err" &
	bpid=$!
	sleep 2
	kill -INT "$bpid"
	for _ in $(seq 300); do kill -0 "$bpid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$bpid" 2>/dev/null; then
		kill -KILL "$bpid"
		wait "$bpid"
		fail "the bench still ran 30 s after SIGINT"
	fi
	wait "$bpid" || fail "bench exit $? after SIGINT"
	grep -q "(interrupted: the report holds the series that completed)" "$WORK/bench.out" ||
		fail "no word of the interruption"
	# (a loaded machine may not have started the floor in 2 s: then nothing completed)
	grep -q "no series completed" "$WORK/bench.out" ||
		grep -q "plots: not rendered (interrupted)" "$WORK/bench.out" ||
		fail "the plots were rendered after SIGINT"
	# the floor stopped part way: its samples are in the report
	if [ -s "$WORK/report/cpu-floor.csv" ]; then
		n=$(($(wc -l < "$WORK/report/cpu-floor.csv") - 1))
		[ "$n" -gt 0 ] && [ "$n" -lt 10000000 ] || fail "cpu-floor.csv holds $n samples"
	fi
	[ -s "$WORK/report/summary.json" ] || fail "no summary.json after SIGINT"
	;;
bench_default_executors)
	# no --executors: whatever the machine has; without a GPU the output must say so
	"$GPUNIC" bench loopback --count 500 --warmup 50 --interval-us 0 --no-plot \
		--out "$WORK/report" >"$WORK/bench.out" 2>"$WORK/bench.err" || fail "bench exit $?"
	check_bench_summary "$WORK/report" 500
	if grep -q "NO GPU" "$WORK/bench.out"; then
		grep -q "running the CPU executor only" "$WORK/bench.out" || fail "no CPU-only note"
		check_json "$WORK/report/summary.json" \
			'j["meta"]["gpu"] is None' \
			'j["meta"]["extra"]["gpu_status"].startswith("absent: ")' \
			'"only the CPU executor ran" in j["meta"]["extra"]["gpu_note"]' \
			'[s["label"] for s in j["series"]] == ["cpu-floor", "cpu"]'
	fi
	;;
bench_add_one)
	"$GPUNIC" bench loopback --executors cpu --work add-one --count 2000 --warmup 100 \
		--interval-us 0 --no-plot --out "$WORK/report" >"$WORK/bench.out" \
		2>"$WORK/bench.err" || fail "bench exit $?"
	check_bench_summary "$WORK/report" 2000
	check_json "$WORK/report/summary.json" 'j["meta"]["extra"]["work"] == "add-one"'
	;;
bench_send_add_one)
	"$GPUNIC" bench loopback --executors cpu --mode send --work add-one --size 100 \
		--count 1000 --warmup 50 --interval-us 0 --no-plot --out "$WORK/report" \
		>"$WORK/bench.out" 2>"$WORK/bench.err" || fail "bench exit $?"
	check_bench_summary "$WORK/report" 1000
	check_json "$WORK/report/summary.json" 'j["meta"]["extra"]["mode"] == "send"' \
		'j["meta"]["message_bytes"] == 100'
	;;
bench_paced)
	"$GPUNIC" bench loopback --executors cpu --count 2000 --warmup 100 --interval-us 50 \
		--out "$WORK/report" >"$WORK/bench.out" 2>"$WORK/bench.err" ||
		fail "bench exit $?"
	check_bench_summary "$WORK/report" 2000
	check_json "$WORK/report/summary.json" 'j["meta"]["interval_ns"] == 50000'
	# plots: a PNG when a renderer exists, else the scripts and a note; never a failure
	[ -s "$WORK/report/plot.gp" ] || fail "no plot script written"
	grep -q "^plots: " "$WORK/bench.out" || fail "no plot line"
	;;
bench_udp)
	"$GPUNIC" bench loopback --executors cpu --link udp --udp-port "$UDP_PORT" --count 1000 \
		--warmup 50 --interval-us 0 --no-plot --out "$WORK/report" >"$WORK/bench.out" \
		2>"$WORK/bench.err" || fail "bench exit $?"
	check_bench_summary "$WORK/report" 1000
	check_json "$WORK/report/summary.json" 'j["meta"]["link"] == "udp"'
	;;
bench_throughput)
	"$GPUNIC" bench loopback --executors cpu --throughput --count 300 --warmup 50 \
		--no-plot --out "$WORK/report" >"$WORK/bench.out" 2>"$WORK/bench.err" ||
		fail "bench exit $?"
	[ -s "$WORK/report/throughput.csv" ] || fail "no throughput.csv"
	head -1 "$WORK/report/throughput.csv" | grep -q "^executor,interval_ns," ||
		fail "throughput.csv header"
	[ "$(wc -l < "$WORK/report/throughput.csv")" -ge 2 ] || fail "no throughput steps"
	check_json "$WORK/report/summary.json" \
		'j["meta"]["extra"]["experiment"] == "loopback-throughput"' \
		'"cpu.throughput_best_msgs_per_s" in j["meta"]["extra"]'
	grep -q "cpu .*zero-loss rate" "$WORK/bench.out" || fail "no throughput verdict"
	;;
pair_shm)
	run_pair shm --executor cpu --link "shm:$CABLE,a,create" -- \
		--link "shm:$CABLE,b" --count 1000 --warmup 20 --interval-us 0
	check_pair shm 1000 20
	;;
pair_shm_paced_send)
	run_pair shmsend --executor cpu --mode send --work add-one --link "shm:$CABLE,a,create" -- \
		--link "shm:$CABLE,b" --mode send --expect-add-one --count 1000 --interval-us 50
	check_pair shmsend 1000
	;;
pair_udp)
	run_pair udp --executor cpu --link "udp:127.0.0.2:$UDP_PORT" -- \
		--link "udp:127.0.0.1:$UDP_PORT" --count 1000 --interval-us 0
	check_pair udp 1000
	;;
pair_shm_stray_clients)
	# Stray connections to the loop's out-of-band port before the sensor (garbage, then one
	# that says nothing) learn nothing of the ring and do not end the loop.
	"$GPUNIC" loop --json --oob-port "$OOB_PORT" --oob-timeout-s 60 --executor cpu \
		--link "shm:$CABLE,a,create" >"$WORK/stray-loop.out" 2>"$WORK/stray-loop.err" &
	lpid=$!
	"$PY" - "$OOB_PORT" >"$WORK/stray.out" 2>&1 <<'PY' || fail "stray clients: $(cat "$WORK/stray.out")"
import socket, sys, time
port = int(sys.argv[1])
def connect():
    for _ in range(400):
        try:
            return socket.create_connection(("127.0.0.1", port))
        except OSError:
            time.sleep(0.05)
    sys.exit("no listener on the loop's port")
def heard(s, wait):
    s.settimeout(wait)
    try:
        return s.recv(4096)
    except (socket.timeout, ConnectionResetError):
        return b""
s = connect()
s.sendall(b"\xa5" * 49)
got = heard(s, 2.0)
assert got == b"", "a garbage client received %d bytes" % len(got)
s.close()
s = connect()
got = heard(s, 0.7)
assert got == b"", "a silent client received %d bytes" % len(got)
s.close()
PY
	"$GPUNIC" sensor --json --oob-port "$OOB_PORT" --oob-timeout-s 60 --link "shm:$CABLE,b" \
		--count 500 --warmup 20 --interval-us 0 \
		>"$WORK/stray-sensor.out" 2>"$WORK/stray-sensor.err"
	src=$?
	[ $src -eq 0 ] || { kill "$lpid" 2>/dev/null; wait "$lpid"; fail "sensor exit $src"; }
	wait "$lpid" || fail "loop after stray clients: exit $?"
	grep -q "dropped a connection" "$WORK/stray-loop.err" || fail "the loop did not say it dropped them"
	check_pair stray 500 20
	;;
pair_shm_rpc)
	# every response checked against the CPU reference, the round trip also by the echoed
	# timestamp; the loop counts every request, warm-up included
	run_pair rpc --executor cpu --rpc --link "shm:$CABLE,a,create" -- \
		--link "shm:$CABLE,b" --rpc surface_d3 --rpc-clock realtime --count 1000 \
		--warmup 20 --interval-us 0
	check_pair rpc 1000 20
	check_json "$WORK/rpc-sensor.out" \
		'j["rpc"]["function"] == "surface_d3"' \
		'j["rpc"]["rpc_checks"]["ok"] == 1000' \
		'sum(j["rpc"]["rpc_checks"].values()) == 1000' \
		'j["rpc"]["rpc_clock"] == "CLOCK_REALTIME"' \
		'j["rpc"]["rpc_ts_latency_ns"]["count"] == 1000' \
		'j["rpc"]["rpc_ts_latency_ns"]["min"] > 0'
	check_json "$WORK/rpc-loop.out" \
		'j["rpc_functions"] == ["echo", "add_one", "surface_d3"]' \
		'j["rpc_drop"] == "none"' \
		'j["rpc"]["ok"] == 1020 and j["rpc"]["dropped"] == 0'
	;;
pair_shm_rpc_faults)
	# bad requests answered with their status and counted by reason on both ends
	run_pair rpcbad --executor cpu --rpc --link "shm:$CABLE,a,create" -- \
		--link "shm:$CABLE,b" --rpc echo --rpc-fault truncated --rpc-fault-every 4 \
		--count 400 --interval-us 0
	check_pair rpcbad 400
	check_json "$WORK/rpcbad-sensor.out" 'j["rpc"]["rpc_faults_sent"] == 100' \
		'j["rpc"]["fault"] == "truncated" and j["rpc"]["fault_every"] == 4'
	check_json "$WORK/rpcbad-loop.out" 'j["rpc"]["truncated"] == 100' 'j["rpc"]["ok"] == 300'
	# and dropped as CUDA-Q drops them: lost to the sensor, counted by the loop. The sensor
	# waits --reply-timeout for the dropped ones: 10 s, so that a loaded machine's stall of the
	# loop never turns an answered request into a lost one
	run_pair rpcdrop --executor cpu --rpc --rpc-drop cudaq --link "shm:$CABLE-d,a,create" -- \
		--link "shm:$CABLE-d,b" --rpc add_one --rpc-fault magic --rpc-fault-every 5 \
		--count 400 --interval-us 50 --reply-timeout 10
	check_json "$WORK/rpcdrop-sensor.out" 'j["run"]["verified"] == 320' \
		'j["run"]["lost"] == 80 and j["run"]["corrupt"] == 0'
	check_json "$WORK/rpcdrop-loop.out" 'j["rpc_drop"] == "unknown,magic"' \
		'j["rpc"]["bad_magic"] == 80 and j["rpc"]["dropped"] == 80' 'j["echoed"] == 320'
	;;
pair_shm_rpc_handler_lib)
	[ -n "$PLUGIN" ] || fail "no handler library given to the test"
	run_pair rpclib --rpc --handler-lib "$PLUGIN" --link "shm:$CABLE,a,create" -- \
		--link "shm:$CABLE,b" --rpc echo --count 300 --interval-us 0
	check_pair rpclib 300
	# the library's functions beside the built-in ones, on the executor it needs
	check_json "$WORK/rpclib-loop.out" 'j["executor"] == "cpu"' \
		'j["rpc_functions"][:3] == ["echo", "add_one", "surface_d3"]' \
		'"triple" in j["rpc_functions"]'
	;;
bench_rpc)
	"$GPUNIC" bench loopback --executors cpu --rpc surface_d3 --count 500 --warmup 20 \
		--interval-us 0 --no-plot --out "$WORK/report" >"$WORK/bench.out" \
		2>"$WORK/bench.err" || fail "bench exit $?"
	check_bench_summary "$WORK/report" 500
	check_json "$WORK/report/summary.json" \
		'[s["label"] for s in j["series"] if s["label"].startswith("cpu-rpc")] == ["cpu-rpc", "cpu-rpc-fn"]' \
		'all(s["loss"]["lost"] == 0 and s["count"] == 500 for s in j["series"] if "rpc" in s["label"])' \
		'j["meta"]["extra"]["rpc_function"] == "surface_d3"' \
		'j["meta"]["extra"]["cpu-rpc.rpc_function"] == "echo"' \
		'j["meta"]["extra"]["cpu-rpc-fn.rpc_function"] == "surface_d3"' \
		'j["meta"]["extra"]["cpu-rpc.rpc_checks.ok"] == 500' \
		'j["meta"]["extra"]["cpu-rpc-fn.rpc_checks.ok"] == 500' \
		'j["meta"]["extra"]["cpu-rpc-fn.forwarder_rpc.ok"] == 520' \
		'j["meta"]["extra"]["cpu-rpc p50 / cpu p50"] > 0' \
		'isinstance(j["meta"]["extra"]["cpu-rpc-fn p50 - cpu-rpc p50"], (int, float))'
	grep -q "cpu-rpc p50 / cpu p50" "$WORK/bench.out" || fail "no rpc ratio printed"
	grep -q "cpu-rpc-fn p50 - cpu-rpc p50 .* ns" "$WORK/bench.out" || fail "no rpc difference"
	;;
rpc_flags)
	expect_usage_error "--handler-lib needs --rpc" loop --handler-lib /x.so
	expect_usage_error "--rpc-drop needs --rpc" loop --rpc-drop cudaq
	expect_usage_error "invalid value 'bogus' for --rpc-drop: must be unknown, magic" \
		loop --rpc --rpc-drop bogus
	expect_usage_error "invalid value ',' for --rpc-drop" loop --rpc --rpc-drop ,
	expect_usage_error "it does no --work" loop --rpc --work add-one
	expect_usage_error "not naive" loop --rpc --executor naive
	expect_usage_error "use --executor cpu" loop --rpc --handler-lib /x.so --executor gpu
	expect_usage_error "invalid value 'decoder' for --rpc: must be echo, add_one or surface_d3" \
		sensor --rpc decoder
	expect_usage_error "invalid value '24' for --size: must be at least 25 for requests to surface_d3" \
		sensor --rpc surface_d3 --size 24
	expect_usage_error "invalid value '20' for --size: must be at least 24" \
		sensor --rpc echo --size 20
	expect_usage_error "--rpc-fault needs --rpc" sensor --rpc-fault unknown
	expect_usage_error "--rpc-clock needs --rpc" sensor --rpc-clock realtime
	expect_usage_error "invalid value 'bogus' for --rpc-fault" sensor --rpc echo --rpc-fault bogus
	expect_usage_error "invalid value 'none' for --rpc-fault" sensor --rpc echo --rpc-fault none
	expect_usage_error "--rpc-fault-every needs --rpc-fault" \
		sensor --rpc echo --rpc-fault-every 3
	expect_usage_error "invalid value '0' for --rpc-fault-every: must be 1..1000000" \
		sensor --rpc echo --rpc-fault magic --rpc-fault-every 0
	expect_usage_error "--expect-add-one is for plain messages" \
		sensor --rpc echo --expect-add-one
	expect_usage_error "invalid value 'nowhere' for --rpc-clock" \
		sensor --rpc echo --rpc-clock nowhere
	expect_usage_error "invalid value 'nosuch' for --rpc" bench loopback --rpc nosuch
	expect_usage_error "does not go with it" bench loopback --rpc echo --work add-one
	expect_usage_error "names none of them" bench loopback --rpc echo --executors naive
	expect_usage_error "invalid value '24' for --size: must be at least 25 with --rpc surface_d3" \
		bench loopback --rpc surface_d3 --size 24
	for c in loop sensor "bench loopback"; do
		# shellcheck disable=SC2086
		"$GPUNIC" $c --help >"$WORK/help.out" 2>&1 || fail "$c --help exit $?"
		grep -q -- "--rpc" "$WORK/help.out" || fail "$c --help lacks --rpc"
	done
	;;
bad_flags)
	expect_usage_error "unknown option '--bogus'" sensor --bogus
	expect_usage_error "unknown option '--bogus'" loop --bogus
	expect_usage_error "unknown option '--bogus'" bench loopback --bogus
	expect_usage_error "invalid value '8' for --size" sensor --size 8
	expect_usage_error "invalid value 'fast' for --mode" loop --mode fast
	expect_usage_error "invalid value 'everywhere' for --oob-bind" loop --oob-bind everywhere
	expect_usage_error "invalid value 'garbage' for --link" loop --link garbage
	expect_usage_error "invalid value 'garbage' for --link" sensor --link garbage
	expect_usage_error "invalid value 'gpu-magic' for --executors" bench loopback \
		--executors gpu-magic
	expect_usage_error "needs a value" sensor --count
	expect_usage_error "unknown experiment" bench nosuch
	expect_usage_error "unknown command" nosuch
	"$GPUNIC" sensor --help >"$WORK/help.out" 2>&1 || fail "sensor --help exit $?"
	grep -q -- "--interval-us" "$WORK/help.out" || fail "sensor --help lacks --interval-us"
	"$GPUNIC" loop --help >"$WORK/help.out" 2>&1 || fail "loop --help exit $?"
	"$GPUNIC" bench loopback --help >"$WORK/help.out" 2>&1 || fail "bench --help exit $?"
	;;
gpu_absent)
	# The GPU executors on a machine without a GPU: a clear error, exit 1, no crash.
	"$GPUNIC" loop --executor gpu --link "shm:$CABLE,a,create" --oob-port "$OOB_PORT" \
		--oob-timeout-s 1 >"$WORK/gpu.out" 2>"$WORK/gpu.err"
	rc=$?
	if ! no_gpu "$WORK/gpu.err"; then
		echo "SKIP: this machine has a GPU (loop --executor gpu exit $rc)"
		exit 77
	fi
	[ $rc -eq 1 ] || fail "loop --executor gpu without a GPU: exit $rc, expected 1"
	"$GPUNIC" loop --executor naive --link "shm:$CABLE,a,create" --oob-port "$OOB_PORT" \
		--oob-timeout-s 1 >"$WORK/naive.out" 2>"$WORK/naive.err"
	rc=$?
	[ $rc -eq 1 ] || fail "loop --executor naive without a GPU: exit $rc, expected 1"
	no_gpu "$WORK/naive.err" || fail "loop --executor naive: no clear message"
	for e in gpu-db gpu-proxy naive; do
		"$GPUNIC" bench loopback --executors "$e" --count 10 --no-plot \
			--out "$WORK/report-$e" >"$WORK/bench.out" 2>"$WORK/bench.err"
		rc=$?
		[ $rc -eq 1 ] || fail "bench --executors $e without a GPU: exit $rc, expected 1"
		no_gpu "$WORK/bench.err" || fail "bench --executors $e: no clear message"
	done
	# the cable the failed loops would have created is gone
	[ ! -e "/dev/shm${CABLE}" ] || fail "shm cable left behind"
	;;
*)
	echo "unknown case $case_name" >&2
	exit 1
	;;
esac
echo "PASS: $case_name"
exit 0
