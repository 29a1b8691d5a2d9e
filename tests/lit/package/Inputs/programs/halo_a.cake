// A context-parallel kernel whose window reads the halo of x; halo_b.cake
// has the same kernel with the halo's 3 rows split the other way.
program halo_a
dim T, N, R, F
const C = 16, W = 8
sequence T, docs N, chunk C
ranks R, fragments F
in   x : bf16[T, W]
out  y : bf16[T, W]
temp h : bf16[F, 3, W]
exchange hx = halo(x, 2, 1) -> h
kernel k over (c in chunks) {
  store y[c, :] = load x[shift(c, -1), :]
}
entry fwd = hx, k
