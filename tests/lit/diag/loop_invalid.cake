// Misuse of counted loops: the count, nesting, the index, the carries.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program loop_invalid
option bad = loops in (loops, owner)
dim T, N, H
const C = 16
sequence T, docs N, chunk C
in  x : f32[T, H, 8]
out y : f32[T, H, 8]
out z : f32[N, H, 8]
if bad == loops {
kernel a over (c in chunks, h in H) {
  acc = load x[c, h, :]
  a1 = acc
  for i in range(2.0) carry a1 {
    a1 = a1 + 1.0
  }
  a2 = acc
  for i in range(load x[c, h, :]) carry a2 {
    a2 = a2 + 1.0
  }
  for i in range(H) carry acc {
    for j in range(2) carry acc {
      acc = acc * 2.0
    }
    i = 3
    k = 1.0
  }
  store y[c, h, :] = acc * k
}
kernel b over (n in docs, h in H) {
  S = load x[0, h, :]
  U = 0.0
  for c in chunks(n) carry S {
    for i in range(2) carry S {
      S = S + 1.0
    }
  }
  for i in range(H) carry S, U {
    for c in chunks(n) carry S {
      S = S + 1.0
    }
    U = 2.0
    v = where(valid(i)[:, None], S, 0.0)
  }
  store z[n, h, :] = S
}
kernel d over (c in chunks, h in H) {
  t = load x[c, h, :]
  m = 1.0
  for i in range(H) carry t {
    m = 2.0
  }
}
entry fwd = a
} else {
out q : f32[T, H, 8]
kernel o over (c in chunks, h in H) {
  t = load x[c, h / 2, :]
  store y[c, (h / 2) * 2 + h % 2, :] = t
  store q[c, h / 2, :] = t
  store q[c, h - h, :] = t
}
entry fwd = o
}
// CHECK: loop_invalid.cake:15:18: error: the count of `range` must be an i32 scalar (a dim, a constant, or arithmetic on them), got f32
// CHECK: loop_invalid.cake:19:18: error: the count of `range` must be an i32 scalar (a dim, a constant, or arithmetic on them), got f32[16, 8]
// CHECK: loop_invalid.cake:23:5: error: loops do not nest: this 'for' is inside another loop
// CHECK: loop_invalid.cake:26:5: error: cannot assign to loop index 'i'
// CHECK: loop_invalid.cake:29:28: error: unknown name 'k'
// CHECK: loop_invalid.cake:35:5: error: loops do not nest: this 'for' is inside another loop
// CHECK-NOT: never assigned in the scan body
// CHECK: loop_invalid.cake:40:5: error: loops do not nest: this 'for' is inside another loop
// CHECK: loop_invalid.cake:44:21: error: valid() takes a chunk index (a grid index over chunks or a scan index)
// CHECK: loop_invalid.cake:52:5: error: 'm' is defined outside the loop; only its carried values may be reassigned inside it (add 'm' to the loop's carry list)
// CHECK: loop_invalid.cake:51:27: error: carried value 't' is never assigned in the loop body
// A key head computed from a value head is fine to read from, but stored to
// by every value head of its group it would have several writers; an index
// that uses the grid index twice is refused too (conservatively: here it is
// h itself):
// RUN: not %cakec %s --emit=cir --option bad=owner 2>&1 | FileCheck %s --check-prefix=OWNER
// OWNER: loop_invalid.cake:60:9: error: several instances of grid axis 'h' write this window of 'y' (its index depends on 'h' through '/', '%', minimum or maximum, or twice), so the result would depend on their order; index the store by 'h' itself, plus or times other values (to sum over a group of 'h', loop over the group in one instance with `for i in range(...)`)
// OWNER: loop_invalid.cake:61:9: error: several instances of grid axis 'h' write this window of 'q'
// OWNER-NEXT: store q[c, h / 2, :] = t
// OWNER: loop_invalid.cake:62:9: error: several instances of grid axis 'h' write this window of 'q'
// OWNER-NOT: error
