program hdr
option mode = lin in (exp, lin)
option tile = t32 in (t32, t16) prefer t16 when N * H <= 2 * SMS
dim T, H, N
const C = 16
sequence T, docs N, chunk C
require H > 0
if mode == exp {
  require T % C == 0 || N > 1
}
param alpha : f32 = 0.5
param beta : f32
in x : f32[T, H, 8]
if mode == exp {
  in int : f32[H]
}
in h0 : f32[N, H, 8] optional
out do : f32[T, H, 8]
kernel k over (c in chunks, h in H) {
  a = load x[c, h, :]
  if mode == exp {
    a = exp(a) * load int[h]
  }
  store do[c, h, :] = a * alpha + beta
}
entry fwd = k
entry only_k = k
