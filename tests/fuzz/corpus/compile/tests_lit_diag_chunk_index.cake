program chunk_index
dim T, N, H
const C = 16, K = 8
sequence T, docs N, chunk C
in  x   : f32[T, H, K]
in  w   : f32[H, K]
in  sel : i32[chunks]
temp gx : f32[chunks, H, K]
out y   : f32[T, H, K]
kernel a over (c in chunks, h in H) {
  first = where(c == 0, 1.0, 0.0)
  store gx[c, h, :] = load x[c, h, :][0, :] + first
  store y[c, h, :] = load x[c, h, :] * load w[load sel[c] % H, :][None, :]
}
kernel b over (n in docs, h in H) {
  S = load w[h, :] * 0.0
  for t in chunks(n) carry S {
    S = S + load gx[t, h, :]
  }
}
entry fwd = a, b
