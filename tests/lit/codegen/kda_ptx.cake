// The KDA forward's PTX: tensor cores, ldmatrix, cp.async, one variant per
// target (every target compiles).
// RUN: %cakec %specs/kda/kda_fwd.cake --emit=ptx --arch=sm_90a --option gate=safe --option qk_norm=true --option beta_logits=true | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: %cakec %specs/kda/kda_fwd.cake --emit=ptx --arch=sm_100a --option gate=softplus --option qk_norm=true --option beta_logits=true | FileCheck %s --check-prefixes=CHECK,SM100
// RUN: %cakec %specs/kda/kda_fwd.cake --emit=ptx --arch=sm_103a --option gate=external --option qk_norm=false --option beta_logits=false | FileCheck %s --check-prefixes=CHECK,SM103
// RUN: %cakec %specs/kda/kda_fwd.cake --emit=ptx --arch=sm_107a --option gate=safe --option qk_norm=true --option beta_logits=true | FileCheck %s --check-prefixes=CHECK,SM107
// CHECK-LABEL: // ---- kernel prep_{{[0-9a-f]+}} ({{sm_[0-9a-z]+}}, stage prep of kda_fwd gate=
// SM90: .target sm_90a
// SM100: .target sm_100f
// SM103: .target sm_100f
// SM107: .target sm_100f
// CHECK: .maxntid 256, 1, 1
// SM90-DAG: cp.async.cg.shared.global
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-DAG: ex2.approx.ftz.f32
// CHECK-LABEL: // ---- kernel chain_{{[0-9a-f]+}}
// CHECK: .maxntid 128, 1, 1
// CHECK-DAG: cp.async.wait_group 0
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
