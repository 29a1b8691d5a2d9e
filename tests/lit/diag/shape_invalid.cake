// Shape mismatches in arithmetic, matmul, stores and builtins.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program shape_invalid
dim T
const C = 16
sequence T, chunk C
in  x : bf16[T, 32]
in  g : f32[T, 32]
out o : f32[T, 32]
kernel k over (c in chunks) {
  a = load x[c, :]
  s = sum(load g[c, :], 1)
  b = load g[c, :] + s
  p = a @ a
  store o[c, :] = s
  d = decay_dot(a, a, s)
  t = cumsum(s, 2)
}
// CHECK: shape_invalid.cake:13:20: error: shape mismatch in '+': f32[16, 32] and f32[16] have different ranks; use v[:, None] for a column or v[None, :] for a row
// CHECK: shape_invalid.cake:14:9: error: shape mismatch in '@': bf16[16, 32] @ bf16[16, 32] (inner dimensions 32 and 16 differ)
// CHECK: shape_invalid.cake:15:19: error: shape mismatch: the window of 'o' is f32[16, 32], the stored value is f32[16]
// CHECK: shape_invalid.cake:16:23: error: decay_dot argument 3 must be a rank-2 float tile, got f32[16]
// CHECK: shape_invalid.cake:17:17: error: axis 2 is out of range for a rank-1 tile
