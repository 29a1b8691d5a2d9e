/* lower_decay.c - decay_dot(a, b, g) on tensor cores, safely.
 *
 * D[r, j] = sum_c a[r,c] b[j,c] exp(g[r,c] - g[j,c]) for j <= r, else 0, with
 * g non-increasing down the rows (a cumulative log-decay). exp(-g) alone
 * overflows under strong decay, so the rows are split into 16-row blocks and
 * every factor is taken relative to a reference row inside the product:
 *   off-diagonal block (I, J), J < I, reference row p = 16 I:
 *     D = (a * exp(g - g[p])) (b * exp(g[p] - g))^T over the rows of I and J:
 *     both factors are <= 1 (r >= p > j), so the bf16 operands of the
 *     tensor-core product cannot overflow;
 *   diagonal blocks: element by element in fp32.
 * Operand staging, for each block row I >= 1 in turn, in buffers reused from
 * row to row: a' = a * exp(g - g[16 I]) for the rows of block I, and
 * b' = b * exp(g[16 I] - g) for the rows j < 16 I. */
#include <stdio.h>

#include "lower.h"

#define DIAG_MAXCW 16 /* channels per lane in the diagonal blocks */

/* The staging area of a decay_dot: b' holds one block row's rows at a time. */
int decay_bprime_rows(int C) { return C - 16; }


typedef struct ScaleCtx {
  View x, g;
  MlirValue out;
  int out_stride;
  int ref_block; /* b': the reference row is 16 * ref_block; a': -1 (own block) */
  int row0;      /* b': first row of this block row's staging */
} ScaleCtx;

/* One element group of a' or of one block row of b'. */
/* b' (row0 = 0): rows j < 16 I, scaled by exp(g[16 I] - g[j]);
 * a' (row0 = -16 I): row i of block I, scaled by exp(g[16 I + i] - g[16 I]). */
static void scale_fn(LK *L, const CirInst *v, MlirValue r, MlirValue c, int W, void *vctx) {
  ScaleCtx *s = vctx;
  Mlb *b = &L->b;
  MlirValue ref = mlb_i32(b, 16 * s->ref_block);
  int is_a = s->row0 < 0;
  MlirValue src = is_a ? mlb_add(b, r, ref) : r;
  Vals x = view_vals(L, &s->x, src, c, W), gr = view_vals(L, &s->g, src, c, W), gp = view_vals(L, &s->g, ref, c, W);
  Vals y = {.n = W};
  for (int i = 0; i < W; i++) {
    MlirValue d = is_a ? mlb_bin(b, "arith.subf", gr.v[i], gp.v[i]) : mlb_bin(b, "arith.subf", gp.v[i], gr.v[i]);
    y.v[i] = mlb_bin(b, "arith.mulf", x.v[i], lk_exp(L, d));
  }
  smem_store_vals(L, s->out, DT_BF16, s->out_stride, r, c, y);
}

static MlirValue boff(LK *L, MlirValue base, int stride, MlirValue row, MlirValue col) {
  Mlb *b = &L->b;
  return mlb_add(b, base, mlb_mul_c(b, mlb_add(b, mlb_mul_c(b, row, stride), col), 2));
}

/* The diagonal blocks by running products. For r >= j in one 16-row block,
 *   exp(g[r] - g[j]) = d[j + 1] d[j + 2] ... d[r],  d[t] = exp(g[t] - g[t - 1]) <= 1,
 * so column j of the block's triangle is a walk down the rows with
 * F = b[j] d[j + 1] ... d[r] (per channel, never above |b[j]|: nothing
 * overflows, what flushes to 0 is below 2^-126) and D[r, j] = sum_c a[r, c] F[c].
 * A lane owns (block, column pair {j, 15 - j}, group of cw channels): both
 * columns walk the same rows below 15 - j, so each d is computed once per
 * lane; the pair's 17 rows balance the lanes. The 8 (or more) channel groups
 * of a block lie in adjacent lanes and add their partial sums by a fixed
 * butterfly; a warp takes one column pair of up to 32 / ng blocks at a time.
 * Each output's sum is in a fixed order (the lane's channels in order, then
 * the butterfly), so results do not depend on timing. */
typedef struct DiagWalk {
  const View *A, *B, *G;
  MlirValue out, R0, c0, lead;
  int stride, cw, w, ng;
} DiagWalk;

/* The lane's channels, 4 at a time: group cg reads channels 4 (ng o + cg) ..
 * + 3 for o = 0 .. cw / 4 - 1, so the ng lanes of a block read one
 * contiguous stretch of each row together (no shared-memory bank conflicts
 * among them). */
static void diag_load(LK *L, const DiagWalk *s, const View *v, MlirValue row, MlirValue *x) {
  for (int o = 0; o < s->cw; o += s->w) {
    MlirValue c = mlb_add_c(&L->b, s->c0, o * s->ng);
    Vals t = view_vals(L, v, row, c, s->w);
    for (int i = 0; i < s->w; i++) x[o + i] = t.v[i];
  }
}

/* Row t of the block: F *= exp(g[t] - g[t - 1]) for the first upd columns
 * (a column starting at this row keeps F = b[t]), then D[t, col[k]]. */
static void diag_step(LK *L, const DiagWalk *s, MlirValue t, int upd, int nf, MlirValue F[][DIAG_MAXCW],
                      const MlirValue *col) {
  Mlb *b = &L->b;
  MlirValue row = mlb_add(b, s->R0, t);
  if (upd) {
    MlirValue g[DIAG_MAXCW], gp[DIAG_MAXCW];
    MlirValue prev = mlb_add_c(b, row, -1);
    diag_load(L, s, s->G, prev, gp);
    diag_load(L, s, s->G, row, g);
    for (int c = 0; c < s->cw; c++) {
      MlirValue x = mlb_bin(b, "arith.subf", g[c], gp[c]);
      MlirValue d = lk_exp(L, x);
      for (int k = 0; k < upd; k++) F[k][c] = mlb_bin(b, "arith.mulf", F[k][c], d);
    }
  }
  MlirValue a[DIAG_MAXCW], acc[2];
  diag_load(L, s, s->A, row, a);
  for (int k = 0; k < nf; k++) {
    acc[k] = mlb_bin(b, "arith.mulf", a[0], F[k][0]);
    for (int c = 1; c < s->cw; c++) {
      MlirValue p = mlb_bin(b, "arith.mulf", a[c], F[k][c]);
      acc[k] = mlb_bin(b, "arith.addf", acc[k], p);
    }
    for (int off = 1; off < s->ng; off *= 2) {
      MlirValue y = lk_shuffle_xor(L, acc[k], off);
      acc[k] = mlb_bin(b, "arith.addf", acc[k], y);
    }
  }
  MlbIf st;
  mlb_if_begin(b, &st, s->lead, 0, NULL);
  for (int k = 0; k < nf; k++) {
    Vals x = {.n = 1};
    x.v[0] = acc[k];
    MlirValue j = mlb_add(b, s->R0, col[k]);
    smem_store_vals(L, s->out, DT_F32, s->stride, row, j, x);
  }
  mlb_if_else(b, &st, 0, NULL);
  mlb_if_end(b, &st, 0, NULL);
}

/* Rows lo .. hi - 1 of the block (warp-uniform bounds), nf running columns
 * carried from row to row. */
static void diag_walk(LK *L, const DiagWalk *s, MlirValue lo, MlirValue hi, int nf, MlirValue F[][DIAG_MAXCW],
                      const MlirValue *col) {
  Mlb *b = &L->b;
  MlirValue v[2 * DIAG_MAXCW];
  int n = nf * s->cw;
  for (int i = 0; i < n; i++) v[i] = F[i / s->cw][i % s->cw];
  MlbFor rows;
  MlirValue one = mlb_i32(b, 1);
  mlb_for_begin(b, &rows, lo, hi, one, n, v);
  for (int i = 0; i < n; i++) F[i / s->cw][i % s->cw] = rows.iter[i];
  diag_step(L, s, rows.iv, nf, nf, F, col);
  for (int i = 0; i < n; i++) v[i] = F[i / s->cw][i % s->cw];
  mlb_for_end(b, &rows, n, v);
  for (int i = 0; i < n; i++) F[i / s->cw][i % s->cw] = mlb_res(rows.op, i);
}

static void diag_blocks(LK *L, const View *A, const View *B, const View *G, MlirValue out, int stride, int nb, int K) {
  Mlb *b = &L->b;
  DiagWalk s = {.A = A, .B = B, .G = G, .out = out, .stride = stride};
  s.ng = 8;
  while (K / s.ng > DIAG_MAXCW) s.ng *= 2;
  s.cw = K / s.ng;
  s.w = 4;
  while (s.cw % s.w) s.w /= 2;
  int bpw = 32 / s.ng, passes = (nb + bpw - 1) / bpw, nw = L->nthreads / 32;
  MlirValue lane = mlb_bin_c(b, "arith.remui", L->tid, 32);
  MlirValue warp = mlb_bin_c(b, "arith.divui", L->tid, 32);
  MlirValue cg = mlb_bin_c(b, "arith.remui", lane, s.ng);
  MlirValue sub = mlb_bin_c(b, "arith.divui", lane, s.ng);
  s.c0 = mlb_mul_c(b, cg, s.w);
  MlirValue first = mlb_cmpi(b, "eq", cg, mlb_i32(b, 0));
  /* units (column pair p, pass q) = q * 8 + p over the warps in turn */
  MlbFor units;
  MlirValue u_hi = mlb_i32(b, 8 * passes), u_step = mlb_i32(b, nw);
  mlb_for_begin(b, &units, warp, u_hi, u_step, 0, NULL);
  {
    MlirValue p = mlb_bin_c(b, "arith.remui", units.iv, 8);
    MlirValue q = mlb_bin_c(b, "arith.divui", units.iv, 8);
    MlirValue blk = mlb_add(b, mlb_mul_c(b, q, bpw), sub);
    /* lanes past the last block read the last block and store nothing */
    MlirValue live = mlb_cmpi(b, "ult", blk, mlb_i32(b, nb));
    s.lead = mlb_bin(b, "arith.andi", first, live);
    MlirValue last = mlb_i32(b, nb - 1);
    blk = mlb_select(b, live, blk, last);
    s.R0 = mlb_mul_c(b, blk, 16);
    MlirValue col[2];
    col[0] = p;
    col[1] = mlb_bin(b, "arith.subi", mlb_i32(b, 15), p);
    MlirValue F[2][DIAG_MAXCW];
    /* column j = p from its own row: F = b[j] */
    MlirValue rj = mlb_add(b, s.R0, col[0]);
    diag_load(L, &s, B, rj, F[0]);
    diag_step(L, &s, col[0], 0, 1, F, col);
    /* rows j + 1 .. 14 - j: that column alone */
    MlirValue lo = mlb_add_c(b, p, 1);
    diag_walk(L, &s, lo, col[1], 1, F, col);
    /* row 15 - j: the second column starts (F = b[15 - j]); then both */
    MlirValue rj2 = mlb_add(b, s.R0, col[1]);
    diag_load(L, &s, B, rj2, F[1]);
    diag_step(L, &s, col[1], 1, 2, F, col);
    MlirValue lo2 = mlb_add_c(b, col[1], 1);
    MlirValue end = mlb_i32(b, 16);
    diag_walk(L, &s, lo2, end, 2, F, col);
  }
  mlb_for_end(b, &units, 0, NULL);
}

void lower_decay(LK *L, const CirInst *in) {
  Mlb *b = &L->b;
  Home *h = home_of(L, in);
  int C = in->ty.shape[0], K = in->args[0]->ty.shape[1];
  if (C % 16 || K % 16) {
    lk_error(L, in, "decay_dot needs rows and columns in multiples of 16 for the tensor cores; got [%d, %d]", C, K);
    return;
  }
  if (K > 32 * DIAG_MAXCW || K % (K > 16 * DIAG_MAXCW ? 32 : K > 8 * DIAG_MAXCW ? 16 : 8)) {
    lk_error(L, in, "decay_dot's diagonal blocks take at most %d channels, a multiple of 32 above %d; got %d",
             32 * DIAG_MAXCW, 16 * DIAG_MAXCW, K);
    return;
  }
  int nb = C / 16;
  View A = operand_view(L, in, 0);
  View B = in->args[1] == in->args[0] ? A : operand_view(L, in, 1);
  View G = operand_view(L, in, 2);
  mlb_barrier(b);
  MlirValue ap = mlb_i32(b, h->stage_off[3]), bp = mlb_i32(b, h->stage_off[4]);
  int st = K + 8;
  int W = 8;
  while (K % W) W /= 2;

  MlirValue out = mlb_i32(b, h->offset);
  MlirValue lane = mlb_bin(b, "arith.remui", L->tid, mlb_i32(b, 32));
  MlirValue warp = mlb_bin(b, "arith.divui", L->tid, mlb_i32(b, 32));
  MlirValue g4 = mlb_bin(b, "arith.divui", lane, mlb_i32(b, 4)), t4 = mlb_bin(b, "arith.remui", lane, mlb_i32(b, 4));
  int nw = L->nthreads / 32;

  /* off-diagonal 16x16 blocks on tensor cores, block row by block row:
   * b' for row I, then the tasks (I, J), J < I, one per warp in turn */
  for (int I = 1; I < nb; I++) {
    /* a' for the rows of block I, b' for the rows before it: reference row 16 I */
    ScaleCtx sa = {A, G, ap, st, I, -16 * I};
    tile_loop(L, in->args[0], 16, K, W, scale_fn, &sa);
    ScaleCtx sb = {B, G, bp, st, I, 0};
    tile_loop(L, in->args[1], 16 * I, K, W, scale_fn, &sb);
    mlb_barrier(b);
    for (int J = 0; J < I; J++) {
      int task = J;
      int row0 = 0;
      MlbIf mine;
      mlb_if_begin(b, &mine, mlb_cmpi(b, "eq", warp, mlb_i32(b, task % nw)), 0, NULL);
      MlirValue zero = mlb_f32(b, 0.0), init[8];
      for (int e = 0; e < 8; e++) init[e] = zero;
      MlbFor kl;
      MlirValue k_lo = mlb_i32(b, 0);
      MlirValue k_hi = mlb_i32(b, K);
      MlirValue k_step = mlb_i32(b, 16);
      mlb_for_begin(b, &kl, k_lo, k_hi, k_step, 8, init);
      MlirValue k0 = kl.iv;
      /* A: row lane % 16 of a' (block I), column k0 + (lane / 16) * 8 */
      MlirValue arow = mlb_bin(b, "arith.remui", lane, mlb_i32(b, 16));
      MlirValue acol = mlb_add(b, k0, mlb_mul_c(b, mlb_bin_c(b, "arith.divui", lane, 16), 8));
      MlirValue as = ldmatrix_at(L, boff(L, ap, st, arow, acol), 4, 0);
      MlirValue af[4];
      for (int e = 0; e < 4; e++) af[e] = mlb_extract(b, as, e, b->i32);
      /* B held [N][K]: rows 16 J .. 16 J + 15 of b'; matrices q = lane / 8:
       * rows + (q / 2) * 8, cols k0 + (q % 2) * 8 */
      MlirValue q = mlb_bin(b, "arith.divui", lane, mlb_i32(b, 8));
      MlirValue brow = mlb_add_c(b, mlb_bin_c(b, "arith.remui", lane, 8), row0 + 16 * J);
      brow = mlb_add(b, brow, mlb_mul_c(b, mlb_bin_c(b, "arith.divui", q, 2), 8));
      MlirValue bcol = mlb_add(b, k0, mlb_mul_c(b, mlb_bin_c(b, "arith.remui", q, 2), 8));
      MlirValue bs = ldmatrix_at(L, boff(L, bp, st, brow, bcol), 4, 0);
      MlirValue bf[4];
      for (int e = 0; e < 4; e++) bf[e] = mlb_extract(b, bs, e, b->i32);
      MlirValue acc[8];
      for (int half = 0; half < 2; half++) {
        MlirValue bh[2] = {bf[2 * half], bf[2 * half + 1]};
        MlirOperation mma = mma_sync(L, DT_BF16, af, bh, &kl.iter[half * 4]);
        for (int e = 0; e < 4; e++) acc[half * 4 + e] = mlb_extract(b, mlb_res(mma, 0), e, b->f32);
      }
      mlb_for_end(b, &kl, 8, acc);
      for (int half = 0; half < 2; half++) {
        MlirValue col = mlb_add_c(b, mlb_mul_c(b, t4, 2), 16 * J + 8 * half);
        for (int up = 0; up < 2; up++) {
          MlirValue row = mlb_add_c(b, mlb_add_c(b, g4, 16 * I), 8 * up);
          Vals x = {.n = 2};
          x.v[0] = mlb_res(kl.op, half * 4 + up * 2);
          x.v[1] = mlb_res(kl.op, half * 4 + up * 2 + 1);
          smem_store_vals(L, out, DT_F32, h->stride, row, col, x);
        }
      }
      mlb_if_else(b, &mine, 0, NULL);
      mlb_if_end(b, &mine, 0, NULL);
    }
    mlb_barrier(b); /* before the next row's b' overwrites this one */
  }

  /* zeros above the diagonal */
  MlbFor el;
  MlirValue el_hi = mlb_i32(b, C * C);
  MlirValue el_step = mlb_i32(b, L->nthreads);
  mlb_for_begin(b, &el, L->tid, el_hi, el_step, 0, NULL);
  {
    MlirValue r = mlb_bin(b, "arith.divui", el.iv, mlb_i32(b, C)), j = mlb_bin(b, "arith.remui", el.iv, mlb_i32(b, C));
    MlbIf up;
    mlb_if_begin(b, &up, mlb_cmpi(b, "sgt", j, r), 0, NULL);
    Vals x = {.n = 1};
    x.v[0] = mlb_f32(b, 0.0);
    smem_store_vals(L, out, DT_F32, h->stride, r, j, x);
    mlb_if_else(b, &up, 0, NULL);
    mlb_if_end(b, &up, 0, NULL);
  }
  mlb_for_end(b, &el, 0, NULL);
  diag_blocks(L, &A, &B, &G, out, h->stride, nb, K);
}
