// A forward program; train.cake holds the same `main` kernel.
program fwd
dim   T, H
const C = 64, D = 64
sequence T, chunk C
in    x, y : bf16[T, H, D]
in    w    : f32[H, D]
out   z    : f32[T, H, D]
kernel main over (c in chunks, h in H) {
  a = load x[c, h, :]
  s = cumsum(sigmoid(a * load w[h, :][None, :]), 0)
  store z[c, h, :] = (tril(a @ (load y[c, h, :]).T) as bf16) @ (s as bf16) + s
}
entry fwd = main
