// decay_dot's gradients and a scan over every chunk of the sequence lower to
// PTX on every target: blocked (tensor cores, bf16x3, off the diagonal blocks) where
// the tile is in 16-row and 16-column blocks, element by element otherwise.
// RUN: %cakec %s --emit=ptx --arch=sm_90a | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: %cakec %s --emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,SM100
program decay_grad_ptx
dim T, N, H
const C = 64, K = 32
sequence T, docs N, chunk C
in  a, b, g : f32[T, H, K]
in  e : f32[T, H, 24]
out da, db : f32[T, H, K]
out de : f32[T, H, 24]
out tot : f32[H, K]
temp part : f32[chunks, H, K]
kernel grads over (c in chunks, h in H) {
  x = load a[c, h, :]
  y = load b[c, h, :]
  G = cumsum(-abs(load g[c, h, :]), 0)
  m = tril((x as bf16) @ (y as bf16).T)
  ga = decay_mm(m, y, G)
  store da[c, h, :] = ga
  store db[c, h, :] = decay_mm_t(m, x, G)
  store part[c, h, :] = sum(ga, 0)
}
kernel odd over (c in chunks, h in H) {
  x = load e[c, h, :]
  G = cumsum(-abs(x), 0)
  m = tril(decay(G[:, 0]))
  store de[c, h, :] = decay_mm(m, x, G) + decay_mm_t(m, x, G)
}
kernel total over (h in H) {
  S = load a[0, h, :] * 0.0
  for c in chunks carry S {
    S = S + load part[c, h, :]
  }
  store tot[h, :] = S
}
entry bwd = grads, odd, total
// CHECK-LABEL: // ---- kernel grads_{{[0-9a-f]+}}
// SM90: .target sm_90a
// SM100: .target sm_100f
// CHECK: ex2.approx.ftz.f32
// bf16x3 off the diagonal blocks: x' hi and lo (the only transposed loads),
// then three mma.sync per n8 tile and step, chained through the accumulators:
// m lo * x' hi, m hi * x' lo, m hi * x' hi
// CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {[[BH:%r[0-9]+]],
// CHECK-NEXT: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {[[BL:%r[0-9]+]],
// CHECK-NEXT: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NEXT: {[[D1:%r[0-9]+]], {{.*}}},
// CHECK-NEXT: {[[AL:%r[0-9]+]], {{.*}}},
// CHECK-NEXT: {[[BH]], {{.*}}},
// CHECK-NEXT: {{.*}};
// CHECK-NEXT: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NEXT: {[[D2:%r[0-9]+]], {{.*}}},
// CHECK-NEXT: {[[AH:%r[0-9]+]], {{.*}}},
// CHECK-NEXT: {[[BL]], {{.*}}},
// CHECK-NEXT: {[[D1]], {{.*}}};
// CHECK-NEXT: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NEXT: {{.*}},
// CHECK-NEXT: {[[AH]], {{.*}}},
// CHECK-NEXT: {[[BH]], {{.*}}},
// CHECK-NEXT: {[[D2]], {{.*}}};
// the element path (K = 24): no tensor cores
// CHECK-LABEL: // ---- kernel odd_{{[0-9a-f]+}}
// CHECK-NOT: mma.sync
// CHECK: ex2.approx.ftz.f32
// CHECK-NOT: mma.sync
// CHECK-LABEL: // ---- kernel total_{{[0-9a-f]+}}
// CHECK: .maxntid 128, 1, 1
// CHECK: bra
