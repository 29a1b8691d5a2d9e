// A value a matmul's epilogue writes (here ub, from u - w @ Sb) is written
// while the matmul runs: warps that finish their tiles store them while
// other warps still read the operands, among them the staged copy of Sb
// (the carry as bf16, staged for this matmul only). So the value's live
// range starts at the matmul, and the two never share shared memory. The
// plan trace (CAKE_TRACE_PLAN) prints the staged copy as a "(stage)" line
// live at the matmul's position; the value's range must start there.
// (With the range starting at the value's own position, the two overlapped
// in this kernel, and the GPU's results changed from run to run.)
// RUN: env CAKE_TRACE_PLAN=1 %cakec %s --emit=ptx --arch=sm_90a -j1 --cache-dir= 2>&1 >/dev/null | FileCheck %s
program epilogue_live
dim T, N, H
const K = 128, V = 128, C = 64, BV = 32
sequence T, docs N, chunk C
in  w, kd : bf16[T, H, K]
in  u     : bf16[T, H, V]
in  gx    : f32[chunks, H, K]
in  h0    : f32[N, H, K, V] optional
out hs    : bf16[chunks, H, K, V]
out vn    : bf16[T, H, V]
out ht    : f32[N, H, K, V]
kernel chain over (n in docs, h in H, j in V / BV) {
  S = load h0[n, h, :, j] or 0
  for c in chunks(n) carry S {
    Sb = S as bf16
    store hs[c, h, :, j] = Sb
    ub = (load u[c, h, j] - load w[c, h, :] @ Sb) as bf16
    store vn[c, h, j] = ub
    S = load gx[c, h, :][:, None] * S + load kd[c, h, :].T @ ub
  }
  store ht[n, h, :, j] = S
}
entry fwd = chain
// CHECK: plan of kernel chain
// CHECK: (stage) {{.*}} B x1 at [[#OFF:]] live [[#P:]]..{{[0-9]+}}  (line 27)
// CHECK: as {{.*}} at [[#]] live [[#P]]..{{[0-9]+}}  (line 27)
