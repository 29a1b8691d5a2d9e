// decay_dot's gradients (element by element) and a scan over every chunk of
// the sequence lower to PTX on every target.
// RUN: %cakec %s --emit=ptx --arch=sm_90a | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: %cakec %s --emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=CHECK,SM100
program decay_grad_ptx
dim T, N, H
const C = 64, K = 32
sequence T, docs N, chunk C
in  a, b, g : f32[T, H, K]
out da, db : f32[T, H, K]
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
kernel total over (h in H) {
  S = load a[0, h, :] * 0.0
  for c in chunks carry S {
    S = S + load part[c, h, :]
  }
  store tot[h, :] = S
}
entry bwd = grads, total
// CHECK-LABEL: // ---- kernel decay_grad_ptx_grads_{{[0-9a-f]+}}
// SM90: .target sm_90a
// SM100: .target sm_100a
// CHECK: ex2.approx.ftz.f32
// CHECK-LABEL: // ---- kernel decay_grad_ptx_total_{{[0-9a-f]+}}
// CHECK: .maxntid 128, 1, 1
// CHECK: bra
