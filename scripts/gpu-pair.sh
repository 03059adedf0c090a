#!/usr/bin/env bash
# GPU-to-GPU `gpunic perf`: every test with both sides GPU-initiated, each side its own softnic
# over a shm cable, in the placements a machine allows, next to references, and the machine's
# RDMA devices and GPU topology. Prints an inventory and one table; JSON per run under $OUT.
#
# Placements (named SERVER-CLIENT-1p|2p: one process or two):
#   cpu-cpu-1p     both sides on the CPU executor (--pair): the softnic's own cost
#   cpu-gpu0-2p    the GPU client against a CPU server (as scripts/perf-compare.sh)
#   gpuA-gpuB-1p   both GPU-initiated in one process (--pair): kernels run side by side
#   gpuA-gpuB-2p   both GPU-initiated, two processes: on one GPU their kernels take turns
#                  (a time slice of ~2 ms without MPS), on two GPUs they do not
# With two GPUs or more, A=0 B=1 rows join the A=B=0 ones; without a GPU only cpu-cpu-1p runs.
#
# Usage: scripts/gpu-pair.sh [GPUNIC]
#   ITERS_LAT (default 5000), ITERS_SLICED (lat tests of two processes on one GPU, default 200),
#   ITERS_BW (default 5000), LAT_SIZE (32), BW_SIZE (65536), OUT (out/gpu-pair)
set -uo pipefail
GPUNIC=${1:-build/apps/gpunic/gpunic}
OUT=${OUT:-out/gpu-pair}
ITERS_LAT=${ITERS_LAT:-5000}
ITERS_SLICED=${ITERS_SLICED:-200}
ITERS_BW=${ITERS_BW:-5000}
LAT_SIZE=${LAT_SIZE:-32}
BW_SIZE=${BW_SIZE:-65536}
TESTS=${TESTS:-send_lat write_lat read_lat send_bw write_bw read_bw put_bw}
RUN_LIMIT=${RUN_LIMIT:-120}
mkdir -p "$OUT"
rc=0

echo "=== inventory"
nvidia-smi -L 2>&1
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version --format=csv 2>&1
echo "--- nvidia-smi topo -m"
nvidia-smi topo -m 2>&1
echo "--- /sys/class/infiniband"
if [ -d /sys/class/infiniband ] && [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; then
	for d in /sys/class/infiniband/*; do
		echo "$(basename "$d"): node_type $(cat "$d/node_type" 2>/dev/null)," \
			"fw $(cat "$d/fw_ver" 2>/dev/null), board $(cat "$d/board_id" 2>/dev/null)"
	done
else
	echo "(absent or empty)"
fi
echo "--- ibv_devices"
if command -v ibv_devices >/dev/null; then ibv_devices 2>&1; else echo "(ibv_devices not installed)"; fi
echo "--- PCI functions of vendor 0x15b3 (Mellanox/NVIDIA networking)"
found=0
for f in /sys/bus/pci/devices/*; do
	[ "$(cat "$f/vendor" 2>/dev/null)" = 0x15b3 ] || continue
	found=1
	echo "$(basename "$f"): device $(cat "$f/device") class $(cat "$f/class")" \
		"driver $(basename "$(readlink "$f/driver" 2>/dev/null)" 2>/dev/null)"
done
[ "$found" = 1 ] || echo "(none among $(ls /sys/bus/pci/devices | wc -l) PCI functions)"
echo "--- every PCI function (vendor:device class)"
for f in /sys/bus/pci/devices/*; do
	echo "$(basename "$f") $(cat "$f/vendor"):$(cat "$f/device") class $(cat "$f/class")"
done
echo "--- network interfaces"
ls /sys/class/net 2>&1 | tr '\n' ' '
echo

[ -x "$GPUNIC" ] || { echo "no gpunic binary at $GPUNIC"; exit 1; }
port=19000
iters_of() { case $1 in *_lat) echo "$ITERS_LAT" ;; *) echo "$ITERS_BW" ;; esac; }
size_of() { case $1 in *_lat) echo "$LAT_SIZE" ;; *) echo "$BW_SIZE" ;; esac; }

# one_process TAG TEST SERVER_EXEC SERVER_GPU CLIENT_EXEC CLIENT_GPU
one_process() {
	local tag=$1 t=$2 n s
	n=$(iters_of "$t"); s=$(size_of "$t"); port=$((port + 1))
	timeout "$RUN_LIMIT" "$GPUNIC" perf "$t" --pair -n "$n" -s "$s" -p "$port" --timeout 30 \
		--peer-executor "$3" --peer-gpu "$4" --executor "$5" --gpu "$6" --json \
		>"$OUT/$tag.$t.json" 2>"$OUT/$tag.$t.err" || rc=1
}

# two_processes TAG TEST SERVER_EXEC SERVER_GPU CLIENT_EXEC CLIENT_GPU [ITERS]
two_processes() {
	local tag=$1 t=$2 n s name srv
	n=${7:-$(iters_of "$t")}; s=$(size_of "$t"); port=$((port + 1))
	name=/gpunic-gpu-pair-$$-$port
	timeout "$RUN_LIMIT" "$GPUNIC" perf "$t" -n "$n" -s "$s" -p "$port" --timeout 30 \
		--executor "$3" --gpu "$4" --link "shm:$name,a,create" --ip 10.0.0.1 --json \
		>"$OUT/$tag.$t.server.json" 2>"$OUT/$tag.$t.server.err" &
	srv=$!
	timeout "$RUN_LIMIT" "$GPUNIC" perf "$t" 127.0.0.1 -n "$n" -s "$s" -p "$port" --timeout 30 \
		--executor "$5" --gpu "$6" --link "shm:$name,b" --ip 10.0.0.2 --json \
		>"$OUT/$tag.$t.json" 2>"$OUT/$tag.$t.err" || rc=1
	wait "$srv" || rc=1
}

for t in $TESTS; do
	echo "=== $t"
	one_process cpu-cpu-1p "$t" cpu 0 cpu 0
	[ "$NGPU" -ge 1 ] || continue
	two_processes cpu-gpu0-2p "$t" cpu 0 gpu 0
	one_process gpu0-gpu0-1p "$t" gpu 0 gpu 0
	case $t in
	*_lat) two_processes gpu0-gpu0-2p "$t" gpu 0 gpu 0 "$ITERS_SLICED" ;;
	*) two_processes gpu0-gpu0-2p "$t" gpu 0 gpu 0 ;;
	esac
	if [ "$NGPU" -ge 2 ]; then
		one_process gpu0-gpu1-1p "$t" gpu 0 gpu 1
		two_processes gpu0-gpu1-2p "$t" gpu 0 gpu 1
	fi
done

echo "=== results (SERVER-CLIENT; lat: typical and p99 µs as the client measures; bw: client MB/s)"
python3 - "$OUT" "$TESTS" <<'EOF' || rc=1
import glob, json, os, sys

out, tests = sys.argv[1], sys.argv[2].split()
def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

tags = sorted({os.path.basename(p).split(".")[0] for p in glob.glob(out + "/*.json")},
              key=lambda t: ("gpu1" in t, t.endswith("2p"), not t.startswith("cpu-cpu"), t))
print(f"{'test':<10} {'placement':<16} {'iters':>6} {'typical':>10} {'p99':>10} "
      f"{'MB/s':>9} {'Mmsg/s':>8} {'verified':>9} {'ok':>4}")
bad = 0
for t in tests:
    for tag in tags:
        d = load(f"{out}/{tag}.{t}.json")
        if d is None:
            if os.path.exists(f"{out}/{tag}.{t}.err"):
                err = open(f"{out}/{tag}.{t}.err").read().strip().splitlines()
                print(f"{t:<10} {tag:<16} FAILED: {err[-1] if err else 'no output'}")
                bad += 1
            continue
        if d.get("pair"):
            cli, srv = d["client"], d["server"]
        else:
            cli, srv = d, load(f"{out}/{tag}.{t}.server.json") or {}
        ok = cli.get("ok") and srv.get("ok", False)
        ver = sum(x.get("verification", {}).get("messages", 0) for x in (cli, srv))
        errs = sum(x.get("verification", {}).get("errors", 0) for x in (cli, srv))
        r = (cli.get("results") or [{}])[0]
        if "t_typical_usec" in r:
            nums = f"{r['t_typical_usec']:>10.2f} {r['p99_usec']:>10.2f} {'':>9} {'':>8}"
        elif "bw_avg_mb_s" in r:
            nums = f"{'':>10} {'':>10} {r['bw_avg_mb_s']:>9.1f} {r['msg_rate_mpps']:>8.4f}"
        else:
            nums = f"{'-':>10} {'-':>10} {'-':>9} {'-':>8}"
        vtxt = f"{ver}" + (f"/{errs}bad" if errs else "")
        print(f"{t:<10} {tag:<16} {r.get('iterations', 0):>6} {nums} {vtxt:>9} "
              f"{'yes' if ok and not errs else 'NO':>4}")
        bad += 0 if ok and not errs else 1
sys.exit(1 if bad else 0)
EOF
exit $rc
