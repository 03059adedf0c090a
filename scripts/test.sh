#!/usr/bin/env bash
# Build gpunic three ways and run every test: the normal build (with CUDA sources when nvcc is
# present), an AddressSanitizer + UndefinedBehaviorSanitizer build, and the clang/libFuzzer build
# whose fuzz tests run for a short while. Installs the Debian packages it needs when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-$(nproc)}
"$(dirname "$0")/install-deps.sh" test

run_build() {  # run_build DIR [cmake options...]
	local dir=$1; shift
	echo "=== build $dir: $*"
	cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
	cmake --build "$dir" -j "$JOBS"
	ctest --test-dir "$dir" --output-on-failure -j "$JOBS"
}

run_build build
run_build build-asan -DGPUNIC_SANITIZE=ON -DGPUNIC_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug
run_build build-fuzz -DCMAKE_C_COMPILER=clang -DGPUNIC_FUZZ=ON -DGPUNIC_SANITIZE=ON -DGPUNIC_CUDA=OFF
echo "=== all test builds passed"
