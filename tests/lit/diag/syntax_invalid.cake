// Syntax errors: each broken statement is reported and parsing goes on.
// RUN: not %cakec %s --emit=ast 2>&1 | FileCheck %s
program syntax_invalid
dim T
const C = 16
sequence T, chunk C
in x : f32[T, 4]
out y : f32[T, 4]
kernel k over (c in chunks) {
  a = load x[c, :] *
  store y[c, :] = a
  b = (a + 1
}
// CHECK: syntax_invalid.cake:11:3: error: syntax error, unexpected store
// CHECK-NEXT: {{^}}  store y[c, :] = a
// CHECK-NEXT: {{^}}  ^~~~~
// CHECK: syntax_invalid.cake:13:1: error: syntax error, unexpected '}'
// CHECK-NOT: error
