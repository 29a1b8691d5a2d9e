program reduce_chunks_invalid
dim T, N, H
const C = 16
sequence T, docs N, chunk C
in  x   : f32[T, H, 8]
out tot : f32[H, 8]
out y   : f32[T, H, 8]
temp part : f32[chunks, H, 8]
kernel a over (c in chunks, h in H) {
  store tot[h, :] = sum(load x[c, h, :], 0)
}
kernel b over (n in docs, h in H) {
  S = load x[0, h, :] * 0.0
  for c in chunks(n) carry S {
    S = S + sum(load x[c, h, :], 0)
  }
  store tot[h, :] = S
}
kernel d over (n in docs, h in H) {
  S = load x[0, h, :] * 0.0
  for c in chunks carry S {
    S = S + load part[c, h, :]
  }
}
kernel e over (c in chunks, h in H) {
  store y[c, 0, :] = load x[c, h, :]
}
entry fwd = a, b, d, e
