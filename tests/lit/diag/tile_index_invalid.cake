// Tile indices are compile-time constants: a grid index, a value of the kernel or a
// load is named as such (it is not an unknown name).
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program tile_index_invalid
dim T, N, H
const C = 16, K = 8
sequence T, docs N, chunk C
in  x   : f32[T, H, K]
in  A   : f32[4]
in  sel : i32[4]
out y   : f32[T, H, K]
kernel k over (c in chunks, h in H) {
  G = load A[:]
  a = G[h]
  i = 2
  b = G[i]
  d = G[h + 1]
  e = G[load sel[0]]
  f = G[H]
  g = G[nope]
  store y[c, h, :] = load x[c, h, :]
}
kernel s over (n in docs, h in H) {
  G = load A[:]
  S = 0.0
  for t in chunks(n) carry S {
    S = S + G[t]
  }
}
entry fwd = k
// CHECK: tile_index_invalid.cake:14:9: error: a tile index must be a compile-time constant, but 'h' is a grid index, known only when the kernel runs; to select by 'h', index the tensor in the load instead (load NAME[..., h, ...])
// CHECK: tile_index_invalid.cake:16:9: error: a tile index must be a compile-time constant, but 'i' is a value of the kernel; declare constants with `const` at the top level
// CHECK: tile_index_invalid.cake:17:11: error: a tile index must be a compile-time constant, but 'h' is a grid index
// CHECK: tile_index_invalid.cake:18:9: error: a tile index must be a compile-time constant, but this one loads from 'sel'; to select by a value in memory, index the tensor in the load instead
// CHECK: tile_index_invalid.cake:19:9: error: 'H' is a dimension, not a compile-time constant
// CHECK: tile_index_invalid.cake:20:9: error: unknown name 'nope'
// CHECK: tile_index_invalid.cake:27:15: error: a tile index must be a compile-time constant, but 't' is a scan's chunk index, known only when the kernel runs
