program optional_invalid
dim T, N
const C = 16
sequence T, docs N, chunk C
in  h0 : f32[N, 8] optional
in  x  : f32[T, 8]
temp w : f32[T, 8] optional
kernel k over (n in docs) {
  a = load h0[n, :]
  b = load x[0, :] or 0
}
