// The valid counterpart of window_invalid.cake: chunk, block, scalar and full indices.
// RUN: %cakec %s --emit=cir | FileCheck %s
program window
dim T, H
const C = 16, V = 64, BV = 32
sequence T, chunk C
in  x : f32[T, H, V]
out y : f32[T, H, V]
kernel k over (c in chunks, h in H, j in V / BV) {
  a = load x[c, h, j]
  r = load x[c, h, 5]
  store y[c, h, j] = a + r[:, None]
}
// CHECK: = load x[chunk %0, %1, block %2 x 32] : f32[16, 32]
// CHECK: = load x[chunk %0, %1, %{{[0-9]+}}] : f32[16]
// CHECK: store y[chunk %0, %1, block %2 x 32] = %{{[0-9]+}}
