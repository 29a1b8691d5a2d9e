// decay_dot's diagonal blocks: a running product down each column, one task
// per (block, column pair, channel slice), 17 row steps, partial sums met in
// a butterfly across the slice lanes. K = 128 with 256 threads: 32 slices of
// 4 channels (offsets 1 .. 16); K = 32 with 64 threads: 8 slices.
// RUN: %cakec %s --emit=mlir --arch=sm_90a | FileCheck %s
// RUN: %cakec %s --emit=ptx --arch=sm_90a | FileCheck %s --check-prefix=PTX
program decay_diag
dim T, N, H
const C = 64
sequence T, docs N, chunk C
in  a : f32[T, H, 128]
in  s : f32[T, H, 32]
out d : f32[T, H, C]
out e : f32[T, H, C]
kernel wide over (c in chunks, h in H) threads 256 {
  x = load a[c, h, :]
  G = cumsum(-abs(x), 0)
  store d[c, h, :] = decay_dot(x, x, G)
}
kernel narrow over (c in chunks, h in H) threads 64 {
  x = load s[c, h, :]
  G = cumsum(-abs(x), 0)
  store e[c, h, :] = decay_dot(x, x, G)
}
entry fwd = wide, narrow
// CHECK-LABEL: gpu.func @decay_diag_wide_
// the 17 row steps carry F and g of the slice's 4 channels
// CHECK: scf.for %{{.*}} = %c1_i32{{.*}} to %c17_i32{{.*}} step %c1_i32{{.*}} iter_args(%{{[^)]*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c8_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c16_i32
// CHECK: scf.yield
// CHECK-LABEL: gpu.func @decay_diag_narrow_
// CHECK: scf.for %{{.*}} = %c1_i32{{.*}} to %c17_i32{{.*}} step %c1_i32{{.*}} iter_args(%{{[^)]*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32
// CHECK-NOT: gpu.shuffle  xor %{{.*}}, %c8_i32
// CHECK: scf.yield
// PTX: shfl.sync.bfly.b32
