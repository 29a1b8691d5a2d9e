// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program chunks_invalid2
dim T
const C = 16
sequence T, chunk C
in x : f32[T, 32]
out per : f32[chunks, 32]
kernel k over (c in chunks) {
  a = load x[c, :]
  t = unit_lower_inv(a)
  store per[c, :] = load x[c, :]
}
// CHECK: chunks_invalid2.cake:10:7: error: unit_lower_inv needs a square float tile, got f32[16, 32]
// CHECK: chunks_invalid2.cake:11:21: error: shape mismatch: the window of 'per' is f32[32], the stored value is f32[16, 32]
