/* lower_misc.c - reductions, prefix sums, the unit-lower-triangular inverse
 * and the decay-weighted product. Each runs one sequential line per thread
 * (a row or a column) with the accumulator in a register, summing in index
 * order, so results are deterministic and independent of the thread count. */
#include "lower.h"

/* Operands read at random positions (solve, decay) must be in shared memory. */
int needs_f32_stage(LK *L, const CirInst *src) {
  Home *h = home_of(L, src);
  return h->kind != H_SMEM && !home_is_cheap(L, src); /* cheap values are recomputed where read */
}

View operand_view(LK *L, const CirInst *op, int which) {
  Home *oh = home_of(L, op);
  const CirInst *src = op->args[which];
  View v = {0};
  v.dt = src->ty.dt;
  if (home_is_cheap(L, src)) {
    v.fused = src;
  } else if (needs_f32_stage(L, src)) {
    v.base = mlb_i32(&L->b, oh->stage_off[which]);
    v.sdt = oh->stage_dt[which];
    v.stride = oh->stage_stride[which];
    materialize_to(L, src, v.base, v.sdt, v.stride, 0);
  } else {
    Home *h = home_of(L, src);
    v.base = home_base(L, src);
    v.sdt = h->sdt;
    v.stride = h->stride;
  }
  return v;
}

Vals view_vals(LK *L, const View *v, MlirValue r, MlirValue c, int W) {
  Vals x = v->fused ? eval(L, v->fused, r, c, W) : smem_load_vals(L, v->base, v->sdt, v->stride, r, c, W);
  for (int i = 0; i < W; i++) {
    if (!v->fused && (v->sdt == DT_BF16 || v->sdt == DT_F16)) x.v[i] = mlb_cast(&L->b, "arith.extf", x.v[i], L->b.f32);
    if (v->dt == DT_I32) x.v[i] = mlb_cast(&L->b, "arith.sitofp", x.v[i], L->b.f32);
  }
  return x;
}

static MlirValue view_get(LK *L, const View *v, MlirValue r, MlirValue c) { return view_vals(L, v, r, c, 1).v[0]; }

static void put(LK *L, const CirInst *in, MlirValue r, MlirValue c, MlirValue x) {
  Home *h = home_of(L, in);
  Vals v = {.n = 1};
  v.v[0] = x;
  if (h->sdt == DT_I32 && mlirTypeIsAFloat(mlirValueGetType(x))) v.v[0] = f32_to_i32(L, x);
  smem_store_vals(L, mlb_i32(&L->b, h->offset), h->sdt, h->stride, r, c, v);
}

/* The element (i along the line, l = which line) of the operand, as f32. */
static MlirValue line_elem(LK *L, const CirInst *src, int along_rows, MlirValue line, MlirValue i) {
  Mlb *b = &L->b;
  MlirValue r = along_rows ? i : line, c = along_rows ? line : i;
  if (src->ty.rank == 1) r = mlb_i32(b, 0), c = i;
  MlirValue x = eval(L, src, r, c, 1).v[0];
  if (src->ty.dt == DT_I32) x = mlb_cast(b, "arith.sitofp", x, b->f32);
  return x;
}

/* Shared shape of reduce and scan: lines of length `len`, one per thread. */
static void line_loop(LK *L, const CirInst *in, int scan) {
  Mlb *b = &L->b;
  const CirInst *src = in->args[0];
  int R = rows_of(src->ty), C = cols_of(src->ty);
  int along_rows = src->ty.rank == 2 && in->axis == 0; /* walk down a column */
  int nlines = src->ty.rank == 1 ? 1 : along_rows ? C : R;
  int len = src->ty.rank == 1 ? C : along_rows ? R : C;
  int reverse = in->op == OP_RCUMSUM;
  int is_max = in->op == OP_AMAX;
  MlbFor lines;
  MlirValue lines_hi = mlb_i32(b, nlines);
  MlirValue lines_step = mlb_i32(b, L->nthreads);
  mlb_for_begin(b, &lines, L->tid, lines_hi, lines_step, 0, NULL);
  MlirValue line = lines.iv;
  MlirValue init = mlb_f32(b, is_max ? -__builtin_inf() : 0.0);
  /* U elements per turn, read before they are summed (in order), so that
   * their loads overlap rather than each waiting on the previous sum */
  int U = len % 8 == 0 ? 8 : len % 4 == 0 ? 4 : 1;
  MlbFor walk;
  MlirValue walk_lo = mlb_i32(b, 0);
  MlirValue walk_hi = mlb_i32(b, len);
  MlirValue walk_step = mlb_i32(b, U);
  mlb_for_begin(b, &walk, walk_lo, walk_hi, walk_step, 1, &init);
  MlirValue idx[8], xs[8];
  for (int u = 0; u < U; u++) {
    MlirValue k = u ? mlb_add(b, walk.iv, mlb_i32(b, u)) : walk.iv;
    idx[u] = reverse ? mlb_bin(b, "arith.subi", mlb_i32(b, len - 1), k) : k;
    xs[u] = line_elem(L, src, along_rows, line, idx[u]);
  }
  MlirValue acc = walk.iter[0];
  for (int u = 0; u < U; u++) {
    acc = is_max ? mlb_bin(b, "arith.maximumf", acc, xs[u]) : mlb_bin(b, "arith.addf", acc, xs[u]);
    if (scan) {
      MlirValue i = idx[u];
      MlirValue r = along_rows ? i : line, c = along_rows ? line : i;
      if (src->ty.rank == 1) r = mlb_i32(b, 0), c = i;
      put(L, in, r, c, acc);
    }
  }
  mlb_for_end(b, &walk, 1, &acc);
  if (!scan) {
    MlirValue r = mlb_i32(b, 0);
    MlirValue c = in->ty.rank == 0 ? mlb_i32(b, 0) : line;
    put(L, in, r, c, mlb_res(walk.op, 0));
  }
  mlb_for_end(b, &lines, 0, NULL);
}

MlirValue lk_shuffle_xor(LK *L, MlirValue x, int offset) {
  Mlb *b = &L->b;
  MlirValue lane_mask = mlb_i32(b, offset);
  MlirValue width = mlb_i32(b, 32);
  MlirValue ops[3] = {x, lane_mask, width};
  MlirNamedAttribute na = mlb_named(b, "mode", mlb_attr(b, "#gpu<shuffle_mode xor>"));
  MlirType rt[2] = {mlirValueGetType(x), b->i1};
  return mlb_res(mlb_op(b, "gpu.shuffle", 2, rt, 3, ops, 1, &na), 0);
}

/* A reduction along rows of contiguous elements: a warp takes G lines at a
 * time (G a power of two up to 8 that divides its share of the lines, or 1),
 * each lane summing every 32nd element of each line in order; then one fixed
 * butterfly for all G lines at once: at offsets 16, 8, .. the lanes with the
 * offset's bit set keep the upper half of their partial sums and send the
 * lower half, the others the reverse, so that after log2 G steps each lane
 * holds one line's partial sum (line bits = its lane bits 4, 3, ..), which
 * the remaining offsets complete as a plain butterfly. G - 1 + 5 - log2 G
 * shuffles for G lines instead of 5 G; the same order on every run. */
static void warp_reduce(LK *L, const CirInst *in) {
  Mlb *b = &L->b;
  const CirInst *src = in->args[0];
  int R = rows_of(src->ty), C = cols_of(src->ty);
  int is_max = in->op == OP_AMAX;
  int nw = L->nthreads / 32;
  int G = 1;
  while (G < 8 && R % (nw * G * 2) == 0) G *= 2;
  int steps = 0;
  while ((1 << steps) < G) steps++;
  MlirValue lane = mlb_bin(b, "arith.remui", L->tid, mlb_i32(b, 32));
  MlirValue warp = mlb_bin(b, "arith.divui", L->tid, mlb_i32(b, 32));
  MlbFor lines;
  MlirValue lines_hi = mlb_i32(b, R);
  MlirValue lines_step = mlb_i32(b, nw * G);
  mlb_for_begin(b, &lines, mlb_mul_c(b, warp, G), lines_hi, lines_step, 0, NULL);
  MlirValue line0 = lines.iv;
  MlirValue v[8];
  for (int g = 0; g < G; g++) {
    MlirValue line = g ? mlb_add_c(b, line0, g) : line0;
    MlirValue acc = mlb_f32(b, is_max ? -__builtin_inf() : 0.0);
    for (int k = 0; k < C / 32; k++) {
      MlirValue x = line_elem(L, src, 0, line, mlb_add(b, lane, mlb_i32(b, 32 * k)));
      acc = is_max ? mlb_bin(b, "arith.maximumf", acc, x) : mlb_bin(b, "arith.addf", acc, x);
    }
    v[g] = acc;
  }
  MlirValue zero = mlb_i32(b, 0), row = line0;
  int n = G, off = 16;
  for (; n > 1; n /= 2, off /= 2) {
    MlirValue upper = mlb_cmpi(b, "ne", mlb_bin_c(b, "arith.andi", lane, off), zero);
    for (int i = 0; i < n / 2; i++) {
      MlirValue send = mlb_select(b, upper, v[i], v[i + n / 2]);
      MlirValue keep = mlb_select(b, upper, v[i + n / 2], v[i]);
      MlirValue y = lk_shuffle_xor(L, send, off);
      v[i] = is_max ? mlb_bin(b, "arith.maximumf", keep, y) : mlb_bin(b, "arith.addf", keep, y);
    }
    row = mlb_add(b, row, mlb_select(b, upper, mlb_i32(b, n / 2), zero));
  }
  for (; off >= 1; off /= 2) {
    MlirValue y = lk_shuffle_xor(L, v[0], off);
    v[0] = is_max ? mlb_bin(b, "arith.maximumf", v[0], y) : mlb_bin(b, "arith.addf", v[0], y);
  }
  /* the first lane of each group of lanes that share a line writes it */
  MlbIf first;
  int low = (32 >> steps) - 1;
  mlb_if_begin(b, &first, mlb_cmpi(b, "eq", mlb_bin_c(b, "arith.andi", lane, low), zero), 0, NULL);
  MlirValue r = mlb_i32(b, 0);
  MlirValue c = in->ty.rank == 0 ? mlb_i32(b, 0) : row;
  put(L, in, r, c, v[0]);
  mlb_if_else(b, &first, 0, NULL);
  mlb_if_end(b, &first, 0, NULL);
  mlb_for_end(b, &lines, 0, NULL);
}

void lower_reduce(LK *L, const CirInst *in) {
  const CirInst *src = in->args[0];
  int contiguous = src->ty.rank == 1 || in->axis == 1;
  if (contiguous && cols_of(src->ty) % 32 == 0 && cols_of(src->ty) <= 1024) warp_reduce(L, in);
  else line_loop(L, in, 0);
}
void lower_scan(LK *L, const CirInst *in) { line_loop(L, in, 1); }

/* T = (I + tril(A, -1))^-1 for n a multiple of 16, blocked:
 * 1. the zeros above the diagonal blocks, A below them (in T's own home:
 *    the merges read A there, a plain shared tile however A is computed, and
 *    each level overwrites only the A block it has read) and, in the same
 *    phase, each 16x16 diagonal block by forward substitution, one thread
 *    per column (a thread reads only A and the column it writes);
 * 2. merges by doubling: at level s = 16, 32, ... the s-blocks pair up,
 *    lo = [2 p s, (2 p + 1) s) and hi = [(2 p + 1) s, (2 p + 2) s) (the last
 *    hi cut at n), and with T[lo, lo] and T[hi, hi] known
 *      X = A[hi, lo] T[lo, lo],  T[hi, lo] = -T[hi, hi] X
 *    (the inverse of a 2x2 block lower-triangular matrix), every pair of the
 *    level at once, element-parallel in fp32, summing in index order. Two
 *    barriers per level, ceil(log2(n / 16)) levels (not two per block row). */
/* Level s of the merges: its pairs and the rows of the last pair's hi. */
static int solve_level(int n, int s, int *last_rows) {
  int np = 0;
  for (int lo = 0; lo + s < n; lo += 2 * s) np++, *last_rows = n - (lo + s) < s ? n - (lo + s) : s;
  return np;
}

void solve_x_shape(int n, int *rows, int *cols) {
  *rows = *cols = 0;
  for (int s = 16; s < n; s *= 2) {
    int last = 0, np = solve_level(n, s, &last);
    int r = (np - 1) * s + last;
    if (r > *rows) *rows = r;
    *cols = s;
  }
}

/* One turn of a merge's dot product (lower_solve, step 2): the 8 terms
 * from m0, added to acc in order; masked: the terms outside the triangle
 * (phase 0: m < c; phase 1: m >= r) are skipped. */
typedef struct MergeTurn {
  int phase;
  MlirValue Tb, Xb;
  int tstride, xstride;
  MlirValue lo0, hi0, xrow0, row, c, r;
} MergeTurn;

static MlirValue merge_turn(LK *L, const MergeTurn *t, MlirValue m0, MlirValue acc, int masked) {
  Mlb *b = &L->b;
  MlirValue ms[8], u2[8];
  /* the row's 8 terms in one read (32-byte aligned: lo0, hi0 and the
   * turn's first term are multiples of 8), the column's one by one */
  Vals u1 = smem_load_vals(L, t->Tb, DT_F32, t->tstride, t->row, mlb_add(b, t->phase == 0 ? t->lo0 : t->hi0, m0), 8);
  for (int u = 0; u < 8; u++) {
    ms[u] = u ? mlb_add(b, m0, mlb_i32(b, u)) : m0;
    if (t->phase == 0) { /* T[lo0 + m, lo0 + c] */
      MlirValue m = mlb_add(b, t->lo0, ms[u]);
      MlirValue tc = mlb_add(b, t->lo0, t->c);
      u2[u] = smem_load_vals(L, t->Tb, DT_F32, t->tstride, m, tc, 1).v[0];
    } else /* X[p s + m, c] */
      u2[u] = smem_load_vals(L, t->Xb, DT_F32, t->xstride, mlb_add(b, t->xrow0, ms[u]), t->c, 1).v[0];
  }
  for (int u = 0; u < 8; u++) {
    MlirValue prod = mlb_bin(b, "arith.mulf", u1.v[u], u2[u]);
    MlirValue sum = mlb_bin(b, "arith.addf", acc, prod);
    if (!masked) {
      acc = sum;
      continue;
    }
    MlirValue keep = t->phase == 0 ? mlb_cmpi(b, "sge", ms[u], t->c) : mlb_cmpi(b, "slt", ms[u], t->r);
    acc = mlb_select(b, keep, sum, acc);
  }
  return acc;
}

void lower_solve(LK *L, const CirInst *in) {
  Mlb *b = &L->b;
  Home *h = home_of(L, in);
  int n = in->ty.shape[0];
  if (n % 16) {
    lk_error(L, in, "unit_lower_inv needs a size that is a multiple of 16, got %d", n);
    return;
  }
  View A = operand_view(L, in, 0);
  mlb_barrier(b); /* A's staged copy, when it has one (none when nothing was written) */
  MlirValue Tb = mlb_i32(b, h->offset), Xb = mlb_i32(b, h->stage_off[1]);
  int xs = h->stage_stride[1];
  MlirValue c16 = mlb_i32(b, 16), zero = mlb_f32(b, 0.0), one = mlb_f32(b, 1.0);
#define PUT(base, stride, r, c, x)                               \
  do {                                                           \
    Vals v_ = {.n = 1};                                          \
    v_.v[0] = (x);                                               \
    smem_store_vals(L, (base), DT_F32, (stride), (r), (c), v_);  \
  } while (0)
  /* zeros above the diagonal blocks and A below them, 4 columns at a time
   * (n is a multiple of 16: a group of 4 never straddles two blocks) */
  {
    MlbFor el;
    int groups = n / 4;
    MlirValue el_hi = mlb_i32(b, n * groups);
    MlirValue el_step = mlb_i32(b, L->nthreads);
    mlb_for_begin(b, &el, L->tid, el_hi, el_step, 0, NULL);
    MlirValue r = mlb_bin_c(b, "arith.divui", el.iv, groups);
    MlirValue c = mlb_mul_c(b, mlb_bin_c(b, "arith.remui", el.iv, groups), 4);
    MlbIf up, below;
    MlirValue cb = mlb_bin(b, "arith.divui", c, c16);
    MlirValue rb = mlb_bin(b, "arith.divui", r, c16);
    mlb_if_begin(b, &up, mlb_cmpi(b, "ugt", cb, rb), 0, NULL);
    Vals zeros = {.n = 4, .v = {zero, zero, zero, zero}};
    smem_store_vals(L, Tb, DT_F32, h->stride, r, c, zeros);
    mlb_if_else(b, &up, 0, NULL);
    mlb_if_begin(b, &below, mlb_cmpi(b, "ult", cb, rb), 0, NULL);
    smem_store_vals(L, Tb, DT_F32, h->stride, r, c, view_vals(L, &A, r, c, 4));
    mlb_if_else(b, &below, 0, NULL);
    mlb_if_end(b, &below, 0, NULL);
    mlb_if_end(b, &up, 0, NULL);
    mlb_for_end(b, &el, 0, NULL);
  }
  /* 1. diagonal blocks: task = block * 16 + column. Unrolled over the 16
   * rows, the thread's column of T in registers (it reads only what it
   * wrote): t[i] = -sum_{col <= j < i} A[i, j] t[j], summed in j order as a
   * loop from the column would, t[col] = 1, zero above. */
  {
    MlbFor tk;
    MlirValue tk_hi = mlb_i32(b, n);
    MlirValue tk_step = mlb_i32(b, L->nthreads);
    mlb_for_begin(b, &tk, L->tid, tk_hi, tk_step, 0, NULL);
    MlirValue base = mlb_mul(b, mlb_bin(b, "arith.divui", tk.iv, c16), c16);
    MlirValue col = tk.iv; /* absolute column; its block starts at `base` */
    MlirValue in_blk = mlb_bin(b, "arith.subi", col, base);
    MlirValue t[16];
    for (int i = 0; i < 16; i++) {
      MlirValue r = mlb_add(b, base, mlb_i32(b, i));
      MlirValue acc = zero;
      for (int j = 0; j < i; j++) {
        MlirValue term = mlb_bin(b, "arith.mulf", view_get(L, &A, r, mlb_add(b, base, mlb_i32(b, j))), t[j]);
        MlirValue jj = mlb_i32(b, j);
        MlirValue from_col = mlb_cmpi(b, "sle", in_blk, jj);
        MlirValue sum = mlb_bin(b, "arith.addf", acc, term);
        acc = mlb_select(b, from_col, sum, acc);
      }
      MlirValue ii = mlb_i32(b, i);
      MlirValue on_diag = mlb_cmpi(b, "eq", ii, in_blk);
      MlirValue neg = mlb_cast(b, "arith.negf", acc, b->f32);
      MlirValue x = mlb_select(b, on_diag, one, neg);
      MlirValue above = mlb_cmpi(b, "slt", ii, in_blk);
      t[i] = mlb_select(b, above, zero, x);
      PUT(Tb, h->stride, r, col, t[i]);
    }
    mlb_for_end(b, &tk, 0, NULL);
  }
  /* 2. the merges, level by level. Each warp takes 4 rows (of hi) by 8
   * columns (of lo) of one pair, so that its lanes share their loops'
   * bounds: the 8 columns' triangle of T[lo, lo] starts at the same group of
   * 8 terms, and the 4 rows' triangle of T[hi, hi] ends in the same group.
   * Warp task w of a level: pair p = w / (s / 8 * s / 4) (the last pair,
   * which may have fewer rows, last), then column group and row group; lane
   * l: column 8 cg + l % 8, row 4 rg + l / 8. X of pair p: rows p s + r. */
  for (int s = 16; s < n; s *= 2) {
    int last_rows = s, np = solve_level(n, s, &last_rows);
    int total = ((np - 1) * s + last_rows) * s; /* elements: s^2 per full pair */
    for (int phase = 0; phase < 2; phase++) {
      mlb_barrier(b);
      MlbFor el;
      MlirValue el_hi = mlb_i32(b, total);
      MlirValue el_step = mlb_i32(b, L->nthreads);
      mlb_for_begin(b, &el, L->tid, el_hi, el_step, 0, NULL);
      MlirValue w = mlb_bin_c(b, "arith.divui", el.iv, 32), l = mlb_bin_c(b, "arith.remui", el.iv, 32);
      MlirValue p = mlb_bin_c(b, "arith.divui", w, s * s / 32);
      MlirValue wp = mlb_bin_c(b, "arith.remui", w, s * s / 32);
      /* row groups of this pair: s / 4, or fewer in a short last pair (the
       * pair's warp tasks are column-group major, so any count works) */
      MlirValue is_last = mlb_cmpi(b, "eq", p, mlb_i32(b, np - 1));
      MlirValue ngr_full = mlb_i32(b, s / 4);
      MlirValue ngr_last = mlb_i32(b, last_rows / 4);
      MlirValue ngr = mlb_select(b, is_last, ngr_last, ngr_full);
      MlirValue cg = mlb_bin(b, "arith.divui", wp, ngr), rg = mlb_bin(b, "arith.remui", wp, ngr);
      MlirValue c8 = mlb_mul_c(b, cg, 8), lc = mlb_bin_c(b, "arith.remui", l, 8);
      MlirValue c = mlb_add(b, c8, lc);
      MlirValue r4 = mlb_mul_c(b, rg, 4), lr = mlb_bin_c(b, "arith.divui", l, 8);
      MlirValue r = mlb_add(b, r4, lr);
      MlirValue lo0 = mlb_mul_c(b, p, 2 * s);
      MlirValue hi0 = mlb_add_c(b, lo0, s);
      MlirValue row = mlb_add(b, hi0, r); /* absolute row of T */
      MlirValue xrow = mlb_add(b, mlb_mul_c(b, p, s), r);
      MlirValue dot_lo, dot_hi, init;
      if (phase == 0) { /* X[r, c] = sum_{c <= m < s} A[row, lo0 + m] T[lo0 + m, lo0 + c] (A from T's home) */
        dot_lo = mlb_mul_c(b, cg, 8);
        dot_hi = mlb_i32(b, s);
        init = zero;
      } else { /* T[row, lo0 + c] = -(X[r, c] + sum_{m < r} T[row, hi0 + m] X[m, c]) */
        dot_lo = mlb_i32(b, 0);
        dot_hi = mlb_bin_c(b, "arith.andi", mlb_add_c(b, mlb_mul_c(b, rg, 4), 11), ~7); /* past the group's rows */
        init = smem_load_vals(L, Xb, DT_F32, xs, xrow, c, 1).v[0];
      }
      /* 8 terms a turn, read first, then summed in order. Only one turn
       * holds terms outside the triangle, to be skipped: the first (phase
       * 0: m >= c, and c is in the turn at cg 8) or the last (phase 1: m <
       * r, and r's group of 4 rows ends in it); the others keep all 8 */
      MergeTurn mt = {phase, Tb, Xb, h->stride, xs, lo0, hi0, mlb_mul_c(b, p, s), row, c, r};
      MlirValue res;
      MlbFor dot;
      MlirValue dot_step = mlb_i32(b, 8);
      if (phase == 0) {
        MlirValue acc = merge_turn(L, &mt, dot_lo, init, 1);
        mlb_for_begin(b, &dot, mlb_add_c(b, dot_lo, 8), dot_hi, dot_step, 1, &acc);
        acc = merge_turn(L, &mt, dot.iv, dot.iter[0], 0);
        mlb_for_end(b, &dot, 1, &acc);
        res = mlb_res(dot.op, 0);
      } else {
        MlirValue last = mlb_add_c(b, dot_hi, -8);
        mlb_for_begin(b, &dot, dot_lo, last, dot_step, 1, &init);
        MlirValue acc = merge_turn(L, &mt, dot.iv, dot.iter[0], 0);
        mlb_for_end(b, &dot, 1, &acc);
        res = merge_turn(L, &mt, last, mlb_res(dot.op, 0), 1);
      }
      if (phase == 0) {
        PUT(Xb, xs, xrow, c, res);
      } else {
        MlirValue tc = mlb_add(b, lo0, c);
        PUT(Tb, h->stride, row, tc, mlb_cast(b, "arith.negf", res, b->f32));
      }
      mlb_for_end(b, &el, 0, NULL);
    }
  }
#undef PUT
}
