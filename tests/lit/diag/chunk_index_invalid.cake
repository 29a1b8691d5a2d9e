// Arithmetic on a chunk index in a window: `x[c - 1, h]` would read token c - 1,
// not the previous chunk, so an index computed from a chunk index is an error.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program chunk_index_invalid
dim T, N, H
const C = 16, K = 8
sequence T, docs N, chunk C
in  x  : f32[T, H, K]
in  w  : f32[H, K]
temp gx : f32[chunks, H, K]
out y  : f32[T, H, K]
kernel a over (c in chunks, h in H) {
  p = load x[c - 1, h, :]
  prev = c - 1
  store gx[prev, h, :] = load x[c, h, :][0, :]
  q = load w[c % H, :]
}
kernel b over (n in docs, h in H) {
  S = load w[h, :] * 0.0
  for t in chunks(n) carry S {
    S = S + load gx[t + 1, h, :]
    store y[t * 1, h, :] = load x[t, h, :] * 2.0
  }
}
entry fwd = a, b
// CHECK: chunk_index_invalid.cake:13:16: error: a window index computed from chunk index 'c' is a plain number, not a chunk: on the token axis it would select one token, not the previous or next chunk; index with 'c' itself, and carry values from one chunk to the next through a scan (`for c in chunks(n) carry ...`)
// CHECK: chunk_index_invalid.cake:15:12: error: a window index computed from chunk index 'c' is a plain number, not a chunk: on a `chunks` axis it would select an entry of the chunk table, which may belong to another document or lie outside the table; index with 'c' itself
// CHECK: chunk_index_invalid.cake:16:16: error: a window index computed from chunk index 'c' is a plain number, not a chunk; index with 'c' itself
// CHECK: chunk_index_invalid.cake:21:23: error: a window index computed from chunk index 't' is a plain number, not a chunk: on a `chunks` axis
// CHECK-SAME: (`for t in chunks(n) carry ...`)
// CHECK: chunk_index_invalid.cake:22:15: error: a window index computed from chunk index 't' is a plain number, not a chunk: on the token axis
