// The limits of requirements: at most 64 per variant, 1024 characters,
// 64 levels of nesting once printed (unary operators, needed parentheses).
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program require_invalid3
dim T, H, HV
require !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!(H > 0)
require ----------------------------------------------------------------H < 1 && !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!(H > 0)
require H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H + H > 0
require ((((((((((H)))))))))) > 0
require H >= 0
require H >= -1
require H >= -2
require H >= -3
require H >= -4
require H >= -5
require H >= -6
require H >= -7
require H >= -8
require H >= -9
require H >= -10
require H >= -11
require H >= -12
require H >= -13
require H >= -14
require H >= -15
require H >= -16
require H >= -17
require H >= -18
require H >= -19
require H >= -20
require H >= -21
require H >= -22
require H >= -23
require H >= -24
require H >= -25
require H >= -26
require H >= -27
require H >= -28
require H >= -29
require H >= -30
require H >= -31
require H >= -32
require H >= -33
require H >= -34
require H >= -35
require H >= -36
require H >= -37
require H >= -38
require H >= -39
require H >= -40
require H >= -41
require H >= -42
require H >= -43
require H >= -44
require H >= -45
require H >= -46
require H >= -47
require H >= -48
require H >= -49
require H >= -50
require H >= -51
require H >= -52
require H >= -53
require H >= -54
require H >= -55
require H >= -56
require H >= -57
require H >= -58
require H >= -59
require H >= -60
require HV >= 0
require T >= 0
// CHECK: require_invalid3.cake:6:9: error: this requirement cannot be recorded: nested more than 64 levels deep
// CHECK-NOT: require_invalid3.cake:7:
// CHECK: require_invalid3.cake:8:9: error: a requirement has at most 1024 characters; this one has 1201
// CHECK: require_invalid3.cake:72:1: error: a program has at most 64 requirements (in one variant)
// CHECK-NOT: error
