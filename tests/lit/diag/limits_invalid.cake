// Limits of cake_limits.h, each reported where the input crosses it. The
// large inputs are generated here.
// RUN: python3 -c "print('program p\nconst C = ' + '1 + ' * 100000 + '1')" > %t.const.cake
// RUN: not %cakec %t.const.cake --emit=cir 2>&1 | FileCheck %s --check-prefix=CONST
// RUN: python3 -c "print('program p\ndim T\nsequence T, chunk 16\nin x : f32[T, 16]\nout y : f32[T, 16]\nkernel k over (c in chunks) {\n  a = load x[c, :]\n  store y[c, :] = ' + 'a + ' * 100000 + 'a\n}\nentry fwd = k')" > %t.kernel.cake
// RUN: not %cakec %t.kernel.cake --emit=cir 2>&1 | FileCheck %s --check-prefix=KERNEL
// RUN: python3 -c "print('program p\nconst C = ' + '(' * 20000 + '1' + ')' * 20000)" > %t.parens.cake
// RUN: not %cakec %t.parens.cake --emit=cir 2>&1 | FileCheck %s --check-prefix=PARENS
// RUN: python3 -c "print('program p\nconst C = ' + '-' * 100000 + '1')" > %t.minus.cake
// RUN: not %cakec %t.minus.cake --emit=cir 2>&1 | FileCheck %s --check-prefix=PARENS
// RUN: python3 -c "print('program p\ndim T\nsequence T, chunk 16\nin x : f32[T, 16]\nout y : f32[T, 16]\nkernel k over (c in chunks) {\n  a = load x[c, :]\n' + '  a = a * 2.0\n' * 1001 + '  store y[c, :] = a\n}\nentry fwd = k')" > %t.chain.cake
// RUN: not %cakec %t.chain.cake --emit=cir 2>&1 | FileCheck %s --check-prefix=CHAIN
// RUN: python3 -c "print('program p\n' + ''.join('in t%d : f32[4]\n' % i for i in range(257)))" > %t.tensors.cake
// RUN: not %cakec %t.tensors.cake --emit=cir 2>&1 | FileCheck %s --check-prefix=TENSORS
// RUN: python3 -c "print('program p\n' + ''.join('option o%d = a in (a)\n' % i for i in range(17)))" > %t.options.cake
// RUN: not %cakec %t.options.cake --emit=cir 2>&1 | FileCheck %s --check-prefix=OPTIONS
// RUN: python3 -c "print('program ' + 'p' * 129 + '\nkernel k over (h in 1) { }')" > %t.name.cake
// RUN: not %cakec %t.name.cake --emit=cir 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: python3 -c "print('program p\nkernel k over (h in 1) {\n' + '  if 1 == 1 {\n' * 1001 + '  a = 1.0\n' + '}\n' * 1002)" > %t.blocks.cake
// RUN: not %cakec %t.blocks.cake --emit=cir 2>&1 | FileCheck %s --check-prefix=BLOCKS
// RUN: python3 -c "print('program p\n' + 'if 1 == 2 { } else ' * 5000 + '{ }\nkernel k over (h in 1) { }')" > %t.elif.cake
// RUN: not %cakec %t.elif.cake --emit=cir 2>&1 | FileCheck %s --check-prefix=PARENS
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
// BLOCKS: limits_invalid.cake.tmp.blocks.cake:3:3: error: blocks nested too deeply (more than 1000 levels, `else if` included)
// NAME: limits_invalid.cake.tmp.name.cake:1:9: error: a name has at most 128 characters; this one has 129
// CONST: limits_invalid.cake.tmp.const.cake:2:4013: error: expression nested too deeply (more than 1000 levels); split it into named steps
// KERNEL: limits_invalid.cake.tmp.kernel.cake:8:4021: error: expression nested too deeply (more than 1000 levels); split it into named steps
// PARENS: error: expression or block nested too deeply (the parser's stack holds 10000 levels)
// CHAIN: limits_invalid.cake.tmp.chain.cake:1008:9: error: expression nested too deeply: this value ends a chain of more than 1000 operations; split the computation (a scan, a stored temp)
// TENSORS: limits_invalid.cake.tmp.tensors.cake:258:4: error: a program has at most 256 tensors; this is the 257th
// OPTIONS: limits_invalid.cake.tmp.options.cake:18:8: error: a program may declare at most 16 options
program limits_invalid
dim T, N
sequence T, docs N, chunk 16
in w : f32[2048, 1024]
in v : f32[2048]
in u : f32[1024]
out y : f32[T, 16]
kernel big over (c in chunks) {
  a = load w[:, :]
  b = load v[:][:, None] * load u[:][None, :]
}
kernel scan over (n in docs) {
  a0 = 0.0  a1 = 0.0  a2 = 0.0  a3 = 0.0  a4 = 0.0  a5 = 0.0  a6 = 0.0  a7 = 0.0  a8 = 0.0
  a9 = 0.0  a10 = 0.0  a11 = 0.0  a12 = 0.0  a13 = 0.0  a14 = 0.0  a15 = 0.0  a16 = 0.0
  for c in chunks(n) carry a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16 {
    a0 = a0 + 1.0
  }
}
entry fwd = big, scan
// CHECK: limits_invalid.cake:40:7: error: a tile of 2097152 elements (f32[2048, 1024]) is too large; a tile has at most 1048576 elements
// CHECK: limits_invalid.cake:41:26: error: a tile of 2097152 elements (f32[2048, 1024]) is too large; a tile has at most 1048576 elements
// CHECK: limits_invalid.cake:46:98: error: a scan carries at most 16 values; this is the 17th
