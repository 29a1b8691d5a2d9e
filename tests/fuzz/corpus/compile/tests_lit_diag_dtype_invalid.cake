program dtype_invalid
dim T, H
const C = 16
sequence T, chunk C
in  q : bf16[T, 16]
in  g : f32[T, 16]
out o : bf16[T, 16]
kernel k over (c in chunks, h in H) {
  a = load g[c, :]
  p = a @ a.T
  store o[c, :] = a
  i = h + 0.5
  m = valid(c) + 1
}
