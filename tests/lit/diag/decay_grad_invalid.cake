// Misuse of decay_mm and decay_mm_t.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program decay_grad_invalid
dim T, H
const C = 16, K = 32
sequence T, chunk C
in  a, g : f32[T, H, K]
out da : f32[T, H, K]
kernel k over (c in chunks, h in H) {
  x = load a[c, h, :]
  G = load g[c, h, :]
  m = tril(decay_dot(x, x, G))
  store da[c, h, :] = decay_mm(x, x, G)
  store da[c, h, :] = decay_mm_t(m, x, G[:, 0])
  store da[c, h, :] = decay_mm(tril(decay_dot(x, x, G)), x, G.T)
  store da[c, h, :] = decay_mm_t(tril(decay_dot(x, x, G)), x)
}
entry bwd = k
// CHECK: decay_grad_invalid.cake:13:32: error: decay_mm argument 1 must be [16, 16] (square, a row per row of argument 2), got f32[16, 32]
// CHECK: decay_grad_invalid.cake:14:41: error: decay_mm_t argument 3 must be a rank-2 float tile, got f32[16]
// CHECK: decay_grad_invalid.cake:15:63: error: shape mismatch in decay_mm: argument 3 is f32[32, 16], argument 2 is f32[16, 32]
// CHECK: decay_grad_invalid.cake:16:23: error: decay_mm_t takes 3 arguments, got 2
