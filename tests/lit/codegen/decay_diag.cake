// decay_dot's diagonal 16x16 blocks: their lower-left 8x8 quarter on tensor
// cores (one mma.m16n8k16 per 16 channels), the two 8x8 triangles left by
// lanes: a warp task pairs row 7 - p with row p of a triangle (9 elements for
// every lane, in a loop of 9 steps), eight
// lanes split each element's channels, and a fixed butterfly over them
// (xor 4, 2, 1) adds their partial sums before the one write. b's row scale
// (kn = k * rsqrt(...)[:, None]) is applied once per element, after the
// butterfly, not to each term.
// RUN: %cakec %s --emit=mlir --arch=sm_90a | FileCheck %s
// RUN: %cakec %s --emit=ptx --arch=sm_90a | FileCheck %s --check-prefix=PTX
program decay_diag
dim T, H
const C = 64, K = 128
sequence T, chunk C
in  k : bf16[T, H, K]
in  g : f32[T, H, K]
out a : bf16[T, H, C]
kernel diag over (c in chunks, h in H) {
  ks = load k[c, h, :]
  kn = ks * rsqrt(sum(ks * ks, 1) + 1e-6)[:, None]
  G = cumsum(load g[c, h, :], 0)
  store a[c, h, :] = tril(decay_dot(kn, kn, G), -1) as bf16
}
// CHECK-LABEL: // ---- kernel diag_
// CHECK: nvvm.mma.sync
// CHECK: [[STEPS:%c9_i32[_0-9]*]] = arith.constant 9 : i32
// CHECK: scf.for %{{.*}} = %{{.*}} to [[STEPS]] step
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: [[S4:%shuffleResult[_0-9]*]], %{{.*}} = gpu.shuffle  xor [[X0:%[0-9]+]], %c4_i32
// CHECK-NEXT: [[X1:%[0-9]+]] = arith.addf [[X0]], [[S4]]
// CHECK: [[S2:%shuffleResult[_0-9]*]], %{{.*}} = gpu.shuffle  xor [[X1]], %c2_i32
// CHECK-NEXT: [[X2:%[0-9]+]] = arith.addf [[X1]], [[S2]]
// CHECK: [[S1:%shuffleResult[_0-9]*]], %{{.*}} = gpu.shuffle  xor [[X2]], %c1_i32
// CHECK-NEXT: [[X3:%[0-9]+]] = arith.addf [[X2]], [[S1]]
// CHECK: [[SC:%[0-9]+]] = llvm.load
// CHECK-NEXT: arith.mulf [[X3]], [[SC]]
// CHECK: scf.if
// PTX-LABEL: // ---- kernel diag_
// PTX: shfl.sync.bfly.b32 {{.*}}, 4, 31,
// PTX: shfl.sync.bfly.b32 {{.*}}, 2, 31,
// PTX: shfl.sync.bfly.b32 {{.*}}, 1, 31,
