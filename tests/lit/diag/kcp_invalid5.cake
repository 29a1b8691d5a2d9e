// A loop over two names takes before(n) or after(n).
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program kcp_invalid5
dim T, N, R
const C = 16, W = 8
sequence T, docs N, chunk C
ranks R
in   x : f32[T, W]
out  y : f32[N, W]
kernel k over (n in docs) {
  s = sum(load x[0, :], 0)
  for r, f in reverse behind(n) carry s {
    s = s + 1.0
  }
  store y[n, :] = where(continues(n), 0.0, 1.0)
}
// CHECK: kcp_invalid5.cake:12:23: error: expected `before(n)` or `after(n)` after 'in' for a loop over two names, got 'behind'
