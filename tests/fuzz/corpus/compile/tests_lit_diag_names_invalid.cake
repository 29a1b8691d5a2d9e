program names_invalid
dim T
const C = 16
sequence T, chunk C
in x : f32[T, 4]
out y : f32[T, 4]
kernel k over (c in chunks) {
  a = load x[c, :] + scale
  b = x + 1
  c = 3.0
  z = frobnicate(a)
  store y[c, :] = a
}
entry fwd = k, nothere
