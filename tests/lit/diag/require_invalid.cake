// Requirements that are not relations of dims, parameters and constants, ones
// over constants that do not hold, and one that a parameter's default breaks.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program require_invalid
option mode = a in (a, b)
dim T, H, HV
const C = 16, HALF = 0.5
sequence T, chunk C
param scale : f32 = 1.0
in  x : f32[T, H, 8]
require HV % H
require HV % 2.5 == 0
require scale % 2 == 1
require x > 0
require scale < 0
require mode == a
require Q > 1
require (H > 1) + 1 == 2
require !H
require H && HV > 0
require sqrt(H) > 1
require load x[0, 0, 0] > 0
require C % 3 == 0
require C / (C - 16) == 1
require -(H > 0) == 1
out y : f32[T, H, 8]
kernel k over (c in chunks, h in H) {
  store y[c, h, :] = load x[c, h, :]
}
entry fwd = k
// CHECK: require_invalid.cake:11:9: error: a requirement is a comparison of dims or parameters, e.g. `require HV % H == 0`; this is a number
// CHECK-NEXT: require HV % H
// CHECK-NEXT: ^~~~~~
// CHECK: require_invalid.cake:12:12: error: '%' needs integers; a parameter or decimal number here is a float
// CHECK: require_invalid.cake:13:15: error: '%' needs integers; a parameter or decimal number here is a float
// CHECK: require_invalid.cake:14:9: error: 'x' is a tensor; a requirement relates dims, parameters and constants
// CHECK: require_invalid.cake:15:9: error: requirement 'scale < 0' does not hold for the parameters' defaults: scale = 1
// CHECK: require_invalid.cake:16:9: error: 'mode' is an option; a requirement relates dims, parameters and constants (put it in `if mode == ... { }` to make it depend on the option)
// CHECK-NOT: unknown name 'a'
// CHECK: require_invalid.cake:17:9: error: unknown name 'Q'
// CHECK: require_invalid.cake:18:17: error: '+' needs numbers, got a comparison
// CHECK: require_invalid.cake:19:9: error: '!' needs a comparison, got an integer
// CHECK: require_invalid.cake:20:11: error: '&&' combines comparisons, got an integer operand
// CHECK: require_invalid.cake:21:9: error: a requirement uses dims, parameters, constants and the operators + - * / % < <= > >= == != && || !
// CHECK: require_invalid.cake:22:9: error: a requirement uses dims, parameters, constants and the operators
// CHECK: require_invalid.cake:23:9: error: requirement 'C % 3 == 0' does not hold
// CHECK: require_invalid.cake:24:9: error: requirement 'C / (C - 16) == 1' does not hold (a division by zero)
// CHECK: require_invalid.cake:25:9: error: unary '-' needs a number, got a comparison
