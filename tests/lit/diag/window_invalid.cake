// Bad load/store windows.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program window_invalid
dim T, H, HV
const C = 16, V = 64, BV = 32
sequence T, chunk C
in  x : f32[T, H, V]
in  z : f32[T, HV, V]
out y : f32[T, H, V]
kernel k over (c in chunks, h in H, j in V / BV) {
  a = load x[h, c, :]
  b = load x[c, h]
  d = load z[c, h, :]
  e = load x[c, :, :]
  store x[c, h, :] = a
  f = load x[c, h, None]
}
kernel m over (c in chunks, j in 48 / 16) {
  a = load x[c, 0, j]
  b = load x[0, c, :]
}
// CHECK: window_invalid.cake:11:14: error: index 'h' runs over H, but axis 0 of 'x' has extent T
// CHECK-NOT: window_invalid.cake:11:17:
// CHECK: window_invalid.cake:12:7: error: 'x' has 3 axes, but the window gives 2 indices
// CHECK: window_invalid.cake:13:17: error: index 'h' runs over H, but axis 1 of 'z' has extent HV
// CHECK: window_invalid.cake:14:17: error: ':' takes all of axis 1 of 'x', but its extent H is not a compile-time constant
// CHECK: window_invalid.cake:15:9: error: cannot store to 'x', an input; declare it out, temp or save
// CHECK: window_invalid.cake:16:20: error: None is not a window index; expand the loaded tile instead
// CHECK: window_invalid.cake:19:20: error: block index 'j' covers 48 elements in blocks of 16, but axis 2 of 'x' has extent 64
// CHECK: window_invalid.cake:20:17: error: chunk index used on axis 1 of 'x', whose extent H is not the token axis T
