#!/usr/bin/env bash
# consumer.sh BUILD_DIR SOURCE_DIR - install Cake into a temporary prefix, then
# build examples/consumer against it twice: with find_package(Cake) and with
# pkg-config, and run both (they compile a spec and plan it; no GPU needed).
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
for f in bin/cakec include/cake/cake.h include/cake/cake_runtime.h lib/cmake/Cake/CakeConfig.cmake \
         lib/pkgconfig/cake.pc lib/pkgconfig/cakert.pc; do
  [ -e "$tmp/prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
ls "$tmp"/prefix/lib/libcake.so* "$tmp"/prefix/lib/libcakert.so* >/dev/null

# 1. CMake: find_package(Cake) with Cake::compiler and Cake::runtime
cmake -S "$src/examples/consumer" -B "$tmp/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/b" >/dev/null
"$tmp/b/consumer" "$tmp/pkg1"

# 2. pkg-config
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
cc -o "$tmp/consumer_pc" "$src/examples/consumer/consumer.c" $(pkg-config --cflags --libs cake cakert)
"$tmp/consumer_pc" "$tmp/pkg2"

# the two builds made the same package, byte for byte; the installed driver runs
diff -r "$tmp/pkg1" "$tmp/pkg2"
"$tmp/prefix/bin/cakec" "$src/specs/first/first.cake" --emit=cir >/dev/null
echo "consumer: installed package used by CMake and pkg-config: PASS"
