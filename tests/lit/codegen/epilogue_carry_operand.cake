// A matmul whose epilogue would write a scan's carry in place must not also
// read that carry as an operand: its warps would overwrite rows that others
// still read. Here the bf16 carry S is the matmul's left operand, so the
// matmul keeps its own f32 tile and the new S is written after a barrier.
// RUN: env CAKE_TRACE_PLAN=1 %cakec %s --emit=ptx --arch=sm_90a -o /dev/null 2>&1 | FileCheck %s
// CHECK: plan of kernel chain
// CHECK-DAG: carry bf16 64x64 9216 B x1
// CHECK-DAG: matmul f32 64x64 17408 B x1
program ip

dim   T, N, H
const K = 64, C = 64
sequence T, docs N, chunk C

in  w    : bf16[T, H, K]
in  h0   : bf16[N, H, K, K]
out ht   : bf16[N, H, K, K]

kernel chain over (n in docs, h in H) threads 256 {
  S = load h0[n, h, :, :]
  for c in chunks(n) carry S {
    S = (S + S @ load w[c, h, :]) as bf16
  }
  store ht[n, h, :, :] = S
}

entry fwd = chain
