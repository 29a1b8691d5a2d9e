/* lower_kernel.c - the kernel skeleton: the gpu.module and its kernel, the
 * walk over CIR in program order (planned by lower_plan.c), grid indices,
 * chunk tables, hoisted copies, and scans with their prefetches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower.h"

void lk_set_loc(LK *L, const CirInst *in) {
  if (in->loc.src)
    L->b.loc = mlirLocationFileLineColGet(L->b.ctx, mlirStringRefCreateFromCString(in->loc.src->name),
                                          (unsigned)in->loc.line, (unsigned)in->loc.col);
}

/* ------------------------------------------------------------------ */
/* the walk                                                            */

static MlirValue arg_of(LK *L, ArgWhat what, const void *ptr, int dim) {
  int i = abi_find(L->abi, what, ptr, dim);
  if (i < 0) cake_die("kernel argument %d missing from the ABI", what);
  return L->args[i];
}

/* Load the chunk table row of chunk index `c` (start, end). */
static void load_chunk(LK *L, const CirInst *idx, MlirValue c) {
  Mlb *b = &L->b;
  MlirValue table = arg_of(L, ARG_CHUNK_TABLE, NULL, 0);
  MlirValue c64 = mlb_cast(b, "arith.extsi", c, b->i64);
  MlirValue off = mlb_mul(b, c64, mlb_i64(b, 16));
  MlirValue row = mlb_load_table(b, mlb_vec(b, 4, b->i32), mlb_gep(b, table, off), 16);
  ChunkInfo *ci = &L->chunks[idx->id];
  ci->start = mlb_vextract(b, row, 0);
  ci->end = mlb_vextract(b, row, 1);
  if (L->shifts) {
    ci->doc = mlb_vextract(b, row, 2);
    ci->doc_start = mlb_vextract(b, row, 3);
  }
  if (L->shifts & 2) { /* the document's end: the end of its last chunk (doc_table[doc + 1] - 1) */
    MlirValue dt = arg_of(L, ARG_DOC_TABLE, NULL, 0);
    MlirValue d1 = mlb_cast(b, "arith.extsi", mlb_add(b, ci->doc, mlb_i32(b, 1)), b->i64);
    MlirValue next = mlb_load_table(b, b->i32, mlb_gep(b, dt, mlb_mul(b, d1, mlb_i64(b, 4))), 4);
    MlirValue last = mlb_cast(b, "arith.extsi", mlb_bin(b, "arith.subi", next, mlb_i32(b, 1)), b->i64);
    MlirValue last_off = mlb_mul(b, last, mlb_i64(b, 16));
    MlirValue end_off = mlb_add(b, last_off, mlb_i64(b, 4));
    ci->doc_end = mlb_load_table(b, b->i32, mlb_gep(b, table, end_off), 4);
  }
  ci->set = 1;
}

/* Which way the kernel's shifted windows move rows (LK.shifts). */
static int block_shifts(const CirBlock *blk) {
  int f = 0;
  for (int i = 0; i < blk->len; i++) {
    const CirInst *in = blk->insts[i];
    for (int j = 0; in->tensor && j < in->tensor->rank; j++)
      if (in->index[j].kind == IX_CHUNK && in->index[j].shift) f |= in->index[j].shift < 0 ? 1 : 2;
    if (in->body) f |= block_shifts(in->body);
  }
  return f;
}

static void emit_block(LK *L, const CirBlock *blk);

/* Which prefetched tiles a copy is for: every one (the first step's,
 * before the loop), the double-buffered ones (at the top of a step, for the
 * next), or the single-buffered ones whose last read is at body position
 * `at` (>= 0). */
enum { DUE_ALL = -1, DUE_TOP = -2 };

static int prefetch_is_due(const Home *h, int at) {
  if (h->async_mode != ASYNC_PREFETCH) return 0;
  if (at == DUE_ALL) return 1;
  if (at == DUE_TOP) return h->nbufs == 2;
  return h->nbufs == 1 && h->refill_after == at;
}

static int prefetch_due(LK *L, const CirBlock *body, int at) {
  for (int i = 0; i < body->len; i++)
    if (prefetch_is_due(home_of(L, body->insts[i]), at)) return 1;
  return 0;
}

/* The shared-memory address of a carry's buffer `phase` (0 or 1). */
static MlirValue carry_addr(LK *L, const Home *h, MlirValue phase) {
  Mlb *b = &L->b;
  if (h->nbufs == 1) return mlb_i32(b, h->offset);
  MlirValue off = mlb_i32(b, h->offset);
  return mlb_add(b, off, mlb_mul_c(b, phase, h->bytes));
}

/* Does the scalar v depend on the loop index cv? */
static int depends_on_index(const CirInst *v, const CirInst *cv, int depth) {
  if (v == cv) return 1;
  if (depth > MAX_FUSED_DEPTH) return 1; /* (index trees are small; be safe) */
  for (int j = 0; j < v->nargs; j++)
    if (depends_on_index(v->args[j], cv, depth + 1)) return 1;
  return 0;
}

/* Copy the prefetched tiles of step `chunk` that are due (prefetch_is_due)
 * into their buffers (buffer `which` of a double-buffered tile; null: its
 * first): the loop's index (and, in a scan, the chunk's rows) stand for that
 * step meanwhile, and the body's scalars computed from the index (a window
 * index like `h * G + i`) are computed again from it. */
static void emit_prefetch(LK *L, const CirBlock *body, const CirInst *cv, MlirValue chunk, int at, MlirValue which) {
  Home *ch = home_of(L, cv);
  Home saved_home = *ch;
  ChunkInfo saved = L->chunks[cv->id];
  ch->scalar = chunk;
  ch->emitted = 1;
  if (cv->op == OP_CHUNKVAR) {
    /* (scan_next is scan_ahead wherever a refill is issued: on every step but the last) */
    if (L->scan_next_rows.set && (mlirValueEqual(chunk, L->scan_next) || mlirValueEqual(chunk, L->scan_ahead)))
      L->chunks[cv->id] = L->scan_next_rows;
    else load_chunk(L, cv, chunk);
  }
  int *unemitted = cake_xcalloc((size_t)body->len + 1, sizeof(int));
  for (int i = 0; i < body->len; i++) {
    const CirInst *in = body->insts[i];
    Home *h = home_of(L, in);
    if (in != cv && h->kind == H_SCALAR && h->emitted && depends_on_index(in, cv, 0)) {
      h->emitted = 0;
      unemitted[i] = 1;
    }
  }
  for (int i = 0; i < body->len; i++) {
    const CirInst *in = body->insts[i];
    Home *h = home_of(L, in);
    if (!prefetch_is_due(h, at)) continue;
    lk_set_loc(L, in);
    async_copy(L, in, mlirValueIsNull(which) ? mlb_i32(&L->b, h->offset) : carry_addr(L, h, which));
  }
  for (int i = 0; i < body->len; i++)
    if (unemitted[i]) home_of(L, body->insts[i])->emitted = 1;
  free(unemitted);
  *ch = saved_home;
  L->chunks[cv->id] = saved;
}

/* The scan step's copies for the next step into the second buffers, when
 * still pending (L->behind_mma, or the step's end). */
static void issue_ahead(LK *L) {
  if (!L->behind_mma) return;
  L->behind_mma = NULL;
  MlirLocation at = L->b.loc; /* (the copies carry their loads' lines; what follows, its own) */
  emit_prefetch(L, L->scan_body, L->scan_cv, L->scan_ahead, DUE_TOP, L->scan_other);
  async_commit(L);
  L->b.loc = at;
}

/* After the last read of some prefetched tiles: their next chunk's copy. */
static void emit_refill(LK *L, const CirInst *after, int barrier_done) {
  if (!L->scan_body) return;
  Mlb *b = &L->b;
  int at = L->pos[after->id];
  if (!prefetch_due(L, L->scan_body, at)) return;
  if (!barrier_done) mlb_barrier(b); /* every thread is done reading the buffer */
  MlbIf more;
  mlb_if_begin(b, &more, L->scan_has_next, 0, NULL);
  emit_prefetch(L, L->scan_body, L->scan_cv, L->scan_next, at, (MlirValue){0});
  mlb_if_else(b, &more, 0, NULL);
  mlb_if_end(b, &more, 0, NULL);
  async_commit(L);
}

static void emit_for(LK *L, const CirInst *f) {
  Mlb *b = &L->b;
  MlirValue lo, hi, before_first = {0};
  if (f->counted) { /* i = 0 .. n - 1, none when n <= 0 */
    lo = mlb_i32(b, 0);
    hi = mlb_bin(b, "arith.maxsi", eval_scalar(L, f->args[0]), lo);
  } else if (f->before == 3) { /* ends(): the first and count of its entries at 6 N of the fragment table */
    MlirValue ft = arg_of(L, ARG_FRAG_TABLE, NULL, 0);
    MlirValue at = mlb_mul_c(b, arg_of(L, ARG_DIM, NULL, L->p->docs_dim), 6);
    before_first = mlb_load_table(b, b->i32, mlb_gep(b, ft, mlb_cast(b, "arith.extsi", mlb_mul_c(b, at, 4), b->i64)), 4);
    lo = mlb_i32(b, 0);
    MlirValue at1 = mlb_add_c(b, at, 1);
    hi = mlb_load_table(b, b->i32, mlb_gep(b, ft, mlb_cast(b, "arith.extsi", mlb_mul_c(b, at1, 4), b->i64)), 4);
  } else if (f->before) { /* the fragments before (after) fragment args[0]: from the fragment table */
    MlirValue ft = arg_of(L, ARG_FRAG_TABLE, NULL, 0);
    int col = f->before == 2 ? 4 : 2; /* first, count */
    MlirValue at = mlb_add_c(b, mlb_mul_c(b, eval_scalar(L, f->args[0]), 6), col);
    MlirValue off = mlb_cast(b, "arith.extsi", mlb_mul_c(b, at, 4), b->i64);
    before_first = mlb_load_table(b, b->i32, mlb_gep(b, ft, off), 4);
    lo = mlb_i32(b, 0);
    MlirValue off1 = mlb_cast(b, "arith.extsi", mlb_mul_c(b, mlb_add_c(b, at, 1), 4), b->i64);
    hi = mlb_load_table(b, b->i32, mlb_gep(b, ft, off1), 4);
  } else if (f->all_chunks) { /* every chunk of the sequence: args[0] is the chunk count */
    lo = mlb_i32(b, 0);
    hi = eval_scalar(L, f->args[0]);
  } else { /* one document's chunks, from the document table */
    MlirValue doc = eval_scalar(L, f->args[0]);
    MlirValue dt = arg_of(L, ARG_DOC_TABLE, NULL, 0);
    MlirValue d64 = mlb_cast(b, "arith.extsi", doc, b->i64);
    lo = mlb_load_table(b, b->i32, mlb_gep(b, dt, mlb_mul(b, d64, mlb_i64(b, 4))), 4);
    MlirValue d64_next = mlb_add(b, d64, mlb_i64(b, 1));
    hi = mlb_load_table(b, b->i32, mlb_gep(b, dt, mlb_mul(b, d64_next, mlb_i64(b, 4))), 4);
  }
  const CirBlock *body = f->body;
  /* initial values into buffer 0 of each carry */
  for (int i = 0; i < body->len; i++) {
    const CirInst *c = body->insts[i];
    if (c->op != OP_CARRY) continue;
    Home *h = home_of(L, c);
    materialize_to(L, f->args[c->axis + 1], mlb_i32(b, h->offset), h->sdt, h->stride, 0);
  }
  MlirValue zero = mlb_i32(b, 0), one = mlb_i32(b, 1);
  /* the carries' shadows (plan_shadow) of the initial values, once those
   * (written by other threads) are all in place */
  for (int i = 0, synced = 0; i < body->len; i++) {
    const CirInst *x = body->insts[i];
    Home *xh = home_of(L, x);
    if (!xh->shadow) continue;
    if (!synced++) mlb_barrier(b);
    Home *ch = home_of(L, x->args[0]);
    ch->dyn = carry_addr(L, ch, zero);
    materialize_to(L, x, mlb_i32(b, xh->offset), xh->sdt, xh->stride, 1);
    ch->dyn = (MlirValue){0};
  }
  MlirValue count = mlb_bin(b, "arith.subi", hi, lo);
  const CirInst *cv = NULL;
  for (int i = 0; i < body->len; i++)
    if (body->insts[i]->op == OP_CHUNKVAR || body->insts[i]->op == OP_LOOPVAR) cv = body->insts[i];
  int prefetch = prefetch_due(L, body, DUE_ALL);
  /* the first chunk's prefetched tiles go to buffer 0 before the loop */
  if (prefetch) {
    MlirValue first = f->reverse ? mlb_bin(b, "arith.subi", hi, one) : lo;
    MlbIf any;
    mlb_if_begin(b, &any, mlb_cmpi(b, "sgt", count, zero), 0, NULL);
    emit_prefetch(L, body, cv, first, DUE_ALL, (MlirValue){0});
    mlb_if_else(b, &any, 0, NULL);
    mlb_if_end(b, &any, 0, NULL);
    async_commit(L);
  }
  mlb_barrier(b);
  MlbFor loop;
  MlirValue phase0 = zero;
  /* The carry's dependency chain from chunk to chunk is the scan's critical
   * path, and an fma waits for its addend (often a matmul's result) where a
   * separate multiply is issued ahead of it: no contraction in the body
   * (measured: the KDA chain at vblock 32 ran 3% slower with it). */
  b->no_contract++;
  mlb_for_begin(b, &loop, zero, count, one, 1, &phase0);
  MlirValue step = loop.iv, phase = loop.iter[0];
  MlirValue chunk = f->reverse ? mlb_bin(b, "arith.subi", mlb_bin(b, "arith.subi", hi, one), step)
                               : mlb_add(b, lo, step);
  MlirValue other = mlb_bin(b, "arith.subi", one, phase);
  int ahead_copies = 0;
  if (prefetch) {
    /* this chunk's tiles have landed; the next chunk's are issued as their
     * buffers are read for the last time (emit_refill) */
    L->scan_body = body;
    L->scan_cv = cv;
    L->scan_next = f->reverse ? mlb_bin(b, "arith.subi", chunk, one) : mlb_add(b, chunk, one);
    L->scan_has_next = mlb_cmpi(b, "slt", mlb_add(b, step, one), count);
    if (cv && cv->op == OP_CHUNKVAR) {
      /* the next chunk's rows, read once for all of its copies and before
       * the wait so that the read's latency hides behind it (the last step
       * reads its own row: a row that exists) */
      ChunkInfo saved = L->chunks[cv->id];
      L->scan_ahead = mlb_select(b, L->scan_has_next, L->scan_next, chunk);
      load_chunk(L, cv, L->scan_ahead);
      L->scan_next_rows = L->chunks[cv->id];
      L->chunks[cv->id] = saved;
    }
    async_wait(L, 0);
    mlb_barrier(b);
    /* double-buffered tiles: this step reads buffer `phase`; the next
     * step's copy goes to the other, read last by the previous step */
    for (int i = 0; i < body->len; i++) {
      Home *h = home_of(L, body->insts[i]);
      if (prefetch_is_due(h, DUE_TOP)) h->dyn = carry_addr(L, h, phase);
    }
    if (prefetch_due(L, body, DUE_TOP) && cv && cv->op == OP_CHUNKVAR) {
      /* The copies into the second buffers: left to the step's first
       * matmul, which issues them behind its mma (the step's critical path
       * until then), or else to the end of the step. Every step issues
       * them, the last one copying its own chunk again into buffers no
       * step reads any more (waited for after the loop): no branch, so
       * ptxas may place them among the mma */
      L->scan_other = other;
      L->behind_mma = issue_ahead;
      ahead_copies = 1;
    } else if (prefetch_due(L, body, DUE_TOP)) {
      MlbIf more;
      mlb_if_begin(b, &more, L->scan_has_next, 0, NULL);
      emit_prefetch(L, body, cv, L->scan_next, DUE_TOP, other);
      mlb_if_else(b, &more, 0, NULL);
      mlb_if_end(b, &more, 0, NULL);
      async_commit(L);
    }
  }
  const CirInst *yield = NULL;
  for (int i = 0; i < body->len; i++) {
    const CirInst *c = body->insts[i];
    Home *h = home_of(L, c);
    if (c->op == OP_LOOPVAR && f->before) {
      /* entry `first + step` of the table's pairs, from 6 N + 2: its rank, its fragment */
      MlirValue ft = arg_of(L, ARG_FRAG_TABLE, NULL, 0);
      MlirValue N = arg_of(L, ARG_DIM, NULL, L->p->docs_dim);
      MlirValue base = mlb_add_c(b, mlb_mul_c(b, N, 6), 2);
      MlirValue entry = mlb_mul_c(b, mlb_add(b, before_first, chunk), 2);
      MlirValue at = mlb_add_c(b, mlb_add(b, base, entry), c->axis);
      MlirValue off = mlb_cast(b, "arith.extsi", mlb_mul_c(b, at, 4), b->i64);
      h->scalar = mlb_load_table(b, b->i32, mlb_gep(b, ft, off), 4);
      h->emitted = 1;
    } else if (c->op == OP_CHUNKVAR || c->op == OP_LOOPVAR) {
      h->scalar = chunk;
      h->emitted = 1;
      if (c->op == OP_CHUNKVAR) load_chunk(L, c, chunk);
    } else if (c->op == OP_CARRY || (h->shadow && h->nbufs == 2)) {
      h->dyn = carry_addr(L, h, phase);
    } else if (c->op == OP_YIELD) {
      yield = c;
    }
  }
  emit_block(L, body);
  issue_ahead(L); /* (no matmul issued them) */
  CAKE_ASSERT(yield);
  lk_set_loc(L, yield);
  for (int i = 0; i < body->len; i++) {
    const CirInst *c = body->insts[i];
    if (c->op != OP_CARRY) continue;
    Home *h = home_of(L, c);
    if (home_of(L, yield->args[c->axis])->epilogue) continue; /* written by its matmul */
    materialize_to(L, yield->args[c->axis], carry_addr(L, h, other), h->sdt, h->stride, 0);
  }
  /* The step's last barrier: where the next step begins with the wait for
   * its copies and a barrier, and no copy is issued in between, that one
   * orders the same (the barrier after the loop stands in for the last step's) */
  int top_orders = prefetch && !prefetch_due(L, body, L->pos[yield->id]) && mlb_drop_barrier(b);
  if (!top_orders) mlb_barrier(b);
  emit_refill(L, yield, 1);
  L->scan_body = NULL;
  L->scan_next_rows = (ChunkInfo){0};
  mlb_for_end(b, &loop, 1, &other);
  /* the last step's copies, landed in every thread before the space is reused */
  if (ahead_copies) async_wait(L, 0);
  b->no_contract--;
  if (top_orders || ahead_copies) mlb_barrier(b);
  MlirValue final_phase = mlb_res(loop.op, 0);
  /* (their buffer addresses were the body's own values; the shadows are not read after the scan) */
  for (int i = 0; i < body->len; i++) {
    Home *h = home_of(L, body->insts[i]);
    if (prefetch_is_due(h, DUE_TOP) || h->shadow) h->dyn = (MlirValue){0};
  }
  /* the scan's results alias the carry buffers holding the last values */
  for (int i = 0; i < body->len; i++) {
    const CirInst *c = body->insts[i];
    if (c->op != OP_CARRY) continue;
    Home *ch = home_of(L, c);
    ch->dyn = carry_addr(L, ch, final_phase);
  }
}

/* Copy every hoisted load at once, so that their latencies overlap. */
static void emit_hoisted(LK *L, const CirBlock *blk) {
  int any = 0;
  for (int i = 0; i < blk->len; i++) {
    const CirInst *in = blk->insts[i];
    Home *h = home_of(L, in);
    if (h->async_mode != ASYNC_HOIST) continue;
    lk_set_loc(L, in);
    async_copy(L, in, mlb_i32(&L->b, h->offset));
    any = 1;
  }
  if (!any) return;
  async_commit(L);
  async_wait(L, 0);
  mlb_barrier(&L->b);
}

static void emit_inst(LK *L, const CirInst *in) {
  Home *h = home_of(L, in);
  lk_set_loc(L, in);
  if (h->async_mode != ASYNC_NONE) return; /* copied ahead of its use */
  if (h->shadow) return;                    /* written with its carry */
  switch (in->op) {
    case OP_STORE:
      if (h->epilogue) return; /* written by its matmul */
      emit_store(L, in);
      mlb_barrier(&L->b);
      return;
    case OP_FOR: emit_for(L, in); return;
    case OP_YIELD: case OP_CHUNKVAR: case OP_LOOPVAR: case OP_CARRY: return;
    case OP_FORRES: {
      /* find the carry of the same slot */
      const CirInst *f = in->parent;
      for (int i = 0; i < f->body->len; i++) {
        const CirInst *c = f->body->insts[i];
        if (c->op == OP_CARRY && c->axis == in->axis) {
          Home *ch = home_of(L, c);
          *h = *ch;
          h->kind = H_SMEM;
          h->nbufs = 1;
        }
      }
      return;
    }
    default: break;
  }
  if (h->kind == H_SCALAR) {
    h->scalar = eval_scalar(L, in);
    h->emitted = 1;
    if (in->op == OP_GRIDVAR && L->k->axes[in->axis].kind == GA_CHUNKS) load_chunk(L, in, h->scalar);
    return;
  }
  if (in->op == OP_MATMUL && h->summed_into) return; /* computed with the matmul it is added to */
  if (in->op == OP_MATMUL && h->epilogue) {
    lower_matmul(L, in);
    mlb_barrier(&L->b);
    return;
  }
  if (in->op == OP_DECAY_DOT && (h->pair_with || h->pair_of)) { /* two in one pass, at the first's place */
    if (h->pair_with) {
      lower_decay(L, in);
      mlb_barrier(&L->b);
    }
    return;
  }
  if (h->kind != H_SMEM || h->epilogue) return; /* (written by its matmul) */
  switch (cake_ops[in->op].kind) {
    case OK_DOT: lower_matmul(L, in); break;
    case OK_REDUCE: lower_reduce(L, in); break;
    case OK_SCAN: lower_scan(L, in); break;
    case OK_SOLVE: lower_solve(L, in); break;
    case OK_DECAY: lower_decay(L, in); break;
    case OK_DECAY_MM: lower_decay_mm(L, in); break;
    default: materialize_to(L, in, mlb_i32(&L->b, h->offset), h->sdt, h->stride, 1); break;
  }
  mlb_barrier(&L->b);
}

/* Does instruction `in` of a scan body write no shared memory at its place
 * (a scalar in registers, or nothing of its own there)? */
static int writes_no_smem(LK *L, const CirInst *in) {
  const Home *h = home_of(L, in);
  if (h->async_mode != ASYNC_NONE || h->shadow || h->kind == H_FUSED || h->kind == H_SCALAR) return 1;
  if (in->op == OP_STORE) return h->epilogue != NULL;
  if (in->op == OP_MATMUL) return h->summed_into != NULL;
  return 0;
}

/* Does matmul mm, with its epilogue store st (the stored value's other
 * leaves too), read the tile of v? */
static int store_reads(LK *L, const CirInst *mm, const CirInst *st, const CirInst *v) {
  return matmul_reads(L, mm, v) || fused_reads(L, st->args[0], v);
}

/* Does v, evaluated where it stands (through the fused values it reads),
 * load from tensor t? */
static int loads_tensor(LK *L, const CirInst *v, const CirTensor *t, int depth) {
  if (v->op == OP_LOAD && v->tensor == t) return 1;
  if (depth > MAX_FUSED_DEPTH) return 1; /* (the planner keeps fused trees shorter; be safe) */
  if (depth > 0 && home_of(L, v)->kind != H_FUSED) return 0; /* computed at its own place */
  for (int j = 0; j < v->nargs; j++)
    if (loads_tensor(L, v->args[j], t, depth + 1)) return 1;
  return 0;
}

/* Instruction i of scan body blk is a matmul whose epilogue stores to
 * global memory: it writes no shared memory. The barrier after it orders
 * only its reads before later writes; it can go when the next step is a
 * matmul with nothing to stage whose writes miss everything it read (a
 * global store, a carry updated in place that it does not read, that
 * carry's cast into the buffer this step does not read), no refill is due
 * in between, and scalars computed in between read nothing the next
 * matmul writes. The barrier also orders the stored tensor's global
 * writes before reads of it: neither the scalars in between nor the next
 * matmul's epilogue may load it. A next matmul that stores to global
 * memory must keep its own barrier (it then orders both matmuls' reads)
 * and store another tensor. Returns that next matmul, or NULL. */
static const CirInst *barrier_free_after(LK *L, const CirBlock *blk, int i) {
  const CirInst *mm = blk->insts[i];
  const Home *h = home_of(L, mm);
  if (!L->scan_body || mm->op != OP_MATMUL || !h->epilogue || h->epilogue->op != OP_STORE) return NULL;
  int first = i + 1, j = i + 1;
  for (; j < blk->len; j++) {
    if (prefetch_due(L, L->scan_body, L->pos[blk->insts[j - 1]->id])) return NULL;
    if (!writes_no_smem(L, blk->insts[j])) break;
  }
  if (j == blk->len) return NULL;
  const CirInst *n = blk->insts[j];
  const Home *nh = home_of(L, n);
  if (n->op != OP_MATMUL || !nh->epilogue || matmul_stages(L, n)) return NULL;
  const CirTensor *stored = h->epilogue->tensor;
  int to_global = nh->epilogue->op == OP_STORE;
  /* what n writes in shared memory: a carry in place and its cast (none when it stores) */
  const CirInst *c = nh->epilogue_carry, *x = nh->epilogue_shadow;
  if (to_global) {
    if (nh->epilogue->tensor == stored || loads_tensor(L, nh->epilogue->args[0], stored, 0)) return NULL;
  } else {
    if (!c || loads_tensor(L, nh->epilogue, stored, 0) || store_reads(L, mm, h->epilogue, c)) return NULL;
    if (x && home_of(L, x)->nbufs != 2 && store_reads(L, mm, h->epilogue, x)) return NULL;
  }
  for (int k = first; k < j; k++) { /* the scalars in between */
    const CirInst *s = blk->insts[k];
    if (home_of(L, s)->kind != H_SCALAR) continue;
    if (loads_tensor(L, s, stored, 0)) return NULL;
    for (int a = 0; a < s->nargs && !to_global; a++)
      if (fused_reads(L, s->args[a], c) || (x && fused_reads(L, s->args[a], x))) return NULL;
  }
  return to_global && barrier_free_after(L, blk, j) ? NULL : n;
}

static void emit_block(LK *L, const CirBlock *blk) {
  int hoisted = blk != &L->k->body;
  for (int i = 0; i < blk->len && !L->failed; i++) {
    const CirInst *in = blk->insts[i];
    /* after the grid indices (and their chunk rows), before anything else */
    if (!hoisted && in->op != OP_GRIDVAR) {
      emit_hoisted(L, blk);
      hoisted = 1;
    }
    const CirInst *next = barrier_free_after(L, blk, i);
    if (next) { /* no barrier after it, none at the start of `next` */
      lk_set_loc(L, in);
      lower_matmul(L, in);
      L->unbarriered = next;
      continue;
    }
    emit_inst(L, in);
    if (blk != &L->k->body && in->op != OP_YIELD) {
      const Home *h = home_of(L, in);
      int barrier_done = in->op == OP_STORE || (h->kind == H_SMEM && h->async_mode == ASYNC_NONE && !h->shadow) ||
                         (in->op == OP_MATMUL && h->epilogue);
      emit_refill(L, in, barrier_done);
    }
  }
  if (!hoisted) emit_hoisted(L, blk);
}

static int count_ids(const CirBlock *b) {
  int m = 0;
  for (int i = 0; i < b->len; i++) {
    if (b->insts[i]->id + 1 > m) m = b->insts[i]->id + 1;
    if (b->insts[i]->body) {
      int x = count_ids(b->insts[i]->body);
      if (x > m) m = x;
    }
  }
  return m;
}

static MlirType arg_type(Mlb *b, const KernelArg *a) {
  if (a->what == ARG_TENSOR || a->what == ARG_CHUNK_TABLE || a->what == ARG_DOC_TABLE || a->what == ARG_FRAG_TABLE)
    return b->ptr_g;
  return a->dtype == DT_F32 ? b->f32 : b->i32;
}

int lower_kernel(Arena *arena, Diag *diag, MlirContext ctx, MlirBlock module_body, const CirProgram *p,
                 const CirKernel *k, const KernelAbi *abi, const Target *target, const char *symbol, int *smem_bytes) {
  LK lk = {0}, *L = &lk;
  L->target = target;
  L->arena = arena;
  L->diag = diag;
  L->p = p;
  L->k = k;
  L->abi = abi;
  L->nthreads = k->threads;
  L->nids = count_ids(&k->body);
  L->shifts = block_shifts(&k->body);
  L->homes = arena_alloc(arena, sizeof(Home) * ((size_t)L->nids + 1));
  L->chunks = arena_alloc(arena, sizeof(ChunkInfo) * ((size_t)L->nids + 1));
  L->pos = arena_alloc(arena, sizeof(int) * ((size_t)L->nids + 1));
  Mlb *b = &L->b;
  mlb_init(b, ctx);
  b->loc = mlirLocationFileLineColGet(ctx, mlirStringRefCreateFromCString(k->loc.src ? k->loc.src->name : "?"),
                                      (unsigned)k->loc.line, (unsigned)k->loc.col);
  plan_kernel(L);
  if (L->failed) goto done;
  if (L->smem_bytes > L->target->smem_per_block) {
    lk_error(L, NULL, "kernel '%s' needs %lld bytes of shared memory for its tiles; a block can have at most %d",
             k->name, L->smem_bytes, L->target->smem_per_block);
    goto done;
  }

  /* gpu.module @<symbol>_module { smem global; gpu.func @<symbol>(...) kernel } */
  char buf[512];
  MlirRegion mreg = mlirRegionCreate();
  MlirBlock mblock = mlirBlockCreate(0, NULL, NULL);
  mlirRegionAppendOwnedBlock(mreg, mblock);
  snprintf(buf, sizeof buf, "%s_module", symbol);
  MlirOperationState ms = mlirOperationStateGet(mlirStringRefCreateFromCString("gpu.module"), b->loc);
  MlirNamedAttribute msym = mlb_named(b, "sym_name", mlirStringAttrGet(ctx, mlirStringRefCreateFromCString(buf)));
  mlirOperationStateAddAttributes(&ms, 1, &msym);
  mlirOperationStateAddOwnedRegions(&ms, 1, &mreg);
  MlirOperation gmod = mlirOperationCreate(&ms);
  mlirBlockAppendOwnedOperation(module_body, gmod);

  b->block = mblock;
  {
    MlirNamedAttribute ga[5] = {
        mlb_named(b, "sym_name", mlirStringAttrGet(ctx, mlirStringRefCreateFromCString("__cake_smem"))),
        mlb_named(b, "global_type", mlirTypeAttrGet(mlb_type(b, "!llvm.array<0 x i8>"))),
        mlb_named(b, "addr_space", mlirIntegerAttrGet(b->i32, 3)),
        mlb_named(b, "alignment", mlirIntegerAttrGet(b->i64, 128)),
        mlb_named(b, "linkage", mlb_attr(b, "#llvm.linkage<external>")),
    };
    MlirOperationState gs = mlirOperationStateGet(mlirStringRefCreateFromCString("llvm.mlir.global"), b->loc);
    mlirOperationStateAddAttributes(&gs, 5, ga);
    MlirRegion init = mlirRegionCreate();
    mlirOperationStateAddOwnedRegions(&gs, 1, &init);
    mlirBlockAppendOwnedOperation(mblock, mlirOperationCreate(&gs));
  }

  MlirType atypes[CAKE_MAX_KERNEL_ARGS];
  MlirLocation alocs[CAKE_MAX_KERNEL_ARGS];
  for (int i = 0; i < abi->nargs; i++) {
    atypes[i] = arg_type(b, &abi->args[i]);
    alocs[i] = b->loc;
  }
  MlirType fty = mlirFunctionTypeGet(ctx, abi->nargs, atypes, 0, NULL);
  MlirRegion freg = mlirRegionCreate();
  MlirBlock entry = mlirBlockCreate(abi->nargs, atypes, alocs);
  mlirRegionAppendOwnedBlock(freg, entry);
  int32_t block_size[3] = {k->threads, 1, 1};
  /* Two blocks per multiprocessor when the kernel asks for them (per_sm 2)
   * or, unasked, when their shared memory fits (with the driver's
   * reservation per block): ptxas then keeps registers within half the
   * register file. Otherwise one block, with all the registers a thread may
   * have. */
  int per_sm = plan_blocks_per_sm(L);
  MlirNamedAttribute fa[5] = {
      mlb_named(b, "sym_name", mlirStringAttrGet(ctx, mlirStringRefCreateFromCString(symbol))),
      mlb_named(b, "function_type", mlirTypeAttrGet(fty)),
      mlb_named(b, "gpu.kernel", mlirUnitAttrGet(ctx)),
      mlb_named(b, "known_block_size", mlirDenseI32ArrayGet(ctx, 3, block_size)),
      mlb_named(b, "nvvm.minctasm", mlirIntegerAttrGet(b->i32, per_sm)),
  };
  MlirOperationState fs = mlirOperationStateGet(mlirStringRefCreateFromCString("gpu.func"), b->loc);
  mlirOperationStateAddAttributes(&fs, 5, fa);
  mlirOperationStateAddOwnedRegions(&fs, 1, &freg);
  MlirOperation func = mlirOperationCreate(&fs);
  mlirBlockAppendOwnedOperation(mblock, func);

  b->block = entry;
  for (int i = 0; i < abi->nargs; i++) L->args[i] = mlirBlockGetArgument(entry, i);
  L->tid = mlb_thread_id(b);
  {
    MlirNamedAttribute na = mlb_named(b, "global_name", mlirFlatSymbolRefAttrGet(ctx, mlirStringRefCreateFromCString("__cake_smem")));
    L->smem = mlb_op1(b, "llvm.mlir.addressof", b->ptr_s, 0, NULL, 1, &na);
  }
  for (int d = 0; d < 3; d++) {
    int ax = abi->grid_axis_of_dim[d];
    if (ax >= 0) L->grid[ax] = mlb_block_id(b, d);
  }
  /* grid indices are scalars the walk picks up from L->grid */
  if (k->rounds) {
    /* in round k only the fragments k-th in their document (column 3 of the
     * fragment table: how many come before it; 5: after it, for reverse
     * rounds); the others' blocks do nothing (the condition is the block's) */
    MlirValue ft = arg_of(L, ARG_FRAG_TABLE, NULL, 0);
    MlirValue at = mlb_add_c(b, mlb_mul_c(b, L->grid[k->rounds_axis], 6), k->rounds == 2 ? 5 : 3);
    MlirValue pos = mlb_load_table(b, b->i32, mlb_gep(b, ft, mlb_cast(b, "arith.extsi", mlb_mul_c(b, at, 4), b->i64)), 4);
    MlbIf active;
    mlb_if_begin(b, &active, mlb_cmpi(b, "eq", pos, arg_of(L, ARG_ROUND, NULL, 0)), 0, NULL);
    emit_block(L, &k->body);
    mlb_if_else(b, &active, 0, NULL);
    mlb_if_end(b, &active, 0, NULL);
  } else {
    emit_block(L, &k->body);
  }
  mlb_op(b, "gpu.return", 0, NULL, 0, NULL, 0, NULL);

done:
  *smem_bytes = L->smem_bytes <= L->target->smem_per_block ? (int)L->smem_bytes : L->target->smem_per_block + 1;
  return L->failed ? -1 : 0;
}
