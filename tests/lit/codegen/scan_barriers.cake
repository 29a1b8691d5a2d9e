// The barriers of a scan step, and the blocks per multiprocessor a kernel is
// planned for (`per_sm`).
// - The step's last barrier goes when the next step begins with the wait for
//   its copies and a barrier, and no copy is issued in between.
// - A matmul whose epilogue only stores to global memory (the output `o`)
//   writes no shared memory: the barrier after it goes when the next step is
//   the carry's matmul, which stages nothing and writes only the carry (in
//   place, which `o` does not read) and the carry's cast into its second
//   buffer (the one this step does not read). The cast gets that buffer when
//   every tile the scan prefetches has two: a tile refilled after the last
//   read of `o`'s operands needs the barrier anyway.
// So a step of `wide` (per_sm 1) and `fits` (small tiles: two blocks per
// multiprocessor with every second buffer) passes 2 barriers (the copies
// landed; `ub` written), `narrow` 3 (per_sm 2: its large tiles do not all get
// a second buffer, so neither does the cast, and the barrier after `o`
// stays), `staged` 4 (its carry matmul stages an operand first: the barrier
// after `o` stays, and one follows the staging), `reads` 3 (the value `o`
// stores reads the carry, which the next matmul writes in place), `twice` 3
// (a second matmul that stores to global memory comes between: one of the
// two keeps its barrier, the second's would not order the first's reads of
// the carry, so the first keeps it), `pick` 4 (the scalar `a`, computed
// between, reads the carry that the next matmul writes: the barrier after `o`
// stays, and the carry's matmul opens with one after the read), `reload` 4
// (the carry's update loads `o`, which the output's matmul stores: the
// barrier after it orders those global writes before the reads and stays;
// the scalar load of `idx` between them is not register work, so the
// carry's matmul opens with a barrier too).
// A tile refilled after the step's last matmul keeps the step's last barrier
// (the KDA chain at vblock v32: its `kd` has one buffer).
// RUN: env CAKE_TRACE_PLAN=1 %cakec %s --emit=mlir --arch=sm_90a -j1 2>&1 >/dev/null | awk '/^plan of kernel/ {k = $4} / as / {print k, $0}' | FileCheck %s --check-prefix=PLAN
// RUN: %cakec %s --emit=mlir --arch=sm_90a -j1 | python3 %S/Inputs/scan_barriers.py | FileCheck %s --check-prefix=STEP
// RUN: %cakec %s --emit=ptx --arch=sm_90a -j1 | FileCheck %s --check-prefix=PTX
// The KDA forward's chain: 2 barriers at one block per multiprocessor, 3 at two, 4 at v32
// RUN: %cakec %specs/kda/kda_fwd.cake --emit=mlir --arch=sm_90a --option gate=softplus --option qk_norm=true --option beta_logits=true --option vblock=v16x1 | python3 %S/Inputs/scan_barriers.py | FileCheck %s --check-prefix=KDA1
// RUN: %cakec %specs/kda/kda_fwd.cake --emit=mlir --arch=sm_90a --option gate=softplus --option qk_norm=true --option beta_logits=true --option vblock=v16 | python3 %S/Inputs/scan_barriers.py | FileCheck %s --check-prefix=KDA2
// RUN: %cakec %specs/kda/kda_fwd.cake --emit=mlir --arch=sm_90a --option gate=softplus --option qk_norm=true --option beta_logits=true --option vblock=v32 | python3 %S/Inputs/scan_barriers.py | FileCheck %s --check-prefix=KDA3
// KDA1: chain: scan step: 2 barriers
// KDA2: chain: scan step: 3 barriers
// KDA3: chain: scan step: 4 barriers
program scan_barriers
dim T, N, H
const K = 128, C = 64
sequence T, docs N, chunk C
in  w, qg, kd : bf16[T, H, K]
in  u    : bf16[T, H, 16]
in  pq   : bf16[T, H, C]
in  idx  : i32[H]
in  h0   : f32[N, H, K, 16] optional
out o, o2 : bf16[T, H, 16]
out ht   : f32[N, H, K, 16]
in  x, y, z : bf16[T, H, 64]
in  s0   : f32[N, H, 64, 16] optional
out st   : f32[N, H, 64, 16]
kernel wide over (n in docs, h in H) per_sm 1 {
  S = load h0[n, h, :, :] or 0
  for c in chunks(n) carry S {
    Sb = S as bf16
    ub = (load u[c, h, :] - load w[c, h, :] @ Sb) as bf16
    store o[c, h, :] = (load qg[c, h, :] @ Sb + load pq[c, h, :] @ ub) as bf16
    S = S * 0.5 + load kd[c, h, :].T @ ub
  }
  store ht[n, h, :, :] = S
}
kernel narrow over (n in docs, h in H) per_sm 2 {
  S = load h0[n, h, :, :] or 0
  for c in chunks(n) carry S {
    Sb = S as bf16
    ub = (load u[c, h, :] - load w[c, h, :] @ Sb) as bf16
    store o[c, h, :] = (load qg[c, h, :] @ Sb + load pq[c, h, :] @ ub) as bf16
    S = S * 0.5 + load kd[c, h, :].T @ ub
  }
  store ht[n, h, :, :] = S
}
kernel fits over (n in docs, h in H) {
  S = load s0[n, h, :, :] or 0
  for c in chunks(n) carry S {
    Sb = S as bf16
    ub = (load u[c, h, :] - load x[c, h, :] @ Sb) as bf16
    store o[c, h, :] = (load y[c, h, :] @ Sb + load pq[c, h, :] @ ub) as bf16
    S = S * 0.5 + load z[c, h, :].T @ ub
  }
  store st[n, h, :, :] = S
}
kernel staged over (n in docs, h in H) per_sm 1 {
  S = load h0[n, h, :, :] or 0
  for c in chunks(n) carry S {
    Sb = S as bf16
    ub = (load u[c, h, :] - load w[c, h, :] @ Sb) as bf16
    store o[c, h, :] = (load qg[c, h, :] @ Sb + load pq[c, h, :] @ ub) as bf16
    S = S * 0.5 + ((load kd[c, h, :] * 2.0) as bf16).T @ ub
  }
  store ht[n, h, :, :] = S
}
kernel reads over (n in docs, h in H) {
  S = load s0[n, h, :, :] or 0
  for c in chunks(n) carry S {
    Sb = S as bf16
    ub = (load u[c, h, :] - load x[c, h, :] @ Sb) as bf16
    store o[c, h, :] = (load y[c, h, :] @ Sb + load pq[c, h, :] @ ub + S) as bf16
    S = S * 0.5 + load z[c, h, :].T @ ub
  }
  store st[n, h, :, :] = S
}
kernel twice over (n in docs, h in H) {
  S = load s0[n, h, :, :] or 0
  for c in chunks(n) carry S {
    Sb = S as bf16
    ub = (load u[c, h, :] - load x[c, h, :] @ Sb) as bf16
    store o[c, h, :] = (load y[c, h, :] @ Sb + S[:, 0][:, None]) as bf16
    store o2[c, h, :] = (load pq[c, h, :] @ ub) as bf16
    S = S * 0.5 + load z[c, h, :].T @ ub
  }
  store st[n, h, :, :] = S
}
kernel pick over (n in docs, h in H) {
  S = load s0[n, h, :, :] or 0
  for c in chunks(n) carry S {
    Sb = S as bf16
    ub = (load u[c, h, :] - load x[c, h, :] @ Sb) as bf16
    store o[c, h, :] = (load y[c, h, :] @ Sb + load pq[c, h, :] @ ub) as bf16
    a = S[0, 0]
    S = S * a + load z[c, h, :].T @ ub
  }
  store st[n, h, :, :] = S
}
kernel reload over (n in docs, h in H) per_sm 1 {
  S = load s0[n, h, :, :] or 0
  for c in chunks(n) carry S {
    Sb = S as bf16
    ub = (load u[c, h, :] - load x[c, h, :] @ Sb) as bf16
    store o[c, h, :] = (load y[c, h, :] @ Sb + load pq[c, h, :] @ ub) as bf16
    hh = load idx[h]
    S = S * 0.5 + load z[c, h, :].T @ ub + load o[c, hh, :] as f32
  }
  store st[n, h, :, :] = S
}
entry e1 = wide
entry e2 = narrow
entry e3 = fits
entry e4 = staged
entry e5 = reads
entry e6 = twice
entry e7 = pick
entry e8 = reload
// the casts (Sb), by kernel
// PLAN-DAG: wide: {{.*}} as bf16 128x16 6144 B x2
// PLAN-DAG: narrow: {{.*}} as bf16 128x16 6144 B x1
// PLAN-DAG: fits: {{.*}} as bf16 64x16 3072 B x2
// PLAN-DAG: staged: {{.*}} as bf16 128x16 6144 B x2
// PLAN-DAG: reads: {{.*}} as bf16 64x16 3072 B x2
// STEP: wide: scan step: 2 barriers
// STEP-NEXT: narrow: scan step: 3 barriers
// STEP-NEXT: fits: scan step: 2 barriers
// STEP-NEXT: staged: scan step: 4 barriers
// STEP-NEXT: reads: scan step: 3 barriers
// STEP-NEXT: twice: scan step: 3 barriers
// STEP-NEXT: pick: scan step: 4 barriers
// STEP-NEXT: reload: scan step: 4 barriers
// what ptxas is asked for: one block per multiprocessor, or two; a scan's
// copies in the step unrolled, each thread's rows 8 apart (8 x 272 bytes)
// from one shared offset, their sources the first row's address plus a
// multiple of a row's bytes (computed outside the loop); a row past the
// document's end copies 0 bytes of its (unclamped) source address
// PTX-LABEL: .entry wide_
// PTX: .minnctapersm 1
// PTX: cp.async.wait_group 0
// PTX: cp.async.cg.shared.global [%r[[R:[0-9]+]]+2176], [%rd{{[0-9]+}}], 16
// PTX-NEXT: add.s64 %rd[[S:[0-9]+]], %rd[[S0:[0-9]+]], %rd{{[0-9]+}};
// PTX-NEXT: add.s32
// PTX-NEXT: setp.lt.s32
// PTX-NEXT: selp.b32 %r[[N:[0-9]+]], 16, 0,
// PTX-NEXT: cp.async.cg.shared.global [%r[[R]]+4352], [%rd[[S]]], 16, %r[[N]];
// PTX-NEXT: add.s64 %rd{{[0-9]+}}, %rd[[S0]], %rd{{[0-9]+}};
// PTX-LABEL: .entry narrow_
// PTX: .minnctapersm 2
