program decay_grad
dim T, H
const C = 16, K = 32
sequence T, chunk C
in  a, b, g : f32[T, H, K]
out da, db, dg : f32[T, H, K]
kernel k over (c in chunks, h in H) {
  x = load a[c, h, :]
  y = load b[c, h, :]
  G = cumsum(load g[c, h, :], 0)
  m = tril(decay_dot(x, y, G))
  ma = decay_mm(m, y, G)
  mb = decay_mm_t(m, x, G)
  store da[c, h, :] = ma
  store db[c, h, :] = mb
  store dg[c, h, :] = x * ma - y * mb
}
entry bwd = k
