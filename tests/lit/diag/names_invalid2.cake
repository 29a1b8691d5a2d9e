// Tensor names the runtime keeps for its tables in the workspace (a kernel
// argument and a plan item of that name would be ambiguous: the package
// would not load). names.cake is the valid counterpart (other names).
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program names_invalid2
dim T
sequence T, chunk 16
in x : f32[T, 16]
temp chunk_table : f32[T, 16]
save y, doc_table : f32[T, 16]
kernel k over (c in chunks) {
  store y[c, :] = load x[c, :]
}
entry fwd = k
// CHECK: names_invalid2.cake:9:6: error: 'chunk_table' is reserved: it names the runtime's chunk table in the workspace; choose another tensor name
// CHECK: names_invalid2.cake:10:9: error: 'doc_table' is reserved: it names the runtime's document table in the workspace; choose another tensor name
// CHECK-NOT: error
