// deltanet_fwd.cake - DeltaNet, forward, single rank.
//
// DeltaNet is the delta rule with no decay (../gdn/gdn_fwd.cake with g = 0):
// per document and head, u = beta_t (v_t - S^T k_t); S <- S + k_t u^T, i.e.
// S <- (I - beta_t k_t k_t^T) S + beta_t k_t v_t^T; o_t = scale S^T q_t
// (the current token included). The chunked form (C = 64), with S0 the
// state at the chunk's start (the WY representation of the chunk's
// C rank-one updates):
//   A  = tril(K K^T, -1) * beta,  T = (I + A)^-1
//   W  = T (beta K),  U~ = T (beta V)
//   U  = U~ - W S0                          ("v_new")
//   O  = scale (Q S0 + P U),                P = tril(Q K^T)
//   S' = S0 + K^T U
// Without a decay every gated product of gdn_fwd is a plain tensor-core
// matmul, and the chain's state update needs no per-chunk factor.
//
// Precision: the operands of the matmuls and the tensors between the stages
// are f16, not bf16 (fla's delta-rule tests run in fp16 too). Nothing decays
// the state here, so it remembers every rounding of every chunk: with bf16
// operands the error ratio against the float64 recurrence settles near
// 5.3e-3 after a few hundred tokens, above fla's 0.005; with f16 (3 more
// bits) it is 1.8e-3 (o, mostly its own bf16 rounding) and 5e-4 (ht). The
// price is f16's range: v, beta v, W, U and the state S must stay below
// 65504 in magnitude, which holds for L2-normalised keys (the delta rule is
// a contraction then) and activations of ordinary size.
// Two stages as gdn_fwd: `prep`, parallel over chunks, computes everything
// that does not depend on the state; `chain` walks each document's chunks in
// order, parallel over heads and blocks of V, carrying S in fp32, and writes
// the output and the final state.
//
// Inputs as fla's chunk_delta_rule forward: q, k [T, H, K] bf16,
// v [T, H, V] bf16, beta [T, H] bf16, h0 / ht [N, H, K, V] f32 (optional),
// packed documents from cu_seqlens.
//
// Options (each combination is a variant of the program):
//   qk_norm     q, k <- x / sqrt(sum(x^2) + 1e-6) inside the kernel
//               (fla's use_qk_l2norm_in_kernel)
//   beta_logits beta <- sigmoid(beta) inside the kernel
//   vblock      columns of V per chain block and blocks per multiprocessor:
//               v32: 32 columns, two blocks; v16: 16 columns (twice the
//               blocks, for problems with too few (document, head) pairs to
//               fill the GPU), two blocks; v16x1: 16 columns, one block per
//               multiprocessor, whose shared memory then holds two buffers
//               of every tile the chain prefetches (for problems whose blocks
//               all fit at one per multiprocessor). The runtime's choice when
//               unset
program deltanet_fwd

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
in  beta : bf16[T, H]                 // logits or values (option beta_logits)
in  h0   : f32[N, H, K, V] optional   // initial state per document
out o    : bf16[T, H, V]
out ht   : f32[N, H, K, V] optional   // final state per document

// Between the stages (workspace): 1152 B per token and head (4 x 256 + 128).
// f16: see Precision above.
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
  // rows past the document's end read k = 0 and v = 0: they add nothing
  if beta_logits {
    b = sigmoid(load beta[c, h])
  } else {
    b = load beta[c, h] as f32
  }
  // the query side first: q is then dead for the rest of the stage
  store qs[c, h, :] = (qf * scale) as f16
  store pq[c, h, :] = (tril(qh @ kh.T) * scale) as f16
  A  = tril(kh @ kh.T, -1) * b[:, None]
  Ti = unit_lower_inv(A) as f16
  store w[c, h, :] = (Ti @ ((kf * b[:, None]) as f16)) as f16
  store u[c, h, :] = (Ti @ ((load v[c, h, :] * b[:, None]) as f16)) as f16
  store kn[c, h, :] = kh
}

kernel chain over (n in docs, h in H, j in V / BV) per_sm PER_SM {
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
