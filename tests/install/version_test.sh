#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `gpunic --version` and `gpunic version`: the same one line, "gpunic VERSION (commit C)", with
# the project's version, and a commit that is a git description (not "unknown") when the source
# is a git checkout of gpunic.
#   version_test.sh GPUNIC SOURCE_DIR PROJECT_VERSION
set -euo pipefail
cli=$1 src=$2 want=$3
fail() { echo "FAIL: $*" >&2; exit 1; }

a=$("$cli" --version) || fail "gpunic --version exited $?"
b=$("$cli" version) || fail "gpunic version exited $?"
echo "$a"
[ "$a" = "$b" ] || fail "'gpunic version' says '$b'"
re='^gpunic ([0-9]+\.[0-9]+\.[0-9]+) \(commit ([A-Za-z0-9._+-]+)\)$'
[[ $a =~ $re ]] || fail "not of the form 'gpunic X.Y.Z (commit C)'"
[ "${BASH_REMATCH[1]}" = "$want" ] || fail "version ${BASH_REMATCH[1]}, the project's is $want"
commit=${BASH_REMATCH[2]}
top=$(git -C "$src" rev-parse --show-toplevel 2>/dev/null || true)
if [ -n "$top" ] && [ "$(cd "$top" && pwd -P)" = "$(cd "$src" && pwd -P)" ]; then
	[ "$commit" != unknown ] || fail "a git checkout, yet the commit is unknown"
	head=$(git -C "$src" rev-parse HEAD)
	# The build may be older than HEAD; then it names an ancestor of it.
	hash=$(printf '%s\n' "$commit" | sed -E 's/-dirty$//; s/.*-g([0-9a-f]+)$/\1/')
	git -C "$src" merge-base --is-ancestor "$hash" "$head" 2>/dev/null ||
		fail "commit $commit is not HEAD ($head) or an ancestor of it"
fi
echo "version test passed"
