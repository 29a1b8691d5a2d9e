// Float multiplies and adds may fuse into one fma (one rounding): the MLIR
// marks them `contract`, and the PTX has the fused form. The same code fuses
// the same pairs on every compilation, so results stay bitwise repeatable.
// RUN: %cakec %s --emit=mlir --arch=sm_90a | FileCheck %s
// RUN: %cakec %s --emit=ptx --arch=sm_90a | FileCheck %s --check-prefix=PTX
// RUN: %cakec %s --emit=ptx --arch=sm_90a > %t.1 && %cakec %s --emit=ptx --arch=sm_90a > %t.2 && diff %t.1 %t.2
program contract
dim T
sequence T, chunk 16
in  x, y, z : f32[T, 16]
out o : f32[T, 16]
kernel axpy over (c in chunks) {
  store o[c, :] = load x[c, :] * load y[c, :] + load z[c, :]
}
entry fwd = axpy
// CHECK-LABEL: // ---- kernel axpy_
// CHECK: arith.mulf %{{[0-9]+}}, %{{[0-9]+}} fastmath<contract> : f32
// CHECK: arith.addf %{{[0-9]+}}, %{{[0-9]+}} fastmath<contract> : f32
// PTX-LABEL: // ---- kernel axpy_
// PTX: fma.rn.f32
// PTX-NOT: mul.rn.f32
