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
