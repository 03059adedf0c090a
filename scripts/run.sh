#!/usr/bin/env bash
# The main job: build gpunic (Release, with the CUDA code when nvcc exists) and run the
# FPGA -> GPU -> FPGA loopback experiment end to end with `gpunic bench loopback`: the sensor
# (FPGA/HSB emulator) and the forwarder in one process over the shared-memory cable, the
# CPU<->GPU floor and every executor this machine has, then a table, ratios and a report folder.
#
# Sized to finish in about a minute on a 2-core machine without a GPU (build included).
# Environment: COUNT (messages per series, default 20000), BUILD (build folder, default
# build-release), OUT (report folder, default out/loopback-DATE), JOBS. Arguments after the
# script name go to the bench, e.g. `bash scripts/run.sh --throughput` or `--link udp`.
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-$(nproc)}
BUILD=${BUILD:-build-release}
COUNT=${COUNT:-20000}
OUT=${OUT:-out/loopback-$(date +%Y%m%d-%H%M%S)}

# compilers, libraries and gnuplot for the plots (only when root; else it lists what is missing)
bash scripts/install-deps.sh report

cuda=OFF
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
	cuda=AUTO
fi
generator=()
if command -v ninja >/dev/null 2>&1; then
	generator=(-G Ninja)
fi
echo "=== configure and build ($BUILD, Release, CUDA $cuda)"
# Warnings stay warnings here: a compiler newer than the ones CI runs (Ubuntu's gcc 13, say)
# may warn where they do not, and that must not keep the main job from running.
cmake -S . -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DGPUNIC_CUDA="$cuda" \
	-DGPUNIC_WERROR=OFF
cmake --build "$BUILD" -j "$JOBS" --target gpunic_cli

echo "=== gpunic bench loopback --count $COUNT --out $OUT $*"
"$BUILD/apps/gpunic/gpunic" bench loopback --count "$COUNT" --out "$OUT" "$@"

echo
echo "=== done: the report is in $OUT"
echo "    summary.json (hardware, every series' statistics and loss), <series>.csv (samples),"
echo "    <series>.hgrm (HdrHistogram percentiles), latency_hist.png, latency_ccdf.png and"
echo "    <series>.time.png (when gnuplot or matplotlib is present)"
