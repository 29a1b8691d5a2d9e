program int_semantics
dim T
sequence T, chunk 16
in a, b : i32[T, 16]
in x : f32[T, 16]
out q, r, n : i32[T, 16]
out s : f32[T, 16]
kernel k over (c in chunks) {
  p = load a[c, :]
  d = load b[c, :]
  store q[c, :] = p / d
  store r[c, :] = p % d
  store n[c, :] = load x[c, :] as i32
  store s[c, :] = softplus(load x[c, :])
}
entry fwd = k
