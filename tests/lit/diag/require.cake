// The valid counterpart of require_invalid.cake: relations between dims,
// recorded as written (constants by name) and in the form the runtime
// evaluates (constants by value), with where they are; a requirement in an
// `if` applies to the variants that take that branch; one over constants
// only is decided at compile time.
// RUN: %cakec %s --emit=cir | FileCheck %s
// RUN: %cakec %s --emit=cir --option mode=b | FileCheck %s --check-prefix=B
// RUN: %cakec %s --emit=ast | FileCheck %s --check-prefix=AST
program requirements
option mode = a in (a, b)
dim T, N, H, HV
const C = 16, G = 4, NEG = -3
sequence T, docs N, chunk C
require HV % H == 0
require HV >= H && (H > 0 || T == 0)
require (T + C - 1) / C * C >= T
require -(H) < 1 && !(HV * G == 12 || N % 2 != 0)
require H - (HV - 1) <= NEG * -1
require C % 16 == 0
if mode == b {
  require HV == H * G
}
in  x : f32[T, H, 8]
out y : f32[T, HV, 8]
kernel k over (c in chunks, h in HV) {
  store y[c, h, :] = load x[c, h / (HV / H), :]
}
entry fwd = k
// CHECK: require HV % H == 0 (HV % H == 0) at require.cake:14:9
// CHECK-NEXT: require HV >= H && (H > 0 || T == 0) (HV >= H && (H > 0 || T == 0)) at require.cake:15:9
// CHECK-NEXT: require (T + C - 1) / C * C >= T ((T + 16 - 1) / 16 * 16 >= T) at require.cake:16:9
// CHECK-NEXT: require -H < 1 && !(HV * G == 12 || N % 2 != 0) (-H < 1 && !(HV * 4 == 12 || N % 2 != 0)) at require.cake:17:9
// CHECK-NEXT: require H - (HV - 1) <= NEG * -1 (H - (HV - 1) <= (-3) * -1) at require.cake:18:9
// CHECK-NEXT: require C % 16 == 0 (16 % 16 == 0) at require.cake:19:9
// CHECK-NOT: require
// CHECK: kernel k
// B: require C % 16 == 0
// B-NEXT: require HV == H * G (HV == H * 4) at require.cake:21:11
// AST: Require ((HV % H) == 0)  @14:1
// AST: Require (((-H) < 1) && (!(((HV * G) == 12) || ((N % 2) != 0))))  @17:1
// AST: Require (HV == (H * G))  @21:3
