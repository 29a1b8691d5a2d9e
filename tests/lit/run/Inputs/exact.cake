// For `cakec run --exact`: a bf16 store, an f16 `as` and an f32 param, all
// rounded normally and none with --exact; the i32 conversion is rounded in
// both (truncation).
program exact
dim N
param a : f32 = 0.1
in  x : f32[N, 4]
out y : bf16[N, 4]
out z : f32[N, 4]
out m : i32[N, 4]
kernel main over (i in N) {
  store y[i, :] = (load x[i, :] * a) as bf16
  store z[i, :] = (load x[i, :] * a) as f16 as f32
  store m[i, :] = (load x[i, :] * 2.5) as i32
}
entry fwd = main
