/* interp.c - the CPU interpreter of CIR (see interp.h for the contract). */
#include "interp.h"
#include "live.h"

#include "cake_require.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double cake_round_f32(double x) { return (double)(float)x; }

double cake_round_bf16(double x) {
  float f = (float)x;
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) { /* inf or nan: keep, quiet the nan */
    if (u & 0x007fffffu) u |= 0x00400000u;
    u &= 0xffff0000u;
  } else {
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    u &= 0xffff0000u;
  }
  memcpy(&f, &u, 4);
  return f;
}

double cake_round_f16(double x) { return (double)(_Float16)(float)x; }

double cake_round_dtype(DType t, double x) {
  switch (t) {
    case DT_BF16: return cake_round_bf16(x);
    case DT_F16: return cake_round_f16(x);
    case DT_F32: return cake_round_f32(x);
    case DT_I32: /* truncation toward zero, saturating; NaN is 0 (as cvt.rzi.sat.s32.f32) */
      if (isnan(x)) return 0;
      if (x >= 2147483647.0) return 2147483647.0;
      if (x <= -2147483648.0) return -2147483648.0;
      return trunc(x);
    case DT_BOOL: return x != 0;
    default: return x;
  }
}

typedef struct Tile {
  CirType ty;
  double *v; /* rows x cols, row-major; rank 0: 1 element; rank 1: [n] */
} Tile;

typedef struct Chunk {
  long long start, end;
  int doc;
  long long doc_start, doc_end; /* its document's tokens */
} Chunk;

typedef struct Interp {
  const CirProgram *p;
  const InterpArgs *args;
  long long *dims;
  Chunk *chunks;
  long long nchunks;
  long long *doc_first; /* first chunk of each doc; [ndocs + 1] */
  long long ndocs;
  const CirKernel *k;
  long long grid[CIR_MAX_AXES];
  Tile *vals; /* by instruction id */
  int nvals;
  char *err;
  size_t errlen;
  int failed;
  const CirTensor *win_halo; /* walk_window: the element passed is one of this halo's (a shifted window) */
  long long round;           /* the round of a `rounds` group being run, or -1 */
} Interp;

static void fail(Interp *I, const CirInst *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(Interp *I, const CirInst *at, const char *fmt, ...) {
  if (I->failed) return;
  I->failed = 1;
  va_list ap;
  va_start(ap, fmt);
  int n = 0;
  if (at && at->loc.src)
    n = snprintf(I->err, I->errlen, "%s:%d:%d: ", at->loc.src->name, at->loc.line, at->loc.col);
  if (n < 0 || (size_t)n >= I->errlen) n = 0;
  vsnprintf(I->err + n, I->errlen - (size_t)n, fmt, ap);
  va_end(ap);
}

static int numel(CirType t) {
  return t.rank == 0 ? 1 : t.rank == 1 ? t.shape[0] : t.shape[0] * t.shape[1];
}
static int rows_of(CirType t) { return t.rank == 2 ? t.shape[0] : 1; }
static int cols_of(CirType t) { return t.rank == 0 ? 1 : t.rank == 1 ? t.shape[0] : t.shape[1]; }

static Tile *val(Interp *I, const CirInst *in) {
  CAKE_ASSERT(in->id < I->nvals);
  return &I->vals[in->id];
}

static Tile *def(Interp *I, const CirInst *in) {
  Tile *t = val(I, in);
  t->ty = in->ty;
  free(t->v);
  t->v = cake_xcalloc((size_t)numel(in->ty), sizeof(double));
  return t;
}

/* Element (r, c) of a tile broadcast to a larger shape (rank 0 / unit axes repeat). */
static double bget(const Tile *t, int r, int c) {
  if (t->ty.rank == 0) return t->v[0];
  if (t->ty.rank == 1) return t->v[t->ty.shape[0] == 1 ? 0 : c];
  int rr = t->ty.shape[0] == 1 ? 0 : r;
  int cc = t->ty.shape[1] == 1 ? 0 : c;
  return t->v[rr * t->ty.shape[1] + cc];
}

long long cake_interp_numel(const CirProgram *p, const CirTensor *t, const long long *dims) {
  long long n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i].sym >= 0 ? dims[t->shape[i].sym] : t->shape[i].value;
  return n;
}

long long cake_interp_chunk_count(const CirProgram *p, long long T, const long long *cu, long long ndocs) {
  if (!p->chunk) return 0;
  long long n = 0, nd = cu ? ndocs : 1;
  for (long long d = 0; d < nd; d++) {
    long long len = cu ? cu[d + 1] - cu[d] : T;
    n += (len + p->chunk - 1) / p->chunk;
  }
  return n;
}

static long long extent(Interp *I, CirExtent e) { return e.sym >= 0 ? I->dims[e.sym] : e.value; }

/* ---- memory windows ---- */

/* Walk the elements of a window; calls fn(I, flat tensor offset or -1 if masked, r, c). */
typedef void (*WinFn)(Interp *I, const CirInst *in, long long off, int r, int c, void *ctx);

static void walk_window(Interp *I, const CirInst *in, WinFn fn, void *ctx) {
  const CirTensor *t = in->tensor;
  long long base[CIR_MAX_TENSOR_RANK];
  long long lim[CIR_MAX_TENSOR_RANK];
  long long lo[CIR_MAX_TENSOR_RANK] = {0};
  long long own_end = -1; /* a shifted window: row r must itself lie in the chunk (start + r < own_end) */
  int own_axis = -1, free_axes[2], nf = 0;
  const CirKernel *hx = NULL; /* and the halo it reads through (tokens of other ranks) */
  long long frag = 0;
  for (int i = 0; i < t->rank; i++) {
    const CirIndex *ix = &in->index[i];
    long long ext = extent(I, t->shape[i]);
    lim[i] = ext;
    switch (ix->kind) {
      case IX_FULL: base[i] = 0; free_axes[nf++] = i; break;
      case IX_CHUNK: {
        long long c = (long long)val(I, ix->v)->v[0];
        if (c < 0 || c >= I->nchunks) { fail(I, in, "chunk index %lld out of range", c); return; }
        base[i] = I->chunks[c].start;
        lim[i] = I->chunks[c].end;
        if (ix->shift) { /* rows of the token `shift` away, inside the chunk's document */
          own_axis = i;
          own_end = I->chunks[c].end - I->chunks[c].start;
          base[i] += ix->shift;
          lo[i] = I->chunks[c].doc_start;
          lim[i] = I->chunks[c].doc_end;
          hx = cir_halo_exchange(I->p, ix->halo);
          frag = I->chunks[c].doc;
        }
        free_axes[nf++] = i;
        break;
      }
      case IX_BLOCK: {
        long long b = (long long)val(I, ix->v)->v[0];
        base[i] = b * ix->size;
        free_axes[nf++] = i;
        break;
      }
      case IX_SCALAR: {
        long long x = (long long)val(I, ix->v)->v[0];
        if (x < 0 || x >= ext) {
          fail(I, in, "index %lld is out of range for axis %d of '%s' (extent %lld)", x, i, t->name, ext);
          return;
        }
        base[i] = x;
        break;
      }
    }
  }
  int R = nf == 2 ? in->index[free_axes[0]].size : 1;
  int C = nf >= 1 ? in->index[free_axes[nf - 1]].size : 1;
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) {
      long long idx[CIR_MAX_TENSOR_RANK];
      memcpy(idx, base, sizeof idx);
      int masked = 0;
      if (nf == 2) idx[free_axes[0]] += r;
      if (nf >= 1) idx[free_axes[nf - 1]] += c;
      int own_out = own_axis >= 0 && (own_axis == free_axes[0] && nf == 2 ? r : c) >= own_end;
      for (int i = 0; i < t->rank; i++)
        if (idx[i] >= lim[i] || idx[i] < lo[i]) masked = 1;
      long long off = 0;
      if (hx && masked && !own_out) { /* before or after the fragment: its halo's row, if it holds one */
        long long tok = idx[own_axis], hrow = -1, B = hx->xbefore, A = hx->xafter;
        if (tok < lo[own_axis] && tok >= lo[own_axis] - B) hrow = B - (lo[own_axis] - tok);
        if (tok >= lim[own_axis] && tok < lim[own_axis] + A) hrow = B + (tok - lim[own_axis]);
        for (int i = 1; i < t->rank && hrow >= 0; i++)
          if (idx[i] >= lim[i] || idx[i] < lo[i]) hrow = -1;
        if (hrow >= 0) {
          off = frag * (B + A) + hrow; /* [F, B + A] + the source's other extents */
          for (int i = 1; i < t->rank; i++) off = off * extent(I, t->shape[i]) + idx[i];
          I->win_halo = hx->xdst;
          fn(I, in, off, r, c, ctx);
          I->win_halo = NULL;
          continue;
        }
      }
      if (own_out) masked = 1;
      for (int i = 0; i < t->rank; i++) off = off * extent(I, t->shape[i]) + idx[i];
      fn(I, in, masked ? -1 : off, r, c, ctx);
    }
}

/* A value as a tensor, param or conversion of dtype t holds it: rounded,
 * except for float dtypes in exact mode. */
static double rnd(const Interp *I, DType t, double x) {
  if (I->args->exact && (t == DT_BF16 || t == DT_F16 || t == DT_F32)) return x;
  return cake_round_dtype(t, x);
}

typedef struct { Tile *out; double *data; } LoadCtx;
static void load_elem(Interp *I, const CirInst *in, long long off, int r, int c, void *vctx) {
  LoadCtx *x = vctx;
  double v = 0;
  if (off >= 0 && I->win_halo) v = rnd(I, in->tensor->dtype, I->args->tensors[I->win_halo->index][off]);
  else if (off >= 0) v = x->data ? rnd(I, in->tensor->dtype, x->data[off]) : in->fval;
  x->out->v[r * cols_of(in->ty) + c] = v;
}

static void store_elem(Interp *I, const CirInst *in, long long off, int r, int c, void *vctx) {
  LoadCtx *x = vctx;
  if (off < 0) return;
  x->data[off] = rnd(I, in->tensor->dtype, bget(x->out, r, c));
}

/* ---- ops ---- */

/* i32 arithmetic wraps modulo 2^32 (two's complement), as on the GPU. */
static double wrap_i32(int64_t x) {
  int64_t v = x & 0xffffffff;
  return (double)(v >= 0x80000000 ? v - 0x100000000 : v);
}

/* IEEE maximum / minimum (arith.maximumf / minimumf): NaN if either is NaN,
 * and -0 < +0. */
static double max_ieee(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}
static double min_ieee(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
}

static double unary(CirOp op, double x) {
  switch (op) {
    case OP_NEG: return -x;
    case OP_EXP: return exp(x);
    case OP_EXP2: return exp2(x);
    case OP_LOG: return log(x);
    case OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case OP_SOFTPLUS: return (x > 0 ? x : 0) + log1p(exp(-fabs(x))); /* NaN stays NaN through log1p */
    case OP_SQRT: return sqrt(x);
    case OP_RSQRT: return 1.0 / sqrt(x);
    case OP_ABS: return fabs(x);
    case OP_TANH: return tanh(x); /* tanh(+-0) = +-0, tanh(+-inf) = +-1 */
    case OP_LOG1P: return log1p(x); /* log1p(-1) = -inf, NaN below -1 */
    case OP_EXPM1: return expm1(x); /* expm1(-inf) = -1 */
    /* -softplus(-x), as the GPU computes it: -0 at +inf, -inf at -inf */
    case OP_LOGSIGMOID: return -((-x > 0 ? -x : 0) + log1p(exp(-fabs(x))));
    /* x / (1 + exp(-x)) is x sigmoid(x); at -inf its limit -0 (x * 0 would be NaN) */
    case OP_SILU: return x == -INFINITY ? -0.0 : x / (1.0 + exp(-x));
    case OP_NOT: return !(x != 0);
    default: cake_die("not a unary op: %s", cake_ops[op].id);
  }
}

/* i32 operands (exact integers in i32 range): the GPU's results. Division
 * truncates; x / 0 = 0 and x % 0 = x; INT32_MIN / -1 wraps to INT32_MIN
 * and INT32_MIN % -1 = 0 (see dsl/README.md). */
static double int_binop(CirOp op, double a, double b) {
  int64_t x = (int64_t)a, y = (int64_t)b;
  switch (op) {
    case OP_ADD: return wrap_i32(x + y);
    case OP_SUB: return wrap_i32(x - y);
    case OP_MUL: return wrap_i32(x * y); /* |x y| <= 2^62 */
    case OP_DIV: return y == 0 ? 0 : wrap_i32(x / y);
    case OP_MOD: return y == 0 ? a : (double)(x % y);
    case OP_MAXIMUM: return a > b ? a : b;
    case OP_MINIMUM: return a < b ? a : b;
    default: cake_die("not an integer op: %s", cake_ops[op].id);
  }
}

static double binop(CirOp op, DType dt, double a, double b) {
  if (dt == DT_I32 && cake_ops[op].kind == OK_BINARY) return int_binop(op, a, b);
  switch (op) {
    case OP_ADD: return a + b;
    case OP_SUB: return a - b;
    case OP_MUL: return a * b;
    case OP_DIV: return a / b;
    case OP_MAXIMUM: return max_ieee(a, b);
    case OP_MINIMUM: return min_ieee(a, b);
    case OP_LT: return a < b;
    case OP_LE: return a <= b;
    case OP_GT: return a > b;
    case OP_GE: return a >= b;
    case OP_EQ: return a == b;
    case OP_NE: return a != b;
    case OP_AND: return (a != 0) && (b != 0);
    case OP_OR: return (a != 0) || (b != 0);
    default: cake_die("not a binary op: %s", cake_ops[op].id);
  }
}

static void exec_block(Interp *I, const CirBlock *b);

/* A loop's carried value of a float dtype holds what that dtype can from
 * step to step, as on the GPU, which keeps it in that dtype between steps
 * (in exact mode nothing rounds, carries neither). So a state carried over
 * chunks rounds as it would passing through a tensor of its dtype, and a
 * program may hand it to another rank between two steps. */
static void round_carry(const Interp *I, Tile *t) {
  if (t->ty.dt != DT_F32 && t->ty.dt != DT_BF16 && t->ty.dt != DT_F16) return;
  for (long long i = 0; i < numel(t->ty); i++) t->v[i] = rnd(I, t->ty.dt, t->v[i]);
}

static void exec_for(Interp *I, const CirInst *f) {
  long long n = (long long)val(I, f->args[0])->v[0];
  int nc = f->nargs - 1;
  Tile carry[CAKE_MAX_CARRIES];
  for (int i = 0; i < nc; i++) {
    const Tile *init = val(I, f->args[i + 1]);
    carry[i].ty = init->ty;
    carry[i].v = cake_xmalloc(sizeof(double) * (size_t)numel(init->ty));
    memcpy(carry[i].v, init->v, sizeof(double) * (size_t)numel(init->ty));
    round_carry(I, &carry[i]);
  }
  long long lo, hi;
  const int *pairs = NULL;
  if (f->before == 3) { /* ends(): every document's last fragment */
    if (!I->args->frags) {
      fail(I, f, "a loop over ends() needs the fragments of the ranks: it runs on ranks (cake_interp_run_ranks)");
      return;
    }
    lo = 0, hi = I->args->ends_count;
    pairs = I->args->pairs + 2 * I->args->ends_first;
  } else if (f->before) {
    if (!I->args->frags) {
      fail(I, f, "a loop over before(n) or after(n) needs the fragments of the ranks: it runs on ranks "
                 "(cake_interp_run_ranks)");
      return;
    }
    const InterpFrag *fr = &I->args->frags[n];
    lo = 0, hi = f->before == 2 ? fr->after_count : fr->before_count;
    pairs = I->args->pairs + 2 * (f->before == 2 ? fr->after_first : fr->before_first);
  } else if (f->counted) lo = 0, hi = n > 0 ? n : 0; /* i = 0 .. n - 1 */
  else if (f->all_chunks) lo = 0, hi = n;
  else lo = I->doc_first[n], hi = I->doc_first[n + 1];
  const CirBlock *body = f->body;
  for (long long step = 0; step < hi - lo && !I->failed; step++) {
    long long c = f->reverse ? hi - 1 - step : lo + step;
    for (int i = 0; i < body->len; i++) {
      const CirInst *in = body->insts[i];
      if (pairs && in->op == OP_LOOPVAR) def(I, in)->v[0] = (double)pairs[2 * c + in->axis]; /* c: reversed too */
      else if (in->op == OP_CHUNKVAR || in->op == OP_LOOPVAR) def(I, in)->v[0] = (double)c;
      else if (in->op == OP_CARRY) {
        Tile *t = def(I, in);
        memcpy(t->v, carry[in->axis].v, sizeof(double) * (size_t)numel(in->ty));
      }
    }
    exec_block(I, body);
    const CirInst *y = body->insts[body->len - 1];
    CAKE_ASSERT(y->op == OP_YIELD);
    for (int i = 0; i < nc; i++) {
      memcpy(carry[i].v, val(I, y->args[i])->v, sizeof(double) * (size_t)numel(carry[i].ty));
      round_carry(I, &carry[i]);
    }
  }
  /* The final carries, back to back in the FOR's own slot; each FORRES
   * that follows picks its part. */
  I->vals[f->id].ty = f->ty;
  free(I->vals[f->id].v);
  size_t total = 0;
  for (int i = 0; i < nc; i++) total += (size_t)numel(carry[i].ty);
  I->vals[f->id].v = cake_xcalloc(total ? total : 1, sizeof(double));
  size_t at = 0;
  for (int i = 0; i < nc; i++) {
    memcpy(I->vals[f->id].v + at, carry[i].v, sizeof(double) * (size_t)numel(carry[i].ty));
    at += (size_t)numel(carry[i].ty);
    free(carry[i].v);
  }
}

/* decay_mm(m, b, g)[r, :] = sum_{j <= r} m[r, j] b[j, :] exp(g[r, :] - g[j, :]);
 * decay_mm_t(m, a, g)[j, :] = sum_{r >= j} m[r, j] a[r, :] exp(g[r, :] - g[j, :]).
 * Both read only the lower triangle of m, and sum in ascending index order. */
static void exec_decay_mm(Interp *I, const CirInst *in) {
  const Tile *m = val(I, in->args[0]), *x = val(I, in->args[1]), *g = val(I, in->args[2]);
  Tile *t = def(I, in);
  int n = in->ty.shape[0], K = in->ty.shape[1];
  for (int i = 0; i < n; i++)
    for (int c = 0; c < K; c++) {
      double acc = 0;
      if (in->op == OP_DECAY_MM)
        for (int j = 0; j <= i; j++) acc += m->v[i * n + j] * x->v[j * K + c] * exp(g->v[i * K + c] - g->v[j * K + c]);
      else
        for (int r = i; r < n; r++) acc += m->v[r * n + i] * x->v[r * K + c] * exp(g->v[r * K + c] - g->v[i * K + c]);
      t->v[i * K + c] = acc;
    }
}

static void exec_inst(Interp *I, const CirInst *in) {
  const OpInfo *oi = &cake_ops[in->op];
  int R = rows_of(in->ty), C = cols_of(in->ty);
  switch (oi->kind) {
    case OK_LEAF: {
      if (in->op == OP_CHUNKVAR || in->op == OP_LOOPVAR || in->op == OP_CARRY) return; /* set by the loop */
      Tile *t = def(I, in);
      switch (in->op) {
        case OP_CONST: t->v[0] = in->fval; break;
        case OP_DIMVAL: t->v[0] = (double)I->dims[in->dim]; break;
        case OP_PARAMVAL: {
          double v = I->args->params ? I->args->params[in->param->index] : NAN;
          if (isnan(v)) {
            if (!in->param->has_default) { fail(I, in, "parameter '%s' has no value and no default", in->param->name); return; }
            v = in->param->def;
          }
          t->v[0] = rnd(I, in->param->dtype, v);
          break;
        }
        case OP_GRIDVAR: t->v[0] = (double)I->grid[in->axis]; break;
        default: cake_die("unhandled leaf");
      }
      return;
    }
    case OK_IOTA: {
      Tile *t = def(I, in);
      for (int j = 0; j < C; j++) t->v[j] = j;
      return;
    }
    case OK_FRAG: {
      if (!I->args->frags) {
        fail(I, in, "%s() needs the fragments of the ranks: the program runs on ranks (cake_interp_run_ranks)",
             cake_ops[in->op].spelling);
        return;
      }
      const InterpFrag *fr = &I->args->frags[(long long)val(I, in->args[0])->v[0]];
      def(I, in)->v[0] = in->op == OP_CONTINUES ? fr->continues : fr->continued;
      return;
    }
    case OK_VALID: {
      Tile *t = def(I, in);
      long long c = (long long)val(I, in->args[0])->v[0];
      for (int j = 0; j < C; j++) t->v[j] = I->chunks[c].start + j < I->chunks[c].end;
      return;
    }
    case OK_MEM: {
      double *data = I->args->tensors[in->tensor->index];
      if (in->op == OP_LOAD) {
        LoadCtx x = {def(I, in), data};
        walk_window(I, in, load_elem, &x);
      } else if (data) {
        LoadCtx x = {val(I, in->args[0]), data};
        walk_window(I, in, store_elem, &x);
      }
      return;
    }
    case OK_UNARY:
    case OK_LOGIC1: {
      const Tile *a = val(I, in->args[0]);
      Tile *t = def(I, in);
      for (int i = 0; i < numel(in->ty); i++) t->v[i] = unary(in->op, a->v[i]);
      if (in->ty.dt == DT_I32) for (int i = 0; i < numel(in->ty); i++) t->v[i] = wrap_i32((int64_t)t->v[i]); /* -INT32_MIN */
      return;
    }
    case OK_BINARY:
    case OK_COMPARE:
    case OK_LOGIC2: {
      const Tile *a = val(I, in->args[0]), *b = val(I, in->args[1]);
      Tile *t = def(I, in);
      DType dt = in->ty.dt == DT_BOOL ? in->args[0]->ty.dt : in->ty.dt;
      for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) t->v[r * C + c] = binop(in->op, dt, bget(a, r, c), bget(b, r, c));
      return;
    }
    case OK_SELECT: {
      const Tile *q = val(I, in->args[0]), *a = val(I, in->args[1]), *b = val(I, in->args[2]);
      Tile *t = def(I, in);
      for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) t->v[r * C + c] = bget(q, r, c) != 0 ? bget(a, r, c) : bget(b, r, c);
      return;
    }
    case OK_CAST: {
      const Tile *a = val(I, in->args[0]);
      Tile *t = def(I, in);
      for (int i = 0; i < numel(in->ty); i++) t->v[i] = rnd(I, in->ty.dt, a->v[i]);
      return;
    }
    case OK_LAYOUT: {
      const Tile *a = val(I, in->args[0]);
      Tile *t = def(I, in);
      if (in->op == OP_TRANSPOSE) {
        for (int r = 0; r < R; r++)
          for (int c = 0; c < C; c++) t->v[r * C + c] = a->v[c * R + r];
      } else if (in->op == OP_EXPAND) {
        memcpy(t->v, a->v, sizeof(double) * (size_t)numel(in->ty)); /* same elements, new shape */
      } else { /* PICK */
        int ar = rows_of(a->ty), ac = cols_of(a->ty);
        if (a->ty.rank == 1) t->v[0] = a->v[in->ival];
        else if (in->axis == 0) for (int c = 0; c < ac; c++) t->v[c] = a->v[in->ival * ac + c];
        else for (int r = 0; r < ar; r++) t->v[r] = a->v[r * ac + in->ival];
      }
      return;
    }
    case OK_MASK: {
      const Tile *a = val(I, in->args[0]);
      Tile *t = def(I, in);
      for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
          int keep = in->op == OP_TRIL ? c <= r + in->ival : c >= r + in->ival;
          t->v[r * C + c] = keep ? a->v[r * C + c] : 0;
        }
      return;
    }
    case OK_DECAY_TRI: { /* g's elements in order, [n] or [n, 1]; the upper triangle's exponent is never taken */
      const Tile *g = val(I, in->args[0]);
      Tile *t = def(I, in);
      for (int r = 0; r < R; r++)
        for (int j = 0; j < C; j++) t->v[r * C + j] = j <= r ? exp(g->v[r] - g->v[j]) : 0;
      return;
    }
    case OK_REDUCE: {
      const Tile *a = val(I, in->args[0]);
      Tile *t = def(I, in);
      int ar = rows_of(a->ty), ac = cols_of(a->ty);
      int n_out = numel(in->ty);
      for (int o = 0; o < n_out; o++) t->v[o] = in->op == OP_SUM ? 0 : -INFINITY;
      for (int r = 0; r < ar; r++)
        for (int c = 0; c < ac; c++) {
          int o = a->ty.rank == 1 ? 0 : in->axis == 0 ? c : r;
          double x = a->v[r * ac + c];
          if (in->op == OP_SUM) t->v[o] += x;
          else t->v[o] = max_ieee(t->v[o], x);
        }
      return;
    }
    case OK_SCAN: {
      const Tile *a = val(I, in->args[0]);
      Tile *t = def(I, in);
      int along_rows = in->ty.rank == 2 && in->axis == 0; /* scan down each column */
      int n_lines = along_rows ? C : R, len = along_rows ? R : C;
      for (int l = 0; l < n_lines; l++) {
        double acc = 0;
        for (int s = 0; s < len; s++) {
          int i = in->op == OP_CUMSUM ? s : len - 1 - s;
          int idx = along_rows ? i * C + l : l * C + i;
          acc += a->v[idx];
          t->v[idx] = acc;
        }
      }
      return;
    }
    case OK_DOT: {
      const Tile *a = val(I, in->args[0]), *b = val(I, in->args[1]);
      Tile *t = def(I, in);
      int K = a->ty.shape[1];
      for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
          double acc = 0;
          for (int k = 0; k < K; k++) acc += a->v[r * K + k] * b->v[k * C + c];
          t->v[r * C + c] = acc;
        }
      return;
    }
    case OK_SOLVE: { /* (I + L)^-1, L = strictly lower part of a, by forward substitution */
      const Tile *a = val(I, in->args[0]);
      Tile *t = def(I, in);
      int n = R;
      for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
          if (c > r) { t->v[r * n + c] = 0; continue; }
          double acc = r == c ? 1 : 0;
          for (int j = c; j < r; j++) acc -= a->v[r * n + j] * t->v[j * n + c];
          t->v[r * n + c] = acc;
        }
      return;
    }
    case OK_DECAY: {
      const Tile *a = val(I, in->args[0]), *b = val(I, in->args[1]), *g = val(I, in->args[2]);
      Tile *t = def(I, in);
      int K = a->ty.shape[1];
      for (int r = 0; r < R; r++)
        for (int j = 0; j < C; j++) {
          double acc = 0;
          if (j <= r)
            for (int c = 0; c < K; c++) acc += a->v[r * K + c] * b->v[j * K + c] * exp(g->v[r * K + c] - g->v[j * K + c]);
          t->v[r * C + j] = acc;
        }
      return;
    }
    case OK_DECAY_MM: exec_decay_mm(I, in); return;
    case OK_CONTROL:
      if (in->op == OP_FOR) exec_for(I, in);
      else if (in->op == OP_FORRES) {
        const CirInst *f = in->parent;
        size_t at = 0;
        for (int i = 1; i < in->axis + 1; i++) at += (size_t)numel(f->args[i]->ty);
        Tile *t = def(I, in);
        memcpy(t->v, val(I, f)->v + at, sizeof(double) * (size_t)numel(in->ty));
      }
      return; /* YIELD is read by exec_for */
  }
}

static void exec_block(Interp *I, const CirBlock *b) {
  for (int i = 0; i < b->len && !I->failed; i++) exec_inst(I, b->insts[i]);
}

static int max_id(const CirBlock *b) {
  int m = -1;
  for (int i = 0; i < b->len; i++) {
    if (b->insts[i]->id > m) m = b->insts[i]->id;
    if (b->insts[i]->body) {
      int x = max_id(b->insts[i]->body);
      if (x > m) m = x;
    }
  }
  return m;
}

static void run_kernel(Interp *I, const CirKernel *k) {
  I->k = k;
  I->nvals = max_id(&k->body) + 1;
  I->vals = cake_xcalloc((size_t)I->nvals, sizeof(Tile));
  long long ext[CIR_MAX_AXES] = {1, 1, 1};
  for (int i = 0; i < k->naxes; i++) {
    const CirAxis *a = &k->axes[i];
    ext[i] = a->kind == GA_CHUNKS ? I->nchunks : a->kind == GA_DOCS ? I->ndocs : extent(I, a->extent);
  }
  for (long long x = 0; x < ext[0] && !I->failed; x++)
    for (long long y = 0; y < ext[1] && !I->failed; y++)
      for (long long z = 0; z < ext[2] && !I->failed; z++) {
        I->grid[0] = x;
        I->grid[1] = y;
        I->grid[2] = z;
        if (k->rounds) { /* in round k only the fragments k-th in their document (from its end: reverse) */
          const InterpFrag *fr = I->args->frags ? &I->args->frags[I->grid[k->rounds_axis]] : NULL;
          if (!fr || I->round < 0) {
            fail(I, NULL, "kernel '%s' runs in rounds: it needs the fragments of the ranks and a round", k->name);
            break;
          }
          if ((k->rounds == 2 ? fr->after_count : fr->before_count) != I->round) continue;
        }
        exec_block(I, &k->body);
      }
  for (int i = 0; i < I->nvals; i++) free(I->vals[i].v);
  free(I->vals);
  I->vals = NULL;
}

typedef struct ReqDims {
  const CirProgram *p;
  const long long *dims;
  const double *params; /* per param (NaN: the default), or NULL */
  int exact;
} ReqDims;

static int req_dim(void *ctx, const char *name, size_t len, cake_require_value *value) {
  const ReqDims *r = ctx;
  *value = (cake_require_value){0};
  for (int i = 0; i < r->p->ndims; i++)
    if (strlen(r->p->dims[i].name) == len && !memcmp(r->p->dims[i].name, name, len)) {
      value->i = r->dims[i];
      return 1;
    }
  for (int i = 0; i < r->p->nparams; i++) { /* a run's value (NaN: none), else the default */
    const CirParam *q = r->p->params[i];
    if (strlen(q->name) != len || memcmp(q->name, name, len)) continue;
    double v = r->params && !isnan(r->params[q->index]) ? r->params[q->index] : q->def;
    if (q->dtype == DT_I32) value->i = (int64_t)v;
    else value->is_float = 1, value->f = r->exact ? v : (double)(float)v;
    return 1;
  }
  return 0;
}

/* The program's requirements under the run's dims, as the runtime checks
 * them when it finalizes a plan. 0 when they hold. */
static int check_requires(const CirProgram *p, const long long *dims, const InterpArgs *args, char *err,
                          size_t errlen) {
  ReqDims rd = {p, dims, args->params, args->exact};
  for (int i = 0; i < p->nrequires; i++) {
    char msg[512];
    int r = cake_require_eval(p->requires[i].expr, req_dim, &rd, 1, msg, sizeof msg);
    if (r == CAKE_REQUIRE_TRUE) continue;
    int params = 0, dims = 0;
    for (int j = 0; j < p->nparams; j++) params |= cake_require_uses(p->requires[i].expr, p->params[j]->name);
    for (int j = 0; j < p->ndims; j++) dims |= cake_require_uses(p->requires[i].expr, p->dims[j].name);
    snprintf(err, errlen, "%s break '%s' (%s): %s", cake_require_subject(dims, params), p->requires[i].text,
             p->requires[i].where, msg);
    return -1;
  }
  return 0;
}

/* Fills temp `t` with a value no stage should read: NaN, or INT32_MIN for i32. */
static void poison(Interp *I, int t) {
  const CirTensor *ten = I->p->tensors[t];
  double *x = I->args->tensors[t];
  if (!x) return;
  double v = ten->dtype == DT_I32 ? (double)INT32_MIN : NAN;
  long long n = cake_interp_numel(I->p, ten, I->dims);
  for (long long i = 0; i < n; i++) x[i] = v;
}

/* One rank's run of an entry: set up by run_begin, a stage at a time by
 * run_stage, released by run_end. */
typedef struct Run {
  Interp I;
  const CirEntry *en;
  CirLiveness lv;
  int ei;
} Run;

static const CirEntry *find_entry(const CirProgram *p, const char *entry) {
  for (int i = 0; i < p->nentries; i++)
    if (!strcmp(p->entries[i]->name, entry)) return p->entries[i];
  return NULL;
}

/* -1 (message in err) when the arguments are wrong; run_end releases either way. */
static int run_begin(Run *R, const CirProgram *p, const CirEntry *en, const InterpArgs *args, char *err,
                     size_t errlen) {
  Interp *I = &R->I;
  I->p = p;
  I->args = args;
  I->err = err;
  I->errlen = errlen;
  I->round = -1;
  R->en = en;
  I->dims = cake_xcalloc((size_t)p->ndims + 1, sizeof(long long));
  for (int i = 0; i < p->ndims; i++) /* the docs and chunks dims are computed below */
    if (p->dims[i].role != DIM_DOCS && p->dims[i].role != DIM_CHUNKS) I->dims[i] = args->dims[i];
  /* the chunk table */
  long long T = p->tokens_dim >= 0 ? I->dims[p->tokens_dim] : 0;
  I->ndocs = args->cu_seqlens ? args->ndocs : 1;
  if (p->docs_dim >= 0) I->dims[p->docs_dim] = I->ndocs;
  I->doc_first = cake_xcalloc((size_t)I->ndocs + 1, sizeof(long long));
  long long cap = p->chunk ? T / p->chunk + I->ndocs + 1 : 1;
  I->chunks = cake_xcalloc((size_t)cap, sizeof(Chunk));
  cir_liveness(p, &R->lv);
  for (int i = 0; i < p->nentries; i++)
    if (p->entries[i] == en) R->ei = i;
  for (long long d = 0; d < I->ndocs && p->chunk; d++) {
    long long s = args->cu_seqlens ? args->cu_seqlens[d] : 0;
    long long e = args->cu_seqlens ? args->cu_seqlens[d + 1] : T;
    if (s < 0 || e < s || e > T) {
      snprintf(err, errlen, "cu_seqlens is not a nondecreasing sequence within [0, %lld] at doc %lld", T, d);
      return I->failed = -1;
    }
    I->doc_first[d] = I->nchunks;
    for (long long t = s; t < e; t += p->chunk)
      I->chunks[I->nchunks++] = (Chunk){t, t + p->chunk < e ? t + p->chunk : e, (int)d, s, e};
  }
  I->doc_first[I->ndocs] = I->nchunks;
  if (p->chunks_dim >= 0) I->dims[p->chunks_dim] = I->nchunks;
  if (check_requires(p, I->dims, args, err, errlen)) return I->failed = -1;
  for (int i = 0; i < p->ntensors; i++)
    if (!args->tensors[i] && !p->tensors[i]->optional) {
      snprintf(err, errlen, "tensor '%s' is required", p->tensors[i]->name);
      return I->failed = -1;
    }
  /* A temp holds a value only within its live ranges: the runtime may give
   * its bytes to another temp outside them. So it is poisoned at the start of
   * the entry (unless pinned: it then keeps its value across entries), before
   * the first stage of its range and after the last one. */
  for (int t = 0; t < p->ntensors && !args->keep_temps; t++)
    if (p->tensors[t]->role == ROLE_TEMP && !R->lv.pinned[t]) poison(I, t);
  return 0;
}

/* Around stage s: poison the temps whose ranges start (before) or end (after) there. */
static void poison_at(Run *R, int s, int start) {
  const CirProgram *p = R->I.p;
  if (R->I.args->keep_temps || R->I.failed || (start && s == 0)) return;
  for (int t = 0; t < p->ntensors; t++) {
    if (p->tensors[t]->role != ROLE_TEMP || R->lv.pinned[t]) continue;
    CirLive l = cir_live_of(&R->lv, t, R->ei);
    if ((start ? l.first : l.last) == s) poison(&R->I, t);
  }
}

static void run_stage(Run *R, int s) {
  poison_at(R, s, 1); /* what a stage before its range stored (a range that starts too late) is lost */
  run_kernel(&R->I, R->en->stages[s]);
  poison_at(R, s, 0);
}

static void run_end(Run *R) {
  cir_liveness_free(&R->lv);
  free(R->I.dims);
  free(R->I.doc_first);
  free(R->I.chunks);
}

int cake_interp_run(const CirProgram *p, const char *entry, const InterpArgs *args, char *err, size_t errlen) {
  const CirEntry *en = find_entry(p, entry);
  if (!en) {
    snprintf(err, errlen, "program '%s' has no entry '%s'", p->name, entry);
    return -1;
  }
  for (int s = 0; s < en->nstages; s++)
    if (en->stages[s]->exchange) {
      snprintf(err, errlen, "entry '%s' exchanges data with other ranks (stage '%s'): it runs on ranks "
               "(cake_interp_run_ranks)", en->name, en->stages[s]->name);
      return -1;
    }
  Run R = {0};
  run_begin(&R, p, en, args, err, errlen);
  for (int s = 0; s < en->nstages && !R.I.failed; s++) run_stage(&R, s);
  run_end(&R);
  return R.I.failed ? -1 : 0;
}

/* send_next (send_prev): rank r's src into rank r + 1's (r - 1's) dst; the
 * first (last) rank's dst is 0. */
static void send_step(Run *runs, int n, const CirKernel *x) {
  const CirProgram *p = runs[0].I.p;
  long long m = cake_interp_numel(p, x->xsrc, runs[0].I.dims);
  int step = x->exchange == XCHG_SEND_NEXT ? 1 : -1;
  for (int q = 0; q < n; q++) {
    double *dst = runs[q].I.args->tensors[x->xdst->index];
    int from = q - step;
    if (from < 0 || from >= n) memset(dst, 0, sizeof(double) * (size_t)m);
    else memcpy(dst, runs[from].I.args->tensors[x->xsrc->index], sizeof(double) * (size_t)m);
  }
}

/* all_gather: every rank's src into every rank's dst, rank r's at [r, ...]. */
static void all_gather(Run *runs, int n, const CirKernel *x) {
  const CirProgram *p = runs[0].I.p;
  long long m = cake_interp_numel(p, x->xsrc, runs[0].I.dims);
  for (int q = 0; q < n; q++) {
    double *dst = runs[q].I.args->tensors[x->xdst->index];
    for (int r = 0; r < n; r++) {
      const double *src = runs[r].I.args->tensors[x->xsrc->index];
      memcpy(dst + (size_t)r * (size_t)m, src, sizeof(double) * (size_t)m);
    }
  }
}

/* Tokens of rank r's fragment f: [*start, *start + return). */
static long long frag_tokens(const Run *run, long long f, long long *start) {
  const InterpArgs *a = run->I.args;
  long long T = run->I.dims[run->I.p->tokens_dim];
  *start = a->cu_seqlens ? a->cu_seqlens[f] : 0;
  return (a->cu_seqlens ? a->cu_seqlens[f + 1] : T) - *start;
}

/* halo: dst[f, i] of every rank's fragment f = the token B - i before the
 * fragment (i < B) or i - B after its end, in its document, from the rank
 * that holds it; 0 beyond the document. */
static void halo(Run *runs, int n, const CirKernel *x) {
  const CirProgram *p = runs[0].I.p;
  const int B = x->xbefore, A = x->xafter;
  long long m = 1; /* elements per token */
  for (int i = 1; i < x->xsrc->rank; i++) m *= extent(&runs[0].I, x->xsrc->shape[i]);
  for (int q = 0; q < n; q++) {
    const InterpArgs *a = runs[q].I.args;
    double *dst = a->tensors[x->xdst->index];
    long long F = cake_interp_numel(p, x->xdst, runs[q].I.dims) / ((B + A) * m);
    memset(dst, 0, sizeof(double) * (size_t)(F * (B + A) * m));
    for (long long f = 0; f < runs[q].I.ndocs && f < F && a->frags; f++) {
      const InterpFrag *fr = &a->frags[f];
      for (int i = 0; i < B + A; i++) {
        long long dist = i < B ? B - i : i - B, k, start = 0, len = 0; /* tokens before the start / after the end */
        int r = -1;
        long long g = -1;
        if (i < B) {
          for (k = fr->before_count - 1; k >= 0; k--) { /* the fragments before, nearest first */
            r = a->pairs[2 * (fr->before_first + k)];
            g = a->pairs[2 * (fr->before_first + k) + 1];
            len = frag_tokens(&runs[r], g, &start);
            if (dist <= len) break;
            dist -= len;
          }
          if (k < 0) continue;
          start += len - dist;
        } else {
          for (k = 0; k < fr->after_count; k++) {
            r = a->pairs[2 * (fr->after_first + k)];
            g = a->pairs[2 * (fr->after_first + k) + 1];
            len = frag_tokens(&runs[r], g, &start);
            if (dist < len) break;
            dist -= len;
          }
          if (k == fr->after_count) continue;
          start += dist;
        }
        const double *src = runs[r].I.args->tensors[x->xsrc->index];
        memcpy(dst + (size_t)((f * (B + A) + i) * m), src + (size_t)(start * m), sizeof(double) * (size_t)m);
      }
    }
  }
}

int cake_interp_run_ranks(const CirProgram *p, const char *entry, int nranks, const InterpArgs *const *args, char *err,
                          size_t errlen) {
  const CirEntry *en = find_entry(p, entry);
  if (!en) {
    snprintf(err, errlen, "program '%s' has no entry '%s'", p->name, entry);
    return -1;
  }
  if (nranks < 1 || p->ranks_dim < 0) {
    snprintf(err, errlen, p->ranks_dim < 0 ? "program '%s' is not context-parallel (it has no `ranks` declaration)"
                                           : "program '%s' needs at least one rank", p->name);
    return -1;
  }
  for (int r = 0; r < nranks; r++)
    for (int i = 0; i < p->ndims; i++)
      if ((i == p->ranks_dim && args[r]->dims[i] != nranks) ||
          (p->dims[i].role != DIM_TOKENS && p->dims[i].role != DIM_DOCS && p->dims[i].role != DIM_CHUNKS &&
           args[r]->dims[i] != args[0]->dims[i])) {
        snprintf(err, errlen, "rank %d: dim %s = %lld, but %s", r, p->dims[i].name, args[r]->dims[i],
                 i == p->ranks_dim ? "the program runs on a different number of ranks"
                                   : "rank 0 has another value (only the tokens, docs and chunks differ)");
        return -1;
      }
  Run *runs = cake_xcalloc((size_t)nranks, sizeof(Run));
  char msg[1024];
  int failed = -1;
  for (int r = 0; r < nranks && failed < 0; r++)
    if (run_begin(&runs[r], p, en, args[r], msg, sizeof msg)) failed = r;
  /* rounds: as many as the longest document has fragments (the same on
   * every rank; none without fragments: the empty document of a rank that
   * holds nothing is none) */
  long long nrounds = 0;
  for (int r = 0; r < nranks; r++)
    for (long long f = 0; args[r]->frags && f < runs[r].I.ndocs; f++)
      if (runs[r].I.doc_first[f + 1] > runs[r].I.doc_first[f] && args[r]->frags[f].before_count + 1 > nrounds)
        nrounds = args[r]->frags[f].before_count + 1;
  for (int s = 0; s < en->nstages && failed < 0;) {
    int g1 = s; /* the stages [s, g1] run together: one stage, or a rounds group */
    while (en->group[s] && g1 + 1 < en->nstages && en->group[g1 + 1] == en->group[s]) g1++;
    long long nr = en->group[s] ? nrounds : 1;
    for (long long round = 0; round < nr && failed < 0; round++)
      for (int j = s; j <= g1 && failed < 0; j++) {
        const CirKernel *k = en->stages[j];
        /* a group's temps live through all its rounds: poisoned before the first, after the last */
        int first = round == 0, last = round == nr - 1;
        for (int r = 0; r < nranks; r++) runs[r].I.round = en->group[s] ? round : -1;
        if (k->exchange) {
          for (int r = 0; r < nranks && first; r++) poison_at(&runs[r], j, 1);
          if (k->exchange == XCHG_HALO) halo(runs, nranks, k);
          else if (k->exchange == XCHG_SEND_NEXT || k->exchange == XCHG_SEND_PREV) send_step(runs, nranks, k);
          else all_gather(runs, nranks, k);
          for (int r = 0; r < nranks && last; r++) poison_at(&runs[r], j, 0);
          continue;
        }
        for (int r = 0; r < nranks && failed < 0; r++) {
          if (first) poison_at(&runs[r], j, 1);
          run_kernel(&runs[r].I, k);
          if (last) poison_at(&runs[r], j, 0);
          if (runs[r].I.failed) failed = r;
        }
      }
    s = g1 + 1;
  }
  if (failed >= 0) snprintf(err, errlen, "rank %d: %s", failed, msg);
  for (int r = 0; r < nranks; r++) run_end(&runs[r]);
  free(runs);
  return failed >= 0 ? -1 : 0;
}
