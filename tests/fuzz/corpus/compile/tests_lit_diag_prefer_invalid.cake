program prefer_invalid
option vblock = v32 in (v32, v16)
  prefer v8 when N <= 2
  prefer v16 when N * H + Q > 1
  prefer v16 when BV > 1
  prefer v16 when vblock == v16
  prefer v16 when N * 2
  prefer v16 when scale > 0
  prefer v16 when H > HALF
option mode = a in (a, b) prefer b when 1.5 < N
option other = x in (x, y) prefer y when sqrt(H) > 1
dim T, N, H
const C = 16, HALF = 0.5
if vblock == v16 {
  const BV = 16
} else {
  const BV = 32
}
sequence T, docs N, chunk C
param scale : f32 = 1.0
in  x : f32[T, H, 8]
out y : f32[T, H, 8]
kernel k over (c in chunks, h in H) {
  store y[c, h, :] = load x[c, h, :]
}
entry fwd = k
