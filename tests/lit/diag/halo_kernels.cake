// Shifted windows in a context-parallel program: a halo that does not
// cover them, none at all, and an entry that reads a halo before it is made.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program halo_kernels
dim T, N, R, F
const C = 16, W = 8
sequence T, docs N, chunk C
ranks R, fragments F
in   x, z : bf16[T, W]
out  y : bf16[T, W]
temp h : bf16[F, 3, W]
exchange hx = halo(x, 2, 1) -> h
kernel k over (c in chunks) {
  store y[c, :] = (load x[shift(c, -2), :] + load x[shift(c, 2), :]) as bf16
}
kernel k1 over (c in chunks) {
  store y[c, :] = load z[shift(c, -1), :]
}
kernel k2 over (c in chunks) {
  store y[c, :] = load x[shift(c, -1), :]
}
entry fwd = k2, hx
// CHECK: halo_kernels.cake:14:53: error: this window reads 2 tokens after a fragment, but the halo of 'x' ('hx') brings 1
// CHECK: halo_kernels.cake:17:26: error: in a context-parallel program, a shifted window of 'z' reads tokens that other ranks hold: declare its halo, `exchange NAME = halo(z, 1, 0) -> DST`, and run it before this kernel
// CHECK: halo_kernels.cake:22:7: error: entry 'fwd' runs kernel 'k2', whose shifted windows of 'x' read its halo, before the halo's exchange 'hx': list 'hx' before 'k2'
