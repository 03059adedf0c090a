#!/usr/bin/env bash
# The cpu series (or others) of `gpunic bench loopback` from several source trees, in turn, so
# that a host whose speed drifts between minutes (the H200 host's cpu-floor moves by half
# between calls) spreads its drift over all of them: what a change is worth when one run cannot
# tell.
#
#   scripts/cpu-ab.sh [-r ROUNDS] [-n COUNT] [-o OUTDIR] [-e EXECUTORS] [-i US] TREE...
#
# Each TREE is a source tree (e.g. `git archive <commit> | tar x -C DIR`); each is built
# Release, gpunic_cli only, without CUDA unless EXECUTORS (the bench's --executors, default cpu)
# names a GPU one (gpu-bf,cpu: both series in each run). Round r runs every tree in SEND and
# WRITE_WITH_IMM mode, in the given order on odd rounds and reversed on even ones. Prints a line
# per run and series (p50, p99, the run's own floor for it, cpu-floor for cpu and floor for a GPU
# series, and their ratio) and then, per tree, mode and series, the median and mean p50 and the
# median ratio. OUTDIR (default out/cpu-ab) keeps every report. -i sets the bench's
# --interval-us (default 10; 0 = closed loop).
# CMake arguments for libraries the machine lacks: CPU_AB_CMAKE_ARGS (scripts/fetch-debs.sh
# --cmake-args prints them). With -DGPUNIC_HOP_TRACE=ON among them, the trees are diagnostic
# builds and the end adds, per tree and mode, the median over the rounds of each stretch's p50
# (src/internal/gpunic/hoptrace.h): where the trees differ, hop by hop, for each traced series.
set -uo pipefail
rounds=4 count=20000 out=out/cpu-ab executors=cpu interval=10
usage="usage: $0 [-r ROUNDS] [-n COUNT] [-o OUTDIR] [-e EXECUTORS] [-i US] TREE..."
while getopts "r:n:o:e:i:" o; do
	case $o in
	r) rounds=$OPTARG ;;
	n) count=$OPTARG ;;
	o) out=$OPTARG ;;
	e) executors=$OPTARG ;;
	i) interval=$OPTARG ;;
	*) echo "$usage" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
cuda=OFF
[[ ,$executors, == *,gpu* ]] && cuda=ON
mkdir -p "$out" || exit 1
jobs=$(( $(nproc) / $# )); [ "$jobs" -ge 1 ] || jobs=1
names=()
for t in "$@"; do
	n=$(basename "$t")
	names+=("$n")
	# shellcheck disable=SC2086
	( cmake -S "$t" -B "$out/build-$n" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUNIC_CUDA=$cuda \
		-DGPUNIC_WERROR=OFF ${CPU_AB_CMAKE_ARGS:-} >"$out/configure-$n.txt" 2>&1 &&
	  cmake --build "$out/build-$n" -j "$jobs" --target gpunic_cli >"$out/build-$n.txt" 2>&1 ) ||
		echo "cpu-ab: building $t failed (see $out/build-$n.txt)" &
done
wait

# one_run TREE MODE ROUND: a line per series that ran, or a failure said (a GPU series the
# machine cannot run is left out by the bench, and so here)
one_run() {
	local dir=$out/$1-$2-$3
	"$out/build-$1/apps/gpunic/gpunic" bench loopback --executors "$executors" \
		--count "$count" --interval-us "$interval" --mode "$2" --no-plot --out "$dir" >"$dir.txt" 2>&1
	python3 - "$dir/summary.json" "$1" "$2" "$3" "$executors" <<'PY' || echo "$1 $2 r$3 failed (see $dir.txt)"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except OSError:
    sys.exit(1)    # no report: the run's own output says why
s = {x['label']: x['us'] for x in d['series']}
for e in sys.argv[5].split(','):
    if e not in s:
        continue
    floor = 'cpu-floor' if e == 'cpu' else 'floor'
    c, f = s[e], s[floor]
    print('%-10s %-9s r%s %s p50 %.3f p99 %.3f %s %.3f ratio %.2f'
          % (sys.argv[2], sys.argv[3], sys.argv[4], e, c['p50'], c['p99'], floor, f['p50'],
             c['p50'] / f['p50']))
PY
}

for r in $(seq 1 "$rounds"); do
	order=("${names[@]}")
	if [ $((r % 2)) = 0 ]; then
		order=()
		for ((i = ${#names[@]} - 1; i >= 0; i--)); do order+=("${names[i]}"); done
	fi
	for n in "${order[@]}"; do
		for m in send write-imm; do one_run "$n" "$m" "$r"; done
	done
done | tee "$out/runs.txt"

python3 - "$out/runs.txt" <<'PY'
import collections, re, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r'(\S+)\s+(\S+)\s+r\d+ (\S+) p50 (\S+) p99 \S+ \S+ \S+ ratio (\S+)', line)
    if m:
        runs[(m.group(1), m.group(2), m.group(3))].append((float(m.group(4)),
                                                           float(m.group(5))))
print('tree       mode      series     runs  p50 median  p50 mean  ratio median')
for key in sorted(runs):
    v = runs[key]
    p = sorted(x[0] for x in v)
    r = sorted(x[1] for x in v)
    print('%-10s %-9s %-9s %5d %11.3f %9.3f %13.2f' % (key[0], key[1], key[2], len(v),
                                                      p[len(p) // 2], sum(p) / len(p),
                                                      r[len(r) // 2]))
PY

# hop trace builds: each stretch's p50, median over the rounds, per tree and mode
python3 - "$out" "${names[@]}" <<'PY'
import collections, glob, os, re, statistics, sys
out, names = sys.argv[1], sys.argv[2:]
st = collections.defaultdict(list)   # (series, mode, stretch) -> [(tree, p50)...]
order = []
for path in sorted(glob.glob(os.path.join(out, '*.txt'))):
    m = re.match(r'(.+)-(send|write-imm)-(\d+)\.txt$', os.path.basename(path))
    if not m or m.group(1) not in names:
        continue
    series = None
    for line in open(path):
        t = re.match(r'hop trace, (\S+) ', line)
        if t:
            series = t.group(1)
            continue
        if series:
            h = re.match(r'  (\S+ -> \S+|whole path)\s+(-?\d+)\s', line)
            if not h:
                if not line.startswith('  stretch'):
                    series = None
                continue
            key = (series, m.group(2), h.group(1))
            if key not in order:
                order.append(key)
            st[key].append((m.group(1), int(h.group(2))))
if st:
    print('hop trace: each stretch\'s p50 in ns, median over the rounds')
    print('%-8s %-9s %-32s' % ('series', 'mode', 'stretch') +
          ''.join('%12s' % n[:12] for n in names))
    for key in sorted(order, key=lambda k: (k[0], k[1], order.index(k))):
        row = '%-8s %-9s %-32s' % key
        for n in names:
            v = [p for t, p in st[key] if t == n]
            row += '%12s' % (int(statistics.median(v)) if v else '-')
        print(row)
PY
