// dtype mismatches: stores, tensor-core operands, integers and floats.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program dtype_invalid
dim T, H
const C = 16
sequence T, chunk C
in  q : bf16[T, 16]
in  g : f32[T, 16]
out o : bf16[T, 16]
kernel k over (c in chunks, h in H) {
  a = load g[c, :]
  p = a @ a.T
  store o[c, :] = a
  i = h + 0.5
  m = valid(c) + 1
}
// CHECK: dtype_invalid.cake:12:9: error: '@' operands must both be bf16 or both f16 (tensor-core inputs), got f32[16, 16] @ f32[16, 16]; convert with `as bf16`
// CHECK: dtype_invalid.cake:13:19: error: dtype mismatch: 'o' holds bf16, the stored value is f32; convert with `as bf16`
// CHECK: dtype_invalid.cake:14:9: error: dtype mismatch in '+': i32 and f32; convert one with `as`
// CHECK: dtype_invalid.cake:15:16: error: '+' needs numbers, got bool and i32
