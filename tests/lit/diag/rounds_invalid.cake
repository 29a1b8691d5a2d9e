// Misuse of rounds(...) groups in entries and of ends() loops.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program rounds_invalid
dim T, N, R, F
const C = 16, W = 8
sequence T, docs N, chunk C
ranks R, fragments F
in   x : f32[T, W]
out  y : f32[T, W]
temp s : f32[F, W]
temp gs : f32[R, F, W]
kernel bychunk over (c in chunks) {
  store y[c, :] = load x[c, :]
}
kernel bydoc over (n in docs) {
  a = load x[0, :] * 0.0
  for r, f in before(n) carry a {
    a = load gs[r, f, :]
  }
  store s[n, :] = a
}
kernel both over (n in docs) {
  b = load x[0, :] * 0.0
  for r, r in ends() carry b {
    b = b + load gs[r, 0, :]
  }
  store s[n, :] = b
}
exchange g = all_gather(s) -> gs
entry e1 = rounds(bychunk, g)
entry e2 = rounds(bydoc, g), rounds reverse(bydoc)
entry e3 = bydoc
// CHECK: rounds_invalid.cake:24:10: error: the rank and the fragment of an `ends` loop need two different names
// CHECK: rounds_invalid.cake:30:19: error: kernel 'bychunk' is in rounds(...) of entry 'e1' but has no axis over docs
// CHECK: rounds_invalid.cake:31:45: error: kernel 'bydoc' is in rounds reverse(...) of entry 'e2' and in rounds(...) elsewhere
// CHECK: rounds_invalid.cake:32:7: error: entry 'e3' runs kernel 'bydoc' outside rounds, and another entry in rounds(...)
