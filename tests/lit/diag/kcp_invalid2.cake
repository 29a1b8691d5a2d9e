// Misuse of fragments and before loops in kernels.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program kcp_invalid2
dim T, N, R, F
const C = 16, W = 8
sequence T, docs N, chunk C
ranks R, fragments F
in   x : f32[T, W]
out  y : f32[T, W]
temp a : f32[F, W]
kernel k over (n in docs) {
  s = sum(load x[0, :], 0)
  for r, r in before(n) carry s {
    s = s + 1.0
  }
  store a[n, :] = where(continued(F), 0.0, 1.0)
}
kernel m over (c in chunks) {
  q = 0
  for r, f in before(c) carry q {
    q = 1
  }
}
entry fwd = k, m
// CHECK: kcp_invalid2.cake:13:10: error: the rank and the fragment of a `before` loop need two different names
// CHECK: kcp_invalid2.cake:16:35: error: continued() takes a fragment (a grid index over docs)
// CHECK: kcp_invalid2.cake:20:22: error: 'c' is not a grid index over docs; `before(n)` takes a fragment
