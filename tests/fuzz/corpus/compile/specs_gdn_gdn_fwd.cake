program gdn_fwd

option qk_norm = true in (true, false)
option beta_logits = false in (true, false)
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
in  g    : f32[T, H]                  // the log-decay (<= 0)
in  beta : bf16[T, H]                 // logits or values (option beta_logits)
in  h0   : f32[N, H, K, V] optional   // initial state per document
out o    : bf16[T, H, V]
out ht   : f32[N, H, K, V] optional   // final state per document

temp w, qg, kd : bf16[T, H, K]        // W;  scale Q exp(G);  K exp(G_C - G)
temp u  : bf16[T, H, V]               // U~
temp pq : bf16[T, H, C]               // scale P
temp gx : f32[chunks, H]              // exp(G_C), the chunk's state decay

kernel prep over (c in chunks, h in H) threads 256 {
  qraw = load q[c, h, :]
  kraw = load k[c, h, :]
  if qk_norm {
    qn = qraw * rsqrt(sum(qraw * qraw, 1) + 1e-6)[:, None]
    kn = kraw * rsqrt(sum(kraw * kraw, 1) + 1e-6)[:, None]
  } else {
    qn = qraw as f32
    kn = kraw as f32
  }
  qb = qn as bf16
  kb = kn as bf16
  G = cumsum(load g[c, h], 0)
  if beta_logits {
    b = sigmoid(load beta[c, h])
  } else {
    b = load beta[c, h] as f32
  }
  D = decay(G)
  eg = exp(G)
  store qg[c, h, :] = (qn * (eg * scale)[:, None]) as bf16
  store pq[c, h, :] = ((qb @ kb.T) * D * scale) as bf16
  A  = tril(kb @ kb.T, -1) * D * b[:, None]
  Ti = unit_lower_inv(A) as bf16
  store w[c, h, :] = (Ti @ ((kn * (eg * b)[:, None]) as bf16)) as bf16
  store u[c, h, :] = (Ti @ ((load v[c, h, :] * b[:, None]) as bf16)) as bf16
  gl = G[C - 1]
  store kd[c, h, :] = (kn * exp(gl - G)[:, None]) as bf16
  store gx[c, h] = exp(gl)
}

kernel chain over (n in docs, h in H, j in V / BV) {
  S = load h0[n, h, :, j] or 0
  for c in chunks(n) carry S {
    Sb = S as bf16
    un = load u[c, h, j] - load w[c, h, :] @ Sb
    ub = un as bf16
    store o[c, h, j] = (load qg[c, h, :] @ Sb + load pq[c, h, :] @ ub) as bf16
    S = load gx[c, h] * S + load kd[c, h, :].T @ ub
  }
  store ht[n, h, :, j] = S
}

entry fwd = prep, chain
entry fwd_prep = prep      // one stage each, for profiling
entry fwd_chain = chain
