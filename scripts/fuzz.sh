#!/usr/bin/env bash
# fuzz.sh [SECONDS] [HARNESS...] - run the libFuzzer harnesses of tests/fuzz.
#
#   scripts/fuzz.sh            # each harness for 10 minutes
#   scripts/fuzz.sh 3600 package
#
# HARNESS: compile (fuzz_compile: spec text -> cake_compile, emit cir) and/or
# package (fuzz_package: a manifest -> cake_package_load, plans, validation);
# default both, one after the other, SECONDS each (default 600).
#
# Builds build-asan/ (clang-22 or $CAKE_CLANG, -DCAKE_FUZZ=ON: ASan + UBSan +
# libFuzzer) when needed. Seeds come from tests/fuzz/corpus/<harness>; what the
# fuzzer adds is kept in build-asan/fuzz/corpus/<harness> and used again by the
# next run; anything found (crash, sanitizer report, leak, timeout, out of
# memory) is written to build-asan/fuzz/findings/<harness>/ and makes the
# script fail. Reproduce with `build-asan/fuzz/fuzz_<harness> FILE`; keep the
# minimised input next to the seeds (as finding-<name>) with the fix.
#
# Environment: CAKE_FUZZ_JOBS=N runs N fuzzing processes at once (libFuzzer
# -fork=N; default 1); CAKE_FUZZ_TIMEOUT (seconds one input may take, default
# 30); CAKE_FUZZ_EMIT=mlir (or ptx) makes fuzz_compile lower every kernel too
# (much slower: inputs up to 4 KB, 120 s each); extra libFuzzer flags in
# CAKE_FUZZ_FLAGS. Slow inputs (slow-unit-*) are kept but are no failure.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
shift || true
harnesses=${*:-compile package}
B=build-asan
CLANG=${CAKE_CLANG:-clang-22}

if ! grep -q '^CAKE_FUZZ:BOOL=ON' "$B/CMakeCache.txt" 2>/dev/null; then
  if ! command -v "$CLANG" >/dev/null; then
    echo "fuzz.sh: $CLANG not found; install clang-22 and libclang-rt-22-dev (or set CAKE_CLANG)" >&2
    exit 1
  fi
  if [ -f "$B/CMakeCache.txt" ]; then
    echo "fuzz.sh: $B/ is configured without CAKE_FUZZ; remove it or configure it with -DCAKE_FUZZ=ON" >&2
    exit 1
  fi
  CC="$CLANG" cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAKE_FUZZ=ON >/dev/null
fi
cmake --build "$B" -j"${CAKE_BUILD_JOBS:-$(nproc)}" --target fuzz_compile fuzz_package >/dev/null

export ASAN_OPTIONS="abort_on_error=1:halt_on_error=1:detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
[ -x /usr/lib/llvm-22/bin/llvm-symbolizer ] && export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-/usr/lib/llvm-22/bin/llvm-symbolizer}

status=0
for h in $harnesses; do
  timeout=${CAKE_FUZZ_TIMEOUT:-30}
  case $h in
    compile) max_len=16384
      case ${CAKE_FUZZ_EMIT:-cir} in
        ast|cir) ;;
        *) max_len=4096 timeout=${CAKE_FUZZ_TIMEOUT:-120} ;; # lowering: small specs (larger seeds are cut)
      esac ;;
    package) max_len=65536 ;;
    *) echo "fuzz.sh: unknown harness '$h' (compile, package)" >&2; exit 2 ;;
  esac
  work=$B/fuzz/corpus/$h found=$B/fuzz/findings/$h log=$B/fuzz/fuzz_$h.log
  mkdir -p "$work" "$found"
  count() { find "$found" -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' | wc -l; }
  before=$(count)
  flags=(-max_total_time="$secs" -timeout="$timeout" -max_len=$max_len -rss_limit_mb=4096
         -dict=tests/fuzz/fuzz_$h.dict -artifact_prefix="$found/" -print_final_stats=1)
  if [ "${CAKE_FUZZ_JOBS:-1}" -gt 1 ]; then flags+=(-fork="$CAKE_FUZZ_JOBS" -ignore_crashes=1); fi
  rc=0
  # shellcheck disable=SC2086
  "$B/fuzz/fuzz_$h" "${flags[@]}" ${CAKE_FUZZ_FLAGS:-} "$work" "tests/fuzz/corpus/$h" >"$log" 2>&1 || rc=$?
  runs=$(grep -h 'stat::number_of_executed_units' "$log" | awk '{s += $2} END {print s + 0}')
  if [ "${CAKE_FUZZ_JOBS:-1}" -gt 1 ]; then
    runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  fi
  after=$(count)
  echo "fuzz_$h: ${runs:-0} executions in $secs s, corpus $(ls "$work" | wc -l) inputs, $((after - before)) new findings (log: $log)"
  if [ "$rc" != 0 ] || [ "$after" != "$before" ]; then
    echo "fuzz_$h: FAILED (status $rc); findings in $found/:" >&2
    ls -t "$found" | grep -v '^slow-unit-' | head -5 | sed "s|^|  $found/|" >&2
    grep -m1 -E 'ERROR: |runtime error:|fuzz_[a-z]+: ' "$log" >&2 || tail -20 "$log" >&2
    status=1
  fi
done
exit $status
