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
