program tile_index
dim T, H
const C = 16, K = 8, LAST = K - 1
sequence T, chunk C
in  x : f32[T, H, K]
out y : f32[T, H, K]
kernel k over (c in chunks, h in H) {
  t = load x[c, h, :]
  store y[c, h, :] = t * t[0, LAST] + t[:, -1][:, None] + t[C - 1, :][None, :]
}
entry fwd = k
