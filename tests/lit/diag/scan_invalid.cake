// Misuse of a scan and its carried values.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program scan_invalid
dim T, N, H
const C = 16
sequence T, docs N, chunk C
in  x  : f32[T, H, 8]
in  h0 : f32[N, H, 8] optional
out y  : f32[T, H, 8]
kernel a over (n in docs, h in H) {
  S = load h0[n, h, :] or 0
  k = 2.0
  for c in chunks(n) carry S, U {
    S = S + sum(load x[c, h, :], 0)
  }
}
kernel b over (n in docs, h in H) {
  S = load h0[n, h, :] or 0
  k = 2.0
  for c in chunks(n) carry S {
    k = 3.0
    S = sum(load x[c, h, :], 1)
  }
}
kernel d over (c in chunks, h in H) {
  S = 0.0
  for t in chunks(c) carry S {
    S = S + 1.0
  }
}
kernel e over (n in docs, h in H) {
  S = load h0[n, h, :] or 0
  for c in chunks(n) carry S {
    for c2 in chunks(n) carry S {
      S = S + 1.0
    }
    v = 1.0
  }
  store y[0, h, :] = v
}
// CHECK: scan_invalid.cake:13:31: error: carried value 'U' must be given its initial value before the scan
// CHECK: scan_invalid.cake:21:5: error: 'k' is defined outside the scan; only its carried values may be reassigned inside it (add 'k' to the scan's carry list)
// CHECK: scan_invalid.cake:19:3: note: 'k' is defined here
// CHECK: scan_invalid.cake:22:9: error: carried value 'S' is f32[8], but this assigns f32[16]; a carry keeps its type
// CHECK-NOT: never assigned
// CHECK: scan_invalid.cake:27:19: error: 'c' is not a grid index over docs; a scan walks the chunks of one document, so the kernel needs an axis like `n in docs`
// CHECK: scan_invalid.cake:34:5: error: scans do not nest: this 'for' is inside another scan
// CHECK-NOT: never assigned
// CHECK: scan_invalid.cake:39:22: error: unknown name 'v'
