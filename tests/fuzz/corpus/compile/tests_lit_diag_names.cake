program names
dim T
const C = 16
sequence T, chunk C
param scale : f32 = 0.5
in x : f32[T, 4]
out y : f32[T, 4]
kernel k over (c in chunks) {
  a = load x[c, :] + scale
  z = sigmoid(a)
  store y[c, :] = z
}
entry fwd = k
