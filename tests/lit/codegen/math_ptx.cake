// tanh, log1p, expm1, logsigmoid and silu (lowering/lower_math.c): fma
// polynomials near 0, the fast ex2 with its argument's rounding compensated,
// lg2 only away from 1, no cut-offs; and every function's code is the same
// from one compilation to the next.
// RUN: %cakec %s --emit=mlir --arch=sm_90a | FileCheck %s
// RUN: %cakec %s --emit=ptx --arch=sm_90a | FileCheck %s --check-prefix=PTX
// RUN: %cakec %s --emit=ptx --arch=sm_90a > %t.1 && %cakec %s --emit=ptx --arch=sm_90a > %t.2 && diff %t.1 %t.2
program math_ptx
dim T
sequence T, chunk 16
in  x : f32[T, 16]
out o1, o2, o3, o4, o5 : f32[T, 16]
kernel th over (c in chunks) { store o1[c, :] = tanh(load x[c, :]) }
kernel lp over (c in chunks) { store o2[c, :] = log1p(load x[c, :]) }
kernel em over (c in chunks) { store o3[c, :] = expm1(load x[c, :]) }
kernel ls over (c in chunks) { store o4[c, :] = logsigmoid(load x[c, :]) }
kernel si over (c in chunks) { store o5[c, :] = silu(load x[c, :]) }
entry fwd = th, lp, em, ls, si
// tanh: copysign(m / (m + 2), x), m = expm1(2 min(|x|, 10)): no lg2
// CHECK-LABEL: // ---- kernel th_
// CHECK: arith.minimumf
// CHECK: llvm.call_intrinsic "llvm.fma.f32"
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: arith.cmpf olt
// CHECK: arith.select
// CHECK: arith.divf
// CHECK: llvm.call_intrinsic "llvm.copysign.f32"
// CHECK-NOT: lg2
// log1p: the atanh series where |x / (2 + x)| <= 1/3, lg2(1 + x) elsewhere: no ex2
// CHECK-LABEL: // ---- kernel lp_
// CHECK: arith.divf
// CHECK: llvm.call_intrinsic "llvm.fma.f32"
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"
// CHECK: arith.cmpf ole, %{{[0-9]+}}, %cst{{.*}} : f32
// CHECK: arith.select
// CHECK-NOT: ex2
// expm1: the series of x / 2, then p (p + 2), for |x| < 1; exp(x) - 1 with the
// rounding of x log2 e compensated (fma) elsewhere
// CHECK-LABEL: // ---- kernel em_
// CHECK: arith.constant 5.000000e-01 : f32
// CHECK: llvm.call_intrinsic "llvm.fma.f32"
// CHECK: arith.constant -1.040000e+02 : f32
// CHECK: arith.maximumf
// CHECK: arith.constant 8.900000e+01 : f32
// CHECK: arith.minimumf
// CHECK: llvm.call_intrinsic "llvm.fma.f32"
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: arith.cmpf olt
// CHECK: arith.select
// CHECK-NOT: lg2
// logsigmoid: -(max(-x, 0) + log1p(exp(-|x|))), log1p by the series only
// CHECK-LABEL: // ---- kernel ls_
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: arith.divf
// CHECK: llvm.call_intrinsic "llvm.fma.f32"
// CHECK: arith.maximumf
// CHECK: arith.negf
// CHECK-NOT: lg2
// silu: x n / (1 + e), e = exp(-|x|), n = 1 or e by the sign; -0 at -inf
// CHECK-LABEL: // ---- kernel si_
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: arith.cmpf oge
// CHECK: arith.select
// CHECK: arith.divf
// CHECK: arith.mulf
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: arith.cmpf oeq
// CHECK: arith.constant -0.000000e+00 : f32
// CHECK: arith.select
// CHECK-NOT: lg2
// PTX-LABEL: // ---- kernel th_
// PTX: fma.rn.f32
// PTX: ex2.approx.ftz.f32
// PTX: div.rn.f32
// PTX: copysign.f32
// PTX-NOT: lg2.approx
// PTX-LABEL: // ---- kernel lp_
// PTX: div.rn.f32
// PTX: fma.rn.f32
// PTX: lg2.approx.f32
// PTX: selp.f32
// PTX-NOT: ex2.approx
// PTX-LABEL: // ---- kernel em_
// PTX: fma.rn.f32
// PTX: ex2.approx.ftz.f32
// PTX: selp.f32
// PTX-NOT: lg2.approx
// PTX-LABEL: // ---- kernel ls_
// PTX: ex2.approx.ftz.f32
// PTX: div.rn.f32
// PTX: fma.rn.f32
// PTX-NOT: lg2.approx
// PTX-LABEL: // ---- kernel si_
// PTX: ex2.approx.ftz.f32
// PTX: div.rn.f32
// PTX: selp.f32
// PTX-NOT: lg2.approx
