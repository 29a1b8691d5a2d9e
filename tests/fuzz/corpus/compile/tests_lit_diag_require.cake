program requirements
option mode = a in (a, b)
dim T, N, H, HV
const C = 16, G = 4, NEG = -3
sequence T, docs N, chunk C
require HV % H == 0
require HV >= H && (H > 0 || T == 0)
require (T + C - 1) / C * C >= T
require -(H) < 1 && !(HV * G == 12 || N % 2 != 0)
require H - (HV - 1) <= NEG * -1
require C % 16 == 0
if mode == b {
  require HV == H * G
}
in  x : f32[T, H, 8]
out y : f32[T, HV, 8]
kernel k over (c in chunks, h in HV) {
  store y[c, h, :] = load x[c, h / (HV / H), :]
}
entry fwd = k
