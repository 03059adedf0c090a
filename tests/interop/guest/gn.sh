# shellcheck shell=dash
# gn.sh: helpers for guest test scripts. /init sources it, and so can /tests.sh (". /lib/gn.sh").
#
# Environment (set by /init from the kernel command line): GN_ROLE, GN_PEER, GN_IF, GN_OOB_HOST
# (10.0.2.100: the host, through the out-of-band NIC's guestfwd relays), GN_RES (result port).
# Out-of-band TCP never uses the RoCE NIC: a guest reaches a TCP port P of the host (or of a peer
# guest, relayed by the host) at $GN_OOB_HOST:P, and the host reaches the guest through hostfwd.

GN_TOOL_PORT=${GN_TOOL_PORT:-18515}  # the port pingpong/perftest servers listen on
GN_SYNC_PORT=${GN_SYNC_PORT:-18516}  # step barrier between two guests (gn_board/gn_wait)
GN_STEP=${GN_STEP:-0}

# gn_res WORDS...: one result line to the host (second serial port) and to the console.
gn_res() {
	local t
	t=$(cut -d' ' -f1 /proc/uptime)
	echo "GNRES $* t=$t" >"${GN_RES:-/dev/ttyS1}"
	echo "GNRES $* t=$t"
}

# gn_cs: guest uptime in centiseconds.
gn_cs() { awk '{ printf "%d", $1 * 100 }' /proc/uptime; }

# gn_marker N: an ICMP echo request with 200+N data bytes (pattern 0x5a) to $GN_PEER on the RoCE
# NIC. The capture checker (icrc_check.py) cuts the pcap into steps at these frames.
gn_marker() {
	ping -c 1 -W 1 -w 1 -s $((200 + $1)) -p 5a "$GN_PEER" >/dev/null 2>&1
	return 0
}

# gn_listening PORT: true when some socket listens on TCP PORT (IPv4 or IPv6).
gn_listening() {
	grep -qE "^ *[0-9]+: [0-9A-F]+:$(printf '%04X' "$1") [0-9A-F]+:0000 0A" \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# The server's side of the step barrier: a board that answers every connection on PORT with the
# phase the server is in, and notes each answer given. One answer at a time (nc -l) would be
# used up by a connection whose reply the relays then lost (the client's nc gave up after 5 s on
# a loaded host while the host still relayed it): the server went on, the client waited for an
# answer nobody gave again, and the step failed on its timeout. The board answers until the
# phase moves on, however many tries that takes.
# gn_board PORT PHASE: start the board (once) or move it to PHASE; earlier answers are forgotten.
gn_board() {
	echo "$2" >/tmp/gn.phase.new && mv /tmp/gn.phase.new /tmp/gn.phase
	[ -n "${GN_BOARD_PID:-}" ] && return 0
	: >/tmp/gn.told
	(
		while :; do
			p=$(cat /tmp/gn.phase)
			# bounded, so that a phase set meanwhile is what the next connection hears
			echo "$p" | timeout 2 nc -l -p "$1" >/dev/null 2>&1 && echo "$p" >>/tmp/gn.told
		done
	) &
	GN_BOARD_PID=$!
}

# gn_board_told PHASE TMO: true once the board has answered a connection with PHASE (within
# TMO s): the client has come to the barrier.
gn_board_told() {
	local end
	end=$(($(gn_cs) + $2 * 100))
	while [ "$(gn_cs)" -lt "$end" ]; do
		grep -qx "$1" /tmp/gn.told 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}

# gn_wait HOST PORT TOKENS TMO: connect to HOST:PORT until the answer is one of TOKENS ('|'
# between them), or TMO s pass. A relay with nobody listening behind it accepts and closes at
# once: that reads as "", and we try again.
gn_wait() {
	local end r
	end=$(($(gn_cs) + $4 * 100))
	while [ "$(gn_cs)" -lt "$end" ]; do
		r=$(timeout 5 nc "$1" "$2" </dev/null 2>/dev/null)
		case "|$3|" in
		*"|$r|"*) [ -n "$r" ] && return 0 ;;
		esac
		sleep 0.3
	done
	return 1
}

# gn_summary LOG: the result line of a pingpong or perftest run, blanks squeezed to ','.
gn_summary() {
	{ grep -E 'usec/iter|Mbit/sec' "$1" | tail -n 1
	  awk '/^ *#bytes/ { getline; print; exit }' "$1"
	} | tr -s ' \t' ',' | sed 's/^,//; s/,$//' | tr '\n' ';' | sed 's/;$//'
}

# gn_pair_step NAME TMO CMD [ARGS...]: run one client/server tool between two guests.
# The server (GN_ROLE=server) starts "CMD ARGS" and waits; the client runs "CMD ARGS $GN_OOB_HOST"
# once the server listens on GN_TOOL_PORT, so the tool's own TCP exchange crosses the host
# (guestfwd -> 127.0.0.1 -> hostfwd). Two barriers on GN_SYNC_PORT order the steps: "hello-N"
# (the client finished step N-1; the server then sends marker N) and "ready-N" (the server listens).
# Every path is bounded by TMO seconds per phase (the first barrier by GN_BOOT_SYNC, 120 s); the
# client's "ready" wait by 2 x TMO, as it covers the server's wait for its tool to listen (up to
# TMO) and then the server's own barrier.
# Reports "GNRES step N NAME ROLE rc=RC cs=TIME SUMMARY"; the client's rc is 201 or 202 when it
# never got past the "hello" or "ready" barrier.
gn_pair_step() {
	local name=$1 tmo=$2 n rc t0 pid log sync_tmo=$2
	shift 2
	GN_STEP=$((GN_STEP + 1)); n=$GN_STEP
	log=/tmp/step$n.$name.log
	# The first barrier also absorbs the difference in boot time, which on a loaded TCG host can
	# be tens of seconds.
	[ $n = 1 ] && sync_tmo=${GN_BOOT_SYNC:-120}
	echo "=== [$GN_NAME] step $n $name ($GN_ROLE): $*"
	if [ "$GN_ROLE" = server ]; then
		gn_board "$GN_SYNC_PORT" "hello-$n"
		gn_board_told "hello-$n" "$sync_tmo"
		gn_marker "$n"
		t0=$(gn_cs)
		timeout -k 3 "$tmo" "$@" >"$log" 2>&1 &
		pid=$!
		while [ $(($(gn_cs) - t0)) -lt $((tmo * 100)) ]; do
			gn_listening "$GN_TOOL_PORT" && break
			kill -0 $pid 2>/dev/null || break
			sleep 0.2
		done
		gn_board "$GN_SYNC_PORT" "ready-$n"
		wait $pid
		rc=$?
	else
		rc=0
		t0=$(gn_cs)
		# "ready-N" says the server got past "hello-N" too: the answer to an earlier try
		# may have been the one lost
		gn_wait "$GN_OOB_HOST" "$GN_SYNC_PORT" "hello-$n|ready-$n" "$sync_tmo" || rc=201
		[ $rc = 0 ] &&
			{ gn_wait "$GN_OOB_HOST" "$GN_SYNC_PORT" "ready-$n" $((2 * tmo)) || rc=202; }
		t0=$(gn_cs)
		if [ $rc = 0 ]; then
			timeout -k 3 "$tmo" "$@" "$GN_OOB_HOST" >"$log" 2>&1
			rc=$?
		fi
	fi
	sed "s/^/  [$GN_NAME:$name] /" "$log" 2>/dev/null
	gn_res step $n "$name" "$GN_ROLE" rc=$rc cs=$(($(gn_cs) - t0)) "$(gn_summary "$log" 2>/dev/null)"
	return $rc
}

# Single-guest tests, with a process on the host as the peer (gpunic, later):
# gn_tool_server NAME TMO CMD [ARGS...]: run a server tool; once it listens on GN_TOOL_PORT,
# report "GNRES listening NAME" (the host waits for that line: lib.sh gn_await_line, then
# connects to 127.0.0.1:<hostfwd port>), then "GNRES tool NAME server rc=RC cs=TIME SUMMARY".
gn_tool_server() {
	local name=$1 tmo=$2 rc t0 pid log=/tmp/$1.log
	shift 2
	echo "=== [$GN_NAME] $name (server): $*"
	t0=$(gn_cs)
	timeout -k 3 "$tmo" "$@" >"$log" 2>&1 &
	pid=$!
	while [ $(($(gn_cs) - t0)) -lt $((tmo * 100)) ]; do
		gn_listening "$GN_TOOL_PORT" && { gn_res listening "$name"; break; }
		kill -0 $pid 2>/dev/null || break
		sleep 0.2
	done
	wait $pid
	rc=$?
	sed "s/^/  [$GN_NAME:$name] /" "$log"
	gn_res tool "$name" server rc=$rc cs=$(($(gn_cs) - t0)) "$(gn_summary "$log")"
	return $rc
}

# gn_tool_client NAME TMO CMD [ARGS...]: run "CMD ARGS $GN_OOB_HOST": a client tool whose server
# is on the host (reached through a guestfwd relay), then report "GNRES tool NAME client ...".
gn_tool_client() {
	local name=$1 tmo=$2 rc t0 log=/tmp/$1.log
	shift 2
	echo "=== [$GN_NAME] $name (client): $* $GN_OOB_HOST"
	t0=$(gn_cs)
	timeout -k 3 "$tmo" "$@" "$GN_OOB_HOST" >"$log" 2>&1
	rc=$?
	sed "s/^/  [$GN_NAME:$name] /" "$log"
	gn_res tool "$name" client rc=$rc cs=$(($(gn_cs) - t0)) "$(gn_summary "$log")"
	return $rc
}
