program dumped
dim T, N
const C = 32, K = 2 * 16
sequence T, docs N, chunk C
param scale : f32 = rsqrt(K)
in  x : bf16[T, K]
in  h0 : f32[N, K] optional
out o : f32[T, K]
kernel k over (n in docs) threads 64 {
  S = load h0[n, :] or 0
  for c in reverse chunks(n) carry S {
    a = load x[c, :]
    store o[c, :] = -a * scale + S[None, :] as f32
    S = S * 0.5
  }
}
entry fwd = k
