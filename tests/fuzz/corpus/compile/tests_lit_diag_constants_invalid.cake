program constants_invalid
dim T
const MIN = -9223372036854775807 - 1
const D = MIN / -1
const M = MIN % -1
const N = -MIN
const A = 9223372036854775807 + 1
const S = MIN - 1
const P = 4294967296 * 4294967296
const Z = 1 / 0
const Y = 7 % 0
const X = 1.5 % 2
in w : f32[2147483648]
in u : f32[65536, 65536, 65536]
param p : i32 = 2147483648
param f : f32 = 1e300 * 1e300
const H = 4611686018427387904
in h : bf16[H]
