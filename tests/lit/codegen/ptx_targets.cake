// PTX for every target: tensor-core mma.sync and ldmatrix everywhere. On the
// portable path sm_100a, sm_103a and sm_107a get the sm_100f family's PTX
// (generated once; ptxas assembles it for each chip; LLVM 22 does not know
// sm_107a).
// RUN: %cakec %specs/first/first.cake --emit=ptx --arch=sm_90a | FileCheck %s --check-prefixes=COMMON,SM90
// RUN: %cakec %specs/first/first.cake --emit=ptx --arch=sm_100a | FileCheck %s --check-prefixes=COMMON,SM100
// RUN: %cakec %specs/first/first.cake --emit=ptx --arch=sm_103a | FileCheck %s --check-prefixes=COMMON,SM103
// RUN: %cakec %specs/first/first.cake --emit=ptx --arch=sm_107a | FileCheck %s --check-prefixes=COMMON,SM107
// COMMON: .version 8.8
// SM90: .target sm_90a
// SM100: .target sm_100f
// SM103: .target sm_100f
// SM107: .target sm_100f
// COMMON: .extern .shared .align 128 .b8 __cake_smem[];
// COMMON: .visible .entry main_{{[0-9a-f]+}}(
// COMMON: .maxntid 128, 1, 1
// COMMON-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// COMMON-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// COMMON-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// COMMON-DAG: ex2.approx.ftz.f32
// COMMON-DAG: bar.sync 0
