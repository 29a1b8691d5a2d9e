// A loop's result is its carry's buffer: the carry stays live through the
// result's last read, so nothing planned after the loop (here the rows'
// sums) shares its shared memory while the result is still read. The plan
// trace (CAKE_TRACE_PLAN) prints each buffer's live range: the carry's
// ends where the last buffer read with the result ends.
// RUN: env CAKE_TRACE_PLAN=1 %cakec %s --emit=ptx --arch=sm_90a -j1 --cache-dir= 2>&1 >/dev/null | FileCheck %s
program loop_result_live
dim T, H, HV
const C = 64, K = 128
sequence T, chunk C
require HV % H == 0
in  x : bf16[T, H, K]
in  d : f32[T, HV, K]
out y : bf16[T, H, K]
kernel k over (c in chunks, h in H) threads 256 {
  xr = load x[c, h, :]
  xn = xr * rsqrt(sum(xr * xr, 1) + 1e-6)[:, None]
  acc = xn * 0.0
  for i in range(HV / H) carry acc {
    acc = acc + load d[c, h * (HV / H) + i, :]
  }
  r = rsqrt(sum(xr * xr, 1) + 1e-6)
  store y[c, h, :] = (r[:, None] * (acc - xn * sum(acc * xn, 1)[:, None])) as bf16
}
entry fwd = k
// CHECK: plan of kernel k
// CHECK: sum {{.*}} live {{[0-9]+}}..[[#END:]]  (line 23)
// CHECK: carry {{.*}} live {{[0-9]+}}..[[#END]]  (line 19)
