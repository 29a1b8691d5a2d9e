// Prefer clauses that name a value the option lacks, something that is not
// a dim, an integer constant or a device fact, a name declared inside an
// `if` (the clause chooses the variant), or that is not a comparison.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program prefer_invalid
option vblock = v32 in (v32, v16)
  prefer v8 when N <= 2
  prefer v16 when N * H + Q > 1
  prefer v16 when BV > 1
  prefer v16 when vblock == v16
  prefer v16 when N * 2
  prefer v16 when scale > 0
  prefer v16 when H > HALF
option mode = a in (a, b) prefer b when 1.5 < N
option other = x in (x, y) prefer y when sqrt(H) > 1
dim T, N, H
const C = 16, HALF = 0.5
if vblock == v16 {
  const BV = 16
} else {
  const BV = 32
}
sequence T, docs N, chunk C
param scale : f32 = 1.0
in  x : f32[T, H, 8]
out y : f32[T, H, 8]
kernel k over (c in chunks, h in H) {
  store y[c, h, :] = load x[c, h, :]
}
entry fwd = k
// CHECK: prefer_invalid.cake:7:10: error: option 'vblock' has no value 'v8' to prefer (it takes v32, v16)
// CHECK: prefer_invalid.cake:8:27: error: unknown name 'Q'
// CHECK: prefer_invalid.cake:9:19: error: 'BV' is declared inside an `if`; a prefer condition uses dims and constants declared outside any `if` (it chooses the variant, so it cannot depend on one)
// CHECK: prefer_invalid.cake:10:19: error: 'vblock' is an option; a prefer condition relates dims, integer constants and device facts (SMS)
// CHECK: prefer_invalid.cake:11:19: error: a prefer condition is a comparison, e.g. `prefer v16 when N * H <= 2 * SMS`; this is an integer
// CHECK: prefer_invalid.cake:12:19: error: 'scale' is a parameter; a prefer condition relates dims and integer constants (and device facts: SMS)
// CHECK: prefer_invalid.cake:13:23: error: a prefer condition computes with integers; constant 'HALF' is not one
// CHECK: prefer_invalid.cake:14:41: error: a prefer condition computes with integers; 1.5 is not one
// CHECK: prefer_invalid.cake:15:42: error: a prefer condition uses dims, integer constants, device facts (SMS) and the operators
