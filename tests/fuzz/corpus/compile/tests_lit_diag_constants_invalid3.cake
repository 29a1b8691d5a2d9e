program constants_invalid3
dim T
sequence T, chunk 16
out n : i32[T]
kernel k over (c in chunks) {
  store n[0] = 2147483648
  m = 3000000000 + 1
  store n[4294967296] = 1
}
entry fwd = k
