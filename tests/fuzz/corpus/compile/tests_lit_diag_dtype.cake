program dtype
dim T, H
const C = 16
sequence T, chunk C
in  q : bf16[T, 16]
in  g : f32[T, 16]
out o : bf16[T, 16]
kernel k over (c in chunks, h in 1) {
  a = load g[c, :]
  p = (a as bf16) @ (a as bf16).T
  store o[c, :] = (p * (h as f32) + 0.5) as bf16
}
