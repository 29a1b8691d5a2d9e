program limits
dim T, N
sequence T, docs N, chunk 16
in v : f32[1024]
in u : f32[1024]
out y : f32[T, 16]
out z : f32[T, 16]
kernel big over (c in chunks) {
  b = load v[:][:, None] * load u[:][None, :]
  store z[c, :] = load y[c, :] + b[0, 0]
}
kernel scan over (n in docs) {
  a0 = 0.0  a1 = 0.0  a2 = 0.0  a3 = 0.0  a4 = 0.0  a5 = 0.0  a6 = 0.0  a7 = 0.0
  a8 = 0.0  a9 = 0.0  a10 = 0.0  a11 = 0.0  a12 = 0.0  a13 = 0.0  a14 = 0.0  a15 = 0.0
  for c in chunks(n) carry a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15 {
    a0 = a0 + 1.0  a1 = a1 + 1.0  a2 = a2 + 1.0  a3 = a3 + 1.0  a4 = a4 + 1.0  a5 = a5 + 1.0  a6 = a6 + 1.0
    a7 = a7 + 1.0  a8 = a8 + 1.0  a9 = a9 + 1.0  a10 = a10 + 1.0  a11 = a11 + 1.0  a12 = a12 + 1.0
    a13 = a13 + 1.0  a14 = a14 + 1.0  a15 = a15 + 1.0
  }
}
entry fwd = big, scan
