#!/usr/bin/env bash
# Install the Debian packages gpunic needs. "build": compilers and libraries; "test": also the
# oracles the tests use (tshark, scapy) and clang for the fuzzers; "report": gnuplot for plots.
# Does nothing for packages already present, and nothing at all when not root or without apt.
set -euo pipefail
what=${1:-build}
pkgs=(cmake ninja-build gcc make pkg-config libdeflate-dev zlib1g-dev libibverbs-dev libpcap-dev)
case $what in
test) pkgs+=(clang libclang-rt-14-dev tshark python3-scapy gnuplot-nox) ;;
report) pkgs+=(gnuplot-nox) ;;
esac
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
	echo "install-deps: missing packages (install them as root): ${missing[*]}" >&2
	exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
