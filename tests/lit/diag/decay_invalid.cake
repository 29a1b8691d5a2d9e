// Misuse of decay: it takes one column of log-decays, a float [n] or [n, 1].
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program decay_invalid
dim T, H
const C = 16, K = 32
sequence T, chunk C
in  g : f32[T, H, K]
in  n : i32[T, H]
out o : f32[T, H, C]
kernel k over (c in chunks, h in H) {
  G = cumsum(load g[c, h, :], 0)
  store o[c, h, :] = decay(G)
  store o[c, h, :] = decay(load n[c, h])
  store o[c, h, :] = decay(G[:, 0], G[:, 1])
  store o[c, h, :] = decay(G[:, 0][None, :])
  store o[c, h, :] = decay(G[0, 0]) + 0.0 * decay(G[:, 0])
  store o[c, h, :] = decay(G[:, 0] > 0.0)
}
entry fwd = k
// CHECK: decay_invalid.cake:12:28: error: decay takes a column of log-decays, a float [n] or [n, 1] tile, got f32[16, 32]
// CHECK: decay_invalid.cake:13:28: error: decay takes a column of log-decays, a float [n] or [n, 1] tile, got i32[16]
// CHECK: decay_invalid.cake:14:22: error: decay takes 1 argument, got 2
// CHECK: decay_invalid.cake:15:35: error: decay takes a column of log-decays, a float [n] or [n, 1] tile, got f32[1, 16]
// CHECK: decay_invalid.cake:16:29: error: decay takes a column of log-decays, a float [n] or [n, 1] tile, got f32
// CHECK: decay_invalid.cake:17:36: error: decay takes a column of log-decays, a float [n] or [n, 1] tile, got bool[16]
// CHECK-NOT: error
