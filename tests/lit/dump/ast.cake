// The AST dump: every declaration and statement with its position.
// RUN: %cakec %s --emit=ast | FileCheck %s
program dumped
dim T, N
const C = 32, K = 2 * 16
sequence T, docs N, chunk C
param scale : f32 = rsqrt(K)
in  x : bf16[T, K]
in  h0 : f32[N, K] optional
out o : f32[T, K]
kernel k over (n in docs) threads 64 per_sm 1 {
  S = load h0[n, :] or 0
  for c in reverse chunks(n) carry S {
    a = load x[c, :]
    store o[c, :] = -a * scale + S[None, :] as f32
    S = S * 0.5
  }
}
entry fwd = k
// CHECK: Program dumped
// CHECK-NEXT: Dim T N  @4:1
// CHECK-NEXT: Const C = 32  @5:7
// CHECK-NEXT: Const K = (2 * 16)  @5:15
// CHECK-NEXT: Sequence tokens=T docs=N chunk=C  @6:1
// CHECK-NEXT: Param scale : f32 = rsqrt(K)  @7:1
// CHECK-NEXT: Tensor in x : bf16[T, K]  @8:1
// CHECK-NEXT: Tensor in h0 : f32[N, K] optional  @9:1
// CHECK-NEXT: Tensor out o : f32[T, K]  @10:1
// CHECK-NEXT: Kernel k over (n in docs) threads 64 per_sm 1  @11:1
// CHECK-NEXT: Assign S = load h0[n, :] or 0  @12:3
// CHECK-NEXT: For c in reverse chunks(n) carry S  @13:3
// CHECK-NEXT: Assign a = load x[c, :]  @14:5
// CHECK-NEXT: Store o[c, :] = (((-a) * scale) + (S[None, :] as f32))  @15:5
// CHECK-NEXT: Assign S = (S * 0.5)  @16:5
// CHECK-NEXT: Entry fwd = k  @19:1
