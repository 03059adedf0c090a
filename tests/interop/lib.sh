# shellcheck shell=bash disable=SC2034
# lib.sh: host-side helpers for the interop harness (bash; sourced by run-*.sh).
#
# A guest has two NICs:
#   wire: e1000 on "-netdev socket,udp=": each Ethernet frame is one UDP datagram between
#         127.0.0.1:<local> and 127.0.0.1:<peer>. RoCE (and ARP, and the step markers) only.
#         filter-dump records it to a pcap.
#   oob:  e1000 on "-netdev user,restrict=on" (slirp), guest address 10.0.2.15/24: out-of-band TCP.
#         restrict=on: the guest reaches nothing but the forwarding rules below.
#         hostfwd:  host 127.0.0.1:<GN_BASE + 10*(idx+1) + k>  ->  guest 10.0.2.15:<18515 + k>, k=0..4
#         guestfwd: guest 10.0.2.100:<port>  ->  host 127.0.0.1:<hostport>  (a relay per connection,
#                   "busybox nc", spawned by QEMU), for the (port, hostport) pairs the caller gives.
# Ports (GN_BASE, chosen by gn_pick_ports in 40000-59900 unless GPUNIC_INTEROP_PORT_BASE is set):
#   GN_BASE+1+idx      wire UDP port of guest idx (idx = 0, 1, ...)
#   GN_BASE+10*(idx+1)+k  hostfwd of guest idx to its TCP port 18515+k
# Nothing listens on any address but 127.0.0.1.

GN_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GN_REPO=$(cd "$GN_HERE/../.." && pwd)
GN_CACHE=${GPUNIC_INTEROP_CACHE:-$GN_REPO/build-interop}
GN_PY=/usr/bin/python3 # Debian's python: it sees python3-scapy (a pyenv python3 would not)
GN_GUEST_PORT0=18515   # first guest TCP port with a hostfwd (18515..18519)
GN_PIDS=()
GN_PIDFILES=()

gn_log() { echo "[interop $(date +%T)] $*" >&2; }

# gn_port_busy PORT: true when PORT is bound on this host (TCP or UDP).
gn_port_busy() {
	ss -Htuan 2>/dev/null | awk '{ print $5 }' | grep -qE "[:.]$1\$"
}

# gn_pick_ports: set GN_BASE to a free block of 100 ports.
gn_pick_ports() {
	local try p busy
	if [ -n "${GPUNIC_INTEROP_PORT_BASE:-}" ]; then
		GN_BASE=$GPUNIC_INTEROP_PORT_BASE
		return 0
	fi
	for try in $(seq 20); do
		GN_BASE=$((40000 + (RANDOM % 200) * 100))
		busy=0
		for p in $(seq "$GN_BASE" $((GN_BASE + 99))); do
			gn_port_busy "$p" && { busy=1; break; }
		done
		[ $busy = 0 ] && return 0
	done
	gn_log "no free port block found"
	return 1
}

# gn_hostfwd_port IDX K: the host port that reaches guest IDX's TCP port 18515+K.
gn_hostfwd_port() { echo $((GN_BASE + 10 * ($1 + 1) + $2)); }
# gn_wire_port IDX: guest IDX's wire UDP port.
gn_wire_port() { echo $((GN_BASE + 1 + $1)); }

# gn_mk_overlay OUT TESTS_SH [SRC=DEST ...]: a cpio holding /tests.sh and any other files.
# Appended to the base image (gn_initrd), it plugs a test into the guest without rebuilding it.
gn_mk_overlay() {
	local out=$1 tests=$2 d f
	shift 2
	d=$(mktemp -d)
	install -m 0755 "$tests" "$d/tests.sh"
	for f in "$@"; do
		mkdir -p "$d$(dirname "${f#*=}")"
		cp -L "${f%%=*}" "$d${f#*=}"
	done
	(cd "$d" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$out"
	rm -rf "$d"
}

# gn_initrd OUT GUEST_DIR OVERLAY: base image + overlay (the kernel unpacks both, in order).
gn_initrd() { cat "$2/base.cpio" "$3" >"$1"; }

# gn_guest_start key=value...: boot one guest in the background (bounded by "timeout").
#   name= idx= out= (directory: <name>.console.log, <name>.results, <name>.pcap, <name>.qemu.log)
#   guest= (image dir) initrd= mac= ip= peer= peermac= wire_peer= (UDP port of the other end)
#   guestfwd="PORT:HOSTPORT ..." append="gn_role=... ..." tmo= (seconds, default 180) mem= (MiB)
#   tap=IFNAME: the wire is that tap device (in this shell's network namespace) instead of the
#   socket netdev; wire_peer is then unused
gn_guest_start() {
	local name="" idx=0 out="" guest="" initrd="" mac="" ip="" peer="" peermac="" wire_peer=""
	local guestfwd="" append="" tmo=180 mem=512 tap=""
	local kv net fw p wire
	for kv in "$@"; do
		case ${kv%%=*} in
		name | idx | out | guest | initrd | mac | ip | peer | peermac | wire_peer | guestfwd | append | tmo | mem | tap)
			printf -v "${kv%%=*}" '%s' "${kv#*=}" ;;
		*) gn_log "gn_guest_start: unknown ${kv%%=*}"; return 2 ;;
		esac
	done
	local oobmac
	oobmac=$(printf '52:54:00:ee:00:%02x' $((idx + 1)))
	net="user,id=oob,restrict=on,net=10.0.2.0/24,host=10.0.2.2"
	for k in 0 1 2 3 4; do
		net+=",hostfwd=tcp:127.0.0.1:$(gn_hostfwd_port "$idx" $k)-:$((GN_GUEST_PORT0 + k))"
	done
	for fw in $guestfwd; do
		net+=",guestfwd=tcp:10.0.2.100:${fw%%:*}-cmd:/bin/busybox nc 127.0.0.1 ${fw#*:}"
	done
	wire="socket,id=wire,udp=127.0.0.1:$wire_peer,localaddr=127.0.0.1:$(gn_wire_port "$idx")"
	[ -n "$tap" ] && wire="tap,id=wire,ifname=$tap,script=no,downscript=no"
	rm -f "$out/$name.pcap" "$out/$name.results" "$out/$name.console.log"
	timeout -k 5 "$tmo" qemu-system-x86_64 -name "gpunic-interop-$name" \
		-accel tcg -cpu max -smp 1 -m "$mem" -nodefaults -no-user-config -display none -no-reboot \
		-pidfile "$out/$name.qemu.pid" \
		-kernel "$guest/$(cat "$guest/kernel")" -initrd "$initrd" \
		-append "console=ttyS0 ${GN_KARGS:-quiet} mitigations=off panic=-1 gn_name=$name gn_mac=$mac gn_ip=$ip gn_peer=$peer gn_peermac=$peermac gn_oobmac=$oobmac gn_tmo=$((tmo - 10)) $append" \
		-serial "file:$out/$name.console.log" -serial "file:$out/$name.results" \
		-netdev "$wire" \
		-device "e1000,netdev=wire,mac=$mac" \
		-object "filter-dump,id=cap,netdev=wire,file=$out/$name.pcap,maxlen=65535" \
		-netdev "$net" -device "e1000,netdev=oob,mac=$oobmac" \
		>"$out/$name.qemu.log" 2>&1 &
	GN_PIDS+=($!)
	GN_PIDFILES+=("$out/$name.qemu.pid")
}

# gn_guests_await_output SECS FILE...: wait until every FILE (the guests' consoles) has output.
# Returns 0 when they all do, 1 after SECS seconds, 2 when a guest ended first.
gn_guests_await_output() {
	local secs=$1 f p i all
	shift
	for i in $(seq $((secs * 5))); do
		all=1
		for f in "$@"; do [ -s "$f" ] || all=0; done
		[ $all = 1 ] && return 0
		for p in "${GN_PIDS[@]}"; do kill -0 "$p" 2>/dev/null || return 2; done
		sleep 0.2
	done
	return 1
}

# gn_await_line FILE REGEX SECS: wait until a line of FILE (a guest's .results) matches REGEX.
gn_await_line() {
	local i
	for i in $(seq $(($3 * 5))); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}

# gn_guests_wait: wait for every guest; sets GN_RCS (exit status of each, 124 = timed out).
gn_guests_wait() {
	local p
	GN_RCS=()
	for p in "${GN_PIDS[@]}"; do
		wait "$p" && GN_RCS+=(0) || GN_RCS+=($?)
	done
	GN_PIDS=()
}

# gn_kill_qemu SIG PIDFILE: signal the QEMU named by PIDFILE, if that PID is still a QEMU.
gn_kill_qemu() {
	local pid
	pid=$(cat "$2" 2>/dev/null) || return 0
	[ -n "$pid" ] && grep -q '^qemu-system' "/proc/$pid/comm" 2>/dev/null && kill "-$1" "$pid" 2>/dev/null
	return 0
}

# gn_guests_stop: end every guest this shell started (the "timeout" wrappers, then QEMU itself).
gn_guests_stop() {
	local p f i
	for p in "${GN_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for f in "${GN_PIDFILES[@]}"; do gn_kill_qemu TERM "$f"; done
	for i in $(seq 30); do
		local alive=0
		for p in "${GN_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.1
	done
	for p in "${GN_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	for f in "${GN_PIDFILES[@]}"; do gn_kill_qemu KILL "$f"; done
	GN_PIDS=()
}
