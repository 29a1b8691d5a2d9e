program prefers
option vblock = v32 in (v32, v16, v8)
  prefer v8 when N * H * (V / 8) <= SMS
  prefer v16 when N * H * (V / 16) <= 2 * SMS && T >= C
option mode = a in (a, b)
option fast = false in (true, false) prefer true when !(H > 64 || -H < -128)
dim T, N, H
const C = 16, V = 128
sequence T, docs N, chunk C
if vblock == v16 {
  const BV = 16
} else {
  const BV = 32
}
in  x : f32[T, H, 8]
out y : f32[T, H, 8]
kernel k over (c in chunks, h in H) {
  store y[c, h, :] = load x[c, h, :]
}
entry fwd = k
