program tile_index_invalid
dim T, N, H
const C = 16, K = 8
sequence T, docs N, chunk C
in  x   : f32[T, H, K]
in  A   : f32[4]
in  sel : i32[4]
out y   : f32[T, H, K]
kernel k over (c in chunks, h in H) {
  G = load A[:]
  a = G[h]
  i = 2
  b = G[i]
  d = G[h + 1]
  e = G[load sel[0]]
  f = G[H]
  g = G[nope]
  store y[c, h, :] = load x[c, h, :]
}
kernel s over (n in docs, h in H) {
  G = load A[:]
  S = 0.0
  for t in chunks(n) carry S {
    S = S + G[t]
  }
}
entry fwd = k
