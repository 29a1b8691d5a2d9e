// A context-parallel running sum: y[t] = y0 + the sum of x over the tokens
// of t's document up to t. Each rank sums its fragments, the totals are
// gathered, and each fragment starts from the totals of the fragments before
// it. And a fold the other way, whose result depends on its order:
// z[t] = x[t] + D, D folded over the fragments after t's, last first,
// D <- D / 2 + total (so the next fragment's total counts fully).
program kcp_cumsum
dim T, N, R, F
const C = 16, W = 8
sequence T, docs N, chunk C
ranks R, fragments F

in   x    : f32[T, W]
in   y0   : f32[N, W] optional  // a starting value per document, on the fragment that starts it
out  y    : f32[T, W]
out  z    : f32[T, W]
temp tot  : f32[F, W]         // each local fragment's total
temp gtot : f32[R, F, W]      // every rank's totals
temp base : f32[N, W]         // the sum of the fragments before it in its document
temp tail : f32[N, W]         // the fold over the fragments after it

kernel total over (n in docs) {
  acc = where(continues(n), 0.0, load y0[n, :] or 0)
  for c in chunks(n) carry acc {
    acc = acc + sum(load x[c, :], 0)
  }
  store tot[n, :] = acc
}

exchange gather = all_gather(tot) -> gtot

kernel fold over (n in docs) {
  b = where(continues(n), 0.0, load y0[n, :] or 0)
  for r, f in before(n) carry b {
    b = b + load gtot[r, f, :]
  }
  store base[n, :] = b
}

kernel fold_after over (n in docs) {
  d = load tot[n, :] * 0.0
  for r, f in reverse after(n) carry d {
    d = d * 0.5 + load gtot[r, f, :]
  }
  store tail[n, :] = d
}

kernel scan over (n in docs) {
  s = load base[n, :]
  for c in chunks(n) carry s {
    v = cumsum(load x[c, :], 0) + s[None, :]
    store y[c, :] = v
    s = v[C - 1, :]
  }
}

kernel add_tail over (n in docs) {
  d = load tail[n, :]
  for c in chunks(n) {
    store z[c, :] = load x[c, :] + d[None, :]
  }
}

entry fwd = total, gather, fold, scan, fold_after, add_tail
