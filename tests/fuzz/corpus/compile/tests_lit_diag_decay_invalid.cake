program decay_invalid
dim T, H
const C = 16, K = 32
sequence T, chunk C
in  g : f32[T, H, K]
in  n : i32[T, H]
out o : f32[T, H, C]
kernel k over (c in chunks, h in H) {
  G = cumsum(load g[c, h, :], 0)
  store o[c, h, :] = decay(G)
  store o[c, h, :] = decay(load n[c, h])
  store o[c, h, :] = decay(G[:, 0], G[:, 1])
  store o[c, h, :] = decay(G[:, 0][None, :])
  store o[c, h, :] = decay(G[0, 0]) + 0.0 * decay(G[:, 0])
  store o[c, h, :] = decay(G[:, 0] > 0.0)
}
entry fwd = k
