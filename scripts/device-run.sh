#!/usr/bin/env bash
# Everything the GPU machine is for, in one go and most important first (its time is scarce; each
# phase has its own time limit, and what finished is under $OUT even when a later phase is cut):
#  1. one Release build with CUDA of everything (headers the machine lacks come from .debs,
#     scripts/fetch-debs.sh);
#  2. `gpunic bench pcie` (what one GPU read of host memory costs by size, and whether the
#     CPU can store into GPU memory without gdrdrv), then `gpunic bench loopback` in each
#     message mode (every GPU and CPU series and floor), and again with each of
#     DEVICE_RUN_VARIANTS' option sets;
#  3. the same bench from an earlier tree, for before/after tables (DEVICE_RUN_BASELINE);
#  4. every CTest labelled gpu;
#  5. the throughput search, GPU-initiated `gpunic perf` latency against a CPU server, the
#     --qps cost, `gpunic doctor`;
#  6. compute-sanitizer memcheck on the forwarder's fast path;
#  7. the GPU forwarder's own stage times (GPUNIC_LOOP_PROFILE), of both trees;
#  8. the links side by side (shm, udp, packet, xdp: scripts/links-compare.sh, as root);
#  9. where a round trip's time goes, hop by hop: a second build with GPUNIC_HOP_TRACE
#     (src/internal/gpunic/hoptrace.h) runs the cpu and gpu-bf series in each mode;
# then one table of every series and ratio. DEVICE_RUN_FULL_SUITE=1 runs scripts/gpu-suite.sh
# (Release + Debug builds, memcheck and racecheck on every kernel) in place of 4 and 6.
#
#   DEVICE_RUN_COUNT=N        messages per loopback series (default 100000)
#   DEVICE_RUN_MODES="M ..."  message modes (default "write-imm send")
#   DEVICE_RUN_BENCH_ARGS     extra arguments for every `gpunic bench loopback`
#   DEVICE_RUN_BASELINE=DIR   an earlier source tree (e.g. from `git archive`) benched the same way
#   DEVICE_RUN_OUT=DIR        where results go (default out/device)
#   DEVICE_RUN_ROUNDS=N       with a baseline: N rounds of the cpu series (both modes, 20000
#                             messages), this tree then the baseline's, so that a noisy host
#                             spreads over both (default 0: none)
#   DEVICE_RUN_VARIANTS="TAG:OPTS ..."  bench variants, OPTS with commas for spaces (default:
#                             polls2:--gpu-polls,2 hwone:--hw-thread,one
#                             polls2-hwone:--gpu-polls,2,--hw-thread,one)
#   DEVICE_RUN_SKIP=LIST      phases to leave out: pcie bench variants sass baseline baseline-bench suite
#                             throughput linehops perf qps doctor memcheck profile links hops (linehops:
#                             both the back-to-back and the paced runs; the baseline tree
#                             runs the bench, perf and profile phases that are not left out)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# Results go to out/device (DEVICE_RUN_OUT); when the device runner set $OUT (a folder it
# brings back, which takes few files), everything is also packed there as one tarball.
RESULTS=${OUT:-}
OUT=${DEVICE_RUN_OUT:-out/device}
mkdir -p "$OUT"
COUNT=${DEVICE_RUN_COUNT:-100000}
MODES=${DEVICE_RUN_MODES:-write-imm send}
SKIP=" ${DEVICE_RUN_SKIP:-} "
BUILD=${GPU_SUITE_BUILD:-build-gpu-suite}
JOBS=$(nproc)
rc=0
# gcc 13 there warns where the CI compilers do not: keep its warnings visible, not fatal.
export GPU_SUITE_CMAKE_ARGS="-DGPUNIC_WERROR=OFF ${GPU_SUITE_CMAKE_ARGS:-}"
want() { [[ $SKIP != *" $1 "* ]]; }
# phase NAME LIMIT_S CMD...: run with a time limit, log to $OUT/NAME.txt, note failures
phase() {
	local name=$1 limit=$2
	shift 2
	echo "=== [$name] $* (limit ${limit}s)"
	timeout -k 5 "$limit" "$@" 2>&1 | tee "$OUT/$name.txt"
	local r=${PIPESTATUS[0]}
	[ "$r" -eq 0 ] || { echo "=== [$name] exit $r"; rc=1; }
	return 0
}

{
	echo "=== $(date -u +%FT%TZ) $(uname -r)"
	nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current,clocks.sm,clocks.max.sm --format=csv
	grep -m1 'model name' /proc/cpuinfo
	echo "cpus: $JOBS"
	# which CPUs share a core or a socket decides what the pinned threads pay per line
	lscpu -e=CPU,CORE,SOCKET,NODE,MAXMHZ 2>/dev/null | head -n 20
	# whether the kernel keeps its tick or its scheduler off any CPU: the p99's other half
	echo "cmdline: $(cat /proc/cmdline)"
	echo "nohz_full: $(cat /sys/devices/system/cpu/nohz_full 2>/dev/null || echo '(no file)')"
	echo "isolated: $(cat /sys/devices/system/cpu/isolated 2>/dev/null || echo '(no file)')"
	grep -hE '^CONFIG_(HZ|NO_HZ_FULL|NO_HZ_IDLE)=' "/boot/config-$(uname -r)" 2>/dev/null ||
		echo "kernel config: not readable"
} 2>&1 | tee "$OUT/machine.txt"

mapfile -t DEPS < <(bash scripts/fetch-debs.sh --cmake-args "${GPU_SUITE_DEBS:-.debs}")
if [ -n "${DEVICE_RUN_FULL_SUITE:-}" ]; then
	phase gpu-suite 1200 bash scripts/gpu-suite.sh
fi
echo "=== build ($BUILD, Release, CUDA)"
# shellcheck disable=SC2086
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUNIC_CUDA=ON "${DEPS[@]}" \
	$GPU_SUITE_CMAKE_ARGS >"$OUT/configure.txt" 2>&1 || { tail -n 30 "$OUT/configure.txt"; exit 1; }
# -k 0: a target that fails to build does not keep the others from being measured
cmake --build "$BUILD" -j "$JOBS" -- -k 0 >"$OUT/build.txt" 2>&1 ||
	{ grep -E "error|FAILED" "$OUT/build.txt" | head -n 20; rc=1; }
CLI=$PWD/$BUILD/apps/gpunic/gpunic
grep -E "gpunic: xdp link|prebuilt" "$OUT/configure.txt"

# bench TAG CLI [ARGS...]: one bench run into out/TAG, its summary copied to $OUT/TAG.json
bench() {
	local tag=$1 cli=$2 sampler
	shift 2
	# the GPU's clocks while it runs, read (never set) five times a second: a one-warp kernel
	# that mostly waits on PCIe may not lift the SM clock, and every answer is built at it
	nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv,noheader,nounits -lms 200 \
		>"$OUT/$tag-clocks.csv" 2>/dev/null &
	sampler=$!
	# shellcheck disable=SC2086
	# info: the forwarder says how often it polled while idle ("idle poll every")
	phase "bench-$tag" 240 env GPUNIC_LOG_LEVEL=info "$cli" bench loopback --out "out/$tag" \
		"$@" ${DEVICE_RUN_BENCH_ARGS:-}
	kill "$sampler" 2>/dev/null
	wait "$sampler" 2>/dev/null
	sort -n -t, -k1 "$OUT/$tag-clocks.csv" | awk -F, -v t="$tag" \
		'{ c[NR] = $1 } END { if (NR) printf "  %s: SM clock %d / %d / %d MHz (min / median / max of %d samples)\n", t, c[1], c[int((NR + 1) / 2)], c[NR], NR }' |
		tee -a "$OUT/clocks.txt"
	if [ -d "out/$tag" ]; then
		cp "out/$tag/summary.json" "$OUT/$tag.json" 2>/dev/null
		for p in latency_ccdf latency_hist; do
			cp "out/$tag/$p.png" "$OUT/$tag-$p.png" 2>/dev/null
		done
		tar czf "$OUT/$tag-report.tgz" -C out "$tag"
	fi
}

if want pcie; then
	phase pcie 120 "$CLI" bench pcie --count 20000
fi

if want bench; then
	for mode in $MODES; do
		bench "loopback-$mode" "$CLI" --count "$COUNT" --mode "$mode"
	done
fi

if want variants; then
	for v in ${DEVICE_RUN_VARIANTS:-polls2:--gpu-polls,2 hwone:--hw-thread,one polls2-hwone:--gpu-polls,2,--hw-thread,one}; do
		IFS=, read -r -a vopts <<<"${v#*:}"
		for mode in $MODES; do
			bench "${v%%:*}-$mode" "$CLI" --count "$COUNT" --mode "$mode" --no-plot "${vopts[@]}"
		done
	done
fi

# the forwarder kernel's registers and its loads and stores of host memory, as built
if want sass && command -v cuobjdump >/dev/null; then
	obj=$(find "$BUILD/src/gpu" -name 'loop.cu.o' | head -n 1)
	{
		cuobjdump -res-usage "$obj" 2>&1 | grep -A1 loop_kernel
		cuobjdump -sass "$obj" | awk '/Function : .*loop_kernel/ { on = 1 } /Function : / && !/loop_kernel/ { on = 0 } on' |
			grep -oE '(LDG|STG|LD|ST|ATOM|RED)\.[A-Z0-9._]+' | sort | uniq -c
	} >"$OUT/sass.txt" 2>&1
	cat "$OUT/sass.txt"
fi

if want baseline && [ -n "${DEVICE_RUN_BASELINE:-}" ]; then
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
		cmake --build "$BUILD-baseline" -j "$JOBS" --target gpunic_cli \
			>"$OUT/baseline-build.txt" 2>&1; then
		BASE_CLI=$PWD/$BUILD-baseline/apps/gpunic/gpunic
		want baseline-bench && for mode in $MODES; do
			bench "baseline-$mode" "$BASE_CLI" --count "$COUNT" --mode "$mode"
		done
	else
		echo "baseline build failed:"
		tail -n 20 "$OUT/baseline-configure.txt" "$OUT/baseline-build.txt"
		rc=1
	fi
fi

if [ -n "${BASE_CLI:-}" ] && [ "${DEVICE_RUN_ROUNDS:-0}" -gt 0 ]; then
	for r in $(seq 1 "$DEVICE_RUN_ROUNDS"); do
		for t in new baseline; do
			c=$CLI
			[ "$t" = baseline ] && c=$BASE_CLI
			for mode in $MODES; do
				phase "round$r-$t-$mode" 60 "$c" bench loopback --count 20000 --mode "$mode" \
					--executors cpu --no-plot --out "out/round$r-$t-$mode"
				cp "out/round$r-$t-$mode/summary.json" "$OUT/round$r-$t-$mode.json" 2>/dev/null
			done
		done
	done
fi

if want suite && [ -z "${DEVICE_RUN_FULL_SUITE:-}" ]; then
	phase ctest-gpu 300 ctest --test-dir "$BUILD" -L '^gpu$' --timeout 60 --output-on-failure
fi

# what a hop between two of the bench's cores costs by the lines it moves (tests/hotpath/linehops.c),
# on the three CPUs the bench pins its sensor, engine and executor to (the first one skipped),
# back to back and, as the bench's series are paced, with the round trips 10 us apart
if want linehops && [ -x "$BUILD/tests/hotpath/linehops" ]; then
	read -r -a LH_CPUS < <(python3 -c 'import os; c = sorted(os.sched_getaffinity(0)); print(*(c[1:4] if len(c) >= 4 else []))')
	if [ "${#LH_CPUS[@]}" = 3 ]; then
		phase linehops 60 "$BUILD/tests/hotpath/linehops" 100000 3 "${LH_CPUS[@]}" 110
		phase linehops-paced 60 "$BUILD/tests/hotpath/linehops" 20000 3 "${LH_CPUS[@]}" 110 10
	else
		echo "linehops: left out (fewer than four CPUs to pin three threads to)"
	fi
fi

if want throughput; then
	bench throughput-send "$CLI" --count 20000 --mode send --throughput \
		--throughput-count 20000 --executors gpu-bf,cpu --no-plot
	# the sensor's NIC on a core of its own: what the forwarder sustains when the emulated
	# sensor's own thread is not the limit (an FPGA's NIC is logic of its own too)
	"$CLI" bench loopback --help 2>&1 | grep -q -- --sensor-engine &&
		bench throughput-send-sensor-thread "$CLI" --count 20000 --mode send --throughput \
			--throughput-count 20000 --executors gpu-bf,cpu --no-plot --sensor-engine thread
fi

# perf_lat TAG CLI EXEC: latency initiated by EXEC (gpu or cpu) against a CPU server, over a shm
# cable, two processes; with the executor's stage profile where the CLI has --profile
perf_lat() {
	local tag=$1 cli=$2 exec=$3 t prof=
	"$cli" perf --help 2>&1 | grep -q -- --profile && prof=--profile
	for t in write_lat send_lat; do
		phase "perf-$t-$tag" 60 bash -c "
			'$cli' perf $t -n 5000 -s 32 -p 18700 --timeout 30 --executor cpu \
				--link shm:/gpunic-dr-$t,a,create --ip 10.0.0.1 >'$OUT/perf-$t-$tag-srv.txt' 2>&1 &
			sleep 0.5
			'$cli' perf $t 127.0.0.1 -n 5000 -s 32 -p 18700 --timeout 30 --executor $exec \
				--link shm:/gpunic-dr-$t,b --ip 10.0.0.2 $prof; r=\$?; wait; exit \$r"
	done
}
if want perf; then
	perf_lat gpu "$CLI" gpu
	perf_lat cpu "$CLI" cpu
	[ -n "${BASE_CLI:-}" ] && perf_lat baseline-gpu "$BASE_CLI" gpu
fi

if want qps; then
	bench qps-1 "$CLI" --count 20000 --executors cpu --no-plot --qps 1
	bench qps-1000 "$CLI" --count 20000 --executors cpu --no-plot --qps 1000
fi

if want doctor; then
	phase doctor 60 "$CLI" doctor --executor gpu
fi

if want memcheck && [ -z "${DEVICE_RUN_FULL_SUITE:-}" ]; then
	SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
	for c in loop_send_scatter_add_one loop_write_imm; do
		phase "memcheck-$c" 120 "$SAN" --tool memcheck --error-exitcode 99 --print-limit 20 \
			"$BUILD/tests/gpu/test_gpu_dev" "$c"
	done
	# the latency tests' warp path (perf_lat_dev.h), both sides on the GPU
	for t in send_lat write_lat; do
		phase "memcheck-perf-$t" 120 "$SAN" --tool memcheck --error-exitcode 99 \
			--print-limit 20 "$CLI" perf "$t" --pair --executor gpu -s 32 -n 200 \
			--timeout 60
	done
fi

# profile TAG CLI: the forwarder kernel times its own stages (log lines "forwarder per message")
profile() {
	local tag=$1 cli=$2 mode
	for mode in $MODES; do
		phase "profile-$tag-$mode" 120 env GPUNIC_LOOP_PROFILE=1 GPUNIC_LOG_LEVEL=info \
			"$cli" bench loopback --count 20000 --mode "$mode" --executors gpu-bf,gpu-db \
			--no-plot --out "out/profile-$tag-$mode"
	done
}
if want profile; then
	profile new "$CLI"
	[ -n "${BASE_CLI:-}" ] && profile baseline "$BASE_CLI"
fi

# the path stamped hop by hop: a build of its own, as each stamp costs the path ~30 ns
if want hops; then
	# shellcheck disable=SC2086
	if cmake -S . -B "$BUILD-hops" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUNIC_CUDA=ON \
		-DGPUNIC_HOP_TRACE=ON -DGPUNIC_BUILD_TESTS=OFF -DGPUNIC_BUILD_EXAMPLES=OFF "${DEPS[@]}" \
		$GPU_SUITE_CMAKE_ARGS >"$OUT/hops-configure.txt" 2>&1 &&
		cmake --build "$BUILD-hops" -j "$JOBS" --target gpunic_cli >"$OUT/hops-build.txt" 2>&1; then
		for mode in $MODES; do
			phase "hops-$mode" 120 "$BUILD-hops/apps/gpunic/gpunic" bench loopback \
				--count 20000 --mode "$mode" --executors cpu,gpu-bf --no-plot \
				--out "out/hops-$mode"
		done
	else
		echo "hop trace build failed:"
		tail -n 20 "$OUT/hops-configure.txt" "$OUT/hops-build.txt"
		rc=1
	fi
fi

if want links && [ "$(id -u)" = 0 ]; then
	phase links-compare 300 bash scripts/links-compare.sh "$CLI" 20000 20000
fi

echo "=== summary (us; ratios as each run printed them)"
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
        if "/" in k or "throughput_best" in k or "pollers" in k or "stagger" in k:
            print(f"  {k}: {v}")
EOF
grep -hE "passed|failed|ERROR SUMMARY" "$OUT"/ctest-gpu.txt "$OUT"/memcheck-*.txt 2>/dev/null
grep -HE "^ *32 |profile" "$OUT"/perf-*.txt 2>/dev/null | grep -v -- -srv | sed 's/^.*perf-//' | head -n 40
grep -H "forwarder per message" "$OUT"/profile-*.txt 2>/dev/null | sed 's/^.*profile-//'
grep -HoE "idle poll every [0-9]+ ns \([0-9]+ polls timed, [0-9] in flight, stagger [0-9]+ ns\)" \
	"$OUT"/bench-*.txt 2>/dev/null | sed 's/^.*bench-//'
cat "$OUT/pcie.txt" 2>/dev/null
for f in "$OUT"/hops-*.txt; do
	case $f in *configure.txt|*build.txt) continue ;; esac
	[ -f "$f" ] && grep -E "^hop trace|^  (stretch|whole path|nothing|[a-z]+\.[a-z]+ -> )" "$f" | sed "s|^|$(basename "$f" .txt): |"
done
cat "$OUT/clocks.txt" 2>/dev/null
if [ -n "$RESULTS" ] && [ "$RESULTS" != "$OUT" ]; then
	tar czf "$RESULTS/device-run.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")"
fi
exit $rc
