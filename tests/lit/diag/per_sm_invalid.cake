// A kernel's `per_sm` (the blocks one multiprocessor is planned to hold) is
// 1 or 2, a constant; a plan asked to fit two blocks whose tiles do not is
// refused with the sizes.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s --check-prefix=SEMA
// RUN: not %cakec %s --emit=mlir --arch=sm_90a --option case=big 2>&1 | FileCheck %s --check-prefix=PLAN
program per_sm_invalid
option case = bad in (bad, big)
dim T, N, H
const C = 64
sequence T, docs N, chunk C
in  big : bf16[T, H, 512]
out p : f32[T, H, 512]
if case == bad {
  kernel k1 over (h in H) per_sm 3 { }
  kernel k2 over (h in H) threads 64 per_sm H { }
  kernel k3 over (h in H) per_sm 0 { }
}
kernel d over (c in chunks, h in H) per_sm 2 {
  y = exp(load big[c, h, :] as f32)
  store p[c, h, :] = y * sum(y, 1)[:, None]
}
entry fwd = d
// SEMA: per_sm_invalid.cake:14:34: error: per_sm must be 1 or 2 (blocks per multiprocessor), got 3
// SEMA: per_sm_invalid.cake:15:45: error: 'H' is a dimension, not a compile-time constant
// SEMA: per_sm_invalid.cake:16:34: error: per_sm must be 1 or 2 (blocks per multiprocessor), got 0
// SEMA-NOT: error
// PLAN: per_sm_invalid.cake:18:8: error: kernel 'd' is planned for 2 blocks per multiprocessor (per_sm 2), but its tiles take 132480 bytes of shared memory; two blocks fit at most 115712 each
