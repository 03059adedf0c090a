#!/usr/bin/env bash
# Everything the GPU machine is for, in one go (its time is scarce): the GPU data-path suite
# (scripts/gpu-suite.sh: build, CTest label gpu, compute-sanitizer), `gpunic doctor`, and the
# loopback experiment in each message mode with its report, then one table of every series and
# ratio. Results are copied under $OUT (default out/device) as a few files: the logs, each
# report's summary.json and plots, and the whole reports as tarballs.
#
#   DEVICE_RUN_COUNT=N        messages per loopback series (default 100000)
#   DEVICE_RUN_MODES="M ..."  message modes to run the bench in (default "write-imm send")
#   DEVICE_RUN_SKIP_SUITE=1   only build the CLI and run doctor + the benchmark
#   DEVICE_RUN_BENCH_ARGS     extra arguments for `gpunic bench loopback`
#   DEVICE_RUN_THROUGHPUT=1   also run each mode's --throughput search
#   DEVICE_RUN_BASELINE=DIR   another source tree (an earlier version, e.g. from `git archive`)
#                             built and benched with the same command, for before/after tables
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-out/device}
mkdir -p "$OUT"
COUNT=${DEVICE_RUN_COUNT:-100000}
MODES=${DEVICE_RUN_MODES:-write-imm send}
BUILD=${GPU_SUITE_BUILD:-build-gpu-suite}
rc=0
# gcc 13 there warns where the CI compilers do not: keep its warnings visible, not fatal.
export GPU_SUITE_CMAKE_ARGS="-DGPUNIC_WERROR=OFF ${GPU_SUITE_CMAKE_ARGS:-}"

{
	echo "=== $(date -u +%FT%TZ) $(uname -r)"
	nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current,clocks.sm,clocks.max.sm --format=csv
	grep -m1 'model name' /proc/cpuinfo
	echo "cpus: $(nproc)"
} 2>&1 | tee "$OUT/machine.txt"

# headers the machine lacks come from .debs, as in gpu-suite.sh (scripts/fetch-debs.sh)
mapfile -t DEPS < <(bash scripts/fetch-debs.sh --cmake-args "${GPU_SUITE_DEBS:-.debs}")
if [ -z "${DEVICE_RUN_SKIP_SUITE:-}" ]; then
	bash scripts/gpu-suite.sh 2>&1 | tee "$OUT/gpu-suite.txt"
	[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
else
	# shellcheck disable=SC2086
	cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "${DEPS[@]}" $GPU_SUITE_CMAKE_ARGS \
		>/dev/null
fi

echo "=== build the CLI"
cmake --build "$BUILD" -j "$(nproc)" --target gpunic_cli 2>&1 | tail -n 3
CLI=$PWD/$BUILD/apps/gpunic/gpunic

echo "=== gpunic doctor --executor gpu"
"$CLI" doctor --executor gpu 2>&1 | tee "$OUT/doctor.txt"

# bench TAG CLI [ARGS...]: one bench run into out/TAG, its summary copied to $OUT/TAG.json
bench() {
	local tag=$1 cli=$2
	shift 2
	echo "=== [$tag] gpunic bench loopback $*"
	# shellcheck disable=SC2086
	"$cli" bench loopback --out "out/$tag" "$@" ${DEVICE_RUN_BENCH_ARGS:-} 2>&1 |
		tee "$OUT/bench-$tag.txt"
	[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
	if [ -d "out/$tag" ]; then
		cp "out/$tag/summary.json" "$OUT/$tag.json" 2>/dev/null
		for p in latency_ccdf latency_hist; do
			cp "out/$tag/$p.png" "$OUT/$tag-$p.png" 2>/dev/null
		done
		tar czf "$OUT/$tag-report.tgz" -C out "$tag"
	fi
}

for mode in $MODES; do
	bench "loopback-$mode" "$CLI" --count "$COUNT" --mode "$mode"
	if [ -n "${DEVICE_RUN_THROUGHPUT:-}" ]; then
		bench "throughput-$mode" "$CLI" --count "$COUNT" --mode "$mode" --throughput \
			--throughput-count 20000 --no-plot
	fi
done

if [ -n "${DEVICE_RUN_BASELINE:-}" ]; then
	echo "=== baseline tree $DEVICE_RUN_BASELINE"
	zlib=$(ls /usr/lib/x86_64-linux-gnu/libz.so.1 /lib/x86_64-linux-gnu/libz.so.1 2>/dev/null |
	       head -n 1)
	zargs=()
	if ! echo '#include <zlib.h>' | cc -E -x c - >/dev/null 2>&1 && [ -n "$zlib" ]; then
		# the earlier tree's ICRC needs zlib: its header from .debs, the runtime from here
		zargs=(-DZLIB_INCLUDE_DIR="$PWD/${GPU_SUITE_DEBS:-.debs}/root/usr/include"
		       -DZLIB_LIBRARY="$zlib")
	fi
	# shellcheck disable=SC2086
	if cmake -S "$DEVICE_RUN_BASELINE" -B "$BUILD-baseline" -G Ninja \
		-DCMAKE_BUILD_TYPE=Release "${DEPS[@]}" "${zargs[@]}" $GPU_SUITE_CMAKE_ARGS \
		>"$OUT/baseline-configure.txt" 2>&1 &&
		cmake --build "$BUILD-baseline" -j "$(nproc)" --target gpunic_cli \
			>"$OUT/baseline-build.txt" 2>&1; then
		for mode in $MODES; do
			bench "baseline-$mode" "$PWD/$BUILD-baseline/apps/gpunic/gpunic" \
				--count "$COUNT" --mode "$mode"
		done
	else
		echo "baseline build failed:"
		tail -n 20 "$OUT/baseline-configure.txt" "$OUT/baseline-build.txt"
		rc=1
	fi
fi

echo "=== summary (p50 / p99 in us; ratios as each run printed them)"
python3 - "$OUT" <<'EOF'
import glob, json, os, sys

for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    try:
        j = json.load(open(path))
    except Exception as e:
        print(f"{os.path.basename(path)}: unreadable ({e})")
        continue
    print(f"--- {os.path.basename(path)[:-5]}")
    for s in j.get("series", []):
        us, loss = s.get("us", {}), s.get("loss", {})
        print(f"  {s.get('label', '?'):16s} p50 {us.get('p50', 0):9.3f}  p99 {us.get('p99', 0):9.3f}"
              f"  max {us.get('max', 0):10.3f}  n {s.get('count', 0):7d}  lost {loss.get('lost', 0)}"
              f"  corrupt {loss.get('corrupt', 0)}")
    extra = j.get("meta", {}).get("extra", {})
    for k, v in sorted(extra.items()):
        if "/" in k or "throughput_best" in k:
            print(f"  {k}: {v}")
EOF
exit $rc
