#!/usr/bin/env bash
# The .deb files a machine without a package registry builds gpunic from (the GPU machine:
# Ubuntu 24.04, zlib's runtime but no headers, no libdeflate, no rdma-core headers).
#
#   bash scripts/fetch-debs.sh [DIR]
#       On Debian 12 (this CI machine): download, never install, the packages into DIR (default
#       .debs, git-ignored; it travels to the GPU machine beside the tree): libdeflate-dev and
#       libdeflate0 (libdeflate.h and the static libdeflate.a the ICRC links), libibverbs-dev
#       (infiniband/mlx5dv.h) and zlib1g-dev (zlib.h, the ICRC's fallback); for the xdp link
#       libxdp-dev, libbpf-dev and libelf-dev (headers, link names) with their runtimes libxdp1,
#       libbpf1 and libelf1 (Debian 12's libelf needs only zlib; libxdp1 also has libxdp's BPF
#       objects, which gpunic does not use). Older versions of
#       the same packages in DIR are replaced. Then, as --bpf-object does, the xdp link's XDP
#       program, which the GPU machine (no clang) cannot build.
#
#   bash scripts/fetch-debs.sh --bpf-object [DIR]
#       Only (re)build DIR/xdp_roce.bpf.o from src/link/xdp_roce.bpf.c with clang and the flags of
#       src/link/CMakeLists.txt, against libbpf-dev's headers from DIR (else the system's), and
#       record the source's SHA-256 in DIR/xdp_roce.bpf.o.src-sha256: the build checks it and
#       warns when the source has changed since (cmake/gpunic_bpf_stale.cmake).
#
#   bash scripts/fetch-debs.sh --cmake-args [DIR]
#       On the machine that builds (scripts/gpu-suite.sh, scripts/device-run.sh): when a header
#       the build needs is not on the system and DIR holds .deb files, unpack them into DIR/root
#       and print the CMake arguments that point the configure step there, one per line (nothing
#       when the system has everything). FETCH_DEBS_FORCE=1 uses the .debs even then, which is
#       how the unpacked tree is tried on a machine that has the packages. The xdp link, where
#       the system has no xdp/xsk.h or bpf/bpf_helpers.h: libxdp, libbpf and libelf from
#       DIR/root, shared (Debian's .a files are not position-independent: they cannot go into
#       libgpunic.so), which the binaries load from DIR/root through the RUNPATH CMake gives
#       them, so DIR/root must stay where it was unpacked. libxdp's BPF objects (its dispatcher)
#       are not needed: the link attaches its own program with libbpf and asks libxdp for none.
#       And GPUNIC_XDP_BPF_OBJECT=DIR/xdp_roce.bpf.o where there is no clang (or with
#       FETCH_DEBS_FORCE=1).
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(libdeflate-dev libdeflate0 libibverbs-dev zlib1g-dev
	libxdp-dev libxdp1 libbpf-dev libbpf1 libelf-dev libelf1)
BPF_SRC=src/link/xdp_roce.bpf.c
BPF_OBJ=xdp_roce.bpf.o
# what cmake/gpunic_deps.cmake looks for
CLANGS=(clang clang-16 clang-15 clang-14)

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
	bpf_object "$dest" || echo "fetch-debs: the .debs are there; the xdp link will need clang" \
		"where it is built" >&2
}

find_clang() {
	local c
	for c in "${CLANGS[@]}"; do
		command -v "$c" && return 0
	done
	return 1
}

# bpf_object DIR: DIR/xdp_roce.bpf.o as src/link/CMakeLists.txt builds it, and its source's hash
bpf_object() {
	local dest=$1 clang arch inc deb x
	clang=$(find_clang) || {
		echo "fetch-debs: no clang (${CLANGS[*]}): no $dest/$BPF_OBJ (apt-get install clang)" >&2
		return 1
	}
	mkdir -p "$dest"
	x=$(mktemp -d)
	inc=
	deb=$(find "$dest" -maxdepth 1 -name 'libbpf-dev_*.deb' 2>/dev/null | head -n 1)
	if [ -n "$deb" ]; then
		# the headers the GPU machine builds with, not whatever this one has
		dpkg -x "$deb" "$x"
		inc=$x/usr/include
	elif echo '#include <bpf/bpf_helpers.h>' | cc -E -x c - >/dev/null 2>&1; then
		inc=/usr/include
	else
		echo "fetch-debs: no libbpf-dev in $dest nor bpf/bpf_helpers.h here" >&2
		rm -rf "$x"
		return 1
	fi
	arch=$(cc -print-multiarch 2>/dev/null || true)
	# the flags of src/link/CMakeLists.txt's rule: keep the two in step
	if ! "$clang" -O2 -g -target bpf -Wall -Werror ${arch:+-I/usr/include/$arch} -I"$inc" \
		-c "$BPF_SRC" -o "$x/$BPF_OBJ"; then
		echo "fetch-debs: $clang failed on $BPF_SRC" >&2
		rm -rf "$x"
		return 1
	fi
	mv -f "$x/$BPF_OBJ" "$dest/$BPF_OBJ"
	{
		sha256sum "$BPF_SRC"
		echo "# $("$clang" --version | head -n 1); headers from ${deb:-$inc}"
	} >"$dest/$BPF_OBJ.src-sha256"
	rm -rf "$x"
	echo "fetch-debs: $dest/$BPF_OBJ built from $BPF_SRC by $clang"
}

have_header() { echo "#include <$1>" | cc -E -x c - >/dev/null 2>&1; }

cmake_args() {
	local debs=$1 root stamp newer lib zlib d l xdp bpf elf
	local need_mlx5=0 need_deflate=0 need_zlib=0 need_xdp=0 need_obj=0
	have_header infiniband/mlx5dv.h || need_mlx5=1
	have_header libdeflate.h || need_deflate=1
	have_header zlib.h || need_zlib=1
	{ have_header xdp/xsk.h && have_header bpf/bpf_helpers.h; } || need_xdp=1
	find_clang >/dev/null || need_obj=1
	if [ "${FETCH_DEBS_FORCE:-0}" = 1 ]; then
		need_mlx5=1
		need_deflate=1
		need_xdp=1
		need_obj=1
	fi
	# the prebuilt XDP program stands apart from the .debs: no clang here, take it
	if [ $need_obj = 1 ] && [ -e "$debs/$BPF_OBJ" ]; then
		echo "-DGPUNIC_XDP_BPF_OBJECT=$(cd "$debs" && pwd)/$BPF_OBJ"
	elif [ $need_obj = 1 ] && ! find_clang >/dev/null; then
		echo "fetch-debs: no clang and no $debs/$BPF_OBJ: the xdp link will not be built" \
			"(bash scripts/fetch-debs.sh on a machine with clang makes it)" >&2
	fi
	[ $((need_mlx5 + need_deflate + need_zlib + need_xdp)) -eq 0 ] && return 0
	if ! ls "$debs"/*.deb >/dev/null 2>&1; then
		echo "fetch-debs: headers missing (mlx5dv.h $need_mlx5, libdeflate.h" \
			"$need_deflate, zlib.h $need_zlib, xdp/xsk.h or bpf/bpf_helpers.h $need_xdp)" \
			"and no .deb files in $debs (bash scripts/fetch-debs.sh on a Debian 12 machine" \
			"makes them); the configure step will say what it lacks" >&2
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
	if [ $need_xdp = 1 ]; then
		# shared (the .a files are not PIC), loaded from here through the binaries' RUNPATH;
		# libelf given too, so that libbpf's libelf.so.1 is this one (cmake/gpunic_deps.cmake)
		l=$(dirname "$(find "$root/usr/lib" -name libbpf.so 2>/dev/null | head -n 1)")
		xdp=$l/libxdp.so bpf=$l/libbpf.so elf=$l/libelf.so
		if [ -e "$xdp" ] && [ -e "$bpf" ] && [ -e "$elf" ] &&
			[ -e "$root/usr/include/xdp/xsk.h" ] && [ -e "$root/usr/include/bpf/bpf_helpers.h" ]; then
			echo "-DGPUNIC_XDP_INCLUDE=$root/usr/include"
			echo "-DGPUNIC_BPF_INCLUDE=$root/usr/include"
			echo "-DGPUNIC_XDP_LIBRARY=$xdp"
			echo "-DGPUNIC_BPF_LIBRARY=$bpf"
			echo "-DGPUNIC_ELF_LIBRARY=$elf"
		else
			echo "fetch-debs: no libxdp-dev, libbpf-dev and libelf-dev in $debs: the xdp" \
				"link will not be built (bash scripts/fetch-debs.sh on Debian 12 adds them)" >&2
		fi
	fi
}

case "${1:-}" in
--cmake-args) cmake_args "${2:-.debs}" ;;
--bpf-object) bpf_object "${2:-.debs}" ;;
*) fetch "${1:-.debs}" ;;
esac
