// ops.cake - every operation of the language on the GPU, for test_ops: the
// GPU results are compared with the CPU interpreter's (the semantic reference
// of every op) on the same random inputs.
program ops

dim   T, N, H
const C = 64, D = 32, DK = 128
sequence T, docs N, chunk C

param p : f32 = 0.75

in  x, y  : f32[T, H, D]
in  xb    : bf16[T, H, D]
in  xh    : f16[T, H, D]
in  w     : f32[H, D]
in  s0    : f32[N, H, D] optional
in  sc    : f32[D]             // powers of 2, from 2^-30 to 2^5 by column
in  sv    : f32[D]             // special values: NaN, +-0, +-inf, ...
in  xk, yk : f32[T, H, DK]
out unary, binary, reduce, layout : f32[T, H, D]
out dots  : f32[T, H, C]
out ints  : i32[T, H, D]
out state : f32[N, H, D]
out trace : f32[T, H, D]
out grads : f32[T, H, D]
out total : f32[H, D]
out m_tanh, m_log1p, m_expm1, m_logsig, m_silu : f32[T, H, D]
out m_special : f32[H, 5, D]
out m_decay, m_decay1 : f32[T, H, C]
out m_dmm, m_dmmt, m_dmm1, m_dmmt1 : f32[T, H, DK]
out m_ddot, m_ddot1, m_inv : f32[T, H, C]
temp part : f32[chunks, H, D]

kernel elementwise over (c in chunks, h in H) {
  a = load x[c, h, :]
  b = load y[c, h, :]
  wr = load w[h, :][None, :]
  store unary[c, h, :] = exp(-abs(a)) + log(abs(b) + 1.0) + sigmoid(a) + softplus(b * 3.0) + sqrt(abs(a))
                        + rsqrt(abs(b) + 0.5) + exp2(-abs(a)) - a
  store binary[c, h, :] = maximum(a, b) - minimum(a, wr) + a / (abs(b) + 1.0) + where(a > b && b <= 0.5, a * p, b)
                         + where(!(a == b) || a >= 1.0, 1.0, 0.0) + where(a != a, 7.0, 0.0)
  store reduce[c, h, :] = amax(a, 1)[:, None] + sum(b, 0)[None, :] + rcumsum(a, 1) + cumsum(b, 0)
                         + sum(sum(a, 1), 0) + rcumsum(b, 0)
  // layout ops are exact: every term here is on a's grid of 1/32 (|a| < 4), so
  // the f32 sums are exact too and the GPU must match the interpreter bit for
  // bit (with y's normal values the GPU's f32 additions, rounded one by one,
  // would differ from the interpreter's single rounding at the store)
  t = a[:, 3]
  u = a[5, :]
  store layout[c, h, :] = t[:, None] + u[None, :] + (a.T).T + where(valid(c)[:, None], 1.0, -1.0)
  m = (a as bf16) @ (b as bf16).T
  mh = (load xh[c, h, :]) @ (load xh[c, h, :]).T
  store dots[c, h, :] = tril(m, -2) + triu(mh, 1) + tril((m as bf16) @ (((b as bf16) @ (a as bf16).T) as bf16), 0) * 0.001
  ia = (a * 10.0) as i32
  // decay_dot's gradients, on a non-increasing log-decay
  gd = cumsum(-abs(b) * 0.25, 0)
  md = tril((a as bf16) @ (b as bf16).T) * 0.125
  store grads[c, h, :] = decay_mm(md, b, gd) - decay_mm_t(md, a, gd)
  store part[c, h, :] = sum(a, 0)
  // i32 division and remainder by zero (ia % 3 and ia % 4 are often 0), a
  // float -> i32 conversion that saturates (|a| >= 1/32), INT32_MIN / -1,
  // and wrapping sums: the interpreter's results exactly
  store ints[c, h, :] = ia / 3 + ia % 5 - (-ia) + maximum(ia, 2) * minimum(ia, -1)
                       + ia / (ia % 3) + ia % (ia % 4) + ((a * 1e12) as i32) / -1
                       + iota(C)[:, None] * 100 + iota(D)[None, :] * h
                       + where(iota(C)[:, None] == iota(D)[None, :] + 16, 7, 0)
}

kernel scans over (n in docs, h in H) {
  S = load s0[n, h, :] or 0.25
  Z = 0.0
  for c in reverse chunks(n) carry S, Z {
    v = load xb[c, h, :]
    store trace[c, h, :] = v + S[None, :] + Z
    S = S * 0.5 + sum(v, 0)
    Z = Z + 1.0
  }
  store state[n, h, :] = S + Z
}

// the per-chunk sums of every document, added in chunk order
kernel totals over (h in H) {
  S = load w[h, :] * 0.0
  for c in chunks carry S {
    S = S + load part[c, h, :]
  }
  store total[h, :] = S
}

// tanh, log1p, expm1, logsigmoid, silu over |x| from 2^-35 to 127 (z = x 2^e
// is exact: x is on the grid of 1/16), each compared element by element in
// relative terms: near 0 a cancellation would show as a large relative error
kernel math over (c in chunks, h in H) {
  z = load x[c, h, :] * load sc[:][None, :]
  store m_tanh[c, h, :] = tanh(z)
  store m_log1p[c, h, :] = log1p(where(z > 0.0, z, maximum(z * 0.25, -0.9921875)))
  store m_expm1[c, h, :] = expm1(minimum(z, 80.0))
  store m_logsig[c, h, :] = logsigmoid(z)
  store m_silu[c, h, :] = silu(z)
  // decay of a strong log-decay (to about -500 over a chunk: the upper
  // triangle's exponents would overflow exp) and of a mild one as a [C, 1]
  // column; both cumulative sums are exact in f32 (x is on a grid of 1/16)
  a = load x[c, h, :]
  store m_decay[c, h, :] = decay(cumsum(-abs(a[:, 0]) * 4.0, 0))
  store m_decay1[c, h, :] = decay(cumsum(-abs(a[:, 1]) * 0.0625, 0)[:, None])
}

// decay_dot's gradients at KDA's shape (C = 64, K = 128, 256 threads: the
// blocked lowering, bf16x3 tensor cores off the diagonal blocks) under a strong
// log-decay (near -5 per row: exp(g[r] - g[j]) spans e^-315 over a chunk,
// and any factor exp(g[j] - g[r]) would overflow) and a weak one (near -0.08
// per row: the off-diagonal blocks count); rows past a chunk's valid rows
// are 0 and decay no further
kernel dmm over (c in chunks, h in H) threads 256 {
  a = load xk[c, h, :]
  b = load yk[c, h, :]
  md = tril((a as bf16) @ (b as bf16).T) * 0.0625
  gs = cumsum(where(valid(c)[:, None], -4.5 - abs(b) * 0.5, 0.0), 0)
  gw = cumsum(where(valid(c)[:, None], -abs(a) * 0.1, 0.0), 0)
  store m_dmm[c, h, :] = decay_mm(md, b, gs)
  store m_dmmt[c, h, :] = decay_mm_t(md, a, gs)
  store m_dmm1[c, h, :] = decay_mm(md, b, gw)
  store m_dmmt1[c, h, :] = decay_mm_t(md, a, gw)
}

// decay_dot and unit_lower_inv at K = 32 and 128 threads (KDA runs them at
// K = 128 and 256 threads): decay_dot under a strong log-decay (about -4 per
// row: exp(g[r] - g[j]) spans e^-250 over a chunk) and a weak one, and the
// inverse of a unit lower-triangular matrix whose entries are about 0.1
kernel tri over (c in chunks, h in H) {
  a = load x[c, h, :]
  b = load y[c, h, :]
  gs = cumsum(where(valid(c)[:, None], -3.5 - abs(b) * 0.5, 0.0), 0)
  gw = cumsum(where(valid(c)[:, None], -abs(a) * 0.05, 0.0), 0)
  store m_ddot[c, h, :] = decay_dot(a, b, gs)
  store m_ddot1[c, h, :] = decay_dot(b, b, gw)
  store m_inv[c, h, :] = unit_lower_inv(tril((a as bf16) @ (b as bf16).T, -1) * 0.015625)
}

// the same functions of special values, coded finite: NaN 1000, +inf 2000,
// -inf -2000, +0 3000, -0 -3000 (other values as they are)
kernel specials over (h in H) {
  s = load sv[:]
  for i in range(5) {
    r = where(i == 0, tanh(s), where(i == 1, log1p(s), where(i == 2, expm1(s), where(i == 3, logsigmoid(s), silu(s)))))
    store m_special[h, i, :] = where(r != r, 1000.0, where(r > 3.0e38, 2000.0, where(r < -3.0e38, -2000.0,
                               where(r == 0.0, where(1.0 / r > 0.0, 3000.0, -3000.0), r))))
  }
}

entry run = elementwise, scans, totals, math, specials, dmm, tri
