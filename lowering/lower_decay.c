/* lower_decay.c - decay_dot(a, b, g) on tensor cores, safely.
 *
 * D[r, j] = sum_c a[r,c] b[j,c] exp(g[r,c] - g[j,c]) for j <= r, else 0, with
 * g non-increasing down the rows (a cumulative log-decay). exp(-g) alone
 * overflows under strong decay, so the rows are split into 16-row blocks and
 * every factor is taken relative to a reference row inside the product:
 *   off-diagonal block (I, J), J < I, reference row p = 16 (J + 1), the first
 *   row after block J:
 *     D = (a * exp(g - g[p])) (b * exp(g[p] - g))^T over the rows of I and J:
 *     both factors are <= 1 (r >= p > j), so the bf16 operands of the
 *     tensor-core product cannot overflow;
 *   diagonal blocks: their lower-left 8x8 quarter (rows 16 d + 8 .., columns
 *   16 d .. 16 d + 7) the same way, relative to row 16 d + 8; the two 8x8
 *   triangles left element by element in fp32.
 * One phase stages b' = b * exp(g[16 (J + 1)] - g) for the rows of every
 * block J < C / 16 - 1 (its reference depends only on J); after one barrier
 * the off-diagonal tasks (I, J) run one per warp, each building its a' =
 * a * exp(g - g[16 (J + 1)]) fragments in registers from a and g where they
 * live, while the other threads (and each task's warp after it) fill the
 * zeros and the diagonal blocks: the three write disjoint parts of D.
 *
 * Paired (plan_decay_pairs in lower_plan.c): a second decay_dot of the same b
 * and g rides on the first one's pass. b' is staged once, each task builds
 * both a' from one set of decays and runs both products on the same b'
 * fragments, and each diagonal element's exponentials and b, g loads serve
 * both sums. The first one's values go straight to the store that consumes
 * them (it has no tile), the second's to its tile. */
#include <stdio.h>

#include "lower.h"

/* The staging area of a decay_dot: b' for the rows of every block but the last. */
int decay_bprime_rows(int C) { return C - 16; }


typedef struct ScaleCtx {
  View x, g;
  MlirValue out;
  int out_stride;
} ScaleCtx;

/* One element group of b': row j scaled by exp(g[16 (j / 16 + 1)] - g[j]). */
static void scale_fn(LK *L, const CirInst *v, MlirValue r, MlirValue c, int W, void *vctx) {
  (void)v;
  ScaleCtx *s = vctx;
  Mlb *b = &L->b;
  MlirValue ref = mlb_mul_c(b, mlb_add_c(b, mlb_bin_c(b, "arith.divui", r, 16), 1), 16);
  Vals x = view_vals(L, &s->x, r, c, W), gr = view_vals(L, &s->g, r, c, W), gp = view_vals(L, &s->g, ref, c, W);
  Vals y = {.n = W};
  for (int i = 0; i < W; i++) {
    MlirValue d = mlb_bin(b, "arith.subf", gp.v[i], gr.v[i]);
    y.v[i] = mlb_bin(b, "arith.mulf", x.v[i], lk_exp(L, d));
  }
  smem_store_vals(L, s->out, DT_BF16, s->out_stride, r, c, y);
}

static MlirValue boff(LK *L, MlirValue base, int stride, MlirValue row, MlirValue col) {
  Mlb *b = &L->b;
  return mlb_add(b, base, mlb_mul_c(b, mlb_add(b, mlb_mul_c(b, row, stride), col), 2));
}

/* Two f32 as one register of two bf16 (lo in the low half), as the tensor
 * cores read a fragment. */
static MlirValue pack_bf16x2(LK *L, MlirValue lo, MlirValue hi) {
  Mlb *b = &L->b;
  MlirValue v = mlb_undef(b, mlb_vec(b, 2, b->bf16));
  MlirValue l16 = mlb_cast(b, "arith.truncf", lo, b->bf16);
  v = mlb_vinsert(b, v, l16, 0);
  MlirValue h16 = mlb_cast(b, "arith.truncf", hi, b->bf16);
  v = mlb_vinsert(b, v, h16, 1);
  return mlb_bitcast(b, v, b->i32);
}

/* Lane's A fragments of a' for the 16 rows from row0 and columns k0 .. k0 +
 * 15 (mma.m16n8k16 layout: rows lane / 4 and + 8, columns 2 (lane % 4) + 0,
 * 1 and + 8), a' = a * exp(g - g[ref]), for each of the n operands a (the
 * decays computed once). */
static void aprime_frags(LK *L, const View *A, int n, const View *G, MlirValue row0, MlirValue ref, MlirValue k0,
                         MlirValue g4, MlirValue t4, int lower_only, MlirValue af[2][4]) {
  Mlb *b = &L->b;
  MlirValue c0 = mlb_add(b, k0, mlb_mul_c(b, t4, 2));
  for (int half = 0; half < 2; half++) {
    MlirValue c = half ? mlb_add_c(b, c0, 8) : c0;
    Vals gp = view_vals(L, G, ref, c, 2);
    for (int up = 0; up < 2; up++) {
      if (lower_only && !up) { /* rows 0 .. 7 left out (zero): their outputs are not used */
        for (int o = 0; o < n; o++) af[o][half * 2] = mlb_i32(b, 0);
        continue;
      }
      MlirValue r = mlb_add(b, row0, up ? mlb_add_c(b, g4, 8) : g4);
      Vals gr = view_vals(L, G, r, c, 2);
      MlirValue e[2];
      for (int i = 0; i < 2; i++) e[i] = lk_exp(L, mlb_bin(b, "arith.subf", gr.v[i], gp.v[i]));
      for (int o = 0; o < n; o++) {
        Vals x = view_vals(L, &A[o], r, c, 2);
        MlirValue y[2];
        for (int i = 0; i < 2; i++) y[i] = mlb_bin(b, "arith.mulf", x.v[i], e[i]);
        af[o][half * 2 + up] = pack_bf16x2(L, y[0], y[1]);
      }
    }
  }
}

/* Lane's B fragment (mma.m16n8k16, B held [N][K]: n = lane / 4, k = 2
 * (lane % 4) + 0, 1 and + 8) of b' for the 8 rows from row0 and columns k0 ..
 * k0 + 15, b' = b * exp(g[ref] - g). */
static void bprime_frag(LK *L, const View *B, const View *G, MlirValue row0, MlirValue ref, MlirValue k0, MlirValue g4,
                        MlirValue t4, MlirValue bf[2]) {
  Mlb *b = &L->b;
  MlirValue r = mlb_add(b, row0, g4);
  MlirValue c0 = mlb_add(b, k0, mlb_mul_c(b, t4, 2));
  for (int half = 0; half < 2; half++) {
    MlirValue c = half ? mlb_add_c(b, c0, 8) : c0;
    Vals gp = view_vals(L, G, ref, c, 2), gr = view_vals(L, G, r, c, 2), x = view_vals(L, B, r, c, 2);
    MlirValue y[2];
    for (int i = 0; i < 2; i++)
      y[i] = mlb_bin(b, "arith.mulf", x.v[i], lk_exp(L, mlb_bin(b, "arith.subf", gp.v[i], gr.v[i])));
    bf[half] = pack_bf16x2(L, y[0], y[1]);
  }
}

/* Where an output of the pass goes: its tile in shared memory, or (the first
 * of a pair) straight to the store it feeds, evaluated from the values. */
typedef struct DecayOut {
  const CirInst *v, *store;
  MlirValue base;
  int stride;
} DecayOut;

static void put_out(LK *L, const DecayOut *o, MlirValue r, MlirValue c, Vals x) {
  if (!o->store) {
    smem_store_vals(L, o->base, DT_F32, o->stride, r, c, x);
    return;
  }
  L->acc = (AccCtx){o->v, {x.v[0], x.n > 1 ? x.v[1] : x.v[0]}, x.n};
  emit_store_at(L, o->store, r, c, x.n);
  L->acc = (AccCtx){0};
}

/* The lower triangles (s <= t) of the 8x8 blocks on the diagonal (what the
 * diagonal 16x16 blocks leave once their lower-left quarters have gone on
 * tensor cores), in fp32: D[b + t, b + s] = sum_c a[r, c] b[j, c] exp(g[r, c]
 * - g[j, c]). A warp task is one 8x8 triangle, b = 16 d + 8 (task % 2) of
 * block d = task / 2: its lane 8 p + cg takes the pair p of rows, 7 - p (s =
 * 0 .. 7 - p) then p (s = 0 .. p): 9 elements in 9 steps for every lane. Channel group cg sums the
 * vectors cg, cg + 8, cg + 16, ... of W channels, in order, so the eight
 * groups of a step read one run of b and g of row 16 d + s, which the lanes
 * of that s share. A row's a and g stay in registers while its elements are
 * summed (reloaded once, at the lane's switch to its second row). A fixed
 * butterfly over the eight groups then adds the partial sums (every lane
 * gets the same bits), and lane cg writes the steps i with i % 8 == cg. The
 * grouping does not depend on the block's size, so neither does the result. */
enum { DG_GROUPS = 8, DG_VECS = 16, DG_TRI = 8 };

typedef struct RowOps {
  Vals a[2][DG_VECS], g[DG_VECS];
} RowOps;

static void row_ops(LK *L, const View *A, int nout, const View *G, MlirValue r, const MlirValue *chan, int NV, int W,
                    RowOps *ro) {
  for (int k = 0; k < NV; k++) {
    ro->g[k] = view_vals(L, G, r, chan[k], W);
    for (int o = 0; o < nout; o++) ro->a[o][k] = view_vals(L, &A[o], r, chan[k], W);
  }
}

/* The row operands as one list of values (load = 0) or back from one. */
static int row_ops_flat(RowOps *ro, int nout, int NV, int W, MlirValue *v, int load) {
  int n = 0;
  for (int k = 0; k < NV; k++)
    for (int i = 0; i < W; i++) {
      if (load) ro->g[k].v[i] = v[n++];
      else v[n++] = ro->g[k].v[i];
      for (int o = 0; o < nout; o++) {
        if (load) ro->a[o][k].v[i] = v[n++];
        else v[n++] = ro->a[o][k].v[i];
      }
    }
  return n;
}

/* The diagonal blocks' lower triangles element by element (any K; the form
 * for K that diag_blocks does not take): entry e of block d is (t, s) with
 * t(t+1)/2 <= e < (t+1)(t+2)/2, s = e - t(t+1)/2; each thread sums its
 * element's channels in order, one exp per term. The warps from `busy` take
 * the first elements (and so the last, partial round). */
static void diag_elements(LK *L, const View *A, int nout, const View *B, const View *G, const DecayOut *out, int nb,
                          int K, int busy) {
  Mlb *b = &L->b;
  MlbFor dg;
  MlirValue dg_hi = mlb_i32(b, nb * 136);
  MlirValue dg_step = mlb_i32(b, L->nthreads);
  MlirValue first = L->tid;
  if (busy) first = mlb_bin_c(b, "arith.remui", mlb_add_c(b, L->tid, L->nthreads - 32 * busy), L->nthreads);
  mlb_for_begin(b, &dg, first, dg_hi, dg_step, 0, NULL);
  {
    MlirValue d = mlb_bin(b, "arith.divui", dg.iv, mlb_i32(b, 136)), e = mlb_bin(b, "arith.remui", dg.iv, mlb_i32(b, 136));
    MlirValue ef = mlb_cast(b, "arith.uitofp", e, b->f32);
    MlirValue disc = mlb_binf_c(b, "arith.addf", mlb_binf_c(b, "arith.mulf", ef, 8.0), 1.0);
    MlirValue sq = mlb_intrinsic(b, "llvm.sqrt.f32", b->f32, 1, &disc);
    MlirValue t = mlb_cast(b, "arith.fptoui", mlb_binf_c(b, "arith.mulf", mlb_binf_c(b, "arith.subf", sq, 1.0), 0.5),
                           b->i32);
    /* guard the float estimate against rounding either way */
    MlirValue tri = mlb_bin_c(b, "arith.divui", mlb_mul(b, t, mlb_add_c(b, t, 1)), 2);
    MlirValue below = mlb_cmpi(b, "ult", e, tri);
    t = mlb_select(b, below, mlb_bin_c(b, "arith.subi", t, 1), t);
    MlirValue t1 = mlb_add_c(b, t, 1);
    tri = mlb_bin_c(b, "arith.divui", mlb_mul(b, t1, mlb_add_c(b, t, 2)), 2);
    MlirValue above = mlb_cmpi(b, "uge", e, tri);
    t = mlb_select(b, above, mlb_add_c(b, t, 1), t);
    tri = mlb_bin_c(b, "arith.divui", mlb_mul(b, t, mlb_add_c(b, t, 1)), 2);
    MlirValue s0 = mlb_bin(b, "arith.subi", e, tri);
    MlirValue r = mlb_add(b, mlb_mul_c(b, d, 16), t), j = mlb_add(b, mlb_mul_c(b, d, 16), s0);
    int VW = 8;
    while (K % VW) VW /= 2;
    MlirValue zero = mlb_f32(b, 0.0), init[2] = {zero, zero};
    MlbFor sum;
    MlirValue s_lo = mlb_i32(b, 0);
    MlirValue s_hi = mlb_i32(b, K);
    MlirValue s_step = mlb_i32(b, VW);
    mlb_for_begin(b, &sum, s_lo, s_hi, s_step, nout, init);
    MlirValue c = sum.iv;
    Vals bj = view_vals(L, B, j, c, VW), gr = view_vals(L, G, r, c, VW), gj = view_vals(L, G, j, c, VW);
    Vals ar[2];
    for (int o = 0; o < nout; o++) ar[o] = view_vals(L, &A[o], r, c, VW);
    MlirValue acc[2] = {sum.iter[0], nout > 1 ? sum.iter[1] : zero};
    for (int i = 0; i < VW; i++) {
      MlirValue ex = lk_exp(L, mlb_bin(b, "arith.subf", gr.v[i], gj.v[i]));
      for (int o = 0; o < nout; o++)
        acc[o] = mlb_bin(b, "arith.addf", acc[o], mlb_bin(b, "arith.mulf", mlb_bin(b, "arith.mulf", ar[o].v[i], bj.v[i]), ex));
    }
    mlb_for_end(b, &sum, nout, acc);
    for (int o = 0; o < nout; o++) {
      Vals x = {.n = 1};
      x.v[0] = mlb_res(sum.op, o);
      put_out(L, &out[o], r, j, x);
    }
  }
  mlb_for_end(b, &dg, 0, NULL);
}

/* A lane's share of a row's K channels in diag_blocks: NV vectors of W
 * (K % 16 == 0, so the share is even). The diagonal goes by lanes when they
 * fit its vectors; else element by element. */
static int diag_by_lanes(int K, int *W, int *NV) {
  int CPL = K / DG_GROUPS;
  *W = CPL % 4 == 0 ? 4 : 2;
  *NV = CPL / *W;
  return *NV <= DG_VECS;
}

/* b = x * s[:, None] read through its view (fused): x's own view and the
 * expand of s, so that a sum along b's row can apply s once. 0 otherwise. */
static int row_scaled(LK *L, const View *v, View *x, const CirInst **s) {
  const CirInst *f = v->fused;
  if (!f || f->op != OP_MUL || f->ty.rank != 2) return 0;
  for (int i = 0; i < 2; i++) {
    const CirInst *e = f->args[i], *o = f->args[1 - i];
    /* s: one value per row of b ([C] expanded to [C, 1]); x: b's shape */
    if (e->op != OP_EXPAND || e->axis != 1 || e->ty.rank != 2 || e->args[0]->ty.rank != 1) continue;
    if (e->ty.shape[0] != f->ty.shape[0] || o->ty.rank != 2 || o->ty.shape[0] != f->ty.shape[0] ||
        o->ty.shape[1] != f->ty.shape[1])
      continue;
    if (home_of(L, o)->kind != H_SMEM && !home_is_cheap(L, o)) continue;
    *x = (View){.fused = o, .dt = o->ty.dt};
    *s = e;
    return 1;
  }
  return 0;
}

static void diag_blocks(LK *L, const View *A, int nout, const View *B, const View *G, const DecayOut *out, int nb,
                        int K, MlirValue lane, MlirValue warp, int first_warp) {
  Mlb *b = &L->b;
  int nw = L->nthreads / 32;
  int CPL = K / DG_GROUPS, W, NV;
  int fits = diag_by_lanes(K, &W, &NV); /* lower_decay chose this form */
  CAKE_ASSERT(fits);
  /* b's row scale, when it has one, once per element rather than per term */
  View Bx = *B;
  const CirInst *bscale = NULL;
  if (row_scaled(L, B, &Bx, &bscale)) B = &Bx;
  /* the row operands ride in the step loop's registers when they fit in it */
  int nrow = (nout + 1) * CPL, carry = nrow <= 64;
  MlirValue wt0 = mlb_add_c(b, warp, nw - first_warp);
  wt0 = mlb_bin_c(b, "arith.remui", wt0, nw);
  MlbFor tl;
  MlirValue t_hi = mlb_i32(b, 2 * nb);
  MlirValue t_step = mlb_i32(b, nw);
  mlb_for_begin(b, &tl, wt0, t_hi, t_step, 0, NULL);
  /* task t: the triangle from row `base`, block t / 2, its half t % 2 */
  MlirValue d16 = mlb_mul_c(b, mlb_bin_c(b, "arith.divui", tl.iv, 2), 16);
  MlirValue half = mlb_bin_c(b, "arith.remui", tl.iv, 2);
  MlirValue base = mlb_add(b, d16, mlb_mul_c(b, half, 8));
  MlirValue p = mlb_bin_c(b, "arith.divui", lane, DG_GROUPS);
  MlirValue cg = mlb_bin_c(b, "arith.remui", lane, DG_GROUPS);
  MlirValue r1 = mlb_bin(b, "arith.subi", mlb_add_c(b, base, DG_TRI - 1), p);
  MlirValue r2 = mlb_add(b, base, p);
  MlirValue chan[DG_VECS];
  for (int k = 0; k < NV; k++) chan[k] = mlb_mul_c(b, mlb_add_c(b, cg, DG_GROUPS * k), W);
  RowOps ro;
  MlirValue flat[64];
  if (carry) {
    row_ops(L, A, nout, G, r1, chan, NV, W, &ro);
    row_ops_flat(&ro, nout, NV, W, flat, 0);
  }
  /* step i: row r1, s = i until the lane's switch at i = 8 - p; then row
   * r2, s = i - 8 + p */
  MlbFor st;
  MlirValue s_lo = mlb_i32(b, 0);
  MlirValue s_hi = mlb_i32(b, DG_TRI + 1);
  MlirValue s_step = mlb_i32(b, 1);
  mlb_for_begin(b, &st, s_lo, s_hi, s_step, carry ? nrow : 0, flat);
  MlirValue i = st.iv;
  MlirValue sw_at = mlb_bin(b, "arith.subi", mlb_i32(b, DG_TRI), i);
  MlirValue sw = mlb_cmpi(b, "sge", p, sw_at);
  MlirValue row = mlb_select(b, sw, r2, r1);
  MlirValue s2 = mlb_add(b, p, mlb_add_c(b, i, -DG_TRI));
  MlirValue col = mlb_add(b, base, mlb_select(b, sw, s2, i));
  if (carry) {
    MlirValue cur[64];
    for (int e = 0; e < nrow; e++) cur[e] = st.iter[e];
    MlirType ty[64];
    for (int e = 0; e < nrow; e++) ty[e] = b->f32;
    MlbIf at;
    mlb_if_begin(b, &at, mlb_cmpi(b, "eq", p, sw_at), nrow, ty);
    row_ops(L, A, nout, G, r2, chan, NV, W, &ro);
    row_ops_flat(&ro, nout, NV, W, flat, 0);
    mlb_if_else(b, &at, nrow, flat);
    mlb_if_end(b, &at, nrow, cur);
    for (int e = 0; e < nrow; e++) flat[e] = mlb_res(at.op, e);
    row_ops_flat(&ro, nout, NV, W, flat, 1);
  } else {
    row_ops(L, A, nout, G, row, chan, NV, W, &ro);
  }
  MlirValue acc[2];
  for (int o = 0; o < nout; o++) acc[o] = mlb_f32(b, 0.0);
  for (int k = 0; k < NV; k++) {
    Vals bs = view_vals(L, B, col, chan[k], W);
    Vals gs = view_vals(L, G, col, chan[k], W);
    for (int c = 0; c < W; c++) {
      /* exp of the difference itself (exact when g[r] and g[j] are close) */
      MlirValue ex = lk_exp(L, mlb_bin(b, "arith.subf", ro.g[k].v[c], gs.v[c]));
      MlirValue t = mlb_bin(b, "arith.mulf", bs.v[c], ex);
      for (int o = 0; o < nout; o++) {
        MlirValue prod = mlb_bin(b, "arith.mulf", ro.a[o][k].v[c], t);
        acc[o] = mlb_bin(b, "arith.addf", acc[o], prod);
      }
    }
  }
  for (int off = DG_GROUPS / 2; off >= 1; off /= 2)
    for (int o = 0; o < nout; o++) {
      MlirValue y = lk_shuffle_xor(L, acc[o], off);
      acc[o] = mlb_bin(b, "arith.addf", acc[o], y);
    }
  if (bscale) {
    MlirValue z = mlb_i32(b, 0);
    MlirValue sj = eval(L, bscale, col, z, 1).v[0];
    for (int o = 0; o < nout; o++) acc[o] = mlb_bin(b, "arith.mulf", acc[o], sj);
  }
  MlbIf mine;
  MlirValue i8 = mlb_bin_c(b, "arith.remui", i, DG_GROUPS);
  mlb_if_begin(b, &mine, mlb_cmpi(b, "eq", cg, i8), 0, NULL);
  for (int o = 0; o < nout; o++) {
    Vals x = {.n = 1};
    x.v[0] = acc[o];
    put_out(L, &out[o], row, col, x);
  }
  mlb_if_else(b, &mine, 0, NULL);
  mlb_if_end(b, &mine, 0, NULL);
  if (carry) row_ops_flat(&ro, nout, NV, W, flat, 0);
  mlb_for_end(b, &st, carry ? nrow : 0, flat);
  mlb_for_end(b, &tl, 0, NULL);
}

/* A warp task's start: `if (warp == task % nw)`, then a loop over K in steps
 * of 16 carrying nacc f32 accumulators from zero. */
static void task_k_loop_begin(LK *L, MlbIf *mine, MlbFor *kl, MlirValue warp, int task, int nw, int K, int nacc) {
  Mlb *b = &L->b;
  mlb_if_begin(b, mine, mlb_cmpi(b, "eq", warp, mlb_i32(b, task % nw)), 0, NULL);
  MlirValue zero = mlb_f32(b, 0.0), init[16];
  for (int e = 0; e < nacc; e++) init[e] = zero;
  MlirValue k_lo = mlb_i32(b, 0);
  MlirValue k_hi = mlb_i32(b, K);
  MlirValue k_step = mlb_i32(b, 16);
  mlb_for_begin(b, kl, k_lo, k_hi, k_step, nacc, init);
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
  /* the outputs: this decay_dot and, when it heads a pair, the second one
   * (same b and g; plan_decay_pairs), this one then written to its store */
  const CirInst *ins[2] = {in, h->pair_with};
  int nout = ins[1] ? 2 : 1;
  View A[2];
  DecayOut out[2];
  for (int o = 0; o < nout; o++) {
    A[o] = operand_view(L, ins[o], 0);
    Home *oh = home_of(L, ins[o]);
    out[o] = (DecayOut){ins[o], nout == 2 && o == 0 ? oh->epilogue : NULL, mlb_i32(b, oh->offset), oh->stride};
  }
  View B = in->args[1] == in->args[0] ? A[0] : operand_view(L, in, 1);
  View G = operand_view(L, in, 2);
  mlb_barrier(b);
  MlirValue bp = mlb_i32(b, h->stage_off[4]);
  int st = h->stage_stride[4]; /* K + 8 */
  int W = 8;
  while (K % W) W /= 2;

  MlirValue lane = mlb_bin(b, "arith.remui", L->tid, mlb_i32(b, 32));
  MlirValue warp = mlb_bin(b, "arith.divui", L->tid, mlb_i32(b, 32));
  MlirValue g4 = mlb_bin(b, "arith.divui", lane, mlb_i32(b, 4)), t4 = mlb_bin(b, "arith.remui", lane, mlb_i32(b, 4));
  int nw = L->nthreads / 32;

  /* off-diagonal 16x16 blocks on tensor cores: b' for every block J < nb - 1
   * at once, then the tasks (I, J), J < I, one per warp in turn */
  if (nb > 1) {
    ScaleCtx sb = {B, G, bp, st};
    tile_loop(L, in->args[1], 16 * (nb - 1), K, W, scale_fn, &sb);
    mlb_barrier(b);
  }
  int task = 0;
  for (int I = 1; I < nb; I++)
    for (int J = 0; J < I; J++, task++) {
      MlbIf mine;
      MlbFor kl;
      task_k_loop_begin(L, &mine, &kl, warp, task, nw, K, 8 * nout);
      MlirValue k0 = kl.iv;
      /* A: a' of block I relative to row 16 (J + 1), built in registers */
      MlirValue af[2][4];
      MlirValue row0 = mlb_i32(b, 16 * I);
      MlirValue ref = mlb_i32(b, 16 * (J + 1));
      aprime_frags(L, A, nout, &G, row0, ref, k0, g4, t4, 0, af);
      /* B held [N][K]: rows 16 J .. 16 J + 15 of b'; matrices q = lane / 8:
       * rows + (q / 2) * 8, cols k0 + (q % 2) * 8 */
      MlirValue q = mlb_bin(b, "arith.divui", lane, mlb_i32(b, 8));
      MlirValue brow = mlb_add_c(b, mlb_bin_c(b, "arith.remui", lane, 8), 16 * J);
      brow = mlb_add(b, brow, mlb_mul_c(b, mlb_bin_c(b, "arith.divui", q, 2), 8));
      MlirValue bcol = mlb_add(b, k0, mlb_mul_c(b, mlb_bin_c(b, "arith.remui", q, 2), 8));
      MlirValue bs = ldmatrix_at(L, boff(L, bp, st, brow, bcol), 4, 0);
      MlirValue bf[4];
      for (int e = 0; e < 4; e++) bf[e] = mlb_extract(b, bs, e, b->i32);
      MlirValue acc[16];
      for (int o = 0; o < nout; o++)
        for (int half = 0; half < 2; half++) {
          MlirValue bh[2] = {bf[2 * half], bf[2 * half + 1]};
          MlirOperation mma = mma_sync(L, DT_BF16, af[o], bh, &kl.iter[o * 8 + half * 4]);
          for (int e = 0; e < 4; e++) acc[o * 8 + half * 4 + e] = mlb_extract(b, mlb_res(mma, 0), e, b->f32);
        }
      mlb_for_end(b, &kl, 8 * nout, acc);
      for (int o = 0; o < nout; o++)
        for (int half = 0; half < 2; half++) {
          MlirValue col = mlb_add_c(b, mlb_mul_c(b, t4, 2), 16 * J + 8 * half);
          for (int up = 0; up < 2; up++) {
            MlirValue row = mlb_add_c(b, mlb_add_c(b, g4, 16 * I), 8 * up);
            Vals x = {.n = 2};
            x.v[0] = mlb_res(kl.op, o * 8 + half * 4 + up * 2);
            x.v[1] = mlb_res(kl.op, o * 8 + half * 4 + up * 2 + 1);
            put_out(L, &out[o], row, col, x);
          }
        }
      mlb_if_else(b, &mine, 0, NULL);
      mlb_if_end(b, &mine, 0, NULL);
    }

  /* the lower-left 8x8 quarter of every diagonal block (rows 16 d + 8 ..
   * 16 d + 15, columns 16 d .. 16 d + 7) on tensor cores as well, relative
   * to row 16 d + 8: both factors are <= 1 there too. One task per block,
   * from the warp after the off-diagonal tasks'; its A rows 0 .. 7 are zero
   * and their outputs dropped. The two 8x8 triangles left are diag_blocks'
   * Not where the diagonal goes element by element (diag_elements). */
  int W_, NV_, quarter = diag_by_lanes(K, &W_, &NV_);
  for (int d = 0; quarter && d < nb; d++, task++) {
    MlbIf mine;
    MlbFor kl;
    task_k_loop_begin(L, &mine, &kl, warp, task, nw, K, 4 * nout);
    MlirValue k0 = kl.iv;
    MlirValue row0 = mlb_i32(b, 16 * d);
    MlirValue ref = mlb_i32(b, 16 * d + 8);
    MlirValue af[2][4], bf[2];
    aprime_frags(L, A, nout, &G, row0, ref, k0, g4, t4, 1, af);
    bprime_frag(L, &B, &G, row0, ref, k0, g4, t4, bf);
    MlirValue acc[8];
    for (int o = 0; o < nout; o++) {
      MlirOperation mma = mma_sync(L, DT_BF16, af[o], bf, &kl.iter[o * 4]);
      for (int e = 0; e < 4; e++) acc[o * 4 + e] = mlb_extract(b, mlb_res(mma, 0), e, b->f32);
    }
    mlb_for_end(b, &kl, 4 * nout, acc);
    for (int o = 0; o < nout; o++) {
      MlirValue col = mlb_add_c(b, mlb_mul_c(b, t4, 2), 16 * d);
      MlirValue row = mlb_add_c(b, g4, 16 * d + 8);
      Vals x = {.n = 2};
      x.v[0] = mlb_res(kl.op, o * 4 + 2);
      x.v[1] = mlb_res(kl.op, o * 4 + 3);
      put_out(L, &out[o], row, col, x);
    }
    mlb_if_else(b, &mine, 0, NULL);
    mlb_if_end(b, &mine, 0, NULL);
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
    for (int o = 0; o < nout; o++) put_out(L, &out[o], r, j, x);
    mlb_if_else(b, &up, 0, NULL);
    mlb_if_end(b, &up, 0, NULL);
  }
  mlb_for_end(b, &el, 0, NULL);
  /* the diagonal blocks' lower triangles: warp tasks from the first warp
   * after the off-diagonal tasks' */
  if (quarter) diag_blocks(L, A, nout, &B, &G, out, nb, K, lane, warp, task % nw);
  else diag_elements(L, A, nout, &B, &G, out, nb, K, task % nw);
}
