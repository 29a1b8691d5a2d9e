// Point-to-point exchanges: each rank's total of x over its tokens goes to
// the next rank (send_next) and to the previous one (send_prev); a token's
// u = x + the previous rank's total + 2 x the next rank's (0 past the first
// and the last rank).
program kcp_send
dim T, N, R, F
const C = 16, W = 8
sequence T, docs N, chunk C
ranks R, fragments F

in   x : f32[T, W]
out  u : f32[T, W]
temp tot : f32[W]                     // this rank's total
temp prev, next : f32[W]              // the previous rank's and the next rank's

kernel total over (i in 1) {
  acc = where(iota(W) >= 0, 0.0, 0.0)
  for c in chunks carry acc {
    acc = acc + sum(load x[c, :], 0)
  }
  store tot[:] = acc
}

exchange to_next = send_next(tot) -> prev
exchange to_prev = send_prev(tot) -> next

kernel add over (c in chunks) {
  p = load prev[:]
  q = load next[:]
  store u[c, :] = load x[c, :] + p[None, :] + 2.0 * q[None, :]
}

entry fwd = total, to_next, to_prev, add
