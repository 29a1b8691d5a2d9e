program send_invalid
dim T, N, R, F
const C = 16, W = 8
sequence T, docs N, chunk C
ranks R, fragments F
in   x : f32[T, W]
out  y : f32[T, W]
temp a : f32[W]
temp b : f32[R, W]
temp c, d : f32[T, W]
exchange e1 = send_next(a) -> b
exchange e2 = send_prev(c) -> d
exchange e3 = send_next(a, 1) -> a
kernel k over (n in docs) {
  store y[0, :] = load x[0, :]
}
entry fwd = k
