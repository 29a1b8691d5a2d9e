// Requirements over parameters: f32 parameters and decimal numbers compute in
// double, recorded by name (constants by value, floats always with a '.');
// checked at plan time with the values given (tests/unit/test_runtime.c) and
// by `cakec run` (below); a default that breaks one is a compile error
// (require_invalid.cake).
// RUN: %cakec %s --emit=cir | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: not %cakec run %s --dim T=4 --param lower_bound=0.5 --out-dir %t 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: %cakec run %s --dim T=4 --param lower_bound=-0.25 --out-dir %t
// RUN: not %cakec run %s --dim T=4 --param steps=0 --out-dir %t 2>&1 | FileCheck %s --check-prefix=INT
program require_params
dim T
const C = 16, HALF = 0.5, BIG = 1e20
sequence T, chunk C
param lower_bound : f32 = -5.0
param steps : i32 = 3
require lower_bound < 0
require lower_bound * HALF >= -100.0 && BIG > 1.5e3
require steps > 0 && T % steps == T % steps
require steps * 2 + lower_bound != 0.75
in  x : f32[T, 8]
out y : f32[T, 8]
kernel k over (c in chunks) {
  store y[c, :] = load x[c, :] * lower_bound
}
entry fwd = k
// CHECK: require lower_bound < 0 (lower_bound < 0) at require_params.cake:17:9
// CHECK-NEXT: require lower_bound * HALF >= -100.0 && BIG > 1.5e3 (lower_bound * 0.5 >= -100.0 && 1.0e+20 > 1500.0) at require_params.cake:18:9
// CHECK-NEXT: require steps > 0 && T % steps == T % steps (steps > 0 && T % steps == T % steps) at require_params.cake:19:9
// CHECK-NEXT: require steps * 2 + lower_bound != 0.75 (steps * 2 + lower_bound != 0.75) at require_params.cake:20:9
// BAD: the parameters break 'lower_bound < 0' (require_params.cake:17:9): lower_bound = 0.5
// INT: the dims and parameters break 'steps > 0 && T % steps == T % steps' (require_params.cake:19:9): steps = 0, T = 4
