// Prefetched tiles of a scan get a second buffer, latest refill first, while
// the blocks per SM that shared memory allows stay what they were: here the
// small tile x (9 KB) is double-buffered and copied for the next chunk early
// in the step (behind the first matmul's mma); a second buffer for the large tile y (41 KB) would leave
// one block per SM instead of two, so it keeps one buffer, refilled after
// its last read.
// RUN: env CAKE_TRACE_PLAN=1 %cakec %s --emit=mlir --arch=sm_90a -j1 2>&1 >/dev/null | FileCheck %s --check-prefix=PLAN
// RUN: %cakec %s --emit=mlir --arch=sm_90a | FileCheck %s
program prefetch_buffers
dim T, N, H
const C = 64
sequence T, docs N, chunk C
in  a   : bf16[T, H, 64]
in  big : bf16[T, H, 320]
in  s0  : f32[N, H, 64, 64] optional
out o   : f32[N, H, 64, 64]
kernel k over (n in docs, h in H) {
  S = load s0[n, h, :, :] or 0
  for c in chunks(n) carry S {
    x = load a[c, h, :]
    y = load big[c, h, :]
    S = S * 0.5 + x.T @ x + sum(y, 1)[None, :]
  }
  store o[n, h, :, :] = S
}
entry fwd = k
// PLAN: plan of kernel k: 95616 bytes of shared memory
// PLAN: load           bf16   64x64      9216 B x2
// PLAN: load           bf16   64x320    41984 B x1
// CHECK: gpu.func @k_{{.*}}nvvm.minctasm = 2
// the first chunk's tiles, then the loop
// CHECK: nvvm.cp.async.commit.group
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// x for the next chunk, into the other buffer: behind the first pass of the
// step's first matmul (x.T @ x, two passes), on every step (no branch)
// CHECK-NOT: scf.if
// CHECK: nvvm.mma.sync
// CHECK-NOT: scf.if
// CHECK: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.mma.sync
// y for the next chunk, after its last read
// CHECK: scf.if
// CHECK: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.commit.group
// CHECK: scf.yield
// the last step's copies of x have landed before the space is reused
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
