// kda_prep_parts.cake - the KDA forward's `prep` stage cut after each of its
// parts (option `cut`), to time where the stage spends its time (time the
// variants and take differences). Not shipped: benchmarks/ only.
program kda_prep_parts

option cut = full in (loads, gate, decay, solve, wu, full)
option nt = t256 in (t256, t128)
if nt == t256 {
  const NT = 256
} else {
  const NT = 128
}

dim   T, N, H
const K = 128, V = 128, C = 64
sequence T, docs N, chunk C

param scale : f32 = rsqrt(K)
param lower_bound : f32 = -5.0

in  q, k : bf16[T, H, K]
in  v    : bf16[T, H, V]
in  g : bf16[T, H, K]
in  A_log : f32[H]
in  dt_bias : f32[H, K]
in  beta : bf16[T, H]
out w, qg, kd : bf16[T, H, K]
out u  : bf16[T, H, V]
out pq : bf16[T, H, C]
out gx : f32[chunks, H, K]

kernel prep over (c in chunks, h in H) threads NT {
  qraw = load q[c, h, :]
  kraw = load k[c, h, :]
  if cut == loads {
    store qg[c, h, :] = qraw
    store kd[c, h, :] = kraw
  } else {
  qn = qraw * rsqrt(sum(qraw * qraw, 1) + 1e-6)[:, None]
  kn = kraw * rsqrt(sum(kraw * kraw, 1) + 1e-6)[:, None]
  graw = load g[c, h, :]
  gt = lower_bound * sigmoid(exp(load A_log[h]) * (graw + load dt_bias[h, :][None, :]))
  G = cumsum(where(valid(c)[:, None], gt, 0.0), 0)
  b = sigmoid(load beta[c, h])
  if cut == gate {
    store gx[c, h, :] = G[C - 1, :]
    store qg[c, h, :] = qn as bf16
    store kd[c, h, :] = (kn * b[:, None]) as bf16
  } else {
  A  = tril(decay_dot(kn, kn, G), -1) * b[:, None]
  if cut == decay {
    store pq[c, h, :] = A as bf16
    store gx[c, h, :] = G[C - 1, :]
  } else {
  Ti = unit_lower_inv(A) as bf16
  if cut == solve {
    store pq[c, h, :] = Ti
    store gx[c, h, :] = G[C - 1, :]
  } else {
  eg = exp(G)
  store w[c, h, :] = (Ti @ ((kn * eg * b[:, None]) as bf16)) as bf16
  store u[c, h, :] = (Ti @ ((load v[c, h, :] * b[:, None]) as bf16)) as bf16
  if cut == full {
    store qg[c, h, :] = (qn * eg * scale) as bf16
    gl = G[C - 1, :]
    store kd[c, h, :] = (kn * exp(gl[None, :] - G)) as bf16
    store pq[c, h, :] = (decay_dot(qn, kn, G) * scale) as bf16
    store gx[c, h, :] = exp(gl)
  }
  }
  }
  }
  }
}

entry fwd = prep
