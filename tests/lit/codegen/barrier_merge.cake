// A block barrier that an earlier barrier of the same block already covers is
// not emitted: only ops that a barrier does not order lie between them
// (register arithmetic, loads of the runtime's read-only tables, asynchronous
// copies issued, regions holding only those). The KDA forward had six such
// barriers (four per chunk in the chain's loop: two after the last one's
// register arithmetic, two where a matmul began after a refill was issued).
// RUN: %cakec %specs/kda/kda_fwd.cake --emit=mlir --arch=sm_90a --option gate=softplus --option qk_norm=true --option beta_logits=true --option vblock=v16 | python3 %S/Inputs/adjacent_barriers.py | FileCheck %s
// RUN: %cakec %specs/gdn/gdn_fwd.cake --emit=mlir --arch=sm_90a --option qk_norm=true --option beta_logits=true --option vblock=v16 | python3 %S/Inputs/adjacent_barriers.py | FileCheck %s
// RUN: %cakec %specs/kda/kda_train.cake --emit=mlir --arch=sm_90a --option gate=softplus --option qk_norm=true --option beta_logits=true --option save=ckpt --option cp=none | python3 %S/Inputs/adjacent_barriers.py | FileCheck %s
// CHECK-NOT: is covered by
// CHECK: 0 redundant barriers
