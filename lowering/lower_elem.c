/* lower_elem.c - elementwise evaluation, global windows, shared-memory tiles.
 *
 * eval(v, r, c, W) produces the W consecutive elements (r, c .. c+W-1) of a
 * CIR value as MLIR scalars: f32 for floats (bf16 inputs are widened), i32
 * for integers, i1 for bools. Fused values are recomputed from their
 * operands; shared-memory values are read back; scalars are splatted.
 * Rank-1 values use (0, c); rank-0 values ignore both. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "lower.h"

int rows_of(CirType t) { return t.rank == 2 ? t.shape[0] : 1; }
int cols_of(CirType t) { return t.rank == 0 ? 1 : t.rank == 1 ? t.shape[0] : t.shape[1]; }

static int is_float(DType t) { return t == DT_BF16 || t == DT_F16 || t == DT_F32; }

static MlirType mem_type(LK *L, DType dt) {
  Mlb *b = &L->b;
  switch (dt) {
    case DT_BF16: return b->bf16;
    case DT_F16: return b->f16;
    case DT_F32: return b->f32;
    default: return b->i32;
  }
}

static Vals splat(MlirValue x, int W) {
  Vals v;
  v.n = W;
  for (int i = 0; i < W; i++) v.v[i] = x;
  return v;
}

static MlirValue plus(LK *L, MlirValue x, int k) { return k ? mlb_add(&L->b, x, mlb_i32(&L->b, k)) : x; }

/* register value (f32/i32/i1) -> storage type value */
MlirValue to_storage(LK *L, MlirValue x, DType sdt) {
  Mlb *b = &L->b;
  switch (sdt) {
    case DT_BF16: return mlb_cast(b, "arith.truncf", x, b->bf16);
    case DT_F16: return mlb_cast(b, "arith.truncf", x, b->f16);
    case DT_I32:
      if (mlirTypeEqual(mlirValueGetType(x), b->i1)) return mlb_cast(b, "arith.extui", x, b->i32);
      return x;
    default: return x;
  }
}

/* storage value -> register value of dtype dt */
static MlirValue from_storage(LK *L, MlirValue x, DType sdt, DType dt) {
  Mlb *b = &L->b;
  if (sdt == DT_BF16 || sdt == DT_F16) return mlb_cast(b, "arith.extf", x, b->f32);
  if (dt == DT_BOOL) return mlb_cmpi(b, "ne", x, mlb_i32(b, 0));
  return x;
}

MlirValue smem_ptr(LK *L, MlirValue byte_off) { return mlb_gep(&L->b, L->smem, byte_off); }

MlirValue home_base(LK *L, const CirInst *v) {
  Home *h = home_of(L, v);
  if (!mlirValueIsNull(h->dyn)) return h->dyn;
  return mlb_i32(&L->b, h->offset);
}

/* Split W lanes of `bytes` each into vector pieces of at most 16 bytes,
 * honouring the known alignment (in bytes) of the first element. */
static int piece_lanes(int W, int bytes, int align) {
  int n = W;
  while (n > 1 && (n * bytes > 16 || (align % (n * bytes)) != 0)) n /= 2;
  return n;
}

/* The byte offset of element (r, c) of a shared tile, and the lanes of each
 * vector piece of an access of W lanes there: callers pass c as a multiple
 * of W, and rows are 16-byte aligned. */
static MlirValue smem_elem_off(LK *L, MlirValue base, int eb, int stride, MlirValue r, MlirValue c, int W, int *pl) {
  Mlb *b = &L->b;
  MlirValue idx = mlb_add(b, mlb_mul(b, r, mlb_i32(b, stride)), c);
  int align = W * eb;
  *pl = piece_lanes(W, eb, align > 16 ? 16 : align);
  return mlb_add(b, base, mlb_mul(b, idx, mlb_i32(b, eb)));
}

Vals smem_load_vals(LK *L, MlirValue base, DType sdt, int stride, MlirValue r, MlirValue c, int W) {
  Mlb *b = &L->b;
  int eb = dtype_bytes(sdt), pl;
  MlirValue off = smem_elem_off(L, base, eb, stride, r, c, W, &pl);
  Vals out = {.n = W};
  for (int l = 0; l < W; l += pl) {
    MlirValue p = smem_ptr(L, l ? mlb_add(b, off, mlb_i32(b, l * eb)) : off);
    if (pl == 1) {
      out.v[l] = mlb_load(b, mem_type(L, sdt), p, eb);
    } else {
      MlirValue vec = mlb_load(b, mlb_vec(b, pl, mem_type(L, sdt)), p, pl * eb);
      for (int i = 0; i < pl; i++) out.v[l + i] = mlb_vextract(b, vec, i);
    }
  }
  return out;
}

void smem_store_vals(LK *L, MlirValue base, DType sdt, int stride, MlirValue r, MlirValue c, Vals x) {
  Mlb *b = &L->b;
  int eb = dtype_bytes(sdt), pl;
  MlirValue off = smem_elem_off(L, base, eb, stride, r, c, x.n, &pl);
  for (int l = 0; l < x.n; l += pl) {
    MlirValue p = smem_ptr(L, l ? mlb_add(b, off, mlb_i32(b, l * eb)) : off);
    if (pl == 1) {
      mlb_store(b, to_storage(L, x.v[l], sdt), p, eb);
    } else {
      MlirValue vec = mlb_undef(b, mlb_vec(b, pl, mem_type(L, sdt)));
      for (int i = 0; i < pl; i++) vec = mlb_vinsert(b, vec, to_storage(L, x.v[l + i], sdt), i);
      mlb_store(b, vec, p, pl * eb);
    }
  }
}

/* ------------------------------------------------------------------ */
/* global windows                                                      */

typedef struct WinAddr {
  /* i64 element offset of element (r, c): off_a, or (split) off_a from the
   * coordinates and scalar indices plus off_b from the window's starts (a
   * chunk's or a block's first row), kept apart so that the coordinates'
   * part of a copy repeated for every chunk is computed once */
  MlirValue off_a, off_b;
  MlirValue valid;   /* i1, or null when always in range */
  int safe;          /* the address is in bounds even where valid is false
                      * (its row clamped into the chunk): loadable unguarded */
  MlirValue halo;    /* i1: the element is the halo's (a shifted window's row outside its fragment), or null */
  MlirValue hoff;    /* then its i64 offset in the halo */
  int contiguous;    /* the column lanes are adjacent in memory */
  int align_elems;   /* known alignment of `off` in elements (for lane 0) */
  MlirValue row_stride; /* i64 elements from one row of a 2-d window to the next, or null */
} WinAddr;

static long long known_factor(const CirTensor *t, int from) {
  long long f = 1;
  for (int i = from; i < t->rank; i++)
    if (t->shape[i].sym < 0) f *= t->shape[i].value;
  return f;
}

static long long gcdll(long long a, long long b) {
  while (b) {
    long long t = a % b;
    a = b;
    b = t;
  }
  return a;
}

static WinAddr window_addr(LK *L, const CirInst *in, MlirValue r, MlirValue c, int W, int split) {
  Mlb *b = &L->b;
  const CirTensor *t = in->tensor;
  WinAddr wa = {0};
  wa.safe = 1;
  int free_axes[2], nf = 0;
  for (int i = 0; i < t->rank; i++)
    if (in->index[i].kind != IX_SCALAR) free_axes[nf++] = i;
  MlirValue off = mlb_i64(b, 0), off_b = split ? mlb_i64(b, 0) : (MlirValue){0}, hoff = (MlirValue){0};
  long long align = 0; /* gcd of the known factors of every nonconstant term */
  int col_axis = nf ? free_axes[nf - 1] : -1;
  for (int i = 0; i < t->rank; i++) {
    const CirIndex *ix = &in->index[i];
    MlirValue coord = (nf == 2 && i == free_axes[0]) ? r : c;
    MlirValue idx, hidx = (MlirValue){0};
    MlirValue start = (MlirValue){0}, rel = coord; /* idx = start + rel, start null: 0 */
    switch (ix->kind) {
      case IX_FULL: idx = coord; break;
      case IX_CHUNK: {
        ChunkInfo *ci = &L->chunks[ix->v->id];
        CAKE_ASSERT(ci->set);
        start = ci->start;
        idx = mlb_add(b, ci->start, coord);
        MlirValue ok = mlb_cmpi(b, "slt", idx, ci->end);
        if (!ix->shift && !split) { /* a row past the chunk's end reads its last row (then masked) */
          idx = mlb_bin(b, "arith.minsi", idx, mlb_bin(b, "arith.subi", ci->end, mlb_i32(b, 1)));
        } else {
          wa.safe = 0;
        }
        if (ix->shift) { /* the token `shift` away, if it lies in the document too */
          CAKE_ASSERT(!mlirValueIsNull(ix->shift < 0 ? ci->doc_start : ci->doc_end));
          idx = mlb_add(b, idx, mlb_i32(b, ix->shift));
          if (split) rel = mlb_add(b, coord, mlb_i32(b, ix->shift));
          MlirValue out_doc = ix->shift < 0 ? mlb_cmpi(b, "slt", idx, ci->doc_start) : mlb_cmpi(b, "sge", idx, ci->doc_end);
          const CirKernel *hx = cir_halo_exchange(L->p, ix->halo);
          if (hx) { /* outside the fragment: the halo's row (sema: |shift| within its widths; 0 past the document) */
            CAKE_ASSERT(i == 0);
            MlirValue past = mlb_bin(b, "arith.subi", idx, ix->shift < 0 ? ci->doc_start : ci->doc_end);
            MlirValue hrow = mlb_add(b, past, mlb_i32(b, hx->xbefore));
            MlirValue frow = mlb_mul(b, ci->doc, mlb_i32(b, hx->xbefore + hx->xafter));
            hidx = mlb_add(b, frow, hrow);
            wa.halo = out_doc;
          } else {
            ok = mlb_bin(b, "arith.andi", ok, mlb_bin(b, "arith.xori", out_doc, mlb_bool(b, 1)));
          }
        }
        wa.valid = mlirValueIsNull(wa.valid) ? ok : mlb_bin(b, "arith.andi", wa.valid, ok);
        break;
      }
      case IX_BLOCK:
        start = mlb_mul_c(b, eval_scalar(L, ix->v), ix->size);
        idx = mlb_add(b, start, coord);
        break;
      default: idx = rel = eval_scalar(L, ix->v); break;
    }
    /* stride of axis i = product of the later extents */
    MlirValue stride = mlb_i64(b, 1);
    for (int j = i + 1; j < t->rank; j++) {
      MlirValue e = t->shape[j].sym >= 0 ? mlb_cast(b, "arith.extsi",
                                                     L->args[abi_find(L->abi, ARG_DIM, NULL, t->shape[j].sym)], b->i64)
                                         : mlb_i64(b, t->shape[j].value);
      stride = mlb_mul(b, stride, e);
    }
    if (nf == 2 && i == free_axes[0]) wa.row_stride = stride;
    if (!mlirValueIsNull(hidx)) /* the halo's offset: its row, then the same other coordinates */
      hoff = mlb_mul(b, mlb_cast(b, "arith.extsi", hidx, b->i64), stride);
    else if (!mlirValueIsNull(hoff))
      hoff = mlb_add(b, hoff, mlb_mul(b, mlb_cast(b, "arith.extsi", idx, b->i64), stride));
    if (!split || mlirValueIsNull(start)) {
      off = mlb_add(b, off, mlb_mul(b, mlb_cast(b, "arith.extsi", idx, b->i64), stride));
    } else {
      off = mlb_add(b, off, mlb_mul(b, mlb_cast(b, "arith.extsi", rel, b->i64), stride));
      off_b = mlb_add(b, off_b, mlb_mul(b, mlb_cast(b, "arith.extsi", start, b->i64), stride));
    }
    long long f = known_factor(t, i + 1);
    if (i == col_axis) f *= W; /* the caller's c is a multiple of W */
    align = gcdll(align, f);
  }
  wa.off_a = off;
  wa.off_b = off_b;
  wa.hoff = hoff;
  wa.contiguous = col_axis == t->rank - 1;
  wa.align_elems = align ? (int)(align > 64 ? 64 : align) : 64;
  return wa;
}

/* The address of the element `l` lanes past the window's element (its
 * offsets in wa), or of its halo's element where wa->halo holds. A split
 * offset's starts' part is added as a pointer of its own. */
static MlirValue win_ptr(LK *L, const CirInst *in, const WinAddr *wa, int l) {
  Mlb *b = &L->b;
  const CirTensor *t = in->tensor;
  MlirValue eb = mlb_i64(b, dtype_bytes(t->dtype));
  MlirValue off_a = l ? mlb_add(b, wa->off_a, mlb_i64(b, l)) : wa->off_a;
  MlirValue hoff = l && !mlirValueIsNull(wa->hoff) ? mlb_add(b, wa->hoff, mlb_i64(b, l)) : wa->hoff;
  MlirValue p = L->args[abi_find(L->abi, ARG_TENSOR, t, 0)];
  if (!mlirValueIsNull(wa->off_b)) p = mlb_gep(b, p, mlb_mul(b, wa->off_b, eb));
  p = mlb_gep(b, p, mlb_mul(b, off_a, eb));
  if (mlirValueIsNull(wa->halo)) return p;
  const CirTensor *h = NULL;
  for (int i = 0; i < t->rank && !h; i++) h = in->index[i].halo;
  MlirValue hp = mlb_gep(b, L->args[abi_find(L->abi, ARG_TENSOR, h, 0)], mlb_mul(b, hoff, eb));
  return mlb_select(b, wa->halo, hp, p);
}

MlirValue window_elem_ptr(LK *L, const CirInst *in, MlirValue r, MlirValue c, int W, int split, MlirValue *valid) {
  WinAddr wa = window_addr(L, in, r, c, W, split);
  *valid = wa.valid;
  return win_ptr(L, in, &wa, 0);
}

MlirValue window_row_ptr(LK *L, const CirInst *in, MlirValue r, MlirValue c, int W, int split, MlirValue *row_bytes) {
  WinAddr wa = window_addr(L, in, r, c, W, split);
  MlirValue ptr = win_ptr(L, in, &wa, 0);
  *row_bytes = (MlirValue){0};
  if (!mlirValueIsNull(wa.row_stride) && mlirValueIsNull(wa.halo))
    *row_bytes = mlb_mul(&L->b, wa.row_stride, mlb_i64(&L->b, dtype_bytes(in->tensor->dtype)));
  return ptr;
}

static MlirValue tensor_present(LK *L, MlirValue base) {
  Mlb *b = &L->b;
  MlirValue null = mlb_op1(b, "llvm.mlir.zero", b->ptr_g, 0, NULL, 0, NULL);
  MlirValue ops[2] = {base, null};
  MlirNamedAttribute pr = mlb_named(b, "predicate", mlb_attr(b, "1 : i64")); /* ne */
  return mlb_op1(b, "llvm.icmp", b->i1, 2, ops, 1, &pr);
}

/* The pieces in which W lanes of a window are accessed: one vector access
 * when the lanes are adjacent in memory (split at 16 bytes and at the known
 * alignment), else one access per lane. Each piece carries its own mask:
 * rows past the document end, and an absent optional tensor. */
typedef struct WinPiece {
  MlirValue ptr, valid, present; /* valid/present may be null: always true */
  int safe; /* ptr is in bounds even where valid is false (WinAddr.safe) */
  int first, lanes;
} WinPiece;

static int window_pieces(LK *L, const CirInst *in, MlirValue r, MlirValue c, int W, WinPiece *out) {
  Mlb *b = &L->b;
  const CirTensor *t = in->tensor;
  MlirValue base = L->args[abi_find(L->abi, ARG_TENSOR, t, 0)];
  int eb = dtype_bytes(t->dtype);
  /* in a scan's step, the window's starts apart (see window_addr) */
  int split = home_in_scan(home_of(L, in));
  WinAddr wa0 = window_addr(L, in, r, c, W, split);
  int per_lane = !wa0.contiguous && W > 1;
  int pl = per_lane ? 1 : piece_lanes(W, eb, wa0.align_elems * eb);
  MlirValue present = t->optional ? tensor_present(L, base) : (MlirValue){0};
  int n = 0;
  for (int l = 0; l < W; l += pl) {
    WinAddr wa = l == 0 ? wa0 : per_lane ? window_addr(L, in, r, plus(L, c, l), 1, split) : wa0;
    WinPiece *p = &out[n++];
    p->ptr = win_ptr(L, in, &wa, per_lane ? 0 : l);
    p->present = present;
    p->valid = wa.valid;
    p->safe = wa.safe && mlirValueIsNull(present) && mlirValueIsNull(wa.halo);
    if (!mlirValueIsNull(present))
      p->valid = mlirValueIsNull(p->valid) ? present : mlb_bin(b, "arith.andi", p->valid, present);
    p->first = l;
    p->lanes = pl;
  }
  return n;
}

static Vals load_window(LK *L, const CirInst *in, MlirValue r, MlirValue c, int W) {
  Mlb *b = &L->b;
  const CirTensor *t = in->tensor;
  int eb = dtype_bytes(t->dtype);
  MlirValue dflt = is_float(t->dtype) ? mlb_f32(b, in->fval) : mlb_i32(b, (long long)in->fval);
  Vals out = {.n = W};
  WinPiece pieces[MAX_W];
  int np = window_pieces(L, in, r, c, W, pieces);
  for (int k = 0; k < np; k++) {
    const WinPiece *p = &pieces[k];
    MlirType lt = p->lanes == 1 ? mem_type(L, t->dtype) : mlb_vec(b, p->lanes, mem_type(L, t->dtype));
    MlirValue loaded;
    if (mlirValueIsNull(p->valid)) {
      loaded = mlb_load(b, lt, p->ptr, p->lanes * eb);
    } else if (p->safe) { /* no branch: the load can be issued with its neighbours' */
      MlirValue x = mlb_load(b, lt, p->ptr, p->lanes * eb);
      MlirValue z = mlb_op1(b, "llvm.mlir.zero", lt, 0, NULL, 0, NULL);
      loaded = mlb_select(b, p->valid, x, z);
    } else {
      MlbIf f;
      mlb_if_begin(b, &f, p->valid, 1, &lt);
      MlirValue x = mlb_load(b, lt, p->ptr, p->lanes * eb);
      mlb_if_else(b, &f, 1, &x);
      MlirValue z = mlb_op1(b, "llvm.mlir.zero", lt, 0, NULL, 0, NULL);
      mlb_if_end(b, &f, 1, &z);
      loaded = mlb_res(f.op, 0);
    }
    for (int i = 0; i < p->lanes; i++) {
      MlirValue x = p->lanes == 1 ? loaded : mlb_vextract(b, loaded, i);
      x = from_storage(L, x, t->dtype, t->dtype);
      /* rows past the document read 0; an absent optional tensor reads its default */
      if (!mlirValueIsNull(p->present) && in->fval != 0) x = mlb_select(b, p->present, x, dflt);
      out.v[p->first + i] = x;
    }
  }
  return out;
}

/* ------------------------------------------------------------------ */
/* elementwise ops                                                     */

static MlirValue approx(LK *L, const char *name, MlirValue x) {
  return mlb_intrinsic(&L->b, name, L->b.f32, 1, &x);
}

/* exp(x) = 2^(x log2 e) on the fast unit, subnormal results flushed to 0 */
MlirValue lk_exp(LK *L, MlirValue x) {
  Mlb *b = &L->b;
  MlirValue y = mlb_binf_c(b, "arith.mulf", x, 1.4426950408889634);
  return approx(L, "llvm.nvvm.ex2.approx.ftz.f32", y);
}

static MlirValue f_log(LK *L, MlirValue x) {
  Mlb *b = &L->b;
  return mlb_binf_c(b, "arith.mulf", approx(L, "llvm.nvvm.lg2.approx.f", x), 0.6931471805599453);
}

static MlirValue unary(LK *L, CirOp op, DType dt, MlirValue x) {
  Mlb *b = &L->b;
  switch (op) {
    case OP_NEG:
      return dt == DT_I32 ? mlb_bin(b, "arith.subi", mlb_i32(b, 0), x) : mlb_cast(b, "arith.negf", x, b->f32);
    case OP_EXP: return lk_exp(L, x);
    case OP_EXP2: return approx(L, "llvm.nvvm.ex2.approx.ftz.f32", x);
    case OP_LOG: return f_log(L, x);
    case OP_SIGMOID: {
      /* 1 / (1 + e) by the fast reciprocal (1 + e is in [1, inf]: no
       * subnormal operand; rcp(inf) = 0, NaN stays NaN) */
      MlirValue e = lk_exp(L, mlb_cast(b, "arith.negf", x, b->f32));
      return approx(L, "llvm.nvvm.rcp.approx.ftz.f", mlb_bin(b, "arith.addf", mlb_f32(b, 1.0), e));
    }
    case OP_SOFTPLUS: {
      /* max(x, 0) + log1p(e), e = exp(-|x|) in (0, 1] (dsl/README.md), as
       * the interpreter computes it. log1p(e) = log(u) e / (u - 1) with
       * u = 1 + e rounded, and e itself when u rounds to 1: accurate to the
       * approximations' error for every x, no cut-off. */
      MlirValue e = lk_exp(L, mlb_cast(b, "arith.negf", mlb_intrinsic(b, "llvm.fabs.f32", b->f32, 1, &x), b->f32));
      MlirValue u = mlb_bin(b, "arith.addf", mlb_f32(b, 1.0), e);
      MlirValue lu = f_log(L, u);
      /* u - 1 is exact and, where used (u > 1), at least 2^-23: the fast
       * reciprocal sees no subnormal */
      MlirValue r = approx(L, "llvm.nvvm.rcp.approx.ftz.f", mlb_binf_c(b, "arith.subf", u, 1.0));
      MlirValue l = mlb_bin(b, "arith.mulf", lu, mlb_bin(b, "arith.mulf", e, r));
      l = mlb_select(b, mlb_cmpf(b, "oeq", u, mlb_f32(b, 1.0)), e, l);
      return mlb_bin(b, "arith.addf", mlb_binf_c(b, "arith.maximumf", x, 0.0), l);
    }
    case OP_SQRT: return mlb_intrinsic(b, "llvm.sqrt.f32", b->f32, 1, &x);
    case OP_RSQRT: return approx(L, "llvm.nvvm.rsqrt.approx.f", x);
    case OP_ABS: return mlb_intrinsic(b, "llvm.fabs.f32", b->f32, 1, &x);
    case OP_TANH: case OP_LOG1P: case OP_EXPM1: case OP_LOGSIGMOID: case OP_SILU: return lower_math_unary(L, op, x);
    case OP_NOT: return mlb_bin(b, "arith.xori", x, mlb_bool(b, 1));
    default: cake_die("not a unary op: %s", cake_ops[op].id);
  }
}

/* i32 x / y and x % y with one defined result for every operand, as the
 * interpreter computes them (dsl/README.md): x / 0 = 0, x % 0 = x,
 * INT32_MIN / -1 = INT32_MIN, INT32_MIN % -1 = 0. The divisor is replaced by
 * 1 where divsi / remsi would be undefined. */
static MlirValue int_divide(LK *L, CirOp op, MlirValue x, MlirValue y) {
  Mlb *b = &L->b;
  MlirValue zero = mlb_i32(b, 0);
  MlirValue by_zero = mlb_cmpi(b, "eq", y, zero);
  MlirValue x_min = mlb_cmpi(b, "eq", x, mlb_i32(b, INT32_MIN));
  MlirValue y_m1 = mlb_cmpi(b, "eq", y, mlb_i32(b, -1));
  MlirValue overflow = mlb_bin(b, "arith.andi", x_min, y_m1);
  MlirValue trap = mlb_bin(b, "arith.ori", by_zero, overflow);
  MlirValue safe = mlb_select(b, trap, mlb_i32(b, 1), y);
  if (op == OP_DIV) return mlb_select(b, by_zero, zero, mlb_bin(b, "arith.divsi", x, safe));
  return mlb_select(b, by_zero, x, mlb_bin(b, "arith.remsi", x, safe));
}

/* f32 -> i32: truncation toward zero, saturating, NaN to 0 (as the interpreter's cake_round_dtype) */
MlirValue f32_to_i32(LK *L, MlirValue x) { return mlb_intrinsic(&L->b, "llvm.fptosi.sat.i32.f32", L->b.i32, 1, &x); }

static MlirValue binary(LK *L, CirOp op, DType operand_dt, MlirValue x, MlirValue y) {
  Mlb *b = &L->b;
  int f = operand_dt != DT_I32 && operand_dt != DT_BOOL;
  switch (op) {
    case OP_ADD: return mlb_bin(b, f ? "arith.addf" : "arith.addi", x, y);
    case OP_SUB: return mlb_bin(b, f ? "arith.subf" : "arith.subi", x, y);
    case OP_MUL: return mlb_bin(b, f ? "arith.mulf" : "arith.muli", x, y);
    case OP_DIV: return f ? mlb_bin(b, "arith.divf", x, y) : int_divide(L, op, x, y);
    case OP_MOD: return int_divide(L, op, x, y);
    case OP_MAXIMUM: return mlb_bin(b, f ? "arith.maximumf" : "arith.maxsi", x, y);
    case OP_MINIMUM: return mlb_bin(b, f ? "arith.minimumf" : "arith.minsi", x, y);
    case OP_LT: return f ? mlb_cmpf(b, "olt", x, y) : mlb_cmpi(b, "slt", x, y);
    case OP_LE: return f ? mlb_cmpf(b, "ole", x, y) : mlb_cmpi(b, "sle", x, y);
    case OP_GT: return f ? mlb_cmpf(b, "ogt", x, y) : mlb_cmpi(b, "sgt", x, y);
    case OP_GE: return f ? mlb_cmpf(b, "oge", x, y) : mlb_cmpi(b, "sge", x, y);
    case OP_EQ: return f ? mlb_cmpf(b, "oeq", x, y) : mlb_cmpi(b, "eq", x, y);
    case OP_NE: return f ? mlb_cmpf(b, "une", x, y) : mlb_cmpi(b, "ne", x, y);
    case OP_AND: return mlb_bin(b, "arith.andi", x, y);
    case OP_OR: return mlb_bin(b, "arith.ori", x, y);
    default: cake_die("not a binary op: %s", cake_ops[op].id);
  }
}

/* A constant operand takes the register type its consumer needs. */
static MlirValue const_as(LK *L, const CirInst *k, DType want) {
  Mlb *b = &L->b;
  if (want == DT_BOOL) return mlb_bool(b, k->fval != 0);
  if (want == DT_I32) return mlb_i32(b, k->ival);
  return mlb_f32(b, k->fval);
}

/* Operand `o` of a value of type `rt`, broadcast to element (r, c..c+W). */
static Vals operand(LK *L, const CirInst *o, CirType rt, MlirValue r, MlirValue c, int W, DType want) {
  Mlb *b = &L->b;
  if (o->op == OP_CONST) return splat(const_as(L, o, want), W);
  if (o->ty.rank == 0) {
    MlirValue s = eval_scalar(L, o);
    if (want == DT_F32 && o->ty.dt == DT_I32) s = mlb_cast(b, "arith.sitofp", s, b->f32);
    return splat(s, W);
  }
  MlirValue zero = mlb_i32(b, 0);
  MlirValue rr = rows_of(o->ty) == 1 ? zero : r;
  if (cols_of(o->ty) == 1 && cols_of(rt) > 1) return splat(eval(L, o, rr, zero, 1).v[0], W);
  return eval(L, o, rr, c, W);
}

static Vals eval_fused(LK *L, const CirInst *v, MlirValue r, MlirValue c, int W) {
  Mlb *b = &L->b;
  Vals out = {.n = W};
  switch (cake_ops[v->op].kind) {
    case OK_LEAF:
      switch (v->op) {
        case OP_CONST: return splat(const_as(L, v, v->ty.dt), W);
        case OP_DIMVAL: return splat(L->args[abi_find(L->abi, ARG_DIM, NULL, v->dim)], W);
        case OP_PARAMVAL: return splat(L->args[abi_find(L->abi, ARG_PARAM, v->param, 0)], W);
        case OP_GRIDVAR: return splat(L->grid[v->axis], W);
        default: cake_die("leaf %s has no value here", cake_ops[v->op].id);
      }
    case OK_FRAG: { /* row n of the fragment table: continues, continued */
      MlirValue n = eval_scalar(L, v->args[0]);
      MlirValue ft = L->args[abi_find(L->abi, ARG_FRAG_TABLE, NULL, 0)];
      MlirValue at = mlb_add_c(b, mlb_mul_c(b, n, 6), v->op == OP_CONTINUES ? 0 : 1);
      MlirValue off = mlb_cast(b, "arith.extsi", mlb_mul_c(b, at, 4), b->i64);
      MlirValue x = mlb_load(b, b->i32, mlb_gep(b, ft, off), 4);
      return splat(mlb_cmpi(b, "ne", x, mlb_i32(b, 0)), W);
    }
    case OK_IOTA: /* the element's own index along the vector */
      for (int l = 0; l < W; l++) out.v[l] = plus(L, c, l);
      return out;
    case OK_VALID: {
      ChunkInfo *ci = &L->chunks[v->args[0]->id];
      CAKE_ASSERT(ci->set);
      for (int l = 0; l < W; l++) out.v[l] = mlb_cmpi(b, "slt", mlb_add(b, ci->start, plus(L, c, l)), ci->end);
      return out;
    }
    case OK_MEM: return load_window(L, v, r, c, W);
    case OK_UNARY:
    case OK_LOGIC1: {
      Vals a = operand(L, v->args[0], v->ty, r, c, W, v->ty.dt);
      for (int l = 0; l < W; l++) out.v[l] = unary(L, v->op, v->ty.dt, a.v[l]);
      return out;
    }
    case OK_BINARY:
    case OK_COMPARE:
    case OK_LOGIC2: {
      /* the dtype both operands are computed in */
      DType odt = v->ty.dt;
      if (cake_ops[v->op].kind == OK_COMPARE) {
        DType a = v->args[0]->ty.dt, bb = v->args[1]->ty.dt;
        odt = (a == DT_I32 && bb == DT_I32) ? DT_I32 : DT_F32;
        if (v->args[0]->op == OP_CONST && v->args[0]->is_int && bb == DT_I32) odt = DT_I32;
      }
      Vals a = operand(L, v->args[0], v->ty, r, c, W, odt);
      Vals y = operand(L, v->args[1], v->ty, r, c, W, odt);
      for (int l = 0; l < W; l++) out.v[l] = binary(L, v->op, odt, a.v[l], y.v[l]);
      return out;
    }
    case OK_SELECT: {
      Vals q = operand(L, v->args[0], v->ty, r, c, W, DT_BOOL);
      Vals a = operand(L, v->args[1], v->ty, r, c, W, v->ty.dt);
      Vals y = operand(L, v->args[2], v->ty, r, c, W, v->ty.dt);
      for (int l = 0; l < W; l++) out.v[l] = mlb_select(b, q.v[l], a.v[l], y.v[l]);
      return out;
    }
    case OK_CAST: {
      const CirInst *a0 = v->args[0];
      Vals a = operand(L, a0, v->ty, r, c, W, a0->ty.dt == DT_I32 ? DT_I32 : DT_F32);
      for (int l = 0; l < W; l++) {
        MlirValue x = a.v[l];
        int from_int = a0->ty.dt == DT_I32;
        switch (v->ty.dt) {
          case DT_I32: x = from_int ? x : f32_to_i32(L, x); break;
          case DT_F32: x = from_int ? mlb_cast(b, "arith.sitofp", x, b->f32) : x; break;
          case DT_BF16:
          case DT_F16:
            if (from_int) x = mlb_cast(b, "arith.sitofp", x, b->f32);
            x = mlb_cast(b, "arith.extf", mlb_cast(b, "arith.truncf", x, mem_type(L, v->ty.dt)), b->f32);
            break;
          default: cake_die("bad cast");
        }
        out.v[l] = x;
      }
      return out;
    }
    case OK_LAYOUT: {
      const CirInst *a = v->args[0];
      if (v->op == OP_TRANSPOSE) {
        for (int l = 0; l < W; l++) out.v[l] = eval(L, a, plus(L, c, l), r, 1).v[0];
        return out;
      }
      if (v->op == OP_EXPAND) {
        if (a->ty.rank == 0) return splat(eval_scalar(L, a), W);
        /* [n] -> [n, 1] (axis 1): element (r, 0) is a[r]; [n] -> [1, n] (axis 0): (0, c) is a[c] */
        if (v->ty.rank == 2 && v->axis == 1) return splat(eval(L, a, mlb_i32(b, 0), r, 1).v[0], W);
        return eval(L, a, mlb_i32(b, 0), c, W);
      }
      /* PICK */
      MlirValue at = mlb_i32(b, v->ival);
      if (a->ty.rank == 1) return splat(eval(L, a, mlb_i32(b, 0), at, 1).v[0], W);
      if (v->axis == 0) return eval(L, a, at, c, W);
      for (int l = 0; l < W; l++) out.v[l] = eval(L, a, plus(L, c, l), at, 1).v[0];
      return out;
    }
    case OK_MASK: {
      Vals a = operand(L, v->args[0], v->ty, r, c, W, v->ty.dt);
      MlirValue zero = v->ty.dt == DT_I32 ? mlb_i32(b, 0) : v->ty.dt == DT_BOOL ? mlb_bool(b, 0) : mlb_f32(b, 0);
      MlirValue lim = plus(L, r, (int)v->ival);
      for (int l = 0; l < W; l++) {
        MlirValue col = plus(L, c, l);
        MlirValue keep = v->op == OP_TRIL ? mlb_cmpi(b, "sle", col, lim) : mlb_cmpi(b, "sge", col, lim);
        out.v[l] = mlb_select(b, keep, a.v[l], zero);
      }
      return out;
    }
    case OK_DECAY_TRI: {
      /* decay(g)[r, j] = exp(g[r] - g[j]) for j <= r, with exp's approximation; above the
       * diagonal the exponent is -inf before exp (which gives +0): never g[r] - g[j] */
      const CirInst *g = v->args[0];
      MlirValue zero = mlb_i32(b, 0);
      int vec = g->ty.rank == 1; /* [n] rather than [n, 1] */
      MlirValue gr = (vec ? eval(L, g, zero, r, 1) : eval(L, g, r, zero, 1)).v[0];
      Vals gj = {.n = W};
      if (vec) gj = eval(L, g, zero, c, W);
      else
        for (int l = 0; l < W; l++) gj.v[l] = eval(L, g, plus(L, c, l), zero, 1).v[0];
      MlirValue ninf = mlb_f32(b, -INFINITY);
      for (int l = 0; l < W; l++) {
        MlirValue keep = mlb_cmpi(b, "sle", plus(L, c, l), r);
        MlirValue d = mlb_bin(b, "arith.subf", gr, gj.v[l]);
        MlirValue masked = mlb_select(b, keep, d, ninf);
        out.v[l] = lk_exp(L, masked);
      }
      return out;
    }
    default: break;
  }
  cake_die("%s cannot be evaluated elementwise", cake_ops[v->op].id);
}

Vals eval(LK *L, const CirInst *v, MlirValue r, MlirValue c, int W) {
  Home *h = home_of(L, v);
  if (L->acc.mm == v) {
    CAKE_ASSERT(W == L->acc.n);
    Vals x = {.n = W};
    for (int l = 0; l < W; l++) x.v[l] = L->acc.v[l];
    return x;
  }
  if (h->kind == H_SCALAR && h->emitted) return splat(h->scalar, W);
  if (h->kind == H_SMEM) {
    MlirValue base = home_base(L, v);
    MlirValue row = v->ty.rank == 2 ? r : mlb_i32(&L->b, 0);
    MlirValue col = v->ty.rank == 0 ? mlb_i32(&L->b, 0) : c;
    Vals x = smem_load_vals(L, base, h->sdt, h->stride, row, col, W);
    for (int l = 0; l < W; l++) x.v[l] = from_storage(L, x.v[l], h->sdt, v->ty.dt);
    return x;
  }
  return eval_fused(L, v, r, c, W);
}

MlirValue eval_scalar(LK *L, const CirInst *v) {
  Home *h = home_of(L, v);
  if (h->kind == H_SCALAR && h->emitted) return h->scalar;
  MlirValue z = mlb_i32(&L->b, 0);
  return eval(L, v, z, z, 1).v[0];
}

/* ------------------------------------------------------------------ */
/* element loops                                                       */

int tile_width(const CirInst *v) {
  int C = cols_of(v->ty);
  for (int w = 4; w > 1; w /= 2)
    if (C % w == 0) return w;
  return 1;
}

/* Items g = tid, tid + NT, ... below `total`: unrolled when each thread has
 * at most 4, else a loop whose turns take `batch` items each (when they
 * divide evenly), their loads in flight together. */
static void strided_items(LK *L, int total, int batch, StridedFn fn, void *ctx) {
  Mlb *b = &L->b;
  int NT = L->nthreads, iters = (total + NT - 1) / NT;
  if (iters > 4 && batch > 1 && total % (batch * NT) == 0) {
    MlbFor f;
    MlirValue hi = mlb_i32(b, total);
    MlirValue step = mlb_i32(b, batch * NT);
    mlb_for_begin(b, &f, L->tid, hi, step, 0, NULL);
    for (int i = 0; i < batch; i++) fn(L, i ? mlb_add(b, f.iv, mlb_i32(b, i * NT)) : f.iv, ctx);
    mlb_for_end(b, &f, 0, NULL);
    return;
  }
  if (iters > 4) {
    MlbFor f;
    MlirValue hi = mlb_i32(b, total);
    MlirValue step = mlb_i32(b, NT);
    mlb_for_begin(b, &f, L->tid, hi, step, 0, NULL);
    fn(L, f.iv, ctx);
    mlb_for_end(b, &f, 0, NULL);
    return;
  }
  /* Unrolled: every item's loads can be in flight together. */
  for (int i = 0; i < iters; i++) {
    MlirValue g = i ? mlb_add(b, L->tid, mlb_i32(b, i * NT)) : L->tid;
    if ((i + 1) * NT <= total) {
      fn(L, g, ctx);
      continue;
    }
    MlbIf in;
    mlb_if_begin(b, &in, mlb_cmpi(b, "ult", g, mlb_i32(b, total)), 0, NULL);
    fn(L, g, ctx);
    mlb_if_else(b, &in, 0, NULL);
    mlb_if_end(b, &in, 0, NULL);
  }
}

void strided_loop(LK *L, int total, StridedFn fn, void *ctx) { strided_items(L, total, 1, fn, ctx); }

/* Evaluating v: does it read device memory (a load fused into it, not
 * staged in shared memory), and does it take more than a few ALU
 * instructions per element (*costly)? */
static int reads_global(LK *L, const CirInst *v, int *costly) {
  const Home *h = home_of(L, v);
  if (h->kind != H_FUSED) return 0;
  if (v->op == OP_LOAD) return v->ty.rank > 0;
  if (!op_is_cheap(v->op)) *costly = 1;
  int any = 0;
  for (int j = 0; j < v->nargs; j++) any |= reads_global(L, v->args[j], costly);
  return any;
}

typedef struct TileLoopCtx {
  const CirInst *v;
  int per_row, W;
  TileFn fn;
  void *ctx;
} TileLoopCtx;

enum { BATCH_CHEAP = 4, BATCH_COSTLY = 2 };

static void tile_item(LK *L, MlirValue g, void *vctx) {
  Mlb *b = &L->b;
  TileLoopCtx *t = vctx;
  MlirValue r, c;
  if (t->per_row == 1) {
    r = g;
    c = mlb_i32(b, 0);
  } else {
    r = mlb_bin(b, "arith.divui", g, mlb_i32(b, t->per_row));
    c = mlb_mul_c(b, mlb_bin_c(b, "arith.remui", g, t->per_row), t->W);
  }
  t->fn(L, t->v, r, c, t->W, t->ctx);
}

void tile_loop(LK *L, const CirInst *v, int rows, int cols, int W, TileFn fn, void *ctx) {
  TileLoopCtx t = {v, cols / W, W, fn, ctx};
  /* A tile read from device memory as it is computed: several items per
   * turn, so that one memory latency covers their loads (fewer when each
   * item costs special functions, whose temporaries take registers) */
  const CirInst *x = v->op == OP_STORE ? v->args[0] : v;
  int costly = 0, global = reads_global(L, x, &costly);
  if (!global && home_of(L, x)->kind != H_FUSED) { /* a tile materialised: what its value reads */
    if (x->op == OP_LOAD) global = x->ty.rank > 0;
    if (!op_is_cheap(x->op)) costly = 1;
    for (int j = 0; j < x->nargs; j++) global |= reads_global(L, x->args[j], &costly);
  }
  strided_items(L, rows * (cols / W), global ? (costly ? BATCH_COSTLY : BATCH_CHEAP) : 1, tile_item, &t);
}

typedef struct MatCtx {
  MlirValue base;
  DType sdt;
  int stride;
} MatCtx;

static void mat_fn(LK *L, const CirInst *v, MlirValue r, MlirValue c, int W, void *vctx) {
  MatCtx *m = vctx;
  Vals x = eval_fused(L, v, r, c, W);
  smem_store_vals(L, m->base, m->sdt, m->stride, r, c, x);
}

static void copy_fn(LK *L, const CirInst *v, MlirValue r, MlirValue c, int W, void *vctx) {
  MatCtx *m = vctx;
  Vals x = eval(L, v, r, c, W);
  smem_store_vals(L, m->base, m->sdt, m->stride, r, c, x);
}

/* Write every element of v to a shared-memory tile. `own`: the tile is v's
 * home, so v is computed from its operands; otherwise v is read (or
 * recomputed) wherever it lives and copied. */
void materialize_to(LK *L, const CirInst *v, MlirValue base, DType sdt, int stride, int own) {
  MatCtx m = {base, sdt == DT_BOOL ? DT_I32 : sdt, stride};
  int W = tile_width(v);
  if (sdt == DT_F32 && W > 4 && !own) W = 4;
  tile_loop(L, v, rows_of(v->ty), cols_of(v->ty), W, own ? mat_fn : copy_fn, &m);
}

/* ------------------------------------------------------------------ */
/* stores                                                              */

/* The values a store writes at (r, c .. c + W - 1): its operand, computed. */
Vals store_value_at(LK *L, const CirInst *st, MlirValue r, MlirValue c, int W) {
  DType want = st->tensor->dtype == DT_I32 ? DT_I32 : DT_F32;
  return operand(L, st->args[0], st->ty, r, c, W, want);
}

/* Write x, the values of a store at (r, c ..), to its window (rows out of range skipped). */
void store_vals_at(LK *L, const CirInst *st, MlirValue r, MlirValue c, Vals x) {
  Mlb *b = &L->b;
  const CirTensor *t = st->tensor;
  int eb = dtype_bytes(t->dtype);
  WinPiece pieces[MAX_W];
  int np = window_pieces(L, st, r, c, x.n, pieces);
  for (int k = 0; k < np; k++) {
    const WinPiece *p = &pieces[k];
    MlirValue val;
    if (p->lanes == 1) {
      val = to_storage(L, x.v[p->first], t->dtype);
    } else {
      val = mlb_undef(b, mlb_vec(b, p->lanes, mem_type(L, t->dtype)));
      for (int i = 0; i < p->lanes; i++) val = mlb_vinsert(b, val, to_storage(L, x.v[p->first + i], t->dtype), i);
    }
    if (mlirValueIsNull(p->valid)) {
      mlb_store(b, val, p->ptr, p->lanes * eb);
    } else {
      MlbIf f;
      mlb_if_begin(b, &f, p->valid, 0, NULL);
      mlb_store(b, val, p->ptr, p->lanes * eb);
      mlb_if_else(b, &f, 0, NULL);
      mlb_if_end(b, &f, 0, NULL);
    }
  }
}

static void store_fn(LK *L, const CirInst *st, MlirValue r, MlirValue c, int W, void *ctx) {
  (void)ctx;
  store_vals_at(L, st, r, c, store_value_at(L, st, r, c, W));
}

void emit_store_at(LK *L, const CirInst *st, MlirValue r, MlirValue c, int W) { store_fn(L, st, r, c, W, NULL); }

Vals eval_own(LK *L, const CirInst *v, MlirValue r, MlirValue c, int W) { return eval_fused(L, v, r, c, W); }

void materialize_at(LK *L, const CirInst *v, MlirValue base, DType sdt, int stride, MlirValue r, MlirValue c, int W) {
  smem_store_vals(L, base, sdt == DT_BOOL ? DT_I32 : sdt, stride, r, c, eval_own(L, v, r, c, W));
}

void emit_store(LK *L, const CirInst *st) {
  int W = 1;
  int C = cols_of(st->ty);
  for (int w = MAX_W; w > 1; w /= 2)
    if (C % w == 0) { W = w; break; }
  if (st->tensor->dtype == DT_F32 || st->tensor->dtype == DT_I32) W = W > 4 ? 4 : W;
  tile_loop(L, st, rows_of(st->ty), C, W, store_fn, NULL);
}
