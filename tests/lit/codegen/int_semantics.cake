// Operations whose GPU code must compute exactly what the interpreter does
// (dsl/README.md): i32 x / 0 = 0, x % 0 = x, INT32_MIN / -1 = INT32_MIN
// (the divisor is replaced by 1 where divsi / remsi would be undefined);
// float -> i32 truncates and saturates (NaN -> 0); softplus has no cut-off.
// sigmoid's and softplus's divisions are the fast reciprocal's (no div.rn).
// The ops come in source order whichever C compiler built cakec
// (lowering/mlb.h: one builder call per argument list).
// RUN: %cakec %s --emit=mlir --arch=sm_90a | FileCheck %s
// RUN: %cakec %s --emit=ptx --arch=sm_90a | FileCheck %s --check-prefix=PTX
program int_semantics
dim T
sequence T, chunk 16
in a, b : i32[T, 16]
in x : f32[T, 16]
out q, r, n : i32[T, 16]
out s, sg : f32[T, 16]
kernel k over (c in chunks) {
  p = load a[c, :]
  d = load b[c, :]
  store q[c, :] = p / d
  store r[c, :] = p % d
  store n[c, :] = load x[c, :] as i32
  store s[c, :] = softplus(load x[c, :])
  store sg[c, :] = sigmoid(load x[c, :])
}
entry fwd = k
// CHECK: %[[Z:[0-9]+]] = arith.cmpi eq, %[[Y:[0-9]+]], %{{.*}} : i32 loc(#loc5)
// CHECK: %[[MIN:[0-9]+]] = arith.cmpi eq, %[[X:[0-9]+]], %c-2147483648_i32{{.*}} : i32
// CHECK: %[[M1:[0-9]+]] = arith.cmpi eq, %[[Y]], %c-1_i32{{.*}} : i32
// CHECK: %[[OV:[0-9]+]] = arith.andi %[[MIN]], %[[M1]] : i1
// CHECK: %[[BAD:[0-9]+]] = arith.ori %[[Z]], %[[OV]] : i1
// CHECK: %[[SAFE:[0-9]+]] = arith.select %[[BAD]], %c1_i32{{.*}}, %[[Y]] : i32
// CHECK: %[[Q:[0-9]+]] = arith.divsi %[[X]], %[[SAFE]] : i32
// CHECK: arith.select %[[Z]], %c0_i32{{.*}}, %[[Q]] : i32
// CHECK: %[[Z2:[0-9]+]] = arith.cmpi eq, %[[Y2:[0-9]+]], %{{.*}} : i32 loc(#loc6)
// CHECK: %[[R:[0-9]+]] = arith.remsi %[[X2:[0-9]+]], %{{[0-9]+}} : i32
// CHECK: arith.select %[[Z2]], %[[X2]], %[[R]] : i32
// CHECK: llvm.call_intrinsic "llvm.fptosi.sat.i32.f32"
// CHECK-NOT: arith.fptosi
// CHECK: llvm.call_intrinsic "llvm.fabs.f32"
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: %[[U:[0-9]+]] = arith.addf %cst{{.*}}, %{{[0-9]+}} fastmath<contract> : f32
// CHECK: %[[U1:[0-9]+]] = arith.subf %[[U]], %cst{{.*}} : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.rcp.approx.ftz.f"(%[[U1]])
// CHECK: arith.cmpf oeq, %[[U]], %cst{{.*}} : f32
// CHECK: arith.maximumf
// sigmoid (the kernel's sixth line)
// CHECK: %[[D:[0-9]+]] = arith.addf %cst{{.*}}, %{{[0-9]+}} fastmath<contract> : f32 loc(#loc9)
// CHECK: llvm.call_intrinsic "llvm.nvvm.rcp.approx.ftz.f"(%[[D]])
// CHECK-NOT: arith.divf
// PTX: div.s32
// PTX: rem.s32
// PTX: cvt.rzi.s32.f32
// PTX-NOT: div.rn.f32
// PTX: rcp.approx.ftz.f32
