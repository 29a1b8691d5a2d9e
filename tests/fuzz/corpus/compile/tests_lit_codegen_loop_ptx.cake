program loop_ptx
dim T, H, HV
const C = 64, K = 64
sequence T, chunk C
require HV % H == 0
in  q : bf16[T, H, K]
in  v : bf16[T, HV, K]
out o : f32[T, HV, C]
kernel k over (c in chunks, h in HV) {
  G = HV / H
  qq = load q[c, h / G, :]
  acc = qq @ qq.T
  for i in range(G) carry acc {
    vv = load v[c, (h / G) * G + i, :]
    acc = acc + qq @ vv.T
  }
  store o[c, h, :] = acc
}
entry fwd = k
