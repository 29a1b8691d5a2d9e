#!/usr/bin/env bash
# compare_emit.sh BUILD_A BUILD_B [EMIT] [ARCH] - the cakec of two builds (e.g.
# one made by gcc, one by clang) on every spec under specs/ and tests/: the
# emitted text (EMIT: mlir by default, or ptx, llvm, cir), the diagnostics and
# the exit status must be the same, byte for byte. Prints the specs that
# differ; fails when any does.
set -euo pipefail
cd "$(dirname "$0")/.."
A=$1 B=$2 EMIT=${3:-mlir} ARCH=${4:-sm_90a}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
one() { # build spec out
  local rc=0
  "$1/bin/cakec" "$2" --emit="$EMIT" --arch="$ARCH" -j1 --cache-dir= >"$3" 2>&1 || rc=$?
  echo "exit status $rc" >>"$3"
}
export -f one
export EMIT ARCH
specs=$(find specs tests -name '*.cake' -not -path 'tests/fuzz/*' | sort)
n=$(echo "$specs" | wc -l)
for s in $specs; do
  k=$(echo "$s" | tr / _)
  printf '%s\0%s\0%s\0' "$A" "$s" "$tmp/a.$k" "$B" "$s" "$tmp/b.$k"
done | xargs -0 -n3 -P"$(nproc)" bash -c 'one "$0" "$1" "$2"'
d=0
for s in $specs; do
  k=$(echo "$s" | tr / _)
  if ! cmp -s "$tmp/a.$k" "$tmp/b.$k"; then
    d=$((d + 1))
    echo "compare_emit: $s: --emit=$EMIT differs between $A and $B" >&2
  fi
done
echo "compare_emit: $n specs, --emit=$EMIT --arch=$ARCH: $((n - d)) identical, $d different ($A vs $B)"
[ "$d" = 0 ]
