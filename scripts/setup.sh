#!/usr/bin/env bash
# setup.sh - install the dependencies (apt), build Cake, and compile every spec
# under specs/ for every target into build/package (the main job). clang-22
# and its runtime libraries are for the sanitizer build and the fuzzers of
# scripts/test.sh.
# CUDA 13.0 is expected in /usr/local/cuda (or set CAKE_CUDA_ROOT).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
PKGS="llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools flex bison cmake make gcc \
      libcjson-dev libcmocka-dev libssl-dev clang-22 libclang-rt-22-dev python3"
missing=""
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi
# torch (CPU) for the Python package's autograd test (cake.autograd under gradcheck); the
# distribution's build, without its recommended extras
if ! dpkg -s python3-torch >/dev/null 2>&1; then
  [ -n "$missing" ] || $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-torch
fi
CUDA="${CAKE_CUDA_ROOT:-/usr/local/cuda}"
if [ ! -x "$CUDA/bin/ptxas" ]; then
  echo "setup: CUDA 13.0 is required: $CUDA/bin/ptxas not found (install the CUDA toolkit or set CAKE_CUDA_ROOT)" >&2
  exit 1
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAKE_CUDA_ROOT="$CUDA"
cmake --build build -j"$(nproc)"
cmake --build build --target package
echo "setup: cakec is build/bin/cakec; the compiled specs are in build/package"
