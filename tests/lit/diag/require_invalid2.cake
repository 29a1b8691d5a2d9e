// A requirement is one expression, and comparisons do not chain (as
// everywhere in Cake): write 0 < H && H < HV.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program require_invalid2
dim T, H, HV
require 0 < H < HV
// CHECK: require_invalid2.cake:6:15: error: syntax error, unexpected '<'
