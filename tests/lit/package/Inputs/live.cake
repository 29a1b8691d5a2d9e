// Temps with live ranges (tests/lit/package/live.test): `a` and `b` hand a
// value on to the next stage, `d` is stored and never read, `acc` is read
// before it is written (it keeps a value from an earlier call: pinned),
// `unused` is touched by no stage.
program live
dim T
sequence T, chunk 16
in x : f32[T, 16]
out y, z : f32[T, 16]
temp a, b, d, acc, unused : f32[T, 16]
kernel one over (c in chunks) {
  store a[c, :] = load x[c, :] * 2.0
}
kernel two over (c in chunks) {
  store b[c, :] = load a[c, :] + 1.0
}
kernel three over (c in chunks) {
  store d[c, :] = load b[c, :] * 3.0
  store y[c, :] = load b[c, :]
}
kernel bump over (c in chunks) {
  store acc[c, :] = load acc[c, :] + load x[c, :]
  store z[c, :] = load acc[c, :]
}
entry fwd = one, two, three
entry step = bump, one
