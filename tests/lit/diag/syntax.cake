// The valid counterpart of syntax_invalid.cake.
// RUN: %cakec %s --emit=ast | FileCheck %s
program syntax
dim T
const C = 16
sequence T, chunk C
in x : f32[T, 4]
out y : f32[T, 4]
kernel k over (c in chunks) {
  a = load x[c, :] * 2
  store y[c, :] = a
  b = (a + 1)
}
// CHECK: Kernel k over (c in chunks)
// CHECK-NEXT: Assign a = (load x[c, :] * 2)  @10:3
// CHECK-NEXT: Store y[c, :] = a  @11:3
// CHECK-NEXT: Assign b = (a + 1)  @12:3
