// The CIR dump of the first program: SSA values with dtypes and shapes.
// RUN: %cakec %specs/first/first.cake --emit=cir | FileCheck %s
// CHECK: program first
// CHECK-NEXT: dim T (tokens)
// CHECK-NEXT: dim H
// CHECK-NEXT: dim chunks (chunks)
// CHECK-NEXT: chunk 64
// CHECK-NEXT: tensor in x : bf16[T, H, 64]
// CHECK-NEXT: tensor in y : bf16[T, H, 64]
// CHECK-NEXT: tensor in w : f32[H, 64]
// CHECK-NEXT: tensor out z : f32[T, H, 64]
// CHECK-NEXT: kernel main over (c in chunks, h in H) threads 128 {
// CHECK-NEXT:   %0 = gridvar c (axis 0) : i32
// CHECK-NEXT:   %1 = gridvar h (axis 1) : i32
// CHECK-NEXT:   %2 = load x[chunk %0, %1, :64] : bf16[64, 64]
// CHECK-NEXT:   %3 = load y[chunk %0, %1, :64] : bf16[64, 64]
// CHECK-NEXT:   %4 = load w[%1, :64] : f32[64]
// CHECK-NEXT:   %5 = expand %4 axis 0 : f32[1, 64]
// CHECK-NEXT:   %6 = * %2, %5 : f32[64, 64]
// CHECK-NEXT:   %7 = sigmoid %6 : f32[64, 64]
// CHECK-NEXT:   %8 = cumsum %7 axis 0 : f32[64, 64]
// CHECK-NEXT:   %9 = transpose %3 : bf16[64, 64]
// CHECK-NEXT:   %10 = matmul %2, %9 : f32[64, 64]
// CHECK-NEXT:   %11 = tril %10 diag 0 : f32[64, 64]
// CHECK-NEXT:   %12 = as %11 : bf16[64, 64]
// CHECK-NEXT:   %13 = as %8 : bf16[64, 64]
// CHECK-NEXT:   %14 = matmul %12, %13 : f32[64, 64]
// CHECK-NEXT:   %15 = + %14, %8 : f32[64, 64]
// CHECK-NEXT:   store z[chunk %0, %1, :64] = %15
// CHECK-NEXT: }
// CHECK-NEXT: entry fwd = main
