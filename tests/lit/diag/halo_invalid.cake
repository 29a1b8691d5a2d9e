// Misuse of halo exchanges and shifted windows in a context-parallel program.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program halo_invalid
dim T, N, R, F
const C = 16, W = 8
sequence T, docs N, chunk C
ranks R, fragments F
in   x, z : bf16[T, W]
in   u : bf16[T, W] optional
out  y : bf16[T, W]
temp h : bf16[F, 3, W]
temp h2 : bf16[F, 2, W]
temp g : bf16[F, 4, W]
temp a : bf16[F, W]
exchange hx = halo(x, 2, 1) -> h
exchange hz = halo(z, 2) -> h2
exchange hz2 = halo(z, 0, 0) -> h2
exchange hz3 = halo(z, 17, 0) -> h2
exchange hz4 = halo(z, 2, 0) -> g
exchange hu = halo(u, 2, 0) -> h2
exchange ha = halo(a, 2, 0) -> h2
exchange hx2 = halo(x, 1, 1) -> h2
exchange gx = all_gather(a, 2) -> a
kernel k over (c in chunks) {
  store y[c, :] = load x[c, :]
}
entry fwd = k
// CHECK: halo_invalid.cake:16:15: error: halo takes its source and two widths, the tokens before each fragment and after it
// CHECK: halo_invalid.cake:17:16: error: a halo of no tokens before and none after exchanges nothing
// CHECK: halo_invalid.cake:18:24: error: a halo is at most a chunk wide (0 to 16 tokens), not 17
// CHECK: halo_invalid.cake:19:33: error: halo's destination must be [F, 2] followed by the source's extents after its first, with its dtype (bf16): 'g' is not
// CHECK: halo_invalid.cake:20:20: error: 'u' is optional: a halo's source must be present on every rank
// CHECK: halo_invalid.cake:21:20: error: a halo exchanges tokens: the first axis of 'a' must be the token dim T
// CHECK: halo_invalid.cake:22:21: error: 'x' already has a halo ('hx'); give it one, as wide as its shifted windows need
// CHECK: halo_invalid.cake:23:29: error: all_gather takes only its source: `all_gather(a)`
