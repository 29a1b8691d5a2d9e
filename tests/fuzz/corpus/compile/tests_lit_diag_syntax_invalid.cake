program syntax_invalid
dim T
const C = 16
sequence T, chunk C
in x : f32[T, 4]
out y : f32[T, 4]
kernel k over (c in chunks) {
  a = load x[c, :] *
  store y[c, :] = a
  b = (a + 1
}
