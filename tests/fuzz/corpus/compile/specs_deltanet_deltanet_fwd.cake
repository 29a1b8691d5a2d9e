program deltanet_fwd

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
in  beta : bf16[T, H]                 // logits or values (option beta_logits)
in  h0   : f32[N, H, K, V] optional   // initial state per document
out o    : bf16[T, H, V]
out ht   : f32[N, H, K, V] optional   // final state per document

temp w, qs, kn : f16[T, H, K]         // W;  scale Q;  K (normalised)
temp u  : f16[T, H, V]                // U~
temp pq : f16[T, H, C]                // scale P

kernel prep over (c in chunks, h in H) threads 256 {
  qraw = load q[c, h, :]
  kraw = load k[c, h, :]
  if qk_norm {
    qf = qraw * rsqrt(sum(qraw * qraw, 1) + 1e-6)[:, None]
    kf = kraw * rsqrt(sum(kraw * kraw, 1) + 1e-6)[:, None]
  } else {
    qf = qraw as f32
    kf = kraw as f32
  }
  qh = qf as f16
  kh = kf as f16
  if beta_logits {
    b = sigmoid(load beta[c, h])
  } else {
    b = load beta[c, h] as f32
  }
  store qs[c, h, :] = (qf * scale) as f16
  store pq[c, h, :] = (tril(qh @ kh.T) * scale) as f16
  A  = tril(kh @ kh.T, -1) * b[:, None]
  Ti = unit_lower_inv(A) as f16
  store w[c, h, :] = (Ti @ ((kf * b[:, None]) as f16)) as f16
  store u[c, h, :] = (Ti @ ((load v[c, h, :] * b[:, None]) as f16)) as f16
  store kn[c, h, :] = kh
}

kernel chain over (n in docs, h in H, j in V / BV) {
  S = load h0[n, h, :, j] or 0
  for c in chunks(n) carry S {
    Sh = S as f16
    un = load u[c, h, j] - load w[c, h, :] @ Sh
    uh = un as f16
    store o[c, h, j] = (load qs[c, h, :] @ Sh + load pq[c, h, :] @ uh) as bf16
    S = S + load kn[c, h, :].T @ uh
  }
  store ht[n, h, :, j] = S
}

entry fwd = prep, chain
entry fwd_prep = prep      // one stage each, for profiling
entry fwd_chain = chain
