program scan
dim T, N, H
const C = 16
sequence T, docs N, chunk C
in  x  : f32[T, H, 8]
in  h0 : f32[N, H, 8] optional
out y  : f32[T, H, 8]
out ht : f32[N, H, 8]
kernel a over (n in docs, h in H) {
  S = load h0[n, h, :] or 0
  U = 0.0
  for c in chunks(n) carry S, U {
    S = S + sum(load x[c, h, :], 0)
    U = U + 1.0
  }
  store ht[n, h, :] = S * U
}
kernel b over (n in docs, h in H) {
  R = load h0[n, h, :] or 0
  for c in reverse chunks(n) carry R {
    store y[c, h, :] = load x[c, h, :] + R[None, :]
    R = R * 0.5
  }
}
entry fwd = a, b
