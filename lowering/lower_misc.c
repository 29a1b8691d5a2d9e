/* lower_misc.c - reductions, prefix sums, the unit-lower-triangular inverse
 * and the decay-weighted product. Each runs one sequential line per thread
 * (a row or a column) with the accumulator in a register, summing in index
 * order, so results are deterministic and independent of the thread count. */
#include "lower.h"

/* Operands read at random positions (solve, decay) must be in shared memory. */
int needs_f32_stage(LK *L, const CirInst *src) {
  Home *h = home_of(L, src);
  return h->kind != H_SMEM;
}

/* Shared-memory view of an operand: its own home or its staged f32 copy. */
typedef struct View {
  MlirValue base;
  DType sdt;
  int stride;
  DType dt;
} View;

static View view(LK *L, const CirInst *op, int which) {
  Home *oh = home_of(L, op);
  const CirInst *src = op->args[which];
  View v;
  v.dt = src->ty.dt;
  if (needs_f32_stage(L, src)) {
    v.base = mlb_i32(&L->b, oh->stage_off[which]);
    v.sdt = DT_F32;
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

static MlirValue view_get(LK *L, const View *v, MlirValue r, MlirValue c) {
  Vals x = smem_load_vals(L, v->base, v->sdt, v->stride, r, c, 1);
  MlirValue e = x.v[0];
  if (v->sdt == DT_BF16 || v->sdt == DT_F16) e = mlb_cast(&L->b, "arith.extf", e, L->b.f32);
  if (v->dt == DT_I32) e = mlb_cast(&L->b, "arith.sitofp", e, L->b.f32);
  return e;
}

static void put(LK *L, const CirInst *in, MlirValue r, MlirValue c, MlirValue x) {
  Home *h = home_of(L, in);
  Vals v = {.n = 1};
  v.v[0] = x;
  if (h->sdt == DT_I32 && mlirTypeIsAFloat(mlirValueGetType(x))) v.v[0] = mlb_cast(&L->b, "arith.fptosi", x, L->b.i32);
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
  mlb_for_begin(b, &lines, L->tid, mlb_i32(b, nlines), mlb_i32(b, L->nthreads), 0, NULL);
  MlirValue line = lines.iv;
  MlirValue init = mlb_f32(b, is_max ? -__builtin_inf() : 0.0);
  MlbFor walk;
  mlb_for_begin(b, &walk, mlb_i32(b, 0), mlb_i32(b, len), mlb_i32(b, 1), 1, &init);
  MlirValue i = reverse ? mlb_bin(b, "arith.subi", mlb_i32(b, len - 1), walk.iv) : walk.iv;
  MlirValue x = line_elem(L, src, along_rows, line, i);
  MlirValue acc = is_max ? mlb_bin(b, "arith.maximumf", walk.iter[0], x) : mlb_bin(b, "arith.addf", walk.iter[0], x);
  if (scan) {
    MlirValue r = along_rows ? i : line, c = along_rows ? line : i;
    if (src->ty.rank == 1) r = mlb_i32(b, 0), c = i;
    put(L, in, r, c, acc);
  }
  mlb_for_end(b, &walk, 1, &acc);
  if (!scan) put(L, in, mlb_i32(b, 0), in->ty.rank == 0 ? mlb_i32(b, 0) : line, mlb_res(walk.op, 0));
  mlb_for_end(b, &lines, 0, NULL);
}

void lower_reduce(LK *L, const CirInst *in) { line_loop(L, in, 0); }
void lower_scan(LK *L, const CirInst *in) { line_loop(L, in, 1); }

/* T = (I + tril(A, -1))^-1. Column c of T solves (I + L) x = e_c by forward
 * substitution; one thread owns one column and reads only what it wrote. */
void lower_solve(LK *L, const CirInst *in) {
  Mlb *b = &L->b;
  int n = in->ty.shape[0];
  View A = view(L, in, 0);
  mlb_barrier(b);
  MlbFor cols;
  mlb_for_begin(b, &cols, L->tid, mlb_i32(b, n), mlb_i32(b, L->nthreads), 0, NULL);
  MlirValue c = cols.iv;
  MlbFor rows;
  mlb_for_begin(b, &rows, mlb_i32(b, 0), mlb_i32(b, n), mlb_i32(b, 1), 0, NULL);
  MlirValue r = rows.iv;
  /* x[r] = [r == c] - sum_{j = c}^{r - 1} A[r, j] x[j]; 0 above the diagonal */
  MlirValue zero = mlb_f32(b, 0.0);
  MlbFor dot;
  mlb_for_begin(b, &dot, c, r, mlb_i32(b, 1), 1, &zero);
  MlirValue j = dot.iv;
  Home *h = home_of(L, in);
  MlirValue xj = smem_load_vals(L, mlb_i32(b, h->offset), DT_F32, h->stride, j, c, 1).v[0];
  MlirValue acc = mlb_bin(b, "arith.addf", dot.iter[0], mlb_bin(b, "arith.mulf", view_get(L, &A, r, j), xj));
  mlb_for_end(b, &dot, 1, &acc);
  MlirValue diag = mlb_select(b, mlb_cmpi(b, "eq", r, c), mlb_f32(b, 1.0), zero);
  MlirValue x = mlb_bin(b, "arith.subf", diag, mlb_res(dot.op, 0));
  x = mlb_select(b, mlb_cmpi(b, "slt", r, c), zero, x);
  put(L, in, r, c, x);
  mlb_for_end(b, &rows, 0, NULL);
  mlb_for_end(b, &cols, 0, NULL);
}

/* D[r, j] = sum_c a[r,c] b[j,c] exp(g[r,c] - g[j,c]) for j <= r, else 0.
 * The exponent is <= 0 whenever g is non-increasing down the rows (a
 * cumulative log-decay), so no factor can overflow. */
void lower_decay(LK *L, const CirInst *in) {
  Mlb *b = &L->b;
  int C = in->ty.shape[0], K = in->args[0]->ty.shape[1];
  View A = view(L, in, 0), B = view(L, in, 1), G = view(L, in, 2);
  mlb_barrier(b);
  MlbFor outs;
  mlb_for_begin(b, &outs, L->tid, mlb_i32(b, C * C), mlb_i32(b, L->nthreads), 0, NULL);
  MlirValue r = mlb_bin(b, "arith.divui", outs.iv, mlb_i32(b, C));
  MlirValue j = mlb_bin(b, "arith.remui", outs.iv, mlb_i32(b, C));
  MlirValue zero = mlb_f32(b, 0.0);
  MlirValue upper = mlb_select(b, mlb_cmpi(b, "sle", j, r), mlb_i32(b, K), mlb_i32(b, 0));
  MlbFor sum;
  mlb_for_begin(b, &sum, mlb_i32(b, 0), upper, mlb_i32(b, 1), 1, &zero);
  MlirValue c = sum.iv;
  MlirValue e = mlb_bin(b, "arith.subf", view_get(L, &G, r, c), view_get(L, &G, j, c));
  MlirValue ex = mlb_intrinsic(b, "llvm.nvvm.ex2.approx.f32", b->f32, 1,
                               (MlirValue[]){mlb_bin(b, "arith.mulf", e, mlb_f32(b, 1.4426950408889634))});
  MlirValue t = mlb_bin(b, "arith.mulf", mlb_bin(b, "arith.mulf", view_get(L, &A, r, c), view_get(L, &B, j, c)), ex);
  MlirValue acc = mlb_bin(b, "arith.addf", sum.iter[0], t);
  mlb_for_end(b, &sum, 1, &acc);
  put(L, in, r, j, mlb_res(sum.op, 0));
  mlb_for_end(b, &outs, 0, NULL);
}
