#!/usr/bin/env bash
# Everything the GPU machine is for, in one go (its time is scarce): the GPU data-path suite
# (scripts/gpu-suite.sh: build, CTest label gpu, compute-sanitizer), `gpunic doctor`, and the
# loopback experiment with its report. Results are copied under $OUT (default out/device) as a
# few files: the logs, the report's summary.json and plots, and the whole report as a tarball.
#
#   DEVICE_RUN_COUNT=N      messages per loopback series (default 100000)
#   DEVICE_RUN_SKIP_SUITE=1 only build the CLI and run doctor + the benchmark
#   DEVICE_RUN_BENCH_ARGS   extra arguments for `gpunic bench loopback`
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-out/device}
mkdir -p "$OUT"
COUNT=${DEVICE_RUN_COUNT:-100000}
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

if [ -z "${DEVICE_RUN_SKIP_SUITE:-}" ]; then
	bash scripts/gpu-suite.sh 2>&1 | tee "$OUT/gpu-suite.txt"
	[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
else
	# shellcheck disable=SC2086
	cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release $GPU_SUITE_CMAKE_ARGS >/dev/null
fi

echo "=== build the CLI"
cmake --build "$BUILD" -j "$(nproc)" --target gpunic_cli 2>&1 | tail -n 3
CLI=$BUILD/apps/gpunic/gpunic

echo "=== gpunic doctor --executor gpu"
"$CLI" doctor --executor gpu 2>&1 | tee "$OUT/doctor.txt"

echo "=== gpunic bench loopback"
# shellcheck disable=SC2086
"$CLI" bench loopback --count "$COUNT" --out out/loopback ${DEVICE_RUN_BENCH_ARGS:-} 2>&1 |
	tee "$OUT/bench.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
if [ -d out/loopback ]; then
	cp out/loopback/summary.json "$OUT/" 2>/dev/null
	cp out/loopback/latency_ccdf.png out/loopback/latency_hist.png "$OUT/" 2>/dev/null
	tar czf "$OUT/loopback-report.tgz" -C out loopback
fi
exit $rc
