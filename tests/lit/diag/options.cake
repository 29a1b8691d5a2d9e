// Compile-time options: every combination is a variant; `if` picks
// declarations and statements; per-chunk tensors use the `chunks` extent.
// RUN: %cakec %s --emit=cir | FileCheck %s
// RUN: %cakec %s --emit=cir --option mode=b --option fast=false | FileCheck %s --check-prefix=ONE
program opts
dim T
const C = 16
sequence T, chunk C
option mode = a in (a, b, c)
option fast = true in (true, false)
if mode == c {
  in x : f32[T, 8]
} else {
  in x : bf16[T, 8]
}
out y : f32[T, 8]
out per : f32[chunks, 8]
kernel k over (c in chunks) {
  v = load x[c, :]
  if fast && mode != b {
    r = v * 2.0
  } else if mode == b {
    r = v * 3.0
  } else {
    r = v * 4.0
  }
  store y[c, :] = r
  store per[c, :] = sum(r, 0)
}
// CHECK: // variant mode=a,fast=true
// CHECK: option mode = a
// CHECK: option fast = true
// CHECK: dim chunks (chunks)
// CHECK: tensor in x : bf16[T, 8]
// CHECK: tensor out per : f32[chunks, 8]
// CHECK: const 2 : f32
// CHECK: store per[%0, :8] = %{{[0-9]+}}
// CHECK: // variant mode=a,fast=false
// CHECK: const 4 : f32
// CHECK: // variant mode=b,fast=true
// CHECK: const 3 : f32
// CHECK: // variant mode=b,fast=false
// CHECK: // variant mode=c,fast=true
// CHECK: tensor in x : f32[T, 8]
// CHECK: // variant mode=c,fast=false
// CHECK-NOT: variant
// ONE: // variant mode=b,fast=false
// ONE-NOT: variant
// ONE: const 3 : f32
