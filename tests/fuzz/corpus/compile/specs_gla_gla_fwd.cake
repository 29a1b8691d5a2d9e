program gla_fwd

option vblock = v32 in (v32, v16) prefer v16 when N * H * (V / 16) <= 2 * SMS

dim   T, N, H
const K = 128, V = 128, C = 64
if vblock == v16 {
  const BV = 16
} else {
  const BV = 32
}
sequence T, docs N, chunk C

param scale : f32 = rsqrt(K)

in  q, k : bf16[T, H, K]
in  v    : bf16[T, H, V]
in  g    : f32[T, H, K]               // the log-decay per key channel (<= 0)
in  h0   : f32[N, H, K, V] optional   // initial state per document
out o    : bf16[T, H, V]
out ht   : f32[N, H, K, V] optional   // final state per document

temp qg, kd : bf16[T, H, K]           // scale Q exp(G);  K exp(G_C - G)
temp pq : bf16[T, H, C]               // scale P
temp gx : f32[chunks, H, K]           // exp(G_C), the chunk's state decay

kernel prep over (c in chunks, h in H) threads 256 {
  qf = load q[c, h, :] as f32
  kf = load k[c, h, :] as f32
  G = cumsum(load g[c, h, :], 0)
  store qg[c, h, :] = (qf * exp(G) * scale) as bf16
  store pq[c, h, :] = (decay_dot(qf, kf, G) * scale) as bf16
  gl = G[C - 1, :]
  store kd[c, h, :] = (kf * exp(gl[None, :] - G)) as bf16
  store gx[c, h, :] = exp(gl)
}

kernel chain over (n in docs, h in H, j in V / BV) {
  S = load h0[n, h, :, j] or 0
  for c in chunks(n) carry S {
    Sb = S as bf16
    vc = load v[c, h, j]
    store o[c, h, j] = (load qg[c, h, :] @ Sb + load pq[c, h, :] @ vc) as bf16
    S = load gx[c, h, :][:, None] * S + load kd[c, h, :].T @ vc
  }
  store ht[n, h, :, j] = S
}

entry fwd = prep, chain
entry fwd_prep = prep      // one stage each, for profiling
entry fwd_chain = chain
