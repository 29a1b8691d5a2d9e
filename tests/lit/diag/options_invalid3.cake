// An option named `save` (a keyword elsewhere) is a compile-time choice, not
// a value. The valid counterpart is reduce_chunks.cake.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program options_invalid3
option save = ckpt in (ckpt, states)
dim T
const C = 16
sequence T, chunk C
in  x : f32[T, 8]
out y : f32[T, 8]
if save == states {
  save z : f32[T, 8]
}
kernel k over (c in chunks) {
  store y[c, :] = load x[c, :] * save
}
entry fwd = k
// CHECK: options_invalid3.cake:15:34: error: 'save' is a{{n?}} option and has no value here
