program require_invalid
option mode = a in (a, b)
dim T, H, HV
const C = 16, HALF = 0.5
sequence T, chunk C
param scale : f32 = 1.0
in  x : f32[T, H, 8]
require HV % H
require HV > 2.5
require H * HALF > 1
require x > 0
require scale > 0
require mode == a
require Q > 1
require (H > 1) + 1 == 2
require !H
require H && HV > 0
require sqrt(H) > 1
require load x[0, 0, 0] > 0
require C % 3 == 0
require C / (C - 16) == 1
require -(H > 0) == 1
out y : f32[T, H, 8]
kernel k over (c in chunks, h in H) {
  store y[c, h, :] = load x[c, h, :]
}
entry fwd = k
