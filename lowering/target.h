/* target.h - what the lowering knows about each GPU target.
 *
 * Contract: one descriptor per target `--arch` accepts, chosen by name. It
 * holds the limits the lowering plans against (shared memory per block and
 * per multiprocessor, registers) and the features the target's PTX may use;
 * no other file hard-codes a target's limits. `path` names the
 * code-generation path the target's kernels take; the manifest records it
 * per kernel and `cakec --targets` lists the table. Today every target takes
 * the portable path (warp-level mma.sync tensor cores and cp.async copies);
 * the features beyond it are declared so that faster paths can test for
 * them.
 *
 * Kernels are lowered per view and generated per PTX target, then
 * assembled per chip. The lowering sees a target only through
 * target_lowering_view(): its limits and the features its path may use,
 * never its PTX target, so targets with the same view (target_view_key)
 * share one lowering to MLIR and LLVM IR, which LLVM then optimises and
 * emits for each PTX target among them. Targets with the same PTX target
 * too (target_lowering_key) get the same PTX, which is generated once and
 * given to ptxas for each of them: on the portable path sm_90a has its own
 * PTX, and sm_100a, sm_103a and sm_107a share the sm_100f family's, all
 * from one lowering.
 */
#ifndef CAKE_TARGET_H
#define CAKE_TARGET_H

#include "base.h"

typedef enum {
  TF_MMA_SYNC = 1u << 0,    /* mma.sync: warp-level tensor-core matmuls */
  TF_LDMATRIX = 1u << 1,    /* ldmatrix: shared memory to mma fragments */
  TF_CP_ASYNC = 1u << 2,    /* cp.async: global to shared copies, per thread */
  TF_BULK_TENSOR = 1u << 3, /* cp.async.bulk.tensor: tensor-map copies */
  TF_CLUSTERS = 1u << 4,    /* thread-block clusters, distributed shared memory */
  TF_MULTICAST = 1u << 5,   /* bulk copies multicast to a cluster */
  TF_WGMMA = 1u << 6,       /* wgmma: warpgroup matmuls from shared memory */
  TF_SETMAXNREG = 1u << 7,  /* setmaxnreg: registers moved between warpgroups */
  TF_TCGEN05 = 1u << 8,     /* tcgen05: tensor-memory matmuls */
} TargetFeature;

typedef struct Target {
  const char *name;        /* as --arch names it: "sm_90a" */
  const char *ptx_target;  /* the PTX target LLVM is asked for */
  int smem_per_block;      /* dynamic shared memory one block may use, bytes */
  int smem_per_sm;         /* shared memory of one multiprocessor, bytes */
  int smem_reserved;       /* what the driver reserves per resident block, bytes */
  int regs_per_sm;         /* 32-bit registers of one multiprocessor */
  int max_regs_per_thread;
  unsigned features;       /* TargetFeature bits */
  const char *path;        /* the code-generation path its kernels take */
  const char *remark;      /* where a figure is assumed rather than known, or "" */
} Target;

/* The descriptor of `name`, or NULL for a target the compiler does not know. */
const Target *target_get(const char *name);
/* Every known target, in --arch's default order; *n gets the count. */
const Target *target_all(int *n);
/* The features the code-generation path `path` may use (0: unknown path). */
unsigned target_path_features(const char *path);
/* What the lowering sees of `t`: the limits and only the features of its
 * path; its name is the path's and it has no PTX target (NULL). */
Target target_lowering_view(const Target *t);
/* Text that covers every field of the lowering view: targets with the same
 * key share one lowering. */
void target_view_key(const Target *t, Buf *out);
/* The view key with the PTX target: targets with the same key get the same
 * generated code. */
void target_lowering_key(const Target *t, Buf *out);
/* "sm_90a, sm_100a, ..." */
const char *target_names(void);
/* A table of the targets (name, PTX target, limits, features, path), as text. */
void target_describe(Buf *out);

#endif
