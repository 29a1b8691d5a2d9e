// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program optional_invalid2
dim T, N
const C = 16
sequence T, docs N, chunk C
in  h0 : f32[N, 8] optional
in  x  : f32[T, 8]
kernel k over (n in docs) {
  a = load h0[n, :]
  b = load x[0, :] or 0
  c = a or 1
}
// CHECK: optional_invalid2.cake:9:7: error: 'h0' is optional and may be absent: give the value to use then, e.g. `load h0[...] or 0`
// CHECK: optional_invalid2.cake:10:23: error: 'x' is not optional, so a default after 'or' would never be used
// CHECK: optional_invalid2.cake:11:9: error: 'or' gives the default of an optional tensor and must follow a load
