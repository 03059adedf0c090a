#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/install: `cmake --install` of a build into a fresh prefix (the CLI must run from there),
# then consumers of it (pkg-config with no other .pc file visible, built and run; CMake's
# find_package), and a project that builds gpunic itself through add_subdirectory.
#   install_test.sh --build DIR --source DIR --work DIR --cc CC --generator GEN --shared ON|OFF
#                   --cuda ON|OFF [--flags "CFLAGS"]
# Fails on: a missing or extra installed file (internal headers), a library without its
# SONAME, a header that does not compile on its own, a consumer that does not build or run.
set -euo pipefail
flags=""
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2 ;;
	--source) src=$2 ;;
	--work) work=$2 ;;
	--cc) cc=$2 ;;
	--generator) gen=$2 ;;
	--shared) shared=$2 ;;
	--cuda) cuda=$2 ;;
	--flags) flags=$2 ;;
	*) echo "install_test: unknown argument $1" >&2; exit 2 ;;
	esac
	shift 2
done
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
echo "=== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "install"; }
find "$prefix" | sort | sed "s|^$prefix|  |"

pc=$(find "$prefix" -name gpunic.pc)
[ -n "$pc" ] || fail "no gpunic.pc installed"
libdir=$(cd "$(dirname "$pc")/.." && pwd)
[ -e "$(dirname "$libdir")/include/gpunic/verbs.h" ] || fail "verbs.h not installed"
for h in gpu.h gpu_perf.h loop_dev.h perf_dev.h mem_sanity.h; do
	[ ! -e "$prefix/include/gpunic/$h" ] || fail "internal header $h installed"
done
[ -n "$(find "$libdir/cmake/gpunic" -name gpunicConfig.cmake)" ] || fail "no gpunicConfig.cmake"
[ -e "$libdir/cmake/gpunic/gpunicConfigVersion.cmake" ] || fail "no gpunicConfigVersion.cmake"
if [ "$shared" = ON ]; then
	soname=$(readelf -d "$libdir/libgpunic.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
	echo "SONAME $soname"
	case $soname in libgpunic.so.[0-9]*) ;; *) fail "libgpunic.so has SONAME '$soname'" ;; esac
	[ -e "$libdir/$soname" ] || fail "$soname not installed"
else
	[ -e "$libdir/libgpunic.a" ] || fail "libgpunic.a not installed"
fi

# The CLI beside the library, and it runs from there with nothing of the build on its paths.
[ -x "$prefix/bin/gpunic" ] || fail "the gpunic CLI is not installed in $prefix/bin"
env -i PATH=/usr/bin:/bin "$prefix/bin/gpunic" --version ||
	fail "the installed gpunic does not run (its run path to the installed library?)"

# pkg-config: the installed file alone, no other module visible (a consumer may have no
# rdma-core .pc files): gpunic.pc must need none, and must not pull libnl's include path.
pc() { PKG_CONFIG_LIBDIR=$libdir/pkgconfig PKG_CONFIG_PATH= pkg-config "$@"; }
static=""
[ "$shared" = ON ] || static=--static
cflags=$(pc --cflags gpunic) || fail "pkg-config --cflags gpunic: $(pc --cflags gpunic 2>&1)"
# shellcheck disable=SC2086
libs=$(pc $static --libs gpunic) || fail "pkg-config --libs gpunic"
echo "pkg-config: cflags '$cflags' libs '$libs'"
case "$cflags $libs" in *libnl*|*ibverbs*) fail "gpunic.pc pulls rdma-core's own flags" ;; esac
# the run path as README.md says a consumer of an install outside the loader's paths sets it
rpath=-Wl,-rpath,$(pc --variable=libdir gpunic)
# shellcheck disable=SC2086
for h in "$prefix"/include/gpunic/*.h; do
	echo "#include <gpunic/$(basename "$h")>" |
		"$cc" -std=c11 -Wall -Wextra -Werror $flags $cflags -x c -c - -o /dev/null ||
		fail "<gpunic/$(basename "$h")> does not compile on its own"
done
echo "=== pkg-config consumers"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror $flags "$src/tests/install/version_check.c" $cflags $libs \
	"$rpath" -o "$work/version_check"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror $flags "$src/examples/rc_write.c" $cflags $libs \
	"$rpath" -o "$work/rc_write"
# run, not only built: in a fresh environment (nothing on LD_LIBRARY_PATH)
env -i PATH=/usr/bin:/bin "$work/version_check" || fail "the pkg-config consumer does not start"
env -i PATH=/usr/bin:/bin "$work/rc_write" || fail "examples/rc_write (pkg-config) failed"

echo "=== find_package consumer: examples/ as a project of its own"
cuda_arg=()
[ "$cuda" = ON ] || cuda_arg=(-DGPUNIC_EXAMPLES_CUDA=OFF)
cmake -S "$src/examples" -B "$work/examples" -G "$gen" -DCMAKE_PREFIX_PATH="$prefix" \
	-DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
	"${cuda_arg[@]}" >"$work/examples-configure.log" ||
	{ cat "$work/examples-configure.log"; fail "configure examples/ against the install"; }
grep -q "gpunic_DIR:PATH=$libdir/cmake/gpunic" "$work/examples/CMakeCache.txt" ||
	fail "examples/ found a gpunic other than the one installed"
cmake --build "$work/examples" || fail "build examples/ against the install"
ctest --test-dir "$work/examples" --output-on-failure || fail "examples/ built against the install"
echo "=== add_subdirectory consumer: gpunic built inside another project"
cmake -S "$src/tests/install/subdir" -B "$work/subdir" -G "$gen" -DGPUNIC_SOURCE_DIR="$src" \
	-DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
	-DCMAKE_SHARED_LINKER_FLAGS="$flags" -DGPUNIC_CUDA=OFF >"$work/subdir-configure.log" ||
	{ cat "$work/subdir-configure.log"; fail "configure a project that adds gpunic"; }
cmake --build "$work/subdir" >"$work/subdir-build.log" ||
	{ tail -40 "$work/subdir-build.log"; fail "build a project that adds gpunic"; }
"$work/subdir/version_check"
echo "install test passed"
