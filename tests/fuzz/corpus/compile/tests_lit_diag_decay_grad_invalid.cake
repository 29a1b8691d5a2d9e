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
