program decay
dim T, H
const C = 16
sequence T, chunk C
in  g : f32[T, H]
in  gb : bf16[T, H]
out o : f32[T, H, C]
kernel k over (c in chunks, h in H) {
  G = cumsum(load g[c, h], 0)
  store o[c, h, :] = decay(G) + decay(G[:, None]) + decay(load gb[c, h])
}
entry fwd = k
