program rounds_no_ranks
dim T, N
const C = 16, W = 8
sequence T, docs N, chunk C
in   x : f32[T, W]
out  y : f32[T, W]
kernel k over (n in docs) {
  a = load x[0, :] * 0.0
  for r, f in ends() carry a {
    a = a + 1.0
  }
  store y[0, :] = a
}
entry fwd = rounds reverse(k)
