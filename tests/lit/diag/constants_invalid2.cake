// Literals that do not fit: an integer beyond int64, a number beyond double.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program constants_invalid2
const L = 99999999999999999999
const F = 1e999
// CHECK: constants_invalid2.cake:4:11: error: integer literal 99999999999999999999 does not fit in 64 bits (at most 9223372036854775807)
// CHECK-NEXT: const L = 99999999999999999999
// CHECK-NEXT: {{^}}          ^~~~~~~~~~~~~~~~~~~~
// CHECK: constants_invalid2.cake:5:11: error: number 1e999 is too large for a double
