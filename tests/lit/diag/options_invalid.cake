// Misused options and static conditions.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
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
// CHECK: options_invalid.cake:8:15: error: the default 'yes' of option 'fast' is not one of its values
