#!/usr/bin/env bash
# `gpunic doctor` run as a user runs it: exit status, text and JSON (checked with python3's json
# module), with and without the GDRCopy test double (tests/mem/gdrapi_double.c).
#
# usage: doctor_test.sh CASE GPUNIC WORKDIR PYTHON DOUBLE
#   DOUBLE: the test double built by tests/mem (a libgdrapi.so.2)
# Exit: 0 pass, 1 fail, 77 skipped (a no-GPU case on a machine that has a GPU).
set -u

case_name=$1
GPUNIC=$2
WORK=$3/$case_name
PY=${4:-/usr/bin/python3}
DOUBLE=$5

rm -rf "$WORK"
mkdir -p "$WORK"
# The library under test is the double, never whatever the system has; no logging noise.
unset GPUNIC_GDRCOPY GPUNIC_GDR_DOUBLE_FAIL GPUNIC_MEM_FAKE_GPU GPUNIC_LOG_LEVEL

FAIL_TAIL=60
# fail, check_json
# shellcheck source=tests/cli_lib.sh
. "$(dirname "$0")/../cli_lib.sh"

skip() {
	echo "SKIP: $*"
	exit 77
}

# run NAME EXPECTED-STATUS ARGS...: run the doctor, keep stdout and stderr, check the status.
run() {
	local name=$1 want=$2 st
	shift 2
	"$GPUNIC" doctor "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
	st=$?
	[ "$st" -eq "$want" ] || fail "gpunic doctor $* exited $st, want $want"
}

# check_json FILE PYTHON-EXPRESSION...: each expression, with `j` the parsed file, must hold.
# grep_out NAME REGEX: the text output must match.
grep_out() {
	grep -Eq -- "$2" "$WORK/$1.out" || fail "output of $1 lacks /$2/"
}

has_gpu() {
	"$GPUNIC" doctor --json >"$WORK/probe.out" 2>/dev/null
	"$PY" -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["gpu"]["present"] else 1)' \
		"$WORK/probe.out"
}

with_double() {
	GPUNIC_GDRAPI_LIB=$DOUBLE GPUNIC_MEM_FAKE_GPU=1 "$@"
}

case $case_name in
cpu_works)
	# The CPU executor works anywhere; without a GPU the doctor says so and why.
	run text 0
	grep_out text '^\* CPU executor'
	grep_out text 'Verdict: the requested setup works'
	# what the machine lacks is reported in the table, not as errors (it printed "err:
	# gpunic_mem_alloc: GPU placement needs a GPU" for each GPU placement)
	! grep -q "err:" "$WORK/text.err" || fail "errors beside a working verdict: $(cat "$WORK/text.err")"
	grep_out text '^  scenario +\| needs +\| available +\| verdict'
	if ! has_gpu; then
		grep_out text 'no GPU'
		grep_out text 'likely cause: (no GPU|gpunic was built without CUDA|driver too old|the CUDA driver library)'
	fi
	run json 0 --executor cpu --json
	check_json "$WORK/json.out" \
		'j["exit_status"] == 0 and j["ok"] is True' \
		'j["executors"]["cpu"]["verdict"] == "works" and j["executors"]["cpu"]["requested"]' \
		'j["gpu"]["present"] or j["gpu"]["reason"] != ""'
	;;
gpu_executor)
	has_gpu && skip "this machine has a GPU: the no-GPU verdict cannot be checked"
	run text 1 --executor gpu
	grep_out text 'Verdict: the requested setup cannot work'
	grep_out text '^  - GPU executor: .*(no GPU|without CUDA|driver too old|libcuda)'
	run json 1 --executor gpu --json
	check_json "$WORK/json.out" \
		'j["exit_status"] == 1 and j["ok"] is False' \
		'j["executors"]["gpu"]["verdict"] == "no" and j["executors"]["gpu"]["requested"]' \
		'j["executors"]["gpu"]["cause"] != ""' \
		'j["handlers"]["AUTO"]["verdict"] == "no"' \
		'all(q["placement"] in ("CPU_GPU", "GPU") for q in j["queues"])'
	;;
json_keys)
	run json 0 --json
	check_json "$WORK/json.out" \
		'set(["exit_status", "ok", "request", "host", "gpu", "gdrcopy", "executors", "handlers", "placements", "queues", "links", "table"]) <= set(j)' \
		'j["request"] == {"executor": "cpu", "handler": "AUTO", "placement": None, "link": None}' \
		'set(["present", "name", "compute_capability", "driver_version", "runtime_version", "can_map_host_memory", "unified_addressing", "reason"]) <= set(j["gpu"])' \
		'set(["lib", "in_use", "reason", "runtime_version", "driver_version", "gdrdrv", "sanity"]) <= set(j["gdrcopy"])' \
		'set(["openable", "errno", "detail"]) <= set(j["gdrcopy"]["gdrdrv"])' \
		'len(j["gdrcopy"]["sanity"]["tests"]) == 12' \
		'any(t["name"] == "invalidation_fork_after_map" for t in j["gdrcopy"]["sanity"]["tests"])' \
		'set(j["handlers"]) == {"GPU_DB", "GPU_BF", "CPU_PROXY", "AUTO"}' \
		'j["handlers"]["AUTO"]["available"] == "picks GPU_BF"' \
		'set(j["placements"]) == {"HOST", "GPU", "GPU_CPU", "CPU_GPU"}' \
		'j["placements"]["HOST"]["verdict"] == "works"' \
		'set(j["links"]) == {"udp", "dgram", "shm", "packet", "xdp", "xdp-skb"}' \
		'j["links"]["shm"]["ok"] and j["links"]["dgram"]["ok"]' \
		'len(j["queues"]) == 8 and all(q["placement"] == "HOST" for q in j["queues"])' \
		'all(set(["scenario", "needs", "available", "verdict", "detail", "cause", "requested"]) <= set(r) for r in rows)' \
		'all(r["verdict"] in ("works", "fallback", "degraded", "waived", "no") for r in rows)' \
		'all(r["cause"] != "" for r in rows if r["verdict"] == "no")'
	# Without a loadable library nothing is "passed": every test is waived, with the reason.
	GPUNIC_GDRAPI_LIB=$WORK/no-such-libgdrapi.so.2 run nolib 0 --json
	check_json "$WORK/nolib.out" \
		'j["gdrcopy"]["sanity"]["passed"] == 0 and j["gdrcopy"]["sanity"]["waived"] == 12' \
		'all(t["status"] == "waived" and t["detail"] for t in j["gdrcopy"]["sanity"]["tests"])' \
		'"library not installed" in j["gdrcopy"]["sanity"]["tests"][0]["detail"]' \
		'[r for r in rows if r["scenario"].startswith("GDRCopy sanity")][0]["verdict"] == "waived"'
	GPUNIC_GDRCOPY=0 run off 0 --json
	check_json "$WORK/off.out" \
		'all(t["status"] == "waived" and "GPUNIC_GDRCOPY=0" in t["detail"] for t in j["gdrcopy"]["sanity"]["tests"])'
	;;
double_sanity)
	# The whole suite against the double, fork test included: every test passes.
	with_double run json 0 --json
	check_json "$WORK/json.out" \
		'j["gdrcopy"]["sanity"]["fake_gpu"] is True' \
		'j["gdrcopy"]["sanity"]["passed"] == 12 and j["gdrcopy"]["sanity"]["failed"] == 0' \
		'[t["status"] for t in j["gdrcopy"]["sanity"]["tests"] if t["name"] == "invalidation_fork_after_map"] == ["passed"]' \
		'j["gdrcopy"]["in_use"] is True and j["gdrcopy"]["runtime_version"] == "2.5"' \
		'j["placements"]["GPU_CPU"]["verdict"] == "works" and "gdrcopy" in j["placements"]["GPU_CPU"]["detail"]' \
		'[r for r in rows if "CQs in GPU memory" in r["scenario"]][0]["verdict"] == "works"'
	with_double run text 0 --placement gpu-cpu
	grep_out text 'passed +invalidation_fork_after_map +the child faulted'
	grep_out text 'sanity suite: 12 passed, 0 failed, 0 waived'
	;;
double_failing)
	# gdr_open fails: reported as a failure with its cause; GPU_CPU falls back, so a setup
	# asking for it still works.
	GPUNIC_GDR_DOUBLE_FAIL=open with_double run open 0 --json --placement gpu-cpu
	check_json "$WORK/open.out" \
		'j["gdrcopy"]["sanity"]["failed"] == 1 and j["gdrcopy"]["sanity"]["passed"] == 0' \
		'j["gdrcopy"]["sanity"]["tests"][0]["status"] == "failed"' \
		'"gdr_open() failed" in j["gdrcopy"]["sanity"]["tests"][0]["detail"]' \
		'"/dev/gdrdrv" in j["gdrcopy"]["sanity"]["tests"][0]["detail"]' \
		'all(t["status"] == "waived" and "basic_open failed" in t["detail"] for t in j["gdrcopy"]["sanity"]["tests"][1:])' \
		'j["gdrcopy"]["in_use"] is False' \
		'j["placements"]["GPU_CPU"]["verdict"] == "fallback" and j["placements"]["GPU_CPU"]["requested"]' \
		'"/dev/gdrdrv" in j["placements"]["GPU_CPU"]["cause"]' \
		'[r for r in rows if r["scenario"].startswith("GDRCopy sanity")][0]["verdict"] == "no"' \
		'[r for r in rows if r["scenario"].startswith("GDRCopy sanity")][0]["cause"] != ""'
	# pin fails: the mem layer falls back, the suite's pin tests fail and say why.
	GPUNIC_GDR_DOUBLE_FAIL=pin with_double run pin 0
	grep_out pin 'failed +basic_pin_unpin +gdr_pin_buffer\(.*likely cause'
	grep_out pin 'GDRCopy sanity suite'
	grep_out pin 'likely cause: .*refused|likely cause: GPU without BAR mapping'
	# the driver too old: refused at basic_open with the cause.
	GPUNIC_GDR_DOUBLE_DRIVER_VERSION=1.9 with_double run old 0 --json
	check_json "$WORK/old.out" \
		'"older than" in j["gdrcopy"]["sanity"]["tests"][0]["detail"]' \
		'"too old" in [r for r in rows if r["scenario"].startswith("GDRCopy sanity")][0]["cause"]'
	;;
udp_busy)
	# Hold 127.0.0.1:4791 as another RoCE endpoint would, then ask for a udp link there.
	"$PY" - "$GPUNIC" "$WORK" <<'EOF' || fail "udp_busy"
import json, socket, subprocess, sys
gpunic, work = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.bind(("127.0.0.1", 4791))
except OSError as e:
    print("127.0.0.1:4791 already held by someone else (%s): still busy" % e)
r = subprocess.run([gpunic, "doctor", "--json", "--link", "udp:127.0.0.1:4791"],
                   capture_output=True, text=True)
open(work + "/busy.out", "w").write(r.stdout)
j = json.loads(r.stdout)
req = j["links"]["requested"]
assert r.returncode == 1, r.returncode
assert not req["ok"] and req["errno"] == 98, req
assert "in use" in req["cause"], req
assert j["links"]["udp"]["ok"] is False
assert any(row["requested"] and row["verdict"] == "no" and "in use" in row["cause"]
           for row in j["table"])
t = subprocess.run([gpunic, "doctor"], capture_output=True, text=True)
open(work + "/busy-text.out", "w").write(t.stdout)
assert t.returncode == 0, "the udp link was not asked for: still exit 0"
assert "udp:127.0.0.1:4791: the port is in use" in t.stdout, t.stdout
EOF
	;;
bad_flags)
	run help 0 --help
	grep_out help '^usage: gpunic doctor'
	run exec 2 --executor tpu
	run handler 2 --handler bell
	run placement 2 --placement disk
	run link 2 --link eth0
	run device 2 --device x
	run unknown 2 --frobnicate
	run missing 2 --executor
	run extra 2 now
	run jsonarg 2 --json=yes
	grep -q "invalid value 'tpu' for --executor: must be gpu or cpu" "$WORK/exec.err" || fail "no message for --executor tpu"
	;;
handlers)
	run proxy 0 --handler cpu-proxy --json
	check_json "$WORK/proxy.out" \
		'j["handlers"]["CPU_PROXY"]["requested"] and j["handlers"]["CPU_PROXY"]["verdict"] in ("works", "degraded")' \
		'j["handlers"]["CPU_PROXY"]["verdict"] == "works" or j["handlers"]["CPU_PROXY"]["cause"] != ""'
	run db 0 --handler gpu-db --placement host
	grep_out db '^\* GPU_DB handler'
	grep_out db '^\* HOST placement'
	if ! has_gpu; then
		run gpuplace 1 --placement gpu
		grep_out gpuplace '^  - GPU placement'
	fi
	;;
*)
	echo "unknown case $case_name" >&2
	exit 2
	;;
esac
echo "PASS: $case_name"
exit 0
