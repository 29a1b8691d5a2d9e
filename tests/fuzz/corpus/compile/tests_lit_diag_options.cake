program opts
dim T
const C = 16
sequence T, chunk C
option mode = a in (a, b, c)
option fast = true in (true, false)
if mode == c {
  in x : f32[T, 8]
} else {
  in x : bf16[T, 8]
}
out y : f32[T, 8]
out per : f32[chunks, 8]
kernel k over (c in chunks) {
  v = load x[c, :]
  if fast && mode != b {
    r = v * 2.0
  } else if mode == b {
    r = v * 3.0
  } else {
    r = v * 4.0
  }
  store y[c, :] = r
  store per[c, :] = sum(r, 0)
}
