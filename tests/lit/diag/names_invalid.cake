// Unknown names, misused names, redefinitions.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program names_invalid
dim T
const C = 16
sequence T, chunk C
in x : f32[T, 4]
out y : f32[T, 4]
kernel k over (c in chunks) {
  a = load x[c, :] + scale
  b = x + 1
  c = 3.0
  z = frobnicate(a)
  store y[c, :] = a
}
entry fwd = k, nothere
// CHECK: names_invalid.cake:10:22: error: unknown name 'scale'
// CHECK-NEXT: {{^}}  a = load x[c, :] + scale
// CHECK-NEXT: {{^}}                     ^~~~~
// CHECK: names_invalid.cake:11:7: error: 'x' is a tensor in memory; read a window of it with `load x[...]`
// CHECK: names_invalid.cake:12:3: error: cannot assign to grid index 'c'
// CHECK: names_invalid.cake:13:7: error: unknown function 'frobnicate'
// CHECK: names_invalid.cake:16:16: error: entry 'fwd' lists 'nothere', which is not a kernel
