#!/usr/bin/env bash
# run-gpunic-interop.sh: gpunic on the host against Linux rxe in one QEMU guest, over gpunic's
# dgram link (the guest's "-netdev socket" wire). Each step of gpunic-steps.txt runs an rdma-core
# tool (or the suite's own guest-tools/immtest) in the guest and its gpunic counterpart on the host
# (gpunic pingpong / gpunic immtest / gpunic perf; guest-tools/looppeer against gpunic loop and
# gpunic sensor), in both roles; every frame gpunic sends and receives is
# captured per step and every ICRC is checked (icrc_check.py), as is the guest's whole capture.
#
#   tests/interop/run-gpunic-interop.sh [-o OUTDIR] [--gpunic PATH] [--tap IF]
#                                       [--link [NAME=]SPEC]...
#
# --tap IF: the guest's wire is the tap device IF (in the caller's network namespace:
# run-gpunic-tap.sh creates one) instead of the socket netdev, and --link gives gpunic's link
# (the default one, and NAME=SPEC ones that a step picks by starting its gpunic command with
# "@NAME "). Without --tap gpunic's link is the dgram link on the guest's socket wire.
#
# --gpunic: the gpunic binary (default $GPUNIC_BIN, else built with CMake in
# $GPUNIC_INTEROP_CACHE/gpunic-build). OUTDIR (default $GPUNIC_INTEROP_CACHE/runs/gpunic-<time>)
# receives a.pcap (the guest's wire), NN-<step>.pcap (gpunic's capture of step NN),
# NN-<step>.gpunic.log (its first line the gpunic command), a.console.log, a.results, tests.sh,
# report.txt, timing.txt.
# Environment: as run-rxe-pair.sh (GPUNIC_INTEROP_CACHE, GPUNIC_INTEROP_PORT_BASE,
# GPUNIC_INTEROP_TIMEOUT: the guest's life, default 480 s), GPUNIC_INTEROP_GPUNIC_STEPS (another
# step list, same format).
# Exit status: 0 every row passed, 1 a failure, 77 skipped (no packages, QEMU or TCG here).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
export PYTHONDONTWRITEBYTECODE=1

OUT="" GPUNIC=${GPUNIC_BIN:-} TAP=""
declare -A LINKS=()
while [ $# -gt 0 ]; do
	case $1 in
	-o) OUT=$2; shift ;;
	--gpunic) GPUNIC=$2; shift ;;
	--tap) TAP=$2; shift ;;
	--link)
		if [[ $2 =~ ^([A-Za-z0-9_]+)=(.*)$ ]]; then
			LINKS[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
		else
			LINKS[default]=$2
		fi
		shift ;;
	-h | --help) sed -n '2,25p' "$0"; exit 0 ;;
	*) echo "run-gpunic-interop: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
OUT=${OUT:-$GN_CACHE/runs/gpunic-$(date +%Y%m%d-%H%M%S)}
TMO=${GPUNIC_INTEROP_TIMEOUT:-480}
STEPS=${GPUNIC_INTEROP_GPUNIC_STEPS:-$here/gpunic-steps.txt}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/[0-9][0-9]-*

HPIDS=()
# shellcheck disable=SC2317
cleanup() {
	local p
	for p in "${HPIDS[@]}"; do kill "$p" 2>/dev/null; done
	gn_guests_stop
}
trap cleanup EXIT
trap 'gn_log "interrupted"; exit 130' INT TERM
skip() { echo "run-gpunic-interop: SKIP ($*)"; exit 77; }

t0=$(date +%s.%N)
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

guest=$("$here/build-guest.sh" -q)
rc=$?
[ $rc = 77 ] && skip "guest image cannot be built here"
[ $rc != 0 ] && { echo "run-gpunic-interop: FAIL: build-guest.sh exited $rc"; exit 1; }
qemu-system-x86_64 -accel help 2>/dev/null | grep -qx tcg || skip "qemu-system-x86_64 without TCG"
$GN_PY -c 'import scapy.contrib.roce' 2>/dev/null || skip "python3-scapy unavailable"
t_image=$(elapsed)

# gpunic itself, and the guest's immtest (built here against Debian's libibverbs-dev).
if [ -z "$GPUNIC" ]; then
	bdir=$GN_CACHE/gpunic-build
	gn_log "building gpunic in $bdir"
	{ cmake -S "$GN_REPO" -B "$bdir" -DGPUNIC_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
		cmake --build "$bdir" --target gpunic_cli -j 2; } >"$OUT/build.log" 2>&1 ||
		{ echo "run-gpunic-interop: FAIL: cannot build gpunic (see $OUT/build.log)"
		  exit 1; }
	GPUNIC=$bdir/apps/gpunic/gpunic
fi
[ -x "$GPUNIC" ] || { echo "run-gpunic-interop: FAIL: no gpunic binary at $GPUNIC"; exit 1; }
gcc -std=c11 -O2 -Wall -Wextra -Werror -o "$OUT/immtest" "$here/guest-tools/immtest.c" \
	-libverbs >"$OUT/immtest.build.log" 2>&1 ||
	{ echo "run-gpunic-interop: FAIL: cannot build guest-tools/immtest.c" \
		"(see $OUT/immtest.build.log)"; exit 1; }
gcc -std=c11 -O2 -Wall -Wextra -Werror -o "$OUT/looppeer" "$here/guest-tools/looppeer.c" \
	-libverbs >"$OUT/looppeer.build.log" 2>&1 ||
	{ echo "run-gpunic-interop: FAIL: cannot build guest-tools/looppeer.c" \
		"(see $OUT/looppeer.build.log)"; exit 1; }
t_build=$(elapsed)

gn_pick_ports || exit 1
WIRE_GPUNIC=$((GN_BASE + 2))       # gpunic's end of the wire (the guest's wire_peer)
IN_PORT=$(gn_hostfwd_port 0 0)     # host -> guest TCP 18515 (a guest server)
HOST_PORT=$((GN_BASE + 90))        # gpunic's listener, the guest's 10.0.2.100:18517
SYNC_PORT=$((GN_BASE + 91))        # "ready-N", the guest's 10.0.2.100:18518
GUEST_IP=10.0.0.1 GUEST_MAC=52:54:00:00:00:01
GPUNIC_IP=10.0.0.2 GPUNIC_MAC=52:54:00:00:00:02
[ -n "${LINKS[default]:-}" ] ||
	LINKS[default]="dgram:127.0.0.1:$WIRE_GPUNIC,127.0.0.1:$(gn_wire_port 0)"

# The step list: N name role tmo guest-command gpunic-command.
trim() { local s=${1#"${1%%[![:space:]]*}"}; printf '%s' "${s%"${s##*[![:space:]]}"}"; }
names=() roles=() tmos=() gcmds=() hcmds=() hlinks=()
while IFS='|' read -r name role tmo gcmd hcmd; do
	name=$(trim "$name")
	case $name in '' | '#'*) continue ;; esac
	names+=("$name")
	roles+=("$(trim "$role")")
	tmos+=("$(trim "$tmo")")
	gcmds+=("$(trim "$gcmd")")
	hcmd=$(trim "$hcmd")
	# "@NAME gpunic-command": the step runs on the link named NAME (--link NAME=SPEC)
	lname=default
	if [ "${hcmd#@}" != "$hcmd" ]; then
		lname=${hcmd%% *}
		lname=${lname#@}
		hcmd=$(trim "${hcmd#* }")
	fi
	hcmds+=("$hcmd")
	hlinks+=("${LINKS[$lname]:-}")
done <"$STEPS"
nsteps=${#names[@]}

# The guest's side: a server tool reports "listening" (the host then connects); a client tool
# first waits for "ready-N" from the host (gpunic listens), then connects to 10.0.2.100:18517.
{
	echo '. /lib/gn.sh'
	echo 'GN_SYNC_PORT=18518'
	for i in $(seq 0 $((nsteps - 1))); do
		n=$((i + 1))
		if [ "${roles[$i]}" = server ]; then
			echo "gn_tool_server ${names[$i]} ${tmos[$i]} ${gcmds[$i]}"
		else
			echo "if gn_wait \$GN_OOB_HOST 18518 ready-$n ${tmos[$i]}; then" \
				"gn_tool_client ${names[$i]} ${tmos[$i]} ${gcmds[$i]} -p 18517;" \
				"else gn_res tool ${names[$i]} client rc=202; fi"
		fi
	done
} >"$OUT/tests.sh"
gn_mk_overlay "$OUT/overlay.cpio" "$OUT/tests.sh" "$OUT/immtest=/usr/bin/immtest" \
	"$OUT/looppeer=/usr/bin/looppeer"
gn_initrd "$OUT/initrd" "$guest" "$OUT/overlay.cpio"

gn_log "guest booting (ports $GN_BASE+, $nsteps steps, output $OUT)"
gn_guest_start name=a idx=0 out="$OUT" guest="$guest" initrd="$OUT/initrd" tmo="$TMO" \
	mac=$GUEST_MAC ip=$GUEST_IP/24 peer=$GPUNIC_IP wire_peer="$WIRE_GPUNIC" tap="$TAP" \
	guestfwd="18517:$HOST_PORT 18518:$SYNC_PORT"
if ! gn_await_line "$OUT/a.results" '^GNRES boot ' 120; then
	[ -s "$OUT/a.console.log" ] || skip "the guest printed nothing"
fi
gn_await_line "$OUT/a.results" '^GNRES boot (ok|FAIL)' 120
t_boot=$(elapsed)

# Serve "ready-N" to one connection on SYNC_PORT (bounded by $2 seconds).
serve_token() {
	timeout "$2" $GN_PY - "$SYNC_PORT" "$1" <<'EOF'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1)
c, _ = s.accept()
c.sendall((sys.argv[2] + "\n").encode())
c.close()
EOF
}

listening() { ss -Hltn 2>/dev/null | awk '{ print $4 }' | grep -qE "[:.]$1\$"; }

hrcs=()
for i in $(seq 0 $((nsteps - 1))); do
	n=$((i + 1)) name=${names[$i]} tmo=${tmos[$i]} LINK=${hlinks[$i]}
	tag=$(printf '%02d-%s' "$n" "$name")
	# gpunic perf takes perftest's flags (-t is its TX depth) and captures through
	# GPUNIC_CAPTURE; pingpong and immtest take the suite's capture flag. Every tool uses
	# the one MAC: the guest keeps 10.0.0.2's neighbour entry from step to step, and frames
	# to a stale MAC are dropped until it ARPs again (seconds of RC retries).
	# shellcheck disable=SC2206
	case ${hcmds[$i]} in
	perf*)
		hargs=(${hcmds[$i]} --link "$LINK" --ip $GPUNIC_IP --mac $GPUNIC_MAC
			--peer-mac $GUEST_MAC --executor cpu --timeout "$tmo")
		export GPUNIC_CAPTURE=$OUT/$tag.pcap
		;;
	loop* | sensor*)
		# the loopback experiment (guest-tools/looppeer plays the other end): no --mac
		# (MAC 02:00:<IPv4>; looppeer sets the guest's neighbour entry), capture by
		# GPUNIC_CAPTURE, the out-of-band port by --oob-port (set below)
		hargs=(${hcmds[$i]} --link "$LINK" --ip $GPUNIC_IP --oob-timeout-s "$tmo")
		export GPUNIC_CAPTURE=$OUT/$tag.pcap
		;;
	*)
		hargs=(${hcmds[$i]} --link "$LINK" --ip $GPUNIC_IP --mac $GPUNIC_MAC
			--capture "$OUT/$tag.pcap" --timeout "$tmo")
		unset GPUNIC_CAPTURE
		;;
	esac
	grep -q '^GNRES boot ok' "$OUT/a.results" || { hrcs+=(203); continue; }
	[ -n "$LINK" ] || { gn_log "step $n $name: no such link"; hrcs+=(204); continue; }
	gn_log "step $n $name (guest ${roles[$i]})"
	if [ "${roles[$i]}" = server ]; then
		if gn_await_line "$OUT/a.results" "^GNRES listening $name " "$tmo"; then
			case ${hcmds[$i]} in
			sensor*) hargs+=(--oob-host 127.0.0.1 --oob-port "$IN_PORT") ;;
			*) hargs+=(-p "$IN_PORT" 127.0.0.1) ;;
			esac
			echo "# gpunic ${hargs[*]}" >"$OUT/$tag.gpunic.log"
			timeout -k 3 $((tmo + 5)) "$GPUNIC" "${hargs[@]}" >>"$OUT/$tag.gpunic.log" 2>&1
			hrcs+=($?)
		else
			hrcs+=(201)
		fi
	else
		case ${hcmds[$i]} in
		perf*) hargs+=(-p "$HOST_PORT") ;;
		loop*) hargs+=(--oob-port "$HOST_PORT") ;;
		*) hargs+=(--bind 127.0.0.1 -p "$HOST_PORT") ;;
		esac
		echo "# gpunic ${hargs[*]}" >"$OUT/$tag.gpunic.log"
		timeout -k 3 $((tmo + 5)) "$GPUNIC" "${hargs[@]}" \
			>>"$OUT/$tag.gpunic.log" 2>&1 &
		hp=$!
		HPIDS=("$hp")
		for _ in $(seq 50); do
			listening "$HOST_PORT" && break
			kill -0 "$hp" 2>/dev/null || break
			sleep 0.1
		done
		serve_token "ready-$n" "$tmo"
		wait "$hp"
		hrcs+=($?)
		HPIDS=()
	fi
	gn_await_line "$OUT/a.results" "^GNRES tool $name " "$tmo"
done
t_steps=$(elapsed)
gn_guests_stop
gn_guests_wait

# The report: one row per step, one for the guest's boot and one for the guest's capture. Every
# ICRC of every capture is recomputed twice (zlib, scapy) in one run of icrc_check.py.
$GN_PY "$here/icrc_check.py" -v "$OUT"/[0-9][0-9]-*.pcap "$OUT/a.pcap" >"$OUT/icrc.txt" 2>&1
# capstat FILE: "good bad retx opcodes" of one capture: retx counts frames whose (opcode, QPN,
# PSN) was seen before in it (RC retransmissions and re-ACKs), opcodes are the names seen.
capstat() {
	awk -v f="$(basename "$1")" '
	$1 == f && $2 == "frame" {
		if ($NF == "ok") good++; else bad++
		k = $6 " " $8 " " $10
		if (k in seen) retx++
		seen[k] = 1
		op = $6; sub(/^(RC|UC)_/, "", op); ops[op] = 1
	}
	END {
		s = ""
		for (o in ops) s = s (s == "" ? "" : ",") o
		printf "%d %d %d %s\n", good, bad, retx, s == "" ? "-" : s
	}' "$OUT/icrc.txt"
}
ok=1
row() { printf '%-3s %-17s %-6s %4s %4s %6s %4s %9s %-5s %s\n' "$@"; }
{
	row "#" step guest host gst frames retx icrc result info
	if grep -q '^GNRES boot ok' "$OUT/a.results"; then
		row - boot "" "" "" "" "" "" PASS \
			"$(sed -n 's/^GNRES boot ok \(.*\) t=.*/\1/p' "$OUT/a.results")"
	else
		row - boot "" "" "" "" "" "" FAIL "$(grep '^GNRES boot' "$OUT/a.results" | tail -1)"
		ok=0
	fi
	for i in $(seq 0 $((nsteps - 1))); do
		n=$((i + 1)) name=${names[$i]}
		tag=$(printf '%02d-%s' "$n" "$name")
		line=$(grep -m1 "^GNRES tool $name " "$OUT/a.results")
		grc=$(echo "$line" | sed -n 's/.* rc=\([0-9]*\).*/\1/p')
		hrc=${hrcs[$i]:-none}
		read -r good bad retx ops <<<"$(capstat "$OUT/$tag.pcap")"
		ops=$(tr ',' '\n' <<<"$ops" | sort | paste -sd, -)
		frames=$((good + bad)) why=""
		[ "$grc" = 0 ] || why+="guest rc=${grc:-none} "
		[ "$hrc" = 0 ] || why+="gpunic rc=$hrc "
		[ "$frames" -gt 0 ] || why+="no RoCE frames captured "
		[ "$bad" = 0 ] || why+="$bad bad ICRCs "
		if grep -q "\[a:$name\].*invalid data" "$OUT/a.console.log" 2>/dev/null; then
			why+="guest found invalid data "
		fi
		case ${hcmds[$i]} in
		immtest*)
			grep -q '^immtest: PASS' "$OUT/$tag.gpunic.log" 2>/dev/null ||
				why+="gpunic immtest did not pass "
			grep -q "\[a:$name\] immtest: PASS" "$OUT/a.console.log" 2>/dev/null ||
				why+="guest immtest did not pass "
			info="imm + data verified both ways; $ops"
			;;
		loop*)
			grep -q '^gpunic loop: the sensor is done' "$OUT/$tag.gpunic.log" ||
				why+="gpunic loop did not end on the sensor's message "
			grep -q "\[a:$name\] looppeer: PASS" "$OUT/a.console.log" 2>/dev/null ||
				why+="guest looppeer did not pass "
			info="$ops; $(sed -n "s/.*\[a:$name\] looppeer: sent \([0-9]*\), echoed intact \([0-9]*\),.*mean rtt \(.*\)/\2\/\1 echoed intact, rtt \3/p" \
				"$OUT/a.console.log" | tail -1)"
			;;
		sensor*)
			grep -qE '^ sent [0-9]+  received [0-9]+  verified [0-9]+  lost 0  dup 0  reorder 0  corrupt 0' \
				"$OUT/$tag.gpunic.log" || why+="gpunic sensor saw loss or corruption "
			grep -q "\[a:$name\] looppeer: PASS" "$OUT/a.console.log" 2>/dev/null ||
				why+="guest looppeer --echo did not pass "
			info="$ops; $(sed -n 's/^ sent \([0-9]*\)  received [0-9]*  verified \([0-9]*\).*/\2\/\1 verified/p' \
				"$OUT/$tag.gpunic.log" | tail -1)"
			;;
		perf*)
			info="$ops; guest: $(echo "$line" |
				sed -n 's/.* cs=[0-9]* \(.*\) t=.*/\1/p' | cut -d';' -f1 |
				cut -d, -f1-6)"
			grep -q 'MISMATCH' "$OUT/$tag.gpunic.log" && why+="gpunic perf found wrong data "
			case ${hcmds[$i]} in
			perf\ atomic_*)
				# the values, checked by gpunic on its side of the row
				v=$(grep -m1 -E '^atomic (values|targets) verified: ' \
					"$OUT/$tag.gpunic.log")
				[ -n "$v" ] || why+="gpunic perf did not verify the atomics "
				g=${info#*; guest: }
				info="${info%%; guest:*}; $(echo "$v" | sed -E \
					's/^atomic values verified: ([0-9]+) fetched values of ([A-Z_]+).*/\1 fetched \2 values checked/; s/^atomic targets verified: ([0-9]+) ([A-Z_]+) executed once each, targets sum to ([0-9]+).*/\1 \2 executed, targets sum \3/')"
				[ -z "$g" ] || info+="; guest: $g"
				;;
			esac
			;;
		*)
			info="$ops; guest $(echo "$line" |
				sed -n 's/.*,=,\([0-9.]*\),usec\/iter.*/\1/p')"
			info+=" gpunic $(sed -n 's/.* = \([0-9.]*\) usec\/iter/\1/p' \
				"$OUT/$tag.gpunic.log" | tail -1) usec/iter"
			;;
		esac
		if [ -z "$why" ]; then
			row "$n" "$name" "${roles[$i]}" "$hrc" "$grc" "$frames" "$retx" \
				"$good/$bad" PASS "$info"
		else
			row "$n" "$name" "${roles[$i]}" "$hrc" "${grc:--}" "$frames" "$retx" \
				"$good/$bad" FAIL "$why"
			ok=0
		fi
	done
	read -r good bad _ _ <<<"$(capstat "$OUT/a.pcap")"
	if [ $((good + bad)) -gt 0 ] && [ "$bad" = 0 ]; then
		row - "icrc a.pcap" "" "" "" "$good" "" "$good/$bad" PASS \
			"the guest's whole wire (zlib and scapy)"
	else
		row - "icrc a.pcap" "" "" "" "$((good + bad))" "" "$good/$bad" FAIL \
			"the guest's whole wire"
		ok=0
	fi
} >"$OUT/report.txt"
t_report=$(elapsed)
dt() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
printf 'image %s s, builds %s s, boot %s s, steps %s s, report %s s\n' "$t_image" \
	"$(dt "$t_image" "$t_build")" "$(dt "$t_build" "$t_boot")" "$(dt "$t_boot" "$t_steps")" \
	"$(dt "$t_steps" "$t_report")" >"$OUT/timing.txt"
cat "$OUT/report.txt"
rows=$(($(wc -l <"$OUT/report.txt") - 1))
passes=$(grep -c ' PASS ' "$OUT/report.txt")
echo "time: $(cat "$OUT/timing.txt")"
rm -f "$OUT/initrd"
if [ $ok = 1 ]; then
	echo "PASS: $passes/$rows rows pass"
	exit 0
fi
echo "FAIL: $passes/$rows rows pass (see $OUT)"
exit 1
