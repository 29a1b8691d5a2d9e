#!/usr/bin/env bash
# package.sh CAKEC OUT_DIR CACHE_DIR - the emulated GPU tests' packages: every
# shipped spec and the test programs compiled for sm_90a into OUT_DIR/package
# with their PTX in OUT_DIR/package.ptx, and tests/gpu/ops.cake likewise into
# OUT_DIR/ops (run from the source root).
set -euo pipefail
cakec=$1 out=$2 cache=$3
specs=(specs/first/first.cake specs/kda/*.cake specs/gdn/*.cake specs/gla/*.cake specs/conv1d/*.cake specs/deltanet/*.cake
       tests/unit/kcp/kda_kcp_fwd.cake tests/unit/kcp/kcp_send.cake)
mkdir -p "$out/ops"
"$cakec" "${specs[@]}" --arch=sm_90a --cache-dir "$cache" -o "$out/package"
"$cakec" "${specs[@]}" --arch=sm_90a --emit=ptx -o "$out/package.ptx"
"$cakec" tests/gpu/ops.cake --arch=sm_90a --cache-dir "$cache" -o "$out/ops/package"
"$cakec" tests/gpu/ops.cake --arch=sm_90a --emit=ptx -o "$out/ops.ptx"
cp tests/gpu/ops.cake "$out/ops/"
