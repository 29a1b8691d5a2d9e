#!/usr/bin/env bash
# gpu.sh - the GPU machine workflow in one place.
#   scripts/gpu.sh prepare   (here)  build, compile the specs, gather .carry/
#   scripts/gpu.sh run [ARGS] (there) run every GPU test and benchmark in .carry/
# The GPU machine has CUDA and a driver but no LLVM/MLIR: everything is built
# here and carried (the device tool's `carry: [".carry"]`).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  prepare)
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build -j2 >/dev/null
    rm -rf .carry && mkdir -p .carry/bin
    build/bin/cakec specs/first/first.cake $(ls specs/kda/*.cake 2>/dev/null) --arch=sm_90a -o .carry/package
    cp build/gpu/* .carry/bin/ && cp build/examples/kda_forward build/examples/run_first .carry/bin/
    [ -d build/bench ] && cp build/bench/* .carry/bin/ || true
    build/bin/cakec benchmarks/kda_prep_parts.cake --arch=sm_90a -o .carry/parts
    build/bin/cakec tests/gpu/ops.cake --arch=sm_90a -o .carry/ops/package && cp tests/gpu/ops.cake .carry/ops/
    mkdir -p .carry/lib && cp build/lib/libcakert.so .carry/lib/
    cp scripts/gpu.sh .carry/
    du -sh .carry
    ;;
  run)
    shift
    out="${OUT:-/tmp/cake-out}"; mkdir -p "$out"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/gpu.txt" || true
    status=0
    for t in .carry/bin/test_*; do
      echo "== $(basename "$t")"
      pkg=.carry/package; [ "$(basename "$t")" = test_ops ] && pkg=.carry/ops/package
      "$t" "$pkg" "$@" 2>&1 | tee "$out/$(basename "$t").log" || status=1
    done
    exit $status
    ;;
  bench)
    # the anchor (fla + its autotune cache) must be in .anchor/ (see benchmarks/README.md)
    shift
    out="${OUT:-/tmp/cake-out}"; mkdir -p "$out"
    tc=$(mktemp -d) && tar -xzf .anchor/fla_autotune_cache_h200.tar.gz -C "$tc"
    export TRITON_CACHE_DIR="$tc" PYTHONUNBUFFERED=1
    python3 benchmarks/bench_kda.py --fla .anchor/fla --anchor .anchor --package .carry/package \
      --lib .carry/lib/libcakert.so --out "$out" "$@"
    ;;
  parts)
    shift
    PYTHONUNBUFFERED=1 python3 benchmarks/bench_parts.py --lib .carry/lib/libcakert.so --package .carry/parts \
      --program kda_prep_parts "$@"
    ;;
  *) echo "usage: $0 prepare | run [--seed N] [--quick] | bench [bench_kda.py options] | parts --dims T=..,H=.." >&2; exit 2 ;;
esac
