// A matmul's epilogue computes every value of its pass before it writes the
// first: here the carry's update S = gx * S + kd^T @ u reads S's old value
// (and gx) for all eight of a thread's fragment pairs, then writes S. Written
// pair by pair, each load of shared memory waited behind the last pair's
// store (lower_matmul in lowering/lower_dot.c).
// RUN: %cakec %s --emit=ptx --arch=sm_90a -j1 | FileCheck %s
program epilogue_loads_first
dim T, N, H
const K = 64, V = 32, C = 64
sequence T, docs N, chunk C
in  kd : bf16[T, H, K]
in  u  : bf16[T, H, V]
in  gx : f32[T, H, K]
in  h0 : f32[N, H, K, V] optional
out ht : f32[N, H, K, V]
kernel chain over (n in docs, h in H) {
  S = load h0[n, h, :, :] or 0
  for c in chunks(n) carry S {
    S = load gx[c, h, :][0, :][:, None] * S + load kd[c, h, :].T @ load u[c, h, :]
  }
  store ht[n, h, :, :] = S
}
entry fwd = chain
// CHECK-LABEL: .entry chain_
// CHECK: mma.sync
// CHECK-NOT: st.shared
// CHECK: ld.shared.v2.b32
// CHECK-NOT: st.shared
// CHECK: ld.shared.v2.b32
// CHECK-NOT: st.shared
// CHECK: ld.shared.v2.b32
// CHECK-NOT: st.shared
// CHECK: ld.shared.v2.b32
// CHECK-NOT: st.shared
// CHECK: ld.shared.v2.b32
// CHECK-NOT: st.shared
// CHECK: ld.shared.v2.b32
// CHECK-NOT: st.shared
// CHECK: ld.shared.v2.b32
// CHECK-NOT: st.shared
// CHECK: ld.shared.v2.b32
// CHECK-NOT: ld.shared
// CHECK: st.shared.v2.b32
// CHECK: bar.sync
