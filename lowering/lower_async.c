/* lower_async.c - tile loads with cp.async (16 bytes per thread per copy,
 * bypassing registers): rows past a document's end are zero-filled by the
 * copy itself (source size 0), so masking costs nothing. Used for loads
 * hoisted to a kernel's start and for loads a scan prefetches one chunk
 * ahead. */
#include "lower.h"

/* Can an index be computed wherever the copy is issued (at the kernel's
 * start, or for the next step of a loop): a grid, scan or loop index, a
 * dim, a constant, an i32 parameter, or i32 arithmetic on those (say
 * `h / (HV / H)`, `h * G + i`). The loop's index is substituted for the
 * next step by emit_prefetch. */
static int index_computable(LK *L, const CirInst *v, int depth) {
  if (depth > 16 || v->ty.rank != 0 || v->ty.dt != DT_I32) return 0;
  switch (v->op) {
    case OP_GRIDVAR: case OP_CHUNKVAR: case OP_LOOPVAR: case OP_DIMVAL: case OP_CONST: return 1;
    case OP_PARAMVAL: return 1;
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MOD: case OP_MAXIMUM: case OP_MINIMUM: case OP_NEG:
      for (int j = 0; j < v->nargs; j++)
        if (!index_computable(L, v->args[j], depth + 1)) return 0;
      return 1;
    default: return 0;
  }
}

/* Does block b (and the blocks in it) store to tensor t? */
static int block_stores(const CirBlock *b, const CirTensor *t) {
  for (int i = 0; i < b->len; i++) {
    const CirInst *in = b->insts[i];
    if ((in->op == OP_STORE && in->tensor == t) || (in->body && block_stores(in->body, t))) return 1;
  }
  return 0;
}

/* Can `in` be copied by cp.async: a plain, non-optional window whose rows are
 * contiguous and 16-byte aligned, indexed by values computable where the
 * copy is issued (see index_computable), of a tensor the kernel does not
 * store (a copy issued ahead, at the kernel's start or for the next step,
 * would read the tensor before the kernel's own stores to it)? */
int async_candidate(LK *L, const CirInst *in) {
  const CirTensor *t = in->tensor;
  if (in->op != OP_LOAD || t->optional || in->ty.rank < 1) return 0;
  if (block_stores(&L->k->body, t)) return 0;
  if (t->dtype != DT_BF16 && t->dtype != DT_F16 && t->dtype != DT_F32) return 0;
  int eb = dtype_bytes(t->dtype), last = -1;
  for (int i = 0; i < t->rank; i++) {
    const CirIndex *ix = &in->index[i];
    if (ix->kind != IX_SCALAR) last = i;
    if (ix->v && !index_computable(L, ix->v, 0)) return 0;
    /* every row start must be 16-byte aligned: the constant part of each stride */
    long long f = 1;
    for (int j = i + 1; j < t->rank; j++)
      if (t->shape[j].sym < 0) f *= t->shape[j].value;
    if (i < t->rank - 1 && (f * eb) % 16) return 0;
  }
  if (last != t->rank - 1) return 0;
  const CirIndex *lx = &in->index[last];
  if ((lx->size * eb) % 16) return 0;
  return 1;
}

typedef struct CopyCtx {
  const CirInst *in;
  MlirValue dst_base;
  int eb, per, ppr, R;
} CopyCtx;

/* The 16 bytes at (r, c) of the window, to shared byte offset dst; from
 * src when given (the same element's address), else from its own. */
static void copy_at(LK *L, const CopyCtx *x, MlirValue r, MlirValue c, MlirValue dst_off, MlirValue src) {
  Mlb *b = &L->b;
  Home *h = home_of(L, x->in);
  MlirValue valid = (MlirValue){0};
  /* a prefetch is issued every step: its coordinates' part is computed once */
  MlirValue own = window_elem_ptr(L, x->in, r, c, x->per, h->async_mode == ASYNC_PREFETCH || home_in_scan(h), &valid);
  if (mlirValueIsNull(src)) src = own;
  MlirValue size = mlb_i32(b, 16);
  /* a row out of range copies 0 bytes of the source (nothing is read from
   * its address, whatever it is) and zero-fills the 16 */
  if (!mlirValueIsNull(valid)) size = mlb_select(b, valid, size, mlb_i32(b, 0));
  MlirValue dst = smem_ptr(L, dst_off);
  MlirNamedAttribute na[2] = {
      mlb_named(b, "size", mlirIntegerAttrGet(b->i32, 16)),
      mlb_named(b, "modifier", mlb_attr(b, "#nvvm<load_cache_modifier cg>")),
  };
  MlirValue ops[3] = {dst, src, size};
  mlb_op(b, "nvvm.cp.async.shared.global", 0, NULL, 3, ops, 2, na);
}

/* Item g: row g / ppr, the (g % ppr)-th 16 bytes of it. */
static void copy_item(LK *L, MlirValue g, void *vctx) {
  Mlb *b = &L->b;
  CopyCtx *x = vctx;
  MlirValue r = x->R == 1 ? mlb_i32(b, 0) : mlb_bin(b, "arith.divui", g, mlb_i32(b, x->ppr));
  MlirValue c = mlb_mul_c(b, mlb_bin_c(b, "arith.remui", g, x->ppr), x->per);
  MlirValue idx = mlb_add(b, mlb_mul(b, r, mlb_i32(b, home_of(L, x->in)->stride)), c);
  copy_at(L, x, r, c, mlb_add(b, x->dst_base, mlb_mul(b, idx, mlb_i32(b, x->eb))), (MlirValue){0});
}

void async_copy(LK *L, const CirInst *in, MlirValue dst_base) {
  const CirTensor *t = in->tensor;
  int eb = dtype_bytes(t->dtype), per = 16 / eb;
  CopyCtx x = {in, dst_base, eb, per, cols_of(in->ty) / per,
               rows_of(in->ty)};
  int NT = L->nthreads, total = x.R * x.ppr;
  Home *h = home_of(L, in);
  if (home_in_scan(h) && NT % x.ppr == 0 && total % NT == 0 && total / NT > 1 && total / NT <= 16) {
    /* A scan's copies are issued every step, on its critical path:
     * unrolled, thread t taking the same 16 bytes of rows t / ppr + i (NT /
     * ppr), so that one shared offset serves every row (the rest are
     * constants in the addresses) and no loop counter is kept. */
    Mlb *b = &L->b;
    int rs = NT / x.ppr;
    MlirValue r0 = mlb_bin(b, "arith.divui", L->tid, mlb_i32(b, x.ppr));
    MlirValue c = mlb_mul_c(b, mlb_bin_c(b, "arith.remui", L->tid, x.ppr), x.per);
    MlirValue mine = mlb_add(b, x.dst_base, mlb_mul_c(b, mlb_add(b, mlb_mul_c(b, r0, h->stride), c), x.eb));
    /* the sources too: row r0's address, and for the others that plus a
     * multiple of the row's bytes (computed once, outside any loop), not each
     * row's own product of coordinates and strides */
    MlirValue row_bytes;
    MlirValue src0 = window_row_ptr(L, in, r0, c, x.per, 1, &row_bytes);
    for (int i = 0; i < total / NT; i++) {
      MlirValue r = i ? mlb_add_c(b, r0, i * rs) : r0;
      MlirValue dst = i ? mlb_add_c(b, mine, i * rs * h->stride * x.eb) : mine;
      MlirValue src = (MlirValue){0};
      if (i && !mlirValueIsNull(row_bytes)) src = mlb_gep(b, src0, mlb_mul(b, row_bytes, mlb_i64(b, (long long)i * rs)));
      copy_at(L, &x, r, c, dst, src);
    }
    return;
  }
  strided_loop(L, total, copy_item, &x);
}

void async_commit(LK *L) { mlb_op(&L->b, "nvvm.cp.async.commit.group", 0, NULL, 0, NULL, 0, NULL); }

void async_wait(LK *L, int pending) {
  MlirNamedAttribute na = mlb_named(&L->b, "n", mlirIntegerAttrGet(L->b.i32, pending));
  mlb_op(&L->b, "nvvm.cp.async.wait.group", 0, NULL, 0, NULL, 1, &na);
}
