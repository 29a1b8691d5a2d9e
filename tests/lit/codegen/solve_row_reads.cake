// unit_lower_inv's merges (lower_solve in lowering/lower_misc.c) read the
// 8 terms of a turn along the row in one 32-byte read (two 16-byte loads)
// and the column's terms one by one: 10 shared-memory loads per 8 products
// instead of 16, the products and their order unchanged. Only the first
// turn (X) or the last (T) holds terms outside the triangle: the others
// skip no term and test none.
// RUN: %cakec %s --emit=ptx --arch=sm_90a -j1 | FileCheck %s
program solve_row_reads
dim H
in  a : f32[H, 64, 64]
out t : f32[H, 64, 64]
kernel k over (h in H) {
  store t[h, :, :] = unit_lower_inv(tril(load a[h, :, :], -1))
}
entry fwd = k
// CHECK-LABEL: .entry k_
// the diagonal blocks (and A's blocks below them into T's home), then the
// first merge's X = A[hi, lo] T[lo, lo]
// CHECK: bar.sync
// CHECK: bar.sync
// CHECK: ld.shared.v4.b32 {{.*}}[%r[[P:[0-9]+]]];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}[%r[[P]]+16];
// CHECK-COUNT-8: ld.shared.b32
// CHECK-NOT: ld.shared
// CHECK: bra
// and its T[hi, lo] = -(X + T[hi, hi] X)
// CHECK: bar.sync
// CHECK: ld.shared.v4.b32 {{.*}}[%r[[Q:[0-9]+]]];
// CHECK-NEXT: ld.shared.v4.b32 {{.*}}[%r[[Q]]+16];
// CHECK-COUNT-8: ld.shared.b32
