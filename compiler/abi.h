/* abi.h - the argument plan of a kernel: what the runtime passes, in order.
 *
 * Contract: cir_kernel_abi() is the single source of the parameter list; the
 * lowering builds the kernel signature from it and the package manifest
 * records it, so the two cannot drift apart. Order: the tensors the kernel
 * touches (program order), the plan tables it needs, every program dim (i32),
 * the scalar params it reads. The runtime takes at most
 * CAKE_MAX_KERNEL_ARGS of them per kernel.
 */
#ifndef CAKE_ABI_H
#define CAKE_ABI_H

#include "cir.h"

typedef enum {
  ARG_TENSOR,      /* a program tensor: kind buffer (in/out), workspace (temp) or saved (save) */
  ARG_CHUNK_TABLE, /* i32 [nchunks, 4]: start token, end token, doc, the doc's first token */
  ARG_DOC_TABLE,   /* i32 [N + 1]: first chunk of each document */
  ARG_FRAG_TABLE,  /* i32 [6 N + 2 + 2 E]: per fragment continues, continued, first and count of its
                      `before` entries, first and count of its `after` entries; at 6 N the first and
                      count of the `ends()` entries (every document's last fragment, in document
                      order); then the entries (rank, fragment), 2 each, from 6 N + 2 */
  ARG_DIM,         /* i32 value of a program dim */
  ARG_PARAM,       /* a scalar parameter */
  ARG_ROUND,       /* i32: the round of a kernel in `rounds(...)` (its fragments k-th in their document) */
} ArgWhat;

typedef struct KernelArg {
  ArgWhat what;
  const char *kind; /* "buffer", "workspace", "saved", "parameter" */
  const char *name;
  DType dtype;
  const CirTensor *tensor;
  int dim;
  const CirParam *param;
} KernelArg;

typedef struct KernelAbi {
  KernelArg args[CAKE_MAX_KERNEL_ARGS];
  int nargs;
  int grid_axis_of_dim[3]; /* grid dimension (x=0, y=1, z=2) -> kernel axis index */
} KernelAbi;

/* 0, or -1 when the kernel would take more than CAKE_MAX_KERNEL_ARGS
 * arguments (abi->nargs then holds how many, abi->args nothing). */
int cir_kernel_abi(const CirProgram *p, const CirKernel *k, KernelAbi *abi);
/* Index of the arg with this `what` (and tensor/dim/param), or -1. */
int abi_find(const KernelAbi *abi, ArgWhat what, const void *ptr, int dim);

#endif
