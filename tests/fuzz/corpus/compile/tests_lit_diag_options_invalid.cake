program opts_invalid
dim T
const C = 16
sequence T, chunk C
option mode = a in (a, b)
option fast = yes in (true, false)
out y : f32[T, 8]
kernel k over (c in chunks) {
  if mode == d {
    r = 1.0
  }
  if mode {
    r = 2.0
  }
}
