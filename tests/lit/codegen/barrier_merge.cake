// A block barrier that follows another with only register arithmetic between
// them is not emitted: the KDA forward's two stages had four such pairs (two
// per chunk in the chain's loop).
// RUN: %cakec %specs/kda/kda_fwd.cake --emit=mlir --arch=sm_90a --option gate=softplus --option qk_norm=true --option beta_logits=true --option vblock=v16 | python3 %S/Inputs/adjacent_barriers.py | FileCheck %s
// RUN: %cakec %specs/gdn/gdn_fwd.cake --emit=mlir --arch=sm_90a --option qk_norm=true --option beta_logits=true --option vblock=v16 | python3 %S/Inputs/adjacent_barriers.py | FileCheck %s
// CHECK-NOT: with only register arithmetic between
// CHECK: 0 redundant barriers
