#!/usr/bin/env bash
# GPU- against CPU-initiated `gpunic perf` on one machine: for each test, a server and a client
# process over a shared-memory cable; the client runs each executor, the server the CPU one
# (SERVER_EXEC to change). Two processes' kernels on one GPU do not run at the same time without
# MPS: the GPU switches between them every ~2 ms, so a ping-pong with a kernel on both sides
# measures that time slice, not gpunic. Prints perftest's result lines per test and executor.
# Usage: scripts/perf-compare.sh [GPUNIC] [EXECUTORS]
set -uo pipefail
GPUNIC=${1:-build/apps/gpunic/gpunic}
EXECS=${2:-gpu cpu}
ITERS_LAT=${ITERS_LAT:-2000}
ITERS_BW=${ITERS_BW:-2000}
SERVER_EXEC=${SERVER_EXEC:-cpu}
port=18600
for exec in $EXECS; do
	for t in send_lat write_lat read_lat send_bw write_bw read_bw put_bw; do
		port=$((port + 1))
		name=/gpunic-perf-$$-$port
		case $t in *_lat) n=$ITERS_LAT; s=32 ;; *) n=$ITERS_BW; s=65536 ;; esac
		common=(-n "$n" -s "$s" -p "$port" --timeout 30)
		"$GPUNIC" perf "$t" "${common[@]}" --executor "$SERVER_EXEC" \
			--link "shm:$name,a,create" --ip 10.0.0.1 >"/tmp/perf-srv-$port.txt" 2>&1 &
		srv=$!
		sleep 0.5
		echo "=== $t, client executor $exec (server $SERVER_EXEC), $s B, $n iterations"
		"$GPUNIC" perf "$t" 127.0.0.1 "${common[@]}" --executor "$exec" \
			--link "shm:$name,b" --ip 10.0.0.2 2>&1 |
			grep -E "^ *[0-9]|#bytes|verified|MISMATCH|rror"
		wait "$srv" || { echo "server failed:"; tail -n 5 "/tmp/perf-srv-$port.txt"; }
		grep -E "verified|MISMATCH" "/tmp/perf-srv-$port.txt"
	done
done
