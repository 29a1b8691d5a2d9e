program pref
option extra = no in (no, yes) prefer yes when N * H <= SMS
dim T, N, H
sequence T, docs N, chunk 16
in  x : f32[T, H, 8]
out y : f32[T, H, 8]
if extra == yes {
  out z : f32[T, H, 8]
}
kernel k over (c in chunks, h in H) {
  a = load x[c, h, :]
  store y[c, h, :] = a
  if extra == yes {
    store z[c, h, :] = a + a
  }
}
entry fwd = k
