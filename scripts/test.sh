#!/usr/bin/env bash
# Build gpunic three ways and run every test: the normal build (with CUDA sources when nvcc is
# present; includes the tshark/scapy oracles and the rxe interop suite), an AddressSanitizer +
# UndefinedBehaviorSanitizer build, and the clang/libFuzzer build whose fuzzers run for a short
# while. Installs the Debian packages it needs when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-$(nproc)}
bash scripts/install-deps.sh test

run_build() {  # run_build DIR "CTEST ARGS" "BUILD TARGETS" [cmake options...]
	local dir=$1 ctest_args=$2 targets=$3; shift 3
	echo "=== build $dir: $*"
	cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
	# shellcheck disable=SC2086
	cmake --build "$dir" -j "$JOBS" ${targets:+--target $targets}
	echo "=== test $dir"
	# shellcheck disable=SC2086
	ctest --test-dir "$dir" --output-on-failure -j "$JOBS" $ctest_args
}

run_build build "" ""
# The interop suite boots QEMU guests: once is enough, the sanitizers add nothing to it.
run_build build-asan "-LE interop" "" -DGPUNIC_SANITIZE=ON -DGPUNIC_CUDA=OFF \
	-DCMAKE_BUILD_TYPE=Debug
run_build build-fuzz "-L fuzz" "fuzz_decode fuzz_recv fuzz_rpc" -DCMAKE_C_COMPILER=clang -DGPUNIC_FUZZ=ON \
	-DGPUNIC_SANITIZE=ON -DGPUNIC_CUDA=OFF
echo "=== all test builds passed"
