// gdn_fwd.cake - Gated DeltaNet, forward, single rank.
//
// Gated DeltaNet is KDA (../kda/kda_fwd.cake, ../../design/kda.md) with one
// log-decay per token and head instead of one per key channel: per document
// and head, S <- exp(g_t) S; u = beta_t (v_t - S^T k_t); S <- S + k_t u^T;
// o_t = scale S^T q_t. The chunked form (C = 64), with G = cumsum(g) a
// column of C scalars:
//   D[r,j] = exp(G_r - G_j) for j <= r     (the decay between two rows)
//   A  = tril((K K^T) * D, -1) * beta,  T = (I + A)^-1
//   W  = T (beta K exp(G)),  U~ = T (beta V)
//   U  = U~ - W S0                          ("v_new")
//   O  = scale ((Q exp(G)) S0 + P U),       P = tril(Q K^T) * D
//   S' = exp(G_C) S0 + (K exp(G_C - G))^T U
// With a scalar decay the gated products are plain tensor-core matmuls times
// a [C, C] factor: D = decay(G), exp(G_r - G_j) on and below the diagonal
// and 0 above it (where the exponent is never evaluated, so nothing
// overflows however strong the decay), which is exact and much cheaper than
// decay_dot's per-channel products.
// Two stages as kda_fwd: `prep`, parallel over chunks, computes everything
// that does not depend on the state; `chain` walks each document's chunks in
// order, parallel over heads and blocks of V, carrying S in fp32, and writes
// the output and the final state.
//
// Inputs as fla's chunk_gated_delta_rule forward: q, k [T, H, K] bf16,
// v [T, H, V] bf16, g [T, H] f32 (the log-decay, <= 0), beta [T, H] bf16,
// h0 / ht [N, H, K, V] f32 (optional), packed documents from cu_seqlens.
//
// Options (each combination is a variant of the program):
//   qk_norm     q, k <- x / sqrt(sum(x^2) + 1e-6) inside the kernel
//               (fla's use_qk_l2norm_in_kernel)
//   beta_logits beta <- sigmoid(beta) inside the kernel
//               (fla's use_beta_sigmoid_in_kernel)
//   vblock      columns of V per chain block and blocks per multiprocessor:
//               v32: 32 columns, two blocks; v16: 16 columns (twice the
//               blocks, for problems with too few (document, head) pairs to
//               fill the GPU), two blocks; v16x1: 16 columns, one block per
//               multiprocessor, whose shared memory then holds two buffers
//               of every tile the chain prefetches (for problems whose blocks
//               all fit at one per multiprocessor). The runtime's choice when
//               unset
program gdn_fwd

option qk_norm = true in (true, false)
option beta_logits = false in (true, false)
option vblock = v32 in (v32, v16, v16x1)
  prefer v16x1 when N * H * (V / 16) <= SMS
  prefer v16 when N * H * (V / 16) <= 2 * SMS

dim   T, N, H
const K = 128, V = 128, C = 64
if vblock == v32 {
  const BV = 32, PER_SM = 2
} else if vblock == v16 {
  const BV = 16, PER_SM = 2
} else {
  const BV = 16, PER_SM = 1
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

// Between the stages (workspace): 1152 B per token and head (4 x 256 + 128),
// plus 4 B per chunk and head.
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
  // rows past the document's end read g = 0: G stays flat there
  G = cumsum(load g[c, h], 0)
  if beta_logits {
    b = sigmoid(load beta[c, h])
  } else {
    b = load beta[c, h] as f32
  }
  // exp(G_r - G_j) on and below the diagonal (<= 1 for g <= 0), 0 above it
  D = decay(G)
  eg = exp(G)
  // the query side first: q is then dead for the rest of the stage
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

kernel chain over (n in docs, h in H, j in V / BV) per_sm PER_SM {
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
