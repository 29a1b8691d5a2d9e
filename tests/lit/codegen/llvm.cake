// The LLVM IR handed to the NVPTX back end: a ptx_kernel with the intrinsics.
// RUN: %cakec %specs/first/first.cake --emit=llvm --arch=sm_90a | FileCheck %s
// CHECK: target triple = "nvptx64-nvidia-cuda"
// CHECK: @__cake_smem = external addrspace(3) global [0 x i8], align 128
// CHECK: define ptx_kernel void @main_{{[0-9a-f]+}}(ptr addrspace(1)
// CHECK: @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16
// CHECK: @llvm.nvvm.mma.m16n8k16.row.col.bf16
