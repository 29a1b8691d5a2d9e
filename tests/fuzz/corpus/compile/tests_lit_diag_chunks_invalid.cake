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
