program scale
dim N
param a : f32 = 2.0
in  x : f32[N, 4]
in  k : i32[N]
out y : f32[N, 4]
out m : i32[N]
kernel main over (i in N) {
  store y[i, :] = load x[i, :] * a
  store m[i] = load k[i] + 1
}
entry fwd = main
