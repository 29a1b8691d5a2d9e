program chunk_index_invalid
dim T, N, H
const C = 16, K = 8
sequence T, docs N, chunk C
in  x  : f32[T, H, K]
in  w  : f32[H, K]
temp gx : f32[chunks, H, K]
out y  : f32[T, H, K]
kernel a over (c in chunks, h in H) {
  p = load x[c - 1, h, :]
  prev = c - 1
  store gx[prev, h, :] = load x[c, h, :][0, :]
  q = load w[c % H, :]
}
kernel b over (n in docs, h in H) {
  S = load w[h, :] * 0.0
  for t in chunks(n) carry S {
    S = S + load gx[t + 1, h, :]
    store y[t * 1, h, :] = load x[t, h, :] * 2.0
  }
}
entry fwd = a, b
