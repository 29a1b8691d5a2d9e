program scan_invalid
dim T, N, H
const C = 16
sequence T, docs N, chunk C
in  x  : f32[T, H, 8]
in  h0 : f32[N, H, 8] optional
out y  : f32[T, H, 8]
kernel a over (n in docs, h in H) {
  S = load h0[n, h, :] or 0
  k = 2.0
  for c in chunks(n) carry S, U {
    S = S + sum(load x[c, h, :], 0)
  }
}
kernel b over (n in docs, h in H) {
  S = load h0[n, h, :] or 0
  k = 2.0
  for c in chunks(n) carry S {
    k = 3.0
    S = sum(load x[c, h, :], 1)
  }
}
kernel d over (c in chunks, h in H) {
  S = 0.0
  for t in chunks(c) carry S {
    S = S + 1.0
  }
}
kernel e over (n in docs, h in H) {
  S = load h0[n, h, :] or 0
  for c in chunks(n) carry S {
    for c2 in chunks(n) carry S {
      S = S + 1.0
    }
    v = 1.0
  }
  store y[0, h, :] = v
}
