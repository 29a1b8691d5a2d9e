// Two decay_dots of the same b and g, the first only stored: one pass
// computes both (one staging of b', one barrier, the diagonal blocks'
// exponentials shared). The first then has no tile of its own (it is written
// straight to its store), and the second's tile is live from the first's
// place. In `unpaired` the first has a second use, so each has its tile and
// its own pass. In `three`, a decay_dot is taken by one pair at most: the
// first and the third pair up, the second (stored too) keeps its own pass
// (taken twice, the third would be computed in two passes and its tile would
// overlap the first pass's staging). In `crowded` a large tile lives between
// the two: paired, the second's tile would take the kernel over the limit
// of shared memory, so the pair is undone and each keeps its own pass.
// RUN: env CAKE_TRACE_PLAN=1 %cakec %s --emit=ptx --arch=sm_90a -j1 --cache-dir= 2>&1 >/dev/null | FileCheck %s
program decay_pair
dim T, H
const C = 64, K = 64
sequence T, chunk C
in  q, k : bf16[T, H, K]
in  g    : f32[T, H, K]
out p, p2, a : bf16[T, H, C]
in  v    : bf16[T, H, K]
in  x    : f32[T, H, 368]
out y    : f32[T, H, 368]
kernel paired over (c in chunks, h in H) {
  qs = load q[c, h, :]
  ks = load k[c, h, :]
  qn = qs * rsqrt(sum(qs * qs, 1) + 1e-6)[:, None]
  kn = ks * rsqrt(sum(ks * ks, 1) + 1e-6)[:, None]
  G = cumsum(load g[c, h, :], 0)
  store p[c, h, :] = (decay_dot(qn, kn, G) * 0.5) as bf16
  store a[c, h, :] = tril(decay_dot(kn, kn, G), -1) as bf16
}
kernel unpaired over (c in chunks, h in H) {
  qs = load q[c, h, :]
  ks = load k[c, h, :]
  qn = qs * rsqrt(sum(qs * qs, 1) + 1e-6)[:, None]
  kn = ks * rsqrt(sum(ks * ks, 1) + 1e-6)[:, None]
  G = cumsum(load g[c, h, :], 0)
  D = decay_dot(qn, kn, G)
  store p[c, h, :] = (D * 0.5) as bf16
  store a[c, h, :] = (tril(decay_dot(kn, kn, G), -1) + D) as bf16
}
kernel three over (c in chunks, h in H) {
  qs = load q[c, h, :]
  ks = load k[c, h, :]
  qn = qs * rsqrt(sum(qs * qs, 1) + 1e-6)[:, None]
  kn = ks * rsqrt(sum(ks * ks, 1) + 1e-6)[:, None]
  G = cumsum(load g[c, h, :], 0)
  store p[c, h, :] = (decay_dot(qn, kn, G) * 0.5) as bf16
  vs = load v[c, h, :]
  vn = vs * rsqrt(sum(vs * vs, 1) + 1e-6)[:, None]
  store p2[c, h, :] = (decay_dot(vn, kn, G) * 0.5) as bf16
  store a[c, h, :] = tril(decay_dot(kn, kn, G), -1) as bf16
}
kernel crowded over (c in chunks, h in H) {
  qs = load q[c, h, :]
  ks = load k[c, h, :]
  qn = qs * rsqrt(sum(qs * qs, 1) + 1e-6)[:, None]
  kn = ks * rsqrt(sum(ks * ks, 1) + 1e-6)[:, None]
  G = cumsum(load g[c, h, :], 0)
  store p[c, h, :] = (decay_dot(qn, kn, G) * 0.5) as bf16
  X = cumsum(load x[c, h, :], 0)
  store y[c, h, :] = X * 2.0
  store a[c, h, :] = tril(decay_dot(kn, kn, G), -1) as bf16
}
entry fwd = paired, unpaired, three, crowded
// (the plans are traced in this order)
// CHECK-LABEL: plan of kernel three
// CHECK-NOT: decay_dot
// CHECK: %{{[0-9]+}} (stage) {{.*}} live [[T1:[0-9]+]]..[[T1]]
// CHECK: %[[T2:[0-9]+]] decay_dot {{.*}} live [[T2S:[0-9]+]]..
// CHECK-NEXT: %[[T2]] (stage) {{.*}} live [[T2S]]..[[T2S]]
// CHECK: %{{[0-9]+}} decay_dot {{.*}} live [[T1]]..
// CHECK-NOT: decay_dot
// CHECK-LABEL: plan of kernel crowded
// CHECK: %[[C1:[0-9]+]] decay_dot {{.*}} live [[C1S:[0-9]+]]..
// CHECK-NEXT: %[[C1]] (stage) {{.*}} live [[C1S]]..[[C1S]]
// CHECK: %[[C2:[0-9]+]] decay_dot {{.*}} live [[C2S:[0-9]+]]..
// CHECK-NEXT: %[[C2]] (stage) {{.*}} live [[C2S]]..[[C2S]]
// CHECK-LABEL: plan of kernel unpaired
// CHECK: %[[U1:[0-9]+]] decay_dot {{.*}} live [[Q:[0-9]+]]..
// CHECK-NEXT: %[[U1]] (stage) {{.*}} live [[Q]]..[[Q]]
// CHECK-NEXT: %[[U2:[0-9]+]] decay_dot {{.*}} live [[R:[0-9]+]]..
// CHECK-NEXT: %[[U2]] (stage) {{.*}} live [[R]]..[[R]]
// CHECK-LABEL: plan of kernel paired
// CHECK-NOT: decay_dot
// CHECK: %[[P1:[0-9]+]] (stage) {{.*}} live [[P:[0-9]+]]..[[P]]
// CHECK-NEXT: %{{[0-9]+}} decay_dot {{.*}} live [[P]]..
// CHECK-NOT: (stage)
// CHECK-NOT: decay_dot
