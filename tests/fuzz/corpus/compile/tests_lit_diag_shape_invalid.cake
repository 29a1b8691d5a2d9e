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
