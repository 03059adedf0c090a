#!/usr/bin/env bash
# build-guest.sh: build (or find in the cache) the interop guest: Debian's own kernel plus an
# initramfs with busybox, the rdma_rxe/e1000/crc32 modules, rdma-core's ibv_* tools, perftest, the
# rxe provider, and /init (guest/init) with its helpers (guest/gn.sh).
#
#   tests/interop/build-guest.sh [-q] [--force]
#
# Prints the guest directory as the last line of stdout: vmlinuz (and vmlinux, its uncompressed
# ELF, which boots faster), kernel (the name of the one to boot), base.cpio (padded, so that
# further cpio archives can be appended; see lib.sh gn_initrd), versions.txt, manifest.txt.
# Cache: $GPUNIC_INTEROP_CACHE (default <repo>/build-interop), one guest-<kernel>-<key> directory
# per key; the key hashes the versions of every package copied in and this script's own files,
# so a second run with nothing changed only looks up versions (a fraction of a second).
# GPUNIC_INTEROP_APT_UPDATE=1 forces "apt-get update" first (otherwise it runs only when needed).
# Exit status: 0 ok, 77 cannot build here (not root and packages missing, apt or download failed),
# 1 build error.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
CACHE=${GPUNIC_INTEROP_CACHE:-$repo/build-interop}
quiet=0 force=0
for a in "$@"; do
	case $a in
	-q) quiet=1 ;;
	--force) force=1 ;;
	-h | --help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "build-guest: unknown argument $a" >&2; exit 2 ;;
	esac
done
log() { [ $quiet = 1 ] || echo "build-guest: $*" >&2; }
skip() { echo "build-guest: SKIP: $*" >&2; exit 77; }

# Host packages: the guest's userland is copied from them; qemu and cpio run here.
PKGS=(qemu-system-x86 busybox-static kmod cpio iproute2 ibverbs-utils ibverbs-providers rdma-core
	perftest libibverbs-dev)
# Packages whose files land in the image: their versions make the cache key.
KEY_PKGS=(busybox-static ibverbs-utils ibverbs-providers libibverbs1 librdmacm1 perftest iproute2
	libc6 kmod)

export DEBIAN_FRONTEND=noninteractive
updated=0
apt_update() {
	[ $updated = 1 ] && return 0
	log "apt-get update"
	apt-get update -qq >/dev/null 2>&1 || log "apt-get update failed (offline?)"
	updated=1
}
[ "${GPUNIC_INTEROP_APT_UPDATE:-0}" = 1 ] && apt_update

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${PKGS[@]}"; do installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		skip "missing packages (install them as root): ${missing[*]}"
	fi
	apt_update
	log "installing ${missing[*]}"
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
		skip "apt-get install ${missing[*]} failed"
fi

# The kernel: whatever linux-image-amd64 depends on now (its revision moves with Debian).
resolve_kernel() {
	KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
	KVER=""
	[ -n "$KPKG" ] && KVER=$(apt-cache policy "$KPKG" 2>/dev/null | awk '$1 == "Candidate:" { print $2 }')
	[ -n "$KPKG" ] && [ -n "$KVER" ] && [ "$KVER" != "(none)" ]
}
# apt-cache takes about a second per call here, so the answer is kept beside the cache and reused
# while apt's package lists are unchanged.
lists_sig() { stat -c '%n %s %Y' /var/lib/apt/lists/*_Packages* 2>/dev/null | sha256sum | cut -c1-16; }
resolved=$CACHE/kernel-resolved
if [ -f "$resolved" ] && [ "$(sed -n 1p "$resolved")" = "$(lists_sig)" ] && [ $updated = 0 ]; then
	KPKG=$(sed -n 2p "$resolved") KVER=$(sed -n 3p "$resolved")
elif resolve_kernel || { apt_update; resolve_kernel; }; then
	mkdir -p "$CACHE"
	printf '%s\n%s\n%s\n' "$(lists_sig)" "$KPKG" "$KVER" >"$resolved"
elif [ -f "$CACHE/current/ok" ]; then
	log "cannot resolve linux-image-amd64; using the cached guest"
	(cd "$CACHE/current" && pwd -P)
	exit 0
else
	skip "cannot resolve the kernel package behind linux-image-amd64"
fi
KV=${KPKG#linux-image-}

versions() {
	echo "$KPKG $KVER"
	for p in "${KEY_PKGS[@]}"; do echo "$p $(dpkg-query -W -f='${Version}' "$p" 2>/dev/null)"; done
}
KEY=$({ versions; cat "$0" "$here/guest/init" "$here/guest/gn.sh"; } | sha256sum | cut -c1-12)
DIR=$CACHE/guest-$KV-$KEY

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock -w 900 9 || { echo "build-guest: cache lock busy" >&2; exit 1; }
if [ $force = 0 ] && [ -f "$DIR/ok" ]; then
	ln -sfn "$(basename "$DIR")" "$CACHE/current"
	log "cached: $DIR"
	echo "$DIR"
	exit 0
fi

t0=$(date +%s)
rm -rf "$CACHE"/tmp.* # left by a build that was killed (we hold the lock: nobody else builds)
mkdir -p "$CACHE/deb"
deb=$(ls "$CACHE/deb/${KPKG}_${KVER}_"*.deb 2>/dev/null | head -n 1 || true)
if [ -z "$deb" ]; then
	log "downloading $KPKG=$KVER"
	# apt-get download writes into the current directory; as root it warns that _apt cannot.
	(cd "$CACHE/deb" && apt-get download "$KPKG=$KVER" >/dev/null 2>&1) ||
		{ apt_update; (cd "$CACHE/deb" && apt-get download "$KPKG=$KVER" >/dev/null 2>&1); } ||
		skip "apt-get download $KPKG=$KVER failed"
	deb=$(ls "$CACHE/deb/${KPKG}_${KVER}_"*.deb | head -n 1)
fi

tmp=$(mktemp -d "$CACHE/tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log "extracting $(basename "$deb")"
dpkg-deb -x "$deb" "$tmp/k"
depmod -b "$tmp/k" "$KV"

R=$tmp/root
mkdir -p "$R"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,etc/libibverbs.d,lib/modules/"$KV"}
# Modules and their dependencies, as modprobe resolves them on the unpacked package.
for m in e1000 crc32_generic ib_uverbs rdma_rxe; do
	modprobe -d "$tmp/k" -S "$KV" --show-depends "$m" | awk '$1 == "insmod" { print $2 }' |
		while read -r f; do
			d=$R${f#"$tmp/k"}
			mkdir -p "$(dirname "$d")"
			cp "$f" "$d"
		done
done
for f in modules.order modules.builtin modules.builtin.modinfo; do
	cp "$tmp/k/lib/modules/$KV/$f" "$R/lib/modules/$KV/" 2>/dev/null || true
done
depmod -b "$R" "$KV"

cp /bin/busybox "$R/bin/busybox"
for a in $(/bin/busybox --list); do
	[ -e "$R/bin/$a" ] || ln -s busybox "$R/bin/$a"
done
ln -sf ../bin/busybox "$R/sbin/modprobe" # the kernel's request_module() helper

# Userland: ibverbs-utils, perftest, rdma (iproute2), the rxe provider, and every library they
# load (ldd gives the full closure; the provider is dlopen()ed, so it is listed on its own).
bins=(/usr/bin/rdma)
mapfile -t -O 1 bins < <(dpkg -L ibverbs-utils perftest | grep -E '^/usr/bin/[^/]+$' | sort -u)
prov=$(ls /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so | head -n 1)
copy_path() { mkdir -p "$R$(dirname "$1")"; cp -Ln "$1" "$R$1"; }
for b in "${bins[@]}" "$prov"; do
	[ -e "$b" ] || continue
	copy_path "$b"
	{ ldd "$b" 2>/dev/null || true; } | awk '/=>/ && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
		while read -r l; do copy_path "$l"; done
done
cp /etc/libibverbs.d/rxe.driver "$R/etc/libibverbs.d/"
echo "root:x:0:0:root:/:/bin/sh" >"$R/etc/passwd"
echo "127.0.0.1 localhost" >"$R/etc/hosts"
install -m 0755 "$here/guest/init" "$R/init"
install -m 0644 "$here/guest/gn.sh" "$R/lib/gn.sh"

out=$tmp/out
mkdir -p "$out"
# Uncompressed: gunzip in a TCG guest costs more than copying 13 MB. Padded to 512 bytes with
# zeros: the kernel skips zeros between archives, and an archive appended after this one then
# starts on the 4-byte boundary that the cpio unpacker needs.
(cd "$R" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$out/base.cpio"
size=$(stat -c %s "$out/base.cpio")
head -c $(((512 - size % 512) % 512)) /dev/zero >>"$out/base.cpio"
cp "$tmp/k/boot/vmlinuz-$KV" "$out/vmlinuz"
# The bzImage's own decompressor runs for 10-20 s under a loaded TCG; QEMU can instead boot the
# uncompressed ELF through its PVH entry point (CONFIG_PVH, Xen ELF note 18) in a second or two.
/usr/bin/python3 - "$out/vmlinuz" "$out/vmlinux" <<'EOP' && kernel=vmlinux || kernel=vmlinuz
import lzma, struct, sys, zlib
img = open(sys.argv[1], "rb").read()
elf = None
for magic, unpack in ((b"\xfd7zXZ\x00", lambda b: lzma.LZMADecompressor().decompress(b)),
                      (b"\x1f\x8b\x08\x00", lambda b: zlib.decompressobj(31).decompress(b))):
    i = img.find(magic)
    if i >= 0:
        try:
            elf = unpack(img[i:])
            break
        except Exception:
            pass
if not elf or elf[:4] != b"\x7fELF":
    sys.exit("no compressed ELF found in the bzImage")
phoff, = struct.unpack_from("<Q", elf, 0x20)
phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
pvh = False
for k in range(phnum):
    ptype, _, off, _, _, filesz = struct.unpack_from("<IIQQQQ", elf, phoff + k * phentsize)
    if ptype != 4:  # PT_NOTE
        continue
    p, end = off, off + filesz
    while p + 12 <= end:
        namesz, descsz, ntype = struct.unpack_from("<III", elf, p)
        name = elf[p + 12:p + 12 + namesz].rstrip(b"\0")
        pvh |= name == b"Xen" and ntype == 18  # XEN_ELFNOTE_PHYS32_ENTRY
        p += 12 + (namesz + 3 & ~3) + (descsz + 3 & ~3)
if not pvh:
    sys.exit("the kernel has no PVH entry point")
open(sys.argv[2], "wb").write(elf)
EOP
echo "$kernel" >"$out/kernel"
{
	versions
	echo "# boot: $kernel; image: $(du -sk "$R" | cut -f1) KiB, $(stat -c %s "$out/base.cpio") bytes"
} >"$out/versions.txt"
(cd "$R" && find . -type f -o -type l | LC_ALL=C sort) >"$out/manifest.txt"
echo "$KEY" >"$out/key"
touch "$out/ok"
rm -rf "$DIR"
mv "$out" "$DIR"
ln -sfn "$(basename "$DIR")" "$CACHE/current"
# Older images are dead weight: a run copies its image into its own initrd before booting.
for d in "$CACHE"/guest-*; do
	[ "$d" = "$DIR" ] || rm -rf "$d"
done
log "built $DIR in $(($(date +%s) - t0)) s"
echo "$DIR"
