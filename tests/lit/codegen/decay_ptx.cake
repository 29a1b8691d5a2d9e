// decay(G), computed where it is used (fused into a store) and stored in
// shared memory (two uses): exp of G[r] - G[j] below the diagonal, and of
// -inf (which is 0) above it, so the exponent G[r] - G[j] > 0 of the upper
// triangle never reaches exp however strong the decay.
// RUN: %cakec %s --emit=mlir --arch=sm_90a | FileCheck %s
// RUN: %cakec %s --emit=ptx --arch=sm_90a | FileCheck %s --check-prefix=PTX
program decay_ptx
dim T, H
const C = 64
sequence T, chunk C
in  g : f32[T, H]
in  q : bf16[T, H, 32]
out o1, o2 : f32[T, H, C]
kernel fused over (c in chunks, h in H) {
  store o1[c, h, :] = decay(load g[c, h][:, None])
}
kernel stored over (c in chunks, h in H) {
  D = decay(cumsum(load g[c, h], 0))
  qb = load q[c, h, :]
  store o1[c, h, :] = (qb @ qb.T) * D
  store o2[c, h, :] = D * 0.5
}
entry fwd = fused, stored
// CHECK-LABEL: // ---- kernel fused_
// CHECK: [[NINF:%cst[_0-9]*]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: [[KEEP:%[0-9]+]] = arith.cmpi sle, [[J:%[0-9]+]], [[R:%[0-9]+]] : i32
// CHECK-NEXT: [[DIFF:%[0-9]+]] = arith.subf %{{[0-9]+}}, %{{[0-9]+}} fastmath<contract> : f32
// CHECK-NEXT: [[X:%[0-9]+]] = arith.select [[KEEP]], [[DIFF]], [[NINF]] : f32
// CHECK: [[Y:%[0-9]+]] = arith.mulf [[X]], %{{.*}} : f32
// CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"([[Y]])
// CHECK-LABEL: // ---- kernel stored_
// CHECK: arith.constant 0xFF800000 : f32
// CHECK-NEXT: arith.cmpi sle
// CHECK-NEXT: arith.subf
// CHECK-NEXT: arith.select
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: llvm.store
// PTX-LABEL: // ---- kernel fused_
// PTX: selp.f32 {{.*}}0fFF800000
// PTX: ex2.approx.ftz.f32
// PTX-LABEL: // ---- kernel stored_
// PTX: selp.f32 {{.*}}0fFF800000
// PTX: ex2.approx.ftz.f32
// PTX: mma.sync
