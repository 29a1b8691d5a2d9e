#include "abi.h"

#include <stdlib.h>
#include <string.h>

static void scan_block(const CirBlock *b, int *tensors, int *params, int *dims, int *chunks, int *docs, int *frags) {
  for (int i = 0; i < b->len; i++) {
    const CirInst *in = b->insts[i];
    if (in->tensor) tensors[in->tensor->index] = 1;
    if (in->op == OP_PARAMVAL) params[in->param->index] = 1;
    if (in->op == OP_DIMVAL) dims[in->dim] = 1;
    if (in->op == OP_FOR && in->before) *frags = 1;
    else if (in->op == OP_FOR && !in->counted) *chunks = *docs = 1;
    if (cake_ops[in->op].kind == OK_FRAG) *frags = 1;
    if (in->op == OP_VALID) *chunks = 1;
    for (int j = 0; j < CIR_MAX_TENSOR_RANK; j++)
      if (in->index[j].kind == IX_CHUNK) {
        *chunks = 1;
        if (in->index[j].halo) tensors[in->index[j].halo->index] = 1; /* the tokens of other ranks */
        if (in->index[j].shift > 0) *docs = 1; /* the document's end (doc_table) */
      }
    if (in->body) scan_block(in->body, tensors, params, dims, chunks, docs, frags);
  }
}

static KernelArg *push(KernelAbi *abi) {
  KernelArg *a = &abi->args[abi->nargs++];
  memset(a, 0, sizeof *a);
  return a;
}

/* One of the plan's i32 tables in the workspace. */
static void push_table(KernelAbi *abi, ArgWhat what, const char *name) {
  KernelArg *a = push(abi);
  a->what = what;
  a->kind = "workspace";
  a->name = name;
  a->dtype = DT_I32;
}

int cir_kernel_abi(const CirProgram *p, const CirKernel *k, KernelAbi *abi) {
  memset(abi, 0, sizeof *abi);
  int *tensors = cake_xcalloc((size_t)p->ntensors + 1, sizeof(int)),
      *params = cake_xcalloc((size_t)p->nparams + 1, sizeof(int));
  int *dims = cake_xcalloc((size_t)p->ndims + 1, sizeof(int));
  int chunks = 0, docs = 0, frags = 0;
  scan_block(&k->body, tensors, params, dims, &chunks, &docs, &frags);
  if (k->rounds) frags = 1; /* which fragments run in the round: from the table */
  for (int i = 0; i < k->naxes; i++) {
    if (k->axes[i].kind == GA_CHUNKS) chunks = 1;
    if (k->axes[i].kind == GA_DOCS) docs = 1;
  }
  /* the dims the kernel reads: the extents of its tensors (their strides),
   * the ones it names, and the documents' count where it reads the fragment
   * table's pairs (they follow 6 N entries). Only these are arguments, so a
   * kernel that two variants share compiles to the same code. */
  for (int i = 0; i < p->ntensors; i++)
    for (int j = 0; tensors[i] && j < p->tensors[i]->rank; j++)
      if (p->tensors[i]->shape[j].sym >= 0) dims[p->tensors[i]->shape[j].sym] = 1;
  if (frags && p->docs_dim >= 0) dims[p->docs_dim] = 1;
  int count = chunks + docs + frags + (k->rounds != 0);
  for (int i = 0; i < p->ndims; i++) count += dims[i];
  for (int i = 0; i < p->ntensors; i++) count += tensors[i];
  for (int i = 0; i < p->nparams; i++) count += params[i];
  if (count > CAKE_MAX_KERNEL_ARGS) {
    abi->nargs = count;
    free(tensors);
    free(params);
    free(dims);
    return -1;
  }
  for (int i = 0; i < p->ntensors; i++) {
    if (!tensors[i]) continue;
    const CirTensor *t = p->tensors[i];
    KernelArg *a = push(abi);
    a->what = ARG_TENSOR;
    a->kind = t->role == ROLE_TEMP ? "workspace" : t->role == ROLE_SAVE ? "saved" : "buffer";
    a->name = t->name;
    a->dtype = t->dtype;
    a->tensor = t;
  }
  if (chunks) push_table(abi, ARG_CHUNK_TABLE, "chunk_table");
  if (docs) push_table(abi, ARG_DOC_TABLE, "doc_table");
  if (frags) push_table(abi, ARG_FRAG_TABLE, "frag_table");
  for (int i = 0; i < p->ndims; i++) {
    if (!dims[i]) continue;
    KernelArg *a = push(abi);
    a->what = ARG_DIM;
    a->kind = "parameter";
    a->name = p->dims[i].name;
    a->dtype = DT_I32;
    a->dim = i;
  }
  if (k->rounds) {
    KernelArg *a = push(abi);
    a->what = ARG_ROUND;
    a->kind = "round";
    a->name = "round";
    a->dtype = DT_I32;
  }
  for (int i = 0; i < p->nparams; i++) {
    if (!params[i]) continue;
    KernelArg *a = push(abi);
    a->what = ARG_PARAM;
    a->kind = "parameter";
    a->name = p->params[i]->name;
    a->dtype = p->params[i]->dtype;
    a->param = p->params[i];
  }
  /* Grid: the chunk or docs axis (the one that can be large) goes on x, whose
   * limit is 2^31 - 1; the others keep their order on y and z (limit 65535). */
  int order[3], n = 0;
  for (int i = 0; i < k->naxes; i++)
    if (k->axes[i].kind != GA_RANGE) order[n++] = i;
  for (int i = 0; i < k->naxes; i++)
    if (k->axes[i].kind == GA_RANGE) order[n++] = i;
  for (int i = 0; i < 3; i++) abi->grid_axis_of_dim[i] = i < n ? order[i] : -1;
  free(tensors);
  free(params);
  free(dims);
  return 0;
}

int abi_find(const KernelAbi *abi, ArgWhat what, const void *ptr, int dim) {
  for (int i = 0; i < abi->nargs; i++) {
    const KernelArg *a = &abi->args[i];
    if (a->what != what) continue;
    if (what == ARG_TENSOR && a->tensor != ptr) continue;
    if (what == ARG_PARAM && a->param != ptr) continue;
    if (what == ARG_DIM && a->dim != dim) continue;
    return i;
  }
  return -1;
}
