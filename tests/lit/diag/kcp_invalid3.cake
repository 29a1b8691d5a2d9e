// Fragments and before loops in a program that is not context-parallel.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program kcp_invalid3
dim T, N, R
const C = 16, W = 8
sequence T, docs N, chunk C
in   x : f32[T, W]
out  y : f32[N, W]
kernel k over (n in docs) {
  s = sum(load x[0, :], 0)
  for r, f in before(n) carry s {
    s = s + 1.0
  }
  store y[n, :] = where(continues(n), 0.0, 1.0)
}
// CHECK: kcp_invalid3.cake:11:22: error: a loop over `before(n)` walks the fragments of other ranks: it needs a context-parallel program (a `ranks` declaration)
// CHECK: kcp_invalid3.cake:14:25: error: continues() asks where a fragment sits in its document: it needs a context-parallel program (a `ranks` declaration)
// RUN: not %cakec %S/kcp_invalid4.txt --emit=cir 2>&1 | FileCheck %s --check-prefix=XCHG
// XCHG: kcp_invalid4.txt:9:1: error: an exchange passes data between ranks: it needs a context-parallel program (a `ranks` declaration before it)
