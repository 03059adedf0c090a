#!/usr/bin/env bash
# `gpunic bench loopback` and `gpunic decode` as a user meets them: usage errors that say the
# valid range, the help's exit codes, live progress only where asked for, the report's typed
# JSON, late sends and load on screen, .hgrm and time plots, decode from stdin and its tshark
# field names. Small closed-loop or slowly paced runs over a shm cable: no UDP port, nothing
# timed.
#
# usage: bench_cli_test.sh CASE GPUNIC WORKDIR PYTHON SRCDIR
# Exit: 0 pass, 1 fail, 77 skipped.
set -u

case_name=$1
GPUNIC=$2
WORK=$3/$case_name
PY=$4
SRC=$5

rm -rf "$WORK"
mkdir -p "$WORK"

# fail, check_json
# shellcheck source=tests/cli_lib.sh
. "$(dirname "$0")/../cli_lib.sh"

# expect_usage_error PATTERN ARGS...: exit 2 and PATTERN on stderr
expect_usage_error() {
	local pattern=$1
	shift
	"$GPUNIC" "$@" >"$WORK/usage.out" 2>"$WORK/usage.err"
	local rc=$?
	[ $rc -eq 2 ] || fail "gpunic $*: exit $rc, expected 2"
	grep -qF -- "$pattern" "$WORK/usage.err" || fail "gpunic $*: no '$pattern' on stderr"
}

# A small CPU run; extra arguments go to the bench.
bench() {
	"$GPUNIC" bench loopback --executors cpu --count 400 --warmup 20 --out "$WORK/report" \
		"$@" >"$WORK/bench.out" 2>"$WORK/bench.err"
}

case $case_name in
bench_usage)
	expect_usage_error "invalid value '8' for --size: must be 16..4096" bench loopback --size 8
	expect_usage_error "invalid value '0' for --count: must be 1..10000000" \
		bench loopback --count 0
	expect_usage_error "for --timeout: must be 0.001..3600 seconds" \
		bench loopback --timeout 0
	expect_usage_error "for --timeout: must be" bench loopback --timeout 1e3
	expect_usage_error "invalid value '3' for --slots: must be a power of two, 2.." \
		bench loopback --slots 3
	expect_usage_error "invalid value 'x' for --gpu: must be 0..255" bench loopback --gpu x
	expect_usage_error "for --executors: must be a comma list of" \
		bench loopback --executors gpu-magic
	expect_usage_error "invalid value '20000' for --host-noise-ms: must be 0..10000" \
		bench loopback --host-noise-ms 20000
	expect_usage_error "invalid value 'echo,x' for --rpc: must be echo, add_one or surface_d3" \
		bench loopback --rpc echo,x
	"$GPUNIC" bench loopback --help >"$WORK/help.out" 2>&1 || fail "--help exit $?"
	for want in "--gpu N" "--timeout SECONDS" "--timeout-ms N" "-v, --verbose" "--host-noise-ms N" \
		"--rpc NAME" "(<series>-rpc-fn)" \
		"Exit status:" "  0  every series" "  1  a series" "  2  usage error"; do
		grep -qF -- "$want" "$WORK/help.out" || fail "--help lacks '$want'"
	done
	# the help's codes are the ones the command returns
	"$GPUNIC" bench loopback --executors cpu --count 1 --warmup 0 --no-plot \
		--out /proc/gpunic-no >"$WORK/bench.out" 2>"$WORK/bench.err"
	[ $? -eq 1 ] || fail "an unwritable report folder: exit not 1"
	# seconds with decimals and the older milliseconds both run
	bench --interval-us 0 --no-plot --timeout 0.5 || fail "--timeout 0.5: exit $?"
	bench --interval-us 0 --no-plot --timeout-ms 500 || fail "--timeout-ms 500: exit $?"
	# the host's interruptions are watched before a latency run unless told not to
	grep -q "^host interruptions (the pinned CPUs spinning 200 ms" "$WORK/bench.out" ||
		fail "no host interruptions section by default"
	bench --interval-us 0 --no-plot --host-noise-ms 0 || fail "--host-noise-ms 0: exit $?"
	grep -q "^host interruptions" "$WORK/bench.out" && fail "--host-noise-ms 0 still watched"
	;;
bench_progress)
	# stderr is a file: no progress at all
	bench --interval-us 0 --no-plot || fail "bench exit $?"
	grep -q "^gpunic: cpu:" "$WORK/bench.err" && fail "progress on a file without -v"
	# -v, and GPUNIC_PROGRESS=lines, give a line per step
	bench --interval-us 0 --no-plot -v || fail "bench -v exit $?"
	grep -q "^gpunic: cpu-floor: .*400 round trips$" "$WORK/bench.err" ||
		fail "no floor step line with -v"
	grep -q "^gpunic: cpu: .*400 messages$" "$WORK/bench.err" || fail "no series line with -v"
	GPUNIC_PROGRESS=lines bench --interval-us 200 --throughput --throughput-count 300 \
		--no-plot || fail "throughput exit $?"
	grep -q "^gpunic: cpu: throughput step 1, one message every 200.000 us, 300 messages$" \
		"$WORK/bench.err" || fail "no throughput step line"
	grep -q "^gpunic: cpu: throughput step 2," "$WORK/bench.err" || fail "one step only"
	# a bar, redrawn in place, when asked for (a terminal's default)
	GPUNIC_PROGRESS=bar "$GPUNIC" bench loopback --executors cpu --count 4000 --warmup 0 \
		--interval-us 250 --no-plot --out "$WORK/report" >"$WORK/bench.out" \
		2>"$WORK/bench.err" || fail "bar run exit $?"
	grep -q $'\r  cpu        \[[#.]*\] *[0-9]*% [0-9]*/4000 sent' "$WORK/bench.err" ||
		fail "no progress bar"
	;;
bench_report)
	[ -x "$PY" ] || { echo "SKIP: no $PY"; exit 77; }
	bench --interval-us 50 || fail "bench exit $?"
	"$PY" - "$WORK/report/summary.json" <<'EOF' || fail "summary.json checks"
import json, sys
m = json.load(open(sys.argv[1]))['meta']
x = m['extra']
checks = [
    (isinstance(m['version'], str) and m['version'] and m['commit'], 'version, commit'),
    (x['count'] == 400 and type(x['count']) is int, 'count'),
    (x['closed_loop'] is False, 'closed_loop'),
    (x['cpu.verified'] == 400 and x['cpu.all_verified'] is True, 'cpu.verified'),
    (type(x['cpu.late_sends']) is int, 'late_sends'),
    (type(x['loadavg_at_start']) in (int, float), 'loadavg_at_start'),
    (type(x['load_above_cpus']) is bool, 'load_above_cpus'),
    (type(x['cpu p50 / cpu-floor p50']) is float, 'ratio'),
    # each pinned CPU's interruptions, as numbers (a one-CPU box pins nothing)
    (all(type(x[k]) is int for k in x if k.startswith('host_noise.') and k.endswith('.gaps')),
     'host_noise gaps'),
    (all(type(x[k]) is bool for k in x if k.startswith('host_noise.') and
         k.endswith('.nohz_full')), 'host_noise nohz_full'),
    (any(k.endswith('.gaps') for k in x if k.startswith('host_noise.')) or
     x['pinning'].startswith('1 CPU'), 'host_noise recorded'),
    (all(type(v) in (int, float, bool, str) or v is None for v in x.values()), 'flat'),
    # no number hides in a string any more
    (not [k for k, v in x.items() if isinstance(v, str) and v.replace('.', '').isdigit()],
     'numbers as strings'),
]
bad = [name for ok, name in checks if not ok]
print('failed:', bad, file=sys.stderr) if bad else None
sys.exit(1 if bad else 0)
EOF
	late=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["meta"]["extra"]["cpu.late_sends"])' "$WORK/report/summary.json")
	grep -q "^  cpu  .* late sends $late," "$WORK/bench.out" || fail "late sends not on screen"
	grep -q "^late sends" "$WORK/bench.out" || fail "no late sends summary"
	grep -q "load average at start: [0-9.]* [0-9.]* [0-9.]* ([0-9]* CPUs allowed)" \
		"$WORK/bench.out" || fail "no load line"
	above=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["meta"]["extra"]["load_above_cpus"])' "$WORK/report/summary.json")
	if [ "$above" = True ]; then
		grep -q "WARNING: the 1-minute load average .* exceeds the" "$WORK/bench.out" ||
			fail "load above the CPUs without a warning"
	else
		grep -q "WARNING: the 1-minute load" "$WORK/bench.out" && fail "a warning for no cause"
	fi
	for f in cpu.hgrm cpu-floor.hgrm; do
		head -1 "$WORK/report/$f" | grep -q "Value *Percentile *TotalCount *1/(1-Percentile)" ||
			fail "$f: no HdrHistogram header"
		grep -q "^#\[Max     = *[0-9.]*, Total count    = *400\]$" "$WORK/report/$f" ||
			fail "$f: no footer"
	done
	if grep -q "^plots: gnuplot" "$WORK/bench.out"; then
		for f in latency_ccdf.png latency_hist.png cpu.time.png cpu-floor.time.png; do
			[ -s "$WORK/report/$f" ] || fail "no $f"
		done
		grep -q "400 messages every 50 us" "$WORK/report/plot.gp" || fail "title lacks the run"
	fi
	;;
decode_stdin)
	pcap=$SRC/tests/data/rxe_golden.pcap
	"$GPUNIC" decode "$pcap" >"$WORK/file.out" 2>"$WORK/file.err" || fail "decode FILE exit $?"
	"$GPUNIC" decode - <"$pcap" >"$WORK/stdin.out" 2>"$WORK/stdin.err" ||
		fail "decode - exit $?"
	cmp -s "$WORK/file.out" "$WORK/stdin.out" || fail "stdin decodes differently"
	grep -q "3 frames, 3 decoded, 0 rejected" "$WORK/stdin.err" || fail "no summary"
	# a pipe, which cannot seek
	cat "$pcap" | "$GPUNIC" decode - >"$WORK/pipe.out" 2>"$WORK/pipe.err" ||
		fail "decode - from a pipe exit $?"
	cmp -s "$WORK/file.out" "$WORK/pipe.out" || fail "a pipe decodes differently"
	echo "not a capture" | "$GPUNIC" decode - >"$WORK/bad.out" 2>"$WORK/bad.err"
	[ $? -eq 1 ] || fail "garbage on stdin: exit not 1"
	"$GPUNIC" decode --help >"$WORK/help.out" || fail "decode --help exit $?"
	for want in "gpunic decode -" "psn            infiniband.bth.psn" \
		"qpn         infiniband.bth.destqp" "imm         infiniband.immdt" \
		"reth_rkey   infiniband.reth.r_key" "icrc           infiniband.invariant.crc"; do
		grep -qF -- "$want" "$WORK/help.out" || fail "decode --help lacks '$want'"
	done
	;;
*)
	fail "unknown case $case_name"
	;;
esac
exit 0
