// Errors found while generating code point at the .cake source.
// RUN: not %cakec %s --emit=ptx --arch=sm_90a 2>&1 | FileCheck %s
program lowering_invalid
dim T
const C = 64
sequence T, chunk C
in  x : bf16[T, 24]
in  big : f32[T, 256]
out o : f32[T, 64]
out p : f32[T, 256]
kernel mm over (c in chunks) {
  a = load x[c, :]
  store o[c, :] = a @ a.T
}
kernel huge over (c in chunks) {
  b = load big[c, :]
  e1 = sigmoid(b)
  e2 = sigmoid(e1)
  e3 = sigmoid(e2)
  store p[c, :] = b * e1 + e1 * e2 + e2 * e3 + e3 * b + e1 * e3
}
// CHECK: lowering_invalid.cake:13:21: error: tensor-core matmul needs M and K multiples of 16 and N a multiple of 8; got [64, 24] @ [24, 64]
// CHECK-NEXT: {{^}}  store o[c, :] = a @ a.T
// CHECK: lowering_invalid.cake:15:8: error: kernel 'huge' needs 266240 bytes of shared memory for its tiles; a block can have at most 232448
