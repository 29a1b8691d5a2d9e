// A counted loop is `for i in range(N)`: another name there is an error
// (`range` is not a keyword elsewhere: it can name a value).
// RUN: not %cakec %s --emit=ast 2>&1 | FileCheck %s
program loop_invalid2
dim T, H
const C = 16
sequence T, chunk C
in  x : f32[T, H, 8]
out y : f32[T, H, 8]
kernel a over (c in chunks, h in H) {
  range = load x[c, h, :]
  for i in rng(3) carry range {
    range = range + 1.0
  }
  store y[c, h, :] = range
}
entry fwd = a
// CHECK: loop_invalid2.cake:12:12: error: expected `chunks` or `range(N)` after 'in', got 'rng'
// CHECK-NOT: error
