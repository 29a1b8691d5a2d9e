program gather
dim N, M
in  idx : i32[N]
in  x   : f32[M]
out y   : f32[N]
kernel main over (i in N) {
  store y[i] = load x[load idx[i]]
}
entry fwd = main
