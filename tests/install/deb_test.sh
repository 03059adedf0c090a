#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/install: the Debian package `cpack -G DEB` makes of a build, installed on this machine as
# a user installs it (dpkg), then used: `gpunic --version` from /usr/bin, and examples/rc_write.c
# built with pkg-config against /usr and run. The package is removed again at the end.
#   deb_test.sh BUILD-DIR SOURCE-DIR WORK-DIR CC VERSION
# Exit: 0 pass, 1 fail, 77 skipped (not root, or no dpkg or cpack here: not a Debian-like CI
# machine).
set -euo pipefail
build=$1 src=$2 work=$3 cc=$4 version=$5
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "installing a package needs root"
for t in dpkg dpkg-deb cpack pkg-config dpkg-shlibdeps file; do
	# scripts/install-deps.sh test installs the last two (dpkg-dev, file) where it can
	command -v "$t" >/dev/null || skip "no $t here"
done
rm -rf "$work"
mkdir -p "$work"

echo "=== cpack -G DEB"
(cd "$build" && cpack -G DEB -B "$work/pkg") >"$work/cpack.log" 2>&1 ||
	{ cat "$work/cpack.log"; fail "cpack -G DEB"; }
deb=$(ls "$work/pkg"/gpunic_"$version"_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "no gpunic_${version}_*.deb made"
dpkg-deb -c "$deb" | awk '{print $6}' >"$work/contents"
for f in ./usr/bin/gpunic ./usr/include/gpunic/verbs.h ./usr/include/gpunic/gpunic_dev.h \
	./usr/include/gpunic/version.h; do
	grep -qx -- "$f" "$work/contents" || fail "the package lacks $f"
done
grep -q '/libgpunic\.so\.[0-9]' "$work/contents" || fail "the package lacks libgpunic.so.*"
grep -q '/pkgconfig/gpunic\.pc$' "$work/contents" || fail "the package lacks gpunic.pc"
grep -q '/cmake/gpunic/gpunicConfig\.cmake$' "$work/contents" || fail "no gpunicConfig.cmake"
# man pages where the build made them (help2man)
if ls "$build"/apps/gpunic/man/gpunic.1 >/dev/null 2>&1; then
	grep -qx './usr/share/man/man1/gpunic.1' "$work/contents" || fail "no gpunic.1"
fi

echo "=== dpkg -i $(basename "$deb")"
cleanup() { dpkg --purge gpunic >/dev/null 2>&1 || true; }
trap cleanup EXIT
dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i (its Depends?)"; }
dpkg -s gpunic | grep -q "^Status: install ok installed" || fail "dpkg does not list it installed"

echo "=== /usr/bin/gpunic --version"
# a fresh environment: nothing of the build tree on the loader's or pkg-config's paths
got=$(env -i PATH=/usr/bin:/bin /usr/bin/gpunic --version) || fail "/usr/bin/gpunic --version"
echo "$got"
case $got in "gpunic $version (commit "*) ;; *) fail "it says '$got'" ;; esac
env -i PATH=/usr/bin:/bin gpunic help >/dev/null || fail "gpunic help"

echo "=== examples/rc_write.c with pkg-config, against /usr"
flags=$(env -i PATH=/usr/bin:/bin pkg-config --cflags --libs gpunic) ||
	fail "pkg-config --cflags --libs gpunic on the system's files"
echo "pkg-config: $flags"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror "$src/examples/rc_write.c" $flags -o "$work/rc_write" ||
	fail "build examples/rc_write.c against the package"
env -i PATH=/usr/bin:/bin "$work/rc_write" || fail "examples/rc_write against the package"

echo "=== dpkg --purge gpunic"
dpkg --purge gpunic >"$work/remove.log" 2>&1 || { cat "$work/remove.log"; fail "dpkg --purge"; }
[ ! -e /usr/bin/gpunic ] || fail "/usr/bin/gpunic left behind"
trap - EXIT
echo "deb test passed"
