#!/usr/bin/env bash
# run-rxe-pair.sh: two Linux rxe guests wired back to back, a sanity suite between them
# (pair-steps.txt: ibv_uc/rc_pingpong across the 1024 path MTU, ib_write_bw UC and RC, ib_read_bw,
# ib_send_lat), pcaps of the RoCE wire, every ICRC checked, one pass/fail row per tool.
#
#   tests/interop/run-rxe-pair.sh [-o OUTDIR] [--update-golden]
#
# OUTDIR (default $GPUNIC_INTEROP_CACHE/runs/rxe-pair-<time>) receives: a.pcap b.pcap (wire
# captures), a|b.console.log (guest consoles), a|b.results (result lines), tests.sh (the script
# the guests ran), report.txt/report.json, versions.txt, timing.txt.
# --update-golden: also cut tests/interop/golden/*.pcap from a.pcap (see golden/README.md).
# Environment: GPUNIC_INTEROP_CACHE (image cache, default <repo>/build-interop),
# GPUNIC_INTEROP_TIMEOUT (seconds each guest may live, default 420), GPUNIC_INTEROP_PORT_BASE
# (first of 100 host ports on 127.0.0.1, default: a free block in 40000-59999),
# GPUNIC_INTEROP_STEPS (another steps file, same format as pair-steps.txt).
# Exit status: 0 all rows pass, 1 a failure, 77 skipped (no packages/QEMU/TCG here).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
export PYTHONDONTWRITEBYTECODE=1

OUT="" golden=0
while [ $# -gt 0 ]; do
	case $1 in
	-o) OUT=$2; shift ;;
	--update-golden) golden=1 ;;
	-h | --help) sed -n '2,18p' "$0"; exit 0 ;;
	*) echo "run-rxe-pair: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
OUT=${OUT:-$GN_CACHE/runs/rxe-pair-$(date +%Y%m%d-%H%M%S)}
# TCG guests crawl when the box is busy: alone the pair takes about 30 s, beside a parallel
# ctest it ran out of 180 s; 420 s stays well inside the CTest limit (600 s)
TMO=${GPUNIC_INTEROP_TIMEOUT:-420}
STEPS=${GPUNIC_INTEROP_STEPS:-$here/pair-steps.txt}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# shellcheck disable=SC2317
cleanup() { gn_guests_stop; }
trap cleanup EXIT
trap 'gn_log "interrupted"; cleanup; exit 130' INT TERM

t0=$(date +%s.%N)
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

guest=$("$here/build-guest.sh" -q)
rc=$?
[ $rc = 77 ] && { echo "run-rxe-pair: SKIP (guest image cannot be built here)"; exit 77; }
[ $rc != 0 ] && { echo "run-rxe-pair: FAIL: build-guest.sh exited $rc"; exit 1; }
t_image=$(elapsed)

if ! $GN_PY -c 'import scapy.contrib.roce' 2>/dev/null; then
	if [ "$(id -u)" = 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			python3-scapy >/dev/null 2>&1
	fi
	$GN_PY -c 'import scapy.contrib.roce' 2>/dev/null ||
		{ echo "run-rxe-pair: SKIP (python3-scapy unavailable)"; exit 77; }
fi
qemu-system-x86_64 -accel help 2>/dev/null | grep -qx tcg ||
	{ echo "run-rxe-pair: SKIP (qemu-system-x86_64 without TCG)"; exit 77; }
gn_pick_ports || exit 1

# The guests' test script, generated from pair-steps.txt.
{
	echo '. /lib/gn.sh'
	echo 'fails=0'
	grep -vE '^[[:space:]]*(#|$)' "$STEPS" | while IFS='|' read -r name tmo _ _ _ cmd; do
		read -r name <<<"$name"
		read -r tmo <<<"$tmo"
		echo "gn_pair_step $name $tmo $cmd || fails=\$((fails + 1))"
	done
	echo 'exit $fails'
} >"$OUT/tests.sh"
gn_mk_overlay "$OUT/overlay.cpio" "$OUT/tests.sh"
gn_initrd "$OUT/initrd" "$guest" "$OUT/overlay.cpio"

{
	echo "# guest image $(basename "$guest")"
	cat "$guest/versions.txt"
	echo "# host"
	echo "qemu-system-x86 $(dpkg-query -W -f='${Version}' qemu-system-x86 2>/dev/null)"
	echo "python3 $($GN_PY -c 'import platform; print(platform.python_version())')"
	echo "python3-scapy $(dpkg-query -W -f='${Version}' python3-scapy 2>/dev/null)"
	echo "host-kernel $(uname -r)"
} >"$OUT/versions.txt"

A_MAC=52:54:00:00:00:01 B_MAC=52:54:00:00:00:02
t_boot=$(elapsed)
for attempt in 1 2 3; do
	gn_log "guests booting (ports $GN_BASE+, output $OUT)"
	# A serves; B reaches A's tool and sync ports (18515, 18516) at 10.0.2.100 through the host.
	gn_guest_start name=a idx=0 out="$OUT" guest="$guest" initrd="$OUT/initrd" tmo="$TMO" \
		mac=$A_MAC ip=10.0.0.1/24 peer=10.0.0.2 peermac=$B_MAC wire_peer="$(gn_wire_port 1)" \
		guestfwd="18515:$(gn_hostfwd_port 1 0) 18516:$(gn_hostfwd_port 1 1)" append="gn_role=server"
	gn_guest_start name=b idx=1 out="$OUT" guest="$guest" initrd="$OUT/initrd" tmo="$TMO" \
		mac=$B_MAC ip=10.0.0.2/24 peer=10.0.0.1 peermac=$A_MAC wire_peer="$(gn_wire_port 0)" \
		guestfwd="18515:$(gn_hostfwd_port 0 0) 18516:$(gn_hostfwd_port 0 1)" append="gn_role=client"
	# A kernel that prints nothing for 90 s means TCG does not work here (it prints in 2-20 s).
	gn_guests_await_output 90 "$OUT/a.console.log" "$OUT/b.console.log" && break
	gn_guests_stop
	if grep -qiE 'in use|forwarding rule' "$OUT"/[ab].qemu.log; then
		if [ -n "${GPUNIC_INTEROP_PORT_BASE:-}" ] || [ $attempt = 3 ]; then
			echo "run-rxe-pair: FAIL: ports $GN_BASE+ are taken"
			cat "$OUT"/[ab].qemu.log
			exit 1
		fi
		gn_log "ports taken, retrying: $(cat "$OUT"/[ab].qemu.log | head -n 1)"
		gn_pick_ports || exit 1
		continue
	fi
	echo "run-rxe-pair: SKIP (the guests printed nothing: QEMU/TCG unusable here)"
	tail -n 5 "$OUT"/[ab].qemu.log 2>/dev/null
	exit 77
done
echo "ports base=$GN_BASE (127.0.0.1 only)" >>"$OUT/versions.txt"
gn_guests_wait
t_guests=$(awk -v a="$t_boot" -v b="$(elapsed)" 'BEGIN { printf "%.1f", b - a }')
gn_log "guests done (exit ${GN_RCS[*]}) after ${t_guests}s"

t_report0=$(elapsed)
golden_args=()
[ $golden = 1 ] && golden_args=(--golden "$here/golden")
$GN_PY "$here/pair_report.py" --steps "$STEPS" --json "$OUT/report.json" \
	--guest "a:$OUT/a.results:$OUT/a.pcap" --guest "b:$OUT/b.results:$OUT/b.pcap" \
	"${golden_args[@]}" | tee "$OUT/report.txt"
rc=${PIPESTATUS[0]}
t_report=$(awk -v a="$t_report0" -v b="$(elapsed)" 'BEGIN { printf "%.1f", b - a }')
if [ $golden = 1 ] && [ "$rc" = 0 ]; then
	{ echo "# versions"; grep -v "^ports" "$OUT/versions.txt"; } >>"$here/golden/MANIFEST.txt"
fi
rm -f "$OUT/initrd" # 13 MB, rebuilt from the cached image in a moment
for i in 0 1; do
	if [ "${GN_RCS[$i]}" != 0 ]; then
		echo "guest $([ $i = 0 ] && echo a || echo b): QEMU exit ${GN_RCS[$i]} (124: killed after ${TMO}s)" |
			tee -a "$OUT/report.txt"
		rc=1
	fi
done
{
	echo "image ${t_image}s (build-guest.sh: cached, or download + build)"
	echo "guests ${t_guests}s (boot + suite + power-off, both guests in parallel)"
	echo "report ${t_report}s (pcap checks: scapy and zlib on every RoCE frame)"
	echo "total $(elapsed)s"
} | tee "$OUT/timing.txt"
echo "output: $OUT"
exit "$rc"
