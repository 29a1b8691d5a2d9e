program limits_invalid
dim T, N
sequence T, docs N, chunk 16
in w : f32[2048, 1024]
in v : f32[2048]
in u : f32[1024]
out y : f32[T, 16]
kernel big over (c in chunks) {
  a = load w[:, :]
  b = load v[:][:, None] * load u[:][None, :]
}
kernel scan over (n in docs) {
  a0 = 0.0  a1 = 0.0  a2 = 0.0  a3 = 0.0  a4 = 0.0  a5 = 0.0  a6 = 0.0  a7 = 0.0  a8 = 0.0
  a9 = 0.0  a10 = 0.0  a11 = 0.0  a12 = 0.0  a13 = 0.0  a14 = 0.0  a15 = 0.0  a16 = 0.0
  for c in chunks(n) carry a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16 {
    a0 = a0 + 1.0
  }
}
entry fwd = big, scan
