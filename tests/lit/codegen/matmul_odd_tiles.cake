// A matmul whose warp gets an odd number of 16x8 tiles in both directions
// (9 x 9 here) is split into passes of at most 8 tiles by divisors; it used to
// overflow the accumulator arrays.
// RUN: %cakec %s --emit=ptx --arch=sm_90a | FileCheck %s
program mm
dim T
sequence T, chunk 16
in a : bf16[144, 16]
in b : bf16[16, 72]
out y : f32[144, 72]
kernel k over (h in 1) threads 32 {
  store y[:, :] = load a[:, :] @ load b[:, :]
}
entry fwd = k
// CHECK: .entry k_
// CHECK-COUNT-81: mma.sync.aligned.m16n8k16
// CHECK-NOT: mma.sync
