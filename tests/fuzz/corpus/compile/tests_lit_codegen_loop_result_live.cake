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
