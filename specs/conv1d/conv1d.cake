// conv1d.cake - causal depthwise conv1d over packed documents, forward and
// backward: the short convolution that feeds q, k and v in KDA-style layers.
//
// Channels come in G groups of BD = 64 (D = 64 G channels, x : [T, D] in
// memory). Per token t of a document, channel d, width W = 4:
//   p[t, d] = bias[d] + sum_{i < W} w[d, i] x[t - (W - 1) + i, d]
//   y[t, d] = silu(p[t, d])        (activation = silu; p itself with none)
// where x before the document's first token is 0 (no token sees another
// document). The backward, given dy:
//   dp[t] = dy[t] silu'(p[t])      (silu'(p) = s (1 + p (1 - s)), s = sigmoid(p))
//   dx[t] = sum_{i < W} w[i] dp[t + (W - 1) - i]      (tokens of the same document)
//   dw[i] = sum_t dp[t] x[t - (W - 1) + i]            dbias = sum_t dp[t]
// Each chunk recomputes p at the W offsets its dx needs (no temp per token);
// dw and dbias sum per chunk, then over the chunks in order (bitwise
// repeatable).
//
// cp = halo: context-parallel (KCP), the packed sequence split across R
// ranks. The W - 1 tokens before a fragment (and, for the backward, W - 1
// after it) live on other ranks; one halo exchange per input brings them,
// and the shifted loads read through it, so every token's y and dx are
// computed with the same arithmetic as on one rank. dw and dbias add the
// ranks' sums in rank order.
program conv1d

option activation = silu in (silu, none)
option cp = none in (none, halo)

dim T, N, G                           // tokens, documents, channel groups
const W = 4, BD = 64, C = 64
sequence T, docs N, chunk C
if cp == halo {
  dim R, F
  ranks R, fragments F
}

in  x    : bf16[T, G, BD]
in  w    : f32[G, BD, W]              // [D, W]
in  bias : f32[G, BD] optional
out y    : bf16[T, G, BD]

in  dy    : bf16[T, G, BD]
out dx    : bf16[T, G, BD]
out dw    : f32[G, BD, W]
out dbias : f32[G, BD] optional

temp pw : f32[chunks, G, W, BD]       // per chunk: its part of dw, tap by tap
temp pb : f32[chunks, G, BD]          // and of dbias
if cp == halo {
  temp xh  : bf16[F, 2 * (W - 1), G, BD] // the W - 1 tokens before each fragment, then the W - 1 after it
  temp dyh : bf16[F, W - 1, G, BD]      // the W - 1 after it
  temp lw  : f32[G, W, BD]            // this rank's sums
  temp lb  : f32[G, BD]
  temp gw  : f32[R, G, W, BD]         // every rank's
  temp gb  : f32[R, G, BD]
}

kernel conv_fwd over (c in chunks, g in G) threads 256 {
  wt = load w[g, :, :]
  p = (load bias[g, :] or 0)[None, :] + load x[shift(c, -3), g, :] * wt[:, 0][None, :]
      + load x[shift(c, -2), g, :] * wt[:, 1][None, :] + load x[shift(c, -1), g, :] * wt[:, 2][None, :]
      + load x[c, g, :] * wt[:, 3][None, :]
  if activation == silu {
    store y[c, g, :] = silu(p) as bf16
  } else {
    store y[c, g, :] = p as bf16
  }
}

kernel conv_bwd over (c in chunks, g in G) threads 256 {
  wt = load w[g, :, :]
  w0 = wt[:, 0][None, :]
  w1 = wt[:, 1][None, :]
  w2 = wt[:, 2][None, :]
  w3 = wt[:, 3][None, :]
  b = (load bias[g, :] or 0)[None, :]
  xm3 = load x[shift(c, -3), g, :]
  xm2 = load x[shift(c, -2), g, :]
  xm1 = load x[shift(c, -1), g, :]
  x0 = load x[c, g, :]
  x1 = load x[shift(c, 1), g, :]
  x2 = load x[shift(c, 2), g, :]
  x3 = load x[shift(c, 3), g, :]
  // dp at the tokens k = 0 .. 3 after each row (0 past the document's end)
  p0 = b + w0 * xm3 + w1 * xm2 + w2 * xm1 + w3 * x0
  p1 = b + w0 * xm2 + w1 * xm1 + w2 * x0 + w3 * x1
  p2 = b + w0 * xm1 + w1 * x0 + w2 * x1 + w3 * x2
  p3 = b + w0 * x0 + w1 * x1 + w2 * x2 + w3 * x3
  if activation == silu {
    s0 = sigmoid(p0)
    s1 = sigmoid(p1)
    s2 = sigmoid(p2)
    s3 = sigmoid(p3)
    dp0 = load dy[c, g, :] * (s0 * (1.0 + p0 * (1.0 - s0)))
    dp1 = load dy[shift(c, 1), g, :] * (s1 * (1.0 + p1 * (1.0 - s1)))
    dp2 = load dy[shift(c, 2), g, :] * (s2 * (1.0 + p2 * (1.0 - s2)))
    dp3 = load dy[shift(c, 3), g, :] * (s3 * (1.0 + p3 * (1.0 - s3)))
  } else {
    dp0 = load dy[c, g, :] * 1.0
    dp1 = load dy[shift(c, 1), g, :] * 1.0
    dp2 = load dy[shift(c, 2), g, :] * 1.0
    dp3 = load dy[shift(c, 3), g, :] * 1.0
  }
  store dx[c, g, :] = (w3 * dp0 + w2 * dp1 + w1 * dp2 + w0 * dp3) as bf16
  store pw[c, g, 0, :] = sum(dp0 * xm3, 0)
  store pw[c, g, 1, :] = sum(dp0 * xm2, 0)
  store pw[c, g, 2, :] = sum(dp0 * xm1, 0)
  store pw[c, g, 3, :] = sum(dp0 * x0, 0)
  store pb[c, g, :] = sum(dp0, 0)
}

// dw and dbias: the chunks' parts in chunk order
kernel dwsum over (g in G) {
  z = where(iota(BD) >= 0, 0.0, 0.0)
  s0 = z
  s1 = z
  s2 = z
  s3 = z
  sb = z
  for c in chunks carry s0, s1, s2, s3, sb {
    s0 = s0 + load pw[c, g, 0, :]
    s1 = s1 + load pw[c, g, 1, :]
    s2 = s2 + load pw[c, g, 2, :]
    s3 = s3 + load pw[c, g, 3, :]
    sb = sb + load pb[c, g, :]
  }
  if cp == halo {
    store lw[g, 0, :] = s0
    store lw[g, 1, :] = s1
    store lw[g, 2, :] = s2
    store lw[g, 3, :] = s3
    store lb[g, :] = sb
  } else {
    store dw[g, :, 0] = s0
    store dw[g, :, 1] = s1
    store dw[g, :, 2] = s2
    store dw[g, :, 3] = s3
    store dbias[g, :] = sb
  }
}

if cp == halo {
  exchange halo_x = halo(x, 3, 3) -> xh
  exchange halo_dy = halo(dy, 0, 3) -> dyh
  exchange gather_w = all_gather(lw) -> gw
  exchange gather_b = all_gather(lb) -> gb

  // dw and dbias: the ranks' sums in rank order
  kernel dwranks over (g in G) {
    z = where(iota(BD) >= 0, 0.0, 0.0)
    s0 = z
    s1 = z
    s2 = z
    s3 = z
    sb = z
    for r in range(R) carry s0, s1, s2, s3, sb {
      s0 = s0 + load gw[r, g, 0, :]
      s1 = s1 + load gw[r, g, 1, :]
      s2 = s2 + load gw[r, g, 2, :]
      s3 = s3 + load gw[r, g, 3, :]
      sb = sb + load gb[r, g, :]
    }
    store dw[g, :, 0] = s0
    store dw[g, :, 1] = s1
    store dw[g, :, 2] = s2
    store dw[g, :, 3] = s3
    store dbias[g, :] = sb
  }

  entry fwd = halo_x, conv_fwd
  entry bwd = halo_x, halo_dy, conv_bwd, dwsum, gather_w, gather_b, dwranks
} else {
  entry fwd = conv_fwd
  entry bwd = conv_bwd, dwsum
}
