/* lower_dot.c - tile matmul on tensor cores: mma.sync.m16n8k16 (bf16 or f16
 * inputs, f32 accumulators), operands in shared memory read with ldmatrix.
 *
 * C[M, N] = A[M, K] @ B[K, N]. Each operand is a bf16/f16 tile in shared
 * memory, either in its own layout (A as [M][K], B as [K][N]) or transposed
 * (A held as [K][M], B held as [N][K]); ldmatrix's .trans form covers the
 * transposed cases so that `a @ b.T` never copies b. The warps split C into
 * rectangles of 16x8 tiles; each warp walks K in steps of 16 with its
 * accumulators in registers, then writes C to its f32 shared-memory home. */
#include <stdio.h>
#include <string.h>

#include "lower.h"

/* Strip a transpose that is only a view: the operand is then read from the
 * untransposed value with ldmatrix.trans. */
const CirInst *operand_source(const CirInst *v, int *trans) {
  *trans = 0;
  if (v->op == OP_TRANSPOSE && v->nuses == 1) {
    *trans = 1;
    return v->args[0];
  }
  return v;
}

int operand_needs_stage(LK *L, const CirInst *src) {
  Home *h = home_of(L, src);
  return !(h->kind == H_SMEM && (h->sdt == DT_BF16 || h->sdt == DT_F16));
}

int matmul_stages(LK *L, const CirInst *mm) {
  for (const CirInst *t = mm; t; t = home_of(L, t)->sum_with)
    for (int w = 0; w < 2; w++) {
      int tr;
      if (operand_needs_stage(L, operand_source(t->args[w], &tr))) return 1;
    }
  return 0;
}

typedef struct Operand {
  MlirValue base; /* i32 byte offset in shared memory */
  int stride;     /* elements per row as held */
  int trans;      /* held transposed relative to the operand */
} Operand;

static Operand prepare(LK *L, const CirInst *mm, int which) {
  Home *mh = home_of(L, mm);
  Operand op;
  const CirInst *src = operand_source(mm->args[which], &op.trans);
  if (operand_needs_stage(L, src)) {
    op.base = mlb_i32(&L->b, mh->stage_off[which]);
    op.stride = mh->stage_stride[which];
    materialize_to(L, src, op.base, mh->stage_dt[which], op.stride, 0);
  } else {
    op.base = home_base(L, src);
    op.stride = home_of(L, src)->stride;
  }
  return op;
}

MlirValue ldmatrix_at(LK *L, MlirValue byte_off, int num, int trans) {
  Mlb *b = &L->b;
  char ty[64];
  snprintf(ty, sizeof ty, num == 4 ? "!llvm.struct<(i32, i32, i32, i32)>" : "!llvm.struct<(i32, i32)>");
  MlirNamedAttribute na[4] = {
      mlb_named(b, "num", mlirIntegerAttrGet(b->i32, num)),
      mlb_named(b, "layout", mlb_attr(b, trans ? "#nvvm.mma_layout<col>" : "#nvvm.mma_layout<row>")),
      mlb_named(b, "shape", mlb_attr(b, "#nvvm.ld_st_matrix_shape<m = 8, n = 8>")),
      mlb_named(b, "eltType", mlb_attr(b, "#nvvm.ld_st_matrix_elt_type<b16>")),
  };
  MlirValue p = smem_ptr(L, byte_off);
  return mlb_op1(b, "nvvm.ldmatrix", mlb_type(b, ty), 1, &p, 4, na);
}

/* byte offset of element (row, col) of a held bf16 tile */
static MlirValue elem_off(LK *L, const Operand *o, MlirValue row, MlirValue col) {
  Mlb *b = &L->b;
  return mlb_add(b, o->base, mlb_mul_c(b, mlb_add(b, mlb_mul_c(b, row, o->stride), col), 2));
}

static void frag_a(LK *L, const Operand *a, MlirValue lane, MlirValue m0, MlirValue k0, MlirValue out[4]) {
  Mlb *b = &L->b;
  MlirValue row, col;
  if (!a->trans) { /* held [M][K]: lane l reads row m0 + l%16 at k0 + (l/16)*8 */
    row = mlb_add(b, m0, mlb_bin_c(b, "arith.remui", lane, 16));
    col = mlb_add(b, k0, mlb_mul_c(b, mlb_bin_c(b, "arith.divui", lane, 16), 8));
  } else { /* held [K][M]: matrix q = l/8 is rows k0 + (q/2)*8, cols m0 + (q%2)*8 */
    MlirValue q = mlb_bin_c(b, "arith.divui", lane, 8);
    row = mlb_add(b, k0, mlb_bin_c(b, "arith.remui", lane, 8));
    row = mlb_add(b, row, mlb_mul_c(b, mlb_bin_c(b, "arith.divui", q, 2), 8));
    col = mlb_add(b, m0, mlb_mul_c(b, mlb_bin_c(b, "arith.remui", q, 2), 8));
  }
  MlirValue s = ldmatrix_at(L, elem_off(L, a, row, col), 4, a->trans);
  for (int i = 0; i < 4; i++) out[i] = mlb_extract(b, s, i, b->i32);
}

/* Fragments of two adjacent n-tiles (n0 and n0 + 8): out[0..1] for n0, out[2..3] for n0 + 8.
 * With `pair` == 0 only n0 is loaded (out[0..1]). */
static void frag_b(LK *L, const Operand *o, MlirValue lane, MlirValue k0, MlirValue n0, int pair, MlirValue out[4]) {
  Mlb *b = &L->b;
  MlirValue row, col;
  MlirValue q = mlb_bin(b, "arith.divui", lane, mlb_i32(b, 8));
  MlirValue i8 = mlb_bin(b, "arith.remui", lane, mlb_i32(b, 8));
  if (o->trans) { /* held [N][K]: matrix q: rows n0 + (q/2)*8, cols k0 + (q%2)*8 */
    row = mlb_add(b, n0, i8);
    row = mlb_add(b, row, mlb_mul_c(b, mlb_bin_c(b, "arith.divui", q, 2), 8));
    col = mlb_add(b, k0, mlb_mul_c(b, mlb_bin_c(b, "arith.remui", q, 2), 8));
  } else { /* held [K][N] (.trans): matrix q: rows k0 + (q%2)*8, cols n0 + (q/2)*8 */
    row = mlb_add(b, k0, i8);
    row = mlb_add(b, row, mlb_mul_c(b, mlb_bin_c(b, "arith.remui", q, 2), 8));
    col = mlb_add(b, n0, mlb_mul_c(b, mlb_bin_c(b, "arith.divui", q, 2), 8));
  }
  if (!pair) {
    /* x2 reads the addresses of lanes 0-15 only: matrices q = 0, 1 */
    MlirValue s = ldmatrix_at(L, elem_off(L, o, row, col), 2, !o->trans);
    for (int i = 0; i < 2; i++) out[i] = mlb_extract(b, s, i, b->i32);
    return;
  }
  MlirValue s = ldmatrix_at(L, elem_off(L, o, row, col), 4, !o->trans);
  for (int i = 0; i < 4; i++) out[i] = mlb_extract(b, s, i, b->i32);
}

MlirOperation mma_sync(LK *L, DType dt, MlirValue a[4], MlirValue bb[2], MlirValue c[4]) {
  Mlb *b = &L->b;
  MlirValue ops[10];
  MlirType vt = mlb_type(b, "vector<2xf16>");
  for (int i = 0; i < 4; i++) ops[i] = dt == DT_F16 ? mlb_bitcast(b, a[i], vt) : a[i];
  for (int i = 0; i < 2; i++) ops[4 + i] = dt == DT_F16 ? mlb_bitcast(b, bb[i], vt) : bb[i];
  for (int i = 0; i < 4; i++) ops[6 + i] = c[i];
  int32_t seg[3] = {4, 2, 4};
  const char *pt = dt == DT_F16 ? "#nvvm.mma_type<f16>" : "#nvvm.mma_type<bf16>";
  MlirNamedAttribute na[6] = {
      mlb_named(b, "shape", mlb_attr(b, "#nvvm.shape<m = 16, n = 8, k = 16>")),
      mlb_named(b, "layoutA", mlb_attr(b, "#nvvm.mma_layout<row>")),
      mlb_named(b, "layoutB", mlb_attr(b, "#nvvm.mma_layout<col>")),
      mlb_named(b, "multiplicandAPtxType", mlb_attr(b, pt)),
      mlb_named(b, "multiplicandBPtxType", mlb_attr(b, pt)),
      mlb_named(b, "operandSegmentSizes", mlirDenseI32ArrayGet(b->ctx, 3, seg)),
  };
  MlirType rt = mlb_type(b, "!llvm.struct<(f32, f32, f32, f32)>");
  return mlb_op(b, "nvvm.mma.sync", 1, &rt, 10, ops, 6, na);
}

/* Split nwarps into wm x wn over a grid of m16 x n8 tiles, fewest loads per mma. */
static void warp_grid(int nw, int m16, int n8, int *wm, int *wn) {
  int best = -1;
  for (int a = 1; a <= nw; a++) {
    if (nw % a) continue;
    int bcols = nw / a;
    if (m16 % a || n8 % bcols) continue;
    int cost = m16 / a + n8 / bcols;
    if (best < 0 || cost < best) {
      best = cost;
      *wm = a;
      *wn = bcols;
    }
  }
  if (best >= 0) return;
  /* Fewer tiles than warps: some warps idle. */
  *wm = m16 < nw ? m16 : nw;
  while (m16 % *wm) (*wm)--;
  *wn = 1;
  for (int c = nw / *wm; c >= 1; c--)
    if (n8 % c == 0) {
      *wn = c;
      break;
    }
}

enum { MMA_TILES_PER_PASS = 4 };

static int largest_proper_divisor(int n) {
  for (int d = n / 2; d > 1; d--)
    if (n % d == 0) return d;
  return 1;
}

/* One product of a (possibly summed) matmul: its operands and K. */
typedef struct Term {
  Operand A, B;
  int K;
  DType dt;
} Term;

/* A pass of one warp: its tiles mtp x ntp at (pm, pn) of its mt x nt. */
typedef struct Pass {
  MlirValue lane, wr, wc;
  int mt, nt, pm, pn, mtp, ntp;
} Pass;

/* One k-step (k0 .. k0 + 15) of a pass: the fragments, then an mma per tile
 * from accumulators `in` to `out` (4 per tile). */
static void mma_step(LK *L, const Pass *p, const Term *tm, MlirValue k0, MlirValue *in, MlirValue *out) {
  Mlb *b = &L->b;
  MlirValue af[MMA_TILES_PER_PASS][4], bf[MMA_TILES_PER_PASS][4];
  for (int i = 0; i < p->mtp; i++) {
    MlirValue m0 = mlb_mul_c(b, mlb_add_c(b, mlb_mul_c(b, p->wr, p->mt), p->pm + i), 16);
    frag_a(L, &tm->A, p->lane, m0, k0, af[i]);
  }
  for (int j = 0; j < p->ntp; j += 2) {
    MlirValue n0 = mlb_mul_c(b, mlb_add_c(b, mlb_mul_c(b, p->wc, p->nt), p->pn + j), 8);
    int pair = j + 1 < p->ntp;
    MlirValue f4[4];
    frag_b(L, &tm->B, p->lane, k0, n0, pair, f4);
    bf[j][0] = f4[0];
    bf[j][1] = f4[1];
    if (pair) {
      bf[j + 1][0] = f4[2];
      bf[j + 1][1] = f4[3];
    }
  }
  for (int i = 0; i < p->mtp; i++)
    for (int j = 0; j < p->ntp; j++) {
      int at = (i * p->ntp + j) * 4;
      MlirOperation op = mma_sync(L, tm->dt, af[i], bf[j], &in[at]);
      for (int e = 0; e < 4; e++) out[at + e] = mlb_extract(b, mlb_res(op, 0), e, b->f32);
    }
}

/* Is mm a statement of the scan step being emitted (not in a block within it,
 * where it might run more than once, or not at all)? */
static int in_scan_step(LK *L, const CirInst *mm) {
  const CirBlock *body = L->scan_body;
  for (int i = 0; body && i < body->len; i++)
    if (body->insts[i] == mm) return 1;
  return 0;
}

void lower_matmul(LK *L, const CirInst *mm) {
  Mlb *b = &L->b;
  Home *out = home_of(L, mm);
  int M = mm->ty.shape[0], N = mm->ty.shape[1];
  /* the matmuls summed into this one's accumulators (sum_with), then this one */
  const CirInst *terms_of[4];
  int nterms = 0;
  for (const CirInst *t = out->sum_with; t && nterms < 3; t = home_of(L, t)->sum_with) terms_of[nterms++] = t;
  terms_of[nterms++] = mm;
  Term terms[4];
  for (int t = 0; t < nterms; t++) {
    const CirInst *m = terms_of[t];
    int K = m->args[0]->ty.shape[1];
    if (M % 16 || N % 8 || K % 16) {
      lk_error(L, m, "tensor-core matmul needs M and K multiples of 16 and N a multiple of 8; got [%d, %d] @ [%d, %d]",
               M, K, K, N);
      return;
    }
    terms[t].K = K;
    terms[t].dt = m->args[0]->ty.dt;
    terms[t].A = prepare(L, m, 0);
    terms[t].B = prepare(L, m, 1);
  }
  /* the staged copies are complete, and what came since the last barrier
   * is ordered before this matmul's writes (elided after register work
   * only); not when emit_block found no such need (barrier_free_after) */
  if (L->unbarriered != mm || matmul_stages(L, mm)) mlb_barrier(b);
  L->unbarriered = NULL;

  int nw = L->nthreads / 32, m16 = M / 16, n8 = N / 8, wm = 1, wn = 1;
  warp_grid(nw, m16, n8, &wm, &wn);
  int mt = m16 / wm, nt = n8 / wn;
  /* at most MMA_TILES_PER_PASS tiles (16 accumulators per thread) in flight
   * per pass: halve the rows of the pass while they are even, then its
   * columns down to a pair (one ldmatrix.x4 reads B for two n-tiles), then
   * step down through divisors (the pass must divide the warp's tiles). Each
   * pass reloads the fragments of the other operand from shared memory; the
   * registers it saves keep the big kernels at two blocks per SM. */
  int ntp = nt, mtp = mt;
  while (mtp * ntp > MMA_TILES_PER_PASS && mtp % 2 == 0) mtp /= 2;
  while (mtp * ntp > MMA_TILES_PER_PASS && ntp % 2 == 0 && ntp > 2) ntp /= 2;
  while (mtp * ntp > MMA_TILES_PER_PASS) {
    if (ntp > 1) ntp = largest_proper_divisor(ntp);
    else mtp = largest_proper_divisor(mtp);
  }

  MlirValue lane = mlb_bin(b, "arith.remui", L->tid, mlb_i32(b, 32));
  MlirValue warp = mlb_bin(b, "arith.divui", L->tid, mlb_i32(b, 32));
  MlirValue wr = mlb_bin(b, "arith.remui", warp, mlb_i32(b, wm));
  MlirValue wc = mlb_bin(b, "arith.divui", warp, mlb_i32(b, wm));
  /* warps without tiles skip the matmul */
  int all_warps = wm * wn == nw;
  MlbIf guard;
  if (!all_warps) mlb_if_begin(b, &guard, mlb_cmpi(b, "ult", warp, mlb_i32(b, wm * wn)), 0, NULL);
  MlirValue out_base = out->epilogue ? mlb_i32(b, 0) : mlb_i32(b, out->offset);
  MlirValue g = mlb_bin(b, "arith.divui", lane, mlb_i32(b, 4));
  MlirValue t4 = mlb_bin(b, "arith.remui", lane, mlb_i32(b, 4));
  /* A warp with few tiles walks K in a chain of dependent mmas, each
   * waiting for the last one's accumulators: in a scan's step (a latency
   * chain; elsewhere the registers cost more than the wait), k-steps go
   * round-robin to 2 or 4 sets of accumulators (as many chains in flight)
   * while the pass keeps at most MMA_TILES_PER_PASS tiles' worth, each
   * chain at least two steps long; the sets are added at the end. */
  int nsets = 1;
  while (home_in_scan(out) && nsets < 4 && 2 * nsets * mtp * ntp <= MMA_TILES_PER_PASS) {
    int ok = 1, steps = 0;
    for (int t = 0; t < nterms; t++) {
      steps += terms[t].K / 16;
      ok &= terms[t].K % (16 * 2 * nsets) == 0;
    }
    if (!ok || steps < 4 * nsets) break;
    nsets *= 2;
  }
  for (int pm = 0; pm < mt; pm += mtp)
    for (int pn = 0; pn < nt; pn += ntp) {
      int nacc = mtp * ntp * 4;
      Pass P = {lane, wr, wc, mt, nt, pm, pn, mtp, ntp};
      MlirValue zero = mlb_f32(b, 0.0);
      MlirValue init[MMA_TILES_PER_PASS * 4];
      for (int i = 0; i < nsets * nacc; i++) init[i] = zero;
      for (int t = 0; t < nterms; t++) { /* each term adds on to the last one's accumulators */
        MlbFor kl;
        MlirValue k_lo = mlb_i32(b, 0);
        MlirValue k_hi = mlb_i32(b, terms[t].K);
        MlirValue k_step = mlb_i32(b, 16 * nsets);
        mlb_for_begin(b, &kl, k_lo, k_hi, k_step, nsets * nacc, init);
        MlirValue acc[MMA_TILES_PER_PASS * 4];
        for (int set = 0; set < nsets; set++)
          mma_step(L, &P, &terms[t], set ? mlb_add_c(b, kl.iv, 16 * set) : kl.iv, &kl.iter[set * nacc], &acc[set * nacc]);
        mlb_for_end(b, &kl, nsets * nacc, acc);
        for (int i = 0; i < nsets * nacc; i++) init[i] = mlb_res(kl.op, i);
      }
      /* the sets' sum, pairwise: (s0 + s1) + (s2 + s3) */
      for (int w = 1; w < nsets; w *= 2)
        for (int set = 0; set + w < nsets; set += 2 * w)
          for (int i = 0; i < nacc; i++)
            init[set * nacc + i] = mlb_bin(b, "arith.addf", init[set * nacc + i], init[(set + w) * nacc + i]);
      MlirValue *res = init;
      /* what the walker left for the first matmul (a scan step's copies
       * for the next step) goes out behind the first pass's mma: issued by
       * every thread, so not where some warps skip the matmul */
      if (all_warps && L->behind_mma && in_scan_step(L, mm)) L->behind_mma(L);
      /* c0, c1 at (m0 + g, n0 + 2 t4 + {0, 1}); c2, c3 eight rows below.
       * The epilogue computes every value of the pass (issuing all of its
       * loads: a carry's old value, the operands of a fused expression)
       * before it writes the first: written in turn, each load would wait
       * behind the last one's store (shared memory, possibly the same) */
      enum { NFRAG = MMA_TILES_PER_PASS * 2 };
      MlirValue rows[NFRAG], cols[NFRAG];
      Vals vals[NFRAG], shadow_vals[NFRAG];
      int nf = 0;
      for (int i = 0; i < mtp; i++)
        for (int j = 0; j < ntp; j++) {
          MlirValue m0 = mlb_mul_c(b, mlb_add_c(b, mlb_mul_c(b, wr, mt), pm + i), 16);
          MlirValue n0 = mlb_mul_c(b, mlb_add_c(b, mlb_mul_c(b, wc, nt), pn + j), 8);
          MlirValue col = mlb_add(b, n0, mlb_mul_c(b, t4, 2));
          for (int half = 0; half < 2; half++, nf++) {
            MlirValue row = mlb_add_c(b, mlb_add(b, m0, g), half * 8);
            Vals x = {.n = 2};
            x.v[0] = res[(i * ntp + j) * 4 + half * 2];
            x.v[1] = res[(i * ntp + j) * 4 + half * 2 + 1];
            rows[nf] = row;
            cols[nf] = col;
            vals[nf] = x;
            const CirInst *t = out->epilogue;
            if (!t) continue; /* the accumulators themselves */
            /* the accumulators hold the matmul, or the sum of matmuls it heads */
            L->acc = (AccCtx){out->sum_node ? out->sum_node : mm, {x.v[0], x.v[1]}, 2};
            if (t->op == OP_STORE) { /* straight to the consumer */
              vals[nf] = store_value_at(L, t, row, col, 2);
            } else if (out->epilogue_carry) { /* the carry's new value, in place */
              vals[nf] = eval(L, t, row, col, 2);
              if (out->epilogue_shadow) { /* and its cast, from the same values */
                L->acc = (AccCtx){out->epilogue_carry, {vals[nf].v[0], vals[nf].v[1]}, 2};
                shadow_vals[nf] = eval_own(L, out->epilogue_shadow, row, col, 2);
              }
            } else {
              vals[nf] = eval_own(L, t, row, col, 2);
            }
            L->acc = (AccCtx){0};
          }
        }
      for (int f = 0; f < nf; f++) {
        const CirInst *t = out->epilogue;
        if (!t) {
          smem_store_vals(L, out_base, DT_F32, out->stride, rows[f], cols[f], vals[f]);
        } else if (t->op == OP_STORE) {
          store_vals_at(L, t, rows[f], cols[f], vals[f]);
        } else if (out->epilogue_carry) {
          Home *ch = home_of(L, out->epilogue_carry);
          smem_store_vals(L, mlb_i32(b, ch->offset), ch->sdt, ch->stride, rows[f], cols[f], vals[f]);
          if (out->epilogue_shadow) {
            Home *xh = home_of(L, out->epilogue_shadow);
            /* two buffers: the next step's is the one this step does not read */
            MlirValue xb = mlb_i32(b, xh->offset);
            if (xh->nbufs == 2) xb = mlb_bin(b, "arith.subi", mlb_i32(b, 2 * xh->offset + xh->bytes), xh->dyn);
            smem_store_vals(L, xb, xh->sdt == DT_BOOL ? DT_I32 : xh->sdt, xh->stride, rows[f], cols[f], shadow_vals[f]);
          }
        } else {
          Home *th = home_of(L, t);
          smem_store_vals(L, mlb_i32(b, th->offset), th->sdt == DT_BOOL ? DT_I32 : th->sdt, th->stride, rows[f], cols[f], vals[f]);
        }
      }
    }
  if (!all_warps) {
    mlb_if_else(b, &guard, 0, NULL);
    mlb_if_end(b, &guard, 0, NULL);
  }
}
