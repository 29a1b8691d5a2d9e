// A matmul summed into a later one's accumulators runs with that one: its
// operands are read there. Here `qg @ Sb` is summed into the output's
// matmul, which comes after the state's update: so Sb (the carry's cast) is
// not written by the update's epilogue (it would be the next step's value
// when the output reads it); it keeps a buffer of its own, live until the
// output's matmul.
// RUN: env CAKE_TRACE_PLAN=1 %cakec %s --emit=mlir --arch=sm_90a -j1 2>&1 >/dev/null | FileCheck %s
program shadow_summed
dim T, N, H
const K = 64, V = 16, C = 64
sequence T, docs N, chunk C
in  w    : bf16[T, H, K]
in  qg   : bf16[T, H, K]
in  pq   : bf16[T, H, C]
in  kd   : bf16[T, H, K]
in  u    : bf16[T, H, V]
out o    : bf16[T, H, V]
in  h0   : f32[N, H, K, V] optional
kernel chain over (n in docs, h in H) threads 128 {
  S = load h0[n, h, :, :] or 0
  for c in chunks(n) carry S {
    Sb = S as bf16
    ub = (load u[c, h, :] - load w[c, h, :] @ Sb) as bf16
    inter = load qg[c, h, :] @ Sb
    S = S * 0.5 + load kd[c, h, :].T @ ub
    store o[c, h, :] = (inter + load pq[c, h, :] @ ub) as bf16
  }
}
entry fwd = chain
// CHECK: plan of kernel chain
// CHECK: carry f32 64x16 5120 B x1 at {{ *[0-9]+}} live 3..26
// CHECK: as bf16 64x16 3072 B x1 at {{ *[0-9]+}} live 6..21
