// The valid counterpart of limits_invalid.cake: everything at its limit.
// RUN: python3 -c "print('program p\nconst C = ' + '1 + ' * 999 + '1\nkernel k over (h in C) { }')" > %t.const.cake
// RUN: %cakec %t.const.cake --emit=cir | FileCheck %s --check-prefix=CONST
// RUN: python3 -c "print('program p\ndim T\nsequence T, chunk 16\nin x : f32[T, 16]\nout y : f32[T, 16]\nkernel k over (c in chunks) {\n  a = load x[c, :]\n' + '  a = a * 2.0\n' * 999 + '  store y[c, :] = a\n}\nentry fwd = k')" > %t.chain.cake
// RUN: %cakec %t.chain.cake --emit=cir | FileCheck %s --check-prefix=CHAIN
// RUN: %cakec %t.chain.cake --emit=mlir --arch=sm_90a | FileCheck %s --check-prefix=CHAIN-MLIR
// RUN: python3 -c "print('program p\n' + ''.join('in t%d : f32[4]\n' % i for i in range(256)) + ''.join('option o%d = a in (a)\n' % i for i in range(16)) + 'kernel k over (h in 1) { }')" > %t.many.cake
// RUN: %cakec %t.many.cake --emit=cir | FileCheck %s --check-prefix=MANY
// RUN: python3 -c "print('program ' + 'p' * 128 + '\nkernel k over (h in 1) { }')" > %t.name.cake
// RUN: %cakec %t.name.cake --emit=cir | FileCheck %s --check-prefix=NAME
// RUN: python3 -c "print('program p\nkernel k over (h in 1) {\n' + '  if 1 == 1 {\n' * 1000 + '  a = 1.0\n' + '}\n' * 1001)" > %t.blocks.cake
// RUN: %cakec %t.blocks.cake --emit=cir | FileCheck %s --check-prefix=BLOCKS
// RUN: %cakec %s --emit=cir | FileCheck %s
// BLOCKS: kernel k over (h in 1)
// NAME: program {{p{128}$}}
// CONST: kernel k over (h in 1000)
// CHAIN: %1999 = * %1997, %1998 : f32[16, 16]
// CHAIN-MLIR: gpu.func @k_
// MANY: tensor in t255 : f32[4]
program limits
dim T, N
sequence T, docs N, chunk 16
in v : f32[1024]
in u : f32[1024]
out y : f32[T, 16]
out z : f32[T, 16]
kernel big over (c in chunks) {
  b = load v[:][:, None] * load u[:][None, :]
  store z[c, :] = load y[c, :] + b[0, 0]
}
kernel scan over (n in docs) {
  a0 = 0.0  a1 = 0.0  a2 = 0.0  a3 = 0.0  a4 = 0.0  a5 = 0.0  a6 = 0.0  a7 = 0.0
  a8 = 0.0  a9 = 0.0  a10 = 0.0  a11 = 0.0  a12 = 0.0  a13 = 0.0  a14 = 0.0  a15 = 0.0
  for c in chunks(n) carry a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15 {
    a0 = a0 + 1.0  a1 = a1 + 1.0  a2 = a2 + 1.0  a3 = a3 + 1.0  a4 = a4 + 1.0  a5 = a5 + 1.0  a6 = a6 + 1.0
    a7 = a7 + 1.0  a8 = a8 + 1.0  a9 = a9 + 1.0  a10 = a10 + 1.0  a11 = a11 + 1.0  a12 = a12 + 1.0
    a13 = a13 + 1.0  a14 = a14 + 1.0  a15 = a15 + 1.0
  }
}
entry fwd = big, scan
// CHECK: = * %{{[0-9]+}}, %{{[0-9]+}} : f32[1024, 1024]
// CHECK: for over chunks of doc %{{[0-9]+}} carry(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}})
