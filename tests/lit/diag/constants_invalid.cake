// Integer constants are checked int64 values: overflow, INT64_MIN / -1,
// INT64_MIN % -1 and division by zero are errors at the operator; extents are
// in [1, 2^31 - 1].
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program constants_invalid
dim T
const MIN = -9223372036854775807 - 1
const D = MIN / -1
const M = MIN % -1
const N = -MIN
const A = 9223372036854775807 + 1
const S = MIN - 1
const P = 4294967296 * 4294967296
const Z = 1 / 0
const Y = 7 % 0
const X = 1.5 % 2
in w : f32[2147483648]
in u : f32[65536, 65536, 65536]
param p : i32 = 2147483648
param f : f32 = 1e300 * 1e300
const H = 4611686018427387904
in h : bf16[H]
// CHECK: constants_invalid.cake:8:15: error: integer overflow in a constant expression: -9223372036854775808 / -1 does not fit in 64 bits
// CHECK: constants_invalid.cake:9:15: error: integer overflow in a constant expression: -9223372036854775808 % -1 does not fit in 64 bits
// CHECK: constants_invalid.cake:10:11: error: integer overflow in a constant expression: -(-9223372036854775808) does not fit in 64 bits
// CHECK: constants_invalid.cake:11:31: error: integer overflow in a constant expression: 9223372036854775807 + 1 does not fit in 64 bits
// CHECK: constants_invalid.cake:12:15: error: integer overflow in a constant expression: -9223372036854775808 - 1 does not fit in 64 bits
// CHECK: constants_invalid.cake:13:22: error: integer overflow in a constant expression: 4294967296 * 4294967296 does not fit in 64 bits
// CHECK: constants_invalid.cake:14:13: error: division by zero in a constant expression
// CHECK: constants_invalid.cake:15:13: error: remainder by zero in a constant expression
// CHECK: constants_invalid.cake:16:15: error: '%' needs integer constants
// CHECK: constants_invalid.cake:17:12: error: extent must be in [1, 2^31 - 1], got 2147483648
// CHECK: constants_invalid.cake:18:26: error: the constant extents of a tensor multiply to more than 2^40 elements
// CHECK: constants_invalid.cake:19:17: error: the default of an i32 parameter must be an integer constant that fits in i32
// CHECK: constants_invalid.cake:20:23: error: the default of a parameter must be a finite number
// CHECK: constants_invalid.cake:22:13: error: extent must be in [1, 2^31 - 1], got 4611686018427387904
