/* lower_decay_grad.c - decay_mm and decay_mm_t, decay_dot's gradients.
 *
 *   decay_mm(m, b, g)[r, c]   = sum_{j <= r} m[r, j] b[j, c] exp(g[r, c] - g[j, c])
 *   decay_mm_t(m, a, g)[j, c] = sum_{r >= j} m[r, j] a[r, c] exp(g[r, c] - g[j, c])
 *
 * (m [C, C], lower triangle read; x = b or a, and g [C, K]; g a cumulative
 * log-decay, non-increasing down the rows.) Two lowerings:
 *
 * Blocked (decay_mm_blocked: C and K multiples of 16, a target with mma.sync
 * and ldmatrix, whole warps, and a kernel whose shared-memory plan fits with
 * this form's staging, lower_plan.c). The rows are split into nb = C / 16
 * blocks.
 *  - Diagonal blocks, in f32, one thread per (block, pair of columns): the
 *    16 per-row factors d[i] = exp(g[i] - g[i - 1]) (all <= 1) once, then
 *    every exp(g[r] - g[j]) of the block's triangle as a running product of
 *    them (d[r] d[r - 1] ... d[j + 1]: each partial product is itself such a
 *    term, <= 1, so nothing overflows and what flushes to 0 is below 2^-126).
 *    16 exps per column and block instead of 136.
 *  - Off-diagonal blocks on tensor cores in bf16x3 (f32 accumulators): m and
 *    scaled x each split into bf16 hi = bf16(v) and lo = bf16(v - hi), and
 *    every k-step adds lo*hi, hi*lo, then hi*hi (three mma.sync, this order
 *    at every step); lo*lo and what the split drops are about 2^-16 of each
 *    product (bf16 alone: 2^-8), near f32 (tf32x3 would be closer still, but
 *    at twice the mma.sync count: m16n8k8, and no ldmatrix .trans for 32-bit
 *    elements). Every exponent is taken relative to a block-boundary row so
 *    that each factor is <= 1:
 *      x'[i] = x[i] exp(g[ref(i)] - g[i]) with ref the first row of the
 *              next block (decay_mm), or of i's own block (decay_mm_t);
 *      step[L] = exp(g[16 (L + 1)] - g[16 L]);
 *    decay_mm, row block I: acc = sum over J = 0 .. I - 1 in order of
 *      acc = acc * step[J] + m[I, J] @ x'[J]   (acc relative to row 16 (J + 1)),
 *      out[r] += exp(g[r] - g[16 I]) acc;
 *    decay_mm_t, row block J: over I = nb - 1 down to J + 1,
 *      acc = acc * step[I] + m[I, J]^T @ x'[I] (acc relative to row 16 I),
 *      out[j] += exp(g[16 (J + 1)] - g[j]) acc.
 *    The diagonal pass computes x' (the same running products, staged hi
 *    and lo) and step; m's off-diagonal part (rows 16 .., columns .. C - 17)
 *    is staged hi and lo first; each warp takes tasks (row block, 16
 *    columns) in turn.
 *  Every output's sum is in a fixed order: the diagonal block's terms in
 *  index order, then the off-diagonal blocks' (mma accumulation within one
 *  warp), so results do not depend on timing.
 *
 * Element by element (any other shape or target): each thread owns output
 * elements (strided over the tile) and sums its triangle of terms in
 * ascending index order with one exp each, so results do not depend on the
 * thread count. Every exponent pairs a row with an earlier one (g[later] -
 * g[earlier]), which is <= 0 for a non-increasing g: nothing overflows.
 *
 * The operands are read through their views (shared memory, an f32 staged
 * copy, or recomputed when cheap); the blocked path reads x once per
 * element, so it is never staged there (lower_plan.c plans the same). */
#include <math.h>

#include "lower.h"

int decay_mm_blocked(const LK *L, const CirInst *in) {
  int C = in->ty.shape[0], K = in->ty.shape[1];
  unsigned need = TF_MMA_SYNC | TF_LDMATRIX;
  return C % 16 == 0 && K % 16 == 0 && (L->target->features & need) == need && L->nthreads % 32 == 0 &&
         L->nthreads >= 32 && !L->dmm_elementwise;
}

/* ------------------------------------------------------------------ */
/* element by element                                                  */

typedef struct DmmCtx {
  const CirInst *in;
  View m, x, g;
  MlirValue out;
  int stride, n;
} DmmCtx;

static void dmm_elem(LK *L, MlirValue e, void *vctx) {
  DmmCtx *s = vctx;
  Mlb *b = &L->b;
  int K = s->in->ty.shape[1];
  MlirValue i = mlb_bin(b, "arith.divui", e, mlb_i32(b, K)), c = mlb_bin(b, "arith.remui", e, mlb_i32(b, K));
  int row_side = s->in->op == OP_DECAY_MM;
  /* decay_mm: j in [0, i]; decay_mm_t: r in [i, n) */
  MlirValue lo = row_side ? mlb_i32(b, 0) : i;
  MlirValue hi = row_side ? mlb_add(b, i, mlb_i32(b, 1)) : mlb_i32(b, s->n);
  MlirValue gi = view_vals(L, &s->g, i, c, 1).v[0];
  MlirValue zero = mlb_f32(b, 0.0);
  MlbFor loop;
  mlb_for_begin(b, &loop, lo, hi, mlb_i32(b, 1), 1, &zero);
  MlirValue t = loop.iv;
  MlirValue mv = row_side ? view_vals(L, &s->m, i, t, 1).v[0] : view_vals(L, &s->m, t, i, 1).v[0];
  MlirValue xv = view_vals(L, &s->x, t, c, 1).v[0];
  MlirValue gt = view_vals(L, &s->g, t, c, 1).v[0];
  MlirValue d = row_side ? mlb_bin(b, "arith.subf", gi, gt) : mlb_bin(b, "arith.subf", gt, gi);
  MlirValue mx = mlb_bin(b, "arith.mulf", mv, xv);
  MlirValue term = mlb_bin(b, "arith.mulf", mx, lk_exp(L, d));
  MlirValue acc = mlb_bin(b, "arith.addf", loop.iter[0], term);
  mlb_for_end(b, &loop, 1, &acc);
  Vals y = {.n = 1};
  y.v[0] = mlb_res(loop.op, 0);
  smem_store_vals(L, s->out, DT_F32, s->stride, i, c, y);
}

/* ------------------------------------------------------------------ */
/* blocked: diagonal blocks in f32, the rest on tensor cores           */

enum { DW = 2 }; /* columns per diagonal task */

typedef struct Blk {
  const CirInst *in;
  int t;          /* decay_mm_t */
  int C, K, nb;
  View m, x, g;
  MlirValue out;  /* the f32 home */
  int stride;
  MlirValue mp, mlo; /* m[16 + r][c] split into bf16 hi and lo, [C - 16][C - 16 + 8] each */
  MlirValue xp, xlo; /* x', bf16 hi and lo, [C - 16][K + 8] each */
  MlirValue step;    /* f32 [nb - 1][K] */
  int mp_stride, xp_stride;
} Blk;

static MlirValue fmul(Mlb *b, MlirValue x, MlirValue y) { return mlb_bin(b, "arith.mulf", x, y); }

static void store2(LK *L, MlirValue base, DType sdt, int stride, MlirValue r, MlirValue c, const MlirValue *v) {
  Vals x = {.n = DW};
  for (int w = 0; w < DW; w++) x.v[w] = v[w];
  smem_store_vals(L, base, sdt, stride, r, c, x);
}

/* f32 values x as bf16 hi = bf16(x) at hi and lo = bf16(x - hi) at lo
 * (x = hi + lo + O(2^-17 |x|)); lo is 0 where hi is not finite */
static void store_split(LK *L, MlirValue hi, MlirValue lo, int stride, MlirValue r, MlirValue c, Vals x) {
  Mlb *b = &L->b;
  Vals y = {.n = x.n};
  MlirValue inf = mlb_f32(b, INFINITY), zero = mlb_f32(b, 0.0);
  for (int w = 0; w < x.n; w++) {
    MlirValue h = mlb_cast(b, "arith.extf", mlb_cast(b, "arith.truncf", x.v[w], b->bf16), b->f32);
    MlirValue fin = mlb_cmpf(b, "olt", mlb_intrinsic(b, "llvm.fabs.f32", b->f32, 1, &h), inf);
    y.v[w] = mlb_select(b, fin, mlb_bin(b, "arith.subf", x.v[w], h), zero);
  }
  smem_store_vals(L, hi, DT_BF16, stride, r, c, x);
  smem_store_vals(L, lo, DT_BF16, stride, r, c, y);
}

/* m's off-diagonal part (rows 16 .., columns .. C - 17) as bf16 hi and lo for the tensor cores */
static void mp_fn(LK *L, const CirInst *v, MlirValue r, MlirValue c, int W, void *vctx) {
  (void)v;
  Blk *s = vctx;
  Vals x = view_vals(L, &s->m, mlb_add_c(&L->b, r, 16), c, W);
  store_split(L, s->mp, s->mlo, s->mp_stride, r, c, x);
}

static void store2_split(LK *L, Blk *s, MlirValue r, MlirValue c, const MlirValue *v) {
  Vals x = {.n = DW};
  for (int w = 0; w < DW; w++) x.v[w] = v[w];
  store_split(L, s->xp, s->xlo, s->xp_stride, r, c, x);
}

/* One diagonal task: block blk, columns c, c + 1. */
static void diag_task(LK *L, MlirValue task, void *vctx) {
  Blk *s = vctx;
  Mlb *b = &L->b;
  int per = s->K / DW, last = s->nb - 1;
  MlirValue blk = mlb_bin_c(b, "arith.divui", task, per);
  MlirValue c = mlb_mul_c(b, mlb_bin_c(b, "arith.remui", task, per), DW);
  MlirValue R0 = mlb_mul_c(b, blk, 16);
  MlirValue g[16][DW], x[16][DW], d[16][DW];
  for (int i = 0; i < 16; i++) {
    MlirValue row = mlb_add_c(b, R0, i);
    Vals gv = view_vals(L, &s->g, row, c, DW);
    Vals xv = view_vals(L, &s->x, row, c, DW);
    for (int w = 0; w < DW; w++) g[i][w] = gv.v[w], x[i][w] = xv.v[w];
  }
  /* d[i] = exp(g[i] - g[i - 1]) <= 1 */
  for (int i = 1; i < 16; i++)
    for (int w = 0; w < DW; w++) d[i][w] = lk_exp(L, mlb_bin(b, "arith.subf", g[i][w], g[i - 1][w]));

  /* the diagonal block, row r of m (entries j <= r) at a time */
  MlirValue acc_t[16][DW]; /* decay_mm_t: out[j] for every j, summed over r ascending */
  for (int r = 0; r < 16; r++) {
    MlirValue row = mlb_add_c(b, R0, r);
    MlirValue mrow[16];
    for (int h = 0; h * 8 <= r; h++) {
      MlirValue col = mlb_add_c(b, R0, 8 * h);
      Vals mv = view_vals(L, &s->m, row, col, 8);
      for (int k = 0; k < 8; k++) mrow[8 * h + k] = mv.v[k];
    }
    /* e = exp(g[r] - g[j]) for j = r - 1, ..., 0, a running product */
    MlirValue e[DW] = {{0}}, acc[DW] = {{0}};
    for (int w = 0; w < DW; w++) {
      if (!s->t) {
        acc[w] = fmul(b, mrow[r], x[r][w]); /* j = r */
      } else {
        acc_t[r][w] = fmul(b, mrow[r], x[r][w]); /* j = r: the first term of out[r] */
      }
    }
    for (int j = r - 1; j >= 0; j--)
      for (int w = 0; w < DW; w++) {
        e[w] = j == r - 1 ? d[r][w] : fmul(b, e[w], d[j + 1][w]);
        if (!s->t) {
          MlirValue xe = fmul(b, x[j][w], e[w]);
          acc[w] = mlb_bin(b, "arith.addf", acc[w], fmul(b, mrow[j], xe));
        } else {
          MlirValue xe = fmul(b, x[r][w], e[w]);
          acc_t[j][w] = mlb_bin(b, "arith.addf", acc_t[j][w], fmul(b, mrow[j], xe));
        }
      }
    if (!s->t) store2(L, s->out, DT_F32, s->stride, row, c, acc);
  }
  if (s->t)
    for (int j = 0; j < 16; j++) store2(L, s->out, DT_F32, s->stride, mlb_add_c(b, R0, j), c, acc_t[j]);
  if (s->nb == 1) return;

  if (!s->t) {
    /* blocks 0 .. nb - 2: x'[i] = x[i] exp(g[16 (blk + 1)] - g[i]), step[blk] */
    MlbIf st;
    mlb_if_begin(b, &st, mlb_cmpi(b, "ult", blk, mlb_i32(b, last)), 0, NULL);
    Vals gn = view_vals(L, &s->g, mlb_add_c(b, R0, 16), c, DW);
    MlirValue p[DW], y[DW];
    for (int w = 0; w < DW; w++) p[w] = lk_exp(L, mlb_bin(b, "arith.subf", gn.v[w], g[15][w]));
    for (int i = 15; i >= 0; i--) {
      if (i < 15)
        for (int w = 0; w < DW; w++) p[w] = fmul(b, p[w], d[i + 1][w]);
      for (int w = 0; w < DW; w++) y[w] = fmul(b, x[i][w], p[w]);
      store2_split(L, s, mlb_add_c(b, R0, i), c, y);
    }
    store2(L, s->step, DT_F32, s->K, blk, c, p); /* exp(g[16 (blk + 1)] - g[16 blk]) */
    mlb_if_else(b, &st, 0, NULL);
    mlb_if_end(b, &st, 0, NULL);
    return;
  }
  /* decay_mm_t: P[i] = exp(g[i] - g[0]) */
  MlirValue P[16][DW];
  for (int w = 0; w < DW; w++) P[0][w] = mlb_f32(b, 1.0);
  for (int i = 1; i < 16; i++)
    for (int w = 0; w < DW; w++) P[i][w] = i == 1 ? d[1][w] : fmul(b, P[i - 1][w], d[i][w]);
  /* blocks 1 .. nb - 1: x'[i - 16] = x[i] exp(g[i] - g[16 blk]) */
  MlbIf st;
  mlb_if_begin(b, &st, mlb_cmpi(b, "ugt", blk, mlb_i32(b, 0)), 0, NULL);
  MlirValue R1 = mlb_add_c(b, R0, -16);
  for (int i = 0; i < 16; i++) {
    MlirValue y[DW];
    for (int w = 0; w < DW; w++) y[w] = i ? fmul(b, x[i][w], P[i][w]) : x[i][w];
    store2_split(L, s, mlb_add_c(b, R1, i), c, y);
  }
  mlb_if_else(b, &st, 0, NULL);
  mlb_if_end(b, &st, 0, NULL);
  /* blocks 0 .. nb - 2: step[blk] = exp(g[16 (blk + 1)] - g[16 blk]) */
  MlbIf sp;
  mlb_if_begin(b, &sp, mlb_cmpi(b, "ult", blk, mlb_i32(b, last)), 0, NULL);
  Vals gn = view_vals(L, &s->g, mlb_add_c(b, R0, 16), c, DW);
  MlirValue q[DW];
  for (int w = 0; w < DW; w++) {
    MlirValue dn = lk_exp(L, mlb_bin(b, "arith.subf", gn.v[w], g[15][w]));
    q[w] = fmul(b, P[15][w], dn);
  }
  store2(L, s->step, DT_F32, s->K, blk, c, q);
  mlb_if_else(b, &sp, 0, NULL);
  mlb_if_end(b, &sp, 0, NULL);
}

static MlirValue boff(LK *L, MlirValue base, int stride, MlirValue row, MlirValue col) {
  Mlb *b = &L->b;
  return mlb_add(b, base, mlb_mul_c(b, mlb_add(b, mlb_mul_c(b, row, stride), col), 2));
}

/* The off-diagonal blocks: tasks (output row block, 16 columns) over the warps. */
static void offdiag(LK *L, Blk *s) {
  Mlb *b = &L->b;
  int nb = s->nb, ng = s->K / 16, ntasks = (nb - 1) * ng, nw = L->nthreads / 32;
  MlirValue lane = mlb_bin_c(b, "arith.remui", L->tid, 32);
  MlirValue warp = mlb_bin_c(b, "arith.divui", L->tid, 32);
  MlirValue g4 = mlb_bin_c(b, "arith.divui", lane, 4), t4 = mlb_bin_c(b, "arith.remui", lane, 4);
  MlirValue q = mlb_bin_c(b, "arith.divui", lane, 8), i8 = mlb_bin_c(b, "arith.remui", lane, 8);
  MlbFor tl;
  MlirValue t_hi = mlb_i32(b, ntasks);
  MlirValue t_step = mlb_i32(b, nw);
  mlb_for_begin(b, &tl, warp, t_hi, t_step, 0, NULL);
  MlirValue ob = mlb_bin_c(b, "arith.divui", tl.iv, ng); /* 0 .. nb - 2 */
  MlirValue n0 = mlb_mul_c(b, mlb_bin_c(b, "arith.remui", tl.iv, ng), 16);
  /* output row block: decay_mm I = ob + 1 (contraction blocks J < I),
   * decay_mm_t J = ob (contraction blocks I > J, taken from the last) */
  MlirValue oblk = s->t ? ob : mlb_add_c(b, ob, 1);
  MlirValue nsteps = s->t ? mlb_bin(b, "arith.subi", mlb_i32(b, nb - 1), ob) : oblk;
  MlirValue m0 = mlb_mul_c(b, oblk, 16);
  MlirValue zero = mlb_f32(b, 0.0), init[8];
  for (int e = 0; e < 8; e++) init[e] = zero;
  MlbFor kl;
  MlirValue k_lo = mlb_i32(b, 0);
  MlirValue k_step = mlb_i32(b, 1);
  mlb_for_begin(b, &kl, k_lo, nsteps, k_step, 8, init);
  /* kb: the contraction block; decay_mm J = step index, decay_mm_t I = nb - 1 - step index */
  MlirValue kb = s->t ? mlb_bin(b, "arith.subi", mlb_i32(b, nb - 1), kl.iv) : kl.iv;
  /* the accumulators, relative to the previous block's reference row, move to this one's */
  MlirValue srow = kb;
  if (s->t) { /* step[I] for I < nb - 1; the first step (acc = 0) is not scaled */
    MlirValue inner = mlb_cmpi(b, "ult", kb, mlb_i32(b, nb - 1));
    MlirValue lastrow = mlb_i32(b, nb - 2);
    srow = mlb_select(b, inner, kb, lastrow);
  }
  MlirValue first = mlb_cmpi(b, "eq", kl.iv, mlb_i32(b, 0));
  MlirValue one = mlb_f32(b, 1.0);
  MlirValue scaled[8];
  for (int h = 0; h < 2; h++) {
    MlirValue col = mlb_add(b, n0, mlb_mul_c(b, t4, 2));
    col = mlb_add_c(b, col, 8 * h);
    Vals f = smem_load_vals(L, s->step, DT_F32, s->K, srow, col, 2);
    for (int w = 0; w < 2; w++) {
      MlirValue fw = f.v[w];
      if (s->t) fw = mlb_select(b, first, one, fw);
      scaled[h * 4 + w] = fmul(b, kl.iter[h * 4 + w], fw);
      scaled[h * 4 + 2 + w] = fmul(b, kl.iter[h * 4 + 2 + w], fw);
    }
  }
  /* A = m[rows of oblk, cols of kb] (decay_mm), m^T (decay_mm_t): m' held [r - 16][j] */
  MlirValue k0 = mlb_mul_c(b, kb, 16);
  MlirValue arow, acol;
  if (!s->t) { /* held [M][K]: lane l reads row m0 + l % 16 at k0 + (l / 16) * 8 */
    MlirValue r16 = mlb_bin_c(b, "arith.remui", lane, 16);
    arow = mlb_add(b, mlb_add_c(b, m0, -16), r16);
    acol = mlb_add(b, k0, mlb_mul_c(b, mlb_bin_c(b, "arith.divui", lane, 16), 8));
  } else { /* held [K][M]: matrix q: rows k0 + (q / 2) * 8, cols m0 + (q % 2) * 8 */
    arow = mlb_add(b, mlb_add_c(b, k0, -16), i8);
    arow = mlb_add(b, arow, mlb_mul_c(b, mlb_bin_c(b, "arith.divui", q, 2), 8));
    acol = mlb_add(b, m0, mlb_mul_c(b, mlb_bin_c(b, "arith.remui", q, 2), 8));
  }
  MlirValue aoff = boff(L, mlb_i32(b, 0), s->mp_stride, arow, acol);
  MlirValue ahs = ldmatrix_at(L, mlb_add(b, s->mp, aoff), 4, s->t);
  MlirValue als = ldmatrix_at(L, mlb_add(b, s->mlo, aoff), 4, s->t);
  MlirValue ah[4], al[4];
  for (int e = 0; e < 4; e++) ah[e] = mlb_extract(b, ahs, e, b->i32), al[e] = mlb_extract(b, als, e, b->i32);
  /* B = x' rows of kb (decay_mm: rows 16 J; decay_mm_t: rows 16 (I - 1)), held [K][N]:
   * matrix q: rows + (q % 2) * 8, cols n0 + (q / 2) * 8, read transposed */
  MlirValue xrow = s->t ? mlb_add_c(b, k0, -16) : k0;
  MlirValue brow = mlb_add(b, xrow, i8);
  brow = mlb_add(b, brow, mlb_mul_c(b, mlb_bin_c(b, "arith.remui", q, 2), 8));
  MlirValue bcol = mlb_add(b, n0, mlb_mul_c(b, mlb_bin_c(b, "arith.divui", q, 2), 8));
  MlirValue boff_ = boff(L, mlb_i32(b, 0), s->xp_stride, brow, bcol);
  MlirValue bhs = ldmatrix_at(L, mlb_add(b, s->xp, boff_), 4, 1);
  MlirValue bls = ldmatrix_at(L, mlb_add(b, s->xlo, boff_), 4, 1);
  MlirValue bh[4], bl[4];
  for (int e = 0; e < 4; e++) bh[e] = mlb_extract(b, bhs, e, b->i32), bl[e] = mlb_extract(b, bls, e, b->i32);
  /* bf16x3: m x' = (mh + ml)(xh + xl) less ml xl (about 2^-16 of it), the small
   * products first, in this order at every step (bitwise repeatable) */
  MlirValue acc[8];
  for (int h = 0; h < 2; h++) {
    MlirValue bth[2] = {bh[2 * h], bh[2 * h + 1]}, btl[2] = {bl[2 * h], bl[2 * h + 1]};
    MlirValue c4[4];
    for (int e = 0; e < 4; e++) c4[e] = scaled[h * 4 + e];
    MlirValue *A[3] = {al, ah, ah}, *B[3] = {bth, btl, bth}; /* lo hi, hi lo, hi hi */
    for (int p = 0; p < 3; p++) {
      MlirOperation mma = mma_sync(L, DT_BF16, A[p], B[p], c4);
      for (int e = 0; e < 4; e++) c4[e] = mlb_extract(b, mlb_res(mma, 0), e, b->f32);
    }
    for (int e = 0; e < 4; e++) acc[h * 4 + e] = c4[e];
  }
  mlb_for_end(b, &kl, 8, acc);

  /* out += exp(g[r] - g[16 I]) acc (decay_mm), exp(g[16 (J + 1)] - g[j]) acc (decay_mm_t):
   * c0, c1 at (g4, 2 t4 + {0, 1}) of each n8 tile, c2, c3 eight rows below */
  MlirValue ref = s->t ? mlb_mul_c(b, mlb_add_c(b, oblk, 1), 16) : m0;
  for (int h = 0; h < 2; h++) {
    MlirValue col = mlb_add(b, n0, mlb_mul_c(b, t4, 2));
    col = mlb_add_c(b, col, 8 * h);
    Vals gref = view_vals(L, &s->g, ref, col, 2);
    for (int up = 0; up < 2; up++) {
      MlirValue row = mlb_add(b, m0, g4);
      row = mlb_add_c(b, row, 8 * up);
      Vals gr = view_vals(L, &s->g, row, col, 2);
      Vals o = smem_load_vals(L, s->out, DT_F32, s->stride, row, col, 2);
      for (int w = 0; w < 2; w++) {
        MlirValue dg = s->t ? mlb_bin(b, "arith.subf", gref.v[w], gr.v[w]) : mlb_bin(b, "arith.subf", gr.v[w], gref.v[w]);
        MlirValue sc = fmul(b, lk_exp(L, dg), mlb_res(kl.op, h * 4 + up * 2 + w));
        o.v[w] = mlb_bin(b, "arith.addf", o.v[w], sc);
      }
      smem_store_vals(L, s->out, DT_F32, s->stride, row, col, o);
    }
  }
  mlb_for_end(b, &tl, 0, NULL);
}

static void lower_blocked(LK *L, const CirInst *in, Home *h, View m, View g) {
  Mlb *b = &L->b;
  Blk s = {0};
  s.in = in;
  s.t = in->op == OP_DECAY_MM_T;
  s.C = in->ty.shape[0];
  s.K = in->ty.shape[1];
  s.nb = s.C / 16;
  s.m = m;
  s.g = g;
  /* x: read once per element, where it lives (its home, or recomputed) */
  const CirInst *xs = in->args[1];
  Home *xh = home_of(L, xs);
  s.x = (View){0};
  s.x.dt = xs->ty.dt;
  if (xh->kind == H_SMEM) {
    s.x.base = home_base(L, xs);
    s.x.sdt = xh->sdt;
    s.x.stride = xh->stride;
  } else {
    s.x.fused = xs;
  }
  s.out = mlb_i32(b, h->offset);
  s.stride = h->stride;
  if (s.nb > 1) {
    /* lower_plan.c: each buffer holds [C - 16] rows of hi, then of lo */
    s.mp_stride = h->stage_stride[3];
    s.mp = mlb_i32(b, h->stage_off[3]);
    s.mlo = mlb_i32(b, h->stage_off[3] + (s.C - 16) * s.mp_stride * 2);
    s.xp_stride = h->stage_stride[4];
    s.xp = mlb_i32(b, h->stage_off[4]);
    s.xlo = mlb_i32(b, h->stage_off[4] + (s.C - 16) * s.xp_stride * 2);
    s.step = mlb_i32(b, h->stage_off[4] + 2 * (s.C - 16) * s.xp_stride * 2);
  }
  mlb_barrier(b); /* staged operands are complete */
  if (s.nb > 1) tile_loop(L, in->args[0], s.C - 16, s.C - 16, 8, mp_fn, &s);
  strided_loop(L, s.nb * (s.K / DW), diag_task, &s);
  if (s.nb == 1) return;
  mlb_barrier(b); /* x', step, m' and the diagonal blocks' sums are written */
  offdiag(L, &s);
}

void lower_decay_mm(LK *L, const CirInst *in) {
  Home *h = home_of(L, in);
  View m = operand_view(L, in, 0);
  if (decay_mm_blocked(L, in)) {
    View g = operand_view(L, in, 2);
    lower_blocked(L, in, h, m, g);
    return;
  }
  View x = operand_view(L, in, 1);
  View g = operand_view(L, in, 2);
  DmmCtx s = {in, m, x, g, mlb_i32(&L->b, h->offset), h->stride, in->ty.shape[0]};
  mlb_barrier(&L->b); /* staged operands are complete */
  strided_loop(L, in->ty.shape[0] * in->ty.shape[1], dmm_elem, &s);
}
