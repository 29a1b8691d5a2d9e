/* lower_decay_grad.c - decay_mm and decay_mm_t, decay_dot's gradients,
 * element by element (a correct lowering; tensor cores are a later step).
 *
 *   decay_mm(m, b, g)[r, c]   = sum_{j <= r} m[r, j] b[j, c] exp(g[r, c] - g[j, c])
 *   decay_mm_t(m, a, g)[j, c] = sum_{r >= j} m[r, j] a[r, c] exp(g[r, c] - g[j, c])
 *
 * Each thread owns output elements (strided over the tile) and sums its
 * triangle of terms in ascending index order, so results do not depend on the
 * thread count. Every exponent pairs a row with an earlier one (g[later] -
 * g[earlier]), which is <= 0 for a non-increasing g: nothing overflows. The
 * operands are read through their views (shared memory, an f32 staged copy,
 * or recomputed when cheap). */
#include "lower.h"

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

void lower_decay_mm(LK *L, const CirInst *in) {
  Home *h = home_of(L, in);
  View m = operand_view(L, in, 0);
  View x = operand_view(L, in, 1);
  View g = operand_view(L, in, 2);
  DmmCtx s = {in, m, x, g, mlb_i32(&L->b, h->offset), h->stride, in->ty.shape[0]};
  mlb_barrier(&L->b); /* staged operands are complete */
  strided_loop(L, in->ty.shape[0] * in->ty.shape[1], dmm_elem, &s);
}
