// A tensor the kernel stores is never copied ahead: a scan's prefetch of
// the next chunk (issued a step early) or a copy at the kernel's start
// would read it before the kernel's own stores. Here `o` is stored and then
// read back in the same step: its load is copied where it stands, after
// the store and the barrier that follows it; `x`, which the kernel does not
// store, is prefetched with two buffers.
// RUN: env CAKE_TRACE_PLAN=1 %cakec %s --emit=mlir --arch=sm_90a -j1 2>&1 >/dev/null | FileCheck %s
program prefetch_stored
dim T, N, H
const C = 64
sequence T, docs N, chunk C
in  x    : bf16[T, H, 64]
in  s0   : f32[N, H, 64, 64] optional
out o    : bf16[T, H, 64]
out st   : f32[N, H, 64, 64]
kernel k over (n in docs, h in H) {
  S = load s0[n, h, :, :] or 0
  for c in chunks(n) carry S {
    store o[c, h, :] = (load x[c, h, :] @ (S as bf16)) as bf16
    S = S * 0.5 + (load o[c, h, :]).T @ load x[c, h, :]
  }
  store st[n, h, :, :] = S
}
entry e1 = k
// o's load: a tile of its own, written where it stands (live from its place,
// not from the scan's start as a prefetched tile is)
// CHECK: plan of kernel k
// CHECK-DAG: load bf16 64x64 9216 B x2 at {{ *[0-9]+}} live 3..18 (line 19)
// CHECK-DAG: load bf16 64x64 9216 B x1 at {{ *[0-9]+}} live 13..16 (line 20)
