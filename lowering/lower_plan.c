/* lower_plan.c - where each value of a kernel lives (its home), and the
 * shared-memory plan: live ranges in program order, then first fit.
 *
 * Homes: scalars in registers; values recomputed where used (single-use or
 * cheap); tiles in shared memory (matmul, reduction, scan and solve results,
 * values used several times, scan carries). Then second thoughts (costly
 * operands of sequential loops stored, loads copied with cp.async at the
 * kernel's start or prefetched a chunk ahead in scans), epilogues (a matmul
 * writing its consumer from its accumulators), in-place carries. */
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "lower.h"

/* ------------------------------------------------------------------ */
/* planning: positions, homes, live ranges, shared-memory offsets      */

typedef struct Plan {
  LK *L;
  int next_pos;
  const CirInst **all; /* by id */
} Plan;

static void number_block(Plan *P, const CirBlock *b, int depth, const CirInst *loop) {
  for (int i = 0; i < b->len; i++) {
    const CirInst *in = b->insts[i];
    P->all[in->id] = in;
    P->L->pos[in->id] = P->next_pos++;
    P->L->homes[in->id].depth = depth;
    P->L->homes[in->id].loop = loop;
    if (in->body) number_block(P, in->body, depth + 1, in);
  }
}

static int block_end(LK *L, const CirBlock *b) {
  const CirInst *last = b->insts[b->len - 1];
  return L->pos[last->id];
}

static int storage_stride(DType sdt, int cols) {
  /* 16 bytes of padding per row: rows start 16-byte aligned and consecutive
   * rows of a bf16 tile fall in different banks for ldmatrix. */
  return sdt == DT_BF16 || sdt == DT_F16 ? cols + 8 : cols + 4;
}

static void set_smem(Home *h, DType dt, int rows, int cols) {
  h->kind = H_SMEM;
  h->sdt = dt == DT_BOOL ? DT_I32 : dt;
  h->rows = rows;
  h->cols = cols;
  h->stride = storage_stride(h->sdt, cols);
  h->bytes = rows * h->stride * dtype_bytes(h->sdt);
  h->nbufs = 1;
}

int fused_reads(LK *L, const CirInst *v, const CirInst *carry) {
  if (v == carry) return 1;
  if (home_of(L, v)->kind != H_FUSED) return 0;
  for (int j = 0; j < v->nargs; j++)
    if (fused_reads(L, v->args[j], carry)) return 1;
  return 0;
}

/* Does the matmul mm, or one summed into its accumulators, read `carry` as
 * it runs (as an operand, directly or through fused values)? */
int matmul_reads(LK *L, const CirInst *mm, const CirInst *carry) {
  for (const CirInst *t = mm; t; t = home_of(L, t)->sum_with)
    for (int j = 0; j < t->nargs; j++)
      if (fused_reads(L, t->args[j], carry)) return 1;
  return 0;
}

/* Does recomputing v cost a special-function instruction or a global load? */
static int expensive_tree(LK *L, const CirInst *v) {
  if (v->op == OP_LOAD || (cake_ops[v->op].kind == OK_UNARY && !op_is_cheap(v->op)) || v->op == OP_DIV ||
      v->op == OP_DECAY)
    return 1;
  for (int j = 0; j < v->nargs; j++)
    if (home_of(L, v->args[j])->kind == H_FUSED && expensive_tree(L, v->args[j])) return 1;
  return 0;
}

static void choose_homes(LK *L, const CirBlock *b) {
  for (int i = 0; i < b->len; i++) {
    const CirInst *in = b->insts[i];
    Home *h = home_of(L, in);
    OpKind kind = cake_ops[in->op].kind;
    int R = rows_of(in->ty), C = cols_of(in->ty);
    if (in->body) choose_homes(L, in->body);
    switch (in->op) {
      case OP_STORE: case OP_FOR: case OP_YIELD: h->kind = H_NONE; continue;
      case OP_CARRY: set_smem(h, in->ty.dt, R, C); h->nbufs = 2; continue;
      case OP_FORRES: h->kind = H_SMEM; continue; /* aliases the carry, set after the scan */
      default: break;
    }
    if (kind == OK_DOT || kind == OK_SOLVE || kind == OK_DECAY || kind == OK_DECAY_MM || kind == OK_SCAN ||
        kind == OK_REDUCE) {
      set_smem(h, in->ty.dt, R, C);
      continue;
    }
    if (in->ty.rank == 0) {
      h->kind = H_SCALAR;
      continue;
    }
    /* An elementwise value, a load, a layout change or a mask. Stored when
     * it has several uses, unless recomputing it is cheap; a vector (rank 1)
     * is stored when it is costly, since a tile that broadcasts it would
     * recompute it for every element. */
    h->kind = H_FUSED;
    if (in->nuses > 1 && !cheap_tree(L, in, 0)) {
      /* a cheap op over a load (say, a conversion): store the load instead, it is smaller */
      int only_loads = op_is_cheap(in->op);
      for (int j = 0; j < in->nargs && only_loads; j++) {
        const CirInst *o = in->args[j];
        const Home *oh = home_of(L, o);
        only_loads = o->ty.rank == 0 || oh->kind == H_SMEM || oh->kind == H_SCALAR ||
                     (o->op == OP_LOAD && oh->kind == H_FUSED) || (oh->kind == H_FUSED && cheap_tree(L, o, 1));
      }
      if (only_loads) {
        for (int j = 0; j < in->nargs; j++) {
          const CirInst *o = in->args[j];
          Home *oh = home_of(L, o);
          if (o->op == OP_LOAD && oh->kind == H_FUSED) set_smem(oh, o->ty.dt, rows_of(o->ty), cols_of(o->ty));
        }
      } else {
        h->kind = H_SMEM;
      }
    }
    /* one special function over a stored tile is recomputed rather than stored twice over */
    if (h->kind == H_SMEM && in->nuses == 2 && (in->op == OP_EXP || in->op == OP_EXP2) &&
        home_of(L, in->args[0])->kind == H_SMEM)
      h->kind = H_FUSED;
    if (in->ty.rank == 1 && expensive_tree(L, in)) h->kind = H_SMEM;
    /* evaluating a fused value recurses through its fused operands: a long
     * chain is stored part way, which bounds that recursion (and the stack) */
    if (h->kind == H_FUSED) {
      for (int j = 0; j < in->nargs; j++) {
        const Home *oh = home_of(L, in->args[j]);
        if (oh->kind == H_FUSED && oh->fused_depth >= h->fused_depth) h->fused_depth = oh->fused_depth + 1;
      }
      if (h->fused_depth >= MAX_FUSED_DEPTH) h->kind = H_SMEM;
    }
    if (h->kind == H_SMEM) set_smem(h, in->ty.dt, R, C);
  }
}

/* A use of `v` at position p: extend the live range of v and, when v is fused
 * (recomputed at p), of everything it reads. */
static void extend(LK *L, const CirInst *v, int p) {
  Home *h = home_of(L, v);
  if (p > h->end) h->end = p;
  if (h->kind == H_FUSED || (h->kind == H_SCALAR && v->op == OP_PICK)) {
    for (int j = 0; j < v->nargs; j++) extend(L, v->args[j], p);
    for (int j = 0; j < CIR_MAX_TENSOR_RANK; j++)
      if (v->index[j].v) extend(L, v->index[j].v, p);
  }
}

static void live_ranges(Plan *P, const CirBlock *b, int loop_end) {
  LK *L = P->L;
  for (int i = 0; i < b->len; i++) {
    const CirInst *in = b->insts[i];
    Home *h = home_of(L, in);
    h->start = h->end = L->pos[in->id];
    if (in->body) live_ranges(P, in->body, block_end(L, in->body));
  }
  for (int i = 0; i < b->len; i++) {
    const CirInst *in = b->insts[i];
    int p = L->pos[in->id];
    const Home *ih = home_of(L, in);
    if (ih->summed_into) p = L->pos[ih->summed_into->id]; /* its operands are read there */
    for (int j = 0; j < in->nargs; j++) {
      const CirInst *a = in->args[j];
      /* a value read inside a scan but defined outside stays live to the scan's end */
      int q = home_of(L, a)->depth < home_of(L, in)->depth ? loop_end : p;
      extend(L, a, q);
    }
    if (in->op == OP_FOR) {
      /* the carry buffers live from the initial copy to the scan's end and
       * on through the last use of the scan's results; prefetched loads
       * and the carries' shadows (plan_shadow) live through the whole scan */
      int end = block_end(L, in->body);
      for (int j = 0; j < in->body->len; j++) {
        const CirInst *c = in->body->insts[j];
        Home *ch = home_of(L, c);
        if (ch->async_mode == ASYNC_PREFETCH) ch->refill_after = ch->end; /* its last read */
        if (c->op == OP_CARRY || ch->async_mode == ASYNC_PREFETCH || ch->shadow) {
          ch->start = p;
          if (end > ch->end) ch->end = end;
        }
      }
    }
    if (home_of(L, in)->async_mode == ASYNC_HOIST) home_of(L, in)->start = 0;
    /* a value a matmul's epilogue writes is written while the matmul runs:
     * some warps store their tiles while others still read the operands and
     * the staged copies, so it must not share their memory */
    Home *eh = home_of(L, in);
    if (eh->kind == H_SMEM && eh->epilogue && cake_ops[eh->epilogue->op].kind == OK_DOT) {
      int q = L->pos[eh->epilogue->id];
      if (q < eh->start) eh->start = q;
    }
  }
  /* a decay_dot computed in an earlier one's pass is written there */
  for (int i = 0; i < b->len; i++) {
    Home *ph = home_of(L, b->insts[i]);
    if (ph->pair_of && L->pos[ph->pair_of->id] < ph->start) ph->start = L->pos[ph->pair_of->id];
  }
  /* A scan's result is its carry's buffer (it has none of its own): the
   * carry stays live through the result's last read. */
  for (int i = 0; i < b->len; i++) {
    const CirInst *r = b->insts[i];
    if (r->op != OP_FORRES) continue;
    const CirBlock *body = r->parent->body;
    for (int j = 0; j < body->len; j++) {
      const CirInst *c = body->insts[j];
      Home *ch = home_of(L, c);
      if (c->op == OP_CARRY && c->axis == r->axis && home_of(L, r)->end > ch->end) ch->end = home_of(L, r)->end;
    }
  }
}

typedef struct Buf1 {
  int start, end, size; /* size: one tile's bytes, < 2^31 since a tile has at most CAKE_MAX_TILE_ELEMS elements */
  long long off;        /* the sum of many sizes: 64 bits */
  int *out; /* where to write the offset */
  int id;   /* the instruction it belongs to (for CAKE_TRACE_PLAN) */
} Buf1;

/* Orders for first fit: by start (the program's own order), or largest and
 * longest-lived first. Ties are broken by the original index, so every run
 * gives the same plan. */
static int cmp_start(const void *x, const void *y) {
  const Buf1 *a = x, *b = y;
  if (a->start != b->start) return a->start - b->start;
  if (a->size != b->size) return b->size - a->size;
  return (a->off > b->off) - (a->off < b->off);
}

static int cmp_size(const void *x, const void *y) {
  const Buf1 *a = x, *b = y;
  if (a->size != b->size) return b->size - a->size;
  if (a->end - a->start != b->end - b->start) return (b->end - b->start) - (a->end - a->start);
  if (a->start != b->start) return a->start - b->start;
  return (a->off > b->off) - (a->off < b->off);
}

static void add_buf(Buf1 **v, int *n, int *cap, int start, int end, int size, int *out) {
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 64;
    *v = cake_xrealloc(*v, sizeof(Buf1) * (size_t)*cap);
  }
  (*v)[(*n)++] = (Buf1){start, end, (size + 127) & ~127, 0, out, -1};
}

static void stage_bufs(LK *L, const CirInst *in, Buf1 **v, int *n, int *cap) {
  Home *h = home_of(L, in);
  int p = L->pos[in->id];
  if (h->summed_into) p = L->pos[h->summed_into->id]; /* staged there */
  OpKind kind = cake_ops[in->op].kind;
  if (kind == OK_DOT) {
    for (int j = 0; j < 2; j++) {
      int trans;
      const CirInst *src = operand_source(in->args[j], &trans);
      if (!operand_needs_stage(L, src)) continue;
      h->stage_dt[j] = in->args[j]->ty.dt;
      h->stage_stride[j] = storage_stride(h->stage_dt[j], cols_of(src->ty));
      add_buf(v, n, cap, p, p, rows_of(src->ty) * h->stage_stride[j] * 2, &h->stage_off[j]);
    }
  } else if (kind == OK_DECAY_MM) { /* operands read at random places: f32 copies unless cheap or stored */
    int blocked = decay_mm_blocked(L, in);
    for (int j = 0; j < in->nargs; j++) {
      if (blocked && j == 1) continue; /* the blocked form reads x once per element, where it lives */
      if (!needs_f32_stage(L, in->args[j])) continue;
      h->stage_dt[j] = DT_F32;
      h->stage_stride[j] = storage_stride(DT_F32, cols_of(in->args[j]->ty));
      add_buf(v, n, cap, p, p, rows_of(in->args[j]->ty) * h->stage_stride[j] * 4, &h->stage_off[j]);
    }
    int C = in->ty.shape[0], K = in->ty.shape[1];
    if (blocked && C > 16) {
      /* bf16 hi and lo halves (bf16x3 products, lower_decay_grad.c), each
       * [C - 16] rows: m's off-diagonal part (rows 16 .., columns .. C - 17),
       * m' [C - 16][C - 16] hi then lo; x' [C - 16][K] hi then lo, then
       * step f32 [C / 16 - 1][K] */
      h->stage_dt[3] = h->stage_dt[4] = DT_BF16;
      h->stage_stride[3] = storage_stride(DT_BF16, C - 16);
      h->stage_stride[4] = storage_stride(DT_BF16, K);
      add_buf(v, n, cap, p, p, 2 * (C - 16) * h->stage_stride[3] * 2, &h->stage_off[3]);
      add_buf(v, n, cap, p, p, 2 * (C - 16) * h->stage_stride[4] * 2 + (C / 16 - 1) * K * 4, &h->stage_off[4]);
    }
  } else if (kind == OK_DECAY && h->pair_of) {
    /* computed in the pass of h->pair_of, with that one's staging */
  } else if (kind == OK_SOLVE || kind == OK_DECAY) {
    for (int j = 0; j < in->nargs; j++) {
      if (!needs_f32_stage(L, in->args[j])) continue;
      if (j == 1 && kind == OK_DECAY && in->args[1] == in->args[0]) continue; /* decay_dot(k, k, g): one copy */
      /* decay_dot's products take bf16 operands anyway; its log-decay stays f32 */
      h->stage_dt[j] = kind == OK_DECAY && j < 2 ? DT_BF16 : DT_F32;
      h->stage_stride[j] = storage_stride(h->stage_dt[j], cols_of(in->args[j]->ty));
      add_buf(v, n, cap, p, p, rows_of(in->args[j]->ty) * h->stage_stride[j] * dtype_bytes(h->stage_dt[j]),
              &h->stage_off[j]);
    }
    if (kind == OK_SOLVE) { /* X, the partial products of the widest merge level: f32 */
      int xr, xc;
      solve_x_shape(in->ty.shape[0], &xr, &xc);
      h->stage_dt[1] = DT_F32;
      h->stage_stride[1] = storage_stride(DT_F32, xc);
      if (xr) add_buf(v, n, cap, p, p, xr * h->stage_stride[1] * 4, &h->stage_off[1]);
    } else { /* b' (the rows of every block but the last), bf16; a' lives in registers */
      int C = in->ty.shape[0], K = in->args[0]->ty.shape[1];
      h->stage_dt[4] = DT_BF16;
      h->stage_stride[4] = storage_stride(DT_BF16, K);
      if (C > 16) add_buf(v, n, cap, p, p, decay_bprime_rows(C) * h->stage_stride[4] * 2, &h->stage_off[4]);
    }
  }
}

static void collect_bufs(LK *L, const CirBlock *b, Buf1 **v, int *n, int *cap) {
  for (int i = 0; i < b->len; i++) {
    const CirInst *in = b->insts[i];
    Home *h = home_of(L, in);
    int n0 = *n;
    if (h->kind == H_SMEM && in->op != OP_FORRES)
      add_buf(v, n, cap, h->start, h->end, h->bytes * h->nbufs, &h->offset);
    stage_bufs(L, in, v, n, cap);
    for (int k = n0; k < *n; k++) (*v)[k].id = in->id;
    if (in->body) collect_bufs(L, in->body, v, n, cap);
  }
}

/* First fit over live ranges in the given order; a buffer is reused only
 * after its last reader. Returns the bytes used (64 bits: a plan far over
 * the limit must still compare as over it). */
static long long first_fit(Buf1 *v, int n) {
  long long top = 0;
  for (int i = 0; i < n; i++) {
    long long off = 0;
    for (int again = 1; again;) {
      again = 0;
      for (int j = 0; j < i; j++) {
        Buf1 *o = &v[j];
        int overlap_time = !(o->end < v[i].start || v[i].end < o->start);
        int overlap_mem = off < o->off + o->size && o->off < off + v[i].size;
        if (overlap_time && overlap_mem) {
          off = o->off + o->size;
          again = 1;
        }
      }
    }
    v[i].off = off;
    if (off + v[i].size > top) top = off + v[i].size;
  }
  return top;
}

/* Both orders are tried; the smaller plan wins. Offsets are written only
 * when the plan fits in `limit` bytes (the caller reports it otherwise). */
static long long allocate(Buf1 *v, int n, long long limit) {
  if (n == 0) return 0;
  Buf1 *w = cake_xmalloc(sizeof(Buf1) * (size_t)n);
  for (int i = 0; i < n; i++) v[i].off = i;
  memcpy(w, v, sizeof(Buf1) * (size_t)n);
  qsort(v, (size_t)n, sizeof *v, cmp_start);
  qsort(w, (size_t)n, sizeof *w, cmp_size);
  long long a = first_fit(v, n), b = first_fit(w, n);
  if (b < a) memcpy(v, w, sizeof(Buf1) * (size_t)n);
  if ((a < b ? a : b) <= limit)
    for (int i = 0; i < n; i++) *v[i].out = (int)v[i].off;
  free(w);
  return a < b ? a : b;
}

/* Second thoughts on homes, once every value has one:
 * - a reduction or scan walks its operand sequentially, one line per thread:
 *   an operand that costs a load or a special function is stored first;
 * - a bf16 load feeding a matmul is stored as it is, so the matmul reads it
 *   in place (and it can be copied asynchronously);
 * - loads that cp.async can copy are hoisted to the kernel's start, or, in a
 *   scan, prefetched one chunk ahead (double-buffered). */
static void count_operand_uses(LK *L, const CirBlock *b, int *uses) {
  for (int i = 0; i < b->len; i++) {
    const CirInst *in = b->insts[i];
    if (in->body) count_operand_uses(L, in->body, uses);
    if (cake_ops[in->op].kind != OK_DOT) continue;
    for (int j = 0; j < 2; j++) {
      int trans;
      uses[operand_source(in->args[j], &trans)->id]++;
    }
  }
}

/* The one producer (a matmul, or a decay_dot: `op`) a store's value depends
 * on through single-use elementwise steps of the same shape, or NULL. Every
 * other leaf must come before it. */
static const CirInst *epilogue_source(LK *L, const CirInst *v, const CirType *shape, int *count, CirOp op) {
  if (v->op == op) {
    if (v->nuses != 1 || v->ty.rank != 2 || v->ty.shape[0] != shape->shape[0] || v->ty.shape[1] != shape->shape[1])
      return NULL;
    ++*count;
    return v;
  }
  Home *h = home_of(L, v);
  if (h->kind != H_FUSED || !op_is_elementwise(v->op) || v->nuses != 1) return NULL;
  const CirInst *found = NULL;
  for (int j = 0; j < v->nargs; j++) {
    const CirInst *m = epilogue_source(L, v->args[j], shape, count, op);
    if (m && (!found || L->pos[m->id] > L->pos[found->id])) found = m;
  }
  return found;
}

/* Are v's index values (a load's or a store's) placed before mm? */
static int indices_before(LK *L, const CirInst *v, const CirInst *mm) {
  for (int j = 0; j < CIR_MAX_TENSOR_RANK; j++)
    if (v->index[j].v && L->pos[v->index[j].v->id] >= L->pos[mm->id]) return 0;
  return 1;
}

/* Is every leaf of v (through fused values, and with `scalars` through
 * scalars too: those are recomputed where they are read until their own
 * place) placed before mm, `skip` aside? */
static int defined_before(LK *L, const CirInst *v, const CirInst *mm, const CirInst *skip, int scalars) {
  if (v == skip) return 1;
  HomeKind k = home_of(L, v)->kind;
  if (k != H_FUSED && !(scalars && k == H_SCALAR)) return L->pos[v->id] < L->pos[mm->id];
  for (int j = 0; j < v->nargs; j++)
    if (!defined_before(L, v->args[j], mm, skip, scalars)) return 0;
  if (!scalars) return indices_before(L, v, mm);
  for (int j = 0; j < CIR_MAX_TENSOR_RANK; j++)
    if (v->index[j].v && !defined_before(L, v->index[j].v, mm, skip, 1)) return 0;
  return 1;
}

/* The producer `op` a value `root` (evaluated as a whole, like a store's value or a
 * yielded carry) can be written from, if any: see epilogue_source. */
static const CirInst *epilogue_of_tree(LK *L, const CirInst *root, const CirType *shape, int as_value, CirOp op) {
  int count = 0;
  const CirInst *mm = NULL;
  if (as_value) { /* root is materialised itself: look at its operands */
    for (int j = 0; j < root->nargs; j++) {
      const CirInst *m = epilogue_source(L, root->args[j], shape, &count, op);
      if (m && (!mm || L->pos[m->id] > L->pos[mm->id])) mm = m;
    }
  } else {
    mm = epilogue_source(L, root, shape, &count, op);
  }
  if (!mm) return NULL;
  if (as_value) {
    for (int j = 0; j < root->nargs; j++)
      if (!defined_before(L, root->args[j], mm, mm, 0)) return NULL;
  } else if (!defined_before(L, root, mm, mm, 0)) {
    return NULL;
  }
  return mm;
}

/* In the fused tree of `v`, an `a + b` of mm and another matmul of mm's
 * shape that is used only there: its products can go into mm's
 * accumulators. Returns the `+`; *other is the other matmul. */
static const CirInst *find_sum(LK *L, const CirInst *v, const CirInst *mm, const CirInst **other) {
  if (home_of(L, v)->kind != H_FUSED && v != mm) return NULL;
  if (v->op == OP_ADD && v->nargs == 2) {
    for (int k = 0; k < 2; k++) {
      const CirInst *x = v->args[k], *y = v->args[1 - k];
      if (x == mm && y->op == OP_MATMUL && y->nuses == 1 && home_of(L, y)->kind == H_SMEM &&
          home_of(L, y)->depth == home_of(L, mm)->depth && y->ty.shape[0] == mm->ty.shape[0] &&
          y->ty.shape[1] == mm->ty.shape[1] && v->ty.rank == 2 && v->ty.shape[0] == mm->ty.shape[0] &&
          v->ty.shape[1] == mm->ty.shape[1]) {
        *other = y;
        return v;
      }
    }
  }
  for (int j = 0; j < v->nargs; j++) {
    const CirInst *r = find_sum(L, v->args[j], mm, other);
    if (r) return r;
  }
  return NULL;
}

static void set_epilogue(LK *L, const CirInst *mm, const CirInst *target, const CirInst *carry) {
  Home *mh = home_of(L, mm);
  mh->epilogue = target;
  mh->epilogue_carry = carry;
  mh->kind = H_NONE;
  home_of(L, target)->epilogue = mm;
  const CirInst *other = NULL;
  const CirInst *root = target->op == OP_STORE ? target->args[0] : target;
  const CirInst *sum = NULL;
  if (root == target && target->op != OP_STORE && home_of(L, target)->kind == H_SMEM) {
    for (int j = 0; j < target->nargs && !sum; j++) sum = find_sum(L, target->args[j], mm, &other);
  } else {
    sum = find_sum(L, root, mm, &other);
  }
  if (sum) {
    mh->sum_with = other;
    mh->sum_node = sum;
    Home *oh = home_of(L, other);
    oh->kind = H_NONE;
    oh->summed_into = mm;
  }
}

/* Is v read by the matmul mm or by what the scan body runs after it
 * (`except` aside)? A matmul summed into a later one (find_sum) runs with
 * that one: matmul_reads of the later one covers it wherever it stands. */
static int read_from(LK *L, const CirBlock *body, const CirInst *mm, const CirInst *v, const CirInst *except) {
  if (matmul_reads(L, mm, v)) return 1;
  for (int j = 0; j < body->len; j++) {
    const CirInst *u = body->insts[j];
    const Home *uh = home_of(L, u);
    /* fused values are read where their consumers are; those are checked */
    if (L->pos[u->id] <= L->pos[mm->id] || u == except || uh->kind == H_FUSED || uh->summed_into) continue;
    if (u->op == OP_MATMUL && matmul_reads(L, u, v)) return 1;
    for (int a = 0; a < u->nargs; a++)
      if (fused_reads(L, u->args[a], v)) return 1;
  }
  return 0;
}

/* A scan whose carry c is written in place by the epilogue of matmul mm,
 * and whose body begins with a cast of c (`Sb = S as bf16`, the state as a
 * matmul operand): the epilogue writes the cast of the new value as well
 * (and the cast of the initial value is made before the loop), which takes
 * a pass over the tile and a barrier off the step's chain. Bitwise the same
 * values. Only when nothing at or after mm reads the cast (the next step's
 * readers come after the loop's barriers) and the carry is held unrounded. */
static void plan_shadow(LK *L, const CirInst *f, const CirInst *mm, const CirInst *c) {
  const CirBlock *body = f->body;
  Home *ch = home_of(L, c);
  if (ch->sdt != c->ty.dt) return;
  for (int i = 0; i < body->len; i++) {
    const CirInst *x = body->insts[i];
    Home *xh = home_of(L, x);
    if (cake_ops[x->op].kind != OK_CAST || x->args[0] != c || xh->kind != H_SMEM || xh->async_mode != ASYNC_NONE ||
        xh->epilogue || x->ty.rank != 2 || L->pos[x->id] > L->pos[mm->id])
      continue;
    if (read_from(L, body, mm, x, NULL)) continue; /* (mm and the yield too) */
    home_of(L, mm)->epilogue_shadow = x;
    xh->shadow = 1;
    return;
  }
}

/* Matmuls whose result is only consumed elementwise by one store, one
 * stored value or one carried value write that consumer straight from their
 * accumulators: no f32 tile, no extra pass, no extra barrier. Only inside
 * scans over chunks, where latency rules; elsewhere (counted loops too) the
 * registers it needs cost occupancy. With several matmuls in the value, the last one does it and
 * the others are read from shared memory. */
static void plan_epilogues(LK *L, const CirBlock *b) {
  for (int i = 0; i < b->len; i++) {
    const CirInst *in = b->insts[i];
    if (in->body) plan_epilogues(L, in->body);
    Home *h = home_of(L, in);
    if (!home_in_scan(h)) continue;
    if (in->op == OP_STORE) {
      if (in->ty.rank != 2 || in->tensor->optional) continue;
      const CirInst *mm = epilogue_of_tree(L, in->args[0], &in->ty, 0, OP_MATMUL);
      if (mm && indices_before(L, in, mm)) set_epilogue(L, mm, in, NULL);
    } else if (h->kind == H_SMEM && h->async_mode == ASYNC_NONE && op_is_elementwise(in->op) && in->ty.rank == 2 &&
               cake_ops[in->op].kind != OK_MASK) {
      const CirInst *mm = epilogue_of_tree(L, in, &in->ty, 1, OP_MATMUL);
      if (mm) set_epilogue(L, mm, in, NULL);
    } else if (in->op == OP_YIELD) {
      const CirInst *f = in->parent;
      for (int k = 0; k < in->nargs; k++) {
        const CirInst *c = NULL;
        for (int j = 0; j < f->body->len; j++)
          if (f->body->insts[j]->op == OP_CARRY && f->body->insts[j]->axis == k) c = f->body->insts[j];
        const CirInst *y = in->args[k];
        if (!c || home_of(L, c)->nbufs != 1 || y->ty.rank != 2 || home_of(L, y)->kind != H_FUSED) continue;
        const CirInst *mm = epilogue_of_tree(L, y, &y->ty, 0, OP_MATMUL);
        if (!mm || home_of(L, mm)->epilogue) continue;
        /* writing the carry early: nothing after the matmul may read it, but
         * the yield, and neither may the matmul itself (its warps would
         * overwrite an operand that others still read) */
        if (!read_from(L, f->body, mm, c, in)) {
          set_epilogue(L, mm, y, c);
          plan_shadow(L, f, mm, c);
        }
      }
    }
  }
}


/* Two decay_dots of the same b and g in the kernel body, the first one only
 * stored (through elementwise steps, as `store pq = (decay_dot(q, k, g) *
 * scale) as bf16`): one pass computes both (lower_decay.c), sharing b's
 * staging, the off-diagonal fragments' decays and the diagonal blocks'
 * exponentials and loads. The first is written straight to its store (no
 * tile of its own), the second to its tile, live from the first's place.
 * Only where neither needs a staged copy of an operand, and the second's
 * operands are all there at the first's place. */
static int plan_decay_pairs(LK *L) {
  const CirBlock *b = &L->k->body;
  int npairs = 0;
  for (int i = 0; i < b->len; i++) {
    const CirInst *d1 = b->insts[i];
    Home *h1 = home_of(L, d1);
    if (d1->op != OP_DECAY_DOT || h1->kind != H_SMEM || h1->epilogue || h1->pair_of || h1->pair_with) continue;
    const CirInst *st = NULL, *d2 = NULL;
    /* the store, written at d1's place: nothing between may read or write
     * its tensor, or hold a loop */
    for (int j = i + 1; j < b->len && !st; j++) {
      const CirInst *u = b->insts[j];
      if (u->body) break;
      if (u->op != OP_STORE || u->ty.rank != 2 || u->tensor->optional || home_of(L, u)->epilogue) continue;
      int count = 0;
      if (epilogue_source(L, u->args[0], &u->ty, &count, OP_DECAY_DOT) != d1 ||
          !defined_before(L, u->args[0], d1, d1, 1))
        continue;
      int ok = indices_before(L, u, d1);
      for (int k = i + 1; ok && k < j; k++)
        if ((b->insts[k]->op == OP_LOAD || b->insts[k]->op == OP_STORE) && b->insts[k]->tensor == u->tensor) ok = 0;
      if (ok) st = u;
    }
    for (int j = i + 1; j < b->len && st && !d2; j++) {
      const CirInst *u = b->insts[j];
      Home *uh = home_of(L, u);
      if (u->op != OP_DECAY_DOT || uh->kind != H_SMEM || uh->epilogue || uh->pair_of || uh->pair_with ||
          u->args[1] != d1->args[1] ||
          u->args[2] != d1->args[2] || u->ty.shape[0] != d1->ty.shape[0] || u->ty.shape[1] != d1->ty.shape[1] ||
          u->args[0]->ty.shape[1] != d1->args[0]->ty.shape[1])
        continue;
      int ok = defined_before(L, u->args[0], d1, d1, 1);
      for (int k = 0; ok && k < 3; k++) ok = !needs_f32_stage(L, d1->args[k]) && !needs_f32_stage(L, u->args[k]);
      if (ok) d2 = u;
    }
    if (!d2) continue;
    h1->epilogue = st;
    h1->kind = H_NONE;
    home_of(L, st)->epilogue = d1;
    h1->pair_with = d2;
    home_of(L, d2)->pair_of = d1;
    npairs++;
  }
  return npairs;
}

/* Back to one pass per decay_dot (the pairs' plan did not fit as well). */
static void undo_decay_pairs(LK *L) {
  const CirBlock *b = &L->k->body;
  for (int i = 0; i < b->len; i++) {
    Home *h = home_of(L, b->insts[i]);
    if (!h->pair_with) continue;
    home_of(L, h->epilogue)->epilogue = NULL;
    h->epilogue = NULL;
    h->kind = H_SMEM;
    home_of(L, h->pair_with)->pair_of = NULL;
    h->pair_with = NULL;
  }
}

/* Does the fused value v read `carry` only at the element it is evaluated
 * at? Then a scan can write v over the carry in place. */
static int reads_in_place(LK *L, const CirInst *v, const CirInst *carry) {
  if (v == carry) return 1;
  const Home *h = home_of(L, v);
  if (h->kind != H_FUSED) return 1; /* stored elsewhere, or a register: no read of the carry now */
  if (!op_is_elementwise(v->op) || cake_ops[v->op].kind == OK_MASK) {
    /* a load or a layout change: fine unless it reads the carry (through fused values) */
    for (int j = 0; j < v->nargs; j++)
      if (fused_reads(L, v->args[j], carry)) return 0;
    return 1;
  }
  for (int j = 0; j < v->nargs; j++) {
    const CirInst *a = v->args[j];
    if (a == carry && (a->ty.rank != v->ty.rank || a->ty.shape[0] != v->ty.shape[0] || a->ty.shape[1] != v->ty.shape[1]))
      return 0; /* broadcast: other elements read */
    if (!reads_in_place(L, a, carry)) return 0;
  }
  return 1;
}

static void plan_in_place_carries(LK *L, const CirBlock *b) {
  for (int i = 0; i < b->len; i++) {
    const CirInst *f = b->insts[i];
    if (f->op != OP_FOR) continue;
    const CirInst *y = f->body->insts[f->body->len - 1];
    for (int j = 0; j < f->body->len; j++) {
      const CirInst *c = f->body->insts[j];
      if (c->op != OP_CARRY) continue;
      /* A scalar carry lives at one fixed shared address: the compiler below
       * may hoist its read out of the one thread that updates it, so every
       * thread reads it and the in-place write would race with those reads.
       * It keeps two buffers. */
      if (c->ty.rank == 0) continue;
      /* every yield value must be in place with respect to this carry (they are written one after another) */
      int ok = 1;
      for (int k = 0; k < y->nargs; k++) ok &= reads_in_place(L, y->args[k], c) && y->args[k] != c;
      if (ok) home_of(L, c)->nbufs = 1;
    }
  }
}

static void refine_homes(LK *L, const CirBlock *b) {
  if (b == &L->k->body) {
    /* a value feeding several matmuls is staged once, in its own home */
    int *uses = cake_xcalloc((size_t)L->nids + 1, sizeof(int));
    count_operand_uses(L, b, uses);
    for (int id = 0; id < L->nids; id++) {
      Home *h = &L->homes[id];
      if (uses[id] >= 2 && h->kind == H_FUSED) {
        h->kind = H_SMEM; /* shape filled in below from the instruction */
        h->rows = -1;
      }
    }
    free(uses);
  }
  for (int i = 0; i < b->len; i++) {
    const CirInst *in = b->insts[i];
    Home *hh = home_of(L, in);
    if (hh->kind == H_SMEM && hh->rows == -1) set_smem(hh, in->ty.dt, rows_of(in->ty), cols_of(in->ty));
    if (in->body) refine_homes(L, in->body);
    OpKind kind = cake_ops[in->op].kind;
    if (kind == OK_REDUCE || kind == OK_SCAN) {
      const CirInst *o = in->args[0];
      Home *oh = home_of(L, o);
      if (oh->kind == H_FUSED && expensive_tree(L, o)) set_smem(oh, o->ty.dt, rows_of(o->ty), cols_of(o->ty));
    }
    if (kind == OK_DOT)
      for (int j = 0; j < 2; j++) {
        int trans;
        const CirInst *src = operand_source(in->args[j], &trans);
        Home *sh = home_of(L, src);
        if (src->op == OP_LOAD && sh->kind == H_FUSED && (src->ty.dt == DT_BF16 || src->ty.dt == DT_F16))
          set_smem(sh, src->ty.dt, rows_of(src->ty), cols_of(src->ty));
      }
  }
  for (int i = 0; i < b->len; i++) {
    const CirInst *in = b->insts[i];
    Home *h = home_of(L, in);
    if (in->op != OP_LOAD || !async_candidate(L, in)) continue;
    if (home_in_scan(h)) {
      if (h->kind == H_FUSED) set_smem(h, in->ty.dt, rows_of(in->ty), cols_of(in->ty));
      if (h->kind == H_SMEM) h->async_mode = ASYNC_PREFETCH; /* one buffer, refilled after its last read */
    } else if (h->depth == 1 && h->kind == H_SMEM && !(h->loop && h->loop->before)) {
      /* a counted loop's body is planned like a kernel's: what is stored
       * anyway is copied ahead (for the next step, after its last read) */
      h->async_mode = ASYNC_PREFETCH;
    } else if (h->depth == 0 && h->kind == H_SMEM) {
      h->async_mode = ASYNC_HOIST;
    }
  }
}

/* Developer aid (CAKE_TRACE_PLAN=1): what is live where shared memory
 * peaks, then the whole plan, on stderr. */
static void trace_plan(LK *L, const Plan *P, const Buf1 *bufs, int n) {
  int best = -1;
  long long top = 0;
  for (int t = 0; t < P->next_pos; t++) {
    long long used = 0;
    for (int k = 0; k < n; k++)
      if (bufs[k].start <= t && t <= bufs[k].end && bufs[k].off + bufs[k].size > used) used = bufs[k].off + bufs[k].size;
    if (used > top) top = used, best = t;
  }
  fprintf(stderr, "peak of kernel %s at position %d:", L->k->name, best);
  for (int k = 0; k < n; k++)
    if (bufs[k].start <= best && best <= bufs[k].end) fprintf(stderr, " %%%d:%d", bufs[k].id, bufs[k].size);
  fprintf(stderr, "\n");
  /* the whole plan */
  fprintf(stderr, "plan of kernel %s: %lld bytes of shared memory\n", L->k->name, L->smem_bytes);
  for (int i = 0; i < L->nids; i++) {
    const Home *h = &L->homes[i];
    const CirInst *in = P->all[i];
    if (!in) continue;
    if (h->kind == H_SMEM && in->op != OP_FORRES)
      fprintf(stderr, "  %%%d %-14s %s %4dx%-4d %7d B x%d at %6d live %d..%d  (line %d)\n", i,
              cake_ops[in->op].spelling, dtype_name(h->sdt), h->rows, h->cols, h->bytes, h->nbufs, h->offset, h->start,
              h->end, in->loc.line);
    /* the instruction's own scratch (staged operands), live where it runs */
    for (int k = 0; k < n; k++)
      if (bufs[k].id == i && bufs[k].out != &L->homes[i].offset)
        fprintf(stderr, "  %%%d %-14s %s %17d B x1 at %6d live %d..%d  (line %d)\n", i, "(stage)", "   ", bufs[k].size,
                *bufs[k].out, bufs[k].start, bufs[k].end, in->loc.line);
  }
}

/* Every buffer placed: the plan's bytes (and offsets written to the homes). */
static long long allocate_all(LK *L, const Plan *P, int trace) {
  Buf1 *bufs = NULL;
  int n = 0, cap = 0;
  collect_bufs(L, &L->k->body, &bufs, &n, &cap);
  long long bytes = allocate(bufs, n, L->target->smem_per_block);
  if (trace) {
    L->smem_bytes = bytes;
    trace_plan(L, P, bufs, n);
  }
  free(bufs);
  return bytes;
}

/* Blocks per multiprocessor that `bytes` of shared memory allow (at most
 * two, as lower_kernel asks of ptxas). */
static int blocks_per_sm(const LK *L, long long bytes) {
  if (bytes > L->target->smem_per_block) return 0;
  return 2 * (bytes + L->target->smem_reserved) <= L->target->smem_per_sm ? 2 : 1;
}

int plan_blocks_per_sm(const LK *L) {
  if (L->k->per_sm) return L->k->per_sm;
  return blocks_per_sm(L, L->smem_bytes) == 2 ? 2 : 1;
}

typedef struct Prefetch {
  int refill, pos; /* the body position of its refill (a shadow: INT_MIN); its own position */
  Home *home;
} Prefetch;

static void collect_scan_tiles(LK *L, const CirBlock *b, Prefetch *v, int *n) {
  for (int i = 0; i < b->len; i++) {
    const CirInst *in = b->insts[i];
    Home *h = home_of(L, in);
    if (h->async_mode == ASYNC_PREFETCH) v[(*n)++] = (Prefetch){h->refill_after, L->pos[in->id], h};
    if (h->shadow) v[(*n)++] = (Prefetch){INT_MIN, L->pos[in->id], h}; /* after every prefetch */
    if (in->body) collect_scan_tiles(L, in->body, v, n);
  }
}

/* latest refill first; ties in program order (every run the same) */
static int cmp_refill(const void *x, const void *y) {
  const Prefetch *a = x, *b = y;
  if (a->refill != b->refill) return a->refill > b->refill ? -1 : 1;
  return (a->pos > b->pos) - (a->pos < b->pos);
}

/* A prefetched tile has one buffer, refilled for the next step after its
 * last read: a tile read late in the step gets its copy late, and the next
 * step waits for it. With two buffers the copy for step i + 1 is issued
 * early in step i (into the buffer step i - 1 read: by the step's first
 * matmul, behind its mma, else at the step's end). Tiles get a second
 * buffer latest refill first. Then, when every prefetched tile has two, the
 * carries' casts that their matmuls write (plan_shadow): with one buffer
 * that matmul must wait for every reader of the old cast; with two it
 * writes the buffer the next step reads, and the step's last reader and
 * that matmul need no barrier between them (barrier_free_after in
 * lower_kernel.c; a tile refilled after that reader needs one anyway).
 * Each second buffer is kept while the plan still fits the blocks per
 * multiprocessor it is made for: the kernel's `per_sm`, else two when they
 * fit without it. */
static void double_buffer_scan_tiles(LK *L, const Plan *P) {
  int occ = L->k->per_sm ? L->k->per_sm : blocks_per_sm(L, L->smem_bytes);
  /* a kernel at one block per SM (not asked for) is the large kind whose
   * registers are already at the limit (the extra buffer addresses made the
   * backward's dchain spill): it keeps one buffer per tile */
  if (occ < 2 && !L->k->per_sm) return;
  Prefetch *v = cake_xcalloc((size_t)L->nids + 1, sizeof *v);
  int n = 0;
  collect_scan_tiles(L, &L->k->body, v, &n);
  qsort(v, (size_t)n, sizeof *v, cmp_refill);
  int all = 1;
  for (int i = 0; i < n; i++) {
    if (v[i].home->shadow && !all) continue;
    v[i].home->nbufs = 2;
    if (blocks_per_sm(L, allocate_all(L, P, 0)) < occ) v[i].home->nbufs = 1;
    all &= v[i].home->nbufs == 2;
  }
  free(v);
}

void plan_kernel(LK *L) {
  Plan P = {0};
  P.L = L;
  P.all = cake_xcalloc((size_t)L->nids + 1, sizeof(CirInst *));
  number_block(&P, &L->k->body, 0, NULL);
  choose_homes(L, &L->k->body);
  refine_homes(L, &L->k->body);
  plan_in_place_carries(L, &L->k->body);
  plan_epilogues(L, &L->k->body);
  live_ranges(&P, &L->k->body, 0);
  L->smem_bytes = allocate_all(L, &P, 0);
  if (L->smem_bytes > L->target->smem_per_block) {
    /* decay_mm's blocked form stages bf16 hi/lo operands: over the limit, the
     * element-by-element form (no staging of its own) may still fit */
    L->dmm_elementwise = 1;
    L->smem_bytes = allocate_all(L, &P, 0);
  }
  /* decay_dot pairs hold the second one's tile from the first's place: kept
   * where the plan still fits with as many blocks per SM */
  if (plan_decay_pairs(L)) {
    live_ranges(&P, &L->k->body, 0);
    long long paired = allocate_all(L, &P, 0);
    if (paired > L->target->smem_per_block || blocks_per_sm(L, paired) < blocks_per_sm(L, L->smem_bytes)) {
      undo_decay_pairs(L);
      live_ranges(&P, &L->k->body, 0);
    } else {
      L->smem_bytes = paired;
    }
  }
  /* (over a block's limit: lower_kernel says so) */
  if (L->k->per_sm == 2 && L->smem_bytes <= L->target->smem_per_block && blocks_per_sm(L, L->smem_bytes) < 2) {
    lk_error(L, NULL,
             "kernel '%s' is planned for 2 blocks per multiprocessor (per_sm 2), but its tiles take %lld bytes of "
             "shared memory; two blocks fit at most %d each",
             L->k->name, L->smem_bytes, L->target->smem_per_sm / 2 - L->target->smem_reserved);
    free(P.all);
    return;
  }
  double_buffer_scan_tiles(L, &P);
  L->smem_bytes = allocate_all(L, &P, getenv("CAKE_TRACE_PLAN") != NULL);
  free(P.all);
}


