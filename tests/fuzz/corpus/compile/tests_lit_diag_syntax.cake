program syntax
dim T
const C = 16
sequence T, chunk C
in x : f32[T, 4]
out y : f32[T, 4]
kernel k over (c in chunks) {
  a = load x[c, :] * 2
  store y[c, :] = a
  b = (a + 1)
}
