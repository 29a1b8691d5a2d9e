// An integer constant that takes part in i32 arithmetic, is stored to an i32
// tensor or indexes one must fit in i32.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program constants_invalid3
dim T
sequence T, chunk 16
out n : i32[T]
kernel k over (c in chunks) {
  store n[0] = 2147483648
  m = 3000000000 + 1
  store n[4294967296] = 1
  m2 = 3000000001 + 3000000002
  w = where(c == 0, 3000000003, 3000000004)
}
entry fwd = k
// CHECK: constants_invalid3.cake:9:16: error: integer constant 2147483648 does not fit in i32
// CHECK: constants_invalid3.cake:10:7: error: integer constant 3000000000 does not fit in i32
// CHECK: constants_invalid3.cake:11:11: error: integer constant 4294967296 does not fit in i32
// One error per statement, and it is the left operand's (whichever C
// compiler built cakec):
// CHECK: constants_invalid3.cake:12:8: error: integer constant 3000000001 does not fit in i32
// CHECK-NOT: error: integer constant 3000000002
// CHECK: constants_invalid3.cake:13:21: error: integer constant 3000000003 does not fit in i32
// CHECK-NOT: error:
