program math
dim T
const C = 16
sequence T, chunk C
in  a : bf16[T, 32]
in  b : f16[T, 32]
in  s : f32[T]
out o : f32[T, 32]
kernel k over (c in chunks) {
  x = load a[c, :]
  y = load b[c, :]
  v = load s[c]
  store o[c, :] = tanh(x) + log1p(y) + expm1(v)[:, None] + logsigmoid(x) + silu(y) + silu(0.5)
}
entry fwd = k
