// The valid counterpart of shape_invalid.cake.
// RUN: %cakec %s --emit=cir | FileCheck %s
program shape
dim T
const C = 16
sequence T, chunk C
in  x : bf16[T, 32]
in  g : f32[T, 32]
out o : f32[T, 32]
kernel k over (c in chunks) {
  a = load x[c, :]
  s = sum(load g[c, :], 1)
  b = load g[c, :] + s[:, None]
  p = a @ a.T
  d = decay_dot(a, a, cumsum(-abs(b), 0))
  store o[c, :] = b + cumsum(s, 0)[:, None] + (p + d)[:, 0][:, None]
}
// CHECK: = expand %{{[0-9]+}} axis 1 : f32[16, 1]
// CHECK: = matmul %{{[0-9]+}}, %{{[0-9]+}} : f32[16, 16]
// CHECK: = decay_dot %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} : f32[16, 16]
// CHECK: = pick %{{[0-9]+}} axis 1 at 0 : f32[16]
