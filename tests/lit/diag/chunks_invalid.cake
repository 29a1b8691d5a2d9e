// `chunks` as an extent needs a sequence; unit_lower_inv needs a square tile.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program chunks_invalid
dim T
out early : f32[chunks, 4]
const C = 16
sequence T, chunk C
in x : f32[T, 32]
kernel k over (c in chunks) {
  a = load x[c, :]
  t = unit_lower_inv(a)
}
// CHECK: chunks_invalid.cake:5:17: error: `chunks` as an extent needs a `sequence` declared before it
