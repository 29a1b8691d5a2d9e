program constants
dim T
const MIN = -9223372036854775807 - 1, MAX = 9223372036854775807
const Q = MIN / 1, R = MIN % 2, BIG = 9007199254740993, BIG2 = BIG + 2
const E = 2147483647, HALF = 0.5
sequence T, chunk 16
in x : f32[T, 16]
in w : f32[E]
out y : f32[T, 16]
out n : i32[T]
kernel k over (c in chunks) {
  a = load x[c, :] * HALF
  if MAX > BIG2 && Q == MIN && R == 0 && BIG2 % 2 == 1 {
    a = a + 1
  }
  store y[c, :] = a
  store n[c] = 2147483647 + -2147483647 - 1
}
entry fwd = k
