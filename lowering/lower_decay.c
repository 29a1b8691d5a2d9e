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
 *   diagonal blocks: element by element in fp32.
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
                         MlirValue g4, MlirValue t4, MlirValue af[2][4]) {
  Mlb *b = &L->b;
  MlirValue c0 = mlb_add(b, k0, mlb_mul_c(b, t4, 2));
  for (int half = 0; half < 2; half++) {
    MlirValue c = half ? mlb_add_c(b, c0, 8) : c0;
    Vals gp = view_vals(L, G, ref, c, 2);
    for (int up = 0; up < 2; up++) {
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
      mlb_if_begin(b, &mine, mlb_cmpi(b, "eq", warp, mlb_i32(b, task % nw)), 0, NULL);
      MlirValue zero = mlb_f32(b, 0.0), init[16];
      for (int e = 0; e < 8 * nout; e++) init[e] = zero;
      MlbFor kl;
      MlirValue k_lo = mlb_i32(b, 0);
      MlirValue k_hi = mlb_i32(b, K);
      MlirValue k_step = mlb_i32(b, 16);
      mlb_for_begin(b, &kl, k_lo, k_hi, k_step, 8 * nout, init);
      MlirValue k0 = kl.iv;
      /* A: a' of block I relative to row 16 (J + 1), built in registers */
      MlirValue af[2][4];
      MlirValue row0 = mlb_i32(b, 16 * I);
      MlirValue ref = mlb_i32(b, 16 * (J + 1));
      aprime_frags(L, A, nout, &G, row0, ref, k0, g4, t4, af);
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
  /* the diagonal blocks' lower triangles, element by element: entry e of
   * block d is (t, s) with t(t+1)/2 <= e < (t+1)(t+2)/2, s = e - t(t+1)/2 */
  MlbFor dg;
  MlirValue dg_hi = mlb_i32(b, nb * 136);
  MlirValue dg_step = mlb_i32(b, L->nthreads);
  /* the warps without a task take the first elements (and so the last,
   * partial round): threads counted from the first warp after the tasks' */
  int busy = task < nw ? task : 0;
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
    Vals bj = view_vals(L, &B, j, c, VW), gr = view_vals(L, &G, r, c, VW), gj = view_vals(L, &G, j, c, VW);
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
