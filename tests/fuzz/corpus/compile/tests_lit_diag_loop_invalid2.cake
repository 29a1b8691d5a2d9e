program loop_invalid2
dim T, H
const C = 16
sequence T, chunk C
in  x : f32[T, H, 8]
out y : f32[T, H, 8]
kernel a over (c in chunks, h in H) {
  range = load x[c, h, :]
  for i in rng(3) carry range {
    range = range + 1.0
  }
  store y[c, h, :] = range
}
entry fwd = a
