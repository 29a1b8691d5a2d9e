// kda_fwd.cake - Kimi Delta Attention, forward, single rank.
//
// The chunked form of ../../design/kda.md (C = 64): per chunk
//   G  = cumsum(g)                        (the gate's log-decay, per channel)
//   A  = tril(beta * (K K^T decayed), -1), T = (I + A)^-1
//   W  = T (beta K exp(G)),  U~ = T (beta V)
//   U  = U~ - W S0                         ("v_new")
//   O  = scale ((Q exp(G)) S0 + P U),      P = tril(Q K^T decayed)
//   S' = Diag(exp(G_C)) S0 + (K exp(G_C - G))^T U
// in two stages: `prep`, parallel over chunks, computes everything that does
// not depend on the state; `chain` walks each document's chunks in order,
// parallel over heads and blocks of V, carrying S in fp32, and writes the
// output and the final state. The per-chunk states are never written.
//
// Grouped value heads (GVA): q and k have H heads, v, the gate, beta, the
// state and o have HV heads, HV a multiple of H; value head h reads key head
// h / (HV / H). Everything after the loads of q and k is per value head, so
// HV = H is the plain program (one integer division more per block).
//
// Options (each combination is a variant of the program):
//   gate        safe:     g = lower_bound * sigmoid(exp(A_log) * (g_raw + dt_bias))
//               softplus: g = -exp(A_log) * softplus(g_raw + dt_bias)
//               external: g is the log-decay itself (f32, <= 0)
//   qk_norm     q, k <- x / sqrt(sum(x^2) + 1e-6) inside the kernel
//   beta_logits beta <- sigmoid(beta) inside the kernel
//   vblock      columns of V per chain block and blocks per multiprocessor:
//               v32: 32 columns, two blocks; v16: 16 columns (twice the
//               blocks, for problems with too few (document, head) pairs to
//               fill the GPU), two blocks; v16x1: 16 columns, one block per
//               multiprocessor, whose shared memory then holds two buffers
//               of every tile the chain prefetches (for problems whose blocks
//               all fit at one per multiprocessor). The runtime's choice when
//               unset
program kda_fwd

option gate = safe in (safe, softplus, external)
option qk_norm = true in (true, false)
option beta_logits = true in (true, false)
option vblock = v32 in (v32, v16, v16x1)
  prefer v16x1 when N * HV * (V / 16) <= SMS
  prefer v16 when N * HV * (V / 16) <= 2 * SMS

dim   T, N, H, HV                     // tokens, documents, key heads, value heads
require HV % H == 0
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
param lower_bound : f32 = -5.0
if gate == safe {
  require lower_bound < 0             // the safe gate's log-decay lies in [lower_bound, 0]
}

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

// Between the stages (workspace): 1152 B per token and value head
// (4 x 256 + 128), plus 512 B per chunk and value head: 608 MB at
// T = 32768, HV = 16.
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
  // rows past the document's end decay by nothing, so G stays flat there
  G = cumsum(where(valid(c)[:, None], gt, 0.0), 0)
  if beta_logits {
    b = sigmoid(load beta[c, h])
  } else {
    b = load beta[c, h] as f32
  }
  // the query side first: q is then dead for the rest of the stage
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

kernel chain over (n in docs, h in HV, j in V / BV) per_sm PER_SM {
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
