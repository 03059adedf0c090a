#!/usr/bin/env bash
# run-under-load.sh: run test suites several times in a row on a loaded machine (issue 16 item 2:
# a suite that fails under load is one users stop trusting). stress-ng (not a CI dependency)
# keeps CPU workers busy for the whole session; each round runs every ctest selection once.
#
#   tests/interop/run-under-load.sh BUILD_DIR [-n ROUNDS] [-w CPU_WORKERS] [-o OUTDIR] \
#       [-- CTEST-SELECTION...]
#
# A selection is ctest's own arguments as one word, e.g. "-L interop" "-L hostile" (the default
# selections) or "-R ep_relay". OUTDIR (default BUILD_DIR/under-load-<time>) gets one ctest log
# per round and selection, the load average and the other processes at each round's start
# (what else ran), and summary.txt: one line per round and selection with passes, failures
# and the failed tests' names.
# Exit status: 0 every round passed, 1 a failure, 77 no stress-ng.
set -uo pipefail
BUILD=$1
shift
ROUNDS=5 WORKERS=2 OUT=""
while [ $# -gt 0 ]; do
	case $1 in
	-n) ROUNDS=$2; shift ;;
	-w) WORKERS=$2; shift ;;
	-o) OUT=$2; shift ;;
	--) shift; break ;;
	*) echo "run-under-load: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
SEL=("$@")
[ ${#SEL[@]} -gt 0 ] || SEL=("-L interop" "-L hostile")
command -v stress-ng >/dev/null || { echo "run-under-load: SKIP (no stress-ng)"; exit 77; }
OUT=${OUT:-$BUILD/under-load-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"

stress-ng --cpu "$WORKERS" --timeout 0 >"$OUT/stress-ng.log" 2>&1 &
spid=$!
trap 'kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null' EXIT
{
	echo "machine: $(nproc) cores, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
	echo "load: stress-ng --cpu $WORKERS for the whole session; started $(date -u +%FT%TZ)"
} >"$OUT/summary.txt"
ok=1
for r in $(seq "$ROUNDS"); do
	for s in "${SEL[@]}"; do
		tag=r$r-$(echo "$s" | tr -c 'A-Za-z0-9_\n' '_')
		{ date -u +%FT%TZ; uptime
		  ps -eo pcpu,comm --sort=-pcpu | head -15; } >"$OUT/$tag.before.txt"
		t0=$(date +%s)
		# shellcheck disable=SC2086
		(cd "$BUILD" && ctest $s --output-on-failure) >"$OUT/$tag.log" 2>&1
		rc=$?
		pass=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed' "$OUT/$tag.log")
		skip=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*Skipped' "$OUT/$tag.log")
		failed=$(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*(Failed|Timeout|Exception)' \
			"$OUT/$tag.log" | sed -E 's/.*Test +#[0-9]+: ([^ ]+).*/\1/' | paste -sd, -)
		[ $rc = 0 ] || ok=0
		printf 'round %d  %-12s rc %d  passed %d  skipped %d  failed %s  %d s  load %s\n' \
			"$r" "$s" "$rc" "$pass" "$skip" "${failed:-none}" $(($(date +%s) - t0)) \
			"$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/summary.txt"
		tail -1 "$OUT/summary.txt"
	done
done
echo "ended $(date -u +%FT%TZ)" >>"$OUT/summary.txt"
[ $ok = 1 ]
