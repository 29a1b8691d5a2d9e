program chunks_invalid2
dim T
const C = 16
sequence T, chunk C
in x : f32[T, 32]
out per : f32[chunks, 32]
kernel k over (c in chunks) {
  a = load x[c, :]
  t = unit_lower_inv(a)
  store per[c, :] = load x[c, :]
}
