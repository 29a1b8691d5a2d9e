program kda_fwd

option gate = safe in (safe, softplus, external)
option qk_norm = true in (true, false)
option beta_logits = true in (true, false)
option vblock = v32 in (v32, v16) prefer v16 when N * HV * (V / 16) <= 2 * SMS

dim   T, N, H, HV                     // tokens, documents, key heads, value heads
require HV % H == 0
const K = 128, V = 128, C = 64
if vblock == v16 {
  const BV = 16
} else {
  const BV = 32
}
sequence T, docs N, chunk C

param scale : f32 = rsqrt(K)
param lower_bound : f32 = -5.0

in  q, k : bf16[T, H, K]
in  v    : bf16[T, HV, V]
if gate == external {
  in g : f32[T, HV, K]                // the log-decay
} else {
  in g : bf16[T, HV, K]               // the raw gate
  in A_log : f32[HV]
  in dt_bias : f32[HV, K]
}
in  beta : bf16[T, HV]                // logits or values (option beta_logits)
in  h0   : f32[N, HV, K, V] optional  // initial state per document
out o    : bf16[T, HV, V]
out ht   : f32[N, HV, K, V] optional  // final state per document

temp w, qg, kd : bf16[T, HV, K]       // W;  scale Q exp(G);  K exp(G_C - G)
temp u  : bf16[T, HV, V]              // U~
temp pq : bf16[T, HV, C]              // scale P
temp gx : f32[chunks, HV, K]          // exp(G_C), the chunk's state decay

kernel prep over (c in chunks, h in HV) threads 256 {
  hk = h / (HV / H)                   // the key head of value head h
  qraw = load q[c, hk, :]
  kraw = load k[c, hk, :]
  if qk_norm {
    qn = qraw * rsqrt(sum(qraw * qraw, 1) + 1e-6)[:, None]
    kn = kraw * rsqrt(sum(kraw * kraw, 1) + 1e-6)[:, None]
  } else {
    qn = qraw as f32
    kn = kraw as f32
  }
  graw = load g[c, h, :]
  if gate == safe {
    gt = lower_bound * sigmoid(exp(load A_log[h]) * (graw + load dt_bias[h, :][None, :]))
  } else if gate == softplus {
    gt = -exp(load A_log[h]) * softplus(graw + load dt_bias[h, :][None, :])
  } else {
    gt = graw
  }
  G = cumsum(where(valid(c)[:, None], gt, 0.0), 0)
  if beta_logits {
    b = sigmoid(load beta[c, h])
  } else {
    b = load beta[c, h] as f32
  }
  eg = exp(G)
  store qg[c, h, :] = (qn * eg * scale) as bf16
  store pq[c, h, :] = (decay_dot(qn, kn, G) * scale) as bf16
  A  = tril(decay_dot(kn, kn, G), -1) * b[:, None]
  Ti = unit_lower_inv(A) as bf16
  store w[c, h, :] = (Ti @ ((kn * eg * b[:, None]) as bf16)) as bf16
  store u[c, h, :] = (Ti @ ((load v[c, h, :] * b[:, None]) as bf16)) as bf16
  gl = G[C - 1, :]
  store kd[c, h, :] = (kn * exp(gl[None, :] - G)) as bf16
  store gx[c, h, :] = exp(gl)
}

kernel chain over (n in docs, h in HV, j in V / BV) {
  S = load h0[n, h, :, j] or 0
  for c in chunks(n) carry S {
    Sb = S as bf16
    un = load u[c, h, j] - load w[c, h, :] @ Sb
    ub = un as bf16
    store o[c, h, j] = (load qg[c, h, :] @ Sb + load pq[c, h, :] @ ub) as bf16
    S = load gx[c, h, :][:, None] * S + load kd[c, h, :].T @ ub
  }
  store ht[n, h, :, j] = S
}

entry fwd = prep, chain
entry fwd_prep = prep      // one stage each, for profiling
entry fwd_chain = chain
