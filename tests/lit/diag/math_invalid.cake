// Misuse of tanh, log1p, expm1, logsigmoid and silu: each takes one float
// tile (convert an integer with `as f32`).
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program math_invalid
dim T
const C = 16
sequence T, chunk C
in  n : i32[T, 32]
in  x : f32[T, 32]
out o : f32[T, 32]
kernel k over (c in chunks) {
  i = load n[c, :]
  u = load x[c, :]
  store o[c, :] = tanh(i)
  store o[c, :] = u + silu(u > 0.0)
  store o[c, :] = log1p(u, u)
  store o[c, :] = expm1()
  store o[c, :] = logsigmoid(i * 2) + u
}
entry fwd = k
// CHECK: math_invalid.cake:14:19: error: tanh expects a float tile, got i32[16, 32]
// CHECK: math_invalid.cake:15:23: error: silu expects a float tile, got bool[16, 32]
// CHECK: math_invalid.cake:16:19: error: log1p takes 1 argument, got 2 (log1p(x) = log(1+x) -> f32)
// CHECK: math_invalid.cake:17:19: error: expm1 takes 1 argument, got 0 (expm1(x) = exp(x)-1 -> f32)
// CHECK: math_invalid.cake:18:19: error: logsigmoid expects a float tile, got i32[16, 32]
// CHECK-NOT: error
