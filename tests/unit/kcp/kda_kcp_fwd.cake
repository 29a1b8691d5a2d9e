// kda_kcp_fwd.cake - the KDA forward, context-parallel, summary mode: one
// packed sequence split across R ranks (the layer's gate: softplus, q/k L2
// norm, beta logits; one head per value head).
//
// A fragment maps the state coming into it affinely, S_out = M S_in + X
// (../../../README.md, the design notes' KCP section). Each rank computes,
// for each of its fragments, M (the state pass over the fragment from the
// identity, with no values: M <- (Diag(exp(gl)) - Kd^T W) M) and X (the
// ordinary state pass from zero, or from h0 on a fragment that starts its
// document). Both are gathered from every rank; each fragment then folds
// the maps of the fragments before it in its document, in document order,
// into its incoming state, and the ordinary state pass runs from there.
// The local stages are kda_fwd.cake's. With exact arithmetic the outputs
// equal the single-rank program's on any partition (the chunked form is
// exact whatever the chunk boundaries); in bf16/fp32 they differ at the
// rounding level (the fold's products have bf16 operands).
program kda_kcp_fwd

dim   T, N, H, R, F
const K = 128, V = 128, C = 64, BV = 32
sequence T, docs N, chunk C
ranks R, fragments F

param scale : f32 = rsqrt(K)

in  q, k : bf16[T, H, K]
in  v    : bf16[T, H, V]
in  g    : bf16[T, H, K]              // the raw gate
in  A_log : f32[H]
in  dt_bias : f32[H, K]
in  beta : bf16[T, H]                 // logits
in  h0   : f32[N, H, K, V] optional   // a document's initial state, on the fragment that starts it
out o    : bf16[T, H, V]
out ht   : f32[N, H, K, V] optional   // the state after each fragment (a document's final state
                                      // on the fragment that ends it)

temp w, qg, kd : bf16[T, H, K]
temp u  : bf16[T, H, V]
temp pq : bf16[T, H, C]
temp gx : f32[chunks, H, K]
temp sm  : f32[F, H, K, K]            // each fragment's M
temp sx  : f32[F, H, K, V]            // and X
temp gsm : f32[R, F, H, K, K]         // every rank's
temp gsx : f32[R, F, H, K, V]
temp hin : f32[N, H, K, V]            // each fragment's incoming state

kernel prep over (c in chunks, h in H) threads 256 {
  qraw = load q[c, h, :]
  kraw = load k[c, h, :]
  qn = qraw * rsqrt(sum(qraw * qraw, 1) + 1e-6)[:, None]
  kn = kraw * rsqrt(sum(kraw * kraw, 1) + 1e-6)[:, None]
  gt = -exp(load A_log[h]) * softplus(load g[c, h, :] + load dt_bias[h, :][None, :])
  G = cumsum(where(valid(c)[:, None], gt, 0.0), 0)
  b = sigmoid(load beta[c, h])
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

// M, a block of BV columns: the state pass from the identity, without values
kernel summ_m over (n in docs, h in H, j in K / BV) {
  M = where(iota(K)[:, None] == iota(BV)[None, :] + j * BV, 1.0, 0.0)
  for c in chunks(n) carry M {
    ub = (-(load w[c, h, :] @ (M as bf16))) as bf16
    M = load gx[c, h, :][:, None] * M + load kd[c, h, :].T @ ub
  }
  store sm[n, h, :, j] = M
}

// X: the state pass from zero, or from h0 where the document starts
kernel summ_x over (n in docs, h in H, j in V / BV) {
  S = where(continues(n), 0.0, load h0[n, h, :, j] or 0)
  for c in chunks(n) carry S {
    ub = (load u[c, h, j] - load w[c, h, :] @ (S as bf16)) as bf16
    S = load gx[c, h, :][:, None] * S + load kd[c, h, :].T @ ub
  }
  store sx[n, h, :, j] = S
}

exchange gather_m = all_gather(sm) -> gsm
exchange gather_x = all_gather(sx) -> gsx

// the incoming state: the maps of the fragments before it, in document order
kernel fold over (n in docs, h in H, j in V / BV) {
  S = where(continues(n), 0.0, load h0[n, h, :, j] or 0)
  for r, f in before(n) carry S {
    S = (load gsm[r, f, h, :, :] as bf16) @ (S as bf16) + load gsx[r, f, h, :, j]
  }
  store hin[n, h, :, j] = S
}

kernel chain over (n in docs, h in H, j in V / BV) {
  S = load hin[n, h, :, j]
  for c in chunks(n) carry S {
    Sb = S as bf16
    ub = (load u[c, h, j] - load w[c, h, :] @ Sb) as bf16
    store o[c, h, j] = (load qg[c, h, :] @ Sb + load pq[c, h, :] @ ub) as bf16
    S = load gx[c, h, :][:, None] * S + load kd[c, h, :].T @ ub
  }
  store ht[n, h, :, j] = S
}

entry fwd = prep, summ_m, summ_x, gather_m, gather_x, fold, chain
