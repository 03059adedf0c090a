#!/usr/bin/env bash
# The GPU data-path suite on a machine with a GPU: builds gpunic for sm_90 (Release, plus a
# Debug build with line info for compute-sanitizer; each builds only the executables of the
# tests labelled gpu), runs every CTest labelled gpu (tests/gpu's GPU-initiated traffic against a
# CPU softnic peer, and the dev and mem GPU tests), then runs the GPU test binaries under
# compute-sanitizer: memcheck on every kernel (cases chosen to launch each of them), racecheck on
# the kernels that use shared memory. Prints a summary table (phase, case, result, seconds) and
# exits non-zero on any failure or time-out.
#
# Environment:
#   JOBS=N                   build parallelism (default: nproc)
#   GPU_SUITE_BUILD=DIR      Release build directory (default build-gpu-suite; Debug: DIR-debug)
#   GPU_SUITE_ARCH=LIST      CUDA architectures (default 90: sm_90 SASS + compute_90 PTX)
#   GPU_SUITE_SAN_TIMEOUT=S  time limit of one sanitizer run (default 150)
#   GPU_SUITE_NO_SANITIZER=1 skip the compute-sanitizer phase
#   GPU_SUITE_DEBS=DIR       .deb files to unpack when build headers are missing (default .debs,
#                            made by scripts/fetch-debs.sh: libdeflate-dev + libdeflate0 for
#                            libdeflate.h and libdeflate.a, libibverbs-dev for mlx5dv.h,
#                            zlib1g-dev)
#   GPU_SUITE_CMAKE_ARGS     extra arguments for both configure steps
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD

JOBS=${JOBS:-$(nproc)}
REL=${GPU_SUITE_BUILD:-build-gpu-suite}
DBG=$REL-debug
ARCH=${GPU_SUITE_ARCH:-90}
SAN_TIMEOUT=${GPU_SUITE_SAN_TIMEOUT:-150}
ROWS=$(mktemp)
LOGS=$(mktemp -d)
T_START=$(date +%s.%N)
trap 'rm -f "$ROWS"' EXIT

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# row PHASE CASE RESULT SECONDS
row() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$ROWS"; }

summary() {
	local fails
	echo
	echo "=== summary"
	awk -F'\t' 'BEGIN { printf "%-10s %-64s %-8s %8s\n", "phase", "case", "result", "seconds" }
		{ printf "%-10s %-64s %-8s %8s\n", $1, $2, $3, $4 }' "$ROWS"
	fails=$(awk -F'\t' '$3 == "FAIL" || $3 == "TIMEOUT"' "$ROWS" | wc -l)
	printf '%d passed, %d failed, %d skipped (%.0f s in all)\n' \
		"$(awk -F'\t' '$3 == "PASS"' "$ROWS" | wc -l)" "$fails" \
		"$(awk -F'\t' '$3 == "SKIP"' "$ROWS" | wc -l)" "$(since "$T_START")"
	echo "logs of the sanitizer runs: $LOGS"
	[ "$fails" -eq 0 ]
}

echo "=== machine"
nvidia-smi -L || echo "nvidia-smi -L failed"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$NVCC" --version || echo "nvcc not found"
SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$SANITIZER" ] && "$SANITIZER" --version | head -n 2
echo "cmake $(cmake --version | head -n 1 | awk '{ print $3 }'), ninja $(ninja --version)," \
	"$(nproc) cores, build jobs $JOBS"

# ------------------------------------------------------------------ headers the build needs
# Headers the system lacks (mlx5dv.h, libdeflate.h, zlib.h) come from unpacked .debs; fetch-debs.sh
# prints the CMake arguments that point there (libdeflate linked static: no runtime here).
debs=${GPU_SUITE_DEBS:-.debs}
mapfile -t EXTRA < <(bash scripts/fetch-debs.sh --cmake-args "$debs")
[ ${#EXTRA[@]} -gt 0 ] && printf 'dependencies from %s: %s\n' "$debs" "${EXTRA[*]}"
# shellcheck disable=SC2206
EXTRA+=(${GPU_SUITE_CMAKE_ARGS:-})

# ------------------------------------------------------------------ builds
# The tests labelled gpu as the configure step wrote them (CTestTestfile.cmake), before anything
# is built: "EXE ARG..." per line. Only their executables are built: the rest is CI's.
gpu_tests() { # gpu_tests DIR
	find "$1" -name CTestTestfile.cmake -print0 | xargs -0 python3 -c '
import re, shlex, sys
for path in sys.argv[1:]:
    text = open(path).read()
    labels = dict(re.findall(r"set_tests_properties\(\[=\[(.+?)\]=\] PROPERTIES .*?LABELS \"([^\"]*)\"", text))
    for name, cmd in re.findall(r"add_test\(\[=\[(.+?)\]=\] (.*)\)\n", text):
        if "gpu" in labels.get(name, "").split(";"):
            print(" ".join(shlex.split(cmd)))'
}

gpu_targets() { # gpu_targets DIR
	gpu_tests "$1" | awk '{ n = split($1, p, "/"); print p[n] }' | sort -u | tr '\n' ' '
}

build() { # build NAME DIR CMAKE-ARGS...
	local name=$1 dir=$2 t0 targets
	shift 2
	t0=$(now)
	echo "=== build $name ($dir)"
	if ! cmake -S . -B "$dir" -G Ninja -DGPUNIC_CUDA=ON -DGPUNIC_CUDA_ARCHITECTURES="$ARCH" \
		"${EXTRA[@]}" "$@" >"$LOGS/configure-$name.log" 2>&1; then
		tail -n 40 "$LOGS/configure-$name.log"
		row build "$name" FAIL "$(since "$t0")"
		return 1
	fi
	targets=$(gpu_targets "$dir")
	# Another CMake may write CTestTestfile.cmake differently: then build everything.
	echo "targets: ${targets:-all}"
	# shellcheck disable=SC2086
	if ! cmake --build "$dir" -j "$JOBS" ${targets:+--target $targets} \
		>"$LOGS/build-$name.log" 2>&1; then
		tail -n 40 "$LOGS/build-$name.log"
		row build "$name" FAIL "$(since "$t0")"
		return 1
	fi
	row build "$name" PASS "$(since "$t0")"
}

if ! build release "$REL" -DCMAKE_BUILD_TYPE=Release; then
	summary
	exit 1
fi

# ------------------------------------------------------------------ ctest -L gpu
echo "=== ctest -L '^gpu\$' (Release)"
junit=$ROOT/$REL/gpu-junit.xml
rm -f "$junit"
ctest --test-dir "$REL" -L '^gpu$' --output-on-failure --output-junit "$junit"
if [ -s "$junit" ]; then
	python3 - "$junit" >>"$ROWS" <<'EOF'
import sys
import xml.etree.ElementTree as ET

for tc in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    status = tc.get("status", "run")
    if tc.find("failure") is not None or tc.find("error") is not None or status == "fail":
        result = "FAIL"
    elif tc.find("skipped") is not None or status in ("notrun", "disabled"):
        result = "SKIP"
    else:
        result = "PASS"
    print("ctest\t%s\t%s\t%.1f" % (tc.get("name"), result, float(tc.get("time", "0"))))
EOF
else
	row ctest "(no JUnit report)" FAIL 0
fi

# ------------------------------------------------------------------ compute-sanitizer
san_run() { # san_run TOOL EXE CASE
	local tool=$1 exe=$2 name=$3 log t0 rc result
	log=$LOGS/$tool-$(basename "$exe")-$name.log
	t0=$(now)
	timeout -k 10 "$SAN_TIMEOUT" "$SANITIZER" --tool "$tool" --error-exitcode 99 \
		--print-limit 20 "$exe" "$name" >"$log" 2>&1
	rc=$?
	case $rc in
	0) result=PASS ;;
	77) result=SKIP ;;
	124 | 137) result=TIMEOUT ;;
	*) result=FAIL ;;
	esac
	if [ "$result" = FAIL ] && grep -q -e "Device not supported" \
		-e "Unable to find injection library" "$log"; then
		result=SKIP
		echo "compute-sanitizer cannot run on this machine: $(grep -m 1 -e "Device not" \
			-e "injection" "$log")"
	fi
	row "$tool" "$(basename "$exe") $name" "$result" "$(since "$t0")"
	if [ "$result" = FAIL ] || [ "$result" = TIMEOUT ]; then
		echo "--- $tool $(basename "$exe") $name: $result (exit $rc), end of $log:"
		tail -n 40 "$log"
	fi
}

if [ "${GPU_SUITE_NO_SANITIZER:-0}" = 1 ]; then
	echo "=== compute-sanitizer phase skipped (GPU_SUITE_NO_SANITIZER=1)"
elif [ ! -x "$SANITIZER" ]; then
	echo "=== compute-sanitizer not found: sanitizer phase not run"
	row sanitizer "compute-sanitizer not installed" SKIP 0
elif build debug "$DBG" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CUDA_FLAGS=-lineinfo; then
	# Cases of tests/gpu that launch every kernel of gt_kernels.cu (and the forwarder of
	# src/gpu/loop.cu), both handler modes; every case of the dev and mem kernel tests.
	gt_memcheck="rc_write rc_read recv_rc_scatter mt_proxy_128 warp_partial_inline_2_blocks"
	gt_memcheck+=" loop_send_scatter_add_one"
	# Kernels with shared memory: gt_k_warp (tests/gpu) and k_warp (tests/dev).
	gt_racecheck="warp_full_4 warp_partial_inline_2_blocks"
	dev_racecheck="gpu_warp_scope"
	echo "=== compute-sanitizer memcheck (Debug, -lineinfo, ${SAN_TIMEOUT}s limit each)"
	for c in $gt_memcheck; do
		san_run memcheck "$DBG/tests/gpu/test_gpu_dev" "$c"
	done
	# Every case of the other gpu-labelled binaries that launch kernels.
	gpu_tests "$DBG" | grep -E '/(test_dev_gpu|test_mem_kernel|test_rpc_gpu) ' >"$LOGS/memcheck-others.txt"
	while read -r exe c; do
		san_run memcheck "$exe" "$c" </dev/null
	done <"$LOGS/memcheck-others.txt"
	echo "=== compute-sanitizer racecheck"
	for c in $gt_racecheck; do
		san_run racecheck "$DBG/tests/gpu/test_gpu_dev" "$c"
	done
	for c in $dev_racecheck; do
		san_run racecheck "$DBG/tests/dev/test_dev_gpu" "$c"
	done
fi

summary
