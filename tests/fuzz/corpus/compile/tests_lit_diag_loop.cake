program loop
dim T, H, HV
const C = 16, R = 3
sequence T, chunk C
require HV % H == 0
in  x : f32[T, HV, 8]
in  q : f32[T, H, 8]
out s : f32[T, H, 8]
out w : f32[T, HV, 8]
out r : f32[T, 8]
kernel group over (c in chunks, h in H) {
  acc = load q[c, h, :] * 0.0
  for i in range(HV / H) carry acc {
    hv = h * (HV / H) + i
    xv = load x[c, hv, :]
    if R > 2 {
      y = xv * 2.0
    } else {
      y = xv
    }
    acc = acc + y
    store w[c, hv, :] = xv + load q[c, hv / (HV / H), :]
  }
  store s[c, h, :] = acc
}
kernel fixed over (c in chunks) {
  t = load q[c, 0, :]
  n = 0
  for j in range(R) carry t, n {
    t = t * 0.5
    n = n + j
  }
  store r[c, :] = t * (n as f32)
}
entry fwd = group, fixed
