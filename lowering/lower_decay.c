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
 *   diagonal blocks: exactly in fp32 by a running product down each column:
 *     E[r, j, c] = E[r - 1, j, c] exp(g[r, c] - g[r - 1, c]), E[j, j, c] = 1,
 *     so each row step costs one exponential, one multiply and one FMA per
 *     channel; every factor is <= 1 (see diag_task below).
 * Operand staging, for each block row I >= 1 in turn, in buffers reused from
 * row to row: a' = a * exp(g - g[16 I]) for the rows of block I, and
 * b' = b * exp(g[16 I] - g) for the rows j < 16 I. */
#include <stdio.h>

#include "lower.h"

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

/* ------------------------------------------------------------------ */
/* Diagonal blocks by a running product.
 *
 * Block d's entry (r, j), j <= r, is sum_c a[r,c] F_r[c] with F_j = b[j,:]
 * and F_r = F_{r-1} * exp(g[r,:] - g[r-1,:]): for a non-increasing g every
 * factor is <= 1, so nothing overflows and the product is exact up to
 * rounding (at most 15 factors). A task is (block, column pair {p, 15 - p},
 * slice of K / ns channels): column p has rows p .. 15 and column 15 - p rows
 * 15 - p .. 15, 17 row steps together, the same for every task, so the ns
 * slices of one (block, pair) run in step in adjacent lanes and their partial
 * sums meet in a fixed butterfly (deterministic; all 32 lanes of a warp take
 * the same path: the task count is a multiple of 32, as is the thread count). */

/* Channels a thread carries through the row steps: DIAG_SLICE where K
 * allows (4: more lanes per sum, but few registers, which keeps prep kernels
 * at two blocks per SM), at most MAX_SLICE. */
enum { DIAG_SLICE = 4, MAX_SLICE = 32 };

typedef struct DiagCtx {
  View A, B, G;
  MlirValue out;
  int stride, nb, ns, cw;
} DiagCtx;

/* Slices per (block, pair): a power of two in [4, 32] with K a multiple of
 * it, at least one task per thread where possible and DIAG_SLICE channels
 * per slice where K allows. */
static int decay_slices(int K, int nb, int nthreads) {
  int ns = 4;
  while (ns < 32 && K % (2 * ns) == 0 && (nb * 8 * ns < nthreads || K / ns > DIAG_SLICE)) ns *= 2;
  return ns;
}

static int vec_width(int n) {
  int w = MAX_W;
  while (n % w) w /= 2;
  return w;
}

/* CW values of a view's row r from column c0 */
static void row_vals(LK *L, const View *v, MlirValue r, MlirValue c0, int CW, MlirValue *out) {
  int W = vec_width(CW);
  for (int i = 0; i < CW; i += W) {
    MlirValue c = i ? mlb_add_c(&L->b, c0, i) : c0;
    Vals x = view_vals(L, v, r, c, W);
    for (int e = 0; e < W; e++) out[i + e] = x.v[e];
  }
}

/* sum_i a[i] f[i] over this slice in index order, then over the ns slices */
static MlirValue slice_dot(LK *L, const MlirValue *a, const MlirValue *f, int CW, int ns) {
  Mlb *b = &L->b;
  MlirValue acc = mlb_bin(b, "arith.mulf", a[0], f[0]);
  for (int i = 1; i < CW; i++) {
    MlirValue t = mlb_bin(b, "arith.mulf", a[i], f[i]);
    acc = mlb_bin(b, "arith.addf", acc, t);
  }
  for (int off = 1; off < ns; off *= 2) {
    MlirValue y = lk_shuffle_xor(L, acc, off);
    acc = mlb_bin(b, "arith.addf", acc, y);
  }
  return acc;
}

/* D[16 d + row, 16 d + col] = x, from the first lane of the slice group */
static void diag_put(LK *L, const DiagCtx *s, MlirValue first, MlirValue base, MlirValue row, MlirValue col,
                     MlirValue x) {
  Mlb *b = &L->b;
  MlbIf w;
  mlb_if_begin(b, &w, first, 0, NULL);
  Vals v = {.n = 1};
  v.v[0] = x;
  MlirValue r = mlb_add(b, base, row);
  MlirValue c = mlb_add(b, base, col);
  smem_store_vals(L, s->out, DT_F32, s->stride, r, c, v);
  mlb_if_else(b, &w, 0, NULL);
  mlb_if_end(b, &w, 0, NULL);
}

static void diag_task(LK *L, MlirValue t, void *vctx) {
  DiagCtx *s = vctx;
  Mlb *b = &L->b;
  int ns = s->ns, CW = s->cw;
  MlirValue sl = mlb_bin_c(b, "arith.remui", t, ns);
  MlirValue pair = mlb_bin_c(b, "arith.remui", mlb_bin_c(b, "arith.divui", t, ns), 8);
  MlirValue blk = mlb_bin_c(b, "arith.divui", t, 8 * ns);
  MlirValue base = mlb_mul_c(b, blk, 16);
  MlirValue c0 = mlb_mul_c(b, sl, CW);
  MlirValue first = mlb_cmpi(b, "eq", sl, mlb_i32(b, 0));
  MlirValue F[MAX_SLICE], Gp[MAX_SLICE], a[MAX_SLICE];
  /* step 0: row p of column p (E = 1) */
  MlirValue j0 = mlb_add(b, base, pair);
  row_vals(L, &s->B, j0, c0, CW, F);
  row_vals(L, &s->G, j0, c0, CW, Gp);
  row_vals(L, &s->A, j0, c0, CW, a);
  diag_put(L, s, first, base, pair, pair, slice_dot(L, a, F, CW, ns));
  /* steps 1 .. 16: column p down to row 15, then (at step 16 - p) column
   * 15 - p from its diagonal */
  MlirValue init[2 * MAX_SLICE];
  for (int i = 0; i < CW; i++) init[i] = F[i], init[CW + i] = Gp[i];
  MlbFor st;
  MlirValue lo = mlb_i32(b, 1);
  MlirValue hi = mlb_i32(b, 17);
  MlirValue one = mlb_i32(b, 1);
  mlb_for_begin(b, &st, lo, hi, one, 2 * CW, init);
  MlirValue k = st.iv;
  MlirValue turn = mlb_bin(b, "arith.subi", mlb_i32(b, 16), pair); /* 16 - p */
  MlirValue second = mlb_cmpi(b, "uge", k, turn);
  MlirValue row_a = mlb_add(b, pair, k);
  MlirValue row_b = mlb_bin_c(b, "arith.subi", k, 1);
  MlirValue row = mlb_select(b, second, row_b, row_a);
  MlirValue col_b = mlb_bin(b, "arith.subi", mlb_i32(b, 15), pair);
  MlirValue col = mlb_select(b, second, col_b, pair);
  MlirValue r = mlb_add(b, base, row);
  MlirValue Gr[MAX_SLICE];
  row_vals(L, &s->G, r, c0, CW, Gr);
  MlirValue restart = mlb_cmpi(b, "eq", k, turn);
  MlirType ft[MAX_SLICE];
  for (int i = 0; i < CW; i++) ft[i] = b->f32;
  MlbIf rs;
  mlb_if_begin(b, &rs, restart, CW, ft);
  MlirValue Fb[MAX_SLICE];
  row_vals(L, &s->B, r, c0, CW, Fb); /* the new column's own row: E = 1 */
  mlb_if_else(b, &rs, CW, Fb);
  MlirValue Fn[MAX_SLICE];
  for (int i = 0; i < CW; i++) {
    MlirValue dg = mlb_bin(b, "arith.subf", Gr[i], st.iter[CW + i]);
    MlirValue e = lk_exp(L, dg);
    Fn[i] = mlb_bin(b, "arith.mulf", st.iter[i], e);
  }
  mlb_if_end(b, &rs, CW, Fn);
  for (int i = 0; i < CW; i++) F[i] = mlb_res(rs.op, i);
  row_vals(L, &s->A, r, c0, CW, a);
  diag_put(L, s, first, base, row, col, slice_dot(L, a, F, CW, ns));
  MlirValue yield[2 * MAX_SLICE];
  for (int i = 0; i < CW; i++) yield[i] = F[i], yield[CW + i] = Gr[i];
  mlb_for_end(b, &st, 2 * CW, yield);
}

void lower_decay(LK *L, const CirInst *in) {
  Mlb *b = &L->b;
  Home *h = home_of(L, in);
  int C = in->ty.shape[0], K = in->args[0]->ty.shape[1];
  if (C % 16 || K % 16) {
    lk_error(L, in, "decay_dot needs rows and columns in multiples of 16 for the tensor cores; got [%d, %d]", C, K);
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
  /* the diagonal blocks' lower triangles (diag_task) */
  int ns = decay_slices(K, nb, L->nthreads);
  DiagCtx dc = {A, B, G, out, h->stride, nb, ns, K / ns};
  if (K / ns > MAX_SLICE) {
    lk_error(L, in, "decay_dot supports at most %d columns; got %d", 32 * MAX_SLICE, K);
    return;
  }
  strided_loop(L, nb * 8 * dc.ns, diag_task, &dc);
}
