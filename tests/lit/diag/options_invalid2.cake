// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
// RUN: not %cakec %s --emit=cir --option mode=z 2>&1 | FileCheck %s --check-prefix=VALUE
// RUN: not %cakec %s --emit=cir --option speed=1 2>&1 | FileCheck %s --check-prefix=UNKNOWN
program opts_invalid2
dim T
const C = 16
sequence T, chunk C
option mode = a in (a, b)
out y : f32[T, 8]
out per : f32[chunks, 8]
kernel k over (c in chunks) {
  if mode == d {
    r = 1.0
  }
  if mode {
    r = 2.0
  }
  store per[c, :] = load y[c, :]
}
// CHECK: options_invalid2.cake:12:14: error: option 'mode' is compared with something that is not one of its values (a, b)
// CHECK: options_invalid2.cake:15:6: error: option 'mode' is not true/false; compare it with one of its values, e.g. mode == a
// CHECK: options_invalid2.cake:18:21: error: shape mismatch: the window of 'per' is f32[8], the stored value is f32[16, 8]
// VALUE: cakec: error: option 'mode' of program 'opts_invalid2' has no value 'z'
// UNKNOWN: cakec: error: no program has an option 'speed'
