program halo_b
dim T, N, R, F
const C = 16, W = 8
sequence T, docs N, chunk C
ranks R, fragments F
in   x : bf16[T, W]
out  y : bf16[T, W]
temp h : bf16[F, 3, W]
exchange hx = halo(x, 1, 2) -> h
kernel k over (c in chunks) {
  store y[c, :] = load x[shift(c, -1), :]
}
entry fwd = hx, k
