// Misuse of ranks, fragments and exchanges.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program kcp_invalid
dim T, N, R, F
const C = 16, W = 8
sequence T, docs N, chunk C
ranks R, fragments F
ranks N
in   x : f32[T, W]
out  y : f32[T, W]
temp a : f32[F, W]
temp b : f32[R, F, W]
temp c : f32[R, W]
temp d : f32[T, W]
temp e : f32[R, T, W]
exchange g1 = all_gather(a) -> c
exchange g2 = broadcast(a) -> b
exchange g3 = all_gather(d) -> e
exchange g4 = all_gather(x) -> b
// CHECK: kcp_invalid.cake:8:1: error: a program has one `ranks` declaration
// CHECK: kcp_invalid.cake:16:32: error: all_gather's destination must be [R] followed by the source's shape, with its dtype (f32): 'c' is not
// CHECK: kcp_invalid.cake:17:15: error: unknown exchange 'broadcast' (there are `all_gather`, `halo`, `send_next` and `send_prev`)
// CHECK: kcp_invalid.cake:18:26: error: all_gather sends the same number of bytes from every rank, but 'd' has an extent of T, which differs between ranks
// CHECK: kcp_invalid.cake:19:26: error: an exchange's buffers are temps; 'x' is in
