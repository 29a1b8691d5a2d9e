program exchange_order
dim T, N, R, F
const C = 16, W = 8
sequence T, docs N, chunk C
ranks R, fragments F
in   x : f32[T, W]
out  y : f32[T, W]
temp a, b : f32[W]
temp ga : f32[R, W]
kernel k over (i in 1) {
  store a[:] = load x[0, :]
}
kernel use over (c in chunks) {
  v = load ga[0, :]
  store y[c, :] = load x[c, :] + v[None, :]
}
exchange g1 = all_gather(a) -> ga
exchange g2 = send_next(b) -> a
entry e1 = g1, k, use
entry e2 = k, g1
entry e3 = k, g2, use
