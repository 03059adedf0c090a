#!/usr/bin/env bash
# The .deb files a machine without a package registry builds gpunic from (the GPU machine:
# Ubuntu 24.04, zlib's runtime but no headers, no libdeflate, no rdma-core headers).
#
#   bash scripts/fetch-debs.sh [DIR]
#       On Debian 12 (this CI machine): download, never install, the packages into DIR (default
#       .debs, git-ignored; it travels to the GPU machine beside the tree): libdeflate-dev and
#       libdeflate0 (libdeflate.h and the static libdeflate.a the ICRC links), libibverbs-dev
#       (infiniband/mlx5dv.h) and zlib1g-dev (zlib.h, the ICRC's fallback). Older versions of
#       the same packages in DIR are replaced.
#
#   bash scripts/fetch-debs.sh --cmake-args [DIR]
#       On the machine that builds (scripts/gpu-suite.sh, scripts/device-run.sh): when a header
#       the build needs is not on the system and DIR holds .deb files, unpack them into DIR/root
#       and print the CMake arguments that point the configure step there, one per line (nothing
#       when the system has everything). FETCH_DEBS_FORCE=1 uses the .debs even then, which is
#       how the unpacked tree is tried on a machine that has the packages.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(libdeflate-dev libdeflate0 libibverbs-dev zlib1g-dev)

tmp=
trap '[ -z "$tmp" ] || rm -rf "$tmp"' EXIT

fetch() {
	local dest=$1 p
	command -v apt-get >/dev/null || { echo "fetch-debs: apt-get not found" >&2; exit 1; }
	tmp=$(mktemp -d)
	# apt drops root for downloads; its user must be able to write there.
	if [ "$(id -u)" = 0 ] && id _apt >/dev/null 2>&1; then
		chown _apt "$tmp"
	fi
	(cd "$tmp" && apt-get download "${PKGS[@]}")
	mkdir -p "$dest"
	for p in "${PKGS[@]}"; do
		rm -f "$dest/${p}_"*.deb
	done
	cp "$tmp"/*.deb "$dest/"
	echo "fetch-debs: in $dest:"
	ls -l "$dest"/*.deb
}

have_header() { echo "#include <$1>" | cc -E -x c - >/dev/null 2>&1; }

cmake_args() {
	local debs=$1 root stamp newer lib zlib d
	local need_mlx5=0 need_deflate=0 need_zlib=0
	have_header infiniband/mlx5dv.h || need_mlx5=1
	have_header libdeflate.h || need_deflate=1
	have_header zlib.h || need_zlib=1
	if [ "${FETCH_DEBS_FORCE:-0}" = 1 ]; then
		need_mlx5=1
		need_deflate=1
	fi
	[ $((need_mlx5 + need_deflate + need_zlib)) -eq 0 ] && return 0
	if ! ls "$debs"/*.deb >/dev/null 2>&1; then
		echo "fetch-debs: headers missing (mlx5dv.h $need_mlx5, libdeflate.h" \
			"$need_deflate, zlib.h $need_zlib) and no .deb files in $debs" \
			"(bash scripts/fetch-debs.sh on a Debian 12 machine makes them);" \
			"the configure step will say what it lacks" >&2
		return 0
	fi
	# Unpacked once, again when a .deb is newer than the last unpack.
	root=$(cd "$debs" && pwd)/root
	stamp=$root/.unpacked
	newer=$(find "$debs" -maxdepth 1 -name '*.deb' -newer "$stamp" 2>/dev/null || true)
	if [ ! -e "$stamp" ] || [ -n "$newer" ]; then
		rm -rf "$root"
		if ! mkdir -p "$root" 2>/dev/null; then
			root=$(mktemp -d) # a read-only DIR: unpack elsewhere, every time
			stamp=$root/.unpacked
		fi
		for d in "$debs"/*.deb; do
			echo "fetch-debs: unpacking $d into $root" >&2
			dpkg -x "$d" "$root"
		done
		touch "$stamp"
	fi
	echo "-DCMAKE_PREFIX_PATH=$root/usr"
	if [ $need_mlx5 = 1 ] && [ -e "$root/usr/include/infiniband/mlx5dv.h" ]; then
		echo "-DGPUNIC_MLX5DV_INCLUDE=$root/usr/include"
	fi
	lib=$(find "$root/usr/lib" -name libdeflate.a 2>/dev/null | head -n 1)
	if [ $need_deflate = 1 ] && [ -e "$root/usr/include/libdeflate.h" ] && [ -n "$lib" ]; then
		# the static library: the machine has no libdeflate runtime to load
		echo "-DGPUNIC_LIBDEFLATE_INCLUDE=$root/usr/include"
		echo "-DGPUNIC_LIBDEFLATE_LIBRARY=$lib"
	fi
	if [ $need_zlib = 1 ] && [ -e "$root/usr/include/zlib.h" ]; then
		# the runtime library is there; only its header and link name are missing
		for zlib in /usr/lib/x86_64-linux-gnu/libz.so.1 /lib/x86_64-linux-gnu/libz.so.1; do
			[ -e "$zlib" ] && break
		done
		echo "-DZLIB_INCLUDE_DIR=$root/usr/include"
		echo "-DZLIB_LIBRARY=$zlib"
	fi
}

if [ "${1:-}" = --cmake-args ]; then
	cmake_args "${2:-.debs}"
else
	fetch "${1:-.debs}"
fi
