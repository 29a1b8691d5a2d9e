// A context-parallel running sum: y[t] = y0 + the sum of x over the tokens
// of t's document up to t. Each rank sums its fragments, the totals are gathered,
// and each fragment starts from the totals of the fragments before it.
program kcp_cumsum
dim T, N, R, F
const C = 16, W = 8
sequence T, docs N, chunk C
ranks R, fragments F

in   x    : f32[T, W]
in   y0   : f32[N, W] optional  // a starting value per document, on the fragment that starts it
out  y    : f32[T, W]
temp tot  : f32[F, W]         // each local fragment's total
temp gtot : f32[R, F, W]      // every rank's totals
temp base : f32[N, W]         // the sum of the fragments before it in its document

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

kernel scan over (n in docs) {
  s = load base[n, :]
  for c in chunks(n) carry s {
    z = cumsum(load x[c, :], 0) + s[None, :]
    store y[c, :] = z
    s = z[C - 1, :]
  }
}

entry fwd = total, gather, fold, scan
