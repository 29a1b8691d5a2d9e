// The valid counterpart of decay_invalid.cake: decay of a column of
// cumulative log-decays, [n] or [n, 1], in bf16, f16 or f32, is f32[n, n].
// RUN: %cakec %s --emit=cir | FileCheck %s
program decay
dim T, H
const C = 16
sequence T, chunk C
in  g : f32[T, H]
in  gb : bf16[T, H]
out o : f32[T, H, C]
kernel k over (c in chunks, h in H) {
  G = cumsum(load g[c, h], 0)
  store o[c, h, :] = decay(G) + decay(G[:, None]) + decay(load gb[c, h])
}
entry fwd = k
// CHECK: [[G:%[0-9]+]] = cumsum %{{[0-9]+}} axis 0 : f32[16]
// CHECK: = decay [[G]] : f32[16, 16]
// CHECK: [[E:%[0-9]+]] = expand [[G]] axis 1 : f32[16, 1]
// CHECK: = decay [[E]] : f32[16, 16]
// CHECK: [[B:%[0-9]+]] = load gb[chunk %0, %1] : bf16[16]
// CHECK: = decay [[B]] : f32[16, 16]
