#!/usr/bin/env bash
# run-gpunic-tap.sh: gpunic against Linux rxe over a real kernel Ethernet path. A network
# namespace this script creates (and removes) holds a tap device for the guest's wire NIC, a
# bridge, and a veth pair: tap -- bridge -- veth0 === veth1, gpunic on veth1 with its packet link
# (AF_PACKET) and, where it opens here, its xdp link (AF_XDP). The host's own namespace is never
# touched: QEMU, gpunic and the out-of-band relays all run inside the new one. The rows are
# tap-steps.txt, run by run-gpunic-interop.sh --tap (same report, same pass criteria).
#
#   tests/interop/run-gpunic-tap.sh [-o OUTDIR] [--gpunic PATH]
#
# Exit status: 0 every row passed, 1 a failure, 77 skipped with the reason (not root, no
# /dev/net/tun, no network namespaces, no QEMU or guest image).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

OUT="" GPUNIC=${GPUNIC_BIN:-}
while [ $# -gt 0 ]; do
	case $1 in
	-o) OUT=$2; shift ;;
	--gpunic) GPUNIC=$2; shift ;;
	-h | --help) sed -n '2,12p' "$0"; exit 0 ;;
	*) echo "run-gpunic-tap: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
OUT=${OUT:-$GN_CACHE/runs/gpunic-tap-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
skip() { echo "run-gpunic-tap: SKIP ($*)"; exit 77; }

[ "$(id -u)" = 0 ] || skip "not root: a tap device and a network namespace need root"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
command -v ip >/dev/null || skip "no ip (iproute2)"
command -v qemu-system-x86_64 >/dev/null || skip "no qemu-system-x86_64"
[ -n "$GPUNIC" ] && [ -x "$GPUNIC" ] || { echo "run-gpunic-tap: FAIL: give --gpunic"; exit 1; }
# the image (and the apt look-ups behind its cache key) here, where the network is
"$here/build-guest.sh" -q >/dev/null
rc=$?
[ $rc = 77 ] && skip "guest image cannot be built here"
[ $rc != 0 ] && { echo "run-gpunic-tap: FAIL: build-guest.sh exited $rc"; exit 1; }

NS=gpunic-tap-$$
ip netns add "$NS" 2>"$OUT/netns.log" || skip "no network namespaces: $(cat "$OUT/netns.log")"
trap 'ip netns del "$NS" 2>/dev/null' EXIT
trap 'exit 130' INT TERM
nsip() { ip -n "$NS" "$@"; }
{
	nsip link set lo up &&
	# no IPv6 chatter (router solicitations, MLD) on the wire: the rows count RoCE only
	ip netns exec "$NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1 &&
	nsip tuntap add dev gntap0 mode tap &&
	nsip link add gnbr0 type bridge stp_state 0 forward_delay 0 &&
	nsip link add gnveth0 type veth peer name gnveth1 &&
	nsip link set gntap0 master gnbr0 &&
	nsip link set gnveth0 master gnbr0 &&
	nsip link set gntap0 up && nsip link set gnveth0 up && nsip link set gnveth1 up &&
	nsip link set gnbr0 up
} >"$OUT/netns.log" 2>&1 ||
	skip "cannot build the tap, bridge and veth: $(tail -1 "$OUT/netns.log")"

# gpunic has 10.0.0.2 and the MAC the suite gives every tool; the namespace's kernel owns no
# address there, so only gpunic answers for it (ARP included)
spec=",ip=10.0.0.2,mac=52:54:00:00:00:02"
links=(--link "packet:gnveth1$spec")
steps=$here/tap-steps.txt
if "$GPUNIC" doctor 2>/dev/null | grep -A1 'xdp link: AF_XDP, native' | grep -q 'works'; then
	links+=(--link "xdp=xdp:gnveth1$spec")
else
	# the rows stay in the list of what was not run, with the reason
	echo "run-gpunic-tap: the xdp link does not open here (gpunic doctor); its rows are left out"
	grep -v '| *@xdp ' "$steps" >"$OUT/tap-steps.txt"
	steps=$OUT/tap-steps.txt
fi
GPUNIC_INTEROP_GPUNIC_STEPS=$steps ip netns exec "$NS" \
	"$here/run-gpunic-interop.sh" -o "$OUT" --gpunic "$GPUNIC" --tap gntap0 "${links[@]}"
rc=$?
# every row ran on the link it names (the first line of each log is the gpunic command)
for f in "$OUT"/[0-9][0-9]-*.gpunic.log; do
	want=packet
	case $f in *-xdp_*) want=xdp ;; esac
	head -1 "$f" | grep -q -- "--link $want:gnveth1" ||
		{ echo "run-gpunic-tap: FAIL: $(basename "$f") did not run on the $want link"; rc=1; }
done
exit $rc
