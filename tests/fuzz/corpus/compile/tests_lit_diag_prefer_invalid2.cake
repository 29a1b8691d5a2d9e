program prefer_invalid2
option vblock = v32 in (v32, v16) prefer v16 when H <= SMS
dim T, H, SMS
sequence T, chunk 16
in  x : f32[T, H, 8]
out y : f32[T, H, 8]
kernel k over (c in chunks, h in H) {
  store y[c, h, :] = load x[c, h, :]
}
entry fwd = k
