program options_invalid3
option save = ckpt in (ckpt, states)
dim T
const C = 16
sequence T, chunk C
in  x : f32[T, 8]
out y : f32[T, 8]
if save == states {
  save z : f32[T, 8]
}
kernel k over (c in chunks) {
  store y[c, :] = load x[c, :] * save
}
entry fwd = k
