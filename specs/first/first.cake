// first.cake - the foundation's end-to-end program.
//
// For every chunk c of the token stream and head h:
//   s = cumsum(sigmoid(x * w), rows)         elementwise math, a scan down the rows
//   p = tril(x @ y^T)                         a tensor-core matmul, masked
//   z = p @ s + s                             a second matmul (bf16 operands)
// The last chunk is ragged when T is not a multiple of C: its rows past T
// load as 0 and are never stored.
program first

dim   T, H
const C = 64, D = 64
sequence T, chunk C

in    x, y : bf16[T, H, D]
in    w    : f32[H, D]
out   z    : f32[T, H, D]

kernel main over (c in chunks, h in H) {
  a = load x[c, h, :]                       // [C, D] bf16
  b = load y[c, h, :]
  s = cumsum(sigmoid(a * load w[h, :][None, :]), 0)
  p = tril(a @ b.T)                         // [C, C] f32
  store z[c, h, :] = (p as bf16) @ (s as bf16) + s
}

entry fwd = main
