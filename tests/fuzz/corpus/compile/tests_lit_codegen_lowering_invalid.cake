program lowering_invalid
dim T
const C = 64
sequence T, chunk C
in  x : bf16[T, 24]
in  big : f32[T, 256]
out o : f32[T, 64]
out p : f32[T, 256]
kernel mm over (c in chunks) {
  a = load x[c, :]
  store o[c, :] = a @ a.T
}
kernel huge over (c in chunks) {
  b = load big[c, :]
  e1 = sigmoid(b)
  e2 = sigmoid(e1)
  e3 = sigmoid(e2)
  store p[c, :] = b * e1 + e1 * e2 + e2 * e3 + e3 * b + e1 * e3
}
