program window
dim T, H
const C = 16, V = 64, BV = 32
sequence T, chunk C
in  x : f32[T, H, V]
out y : f32[T, H, V]
kernel k over (c in chunks, h in H, j in V / BV) {
  a = load x[c, h, j]
  r = load x[c, h, 5]
  store y[c, h, j] = a + r[:, None]
}
