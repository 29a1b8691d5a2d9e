// A counted loop on the GPU: `scf.for` over max(N, 0) steps; windows whose
// index is computed from grid indices and dims (a key head h / (HV / H))
// are still copied with cp.async at the kernel's start, and a window
// indexed by the loop (the group's heads, g * G + i) is copied for the
// next step while the current one runs (double-buffered: at the top of the
// step), with the index computed again for that step.
// RUN: %cakec %s --emit=mlir --arch=sm_90a | FileCheck %s
// RUN: %cakec %s --emit=ptx --arch=sm_90a | FileCheck %s --check-prefix=PTX
program loop_ptx
dim T, H, HV
const C = 64, K = 64
sequence T, chunk C
require HV % H == 0
in  q : bf16[T, H, K]
in  v : bf16[T, HV, K]
out o : f32[T, HV, C]
kernel k over (c in chunks, h in HV) {
  G = HV / H
  qq = load q[c, h / G, :]
  acc = qq @ qq.T
  for i in range(G) carry acc {
    vv = load v[c, (h / G) * G + i, :]
    acc = acc + qq @ vv.T
  }
  store o[c, h, :] = acc
}
entry fwd = k
// the hoisted copy of q (its index: a division of the grid index by HV / H)
// CHECK: arith.divsi
// CHECK: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// the loop's count, and the first step's copy of v before it
// CHECK: [[N:%[0-9]+]] = arith.maxsi %{{[0-9]+}}, %{{.*}} : i32
// CHECK: [[COUNT:%[0-9]+]] = arith.subi [[N]], %{{.*}} : i32
// CHECK: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.commit.group
// CHECK: scf.for %[[S:arg[0-9]+]] = %{{.*}} to [[COUNT]] step
// CHECK-NEXT: [[I:%[0-9]+]] = arith.addi %{{.*}}, %[[S]] : i32
// CHECK: [[NEXT:%[0-9]+]] = arith.addi [[I]], %c1
// CHECK: nvvm.cp.async.wait.group 0
// the next step's copy of v, at index (h / G) * G + (i + 1), into the
// other buffer before this step's work
// CHECK: scf.if
// CHECK: arith.addi %{{[0-9]+}}, [[NEXT]] : i32
// CHECK: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.mma.sync
// PTX: .maxntid 128, 1, 1
// PTX: cp.async.cg.shared.global
// PTX: cp.async.wait_group 0
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
