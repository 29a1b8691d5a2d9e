#!/usr/bin/env bash
# gpu.sh - the GPU machine workflow in one place.
#   scripts/gpu.sh prepare    (build machine) build, compile the specs, gather .carry/
#   scripts/gpu.sh prepare-other REV [NAME]  (build machine, after prepare)
#                             another revision's packages beside this tree's
#   .carry/gpu.sh run [ARGS]  (GPU machine)   every GPU test, then a summary table
#                             (CAKE_PACKAGES=.carry/other/NAME: on that revision's packages)
#   .carry/gpu.sh unpack      (GPU machine)   unpack the packages (every command does it first)
#   .carry/gpu.sh sanitize    (GPU machine)   every GPU test under compute-sanitizer's
#                                             memcheck, racecheck, synccheck and initcheck
#   .carry/gpu.sh torch       (GPU machine)   cake.kda through PyTorch autograd
#   .carry/gpu.sh bench|bench-train|bench-gdn|bench-kcp|bench-conv1d|parts
#                             (GPU machine)   benchmarks (benchmarks/README.md)
#   .carry/gpu.sh all         (GPU machine)   tests, memcheck, the training example
#                                             and the benchmarks in one timed call
#   .carry/gpu.sh compare     (GPU machine)   candidates from prepare-other against
#                                             this tree: tests, benchmarks, in one call
# The GPU machine needs CUDA and a driver but no LLVM/MLIR: everything is built
# on the build machine and the .carry/ folder is copied over. Logs go to
# $CAKE_OUT (default /tmp/cake-out).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${CAKE_OUT:-/tmp/cake-out}"

# the package each GPU test runs on: this tree's, or another revision's
# (CAKE_PACKAGES=.carry/other/NAME, from prepare-other)
package_of() {
  local d="${CAKE_PACKAGES:-.carry}"
  case "$1" in
    test_ops) echo "$d/ops/package" ;;
    *) echo "$d/package" ;;
  esac
}
# The packages travel as one xz archive (their kernels are much alike: a
# fraction of the size); unpacked on the GPU machine on first use.
untar() { # archive folder
  tar -C "$2" -xJf "$1" 2>/dev/null ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2"
}
unpack() {
  local a
  for a in .carry/other/*.tar.xz; do
    [ -f "$a" ] && [ ! -d "${a%.tar.xz}" ] && untar "$a" .carry/other
  done
  [ -f .carry/packages.tar.xz ] && [ ! -d .carry/package ] || return 0
  untar .carry/packages.tar.xz .carry
}
case "${1:-}" in prepare|prepare-other) ;; *) unpack ;; esac

case "${1:-}" in
  prepare)
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build -j2 >/dev/null
    rm -rf .carry && mkdir -p .carry/bin
    export CAKE_CACHE_DIR="${CAKE_CACHE_DIR:-$PWD/build/cache}"   # shared with the package target
    # (+ the context-parallel KDA forward of test_kcp)
    build/bin/cakec specs/first/first.cake $(ls specs/kda/*.cake specs/gdn/*.cake specs/gla/*.cake specs/conv1d/*.cake specs/deltanet/*.cake 2>/dev/null) \
      tests/unit/kcp/kda_kcp_fwd.cake tests/unit/kcp/kcp_send.cake --arch=sm_90a -o .carry/package
    cp build/gpu/* .carry/bin/ && cp build/examples/kda_forward build/examples/kda_train_step build/examples/run_first build/examples/kcp_train_step .carry/bin/
    [ -d build/bench ] && cp build/bench/* .carry/bin/ || true
    build/bin/cakec benchmarks/kda_prep_parts.cake --arch=sm_90a -o .carry/parts
    # the KDA forward with more chain block shapes (benchmarks/chain_blocks.py; layer variant only)
    python3 benchmarks/chain_blocks.py build/kda_chain_blocks.cake
    build/bin/cakec build/kda_chain_blocks.cake --arch=sm_90a --option gate=softplus,qk_norm=true,beta_logits=true \
      -o .carry/chain_blocks
    build/bin/cakec tests/gpu/ops.cake --arch=sm_90a -o .carry/ops/package && cp tests/gpu/ops.cake .carry/ops/
    mkdir -p .carry/lib && cp build/lib/libcakert.so .carry/lib/
    cp scripts/gpu.sh .carry/
    tar -C .carry -cf - package ops parts chain_blocks | xz -9 -T2 >.carry/packages.tar.xz
    rm -rf .carry/package .carry/ops .carry/parts .carry/chain_blocks
    du -sh .carry
    ;;
  prepare-other)
    # REV's compiler (built in a worktree under build/other/NAME) compiles
    # REV's specs and test programs (so a change to a spec is weighed as well
    # as one to the compiler; their interfaces must be this tree's, whose
    # tests and benchmarks run them) for sm_90a into
    # .carry/other/NAME.tar.xz, to run beside this tree's: the tests with
    # CAKE_PACKAGES=.carry/other/NAME, a benchmark with --package
    # .carry/other/NAME/package (and --compare for bitwise equality).
    [ -d .carry/bin ] || { echo "run scripts/gpu.sh prepare first" >&2; exit 2; }
    rev="${2:?usage: scripts/gpu.sh prepare-other REV [NAME]}" name="${3:-$2}"
    wt="build/other/$name"
    git worktree prune
    if [ ! -d "$wt/src" ]; then git worktree add -f --detach "$wt/src" "$rev" >/dev/null
    else git -C "$wt/src" checkout -q --detach "$rev"; fi
    cmake -S "$wt/src" -B "$wt/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$wt/build" -j2 --target cakec >/dev/null
    o="$PWD/.carry/other/$name" cc="$PWD/$wt/build/bin/cakec"
    rm -rf "$o" && mkdir -p "$o/ops"
    (cd "$wt/src" &&
      "$cc" specs/first/first.cake $(ls specs/kda/*.cake specs/gdn/*.cake specs/gla/*.cake specs/conv1d/*.cake \
        specs/deltanet/*.cake 2>/dev/null) tests/unit/kcp/kda_kcp_fwd.cake tests/unit/kcp/kcp_send.cake --arch=sm_90a \
        -o "$o/package" &&
      "$cc" tests/gpu/ops.cake --arch=sm_90a -o "$o/ops/package" && cp tests/gpu/ops.cake "$o/ops/")
    tar -C .carry/other -cf - "$name" | xz -9 -T2 >"$o.tar.xz"
    rm -rf "$o"
    du -sh ".carry/other/$name.tar.xz"
    ;;
  run)
    shift
    mkdir -p "$out"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/gpu.txt" || true
    # CAKE_TESTS narrows the tests (names, e.g. "test_gla test_deltanet"); arguments go to each
    status=0 summary=""
    for t in .carry/bin/test_*; do
      name=$(basename "$t")
      [ -z "${CAKE_TESTS:-}" ] || [[ " $CAKE_TESTS " == *" $name "* ]] || continue
      echo "== $name"
      rc=0
      "$t" "$(package_of "$name")" "$@" 2>&1 | tee "$out/$name.log" || rc=$?
      [ $rc = 0 ] || status=1
      summary+="$(printf '%-12s %s' "$name" "$([ $rc = 0 ] && echo PASS || echo "FAIL (exit $rc)")")"$'\n'
    done
    printf '== summary\n%s' "$summary" | tee "$out/summary.txt"
    exit $status
    ;;
  sanitize)
    # Every GPU test on its small shapes (--quick) under each compute-sanitizer
    # tool; any report fails the step (--error-exitcode), and so does a run
    # past CAKE_SANITIZE_TIMEOUT seconds (exit 124). CAKE_SANITIZERS narrows
    # the tools, CAKE_SANITIZE_TESTS the tests; CAKE_SANITIZE_JOBS runs that
    # many (tool, test) pairs at once (default 1). Extra arguments go to the
    # tests (racecheck is slow: `--max-t 1100` keeps the smallest shapes).
    shift
    mkdir -p "$out"
    cs="${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer"
    [ -x "$cs" ] || cs=compute-sanitizer
    one() {  # tool test [args...]: one sanitizer run, its summary line in $out
      local tool=$1 name=$2 extra="" rc=0 start secs log
      shift 2
      [ "$tool" = memcheck ] && extra="--leak-check full"
      [ "$tool" = racecheck ] && extra="--racecheck-report all"
      # NCCL's start-up probes kernel images (cudaFuncGetAttributes), which memcheck reports as API
      # errors of the library: test_comm's NCCL part runs outside the sanitizer (`run` covers it)
      [ "$name" = test_comm ] && set -- "$@" --no-nccl
      log="$out/sanitize-$tool-$name.log" start=$(date +%s)
      timeout "${CAKE_SANITIZE_TIMEOUT:-900}" "$cs" --tool "$tool" $extra --error-exitcode 97 --print-limit 20 \
        ".carry/bin/$name" "$(package_of "$name")" --quick "$@" >"$log" 2>&1 || rc=$?
      secs=$(( $(date +%s) - start ))
      printf '%-10s %-15s %4ss %-18s %s\n' "$tool" "$name" "$secs" \
        "$([ $rc = 0 ] && echo PASS || echo "FAIL (exit $rc)")" \
        "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY' "$log" | tr '\n' ' ')" >"$log.status"
      [ $rc = 0 ] || tail -30 "$log"
    }
    tests="${CAKE_SANITIZE_TESTS:-$(cd .carry/bin && ls test_*)}"
    pids=()
    for tool in ${CAKE_SANITIZERS:-memcheck racecheck synccheck initcheck}; do
      for name in $tests; do
        while [ "$(jobs -rp | wc -l)" -ge "${CAKE_SANITIZE_JOBS:-1}" ]; do sleep 1; done
        one "$tool" "$name" "$@" &
        pids+=($!)
      done
    done
    wait "${pids[@]}" || true
    status=0 summary=""
    for tool in ${CAKE_SANITIZERS:-memcheck racecheck synccheck initcheck}; do
      for name in $tests; do
        f="$out/sanitize-$tool-$name.log.status"
        line="$(cat "$f" 2>/dev/null || echo "$tool $name: no result")"
        case "$line" in *" PASS "*) ;; *) status=1 ;; esac
        summary+="$line"$'\n'
      done
    done
    printf '== compute-sanitizer summary\n%s' "$summary" | tee "$out/sanitize-summary.txt"
    exit $status
    ;;
  bench|bench-train)
    # the anchor (fla + its autotune cache) must be in .anchor/ (see benchmarks/README.md)
    script=benchmarks/bench_kda.py
    [ "$1" = bench-train ] && script=benchmarks/bench_kda_train.py
    shift
    mkdir -p "$out"
    tc=$(mktemp -d) && tar -xzf .anchor/fla_autotune_cache_h200.tar.gz -C "$tc"
    export TRITON_CACHE_DIR="$tc" PYTHONUNBUFFERED=1
    python3 "$script" --fla .anchor/fla --anchor .anchor --package .carry/package \
      --lib .carry/lib/libcakert.so --out "$out" "$@"
    ;;
  all)
    # One call that does the session's GPU work within CAKE_ALL_SECONDS
    # (default 540): every GPU test on its full shapes, beside it memcheck on
    # the --quick shapes and the C training example; then, on a quiet GPU,
    # bench-train, bench and bench-gdn with what time is left (layer variant, shapes b
    # and c unless CAKE_BENCH_SHAPES says otherwise). Each step's log and
    # summary land in $CAKE_OUT; the exit status is the tests'.
    shift
    mkdir -p "$out"
    budget="${CAKE_ALL_SECONDS:-540}" t0=$(date +%s)
    left() { echo $(( budget - ($(date +%s) - t0) )); }
    rc_run=0 rc_san=0 rc_ex=0
    ( timeout $(( budget * 7 / 10 )) bash "$0" run "$@" >"$out/all-run.log" 2>&1 ) & p_run=$!
    ( CAKE_SANITIZERS="${CAKE_SANITIZERS:-memcheck}" CAKE_SANITIZE_TIMEOUT=$(( budget / 4 )) \
        bash "$0" sanitize >"$out/all-sanitize.log" 2>&1 ) & p_san=$!
    ( timeout $(( budget / 4 )) .carry/bin/kda_train_step .carry/package >"$out/all-train-step.log" 2>&1 ) & p_ex=$!
    wait $p_run || rc_run=$?
    wait $p_san || rc_san=$?
    wait $p_ex || rc_ex=$?
    printf 'tests exit %s, sanitize exit %s, kda_train_step exit %s, %ss\n' \
      $rc_run $rc_san $rc_ex $(( $(date +%s) - t0 )) | tee "$out/all-status.txt"
    shapes="${CAKE_BENCH_SHAPES:-b,c}"
    if [ -d .anchor ] && [ "$(left)" -gt 90 ]; then
      timeout $(( $(left) / 2 )) bash "$0" bench-train --shapes "$shapes" --variants layer \
        --deadline $(( $(left) * 3 / 10 )) >"$out/all-bench-train.log" 2>&1 || true
    fi
    if [ -d .anchor ] && [ "$(left)" -gt 45 ]; then
      timeout $(( $(left) / 2 )) bash "$0" bench --shapes "$shapes" --variants layer \
        >"$out/all-bench.log" 2>&1 || true
    fi
    if [ -d .anchor ] && [ "$(left)" -gt 45 ]; then
      timeout $(( $(left) - 10 )) bash "$0" bench-gdn --shapes "$shapes" --variants layer \
        --deadline $(( $(left) / 2 )) >"$out/all-bench-gdn.log" 2>&1 || true
    fi
    printf 'total %ss\n' $(( $(date +%s) - t0 )) | tee -a "$out/all-status.txt"
    [ $rc_run = 0 ] && [ $rc_san = 0 ] && [ $rc_ex = 0 ]
    ;;
  compare)
    # One call that weighs other revisions' packages (prepare-other) against
    # this tree's within CAKE_COMPARE_SECONDS (default 540), each step cut to
    # a share of what is left, the results tarred into $CAKE_OUT/results.tgz
    # after every step (so that a call cut short still brings back what ran):
    #   CAKE_COMPARE_TESTS="NAME..."   the GPU tests run --quick on each candidate
    #   CAKE_COMPARE_TRAIN="NAME:SHAPES ..."  bench-train, ckpt, layer (NAME main:
    #                                  this tree; fla: this tree with fla)
    #   CAKE_COMPARE_FWD="NAME ..."    bench (layer; CAKE_COMPARE_VARIANTS) of this
    #                                  tree with fla, then each candidate on the
    #                                  same inputs with --compare (bit for bit)
    #   then CAKE_COMPARE_TRAIN2 as CAKE_COMPARE_TRAIN, with what time is left.
    # Candidates: NAME of .carry/other/NAME. The exit status is the tests'.
    shift
    mkdir -p "$out"
    budget="${CAKE_COMPARE_SECONDS:-540}" t0=$(date +%s) rc=0
    left() { echo $(( budget - ($(date +%s) - t0) )); }
    pack() { tar -C "$out" -czf /tmp/cake-results.tgz --exclude results.tgz . 2>/dev/null && cp /tmp/cake-results.tgz "$out/results.tgz" || true; }
    step() { echo "$1 rc=$2 $(( $(date +%s) - t0 ))s" >>"$out/compare-status.txt"; pack; }
    pkg_of() { case "$1" in main|fla) echo .carry/package ;; *) echo ".carry/other/$1/package" ;; esac; }
    train() {
      local cs c sh extra r
      for cs in $1; do
        c=${cs%%:*} sh=${cs#*:}
        [ "$(left)" -gt 60 ] || break
        extra=(--no-fla); [ "$c" = fla ] && extra=()
        r=0
        CAKE_OUT="$out/train-$c-$sh" timeout $(( $(left) / 2 )) bash "$0" bench-train --shapes "$sh" --variants layer \
          --modes ckpt --package "$(pkg_of "$c")" "${extra[@]}" >"$out/train-$c-$sh.log" 2>&1 || r=$?
        step "bench-train $c $sh" $r
      done
    }
    for c in ${CAKE_COMPARE_CANDIDATES:-}; do
      [ -n "${CAKE_COMPARE_TESTS:-}" ] || break
      r=0
      CAKE_OUT="$out/tests-$c" CAKE_PACKAGES=".carry/other/$c" CAKE_TESTS="$CAKE_COMPARE_TESTS" \
        timeout $(( $(left) / 3 )) bash "$0" run --quick >"$out/tests-$c.log" 2>&1 || r=$?
      [ $r = 0 ] || rc=1
      step "tests $c" $r
    done
    train "${CAKE_COMPARE_TRAIN:-}"
    if [ -n "${CAKE_COMPARE_FWD:-}" ] && [ "$(left)" -gt 60 ]; then
      d=$(mktemp -d)
      vars="${CAKE_COMPARE_VARIANTS:-layer}"
      r=0
      CAKE_OUT="$out/fwd-main" timeout $(( $(left) / 2 )) bash "$0" bench --shapes b,c --variants "$vars" --dump "$d" \
        >"$out/fwd-main.log" 2>&1 || r=$?
      step "bench main" $r
      for c in $CAKE_COMPARE_FWD; do
        r=0
        CAKE_OUT="$out/fwd-$c" timeout $(( $(left) / 2 )) bash "$0" bench --shapes b,c --variants "$vars" --no-fla \
          --package "$(pkg_of "$c")" --compare "$d" >"$out/fwd-$c.log" 2>&1 || r=$?
        step "bench $c" $r
      done
      rm -rf "$d"
    fi
    train "${CAKE_COMPARE_TRAIN2:-}"
    exit $rc
    ;;
  bench-gdn)
    # Cake's gdn_fwd against fla's chunk_gated_delta_rule forward (benchmarks/bench_gdn.py); fla
    # from .anchor/fla (its GDN kernels autotune on the first call: not in the KDA cache)
    shift
    mkdir -p "$out"
    tc=$(mktemp -d) && tar -xzf .anchor/fla_autotune_cache_h200.tar.gz -C "$tc"
    export TRITON_CACHE_DIR="$tc" PYTHONUNBUFFERED=1
    python3 benchmarks/bench_gdn.py --fla .anchor/fla --package .carry/package \
      --lib .carry/lib/libcakert.so --out "$out" "$@"
    ;;
  bench-conv1d)
    # Cake's causal conv1d against fla's Triton causal_conv1d, forward and forward + backward
    # (benchmarks/bench_conv1d.py; fla from .anchor/fla, autotuned on the first call)
    shift
    mkdir -p "$out"
    PYTHONUNBUFFERED=1 python3 benchmarks/bench_conv1d.py --fla .anchor/fla --package .carry/package \
      --lib .carry/lib/libcakert.so --out "$out" "$@"
    ;;
  unpack) ;; # (done above)
  bench-kcp)
    # context-parallel KDA training, R in-process ranks, against the single rank
    # (benchmarks/bench_kcp.c; arguments: --R, --T, --H, --docs, --save, --reps)
    shift
    mkdir -p "$out"
    .carry/bin/bench_kcp .carry/package .carry/package "$@" | tee "$out/bench_kcp.md"
    exit "${PIPESTATUS[0]}"
    ;;
  torch)
    # cake.kda through PyTorch autograd: against float64, against fla's chunk_kda when .anchor/fla
    # is there, bitwise repeats, and a small training loop run twice (tests/gpu/test_torch_kda.py)
    shift
    mkdir -p "$out"
    fla=()
    if [ -d .anchor/fla ]; then
      tc=$(mktemp -d) && tar -xzf .anchor/fla_autotune_cache_h200.tar.gz -C "$tc"
      export TRITON_CACHE_DIR="$tc"
      fla=(--fla .anchor/fla)
    fi
    CAKE_LIBRARY_PATH=.carry/lib PYTHONUNBUFFERED=1 python3 tests/gpu/test_torch_kda.py .carry/package \
      "${fla[@]}" "$@" 2>&1 | tee "$out/test_torch_kda.log"
    exit "${PIPESTATUS[0]}"
    ;;
  parts)
    shift
    PYTHONUNBUFFERED=1 python3 benchmarks/bench_parts.py --lib .carry/lib/libcakert.so --package .carry/parts \
      --program kda_prep_parts "$@"
    ;;
  *) echo "usage: $0 prepare | prepare-other REV [NAME] | all | compare | run [--seed N] [--quick] [--max-t N] | sanitize [--seed N] [--max-t N] | bench [bench_kda.py options] | bench-train [bench_kda_train.py options] | bench-gdn [bench_gdn.py options] | bench-kcp [bench_kcp options] | bench-conv1d [bench_conv1d.py options] | torch [--quick] [--seed N] | parts --dims T=..,H=.." >&2; exit 2 ;;
esac
