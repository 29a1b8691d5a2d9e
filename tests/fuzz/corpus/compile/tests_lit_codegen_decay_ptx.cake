program decay_ptx
dim T, H
const C = 64
sequence T, chunk C
in  g : f32[T, H]
in  q : bf16[T, H, 32]
out o1, o2 : f32[T, H, C]
kernel fused over (c in chunks, h in H) {
  store o1[c, h, :] = decay(load g[c, h][:, None])
}
kernel stored over (c in chunks, h in H) {
  D = decay(cumsum(load g[c, h], 0))
  qb = load q[c, h, :]
  store o1[c, h, :] = (qb @ qb.T) * D
  store o2[c, h, :] = D * 0.5
}
entry fwd = fused, stored
