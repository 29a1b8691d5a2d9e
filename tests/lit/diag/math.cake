// The valid counterpart of math_invalid.cake: tanh, log1p, expm1, logsigmoid
// and silu take a float tile of any rank (bf16, f16, f32) or a float scalar,
// and give f32.
// RUN: %cakec %s --emit=cir | FileCheck %s
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
// CHECK: [[X:%[0-9]+]] = load a[chunk %0, :32] : bf16[16, 32]
// CHECK: [[Y:%[0-9]+]] = load b[chunk %0, :32] : f16[16, 32]
// CHECK: [[V:%[0-9]+]] = load s[chunk %0] : f32[16]
// CHECK: = tanh [[X]] : f32[16, 32]
// CHECK: = log1p [[Y]] : f32[16, 32]
// CHECK: = expm1 [[V]] : f32[16]
// CHECK: = logsigmoid [[X]] : f32[16, 32]
// CHECK: = silu [[Y]] : f32[16, 32]
// CHECK: [[H:%[0-9]+]] = const 0.5 : f32
// CHECK: = silu [[H]] : f32
