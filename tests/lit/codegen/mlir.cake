// The MLIR built through the C API: a gpu.module per kernel, the kernel
// signature from the argument plan, tensor-core ops, and .cake locations.
// RUN: %cakec %specs/first/first.cake --emit=mlir --arch=sm_90a | FileCheck %s
// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @main_[[D:[0-9a-f]+]]_module
// CHECK: llvm.mlir.global external @__cake_smem() {addr_space = 3 : i32, alignment = 128 : i64} : !llvm.array<0 x i8>
// CHECK: gpu.func @main_[[D]](%arg0: !llvm.ptr<1> {{.*}}, %arg1: !llvm.ptr<1> {{.*}}, %arg2: !llvm.ptr<1> {{.*}}, %arg3: !llvm.ptr<1> {{.*}}, %arg4: !llvm.ptr<1> {{.*}}, %arg5: i32 {{.*}}, %arg6: i32 {{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.minctasm = {{[12]}} : i32}
// CHECK: gpu.thread_id x
// CHECK: gpu.block_id x
// CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>{{.*}} loc(#[[L:loc[0-9]+]])
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>{{.*}} loc(#[[L]])
// CHECK: gpu.barrier
// CHECK: gpu.return
// the matmul `a @ b.T` of line 23, column 14
// CHECK: #[[L]] = loc("{{.*}}first.cake":23:14)
