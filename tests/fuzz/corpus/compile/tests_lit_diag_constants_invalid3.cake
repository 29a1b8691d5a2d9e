program constants_invalid3
dim T
sequence T, chunk 16
out n : i32[T]
kernel k over (c in chunks) {
  store n[0] = 2147483648
  m = 3000000000 + 1
  store n[4294967296] = 1
  m2 = 3000000001 + 3000000002
  w = where(c == 0, 3000000003, 3000000004)
}
entry fwd = k
