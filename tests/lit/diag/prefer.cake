// The valid counterpart of prefer_invalid.cake: an option's `prefer VALUE
// when EXPR` clauses, recorded per variant as written (constants by name)
// and in the form the runtime evaluates (constants by value) with where they
// are; SMS is the device's multiprocessor count; dims and constants declared
// after the option are fine (the runtime evaluates the clause at plan time).
// RUN: %cakec %s --emit=cir | FileCheck %s
// RUN: %cakec %s --emit=cir --option vblock=v16 | FileCheck %s --check-prefix=V16
// RUN: %cakec %s --emit=ast | FileCheck %s --check-prefix=AST
program prefers
option vblock = v32 in (v32, v16, v8)
  prefer v8 when N * H * (V / 8) <= SMS
  prefer v16 when N * H * (V / 16) <= 2 * SMS && T >= C
option mode = a in (a, b)
option fast = false in (true, false) prefer true when !(H > 64 || -H < -128)
dim T, N, H
const C = 16, V = 128
sequence T, docs N, chunk C
if vblock == v16 {
  const BV = 16
} else {
  const BV = 32
}
in  x : f32[T, H, 8]
out y : f32[T, H, 8]
kernel k over (c in chunks, h in H) {
  store y[c, h, :] = load x[c, h, :]
}
entry fwd = k
// CHECK: option vblock = v32
// CHECK-NEXT:   prefer v8 when N * H * (V / 8) <= SMS (N * H * (128 / 8) <= SMS) at prefer.cake:11:18
// CHECK-NEXT:   prefer v16 when N * H * (V / 16) <= 2 * SMS && T >= C (N * H * (128 / 16) <= 2 * SMS && T >= 16) at prefer.cake:12:19
// CHECK-NEXT: option mode = a
// CHECK-NEXT: option fast = true
// CHECK-NEXT:   prefer true when !(H > 64 || -H < -128) (!(H > 64 || -H < -128)) at prefer.cake:14:55
// V16: option vblock = v16
// V16-NEXT:   prefer v8 when N * H * (V / 8) <= SMS (N * H * (128 / 8) <= SMS) at prefer.cake:11:18
// AST: Option vblock = v32 in (v32, v16, v8) prefer v8 when
// AST-SAME: prefer v16 when
