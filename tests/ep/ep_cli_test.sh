#!/bin/bash
# SPDX-License-Identifier: MIT
# gpunic pingpong and immtest between two gpunic processes (the endpoint library end to end).
# usage: ep_cli_test.sh CASE GPUNIC WORKDIR
set -u
case_name=$1
G=$2
W=$3/$case_name
mkdir -p "$W"
rm -f "$W"/*.log
PORT=$((20000 + $$ % 20000))
CABLE=/gpunic-ep-cli-$$

fail() {
	echo "FAIL: $*"
	for f in "$W"/*.log; do echo "--- $f"; cat "$f"; done
	exit 1
}

# pair CMD COMMON-ARGS -- SERVER-ARGS -- CLIENT-ARGS: the server in the background, then the
# client; both must exit 0.
pair() {
	local cmd=$1 common=() sargs=() cargs=() part=0
	shift
	for a in "$@"; do
		if [ "$a" = "--" ]; then part=$((part + 1)); continue; fi
		case $part in
		0) common+=("$a") ;;
		1) sargs+=("$a") ;;
		*) cargs+=("$a") ;;
		esac
	done
	"$G" "$cmd" -p "$PORT" --timeout 60 "${common[@]}" "${sargs[@]}" > "$W/server.log" 2>&1 &
	local spid=$!
	sleep 0.2
	"$G" "$cmd" -p "$PORT" --timeout 60 "${common[@]}" "${cargs[@]}" 127.0.0.1 > "$W/client.log" 2>&1
	local crc=$?
	wait $spid
	local src=$?
	[ $crc -eq 0 ] || fail "$cmd client exit $crc"
	[ $src -eq 0 ] || fail "$cmd server exit $src"
}

case $case_name in
pingpong_udp)
	# the udp link bound 127.0.0.8x:4791: the NIC sends from that port (this failed with
	# "send error CQE, syndrome 0x15" while the apps set src_udp_port by hand)
	pair pingpong -n 300 -s 512 -- --link udp:127.0.0.81 --ip 127.0.0.81 -- \
		--link udp:127.0.0.82 --ip 127.0.0.82
	grep -q "GID ::ffff:127.0.0.82" "$W/server.log" || fail "server did not see the client's GID"
	grep -q "300 iters in" "$W/client.log" || fail "no summary"
	;;
pingpong_shm)
	pair pingpong -n 300 -s 4096 --chk -- --link "shm:$CABLE,a,create" --ip 10.0.0.1 -- \
		--link "shm:$CABLE,b" --ip 10.0.0.2
	grep -q "300 iters in" "$W/server.log" || fail "no summary"
	;;
pingpong_uc_chk)
	# UC, messages of three packets, every byte checked on both sides
	pair pingpong --uc -n 200 -s 3000 -m 1024 --chk -- --link udp:127.0.0.83 --ip 127.0.0.83 -- \
		--link udp:127.0.0.84 --ip 127.0.0.84
	grep -q "200 iters in" "$W/client.log" || fail "no summary"
	;;
udp_macs)
	# every frame of a udp pingpong, as both captures have it, carries the MACs gpunic's rule
	# gives its addresses (02:00 + IPv4): the client's frames had source 02:00:00:00:00:00
	# in the server's capture, the server's replies destination 00:00:00:00:00:00
	command -v python3 > /dev/null || { echo "SKIP: no python3"; exit 77; }
	GPUNIC_CAPTURE="$W/srv.pcap" "$G" pingpong -p "$PORT" --timeout 60 -n 5 \
		--link udp:127.0.0.85 --ip 127.0.0.85 > "$W/server.log" 2>&1 &
	spid=$!
	sleep 0.2
	GPUNIC_CAPTURE="$W/cli.pcap" "$G" pingpong -p "$PORT" --timeout 60 -n 5 \
		--link udp:127.0.0.86 --ip 127.0.0.86 127.0.0.1 > "$W/client.log" 2>&1 ||
		fail "client exit $?"
	wait $spid || fail "server exit $?"
	[ -s "$W/srv.pcap" ] || { echo "SKIP: no capture (gpunic built without libpcap)"; exit 77; }
	for f in srv cli; do
		"$G" decode "$W/$f.pcap" > "$W/$f.json" 2> "$W/$f-decode.log" || fail "decode $f"
	done
	python3 - "$W/srv.json" "$W/cli.json" <<'PY' || fail "MACs"
import json, socket, sys
n = 0
for path in sys.argv[1:]:
    for line in open(path):
        d = json.loads(line)
        for ip, mac in ((d["src_ip"], d["src_mac"]), (d["dst_ip"], d["dst_mac"])):
            want = "02:00:" + ":".join("%02x" % b for b in socket.inet_aton(ip))
            assert mac == want, (path, d["frame"], ip, mac, want)
        n += 1
assert n >= 20, n
PY
	;;
immtest_shm)
	pair immtest -- --link "shm:$CABLE,a,create" --ip 10.0.0.1 -- \
		--link "shm:$CABLE,b" --ip 10.0.0.2
	grep -q "immtest: PASS" "$W/server.log" || fail "server did not pass"
	grep -q "immtest: PASS" "$W/client.log" || fail "client did not pass"
	;;
loop_static_peer)
	# issue 18: a peer that does no out-of-band exchange drives gpunic loop. The sensor plays
	# that peer: it is given the loop's QP, PSN and ring by the command line, as an FPGA is.
	command -v python3 > /dev/null || { echo "SKIP: no python3"; exit 77; }
	"$G" loop --link "shm:$CABLE,a,create" --executor cpu --peer-qpn 0x11 \
		--peer-ip 192.168.0.2 --peer-psn 0x123 --psn 0x456 --count 500 --json \
		> "$W/loop.log" 2> "$W/loop-err.log" &
	lpid=$!
	for _ in $(seq 100); do grep -q "this end" "$W/loop-err.log" && break; sleep 0.05; done
	line=$(grep "this end" "$W/loop-err.log") || fail "the loop did not print its parameters"
	qpn=$(echo "$line" | sed 's/.* qpn \(0x[0-9a-f]*\).*/\1/')
	va=$(echo "$line" | sed 's/.* va \(0x[0-9a-f]*\).*/\1/')
	rkey=$(echo "$line" | sed 's/.* rkey \(0x[0-9a-f]*\).*/\1/')
	"$G" sensor --link "shm:$CABLE,b" --peer-qpn "$qpn" --peer-ip 192.168.0.101 \
		--peer-psn 0x456 --psn 0x123 --rkey "$rkey" --peer-va "$va" --count 500 \
		--interval-us 0 --json > "$W/sensor.log" 2> "$W/sensor-err.log"
	src=$?
	wait $lpid
	lrc=$?
	[ $src -eq 0 ] || fail "sensor exit $src"
	[ $lrc -eq 0 ] || fail "loop exit $lrc"
	grep -q "qpn 0x11 psn 0x123" "$W/sensor-err.log" || fail "the sensor is not the QP the loop was given"
	python3 - "$W/sensor.log" "$W/loop.log" <<'PY' || fail "counts"
import json, sys
s = json.load(open(sys.argv[1]))["run"]
l = json.load(open(sys.argv[2]))
assert s["sent"] == 500 and s["verified"] == 500 and s["lost"] == 0, s
assert l["end"] == "count" and l["echoed"] == 500, l
PY
	# a sensor whose peer echoes nothing says so in its exit code (it exited 0 with 0
	# verified): its static peer's end of the cable has nobody behind it
	"$G" sensor --link "shm:$CABLE-void,a,create" --peer-qpn 0x11 --peer-ip 192.168.0.101 \
		--rkey 0x1 --peer-va 0x1000 --count 20 --interval-us 0 --reply-timeout 0.05 \
		> "$W/void.log" 2>&1
	[ $? -eq 1 ] || fail "a sensor that got nothing back did not exit 1"
	grep -q "none of the 20 messages came back intact" "$W/void.log" ||
		fail "the sensor did not say that nothing came back"
	# half a static peer is a usage error, not a hang
	"$G" loop --peer-qpn 0x11 > "$W/usage.log" 2>&1
	[ $? -eq 2 ] || fail "loop --peer-qpn alone: not a usage error"
	grep -q "needs --peer-qpn and --peer-ip" "$W/usage.log" || fail "no clear usage error"
	"$G" sensor --peer-qpn 0x11 --peer-ip 10.0.0.1 > "$W/usage.log" 2>&1
	[ $? -eq 2 ] || fail "sensor write-imm without --rkey: not a usage error"
	"$G" loop --peer-qpn 1 --peer-ip 10.0.0.1 > "$W/usage.log" 2>&1
	[ $? -eq 2 ] || fail "loop --peer-qpn 1 accepted"
	;;
bad_peer)
	# a client that writes garbage (an escape sequence in it) instead of rdma-core's message,
	# and one that sends nothing: each is dropped with a line saying so, its bytes escaped,
	# and the server serves the next client (it ended at the first, printing its raw bytes)
	command -v python3 > /dev/null || { echo "SKIP: no python3"; exit 77; }
	"$G" pingpong -p "$PORT" --timeout 60 -n 20 --link "shm:$CABLE,a,create" --ip 10.0.0.1 \
		> "$W/server.log" 2>&1 &
	spid=$!
	python3 - "$PORT" <<'PY'
import socket, sys, time
def connect():
    for _ in range(100):
        try:
            return socket.create_connection(("127.0.0.1", int(sys.argv[1])))
        except OSError:
            time.sleep(0.05)
    sys.exit("no server")
s = connect()
s.sendall(b"zz\x1b[31mzz:zzzzzz:'\\':" + b"q" * 30 + b"\0")  # 52 bytes
time.sleep(0.5)
s.close()
s = connect()
s.close()
PY
	"$G" pingpong -p "$PORT" --timeout 60 -n 20 --link "shm:$CABLE,b" --ip 10.0.0.2 \
		127.0.0.1 > "$W/client.log" 2>&1
	crc=$?
	wait $spid
	rc=$?
	[ $crc -eq 0 ] || fail "client exit $crc"
	[ $rc -eq 0 ] || fail "server exit $rc after the bad clients"
	grep -qF "dropped a connection from 127.0.0.1: not rdma-core pingpong's message: 'zz\x1b[31mzz:zzzzzz:\x27\x5c\x27:qqq" \
		"$W/server.log" || fail "the garbage is not reported, escaped"
	grep -q "dropped a connection from 127.0.0.1: it closed before a whole message; still waiting" \
		"$W/server.log" || fail "the empty connection is not reported"
	! grep -q "$(printf '\033')" "$W/server.log" || fail "the peer's escape byte was printed raw"
	grep -q "20 iters in" "$W/server.log" || fail "the server did not serve the next client"
	# immtest's peer line is printed escaped too
	"$G" immtest -p "$PORT" --timeout 20 --link "shm:$CABLE,a,create" --ip 10.0.0.1 \
		> "$W/immtest.log" 2>&1 &
	spid=$!
	python3 - "$PORT" <<'PY'
import socket, sys, time
for _ in range(100):
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
        break
    except OSError:
        time.sleep(0.05)
s.sendall(b"IMMT \x1b[2J\n")
time.sleep(0.5)
PY
	wait $spid
	[ $? -eq 1 ] || fail "immtest took a garbage peer line"
	grep -qF "bad exchange 'IMMT \x1b[2J'" "$W/immtest.log" || fail "immtest: no escaped peer line"
	! grep -q "$(printf '\033')" "$W/immtest.log" || fail "immtest printed the peer's escape raw"
	;;
*)
	echo "unknown case $case_name"
	exit 2
	;;
esac
echo PASS
