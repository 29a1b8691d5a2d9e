// The valid counterpart of grid_invalid.cake.
// RUN: %cakec %s --emit=cir | FileCheck %s
// Kernels without tiles plan no shared memory (allocate() used to memcpy from NULL):
// RUN: %cakec %s --emit=mlir --arch=sm_90a | FileCheck %s --check-prefix=MLIR
// MLIR: gpu.func @a_
// MLIR: gpu.func @b_
program grid
dim T, N, H
const C = 16, V = 64
sequence T, docs N, chunk C
in x : f32[T, V]
kernel a over (c in chunks, h in H) threads 256 { }
kernel b over (n in docs, j in V / 16, h in 3) { }
// CHECK: kernel a over (c in chunks, h in H) threads 256 {
// CHECK: kernel b over (n in docs, j in 4 blocks of 16, h in 3) threads 128 {
