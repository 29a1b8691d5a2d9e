// Misused options and static conditions.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
// RUN: not %cakec %s --emit=cir --option mode=z 2>&1 | FileCheck %s --check-prefix=VALUE
// RUN: not %cakec %s --emit=cir --option speed=1 2>&1 | FileCheck %s --check-prefix=UNKNOWN
program opts_invalid
dim T
const C = 16
sequence T, chunk C
option mode = a in (a, b)
option fast = yes in (true, false)
out y : f32[T, 8]
kernel k over (c in chunks) {
  if mode == d {
    r = 1.0
  }
  if mode {
    r = 2.0
  }
}
// CHECK: options_invalid.cake:10:15: error: the default 'yes' of option 'fast' is not one of its values
// VALUE: cakec: error: option 'mode' of program 'opts_invalid' has no value 'z'
// UNKNOWN: cakec: error: no program has an option 'speed'
