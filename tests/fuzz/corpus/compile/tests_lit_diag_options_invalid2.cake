program opts_invalid2
dim T
const C = 16
sequence T, chunk C
option mode = a in (a, b)
out y : f32[T, 8]
out per : f32[chunks, 8]
kernel k over (c in chunks) {
  if mode == d {
    r = 1.0
  }
  if mode {
    r = 2.0
  }
  store per[c, :] = load y[c, :]
}
