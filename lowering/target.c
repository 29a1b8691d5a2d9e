/* target.c - the target descriptors (see target.h). Figures are the
 * CUDA programming guide's for each compute capability. */
#include <string.h>

#include "target.h"

#define PORTABLE (TF_MMA_SYNC | TF_LDMATRIX | TF_CP_ASYNC)

static const Target targets[] = {
    {"sm_90a", "sm_90a", 232448, 233472, 1024, 65536, 255,
     PORTABLE | TF_BULK_TENSOR | TF_CLUSTERS | TF_MULTICAST | TF_WGMMA | TF_SETMAXNREG, "portable", ""},
    /* the portable path uses no feature beyond the sm_100f family's: sm_100a
     * and sm_103a kernels are the family's PTX, assembled for each chip */
    {"sm_100a", "sm_100f", 232448, 233472, 1024, 65536, 255,
     PORTABLE | TF_BULK_TENSOR | TF_CLUSTERS | TF_MULTICAST | TF_SETMAXNREG | TF_TCGEN05, "portable", ""},
    {"sm_103a", "sm_100f", 232448, 233472, 1024, 65536, 255,
     PORTABLE | TF_BULK_TENSOR | TF_CLUSTERS | TF_MULTICAST | TF_SETMAXNREG | TF_TCGEN05, "portable", ""},
    /* LLVM 22 and ptxas 13.0 know the sm_100f family, not this chip: its
     * kernels are the family's PTX, and its limits are taken as the family's */
    {"sm_107a", "sm_100f", 232448, 233472, 1024, 65536, 255, PORTABLE | TF_BULK_TENSOR | TF_CLUSTERS, "portable",
     "PTX of the sm_100f family; limits assumed as sm_100's"},
};

const Target *target_get(const char *name) {
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++)
    if (name && !strcmp(targets[i].name, name)) return &targets[i];
  return NULL;
}

const Target *target_all(int *n) {
  *n = (int)(sizeof targets / sizeof targets[0]);
  return targets;
}

unsigned target_path_features(const char *path) {
  /* the portable path: warp-level tensor cores, ldmatrix, cp.async */
  if (path && !strcmp(path, "portable")) return PORTABLE;
  return 0;
}

Target target_lowering_view(const Target *t) {
  Target v = *t;
  /* no PTX target: the lowering is shared by every PTX target of the view */
  v.name = t->path;
  v.ptx_target = NULL;
  v.features &= target_path_features(t->path);
  v.remark = "";
  return v;
}

void target_view_key(const Target *t, Buf *out) {
  Target v = target_lowering_view(t);
  buf_printf(out, "path %s smem %d %d %d regs %d %d features %#x", v.path, v.smem_per_block, v.smem_per_sm,
             v.smem_reserved, v.regs_per_sm, v.max_regs_per_thread, v.features);
}

void target_lowering_key(const Target *t, Buf *out) {
  buf_printf(out, "ptx %s ", t->ptx_target);
  target_view_key(t, out);
}

const char *target_names(void) { return "sm_90a, sm_100a, sm_103a, sm_107a"; }

void target_describe(Buf *out) {
  static const char *const feature_names[] = {"mma.sync", "ldmatrix", "cp.async", "bulk-tensor", "clusters",
                                              "multicast", "wgmma",    "setmaxnreg", "tcgen05"};
  buf_printf(out, "%-8s %-8s %-10s %-10s %-6s %-5s %-9s %s\n", "target", "ptx", "smem/block", "smem/SM", "regs",
             "r/thr", "path", "features");
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
    const Target *t = &targets[i];
    buf_printf(out, "%-8s %-8s %-10d %-10d %-6d %-5d %-9s", t->name, t->ptx_target, t->smem_per_block, t->smem_per_sm,
               t->regs_per_sm, t->max_regs_per_thread, t->path);
    const char *sep = " ";
    for (size_t f = 0; f < sizeof feature_names / sizeof feature_names[0]; f++)
      if (t->features & (1u << f)) {
        buf_printf(out, "%s%s", sep, feature_names[f]);
        sep = ",";
      }
    if (t->remark[0]) buf_printf(out, " (%s)", t->remark);
    buf_puts(out, "\n");
  }
}
