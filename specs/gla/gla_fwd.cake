// gla_fwd.cake - Gated Linear Attention, forward, single rank.
//
// GLA is linear attention with a per-channel gate and no delta rule: per
// document and head, S <- Diag(exp(g_t)) S + k_t v_t^T; o_t = scale S^T q_t
// (the current token included). The chunked form (C = 64), with
// G = cumsum(g) [C, K] the cumulative log-decay inside the chunk and S0 the
// state at its start:
//   O  = scale ((Q exp(G)) S0 + P V),        P = tril(Q K^T decayed),
//        P[r,j] = sum_c q[r,c] k[j,c] exp(G[r,c] - G[j,c])  for j <= r
//   S' = Diag(exp(G_C)) S0 + (K exp(G_C - G))^T V
// P is decay_dot(Q, K, G), as in ../kda/kda_fwd.cake: every exponent it
// evaluates is <= 0 (G is non-increasing down the rows), so nothing
// overflows however strong the decay. Without the delta rule there is no
// triangular solve and no W or U: the chain multiplies by V itself.
// Two stages as kda_fwd: `prep`, parallel over chunks, computes what does
// not depend on the state; `chain` walks each document's chunks in order,
// parallel over heads and blocks of V, carrying S in fp32, and writes the
// output and the final state.
//
// Inputs as fla's chunk_gla forward: q, k [T, H, K] bf16, v [T, H, V] bf16,
// g [T, H, K] f32 (the log-decay per key channel, <= 0, e.g.
// logsigmoid(x) / 16), h0 / ht [N, H, K, V] f32 (optional), packed
// documents from cu_seqlens.
//
// Options (each combination is a variant of the program):
//   vblock      columns of V per chain block and blocks per multiprocessor:
//               v32: 32 columns, two blocks; v16: 16 columns (twice the
//               blocks, for problems with too few (document, head) pairs to
//               fill the GPU), two blocks; v16x1: 16 columns, one block per
//               multiprocessor, whose shared memory then holds two buffers
//               of every tile the chain prefetches (for problems whose blocks
//               all fit at one per multiprocessor). The runtime's choice when
//               unset
program gla_fwd

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
in  g    : f32[T, H, K]               // the log-decay per key channel (<= 0)
in  h0   : f32[N, H, K, V] optional   // initial state per document
out o    : bf16[T, H, V]
out ht   : f32[N, H, K, V] optional   // final state per document

// Between the stages (workspace): 640 B per token and head (2 x 256 + 128),
// plus 512 B per chunk and head.
temp qg, kd : bf16[T, H, K]           // scale Q exp(G);  K exp(G_C - G)
temp pq : bf16[T, H, C]               // scale P
temp gx : f32[chunks, H, K]           // exp(G_C), the chunk's state decay

kernel prep over (c in chunks, h in H) threads 256 {
  qf = load q[c, h, :] as f32
  kf = load k[c, h, :] as f32
  // rows past the document's end read g = 0: G stays flat there
  G = cumsum(load g[c, h, :], 0)
  store qg[c, h, :] = (qf * exp(G) * scale) as bf16
  store pq[c, h, :] = (decay_dot(qf, kf, G) * scale) as bf16
  gl = G[C - 1, :]
  store kd[c, h, :] = (kf * exp(gl[None, :] - G)) as bf16
  store gx[c, h, :] = exp(gl)
}

kernel chain over (n in docs, h in H, j in V / BV) per_sm PER_SM {
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
