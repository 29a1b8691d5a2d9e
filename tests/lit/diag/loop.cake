// The valid counterpart of loop_invalid.cake: counted loops `for i in
// range(N) carry ...` with N a dim, a constant or arithmetic on them, the
// loop index in window indices computed from grid indices (the heads of a
// group: h * G + i; a key head from a value head: h / (HV / H)), stores
// inside the loop, and values bound in a statement-level `if` inside it.
// RUN: %cakec %s --emit=cir | FileCheck %s
// RUN: %cakec %s --emit=ast | FileCheck %s --check-prefix=AST
program loop
dim T, H, HV
const C = 16, R = 3
sequence T, chunk C
require HV % H == 0
in  x : f32[T, HV, 8]
in  q : f32[T, H, 8]
out s : f32[T, H, 8]
out w : f32[T, HV, 8]
out r : f32[T, 8]
kernel group over (c in chunks, h in H) {
  acc = load q[c, h, :] * 0.0
  for i in range(HV / H) carry acc {
    hv = h * (HV / H) + i
    xv = load x[c, hv, :]
    if R > 2 {
      y = xv * 2.0
    } else {
      y = xv
    }
    acc = acc + y
    store w[c, hv, :] = xv + load q[c, hv / (HV / H), :]
  }
  store s[c, h, :] = acc
}
kernel fixed over (c in chunks) {
  t = load q[c, 0, :]
  n = 0
  for j in range(R) carry t, n {
    t = t * 0.5
    n = n + j
  }
  store r[c, :] = t * (n as f32)
}
entry fwd = group, fixed
// CHECK-LABEL: kernel group over (c in chunks, h in H)
// CHECK: [[HV:%[0-9]+]] = dim HV : i32
// CHECK-NEXT: [[H:%[0-9]+]] = dim H : i32
// CHECK-NEXT: [[G:%[0-9]+]] = / [[HV]], [[H]] : i32
// CHECK-NEXT: for range [[G]] carry(%{{[0-9]+}}) #[[F:[0-9]+]] {
// CHECK-NEXT: [[I:%[0-9]+]] = loopvar of #[[F]] : i32
// CHECK-NEXT: = carry 0 of #[[F]] : f32[16, 8]
// CHECK: = + %{{[0-9]+}}, [[I]] : i32
// CHECK: store w[chunk %0, %{{[0-9]+}}, :8]
// CHECK: yield
// CHECK: = result 0 of #[[F]] : f32[16, 8]
// CHECK-LABEL: kernel fixed over (c in chunks)
// CHECK: [[R:%[0-9]+]] = const 3 : i32
// CHECK-NEXT: for range [[R]] carry(%{{[0-9]+}}, %{{[0-9]+}}) #[[F2:[0-9]+]] {
// CHECK-NEXT: = loopvar of #[[F2]] : i32
// AST: For i in range((HV / H)) carry acc  @20:3
// AST: For j in range(R) carry t n  @36:3
