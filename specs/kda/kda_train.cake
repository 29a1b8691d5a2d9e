// kda_train.cake - Kimi Delta Attention, training: forward and backward,
// single rank, with grouped value heads (GVA: q and k have H heads; v, the
// gate, beta, the states and o have HV heads, HV a multiple of H; value head
// h reads key head h / (HV / H)).
//
// The forward is kda_fwd.cake's (prep, chain). Notation per chunk (C rows
// r, j; K key channels c; G = cumsum of the log-decay down the chunk,
// inclusive; gl = G's last row; b = beta; S0 the state at the chunk's start,
// S' the state after it; "decayed" = times exp(G_r - G_j), every exponent
// <= 0 for r >= j):
//   KK = tril(K K^T decayed, -1)    A = b KK    T = (I + A)^-1
//   X  = b K exp(G)    Y = b V      W = T X     U~ = T Y    U = U~ - W S0
//   D  = tril(Q K^T decayed)        Qg = scale Q exp(G)      Kd = K exp(gl - G)
//   O  = Qg S0 + scale D U          S' = Diag(exp(gl)) S0 + Kd^T U
//
// Backward of one chunk, given dO and dS' (the gradient of the state after
// the chunk; dht, or zero, after a document's last chunk):
//   dU   = scale D^T dO + Kd dS'
//   dS0  = Qg^T dO + Diag(exp(gl)) dS' - W^T dU        (flows to the chunk before;
//                                                      dh0 after the first)
//   dD   = scale tril(dO U^T)                           (j <= r)
//   dW   = -dU S0^T      dU~ = dU
//   dX   = T^T dW        dY = T^T dU                    (W = T X, U~ = T Y)
//   dT   = dW X^T + dU Y^T
//   dA   = -tril(T^T dT T^T, -1)                        (T = (I + A)^-1; only the
//                                                      strictly lower part of dT
//                                                      reaches it)
//   dKK  = b dA,   dv = b dY,   dbeta = rowsum(dY V) + rowsum(dX K exp(G)) + rowsum(dA KK)
// The decayed products are differentiated without leaving relative form:
// for M with only r >= j entries,
//   d/da of sum M[r,j] a_r b_j exp(g_r - g_j):  decay_mm(M, b, g)[r]   = sum_{j<=r} M[r,j] b_j exp(g_r - g_j)
//   d/db:                                       decay_mm_t(M, a, g)[j] = sum_{r>=j} M[r,j] a_r exp(g_r - g_j)
// and the gradient w.r.t. g is a * decay_mm(M, b, g) at row r minus
// b * decay_mm_t(M, a, g) at row j. So, with dQg = dO S0^T, dKd = U dS'^T:
//   dq = scale exp(G) dQg + decay_mm(dD, K, G)
//   dk = b exp(G) dX + exp(gl - G) dKd + decay_mm_t(dD, Q, G)
//        + decay_mm(dKK, K, G) + decay_mm_t(dKK, K, G)
//   dG = scale Q exp(G) dQg + X dX - Kd dKd + Q decay_mm(dD, K, G) - K decay_mm_t(dD, Q, G)
//        + K (decay_mm(dKK, K, G) - decay_mm_t(dKK, K, G))          (elementwise products)
//   dgl = colsum(Kd dKd) + exp(gl) rowsum(S0 dS')                  (S' through gl)
// G is the inclusive cumsum of the log-decay g and gl its last row, so
//   dg = rcumsum(dG) + dgl    (down the chunk; rows past a document's end: 0)
// Then the chain rules, elementwise per token:
//   safe gate  g = lb sigmoid(z), z = exp(A_log)(g_raw + dt_bias):
//              dz = dg lb s (1 - s);  dg_raw = exp(A_log) dz;  dA_log += sum dz z;  ddt_bias += exp(A_log) dz
//   softplus   g = -exp(A_log) softplus(x), x = g_raw + dt_bias:
//              dx = -exp(A_log) sigmoid(x) dg;  dg_raw = dx;  dA_log += sum dg g;  ddt_bias += dx
//   beta       b = sigmoid(l): dl = dbeta b (1 - b)
//   L2 norm    qn = q / sqrt(|q|^2 + 1e-6) = q r:  dq_raw = r (dqn - qn (qn . dqn))
// dA_log and ddt_bias sum over every token of every document: each chunk
// writes its partial sums; they add in chunk order within each document,
// then the documents' sums in document order (cp = summary: all chunks in
// order, then the ranks' sums in rank order).
// With GVA, dq and dk of key head h sum the terms of value heads
// h * G .. h * G + G - 1 (G = HV / H), in that order, before the L2 norm's
// backward (which is linear in them): dqg and dka run per key head and loop
// over its group. With HV = H the loop runs once.
//
// Stages. fwd = prep (chunk-parallel), chain (the state pass over each
// document's chunks, parallel over heads and V blocks: o, ht and, with
// save = states, every chunk's start state). bwd =
//   bprep    prep again, also keeping KK and X
//   states   (save = ckpt) the state pass again, writing the start states
//   dchain   the reverse state pass: U, dU, the state gradient after every
//            chunk, dh0
//   dstate   dQg = dO S0^T, -dW = dU S0^T, dD          (chunk-parallel from here)
//   dnext    dKd = U dS'^T, dgl's state term
//   dsolve   dX, dY, dT, dA -> dKK, dv, dbeta's Y and KK terms
//   dqg      (per key head, over its value heads) dq (through the L2 norm),
//            dG's q terms
//   dkp      dk's D, X and Kd terms, dG's matching terms, dgl, dbeta's X term
//   dka      (per key head, over its value heads) dk's KK terms, the sum
//            over the group, the L2 norm; the whole dG
//   dgate1   dg = rcumsum(dG) + dgl through the gate, dbeta through the
//            sigmoid, per-chunk partial sums of dA_log and ddt_bias
//   dgate    (in-kernel gates) per head: those partial sums, added in chunk
//            order over the whole sequence
// Each chunk-parallel stage fits one thread block's shared memory; the
// stages hand on temps. Temps share the workspace by live range: per token
// and value head it is what the busiest stage (dnext) holds, 4,624 B with
// save = ckpt and 3,600 B (+ 1,024 B saved) with save = states (2.26 GiB
// either way at T = 32768, HV = 16; one after another the temps would take
// 8,616 / 7,592 B); the start states and their gradients (f32) are 1 KB each.
// No sum depends on the order blocks run in: the result is bitwise
// repeatable.
//
// Options: gate, qk_norm, beta_logits as in kda_fwd.cake; save:
//   ckpt    the forward keeps nothing for the backward (0 B), which
//           recomputes the start states
//   states  the forward keeps every chunk's start state in `hs`:
//           K * V * 4 / C = 1024 B per token and value head
// V blocks of 32 columns in the state passes (fixed: one variant axis less).
program kda_train

option gate = safe in (safe, softplus, external)
option qk_norm = true in (true, false)
option beta_logits = true in (true, false)
option save = ckpt in (ckpt, states)
option cp = none in (none, summary, exact)

// cp = summary: context-parallel (KCP), one packed sequence split across R
// ranks, each running this program on its fragments (local documents). A
// fragment maps the state entering it affinely, S_out = M S_in + X. The
// forward computes each fragment's M (the state pass from the identity
// without values) and X (from zero, or from h0 where the document starts),
// gathers them from every rank, folds those of the fragments before each one
// into its incoming state hin, and runs the local passes from hin. The
// backward mirrors it: each fragment's Y (the reverse pass from zero, or from
// dht where the document ends) is gathered, and the transposed maps and Y of
// the fragments after each one fold, last first, into the gradient of the
// state leaving it; the local backward runs from there. dA_log and ddt_bias
// add the ranks' sums in rank order. h0 is read on the fragment that starts
// its document, ht written meaningfully on the one that ends it, dh0 on the
// one that starts it (on the others they are the fragment's own incoming or
// outgoing state and its gradient).
//
// cp = exact: the same split, but each fragment starts from the real state
// that leaves the fragment before it in its document (fp32, exchanged), so
// every output and gradient is bitwise the single rank's on the same tokens
// when every cut lies at a chunk boundary of its document (the partition's
// align = C). The state passes run in rounds: in round k the fragments
// k-th in their document (from its end, in the backward) run, then the
// states leaving them are gathered; as many rounds as the longest document
// has fragments. dA_log and ddt_bias add in the single rank's order: each
// document's chunks in order (the running sums passed on from fragment to
// fragment in rounds), then the documents in order.

dim   T, N, H, HV                     // tokens, documents, key heads, value heads
require HV % H == 0
const K = 128, V = 128, C = 64, BV = 32
sequence T, docs N, chunk C
if cp != none {
  dim R, F                            // ranks; the most fragments a rank holds
  ranks R, fragments F
}

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

// the backward's inputs and outputs
in  do   : bf16[T, HV, V]             // dL/do
in  dht  : f32[N, HV, K, V] optional  // dL/dht
out dq, dk : bf16[T, H, K]            // w.r.t. the raw q, k (summed over each group)
out dv   : bf16[T, HV, V]
out dg   : f32[T, HV, K]              // w.r.t. the raw gate (or the log-decay when external)
out dbeta : f32[T, HV]                // w.r.t. the logits (or the values)
out dh0  : f32[N, HV, K, V] optional  // w.r.t. h0 (or the zero initial state)
if gate != external {
  out dA_log : f32[HV]
  out ddt_bias : f32[HV, K]
}

// every chunk's start state: kept from the forward, or recomputed
if save == states {
  save hs : f32[chunks, HV, K, V]
} else {
  temp hs : f32[chunks, HV, K, V]
}

// forward intermediates (recomputed by the backward's prep)
temp w, qg, kd : bf16[T, HV, K]       // W;  scale Q exp(G);  K exp(gl - G)
temp u  : bf16[T, HV, V]              // U~
temp pq : bf16[T, HV, C]              // scale D
temp gx : f32[chunks, HV, K]          // exp(gl), the chunk's state decay
// backward intermediates
temp vn : bf16[T, HV, V]              // U
temp du : bf16[T, HV, V]              // dU
temp dhs : f32[chunks, HV, K, V]      // dS' of every chunk
temp dqs, dkds, dxs, dgs : f32[T, HV, K] // dQg = dO S0^T;  dKd = U dS'^T;  dX;  dG's q part
temp dws : bf16[T, HV, K]             // -dW = dU S0^T
temp dds, dkks, kks : f32[T, HV, C]   // dD;  dKK;  KK
temp xs : bf16[T, HV, K]              // X
temp dbs, dbs2 : f32[T, HV]           // dbeta w.r.t. the beta value: without, with the X term
temp dk1s, dg1s, dgf : f32[T, HV, K]  // dk and dG without the KK terms;  dG
temp pgs, dgls : f32[chunks, HV, K]   // dgl's state term;  dgl
temp pda : f32[chunks, HV]            // per-chunk partial sums of dA_log
temp pdt : f32[chunks, HV, K]         // and of ddt_bias
if cp == none && gate != external {
  temp pdoc : f32[N, HV]              // per document: its sums of dA_log
  temp tdoc : f32[N, HV, K]           // and of ddt_bias
}
if cp == exact {
  temp hend : f32[F, HV, K, V]        // the state leaving each fragment
  temp dhbeg : f32[F, HV, K, V]       // the gradient of the state entering it
  temp ghend, gdhbeg : f32[R, F, HV, K, V] // every rank's
  if gate != external {
    temp pdoc : f32[F, HV]            // per fragment: its document's sums of dA_log up to its end
    temp tdoc : f32[F, HV, K]         // and of ddt_bias
    temp gpdoc : f32[R, F, HV]        // every rank's
    temp gtdoc : f32[R, F, HV, K]
  }
}
if cp == summary {
  temp sm : f32[F, HV, K, K]          // each fragment's M
  temp sx : f32[F, HV, K, V]          // X
  temp sy : f32[F, HV, K, V]          // Y
  temp gsm : f32[R, F, HV, K, K]      // every rank's
  temp gsx, gsy : f32[R, F, HV, K, V]
  temp hin : f32[N, HV, K, V]         // the state entering each fragment
  temp dhin : f32[N, HV, K, V]        // the gradient of the state leaving it
  temp lda : f32[HV]                  // this rank's sums of dA_log and ddt_bias
  temp ldt : f32[HV, K]
  temp glda : f32[R, HV]              // every rank's
  temp gldt : f32[R, HV, K]
}

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

// the backward's prep: the forward's, keeping KK and X for dsolve as well
kernel bprep over (c in chunks, h in HV) threads 256 {
  hk = h / (HV / H)
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
  KK = tril(decay_dot(kn, kn, G), -1)
  store kks[c, h, :] = KK
  Ti = unit_lower_inv(KK * b[:, None]) as bf16
  X = (kn * eg * b[:, None]) as bf16
  store xs[c, h, :] = X
  store w[c, h, :] = (Ti @ X) as bf16
  store u[c, h, :] = (Ti @ ((load v[c, h, :] * b[:, None]) as bf16)) as bf16
  gl = G[C - 1, :]
  store kd[c, h, :] = (kn * exp(gl[None, :] - G)) as bf16
  store gx[c, h, :] = exp(gl)
}

kernel chain over (n in docs, h in HV, j in V / BV) {
  if cp == summary {
    S = load hin[n, h, :, j]
  } else {
    S = load h0[n, h, :, j] or 0
    if cp == exact {                  // the state leaving the fragment before (the last one before)
      for r, f in before(n) carry S {
        S = load ghend[r, f, h, :, j]
      }
    }
  }
  for c in chunks(n) carry S {
    if save == states {
      store hs[c, h, :, j] = S
    }
    Sb = S as bf16
    un = load u[c, h, j] - load w[c, h, :] @ Sb
    ub = un as bf16
    store o[c, h, j] = (load qg[c, h, :] @ Sb + load pq[c, h, :] @ ub) as bf16
    S = load gx[c, h, :][:, None] * S + load kd[c, h, :].T @ ub
  }
  store ht[n, h, :, j] = S
  if cp == exact {
    store hend[n, h, :, j] = S
  }
}

// the state pass of the backward in ckpt mode: the same carried state, bit
// for bit, but only the start states are written
if save == ckpt {
  kernel states over (n in docs, h in HV, j in V / BV) {
    if cp == summary {
      S = load hin[n, h, :, j]
    } else {
      S = load h0[n, h, :, j] or 0
      if cp == exact {
        for r, f in before(n) carry S {
          S = load ghend[r, f, h, :, j]
        }
      }
    }
    for c in chunks(n) carry S {
      store hs[c, h, :, j] = S
      ub = (load u[c, h, j] - load w[c, h, :] @ (S as bf16)) as bf16
      S = load gx[c, h, :][:, None] * S + load kd[c, h, :].T @ ub
    }
    if cp == exact {
      store hend[n, h, :, j] = S
    }
  }
}

// the reverse state pass: dS' -> dU -> dS0, last chunk first
kernel dchain over (n in docs, h in HV, j in V / BV) {
  if cp == summary {
    dS = load dhin[n, h, :, j]
  } else {
    dS = load dht[n, h, :, j] or 0
    if cp == exact {                  // the gradient entering the fragment after (the first one after)
      for r, f in reverse after(n) carry dS {
        dS = load gdhbeg[r, f, h, :, j]
      }
    }
  }
  for c in reverse chunks(n) carry dS {
    store dhs[c, h, :, j] = dS
    ub = (load u[c, h, j] - load w[c, h, :] @ (load hs[c, h, :, j] as bf16)) as bf16
    store vn[c, h, j] = ub
    dob = load do[c, h, j]
    dU = load pq[c, h, :].T @ dob + load kd[c, h, :] @ (dS as bf16)
    store du[c, h, j] = dU as bf16
    dS = load gx[c, h, :][:, None] * dS + load qg[c, h, :].T @ dob - load w[c, h, :].T @ (dU as bf16)
  }
  store dh0[n, h, :, j] = dS
  if cp == exact {
    store dhbeg[n, h, :, j] = dS
  }
}

// The chunk-parallel rest, in stages small enough for one thread block's
// shared memory each; what one stage hands the next is in f32 temps.
// dstate: the products with the start state S0, and dD
kernel dstate over (c in chunks, h in HV) threads 256 {
  S0b = load hs[c, h, :, :] as bf16
  store dqs[c, h, :] = load do[c, h, :] @ S0b.T                      // dQg
  store dws[c, h, :] = (load du[c, h, :] @ S0b.T) as bf16   // -dW
  store dds[c, h, :] = tril(load do[c, h, :] @ (load vn[c, h, :]).T) * scale  // dD
}

// dnext: the products with the state gradient dS' after the chunk
kernel dnext over (c in chunks, h in HV) threads 256 {
  dSn = load dhs[c, h, :, :]
  store dkds[c, h, :] = load vn[c, h, :] @ (dSn as bf16).T           // dKd
  store pgs[c, h, :] = load gx[c, h, :] * sum(load hs[c, h, :, :] * dSn, 1)  // dgl's state term
}

// dsolve: through the solve (W = T X, U~ = T Y) and the output's D
kernel dsolve over (c in chunks, h in HV) threads 256 {
  if beta_logits {
    b = sigmoid(load beta[c, h])
  } else {
    b = load beta[c, h] as f32
  }
  vv = load v[c, h, :]
  KK = load kks[c, h, :]
  Tb = unit_lower_inv(KK * b[:, None]) as bf16
  dWb = (-load dws[c, h, :]) as bf16
  dUb = load du[c, h, :]
  dX = Tb.T @ dWb
  dY = Tb.T @ dUb
  dT = tril(dWb @ (load xs[c, h, :]).T + dUb @ ((vv * b[:, None]) as bf16).T, -1)
  dA = -tril(Tb.T @ ((dT as bf16) @ Tb.T) as bf16, -1)
  store dkks[c, h, :] = dA * b[:, None]
  store dxs[c, h, :] = dX
  store dv[c, h, :] = (dY * b[:, None]) as bf16
  store dbs[c, h] = sum(dY * vv, 1) + sum(dA * KK, 1)
}

// dqg: q's gradient, and the parts of dG that carry q. Per key head: the
// terms of its value heads are added in order, then the L2 norm's backward.
kernel dqg over (c in chunks, h in H) threads 256 {
  qraw = load q[c, h, :]
  kraw = load k[c, h, :]
  if qk_norm {
    qn = qraw * rsqrt(sum(qraw * qraw, 1) + 1e-6)[:, None]
    kn = kraw * rsqrt(sum(kraw * kraw, 1) + 1e-6)[:, None]
  } else {
    qn = qraw as f32
    kn = kraw as f32
  }
  dqn = qn * 0.0
  for i in range(HV / H) carry dqn {
    hv = h * (HV / H) + i             // the group's value heads, in order
    graw = load g[c, hv, :]
    if gate == safe {
      gt = lower_bound * sigmoid(exp(load A_log[hv]) * (graw + load dt_bias[hv, :][None, :]))
    } else if gate == softplus {
      gt = -exp(load A_log[hv]) * softplus(graw + load dt_bias[hv, :][None, :])
    } else {
      gt = graw
    }
    G = cumsum(where(valid(c)[:, None], gt, 0.0), 0)
    eg = exp(G)
    dQg = load dqs[c, hv, :]
    dqD = decay_mm(load dds[c, hv, :], kn, G)
    dqn = dqn + (scale * eg * dQg + dqD)
    store dgs[c, hv, :] = qn * (scale * eg * dQg + dqD)
  }
  if qk_norm {
    qrs = rsqrt(sum(qraw * qraw, 1) + 1e-6)
    store dq[c, h, :] = (qrs[:, None] * (dqn - qn * sum(dqn * qn, 1)[:, None])) as bf16
  } else {
    store dq[c, h, :] = dqn as bf16
  }
}

// dkp: k's gradient and dG through D (as the key side), X and Kd
kernel dkp over (c in chunks, h in HV) threads 256 {
  hk = h / (HV / H)
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
  kdec = exp(G[C - 1, :][None, :] - G)
  dkD = decay_mm_t(load dds[c, h, :], qn, G)
  dXe = load dxs[c, h, :] * eg
  store dbs2[c, h] = load dbs[c, h] + sum(dXe * kn, 1)
  dX = dXe * b[:, None]
  dKd = load dkds[c, h, :] * kdec
  store dk1s[c, h, :] = dX + dKd + dkD
  store dg1s[c, h, :] = load dgs[c, h, :] + kn * (dX - dKd - dkD)
  store dgls[c, h, :] = sum(kn * dKd, 0) + load pgs[c, h, :]
}

// dka: k's gradient and dG through KK (k on both sides). Per key head: the
// terms of its value heads are added in order, then the L2 norm's backward.
kernel dka over (c in chunks, h in H) threads 256 {
  kraw = load k[c, h, :]
  if qk_norm {
    krs = rsqrt(sum(kraw * kraw, 1) + 1e-6)
    kn = kraw * krs[:, None]
  } else {
    kn = kraw as f32
  }
  dkn = kn * 0.0
  for i in range(HV / H) carry dkn {
    hv = h * (HV / H) + i
    graw = load g[c, hv, :]
    if gate == safe {
      gt = lower_bound * sigmoid(exp(load A_log[hv]) * (graw + load dt_bias[hv, :][None, :]))
    } else if gate == softplus {
      gt = -exp(load A_log[hv]) * softplus(graw + load dt_bias[hv, :][None, :])
    } else {
      gt = graw
    }
    G = cumsum(where(valid(c)[:, None], gt, 0.0), 0)
    dKK = load dkks[c, hv, :]
    dkA = decay_mm(dKK, kn, G)
    dkAt = decay_mm_t(dKK, kn, G)
    dkn = dkn + (load dk1s[c, hv, :] + dkA + dkAt)
    store dgf[c, hv, :] = load dg1s[c, hv, :] + kn * (dkA - dkAt)
  }
  if qk_norm {
    store dk[c, h, :] = (krs[:, None] * (dkn - kn * sum(dkn * kn, 1)[:, None])) as bf16
  } else {
    store dk[c, h, :] = dkn as bf16
  }
}

// dgate1: dg = rcumsum(dG) + dgl, then through the gate; dbeta through the sigmoid
kernel dgate1 over (c in chunks, h in HV) threads 256 {
  dgt = where(valid(c)[:, None], rcumsum(load dgf[c, h, :], 0) + load dgls[c, h, :][None, :], 0.0)
  db = load dbs2[c, h]
  if beta_logits {
    b = sigmoid(load beta[c, h])
    store dbeta[c, h] = db * b * (1.0 - b)
  } else {
    store dbeta[c, h] = db
  }
  graw = load g[c, h, :]
  if gate == safe {
    al = exp(load A_log[h])
    z = al * (graw + load dt_bias[h, :][None, :])
    sg = sigmoid(z)
    dz = dgt * lower_bound * sg * (1.0 - sg)
    store dg[c, h, :] = al * dz
    store pda[c, h] = sum(sum(dz * z, 1), 0)
    store pdt[c, h, :] = sum(al * dz, 0)
  } else if gate == softplus {
    al = exp(load A_log[h])
    x = graw + load dt_bias[h, :][None, :]
    dx = -al * sigmoid(x) * dgt
    store dg[c, h, :] = dx
    store pda[c, h] = sum(sum(dgt * (-al * softplus(x)), 1), 0)
    store pdt[c, h, :] = sum(dx, 0)
  } else {
    store dg[c, h, :] = dgt
  }
}

// dA_log and ddt_bias: the per-chunk partial sums of each head
if gate != external {
  if cp == summary {
    // all chunks in order: this rank's sums (added over the ranks below)
    kernel dgate over (h in HV) {
      sa = 0.0
      st = load dt_bias[h, :] * 0.0
      for c in chunks carry sa, st {
        sa = sa + load pda[c, h]
        st = st + load pdt[c, h, :]
      }
      store lda[h] = sa
      store ldt[h, :] = st
    }
  } else {
    // each document's chunks in order (cp = exact: from the sums the
    // fragment before it ended with)
    kernel dgate_doc over (n in docs, h in HV) {
      sa = 0.0
      st = load dt_bias[h, :] * 0.0
      if cp == exact {
        for r, f in before(n) carry sa, st {
          sa = load gpdoc[r, f, h]
          st = load gtdoc[r, f, h, :]
        }
      }
      for c in chunks(n) carry sa, st {
        sa = sa + load pda[c, h]
        st = st + load pdt[c, h, :]
      }
      store pdoc[n, h] = sa
      store tdoc[n, h, :] = st
    }

    // then the documents in order (cp = exact: the fragment that ends
    // each, on whichever rank holds it)
    kernel dgate over (h in HV) {
      sa = 0.0
      st = load dt_bias[h, :] * 0.0
      if cp == exact {
        for r, f in ends() carry sa, st {
          sa = sa + load gpdoc[r, f, h]
          st = st + load gtdoc[r, f, h, :]
        }
      } else {
        for n in range(N) carry sa, st {
          sa = sa + load pdoc[n, h]
          st = st + load tdoc[n, h, :]
        }
      }
      store dA_log[h] = sa
      store ddt_bias[h, :] = st
    }
  }
}

// context parallelism (cp = summary): the fragments' maps and their folds
if cp == summary {
  // M, a block of BV columns: the state pass from the identity, without values
  kernel summ_m over (n in docs, h in HV, j in K / BV) {
    M = where(iota(K)[:, None] == iota(BV)[None, :] + j * BV, 1.0, 0.0)
    for c in chunks(n) carry M {
      ub = (-(load w[c, h, :] @ (M as bf16))) as bf16
      M = load gx[c, h, :][:, None] * M + load kd[c, h, :].T @ ub
    }
    store sm[n, h, :, j] = M
  }

  // X: the state pass from zero, or from h0 where the document starts
  kernel summ_x over (n in docs, h in HV, j in V / BV) {
    S = where(continues(n), 0.0, load h0[n, h, :, j] or 0)
    for c in chunks(n) carry S {
      ub = (load u[c, h, j] - load w[c, h, :] @ (S as bf16)) as bf16
      S = load gx[c, h, :][:, None] * S + load kd[c, h, :].T @ ub
    }
    store sx[n, h, :, j] = S
  }

  exchange gather_m = all_gather(sm) -> gsm
  exchange gather_x = all_gather(sx) -> gsx

  // the incoming state: the maps of the fragments before it, in document
  // order. The state is carried through every fragment's map, so each
  // product keeps about f32 precision: M and S split into bf16 high and low
  // parts (lo = x - hi), three tensor-core products (the lo * lo term is
  // below f32's rounding).
  kernel fold over (n in docs, h in HV, j in V / BV) {
    S = where(continues(n), 0.0, load h0[n, h, :, j] or 0)
    for r, f in before(n) carry S {
      M = load gsm[r, f, h, :, :]
      Mh = M as bf16
      Sh = S as bf16
      Ml = (M - (Mh as f32)) as bf16
      Sl = (S - (Sh as f32)) as bf16
      S = Mh @ Sh + (Mh @ Sl + Ml @ Sh) + load gsx[r, f, h, :, j]
    }
    store hin[n, h, :, j] = S
  }

  // Y: the reverse pass from zero, or from dht where the document ends
  kernel summ_y over (n in docs, h in HV, j in V / BV) {
    dS = where(continued(n), 0.0, load dht[n, h, :, j] or 0)
    for c in reverse chunks(n) carry dS {
      dob = load do[c, h, j]
      dU = load pq[c, h, :].T @ dob + load kd[c, h, :] @ (dS as bf16)
      dS = load gx[c, h, :][:, None] * dS + load qg[c, h, :].T @ dob - load w[c, h, :].T @ (dU as bf16)
    }
    store sy[n, h, :, j] = dS
  }

  exchange gather_y = all_gather(sy) -> gsy

  // the gradient of the outgoing state: the fragments after it, last first
  // (the transposed maps, split like fold's)
  kernel dfold over (n in docs, h in HV, j in V / BV) {
    D = where(continued(n), 0.0, load dht[n, h, :, j] or 0)
    for r, f in reverse after(n) carry D {
      M = load gsm[r, f, h, :, :]
      Mh = M as bf16
      Dh = D as bf16
      Ml = (M - (Mh as f32)) as bf16
      Dl = (D - (Dh as f32)) as bf16
      D = Mh.T @ Dh + (Mh.T @ Dl + Ml.T @ Dh) + load gsy[r, f, h, :, j]
    }
    store dhin[n, h, :, j] = D
  }

  if gate != external {
    exchange gather_da = all_gather(lda) -> glda
    exchange gather_dt = all_gather(ldt) -> gldt

    // dA_log and ddt_bias: the ranks' sums, in rank order
    kernel dgate_ranks over (h in HV) {
      sa = 0.0
      st = load dt_bias[h, :] * 0.0
      for r in range(R) carry sa, st {
        sa = sa + load glda[r, h]
        st = st + load gldt[r, h, :]
      }
      store dA_log[h] = sa
      store ddt_bias[h, :] = st
    }
  }
}

if cp == exact {
  exchange gather_h = all_gather(hend) -> ghend
  exchange gather_dh = all_gather(dhbeg) -> gdhbeg
  if gate != external {
    exchange gather_da = all_gather(pdoc) -> gpdoc
    exchange gather_dt = all_gather(tdoc) -> gtdoc
  }
}

if cp == summary {
  entry fwd = prep, summ_m, summ_x, gather_m, gather_x, fold, chain
  // the backward recomputes the maps (M for the fold of the gradients; with
  // save = ckpt also X and the incoming states)
  if gate == external {
    if save == states {
      entry bwd = bprep, summ_m, gather_m, summ_y, gather_y, dfold, dchain, dstate, dnext, dsolve, dqg, dkp, dka,
                  dgate1
    } else {
      entry bwd = bprep, summ_m, summ_x, gather_m, gather_x, fold, states, summ_y, gather_y, dfold, dchain, dstate,
                  dnext, dsolve, dqg, dkp, dka, dgate1
    }
  } else {
    if save == states {
      entry bwd = bprep, summ_m, gather_m, summ_y, gather_y, dfold, dchain, dstate, dnext, dsolve, dqg, dkp, dka,
                  dgate1, dgate, gather_da, gather_dt, dgate_ranks
    } else {
      entry bwd = bprep, summ_m, summ_x, gather_m, gather_x, fold, states, summ_y, gather_y, dfold, dchain, dstate,
                  dnext, dsolve, dqg, dkp, dka, dgate1, dgate, gather_da, gather_dt, dgate_ranks
    }
  }
} else if cp == exact {
  entry fwd = prep, rounds(chain, gather_h)
  if gate == external {
    if save == states {
      entry bwd = bprep, rounds reverse(dchain, gather_dh), dstate, dnext, dsolve, dqg, dkp, dka, dgate1
    } else {
      entry bwd = bprep, rounds(states, gather_h), rounds reverse(dchain, gather_dh), dstate, dnext, dsolve, dqg,
                  dkp, dka, dgate1
    }
  } else {
    if save == states {
      entry bwd = bprep, rounds reverse(dchain, gather_dh), dstate, dnext, dsolve, dqg, dkp, dka, dgate1,
                  rounds(dgate_doc, gather_da, gather_dt), dgate
    } else {
      entry bwd = bprep, rounds(states, gather_h), rounds reverse(dchain, gather_dh), dstate, dnext, dsolve, dqg,
                  dkp, dka, dgate1, rounds(dgate_doc, gather_da, gather_dt), dgate
    }
  }
} else {
  entry fwd = prep, chain
  if gate == external {
    if save == states {
      entry bwd = bprep, dchain, dstate, dnext, dsolve, dqg, dkp, dka, dgate1
    } else {
      entry bwd = bprep, states, dchain, dstate, dnext, dsolve, dqg, dkp, dka, dgate1
    }
  } else {
    if save == states {
      entry bwd = bprep, dchain, dstate, dnext, dsolve, dqg, dkp, dka, dgate1, dgate_doc, dgate
    } else {
      entry bwd = bprep, states, dchain, dstate, dnext, dsolve, dqg, dkp, dka, dgate1, dgate_doc, dgate
    }
  }
}
