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
