// A matmul begins with a barrier when anything since the last one touched
// shared memory: here the scalar `a` reads X[0, 0] and Y's epilogue writes
// Y where X was (their live ranges do not overlap), so a fast warp would
// overwrite the element while a slow one has not read it. Only the scan
// step's matmuls that emit_block proves need none go without it
// (scan_barriers.cake).
// RUN: env CAKE_TRACE_PLAN=1 %cakec %s --emit=mlir --arch=sm_90a -j1 2>&1 >/dev/null | FileCheck %s --check-prefix=PLAN
// RUN: %cakec %s --emit=mlir --arch=sm_90a -j1 | FileCheck %s
program matmul_start_barrier
dim T, H
in  a1, b1 : bf16[H, 64, 64]
out o    : f32[H, 64, 64]
kernel k over (h in H) {
  A = load a1[h, :, :]
  B = load b1[h, :, :]
  X = A @ B
  a = X[0, 0]
  b = a * 2.0
  Y = B @ A
  store o[h, :, :] = Y * b
}
entry e1 = k
// PLAN-DAG: matmul f32 64x64 {{[0-9]+}} B x1 at [[AT:[ 0-9]+]] live {{.*}} (line 16)
// PLAN-DAG: matmul f32 64x64 {{[0-9]+}} B x1 at [[AT]] live {{.*}} (line 19)
// X's tile written, the barrier, the read of X[0, 0], the barrier, Y's matmul
// CHECK: nvvm.mma.sync
// CHECK: gpu.barrier
// CHECK-NOT: llvm.store
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> f32
// CHECK-NOT: nvvm.mma.sync
// CHECK: gpu.barrier
// CHECK: nvvm.mma.sync
