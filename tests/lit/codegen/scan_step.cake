// A scan step's latency chain, as the lowering shortens it:
// - Sb, the carry's cast that the step's matmuls read, is written by the
//   epilogue of the matmul that updates the carry (and once before the
//   loop), so it lives through the whole scan and the step begins with its
//   first matmul, no conversion pass before it;
// - a warp with two tiles walks K with two sets of accumulators (two mma
//   chains in flight): the k-loops step by 32 with 16 accumulators;
// - the prefetches of the next chunk read its row of the chunk table once,
//   before the step's wait.
// RUN: env CAKE_TRACE_PLAN=1 %cakec %s --emit=mlir --arch=sm_90a -j1 2>&1 >/dev/null | FileCheck %s --check-prefix=PLAN
// RUN: %cakec %s --emit=mlir --arch=sm_90a | FileCheck %s
program scan_step
dim T, N, H
const K = 64, V = 16, C = 64
sequence T, docs N, chunk C
in  w    : bf16[T, H, K]
in  h0   : f32[N, H, K, V] optional
in  kd   : bf16[T, H, K]
in  u    : bf16[T, H, V]
out o    : bf16[T, H, V]
out ht   : f32[N, H, K, V]
kernel chain over (n in docs, h in H) threads 128 {
  S = load h0[n, h, :, :] or 0
  for c in chunks(n) carry S {
    Sb = S as bf16
    ub = (load u[c, h, :] - load w[c, h, :] @ Sb) as bf16
    store o[c, h, :] = (load w[c, h, :] @ Sb) as bf16
    S = S * 0.5 + load kd[c, h, :].T @ ub
  }
  store ht[n, h, :, :] = S
}
entry fwd = chain
// PLAN: plan of kernel chain
// PLAN-DAG: carry f32 64x16 5120 B x1 at {{ *[0-9]+}} live 3..24
// PLAN-DAG: as bf16 64x16 3072 B x2 at {{ *[0-9]+}} live 3..22
// the initial Sb, then the scan: its next chunk's row, the wait, the first matmul
// CHECK: arith.truncf
// CHECK: scf.for {{.*}} -> (i32)
// CHECK: llvm.load {{.*}} -> vector<4xi32>
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: arith.truncf
// CHECK: {{%[0-9]+}}:16 = scf.for {{.*}} to %c64_i32 step %c32_i32
// CHECK-COUNT-4: nvvm.mma.sync
// CHECK: scf.yield
