program opt
dim T, N
const C = 16
sequence T, docs N, chunk C
in  h0 : f32[N, 8] optional
out ht : f32[N, 8] optional
kernel k over (n in docs) {
  a = load h0[n, :] or 1.5
  store ht[n, :] = a
}
