#!/usr/bin/env bash
# test.sh - build what is needed, then run every test:
#   1. build/ (the normal build): ctest - unit tests, the lit suite, the
#      install test, the GPU tests on the PTX emulator (label emu:
#      tests/emu/README.md); with clang-22, scripts/check_eval_order.py;
#   2. build-asan/ (ASan + UBSan, clang-22 when present, else the default
#      compiler): the unit tests and the whole lit suite (not the emulated
#      GPU tests, which the sanitizers would slow several times), every sanitizer
#      report fatal (it aborts, so it fails negative tests too); when the two
#      builds come from different C compilers, their MLIR of every spec must
#      be the same (scripts/compare_emit.sh);
#   3. each libFuzzer harness of tests/fuzz for CAKE_TEST_FUZZ_SECONDS
#      (default 60) seconds (clang builds only; scripts/fuzz.sh).
# CAKE_TEST_SANITIZE=0 skips 2 and 3; CAKE_TEST_FUZZ_SECONDS=0 skips 3.
# Each part's time is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
times=()
t0=$(date +%s)
part() { # name start
  times+=("$(printf '%-34s %4d s' "$1" $(($(date +%s) - $2)))")
}

# 1. the normal build
[ -f build/CMakeCache.txt ] || cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure
# builder calls whose order C leaves open (clang's AST; lowering/mlb.h)
if command -v "${CAKE_CLANG:-clang-22}" >/dev/null; then
  python3 scripts/check_eval_order.py --clang "${CAKE_CLANG:-clang-22}" --build build
  python3 scripts/check_eval_order.py --clang "${CAKE_CLANG:-clang-22}" --build build --dir compiler
fi
part "1. build/ ctest, eval-order check" "$t0"

if [ "${CAKE_TEST_SANITIZE:-1}" != 0 ]; then
  # 2. the sanitizer build
  t1=$(date +%s)
  CLANG=${CAKE_CLANG:-clang-22}
  if [ ! -f build-asan/CMakeCache.txt ]; then
    if command -v "$CLANG" >/dev/null; then
      CC="$CLANG" cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAKE_FUZZ=ON
    else
      echo "test.sh: $CLANG not found: sanitizer build with the default compiler, no fuzzing" >&2
      cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAKE_SANITIZE=ON
    fi
  fi
  cmake --build build-asan -j"$jobs"
  export ASAN_OPTIONS="abort_on_error=1:halt_on_error=1:detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
  # unit tests, lit (with tests/lit/sanitizer: a report aborts) and the fuzz seeds once each
  ctest --test-dir build-asan --output-on-failure -LE emu
  # built by another C compiler, cakec must emit the same MLIR for every spec
  id_a=$(grep -h '^CMAKE_C_COMPILER:' build/CMakeCache.txt) id_b=$(grep -h '^CMAKE_C_COMPILER:' build-asan/CMakeCache.txt)
  if [ "$id_a" != "$id_b" ]; then
    scripts/compare_emit.sh build build-asan mlir
  fi
  part "2. build-asan/ ctest, MLIR compared" "$t1"

  # 3. fuzzing
  secs=${CAKE_TEST_FUZZ_SECONDS:-60}
  if [ "$secs" != 0 ] && grep -q '^CAKE_FUZZ:BOOL=ON' build-asan/CMakeCache.txt; then
    t2=$(date +%s)
    scripts/fuzz.sh "$secs"
    part "3. fuzzing (${secs} s per harness)" "$t2"
  fi
fi
part "total" "$t0"
printf 'test.sh: %s\n' "${times[@]}"
