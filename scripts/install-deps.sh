#!/usr/bin/env bash
# Install the Debian/Ubuntu packages gpunic needs. "build": compilers and libraries; "test": also
# the oracles the tests use (tshark, scapy), clang for the fuzzers and iproute2 for the raw
# Ethernet link tests (veth pairs in network namespaces); "report": gnuplot for plots. libxdp,
# libbpf and clang build the xdp link and its XDP program (optional: without them it is left out);
# help2man makes the man pages from each command's --help (optional: without it there are none);
# "test" also takes doxygen, whose API reference a test builds and wants free of warnings, and
# dpkg-dev and file, with which `cpack -G DEB` lists the package's library dependencies (the
# Debian package test builds, installs and removes one).
#
# A package counts as present when what gpunic uses from it is there (the tool on PATH, the
# header in the include path), whoever installed it: GPU servers often have cmake and ninja from
# elsewhere. Missing packages are installed when this runs as root with a reachable package
# registry; otherwise they are listed and the script still succeeds, because the build itself
# says what it cannot do without them (most are optional). It never fails the caller.
set -uo pipefail
what=${1:-build}
pkgs=(cmake ninja-build gcc make pkg-config libdeflate-dev zlib1g-dev libibverbs-dev libpcap-dev
	libxdp-dev libbpf-dev clang help2man)
case $what in
test) pkgs+=(libclang-rt-14-dev tshark python3-scapy gnuplot-nox iproute2 doxygen dpkg-dev file) ;;
report) pkgs+=(gnuplot-nox) ;;
esac

has_header() { [ -e "/usr/include/$1" ] || [ -e "/usr/local/include/$1" ]; }

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# present PKG: what gpunic needs from PKG is on this machine, or the package manager has it
present() {
	installed "$1" && return 0
	case $1 in
	cmake) command -v cmake >/dev/null ;;
	ninja-build) command -v ninja >/dev/null ;;
	gcc) command -v gcc >/dev/null || command -v cc >/dev/null ;;
	make) command -v make >/dev/null ;;
	pkg-config) command -v pkg-config >/dev/null ;;
	clang) command -v clang >/dev/null ;;
	libdeflate-dev) has_header libdeflate.h ;;
	zlib1g-dev) has_header zlib.h ;;
	libibverbs-dev) has_header infiniband/mlx5dv.h ;;
	libpcap-dev) has_header pcap/pcap.h ;;
	libxdp-dev) has_header xdp/xsk.h ;;
	libbpf-dev) has_header bpf/libbpf.h ;;
	tshark) command -v tshark >/dev/null ;;
	python3-scapy) /usr/bin/python3 -c 'import scapy' >/dev/null 2>&1 ;;
	gnuplot-nox) command -v gnuplot >/dev/null ;;
	iproute2) command -v ip >/dev/null ;;
	help2man) command -v help2man >/dev/null ;;
	doxygen) command -v doxygen >/dev/null ;;
	dpkg-dev) command -v dpkg-shlibdeps >/dev/null ;;
	file) command -v file >/dev/null ;;
	*) false ;;
	esac
}

# what is lost without an optional PKG, said when it is missing
without() {
	case $1 in
	help2man) echo "no man pages: the gpunic_man target needs help2man to turn --help into them" ;;
	doxygen) echo "no API reference: the docs target and its test need doxygen" ;;
	dpkg-dev | file) echo "no Debian package: cpack -G DEB needs dpkg-shlibdeps and file" ;;
	esac
}

missing=()
for p in "${pkgs[@]}"; do
	present "$p" && continue
	missing+=("$p")
	why=$(without "$p")
	[ -n "$why" ] && echo "install-deps: $p missing (optional): $why" >&2
done
[ ${#missing[@]} -eq 0 ] && exit 0
note="install-deps: not installed: ${missing[*]} (the build reports what it leaves out without them)"
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
	echo "$note; install them as root" >&2
	exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -qq; then
	echo "$note; no package registry could be reached" >&2
	exit 0
fi
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
	# one unknown package (another release's name) must not keep the others out
	for p in "${missing[@]}"; do
		apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 ||
			echo "install-deps: could not install $p" >&2
	done
fi
exit 0
