/* sema.c - semantic analysis: names, dtypes, shapes, roles; AST -> CIR.
 *
 * Every user error is a diagnostic at the offending source range. After an
 * error the offending expression becomes a "poison" value (dtype DT_NONE)
 * that later checks stay silent about, so one mistake gives one message: a
 * kernel statement reports its first error only, and the names a failed
 * statement or declaration would have defined (an `if` whose condition is
 * wrong, a bad grid axis, a constant that does not evaluate) become poison
 * too, so later uses of them are silent. */
#include <locale.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cake_require.h"
#include "cir.h"
#include "interp.h" /* cake_round_dtype */
#include "live.h"      /* cir_access */
#include "parser.h" /* token codes of the binary operators */

/* A compile-time constant: an integer (int64, every operation checked) or a
 * double. */
typedef struct CVal {
  int is_int;
  int64_t i; /* is_int */
  double f;  /* !is_int */
} CVal;

static CVal cint(int64_t i) { return (CVal){1, i, 0}; }
static CVal cfloat(double f) { return (CVal){0, 0, f}; }
static double cnum(CVal v) { return v.is_int ? (double)v.i : v.f; }

/* SYM_POISON: a name whose declaration failed (or sat in an `if` whose
 * condition did not evaluate); uses of it report nothing. */
typedef enum { SYM_CONST, SYM_DIM, SYM_TENSOR, SYM_PARAM, SYM_KERNEL, SYM_ENTRY, SYM_OPTION, SYM_POISON } SymKind;

typedef struct Sym {
  const char *name;
  SymKind kind;
  Loc loc;
  CVal value;   /* SYM_CONST */
  void *ptr;    /* CirTensor*, CirParam*, CirKernel*, CirEntry*, CirOption* */
  int index;    /* SYM_DIM */
} Sym;

/* A name bound inside a kernel. */
typedef struct Binding {
  const char *name;
  CirInst *v;
  Loc loc;
  int depth;    /* 0 = kernel body, 1 = scan body */
  int is_grid;  /* a grid index (cannot be assigned) */
  int is_carry; /* a carried value of the enclosing scan */
  struct Binding *next;
} Binding;

typedef struct Sema {
  Arena *a;
  Diag *d;
  CirProgram *p;
  PtrVec syms; /* Sym* */
  /* kernel state */
  CirKernel *k;
  CirBlock *cur;
  Binding *scope;
  int depth;
  CirInst *scan; /* the FOR being built, or NULL */
  int in_stmt;     /* analysing a kernel statement */
  int stmt_failed; /* ... which has reported an error */
  int muted;       /* the last error was not reported (nor are its notes) */
  int lost_sequence; /* a `sequence` sat in an `if` whose condition did not evaluate */
  const Program *ast;
  int in_prefer;     /* checking a `prefer` condition: device facts (SMS) are names too */
} Sema;

/* Errors and their notes. In a kernel statement only the first error is
 * reported: the others would mostly follow from it. */
static void sema_error(Sema *s, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void sema_error(Sema *s, Loc loc, const char *fmt, ...) {
  s->muted = s->in_stmt && s->stmt_failed;
  if (s->muted) return;
  s->stmt_failed = 1;
  va_list ap;
  va_start(ap, fmt);
  diag_verror(s->d, loc, "error", fmt, ap);
  va_end(ap);
}

static void sema_note(Sema *s, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void sema_note(Sema *s, Loc loc, const char *fmt, ...) {
  if (s->muted) return;
  va_list ap;
  va_start(ap, fmt);
  diag_verror(s->d, loc, "note", fmt, ap);
  va_end(ap);
}

#define ERR(loc, ...) sema_error(s, (loc), __VA_ARGS__)
#define NOTE(loc, ...) sema_note(s, (loc), __VA_ARGS__)

/* ------------------------------------------------------------------ */
/* symbols and constants                                              */

static Sym *find_sym(Sema *s, const char *name) {
  for (int i = 0; i < s->syms.len; i++) {
    Sym *y = s->syms.items[i];
    if (strcmp(y->name, name) == 0) return y;
  }
  return NULL;
}

static const char *sym_kind_name(SymKind k) {
  switch (k) {
    case SYM_CONST: return "constant";
    case SYM_DIM: return "dimension";
    case SYM_TENSOR: return "tensor";
    case SYM_PARAM: return "parameter";
    case SYM_KERNEL: return "kernel";
    case SYM_ENTRY: return "entry";
    case SYM_OPTION: return "option";
    case SYM_POISON: return "name";
  }
  return "name";
}

static int is_poison_sym(const Sym *y) { return y && y->kind == SYM_POISON; }

static Sym *add_sym(Sema *s, const char *name, SymKind kind, Loc loc) {
  Sym *old = find_sym(s, name);
  if (is_poison_sym(old)) return NULL; /* it may or may not be defined: say nothing */
  if (old) {
    ERR(loc, "redefinition of '%s'", name);
    NOTE(old->loc, "'%s' was first defined here as a %s", name, sym_kind_name(old->kind));
    return NULL;
  }
  Sym *y = arena_alloc(s->a, sizeof(Sym));
  y->name = name;
  y->kind = kind;
  y->loc = loc;
  ptrvec_push(s->a, &s->syms, y);
  return y;
}

/* Integer arithmetic of constants: +, -, *, /, % on int64, every overflow
 * (and INT64_MIN / -1, INT64_MIN % -1, division by zero) reported at the
 * operator. Returns 0 after an error. */
static int int_binop(Sema *s, const Expr *e, int64_t x, int64_t y, int64_t *out) {
  int over = 0;
  switch (e->op) {
    case '+': over = __builtin_add_overflow(x, y, out); break;
    case '-': over = __builtin_sub_overflow(x, y, out); break;
    case '*': over = __builtin_mul_overflow(x, y, out); break;
    case '/':
    case '%':
      if (y == 0) {
        ERR(e->loc, "%s by zero in a constant expression", e->op == '/' ? "division" : "remainder");
        return 0;
      }
      over = x == INT64_MIN && y == -1;
      if (!over) *out = e->op == '/' ? x / y : x % y;
      break;
    default: return 0;
  }
  if (over) {
    ERR(e->loc, "integer overflow in a constant expression: %lld %s %lld does not fit in 64 bits", (long long)x,
        ast_op_spelling(e->op), (long long)y);
    return 0;
  }
  return 1;
}

static Binding *lookup(Sema *s, const char *name);
static int is_poison(const CirInst *v);

/* What a name bound in a kernel is, for messages. */
static const char *binding_kind(const Binding *b) {
  if (!b->is_grid) return "a value of the kernel";
  return b->v && b->v->op == OP_CHUNKVAR ? "a scan's chunk index" : "a grid index";
}

/* Evaluate a compile-time constant expression. Returns 0 on error. */
static int const_eval(Sema *s, const Expr *e, CVal *v) {
  CVal x, y;
  switch (e->kind) {
    case E_INT: *v = cint(e->ival); return 1;
    case E_FLOAT: *v = cfloat(e->fval); return 1;
    case E_NAME: {
      Sym *y0 = find_sym(s, e->name);
      Binding *b = y0 ? NULL : lookup(s, e->name);
      if (b) {
        if (!is_poison(b->v))
          ERR(e->loc, "'%s' is %s, known only when the kernel runs, not a compile-time constant", e->name,
              binding_kind(b));
        return 0;
      }
      if (!y0) { ERR(e->loc, "unknown name '%s'", e->name); return 0; }
      if (is_poison_sym(y0)) return 0;
      if (y0->kind != SYM_CONST) {
        ERR(e->loc, "'%s' is a %s, not a compile-time constant", e->name, sym_kind_name(y0->kind));
        return 0;
      }
      *v = y0->value;
      return 1;
    }
    case E_UNARY:
      if (e->op != '-') break;
      if (!const_eval(s, e->a, &x)) return 0;
      if (x.is_int && x.i == INT64_MIN) {
        ERR(e->loc, "integer overflow in a constant expression: -(%lld) does not fit in 64 bits", (long long)x.i);
        return 0;
      }
      *v = x.is_int ? cint(-x.i) : cfloat(-x.f);
      return 1;
    case E_BINARY:
      if (e->op != '+' && e->op != '-' && e->op != '*' && e->op != '/' && e->op != '%') break;
      if (!const_eval(s, e->a, &x) || !const_eval(s, e->b, &y)) return 0;
      if (x.is_int && y.is_int) {
        v->is_int = 1;
        v->f = 0;
        return int_binop(s, e, x.i, y.i, &v->i);
      }
      double a = cnum(x), b = cnum(y);
      switch (e->op) {
        case '+': *v = cfloat(a + b); return 1;
        case '-': *v = cfloat(a - b); return 1;
        case '*': *v = cfloat(a * b); return 1;
        case '/':
          if (b == 0) { ERR(e->loc, "division by zero in a constant expression"); return 0; }
          *v = cfloat(a / b);
          return 1;
        default: ERR(e->loc, "'%%' needs integer constants"); return 0;
      }
    case E_CALL:
      if (e->args.len == 1 && (!strcmp(e->name, "sqrt") || !strcmp(e->name, "rsqrt") ||
                               !strcmp(e->name, "exp") || !strcmp(e->name, "log"))) {
        if (!const_eval(s, e->args.items[0], &x)) return 0;
        double a = cnum(x);
        if (!strcmp(e->name, "sqrt")) *v = cfloat(sqrt(a));
        else if (!strcmp(e->name, "rsqrt")) *v = cfloat(1.0 / sqrt(a));
        else if (!strcmp(e->name, "exp")) *v = cfloat(exp(a));
        else *v = cfloat(log(a));
        return 1;
      }
      break;
    default: break;
  }
  ERR(e->loc, "expected a compile-time constant expression");
  return 0;
}

static int const_int(Sema *s, const Expr *e, long long *out, const char *what) {
  CVal v;
  if (!const_eval(s, e, &v)) return 0;
  if (!v.is_int) {
    ERR(e->loc, "%s must be an integer constant", what);
    return 0;
  }
  *out = v.i;
  return 1;
}

/* An extent in a shape or grid: a symbolic dim or a positive constant. */
static int extent_of(Sema *s, const Expr *e, CirExtent *out) {
  if (e->kind == E_NAME && !strcmp(e->name, "chunks")) {
    if (s->p->chunks_dim < 0) {
      if (!s->lost_sequence) ERR(e->loc, "`chunks` as an extent needs a `sequence` declared before it");
      return 0;
    }
    out->sym = s->p->chunks_dim;
    out->value = 0;
    return 1;
  }
  if (e->kind == E_NAME) {
    Sym *y = find_sym(s, e->name);
    if (y && y->kind == SYM_DIM) {
      out->sym = y->index;
      out->value = 0;
      return 1;
    }
  }
  long long v;
  if (!const_int(s, e, &v, "an extent")) return 0;
  if (v <= 0 || v > CAKE_MAX_EXTENT) {
    ERR(e->loc, "extent must be in [1, 2^31 - 1], got %lld", v);
    return 0;
  }
  out->sym = -1;
  out->value = v;
  return 1;
}

static int extent_eq(CirExtent a, CirExtent b) {
  return a.sym == b.sym && (a.sym >= 0 || a.value == b.value);
}

/* ------------------------------------------------------------------ */
/* instructions and types                                             */

static CirType ty0(DType dt) { return (CirType){dt, 0, {0, 0}}; }
static CirType ty1(DType dt, int n) { return (CirType){dt, 1, {n, 0}}; }
static CirType ty2(DType dt, int m, int n) { return (CirType){dt, 2, {m, n}}; }

static int is_float(DType t) { return t == DT_BF16 || t == DT_F16 || t == DT_F32; }
static int is_poison(const CirInst *v) { return !v || v->ty.dt == DT_NONE; }

static CirInst *poison(Sema *s, Loc loc) {
  CirInst *in = cir_inst_new(s->a, s->p, OP_CONST, ty0(DT_NONE), loc, 0);
  return in;
}

/* A tile has at most CAKE_MAX_TILE_ELEMS elements. 0 after reporting. */
static int tile_fits(Sema *s, Loc loc, CirType ty) {
  long long n = 1;
  for (int i = 0; i < ty.rank; i++) n *= ty.shape[i];
  if (n <= CAKE_MAX_TILE_ELEMS) return 1;
  char t[64];
  cir_type_str(t, sizeof t, ty);
  ERR(loc, "a tile of %lld elements (%s) is too large; a tile has at most %d elements", n, t, CAKE_MAX_TILE_ELEMS);
  return 0;
}

/* A new instruction with its operands, appended to the current block; a
 * poison value instead when its tile is too large or it ends a chain of
 * more than CAKE_MAX_EXPR_DEPTH operations (later passes recurse on such
 * chains). */
static CirInst *emit(Sema *s, CirOp op, CirType ty, Loc loc, int nargs, ...) {
  CirInst *in = cir_inst_new(s->a, s->p, op, ty, loc, nargs);
  va_list ap;
  va_start(ap, nargs);
  for (int i = 0; i < nargs; i++) {
    in->args[i] = va_arg(ap, CirInst *);
    if (in->args[i]->depth >= in->depth) in->depth = in->args[i]->depth + 1;
  }
  va_end(ap);
  if (!tile_fits(s, loc, ty)) return poison(s, loc);
  if (in->depth > CAKE_MAX_EXPR_DEPTH) {
    ERR(loc, "expression nested too deeply: this value ends a chain of more than %d operations; "
             "split the computation (a scan, a stored temp)", CAKE_MAX_EXPR_DEPTH);
    return poison(s, loc);
  }
  cir_block_push(s->a, s->cur, in);
  return in;
}

static void shape_str(char *buf, size_t n, CirType t) { cir_type_str(buf, n, t); }

/* Broadcast two shapes; returns 0 (after reporting) when they do not fit. */
static int broadcast(Sema *s, Loc loc, const char *what, CirType a, CirType b, CirType *out) {
  if (a.rank == 0) { *out = b; return 1; }
  if (b.rank == 0) { *out = a; return 1; }
  if (a.rank != b.rank) {
    char x[64], y[64];
    shape_str(x, sizeof x, a);
    shape_str(y, sizeof y, b);
    ERR(loc, "shape mismatch in %s: %s and %s have different ranks; "
             "use v[:, None] for a column or v[None, :] for a row", what, x, y);
    return 0;
  }
  *out = a;
  for (int i = 0; i < a.rank; i++) {
    if (a.shape[i] == b.shape[i]) continue;
    if (a.shape[i] == 1) { out->shape[i] = b.shape[i]; continue; }
    if (b.shape[i] == 1) continue;
    char x[64], y[64];
    shape_str(x, sizeof x, a);
    shape_str(y, sizeof y, b);
    ERR(loc, "shape mismatch in %s: %s and %s (axis %d: %d vs %d)", what, x, y, i, a.shape[i], b.shape[i]);
    return 0;
  }
  return 1;
}

static int is_weak_int(const CirInst *v) { return v->op == OP_CONST && v->is_int; }

/* The dtype two operands compute in, or DT_NONE after an error. */
static DType arith_dtype(Sema *s, Loc loc, const char *what, CirInst *a, CirInst *b) {
  DType x = a->ty.dt, y = b->ty.dt;
  if (x == DT_BOOL || y == DT_BOOL) {
    ERR(loc, "%s needs numbers, got %s and %s", what, dtype_name(x), dtype_name(y));
    return DT_NONE;
  }
  if (is_float(x) && is_float(y)) return DT_F32;
  if (x == DT_I32 && y == DT_I32) return DT_I32;
  if ((is_float(x) && is_weak_int(b)) || (is_float(y) && is_weak_int(a))) return DT_F32;
  ERR(loc, "dtype mismatch in %s: %s and %s; convert one with `as`", what, dtype_name(x), dtype_name(y));
  return DT_NONE;
}

/* ------------------------------------------------------------------ */
/* compile-time conditions (static if)                                */

static CirOption *option_named(Sema *s, const Expr *e) {
  if (e->kind != E_NAME) return NULL;
  Sym *y = find_sym(s, e->name);
  return y && y->kind == SYM_OPTION ? y->ptr : NULL;
}

static int option_has(const CirOption *o, const char *v) {
  for (int i = 0; i < o->nvalues; i++)
    if (!strcmp(o->values[i], v)) return 1;
  return 0;
}

static void option_values_str(const CirOption *o, char *buf, size_t n) {
  size_t at = 0;
  buf[0] = 0;
  for (int i = 0; i < o->nvalues && at < n; i++) at += (size_t)snprintf(buf + at, n - at, "%s%s", i ? ", " : "", o->values[i]);
}

/* 1 or 0, or -1 after an error. */
static int cond_eval(Sema *s, const Expr *e) {
  CirOption *o;
  if ((o = option_named(s, e))) {
    if (option_has(o, "true") && option_has(o, "false")) return !strcmp(o->value, "true");
    ERR(e->loc, "option '%s' is not true/false; compare it with one of its values, e.g. %s == %s", o->name, o->name,
        o->values[0]);
    return -1;
  }
  if (e->kind == E_UNARY && e->op == '!') {
    int x = cond_eval(s, e->a);
    return x < 0 ? -1 : !x;
  }
  if (e->kind == E_BINARY && (e->op == ANDAND || e->op == OROR)) {
    int x = cond_eval(s, e->a); /* one error per condition */
    int y = x < 0 ? -1 : cond_eval(s, e->b);
    if (y < 0) return -1;
    return e->op == ANDAND ? (x && y) : (x || y);
  }
  if (e->kind == E_BINARY && (e->op == EQ || e->op == NE)) {
    CirOption *oa = option_named(s, e->a), *ob = option_named(s, e->b);
    if (oa || ob) {
      CirOption *opt = oa ? oa : ob;
      const Expr *other = oa ? e->b : e->a;
      if (other->kind != E_NAME || !option_has(opt, other->name)) {
        char vals[256];
        option_values_str(opt, vals, sizeof vals);
        ERR(other->loc, "option '%s' is compared with something that is not one of its values (%s)", opt->name, vals);
        return -1;
      }
      int eq = !strcmp(opt->value, other->name);
      return e->op == EQ ? eq : !eq;
    }
  }
  if (e->kind == E_BINARY && (e->op == EQ || e->op == NE || e->op == '<' || e->op == '>' || e->op == LE || e->op == GE)) {
    CVal a, b;
    if (!const_eval(s, e->a, &a) || !const_eval(s, e->b, &b)) return -1; /* (stops at the first) */
    /* integers compare exactly; otherwise as doubles */
    int c = a.is_int && b.is_int ? (a.i > b.i) - (a.i < b.i) : (cnum(a) > cnum(b)) - (cnum(a) < cnum(b));
    int unordered = !(a.is_int && b.is_int) && (isnan(cnum(a)) || isnan(cnum(b)));
    switch (e->op) {
      case EQ: return !unordered && c == 0;
      case NE: return unordered || c != 0;
      case '<': return !unordered && c < 0;
      case '>': return !unordered && c > 0;
      case LE: return !unordered && c <= 0;
      default: return !unordered && c >= 0;
    }
  }
  CVal x;
  if (!const_eval(s, e, &x)) return -1;
  return x.is_int ? x.i != 0 : x.f != 0;
}


/* ------------------------------------------------------------------ */
/* requirements: `require EXPR` over dims and integer constants        */

/* Precedence of an expression in a requirement, loosest 1 .. primary 7. */
static int req_prec(const Expr *e) {
  if (e->kind == E_UNARY) return 6;
  if (e->kind != E_BINARY) return 7;
  switch (e->op) {
    case OROR: return 1;
    case ANDAND: return 2;
    case '<': case '>': case LE: case GE: case EQ: case NE: return 3;
    case '+': case '-': return 4;
    default: return 5;
  }
}

static int declared_outside_if(const Program *ast, const char *name);

/* The type of a requirement's expression: 0 an integer, 1 a boolean, -1
 * after an error (reported). Only integer literals, dims and integer
 * constants, and the operators of cake_require.h. */
static int req_type(Sema *s, const Expr *e) {
  const char *noun = s->in_prefer ? "a prefer condition" : "a requirement";
  switch (e->kind) {
    case E_INT: return 0;
    case E_FLOAT:
      if (!s->in_prefer && isfinite(e->fval)) return 2; /* a requirement may compare parameters with decimals */
      if (!s->in_prefer) {
        ERR(e->loc, "%s is not a finite number", e->text);
        return -1;
      }
      ERR(e->loc, "%s computes with integers; %s is not one", noun, e->text);
      return -1;
    case E_NAME: {
      Sym *y = find_sym(s, e->name);
      if (s->in_prefer && !strcmp(e->name, CAKE_FACT_SMS)) {
        if (!y) return 0; /* the device's multiprocessor count */
        ERR(e->loc, "'%s' names the device's multiprocessor count in a prefer condition, but the program declares "
                    "its own '%s': rename it", e->name, e->name);
        return -1;
      }
      if (is_poison_sym(y)) return -1; /* its declaration failed: reported there */
      if (!y) {
        ERR(e->loc, "unknown name '%s'", e->name);
        return -1;
      }
      if (s->in_prefer && (y->kind == SYM_DIM || y->kind == SYM_CONST) && !declared_outside_if(s->ast, e->name)) {
        ERR(e->loc, "'%s' is declared inside an `if`; a prefer condition uses dims and constants declared outside "
                    "any `if` (it chooses the variant, so it cannot depend on one)", e->name);
        return -1;
      }
      if (y->kind == SYM_DIM) return 0;
      if (y->kind == SYM_CONST && y->value.is_int) return 0;
      if (!s->in_prefer && y->kind == SYM_CONST && isfinite(y->value.f)) return 2;
      if (!s->in_prefer && y->kind == SYM_CONST) {
        ERR(e->loc, "constant '%s' is not a finite number (%g)", e->name, y->value.f);
        return -1;
      }
      if (!s->in_prefer && y->kind == SYM_PARAM) return ((const CirParam *)y->ptr)->dtype == DT_I32 ? 0 : 2;
      if (y->kind == SYM_CONST) ERR(e->loc, "%s computes with integers; constant '%s' is not one", noun, e->name);
      else if (y->kind == SYM_OPTION && s->in_prefer)
        ERR(e->loc, "'%s' is an option; a prefer condition relates dims, integer constants and device facts (%s)",
            e->name, CAKE_FACT_SMS);
      else if (y->kind == SYM_OPTION)
        ERR(e->loc, "'%s' is an option; a requirement relates dims, parameters and constants (put it in `if %s == ... "
                    "{ }` to make it depend on the option)", e->name, e->name);
      else if (s->in_prefer)
        ERR(e->loc, "'%s' is a %s; %s relates dims and integer constants (and device facts: " CAKE_FACT_SMS ")",
            e->name, sym_kind_name(y->kind), noun);
      else ERR(e->loc, "'%s' is a %s; a requirement relates dims, parameters and constants", e->name,
               sym_kind_name(y->kind));
      return -1;
    }
    case E_UNARY: {
      int x = req_type(s, e->a);
      if (x < 0) return -1;
      if (e->op == '-' && x == 1) { ERR(e->loc, "unary '-' needs a number, got a comparison"); return -1; }
      if (e->op == '!' && x != 1) { ERR(e->loc, "'!' needs a comparison, got an integer"); return -1; }
      return x;
    }
    case E_BINARY: {
      if (e->op == OR || e->op == '@') break;
      int x = req_type(s, e->a), y = x < 0 ? -1 : req_type(s, e->b);
      if (x < 0 || y < 0) return -1;
      const char *op = ast_op_spelling(e->op);
      if (e->op == ANDAND || e->op == OROR) {
        if (x != 1 || y != 1) { ERR(e->loc, "'%s' combines comparisons, got an integer operand", op); return -1; }
        return 1;
      }
      if (x == 1 || y == 1) { ERR(e->loc, "'%s' needs numbers, got a comparison", op); return -1; }
      if (e->op == '%' && (x == 2 || y == 2)) {
        ERR(e->loc, "'%%' needs integers; a parameter or decimal number here is a float");
        return -1;
      }
      return req_prec(e) == 3 ? 1 : x == 2 || y == 2 ? 2 : 0;
    }
    default: break;
  }
  ERR(e->loc, "%s uses dims, %s and the operators + - * / %% < <= > >= == != && || !", noun,
      s->in_prefer ? "integer constants, device facts (" CAKE_FACT_SMS ")" : "parameters, constants");
  return -1;
}

/* Whether `name` is a dim or constant declared at the top level (outside
 * any `if`): the same in every variant. */
static int declared_outside_if(const Program *ast, const char *name) {
  for (int i = 0; ast && i < ast->decls.len; i++) {
    const Decl *d = ast->decls.items[i];
    if (d->kind == D_DIM)
      for (int j = 0; j < d->names.len; j++)
        if (!strcmp(((const Ident *)d->names.items[j])->name, name)) return 1;
    if (d->kind == D_CONST && d->name.name && !strcmp(d->name.name, name)) return 1;
  }
  return 0;
}

/* A double in the canonical form of cake_require.h: digits '.' digits with
 * an optional exponent (always a '.'), in parentheses when negative; %.17g
 * gives it back exactly. */
static void req_float(Buf *o, double f) {
  char num[96];
  int neg = signbit(f);
  snprintf(num, sizeof num, "%.17g", neg ? -f : f);
  const char *dp = localeconv()->decimal_point; /* whatever the host process's locale: '.' */
  if (dp && dp[0] && dp[0] != '.' && !dp[1])
    for (char *q = num; *q; q++)
      if (*q == dp[0]) *q = '.';
  char *e = strchr(num, 'e');
  if (!strchr(num, '.')) { /* 5 -> 5.0, 1e+20 -> 1.0e+20 */
    char tail[16]; /* the exponent: e+308 at most */
    snprintf(tail, sizeof tail, "%.15s", e ? e : "");
    if (e) *e = 0;
    snprintf(num + strlen(num), sizeof num - strlen(num), ".0%s", tail);
  }
  buf_printf(o, neg ? "(-%s)" : "%s", num);
}

/* Prints a checked requirement with the parentheses its precedence needs:
 * constants by name (the text shown in messages) or by value (canonical). */
static void req_print(Sema *s, Buf *o, const Expr *e, int canonical) {
  switch (e->kind) {
    case E_INT: buf_printf(o, "%lld", e->ival); return;
    case E_FLOAT:
      if (canonical) req_float(o, e->fval);
      else buf_puts(o, e->text);
      return;
    case E_NAME: {
      Sym *y = find_sym(s, e->name);
      if (!canonical || !y || y->kind == SYM_DIM || y->kind == SYM_PARAM) buf_puts(o, e->name); /* !y: a device fact */
      else if (!y->value.is_int) req_float(o, y->value.f);
      else if (y->value.i == INT64_MIN) buf_puts(o, "(-9223372036854775807 - 1)");
      else if (y->value.i < 0) buf_printf(o, "(-%lld)", -(long long)y->value.i);
      else buf_printf(o, "%lld", (long long)y->value.i);
      return;
    }
    case E_UNARY: {
      buf_puts(o, e->op == '-' ? "-" : "!");
      int paren = req_prec(e->a) < 6;
      if (paren) buf_puts(o, "(");
      req_print(s, o, e->a, canonical);
      if (paren) buf_puts(o, ")");
      return;
    }
    default: {
      int p = req_prec(e), pl = req_prec(e->a), pr = req_prec(e->b);
      int lparen = pl < p || (p == 3 && pl == 3), rparen = pr <= p;
      if (lparen) buf_puts(o, "(");
      req_print(s, o, e->a, canonical);
      buf_printf(o, "%s %s ", lparen ? ")" : "", ast_op_spelling(e->op));
      if (rparen) buf_puts(o, "(");
      req_print(s, o, e->b, canonical);
      if (rparen) buf_puts(o, ")");
      return;
    }
  }
}

/* Dims (value 1: only the form is checked with them) and parameters (their
 * defaults, for the check of a requirement that names parameters only). */
static int req_lookup(void *ctx, const char *name, size_t len, cake_require_value *value) {
  const CirProgram *p = ctx;
  *value = (cake_require_value){0};
  for (int i = 0; i < p->ndims; i++)
    if (strlen(p->dims[i].name) == len && !memcmp(p->dims[i].name, name, len)) {
      value->i = 1;
      return 1;
    }
  for (int i = 0; i < p->nparams; i++)
    if (strlen(p->params[i]->name) == len && !memcmp(p->params[i]->name, name, len)) {
      if (p->params[i]->dtype == DT_I32) value->i = (int64_t)p->params[i]->def;
      else value->is_float = 1, value->f = (double)(float)p->params[i]->def;
      return 1;
    }
  return 0;
}

/* A prefer condition names dims and device facts only. */
static int dims_only_lookup(void *ctx, const char *name, size_t len, cake_require_value *value) {
  const CirProgram *p = ctx;
  *value = (cake_require_value){.i = 1};
  for (int i = 0; i < p->ndims; i++)
    if (strlen(p->dims[i].name) == len && !memcmp(p->dims[i].name, name, len)) return 1;
  return 0;
}

static const char *base_of(const char *path) {
  const char *b = strrchr(path, '/');
  return b ? b + 1 : path;
}

static int prefer_lookup(void *ctx, const char *name, size_t len, cake_require_value *value) {
  if (len == strlen(CAKE_FACT_SMS) && !memcmp(name, CAKE_FACT_SMS, len)) {
    *value = (cake_require_value){.i = 1};
    return 1;
  }
  return dims_only_lookup(ctx, name, len, value);
}

static void where_of(Loc loc, char *where, size_t n) {
  snprintf(where, n, "%s:%d:%d", loc.src ? base_of(loc.src->name) : "?", loc.line, loc.col);
}

/* The `prefer VALUE when EXPR` clauses of option `o` (declared by `d`). */
static void prefer_decls(Sema *s, const Decl *d, CirOption *o) {
  if (!d->prefers.len) return;
  if (d->prefers.len > CAKE_MAX_PREFERS) {
    const Prefer *r = d->prefers.items[CAKE_MAX_PREFERS];
    ERR(r->loc, "an option has at most %d prefer clauses", CAKE_MAX_PREFERS);
    return;
  }
  o->prefers = arena_alloc(s->a, sizeof(CirPrefer) * (size_t)d->prefers.len);
  s->in_prefer = 1;
  for (int i = 0; i < d->prefers.len; i++) {
    const Prefer *r = d->prefers.items[i];
    int known = 0;
    for (int v = 0; v < o->nvalues; v++) known |= !strcmp(o->values[v], r->value.name);
    if (!known) {
      char vals[256];
      option_values_str(o, vals, sizeof vals);
      ERR(r->value.loc, "option '%s' has no value '%s' to prefer (it takes %s)", o->name, r->value.name, vals);
      continue;
    }
    int t = req_type(s, r->cond);
    if (t < 0) continue;
    if (t != 1) {
      ERR(r->cond_loc, "a prefer condition is a comparison, e.g. `prefer v16 when N * H <= 2 * SMS`; this is an "
                       "integer");
      continue;
    }
    Buf text, expr;
    buf_init(&text);
    buf_init(&expr);
    req_print(s, &text, r->cond, 0);
    req_print(s, &expr, r->cond, 1);
    char msg[256];
    int ok = text.len <= CAKE_MAX_REQUIRE_TEXT;
    if (!ok) ERR(r->cond_loc, "a prefer condition has at most %d characters; this one has %zu", CAKE_MAX_REQUIRE_TEXT, text.len);
    else if (cake_require_eval(expr.data, prefer_lookup, s->p, 0, msg, sizeof msg) != CAKE_REQUIRE_TRUE) {
      ERR(r->cond_loc, "this prefer condition cannot be recorded: %s", msg);
      ok = 0;
    }
    if (ok) {
      CirPrefer *c = &o->prefers[o->nprefers++];
      char where[512];
      where_of(r->cond_loc, where, sizeof where);
      *c = (CirPrefer){r->value.name, arena_strdup(s->a, text.data), arena_strdup(s->a, expr.data),
                       arena_strdup(s->a, where), r->cond_loc};
    }
    buf_free(&text);
    buf_free(&expr);
  }
  s->in_prefer = 0;
}

static void require_decl(Sema *s, const Decl *d) {
  CirProgram *p = s->p;
  int t = req_type(s, d->value);
  if (t < 0) return;
  if (t != 1) {
    ERR(d->value_loc, "a requirement is a comparison of dims or parameters, e.g. `require HV %% H == 0`; this is a "
                      "number");
    return;
  }
  if (p->nrequires == CAKE_MAX_REQUIRES) {
    ERR(d->loc, "a program has at most %d requirements (in one variant)", CAKE_MAX_REQUIRES);
    return;
  }
  Buf text, expr;
  buf_init(&text);
  buf_init(&expr);
  req_print(s, &text, d->value, 0);
  req_print(s, &expr, d->value, 1);
  char msg[256];
  /* the runtime reads the canonical form with the same evaluator: its limits are checked here */
  int ok = text.len <= CAKE_MAX_REQUIRE_TEXT;
  if (!ok) ERR(d->value_loc, "a requirement has at most %d characters; this one has %zu", CAKE_MAX_REQUIRE_TEXT, text.len);
  else if (cake_require_eval(expr.data, req_lookup, p, 0, msg, sizeof msg) != CAKE_REQUIRE_TRUE) {
    ERR(d->value_loc, "this requirement cannot be recorded: %s", msg);
    ok = 0;
  }
  /* decided now when it names no dim: constants, and parameters through their defaults (a
   * default that breaks it is an error here; the plan checks the values it is given) */
  int later = 0, params = 0;
  for (int i = 0; i < p->ndims; i++) later |= cake_require_uses(expr.data, p->dims[i].name);
  for (int i = 0; i < p->nparams; i++)
    if (cake_require_uses(expr.data, p->params[i]->name)) {
      params = 1;
      later |= !p->params[i]->has_default;
    }
  if (ok && !later) {
    int r = cake_require_eval(expr.data, req_lookup, p, 1, msg, sizeof msg);
    if (r != CAKE_REQUIRE_TRUE) {
      ERR(d->value_loc, "requirement '%s' does not hold%s%s%s", text.data, params ? " for the parameters' defaults" : "",
          msg[0] ? (params ? ": " : " ") : "", msg);
      ok = 0;
    }
  }
  if (ok) {
    CirRequire *r = &p->requires[p->nrequires++];
    r->text = arena_strdup(s->a, text.data);
    r->expr = arena_strdup(s->a, expr.data);
    char where[512];
    snprintf(where, sizeof where, "%s:%d:%d", d->value_loc.src ? base_of(d->value_loc.src->name) : "?",
             d->value_loc.line, d->value_loc.col);
    r->where = arena_strdup(s->a, where);
    r->loc = d->value_loc;
  }
  buf_free(&text);
  buf_free(&expr);
}

/* ------------------------------------------------------------------ */
/* kernel scope                                                       */

static Binding *lookup(Sema *s, const char *name) {
  for (Binding *b = s->scope; b; b = b->next)
    if (strcmp(b->name, name) == 0) return b;
  return NULL;
}

static Binding *bind(Sema *s, const char *name, CirInst *v, Loc loc) {
  Binding *b = arena_alloc(s->a, sizeof(Binding));
  b->name = name;
  b->v = v;
  b->loc = loc;
  b->depth = s->depth;
  b->next = s->scope;
  s->scope = b;
  return b;
}

static int is_chunk_index(const CirInst *v) {
  if (v->op == OP_CHUNKVAR) return 1;
  return v->op == OP_GRIDVAR && v->parent == NULL && v->axis >= 0 && v->ival == GA_CHUNKS;
}

static int is_docs_index(const CirInst *v) {
  return v->op == OP_GRIDVAR && v->parent == NULL && v->axis >= 0 && v->ival == GA_DOCS;
}

static CirInst *expr(Sema *s, const Expr *e);

static CirInst *const_inst(Sema *s, Loc loc, CVal v) {
  CirInst *in = emit(s, OP_CONST, ty0(v.is_int ? DT_I32 : DT_F32), loc, 0);
  in->fval = cnum(v);
  in->ival = v.is_int ? v.i : 0;
  in->is_int = v.is_int;
  return in;
}

/* An integer constant that takes part in i32 arithmetic (or is stored, or
 * indexes) must fit in i32. Returns 0 after reporting. */
static int i32_fits(Sema *s, const CirInst *v) {
  if (v->op != OP_CONST || !v->is_int || (v->ival >= INT32_MIN && v->ival <= INT32_MAX)) return 1;
  ERR(v->loc, "integer constant %lld does not fit in i32", v->ival);
  return 0;
}

static CirInst *name_expr(Sema *s, const Expr *e) {
  Binding *b = lookup(s, e->name);
  if (b) return b->v;
  Sym *y = find_sym(s, e->name);
  if (!y) {
    ERR(e->loc, "unknown name '%s'", e->name);
    return poison(s, e->loc);
  }
  switch (y->kind) {
    case SYM_POISON: return poison(s, e->loc);
    case SYM_CONST: return const_inst(s, e->loc, y->value);
    case SYM_DIM: {
      CirInst *in = emit(s, OP_DIMVAL, ty0(DT_I32), e->loc, 0);
      in->dim = y->index;
      return in;
    }
    case SYM_PARAM: {
      CirParam *pa = y->ptr;
      CirInst *in = emit(s, OP_PARAMVAL, ty0(pa->dtype), e->loc, 0);
      in->param = pa;
      return in;
    }
    case SYM_TENSOR:
      ERR(e->loc, "'%s' is a tensor in memory; read a window of it with `load %s[...]`", e->name, e->name);
      return poison(s, e->loc);
    default:
      ERR(e->loc, "'%s' is a %s and has no value here", e->name, sym_kind_name(y->kind));
      return poison(s, e->loc);
  }
}

static CirOp binop_of(int tok) {
  switch (tok) {
    case '+': return OP_ADD;
    case '-': return OP_SUB;
    case '*': return OP_MUL;
    case '/': return OP_DIV;
    case '%': return OP_MOD;
    case '<': return OP_LT;
    case '>': return OP_GT;
    case LE: return OP_LE;
    case GE: return OP_GE;
    case EQ: return OP_EQ;
    case NE: return OP_NE;
    case ANDAND: return OP_AND;
    case OR: return OP_CONST; /* see expr(): `or` after something other than a load */
    case OROR: return OP_OR;
    case '@': return OP_MATMUL;
    default: return OP_CONST;
  }
}

static CirInst *binary(Sema *s, CirOp op, Loc loc, CirInst *a, CirInst *b) {
  if (is_poison(a) || is_poison(b)) return poison(s, loc);
  const char *sp = cake_ops[op].spelling;
  char what[48];
  snprintf(what, sizeof what, "'%s'", sp);
  CirType shape;
  OpKind kind = cake_ops[op].kind;
  if (kind == OK_LOGIC2) {
    if (a->ty.dt != DT_BOOL || b->ty.dt != DT_BOOL) {
      ERR(loc, "%s needs bool operands, got %s and %s", what, dtype_name(a->ty.dt), dtype_name(b->ty.dt));
      return poison(s, loc);
    }
    if (!broadcast(s, loc, what, a->ty, b->ty, &shape)) return poison(s, loc);
    shape.dt = DT_BOOL;
    return emit(s, op, shape, loc, 2, a, b);
  }
  DType dt = arith_dtype(s, loc, what, a, b);
  if (dt == DT_NONE) return poison(s, loc);
  if (dt == DT_I32) { /* both checked, left first: each reports its own error */
    int fa = i32_fits(s, a);
    int fb = i32_fits(s, b);
    if (!fa || !fb) return poison(s, loc);
  }
  if (op == OP_MOD && dt != DT_I32) {
    ERR(loc, "'%%' is defined on i32 only, got %s", dtype_name(a->ty.dt));
    return poison(s, loc);
  }
  if (!broadcast(s, loc, what, a->ty, b->ty, &shape)) return poison(s, loc);
  shape.dt = kind == OK_COMPARE ? DT_BOOL : dt;
  return emit(s, op, shape, loc, 2, a, b);
}

static CirInst *matmul(Sema *s, Loc loc, CirInst *a, CirInst *b) {
  if (is_poison(a) || is_poison(b)) return poison(s, loc);
  char x[64], y[64];
  shape_str(x, sizeof x, a->ty);
  shape_str(y, sizeof y, b->ty);
  if (a->ty.rank != 2 || b->ty.rank != 2) {
    ERR(loc, "'@' multiplies rank-2 tiles, got %s @ %s", x, y);
    return poison(s, loc);
  }
  int ok_dt = (a->ty.dt == DT_BF16 || a->ty.dt == DT_F16) && a->ty.dt == b->ty.dt;
  if (!ok_dt) {
    ERR(loc, "'@' operands must both be bf16 or both f16 (tensor-core inputs), got %s @ %s; "
             "convert with `as bf16`", x, y);
    return poison(s, loc);
  }
  if (a->ty.shape[1] != b->ty.shape[0]) {
    ERR(loc, "shape mismatch in '@': %s @ %s (inner dimensions %d and %d differ)", x, y,
        a->ty.shape[1], b->ty.shape[0]);
    return poison(s, loc);
  }
  return emit(s, OP_MATMUL, ty2(DT_F32, a->ty.shape[0], b->ty.shape[1]), loc, 2, a, b);
}

/* The first part of e that is known only when the kernel runs (a name bound
 * in the kernel, or a load), or NULL. */
static const Expr *runtime_part(Sema *s, const Expr *e) {
  if (!e) return NULL;
  if ((e->kind == E_NAME && lookup(s, e->name)) || e->kind == E_LOAD) return e;
  const Expr *r = runtime_part(s, e->a);
  if (!r) r = runtime_part(s, e->b);
  for (int i = 0; !r && i < e->args.len; i++) r = runtime_part(s, e->args.items[i]);
  return r;
}

/* A tile index (x[i], x[i, :]): an integer constant. */
static int tile_index_const(Sema *s, const Expr *ix, long long *pos) {
  const Expr *rt = runtime_part(s, ix);
  if (rt && rt->kind == E_LOAD) {
    ERR(ix->loc, "a tile index must be a compile-time constant, but this one loads from '%s'; to select by a value "
                 "in memory, index the tensor in the load instead",
        rt->name);
    return 0;
  }
  if (rt) {
    Binding *b = lookup(s, rt->name);
    if (is_poison(b->v)) return 0;
    if (b->is_grid)
      ERR(ix->loc, "a tile index must be a compile-time constant, but '%s' is %s, known only when the kernel runs; "
                   "to select by '%s', index the tensor in the load instead (load NAME[..., %s, ...])",
          rt->name, binding_kind(b), rt->name, rt->name);
    else
      ERR(ix->loc, "a tile index must be a compile-time constant, but '%s' is a value of the kernel; declare "
                   "constants with `const` at the top level",
          rt->name);
    return 0;
  }
  return const_int(s, ix, pos, "a tile index");
}

/* x[i, :], x[:, None], ... on a tile value. */
static CirInst *tile_index(Sema *s, const Expr *e) {
  CirInst *v = expr(s, e->a);
  if (is_poison(v)) return poison(s, e->loc);
  int real = 0;
  for (int i = 0; i < e->args.len; i++) real += ((Expr *)e->args.items[i])->kind != E_NONE;
  if (real != v->ty.rank) {
    char t[64];
    shape_str(t, sizeof t, v->ty);
    ERR(e->loc, "indexing a %s tile needs %d indices (besides None), got %d", t, v->ty.rank, real);
    return poison(s, e->loc);
  }
  int axis = 0; /* position in the current value */
  for (int i = 0; i < e->args.len; i++) {
    const Expr *ix = e->args.items[i];
    if (ix->kind == E_SLICE) {
      axis++;
      continue;
    }
    if (ix->kind == E_NONE) {
      if (v->ty.rank >= CIR_MAX_RANK) {
        ERR(ix->loc, "tiles have at most %d dimensions", CIR_MAX_RANK);
        return poison(s, e->loc);
      }
      CirType t = v->ty;
      for (int j = t.rank; j > axis; j--) t.shape[j] = t.shape[j - 1];
      t.shape[axis] = 1;
      t.rank++;
      CirInst *x = emit(s, OP_EXPAND, t, ix->loc, 1, v);
      x->axis = axis;
      v = x;
      axis++;
      continue;
    }
    long long pos;
    if (!tile_index_const(s, ix, &pos)) return poison(s, e->loc);
    int n = v->ty.shape[axis];
    if (pos < 0) pos += n;
    if (pos < 0 || pos >= n) {
      ERR(ix->loc, "index %lld is out of range for an axis of extent %d", pos, n);
      return poison(s, e->loc);
    }
    CirType t = v->ty;
    for (int j = axis; j + 1 < t.rank; j++) t.shape[j] = t.shape[j + 1];
    t.rank--;
    t.shape[t.rank] = 0;
    CirInst *x = emit(s, OP_PICK, t, ix->loc, 1, v);
    x->axis = axis;
    x->ival = pos;
    v = x;
  }
  return v;
}

/* A walk over the operands of a value, each instruction once (a chain of
 * values can share operands, so a plain recursion could take exponential
 * time): the first one for which match() holds, or NULL. */
typedef int (*InstMatch)(const CirInst *v, const void *ctx);

static const CirInst *find_in(const CirInst *v, InstMatch match, const void *ctx, unsigned char *seen) {
  if (!v || seen[v->id]) return NULL;
  seen[v->id] = 1;
  if (match(v, ctx)) return v;
  for (int i = 0; i < v->nargs; i++) {
    const CirInst *r = find_in(v->args[i], match, ctx, seen);
    if (r) return r;
  }
  return NULL;
}

static const CirInst *find_operand(const Sema *s, const CirInst *v, InstMatch match, const void *ctx) {
  unsigned char *seen = cake_xcalloc((size_t)s->p->next_id + 1, 1);
  const CirInst *r = find_in(v, match, ctx, seen);
  free(seen);
  return r;
}

static int match_chunk_index(const CirInst *v, const void *ctx) { return is_chunk_index(v); }

/* The name a chunk index is bound to (a grid index or a scan's). */
static const char *chunk_index_name(const Sema *s, const CirInst *c) {
  if (c->op == OP_GRIDVAR) return s->k->axes[c->axis].var;
  for (const Binding *b = s->scope; b; b = b->next)
    if (b->v == c) return b->name;
  return "c";
}

/* A window index is a chunk index itself or is not computed from one: a
 * chunk index is a position in the chunk table, and arithmetic on it gives
 * a plain number, which on the token axis selects one token (`x[c - 1, h]`
 * is token c - 1, not the previous chunk) and on a `chunks` axis may reach
 * another document's entry or leave the table. 0 after reporting. */
static int check_chunk_arith(Sema *s, const CirTensor *t, int axis, const Expr *ix, const CirInst *v) {
  if (is_chunk_index(v) || !v->nargs) return 1;
  const CirInst *c = find_operand(s, v, match_chunk_index, NULL);
  if (!c) return 1;
  const char *name = chunk_index_name(s, c);
  int sym = t->shape[axis].sym;
  const char *here = sym < 0 ? ""
                     : sym == s->p->tokens_dim ? ": on the token axis it would select one token, not the previous or next chunk"
                     : sym == s->p->chunks_dim ? ": on a `chunks` axis it would select an entry of the chunk table, which may "
                                                 "belong to another document or lie outside the table"
                                               : "";
  ERR(ix->loc, "a window index computed from chunk index '%s' is a plain number, not a chunk%s; index with '%s' itself, "
               "and carry values from one chunk to the next through a scan (`for %s in chunks(n) carry ...`)",
      name, here, name, name);
  return 0;
}

/* `shift(c, s)` on the token axis: the C rows of chunk c moved by s tokens
 * (s a constant in [-C, C]); row r holds token start + r + s when row r
 * and that token both lie in the chunk's document, else 0. Loads only. */
static int shift_index(Sema *s, const CirTensor *t, int axis, const Expr *ix, CirIndex *out, int *rows) {
  if (ix->args.len != 2) {
    ERR(ix->loc, "shift takes a chunk index and a constant number of tokens: `shift(c, -1)`");
    return 0;
  }
  const Expr *ce = ix->args.items[0];
  CirInst *v = expr(s, ce);
  if (is_poison(v)) return 0;
  if (!is_chunk_index(v)) {
    ERR(ce->loc, "shift's first argument must be a chunk index (a grid index over chunks, or a scan's)");
    return 0;
  }
  const CirExtent ext = t->shape[axis];
  if (ext.sym < 0 || ext.sym != s->p->tokens_dim) {
    char ename[64];
    cir_extent_str(ename, sizeof ename, s->p, ext);
    ERR(ix->loc, "shift moves a chunk's rows along the token axis, but axis %d of '%s' has extent %s", axis, t->name,
        ename);
    return 0;
  }
  long long n;
  if (!const_int(s, ix->args.items[1], &n, "shift's number of tokens")) return 0;
  if (n < -s->p->chunk || n > s->p->chunk) {
    ERR(((const Expr *)ix->args.items[1])->loc, "shift moves rows by at most the chunk size (%d tokens either way), not %lld",
        s->p->chunk, n);
    return 0;
  }
  if (s->p->ranks_dim >= 0 && n) { /* tokens of the document on other ranks come through t's halo */
    const CirKernel *hx = NULL;
    for (int i = 0; i < s->p->nexchanges; i++)
      if (s->p->exchanges[i]->exchange == XCHG_HALO && s->p->exchanges[i]->xsrc == t) hx = s->p->exchanges[i];
    if (!hx) {
      ERR(ix->loc, "in a context-parallel program, a shifted window of '%s' reads tokens that other ranks hold: "
                   "declare its halo, `exchange NAME = halo(%s, %d, %d) -> DST`, and run it before this kernel",
          t->name, t->name, n < 0 ? (int)-n : 0, n > 0 ? (int)n : 0);
      return 0;
    }
    if ((n < 0 && -n > hx->xbefore) || (n > 0 && n > hx->xafter)) {
      ERR(ix->loc, "this window reads %lld tokens %s a fragment, but the halo of '%s' ('%s') brings %d", n < 0 ? -n : n,
          n < 0 ? "before" : "after", t->name, hx->name, n < 0 ? hx->xbefore : hx->xafter);
      return 0;
    }
    out->halo = hx->xdst;
  }
  out->kind = IX_CHUNK;
  out->v = v;
  out->size = s->p->chunk;
  out->shift = (int)n;
  *rows = out->size;
  return 1;
}

/* Classify one index of a load/store window. Returns 0 on error. */
static int window_index(Sema *s, const CirTensor *t, int axis, const Expr *ix, CirIndex *out, int *rows) {
  const CirExtent ext = t->shape[axis];
  char ename[64];
  cir_extent_str(ename, sizeof ename, s->p, ext);
  if (ix->kind == E_SLICE) {
    if (ext.sym >= 0) {
      ERR(ix->loc, "':' takes all of axis %d of '%s', but its extent %s is not a compile-time constant",
          axis, t->name, ename);
      return 0;
    }
    out->kind = IX_FULL;
    out->size = (int)ext.value;
    *rows = out->size;
    return 1;
  }
  if (ix->kind == E_NONE) {
    ERR(ix->loc, "None is not a window index; expand the loaded tile instead");
    return 0;
  }
  if (ix->kind == E_CALL && !strcmp(ix->name, "shift")) return shift_index(s, t, axis, ix, out, rows);
  CirInst *v = expr(s, ix);
  if (is_poison(v) || !i32_fits(s, v)) return 0;
  if (v->ty.rank != 0 || v->ty.dt != DT_I32) {
    char ty[64];
    cir_type_str(ty, sizeof ty, v->ty);
    ERR(ix->loc, "a window index must be an i32 scalar, got %s", ty);
    return 0;
  }
  if (!check_chunk_arith(s, t, axis, ix, v)) return 0;
  out->v = v;
  if (is_chunk_index(v) && ext.sym >= 0 && ext.sym == s->p->chunks_dim) {
    out->kind = IX_SCALAR; /* one entry per chunk */
    out->size = 0;
    *rows = 0;
    return 1;
  }
  if (is_chunk_index(v)) {
    if (ext.sym < 0 || ext.sym != s->p->tokens_dim) {
      ERR(ix->loc, "chunk index used on axis %d of '%s', whose extent %s is not the token axis %s",
          axis, t->name, ename, s->p->tokens_dim >= 0 ? s->p->dims[s->p->tokens_dim].name : "(none)");
      return 0;
    }
    out->kind = IX_CHUNK;
    out->size = s->p->chunk;
    *rows = out->size;
    return 1;
  }
  if (v->op == OP_GRIDVAR) {
    const CirAxis *ga = &s->k->axes[v->axis];
    if (ga->kind == GA_RANGE && ga->block) {
      CirExtent whole = {-1, ga->extent.value * ga->block};
      if (!extent_eq(whole, ext)) {
        ERR(ix->loc, "block index '%s' covers %lld elements in blocks of %d, but axis %d of '%s' has extent %s",
            ga->var, whole.value, ga->block, axis, t->name, ename);
        return 0;
      }
      out->kind = IX_BLOCK;
      out->size = ga->block;
      *rows = out->size;
      return 1;
    }
    CirExtent range = ga->extent;
    if (ga->kind == GA_DOCS) range = (CirExtent){s->p->docs_dim, 0};
    /* a fragment also indexes per-fragment data of the size every rank shares
     * (`ranks R, fragments F`: no rank holds more than F) */
    int frag_axis = ga->kind == GA_DOCS && s->p->frags_dim >= 0 && ext.sym == s->p->frags_dim;
    if (!extent_eq(range, ext) && !frag_axis) {
      char rname[64];
      cir_extent_str(rname, sizeof rname, s->p, range);
      ERR(ix->loc, "index '%s' runs over %s, but axis %d of '%s' has extent %s", ga->var, rname, axis,
          t->name, ename);
      return 0;
    }
  }
  out->kind = IX_SCALAR;
  out->size = 0;
  *rows = 0;
  return 1;
}

static CirTensor *tensor_named(Sema *s, const char *name, Loc loc) {
  Sym *y = find_sym(s, name);
  if (!y) {
    ERR(loc, "unknown tensor '%s'", name);
    return NULL;
  }
  if (is_poison_sym(y)) return NULL;
  if (y->kind != SYM_TENSOR) {
    ERR(loc, "'%s' is a %s, not a tensor", name, sym_kind_name(y->kind));
    return NULL;
  }
  return y->ptr;
}

/* Resolve a window t[idx...]; fills inst->index and returns the tile type. */
static int window(Sema *s, CirTensor *t, const PtrVec *args, Loc loc, CirInst *in, CirType *ty) {
  if (args->len != t->rank) {
    ERR(loc, "'%s' has %d axes, but the window gives %d indices", t->name, t->rank, args->len);
    return 0;
  }
  int dims[CIR_MAX_TENSOR_RANK], nd = 0, ok = 1;
  for (int i = 0; i < t->rank; i++) {
    int rows = 0;
    if (!window_index(s, t, i, args->items[i], &in->index[i], &rows)) {
      ok = 0;
      continue;
    }
    if (in->index[i].kind != IX_SCALAR) dims[nd++] = rows;
  }
  if (!ok) return 0;
  if (nd > CIR_MAX_RANK) {
    ERR(loc, "a window selects a tile of at most %d dimensions; this one selects %d", CIR_MAX_RANK, nd);
    return 0;
  }
  *ty = (CirType){t->dtype, nd, {nd > 0 ? dims[0] : 0, nd > 1 ? dims[1] : 0}};
  return tile_fits(s, loc, *ty);
}

static CirInst *load_expr(Sema *s, const Expr *e) {
  CirTensor *t = tensor_named(s, e->name, e->loc);
  if (!t) return poison(s, e->loc);
  CirInst *in = cir_inst_new(s->a, s->p, OP_LOAD, ty0(DT_NONE), e->loc, 0);
  in->tensor = t;
  CirType ty;
  if (!window(s, t, &e->args, e->loc, in, &ty)) return poison(s, e->loc);
  in->ty = ty;
  if (t->optional && !e->b) {
    ERR(e->loc, "'%s' is optional and may be absent: give the value to use then, e.g. `load %s[...] or 0`",
        t->name, t->name);
    return poison(s, e->loc);
  }
  if (!t->optional && e->b) {
    ERR(e->b->loc, "'%s' is not optional, so a default after 'or' would never be used", t->name);
    return poison(s, e->loc);
  }
  if (e->b) {
    CVal v;
    if (!const_eval(s, e->b, &v)) return poison(s, e->loc);
    if (t->dtype == DT_I32 && (!v.is_int || v.i < INT32_MIN || v.i > INT32_MAX)) {
      ERR(e->b->loc, "'%s' holds i32, so its default must be an integer constant that fits in i32", t->name);
      return poison(s, e->loc);
    }
    /* the value of every element when the tensor is absent, in t's dtype */
    in->fval = cake_round_dtype(t->dtype, cnum(v));
  }
  cir_block_push(s->a, s->cur, in);
  return in;
}

static int call_axis(Sema *s, const Expr *e, CirInst *x, int *axis) {
  long long ax;
  if (!const_int(s, e, &ax, "the axis")) return 0;
  if (ax < 0) ax += x->ty.rank;
  if (ax < 0 || ax >= x->ty.rank) {
    ERR(e->loc, "axis %lld is out of range for a rank-%d tile", ax, x->ty.rank);
    return 0;
  }
  *axis = (int)ax;
  return 1;
}

/* decay_mm(m, b, g) / decay_mm_t(m, a, g): m a square float [C, C] tile (only
 * its lower triangle, diagonal included, is read), the other two float tiles
 * of one shape [C, K] -> f32[C, K]. */
static CirInst *decay_mm_call(Sema *s, const Expr *e, int op, CirInst **x) {
  Loc loc = e->loc;
  char ti[64];
  for (int i = 0; i < 3; i++) {
    if (x[i]->ty.rank != 2 || !is_float(x[i]->ty.dt)) {
      shape_str(ti, sizeof ti, x[i]->ty);
      ERR(((Expr *)e->args.items[i])->loc, "%s argument %d must be a rank-2 float tile, got %s", e->name, i + 1, ti);
      return poison(s, loc);
    }
  }
  int c = x[1]->ty.shape[0], kk = x[1]->ty.shape[1];
  if (x[0]->ty.shape[0] != c || x[0]->ty.shape[1] != c) {
    shape_str(ti, sizeof ti, x[0]->ty);
    ERR(((Expr *)e->args.items[0])->loc, "%s argument 1 must be [%d, %d] (square, a row per row of argument 2), got %s",
        e->name, c, c, ti);
    return poison(s, loc);
  }
  if (x[2]->ty.shape[0] != c || x[2]->ty.shape[1] != kk) {
    char t1[64];
    shape_str(ti, sizeof ti, x[2]->ty);
    shape_str(t1, sizeof t1, x[1]->ty);
    ERR(((Expr *)e->args.items[2])->loc, "shape mismatch in %s: argument 3 is %s, argument 2 is %s", e->name, ti, t1);
    return poison(s, loc);
  }
  return emit(s, op, ty2(DT_F32, c, kk), loc, 3, x[0], x[1], x[2]);
}

static CirInst *call_expr(Sema *s, const Expr *e) {
  int op = op_by_call_name(e->name);
  if (op < 0) {
    Sym *y = find_sym(s, e->name);
    if (is_poison_sym(y)) return poison(s, e->loc);
    if (y) ERR(e->loc, "'%s' is a %s and cannot be called", e->name, sym_kind_name(y->kind));
    else if (!strcmp(e->name, "shift"))
      ERR(e->loc, "shift(c, s) is a window index on a token axis (`load x[shift(c, -1), :]`), not a value");
    else ERR(e->loc, "unknown function '%s'", e->name);
    return poison(s, e->loc);
  }
  const OpInfo *oi = &cake_ops[op];
  int n = e->args.len;
  int lo = oi->arity, hi = oi->arity;
  if (oi->kind == OK_MASK) lo = 1, hi = 2;
  if (n < lo || n > hi) {
    ERR(e->loc, "%s takes %d argument%s, got %d (%s)", e->name, lo, lo == 1 ? "" : "s", n, oi->doc);
    return poison(s, e->loc);
  }
  Loc loc = e->loc;
  if (oi->kind == OK_IOTA) {
    long long n;
    if (!const_int(s, e->args.items[0], &n, "iota's length")) return poison(s, loc);
    if (n < 1 || n > CAKE_MAX_TILE_ELEMS) {
      ERR(((Expr *)e->args.items[0])->loc, "iota's length must be in [1, %d], got %lld", CAKE_MAX_TILE_ELEMS, n);
      return poison(s, loc);
    }
    return emit(s, OP_IOTA, ty1(DT_I32, (int)n), loc, 0);
  }
  if (oi->kind == OK_FRAG) {
    if (s->p->ranks_dim < 0) {
      ERR(loc, "%s() asks where a fragment sits in its document: it needs a context-parallel program "
               "(a `ranks` declaration)", e->name);
      return poison(s, loc);
    }
    CirInst *n = expr(s, e->args.items[0]);
    if (is_poison(n)) return poison(s, loc);
    if (!is_docs_index(n)) {
      ERR(((Expr *)e->args.items[0])->loc, "%s() takes a fragment (a grid index over docs)", e->name);
      return poison(s, loc);
    }
    return emit(s, op, ty0(DT_BOOL), loc, 1, n);
  }
  if (oi->kind == OK_VALID) {
    CirInst *c = expr(s, e->args.items[0]);
    if (is_poison(c)) return poison(s, loc);
    if (!is_chunk_index(c)) {
      ERR(((Expr *)e->args.items[0])->loc, "valid() takes a chunk index (a grid index over chunks or a scan index)");
      return poison(s, loc);
    }
    return emit(s, OP_VALID, ty1(DT_BOOL, s->p->chunk), loc, 1, c);
  }
  /* Operands that are tiles; axis / diagonal arguments are constants. */
  int ntiles = n;
  if (oi->kind == OK_MASK || oi->kind == OK_REDUCE || oi->kind == OK_SCAN) ntiles = 1;
  CirInst *x[3] = {0};
  for (int i = 0; i < ntiles; i++) {
    x[i] = expr(s, e->args.items[i]);
    if (is_poison(x[i])) return poison(s, loc);
  }
  char t0[64];
  shape_str(t0, sizeof t0, x[0]->ty);
  switch (oi->kind) {
    case OK_UNARY:
      if (!is_float(x[0]->ty.dt)) {
        ERR(loc, "%s expects a float tile, got %s", e->name, t0);
        return poison(s, loc);
      }
      return emit(s, op, (CirType){DT_F32, x[0]->ty.rank, {x[0]->ty.shape[0], x[0]->ty.shape[1]}}, loc, 1, x[0]);
    case OK_BINARY: return binary(s, op, loc, x[0], x[1]);
    case OK_SELECT: {
      if (x[0]->ty.dt != DT_BOOL) {
        ERR(((Expr *)e->args.items[0])->loc, "where() needs a bool condition, got %s", t0);
        return poison(s, loc);
      }
      DType dt = arith_dtype(s, loc, "where()", x[1], x[2]);
      if (dt == DT_NONE) return poison(s, loc);
      if (dt == DT_I32) { /* both checked, in order */
        int f1 = i32_fits(s, x[1]);
        int f2 = i32_fits(s, x[2]);
        if (!f1 || !f2) return poison(s, loc);
      }
      CirType sh, sh2;
      if (!broadcast(s, loc, "where()", x[1]->ty, x[2]->ty, &sh)) return poison(s, loc);
      if (!broadcast(s, loc, "where()", x[0]->ty, sh, &sh2)) return poison(s, loc);
      sh2.dt = dt;
      return emit(s, op, sh2, loc, 3, x[0], x[1], x[2]);
    }
    case OK_MASK: {
      if (x[0]->ty.rank != 2) {
        ERR(loc, "%s needs a rank-2 tile, got %s", e->name, t0);
        return poison(s, loc);
      }
      long long diag = 0;
      if (n == 2 && !const_int(s, e->args.items[1], &diag, "the diagonal offset")) return poison(s, loc);
      CirType t = x[0]->ty;
      if (t.dt != DT_I32 && t.dt != DT_BOOL) t.dt = DT_F32;
      CirInst *in = emit(s, op, t, loc, 1, x[0]);
      /* an offset past the tile's extent keeps everything or nothing: saturate it there */
      long long lim = t.shape[0] > t.shape[1] ? t.shape[0] : t.shape[1];
      in->ival = diag > lim ? lim : diag < -lim ? -lim : diag;
      return in;
    }
    case OK_REDUCE:
    case OK_SCAN: {
      int axis;
      if (x[0]->ty.rank == 0) {
        ERR(loc, "%s needs a tile of rank 1 or 2, got a scalar", e->name);
        return poison(s, loc);
      }
      if (x[0]->ty.dt == DT_BOOL) {
        ERR(loc, "%s needs numbers, got %s", e->name, t0);
        return poison(s, loc);
      }
      if (!call_axis(s, e->args.items[1], x[0], &axis)) return poison(s, loc);
      CirType t = x[0]->ty;
      if (t.dt != DT_I32) t.dt = DT_F32;
      if (oi->kind == OK_REDUCE) {
        for (int j = axis; j + 1 < t.rank; j++) t.shape[j] = t.shape[j + 1];
        t.rank--;
        t.shape[t.rank] = 0;
      }
      CirInst *in = emit(s, op, t, loc, 1, x[0]);
      in->axis = axis;
      return in;
    }
    case OK_DECAY_TRI: {
      /* a column of log-decays: [n], or [n, 1] */
      CirType t = x[0]->ty;
      if (!is_float(t.dt) || t.rank == 0 || (t.rank == 2 && t.shape[1] != 1)) {
        ERR(((Expr *)e->args.items[0])->loc, "%s takes a column of log-decays, a float [n] or [n, 1] tile, got %s",
            e->name, t0);
        return poison(s, loc);
      }
      return emit(s, op, ty2(DT_F32, t.shape[0], t.shape[0]), loc, 1, x[0]);
    }
    case OK_SOLVE:
      if (x[0]->ty.rank != 2 || x[0]->ty.shape[0] != x[0]->ty.shape[1] || !is_float(x[0]->ty.dt)) {
        ERR(loc, "%s needs a square float tile, got %s", e->name, t0);
        return poison(s, loc);
      }
      return emit(s, op, (CirType){DT_F32, 2, {x[0]->ty.shape[0], x[0]->ty.shape[0]}}, loc, 1, x[0]);
    case OK_DECAY: {
      for (int i = 0; i < 3; i++) {
        if (x[i]->ty.rank != 2 || !is_float(x[i]->ty.dt)) {
          char ti[64];
          shape_str(ti, sizeof ti, x[i]->ty);
          ERR(((Expr *)e->args.items[i])->loc, "%s argument %d must be a rank-2 float tile, got %s", e->name,
              i + 1, ti);
          return poison(s, loc);
        }
        if (x[i]->ty.shape[0] != x[0]->ty.shape[0] || x[i]->ty.shape[1] != x[0]->ty.shape[1]) {
          char ti[64];
          shape_str(ti, sizeof ti, x[i]->ty);
          ERR(((Expr *)e->args.items[i])->loc, "shape mismatch in %s: argument %d is %s, argument 1 is %s",
              e->name, i + 1, ti, t0);
          return poison(s, loc);
        }
      }
      int c = x[0]->ty.shape[0];
      return emit(s, op, ty2(DT_F32, c, c), loc, 3, x[0], x[1], x[2]);
    }
    case OK_DECAY_MM: return decay_mm_call(s, e, op, x);
    default: break;
  }
  cake_die("unhandled builtin kind for '%s'", e->name);
}

static CirInst *expr(Sema *s, const Expr *e) {
  switch (e->kind) {
    case E_INT: return const_inst(s, e->loc, cint(e->ival));
    case E_FLOAT: return const_inst(s, e->loc, cfloat(e->fval));
    case E_NAME: return name_expr(s, e);
    case E_UNARY: {
      CirInst *a = expr(s, e->a);
      if (is_poison(a)) return poison(s, e->loc);
      if (e->op == '!') {
        if (a->ty.dt != DT_BOOL) {
          ERR(e->loc, "'!' needs a bool operand, got %s", dtype_name(a->ty.dt));
          return poison(s, e->loc);
        }
        return emit(s, OP_NOT, a->ty, e->loc, 1, a);
      }
      if (a->ty.dt == DT_BOOL) {
        ERR(e->loc, "unary '-' needs a number, got bool");
        return poison(s, e->loc);
      }
      if (a->op == OP_CONST) {
        if (a->is_int && a->ival == INT64_MIN) {
          ERR(e->loc, "integer overflow: -(%lld) does not fit in 64 bits", a->ival);
          return poison(s, e->loc);
        }
        return const_inst(s, e->loc, a->is_int ? cint(-a->ival) : cfloat(-a->fval));
      }
      CirType t = a->ty;
      if (is_float(t.dt)) t.dt = DT_F32;
      return emit(s, OP_NEG, t, e->loc, 1, a);
    }
    case E_BINARY: {
      CirInst *a = expr(s, e->a);
      CirInst *b = expr(s, e->b);
      CirOp op = binop_of(e->op);
      if (e->op == OR) {
        ERR(e->loc, "'or' gives the default of an optional tensor and must follow a load");
        return poison(s, e->loc);
      }
      if (op == OP_MATMUL) return matmul(s, e->loc, a, b);
      return binary(s, op, e->loc, a, b);
    }
    case E_CALL: return call_expr(s, e);
    case E_INDEX: return tile_index(s, e);
    case E_TRANSPOSE: {
      CirInst *a = expr(s, e->a);
      if (is_poison(a)) return poison(s, e->loc);
      if (a->ty.rank != 2) {
        char t[64];
        shape_str(t, sizeof t, a->ty);
        ERR(e->loc, "'.T' transposes a rank-2 tile, got %s", t);
        return poison(s, e->loc);
      }
      return emit(s, OP_TRANSPOSE, ty2(a->ty.dt, a->ty.shape[1], a->ty.shape[0]), e->loc, 1, a);
    }
    case E_CAST: {
      CirInst *a = expr(s, e->a);
      if (is_poison(a)) return poison(s, e->loc);
      if (a->ty.dt == DT_BOOL) {
        ERR(e->loc, "cannot convert bool to %s; use where(b, 1.0, 0.0)", dtype_name(e->dtype));
        return poison(s, e->loc);
      }
      CirType t = a->ty;
      t.dt = e->dtype;
      if (a->ty.dt == e->dtype) return a;
      return emit(s, OP_CAST, t, e->loc, 1, a);
    }
    case E_LOAD: return load_expr(s, e);
    case E_SLICE:
      ERR(e->loc, "':' is only meaningful inside an index");
      return poison(s, e->loc);
    case E_NONE:
      ERR(e->loc, "None is only meaningful inside an index");
      return poison(s, e->loc);
  }
  cake_die("unhandled expression kind %d", e->kind);
}

/* ------------------------------------------------------------------ */
/* statements                                                         */

static void stmts(Sema *s, const PtrVec *body);

static void assign_stmt(Sema *s, const Stmt *st) {
  CirInst *v = expr(s, st->value);
  Binding *b = lookup(s, st->name);
  if (b && b->is_grid) {
    ERR(st->name_loc, "cannot assign to %s index '%s'", b->v->op == OP_LOOPVAR ? "loop" : "grid", st->name);
    return;
  }
  if (!b) {
    Sym *y = find_sym(s, st->name);
    if (is_poison_sym(y)) return;
    if (y) {
      ERR(st->name_loc, "cannot assign to '%s', a %s of the program", st->name, sym_kind_name(y->kind));
      NOTE(y->loc, "'%s' is defined here", st->name);
      return;
    }
  }
  if (b && s->depth > 0 && b->depth < s->depth && !b->is_carry) {
    const char *what = s->scan && s->scan->counted ? "loop" : "scan";
    ERR(st->name_loc, "'%s' is defined outside the %s; only its carried values may be reassigned "
                      "inside it (add '%s' to the %s's carry list)", st->name, what, st->name, what);
    NOTE(b->loc, "'%s' is defined here", st->name);
    return;
  }
  if (b && b->is_carry && b->depth == s->depth && !is_poison(v) && !is_poison(b->v)) {
    CirType want = b->v->ty;
    if (want.dt != v->ty.dt || want.rank != v->ty.rank || want.shape[0] != v->ty.shape[0] ||
        want.shape[1] != v->ty.shape[1]) {
      char t1[64], t2[64];
      cir_type_str(t1, sizeof t1, want);
      cir_type_str(t2, sizeof t2, v->ty);
      ERR(st->value->loc, "carried value '%s' is %s, but this assigns %s; a carry keeps its type", st->name, t1,
          t2);
      b->v = poison(s, st->value->loc); /* assigned, wrongly: no second message */
      return;
    }
  }
  if (b && b->depth == s->depth) {
    b->v = v;
    b->loc = st->name_loc;
    return;
  }
  bind(s, st->name, v, st->name_loc);
}

/* Is v grid axis *axis, or a scan's chunk index over that axis' document? */
static int match_axis(const CirInst *v, const void *axis) {
  if (v->op == OP_CHUNKVAR && v->parent && !v->parent->all_chunks) v = v->parent->args[0];
  return v->op == OP_GRIDVAR && v->axis == *(const int *)axis;
}

/* Does value v depend on grid axis `axis` of the kernel? A scan's chunk
 * index depends on the document its scan walks. */
static int depends_on_axis(const Sema *s, const CirInst *v, int axis) {
  return find_operand(s, v, match_axis, &axis) != NULL;
}

/* Does index v tell the instances along grid axis `axis` apart: the axis'
 * index itself, or that plus, minus or times values that do not depend on
 * it (h * G + i)? Not through `/`, `%`, minimum or maximum (h / G is the
 * same for G instances), nor through a value both operands depend on. */
static int separates_axis(const Sema *s, const CirInst *v, int axis, int depth) {
  if (!v || depth > 64) return 0;
  if (v->op == OP_GRIDVAR) return v->axis == axis;
  if (v->op == OP_CHUNKVAR) return depends_on_axis(s, v, axis);
  if (v->op == OP_NEG) return separates_axis(s, v->args[0], axis, depth + 1);
  if (v->op == OP_ADD || v->op == OP_SUB || v->op == OP_MUL) {
    int d0 = depends_on_axis(s, v->args[0], axis), d1 = depends_on_axis(s, v->args[1], axis);
    if (d0 && d1) return 0;
    return d0 ? separates_axis(s, v->args[0], axis, depth + 1) : d1 ? separates_axis(s, v->args[1], axis, depth + 1) : 0;
  }
  return 0;
}

/* One owner per output element: a store whose window does not move with a
 * grid axis would be written by every instance along it, and what stays
 * would depend on their order. Cake has no atomics; a sum over grid points
 * goes through a tensor with one entry per point and a scan over it. */
static void check_store_owner(Sema *s, const CirInst *in, Loc loc) {
  for (int a = 0; a < s->k->naxes; a++) {
    int dep = 0, sep = 0;
    for (int i = 0; i < in->tensor->rank && !sep; i++)
      if (in->index[i].kind != IX_FULL) {
        dep |= depends_on_axis(s, in->index[i].v, a);
        sep |= separates_axis(s, in->index[i].v, a, 0);
      }
    const CirAxis *ax = &s->k->axes[a];
    if (sep || (ax->kind == GA_RANGE && ax->extent.sym < 0 && ax->extent.value == 1)) continue; /* one instance */
    if (dep)
      ERR(loc, "several instances of grid axis '%s' write this window of '%s' (its index depends on '%s' through "
               "'/', '%%', minimum or maximum, or twice), so the result would depend on their order; index the store "
               "by '%s' itself, plus or times other values (to sum over a group of '%s', loop over the group in one "
               "instance with `for i in range(...)`)",
          ax->var, in->tensor->name, ax->var, ax->var, ax->var);
    else
      ERR(loc, "every instance of grid axis '%s' writes this window of '%s', so the result would depend on their "
               "order; index the store by '%s' (there are no atomics: to sum over '%s', store one partial result per "
               "index and add them in a scan)",
          ax->var, in->tensor->name, ax->var, ax->var);
  }
}

static void store_stmt(Sema *s, const Stmt *st) {
  const Expr *t = st->target;
  CirInst *v = expr(s, st->value);
  CirTensor *ten = tensor_named(s, t->name, t->loc);
  if (!ten) return;
  if (ten->role == ROLE_IN) {
    ERR(t->loc, "cannot store to '%s', an input; declare it out, temp or save", ten->name);
    return;
  }
  CirInst *in = cir_inst_new(s->a, s->p, OP_STORE, ty0(DT_NONE), st->loc, 1);
  in->tensor = ten;
  CirType ty;
  if (!window(s, ten, &t->args, t->loc, in, &ty)) return;
  for (int i = 0; i < ten->rank; i++)
    if (in->index[i].shift) {
      const Expr *ix = t->args.items[i];
      ERR(ix->loc, "a shifted window can only be loaded: store to the chunk itself");
      return;
    }
  if (is_poison(v) || !i32_fits(s, v)) return;
  if (v->ty.dt != ty.dt) {
    ERR(st->value->loc, "dtype mismatch: '%s' holds %s, the stored value is %s; convert with `as %s`", ten->name,
        dtype_name(ty.dt), dtype_name(v->ty.dt), dtype_name(ty.dt));
    return;
  }
  int same = v->ty.rank == ty.rank;
  for (int i = 0; same && i < ty.rank; i++) same = v->ty.shape[i] == ty.shape[i];
  if (!same && v->ty.rank != 0) {
    char t1[64], t2[64];
    cir_type_str(t1, sizeof t1, ty);
    cir_type_str(t2, sizeof t2, v->ty);
    ERR(st->value->loc, "shape mismatch: the window of '%s' is %s, the stored value is %s", ten->name, t1, t2);
    return;
  }
  check_store_owner(s, in, t->loc);
  in->args[0] = v;
  in->ty = ty;
  cir_block_push(s->a, s->cur, in);
}

/* A scan over every chunk of every document (`for c in chunks carry ...`)
 * walks them in the chunk table's order; its FOR takes the chunk count. It
 * serves reductions over the whole sequence, so a grid over chunks or docs
 * around it would only repeat the same walk. */
static CirInst *all_chunks_count(Sema *s, const Stmt *st) {
  if (s->p->chunks_dim < 0) {
    ERR(st->doc_loc, "a scan over all chunks needs a `sequence` declaration");
    return NULL;
  }
  for (int i = 0; i < s->k->naxes; i++)
    if (s->k->axes[i].kind != GA_RANGE) {
      ERR(st->doc_loc, "a scan over all chunks walks the whole sequence, so its kernel cannot have a grid axis "
                       "over %s ('%s')",
          s->k->axes[i].kind == GA_CHUNKS ? "chunks" : "docs", s->k->axes[i].var);
      return NULL;
    }
  CirInst *n = emit(s, OP_DIMVAL, ty0(DT_I32), st->doc_loc, 0);
  n->dim = s->p->chunks_dim;
  return n;
}

/* `for i in range(n)`: n an i32 scalar (a dim, a constant, arithmetic on
 * them and on grid indices); the loop runs i = 0 .. n - 1 in order (no
 * iteration when n <= 0). */
static CirInst *range_count(Sema *s, const Stmt *st) {
  CirInst *n = expr(s, st->value);
  if (is_poison(n) || !i32_fits(s, n)) return NULL;
  if (n->ty.rank != 0 || n->ty.dt != DT_I32) {
    char ty[64];
    cir_type_str(ty, sizeof ty, n->ty);
    ERR(st->value->loc, "the count of `range` must be an i32 scalar (a dim, a constant, or arithmetic on them), got %s",
        ty);
    return NULL;
  }
  return n;
}

/* 0 when the scan's (or loop's) header is wrong (and its body was not analysed). */
static int for_stmt(Sema *s, const Stmt *st) {
  int counted = st->value != NULL;
  if (s->scan) {
    if (counted || st->before || s->scan->counted || s->scan->before) ERR(st->loc, "loops do not nest: this 'for' is inside another loop");
    else ERR(st->loc, "scans do not nest: this 'for' is inside another scan");
    return 0;
  }
  CirInst *first = NULL;
  if (counted) {
    first = range_count(s, st);
    if (!first) return 0;
  } else if (st->before == 3) { /* ends(): no fragment argument */
    if (s->p->ranks_dim < 0) {
      ERR(st->doc_loc, "a loop over `ends()` walks the fragments of every rank: it needs a context-parallel "
                       "program (a `ranks` declaration)");
      return 0;
    }
    if (!strcmp(st->name, st->name2)) {
      ERR(st->name2_loc, "the rank and the fragment of an `ends` loop need two different names");
      return 0;
    }
    first = const_inst(s, st->loc, cint(0));
  } else if (st->before) {
    if (s->p->ranks_dim < 0) {
      ERR(st->doc_loc, "a loop over `%s(%s)` walks the fragments of other ranks: it needs a context-parallel "
                       "program (a `ranks` declaration)", st->before == 2 ? "after" : "before", st->doc);
      return 0;
    }
    Binding *db = lookup(s, st->doc);
    if (!db || !db->is_grid || !is_docs_index(db->v)) {
      ERR(st->doc_loc, "'%s' is not a grid index over docs; `%s(n)` takes a fragment, so the kernel needs an "
                       "axis like `n in docs`", st->doc, st->before == 2 ? "after" : "before");
      return 0;
    }
    if (!strcmp(st->name, st->name2)) {
      ERR(st->name2_loc, "the rank and the fragment of a `%s` loop need two different names",
          st->before == 2 ? "after" : "before");
      return 0;
    }
    first = db->v;
  } else if (st->doc) {
    Binding *db = lookup(s, st->doc);
    if (!db || !db->is_grid || db->v->ival != GA_DOCS) {
      ERR(st->doc_loc, "'%s' is not a grid index over docs; a scan walks the chunks of one document, "
                       "so the kernel needs an axis like `n in docs`", st->doc);
      return 0;
    }
    first = db->v;
  } else {
    first = all_chunks_count(s, st);
    if (!first) return 0;
  }
  int nc = st->carries.len;
  CirInst *f = cir_inst_new(s->a, s->p, OP_FOR, ty0(DT_NONE), st->loc, nc + 1);
  f->args[0] = first;
  f->counted = counted;
  f->all_chunks = st->doc == NULL && !counted;
  f->before = st->before;
  f->reverse = st->reverse;
  f->body = arena_alloc(s->a, sizeof(CirBlock));
  Binding *carry_b[CAKE_MAX_CARRIES];
  if (nc > CAKE_MAX_CARRIES) {
    ERR(((Ident *)st->carries.items[CAKE_MAX_CARRIES])->loc, "a scan carries at most %d values; this is the %dth",
        CAKE_MAX_CARRIES, CAKE_MAX_CARRIES + 1);
    return 0;
  }
  for (int i = 0; i < nc; i++) {
    const Ident *id = st->carries.items[i];
    Binding *b = lookup(s, id->name);
    if (!b) {
      ERR(id->loc, "carried value '%s' must be given its initial value before the scan", id->name);
      return 0;
    }
    if (b->is_grid) {
      ERR(id->loc, "grid index '%s' cannot be carried", id->name);
      return 0;
    }
    for (int j = 0; j < i; j++)
      if (!strcmp(((Ident *)st->carries.items[j])->name, id->name)) {
        ERR(id->loc, "'%s' is carried twice", id->name);
        return 0;
      }
    if (is_poison(b->v)) return 0;
    f->args[i + 1] = b->v;
  }
  cir_block_push(s->a, s->cur, f);

  CirBlock *outer = s->cur;
  Binding *outer_scope = s->scope;
  s->cur = f->body;
  s->scan = f;
  s->depth++;
  CirInst *cv = emit(s, counted || st->before ? OP_LOOPVAR : OP_CHUNKVAR, ty0(DT_I32), st->name_loc, 0);
  cv->parent = f;
  Binding *cb = bind(s, st->name, cv, st->name_loc);
  cb->is_grid = 1;
  if (st->before) { /* the second name: the fragment's index on its rank */
    CirInst *sv = emit(s, OP_LOOPVAR, ty0(DT_I32), st->name2_loc, 0);
    sv->parent = f;
    sv->axis = 1;
    bind(s, st->name2, sv, st->name2_loc)->is_grid = 1;
  }
  for (int i = 0; i < nc; i++) {
    const Ident *id = st->carries.items[i];
    CirInst *c = emit(s, OP_CARRY, f->args[i + 1]->ty, id->loc, 0);
    c->axis = i;
    c->parent = f;
    carry_b[i] = bind(s, id->name, c, id->loc);
    carry_b[i]->is_carry = 1;
  }
  stmts(s, &st->body);
  CirInst *y = cir_inst_new(s->a, s->p, OP_YIELD, ty0(DT_NONE), st->loc, nc); /* operands below */
  cir_block_push(s->a, s->cur, y);
  y->parent = f;
  for (int i = 0; i < nc; i++) {
    y->args[i] = carry_b[i]->v;
    if (carry_b[i]->v->op == OP_CARRY && carry_b[i]->v->parent == f) {
      const Ident *id = st->carries.items[i];
      ERR(id->loc, "carried value '%s' is never assigned in the %s body", id->name, counted ? "loop" : "scan");
    }
  }
  s->depth--;
  s->scan = NULL;
  s->scope = outer_scope;
  s->cur = outer;
  for (int i = 0; i < nc; i++) {
    const Ident *id = st->carries.items[i];
    CirInst *r = emit(s, OP_FORRES, f->args[i + 1]->ty, id->loc, 1, f);
    r->axis = i;
    r->parent = f;
    Binding *b = lookup(s, id->name);
    b->v = r;
  }
  return 1;
}

/* A name a failed statement would have assigned: poison from here on, so
 * that its uses report nothing. */
static void poison_binding(Sema *s, const char *name, Loc loc) {
  Binding *b = lookup(s, name);
  if (b && b->is_grid) return;
  if (b && b->depth == s->depth) {
    b->v = poison(s, loc);
    return;
  }
  if (!b && find_sym(s, name)) return;
  bind(s, name, poison(s, loc), loc);
}

/* Every name the statements may assign (both branches of an `if`, the
 * carries of a scan). */
static void poison_assigned(Sema *s, const PtrVec *body) {
  for (int i = 0; i < body->len; i++) {
    const Stmt *st = body->items[i];
    switch (st->kind) {
      case S_ASSIGN: poison_binding(s, st->name, st->name_loc); break;
      case S_IF:
        poison_assigned(s, &st->body);
        poison_assigned(s, &st->else_body);
        break;
      case S_FOR:
        for (int j = 0; j < st->carries.len; j++) {
          const Ident *id = st->carries.items[j];
          poison_binding(s, id->name, id->loc);
        }
        break;
      case S_STORE: break;
    }
  }
}

static void stmts(Sema *s, const PtrVec *body) {
  int outer_in = s->in_stmt, outer_failed = s->stmt_failed;
  for (int i = 0; i < body->len; i++) {
    const Stmt *st = body->items[i];
    s->in_stmt = 1;
    s->stmt_failed = 0;
    switch (st->kind) {
      case S_ASSIGN: assign_stmt(s, st); break;
      case S_STORE: store_stmt(s, st); break;
      case S_FOR: {
        PtrVec one = {(void **)&body->items[i], 1, 1};
        if (!for_stmt(s, st)) poison_assigned(s, &one); /* the carries */
        break;
      }
      case S_IF: {
        /* a static if: only the chosen branch is analysed; its names stay visible after it */
        int c = cond_eval(s, st->value);
        if (c >= 0) {
          stmts(s, c ? &st->body : &st->else_body);
        } else {
          poison_assigned(s, &st->body);
          poison_assigned(s, &st->else_body);
        }
        break;
      }
    }
  }
  s->in_stmt = outer_in;
  s->stmt_failed = outer_failed;
}

/* ------------------------------------------------------------------ */
/* declarations                                                       */

/* One axis of a kernel's grid; 0 after reporting. */
static int grid_axis(Sema *s, const Axis *ax, CirAxis *ca, int *nchunks, int *ndocs) {
  ca->var = ax->var.name;
  ca->loc = ax->loc;
  if (ax->kind == AX_CHUNKS || ax->kind == AX_DOCS) {
    if (!s->p->chunk) {
      ERR(ax->loc, "a grid over %s needs a `sequence` declaration", ax->kind == AX_CHUNKS ? "chunks" : "docs");
      return 0;
    }
    if (ax->kind == AX_DOCS && s->p->docs_dim < 0) {
      ERR(ax->loc, "a grid over docs needs documents: declare `sequence T, docs N, chunk C`");
      return 0;
    }
    if ((ax->kind == AX_CHUNKS ? ++*nchunks : ++*ndocs) > 1) {
      ERR(ax->loc, "a kernel has at most one grid axis over %s", ax->kind == AX_CHUNKS ? "chunks" : "docs");
      return 0;
    }
    ca->kind = ax->kind == AX_CHUNKS ? GA_CHUNKS : GA_DOCS;
    return 1;
  }
  ca->kind = GA_RANGE;
  const Expr *ex = ax->extent;
  if (!(ex->kind == E_BINARY && ex->op == '/')) return extent_of(s, ex, &ca->extent);
  long long whole, blk;
  if (!const_int(s, ex->a, &whole, "a blocked axis' extent") || !const_int(s, ex->b, &blk, "the block size")) return 0;
  if (whole > CAKE_MAX_EXTENT) {
    ERR(ex->a->loc, "extent must be in [1, 2^31 - 1], got %lld", whole);
    return 0;
  }
  if (blk <= 0 || whole <= 0 || whole % blk) {
    ERR(ex->loc, "blocked axis %lld / %lld: the block size must divide the extent", whole, blk);
    return 0;
  }
  ca->block = (int)blk;
  ca->extent = (CirExtent){-1, whole / blk};
  return 1;
}

static void kernel_decl(Sema *s, const Decl *d, CirKernel *k) {
  s->k = k;
  s->cur = &k->body;
  s->scope = NULL;
  s->depth = 0;
  s->scan = NULL;
  k->threads = 128;
  if (d->threads) {
    long long t;
    if (const_int(s, d->threads, &t, "the thread count")) {
      if (t < 32 || t > 1024 || t % 32) ERR(d->threads->loc, "threads must be a multiple of 32 in [32, 1024], got %lld", t);
      else k->threads = (int)t;
    }
  }
  if (d->per_sm) {
    long long n;
    if (const_int(s, d->per_sm, &n, "the blocks per multiprocessor")) {
      if (n != 1 && n != 2) ERR(d->per_sm->loc, "per_sm must be 1 or 2 (blocks per multiprocessor), got %lld", n);
      else k->per_sm = (int)n;
    }
  }
  if (d->axes.len > CIR_MAX_AXES) {
    ERR(d->loc, "a kernel grid has at most %d axes, got %d", CIR_MAX_AXES, d->axes.len);
    return;
  }
  int nchunks = 0, ndocs = 0;
  for (int i = 0; i < d->axes.len; i++) {
    const Axis *ax = d->axes.items[i];
    if (!grid_axis(s, ax, &k->axes[k->naxes], &nchunks, &ndocs)) {
      /* the axis' index: poison in the body, so its uses report nothing */
      bind(s, ax->var.name, poison(s, ax->var.loc), ax->var.loc)->is_grid = 1;
      continue;
    }
    CirAxis *ca = &k->axes[k->naxes];
    for (int j = 0; j < k->naxes; j++)
      if (!strcmp(k->axes[j].var, ca->var)) ERR(ax->var.loc, "grid index '%s' is declared twice", ca->var);
    Sym *y = find_sym(s, ca->var);
    if (y && !is_poison_sym(y)) {
      ERR(ax->var.loc, "grid index '%s' hides the %s of the same name", ca->var, sym_kind_name(y->kind));
      bind(s, ax->var.name, poison(s, ax->var.loc), ax->var.loc)->is_grid = 1;
      continue;
    }
    CirInst *gv = emit(s, OP_GRIDVAR, ty0(DT_I32), ax->var.loc, 0);
    gv->axis = k->naxes;
    gv->ival = ca->kind;
    Binding *b = bind(s, ca->var, gv, ax->var.loc);
    b->is_grid = 1;
    k->naxes++;
  }
  stmts(s, &d->body);
  cir_count_uses(k);
}

/* A program-level name whose declaration failed: poison from here on. */
static void poison_name(Sema *s, const Ident *id) {
  if (find_sym(s, id->name)) return;
  Sym *y = arena_alloc(s->a, sizeof(Sym));
  y->name = id->name;
  y->kind = SYM_POISON;
  y->loc = id->loc;
  ptrvec_push(s->a, &s->syms, y);
}

/* Every name the declarations define (both branches of an `if`): after an
 * `if` whose condition does not evaluate, nothing is known about them. */
static void poison_decl_names(Sema *s, const PtrVec *decls) {
  for (int i = 0; i < decls->len; i++) {
    const Decl *d = decls->items[i];
    switch (d->kind) {
      case D_IF:
        poison_decl_names(s, &d->body);
        poison_decl_names(s, &d->else_body);
        break;
      case D_DIM:
      case D_TENSOR:
        for (int j = 0; j < d->names.len; j++) poison_name(s, d->names.items[j]);
        break;
      case D_CONST:
      case D_PARAM:
      case D_KERNEL:
      case D_ENTRY: poison_name(s, &d->name); break;
      case D_SEQUENCE: s->lost_sequence = 1; break;
      case D_EXCHANGE: poison_name(s, &d->name); break;
      case D_RANKS:
      case D_OPTION:
      case D_REQUIRE: break; /* defines no name */
    }
  }
}

/* 0 when the declaration is wrong (reported). */
static int tensor_decl_ok(Sema *s, const Decl *d) {
  if (d->shape.len > CIR_MAX_TENSOR_RANK) {
    ERR(d->loc, "tensors have at most %d axes", CIR_MAX_TENSOR_RANK);
    return 0;
  }
  if (d->dtype == DT_BOOL) {
    ERR(d->dtype_loc, "tensors cannot hold bool");
    return 0;
  }
  CirExtent shape[CIR_MAX_TENSOR_RANK];
  long long const_elems = 1; /* each factor <= 2^31 - 1, the product checked against 2^40: no overflow */
  for (int i = 0; i < d->shape.len; i++) {
    if (!extent_of(s, d->shape.items[i], &shape[i])) return 0;
    if (shape[i].sym < 0) const_elems *= shape[i].value;
    if (const_elems > CAKE_MAX_TENSOR_CONST_ELEMS) {
      ERR(((Expr *)d->shape.items[i])->loc, "the constant extents of a tensor multiply to more than 2^40 elements");
      return 0;
    }
  }
  if (d->optional && d->role != ROLE_IN && d->role != ROLE_OUT) {
    ERR(d->loc, "only in and out tensors can be optional");
    return 0;
  }
  for (int i = 0; i < d->names.len; i++) {
    const Ident *id = d->names.items[i];
    if (s->p->ntensors == CAKE_MAX_TENSORS) {
      ERR(id->loc, "a program has at most %d tensors; this is the %dth", CAKE_MAX_TENSORS, CAKE_MAX_TENSORS + 1);
      return 0;
    }
    if (!strcmp(id->name, "chunk_table") || !strcmp(id->name, "doc_table")) {
      /* the runtime's tables in the workspace go by these names (kernel arguments, cake_plan_item) */
      ERR(id->loc, "'%s' is reserved: it names the runtime's %s table in the workspace; choose another tensor name",
          id->name, id->name[0] == 'c' ? "chunk" : "document");
      continue;
    }
    Sym *y = add_sym(s, id->name, SYM_TENSOR, id->loc);
    if (!y) continue;
    CirTensor *t = arena_alloc(s->a, sizeof(CirTensor));
    t->name = id->name;
    t->role = d->role;
    t->dtype = d->dtype;
    t->rank = d->shape.len;
    memcpy(t->shape, shape, sizeof(CirExtent) * (size_t)t->rank);
    t->optional = d->optional;
    t->loc = id->loc;
    t->index = s->p->ntensors;
    y->ptr = t;
    s->p->tensors[s->p->ntensors++] = t;
  }
  return 1;
}

static void tensor_decl(Sema *s, const Decl *d) {
  if (!tensor_decl_ok(s, d))
    for (int i = 0; i < d->names.len; i++) poison_name(s, d->names.items[i]);
}

static int count_decls_in(const PtrVec *decls, DeclKind kind, int per_name) {
  int n = 0;
  for (int i = 0; i < decls->len; i++) {
    const Decl *d = decls->items[i];
    if (d->kind == D_IF) n += count_decls_in(&d->body, kind, per_name) + count_decls_in(&d->else_body, kind, per_name);
    else if (d->kind == kind) n += per_name ? d->names.len : 1;
  }
  return n;
}

static int count_decls(const Program *ast, DeclKind kind, int per_name) {
  return count_decls_in(&ast->decls, kind, per_name);
}

int cake_program_options(Arena *arena, Diag *diag, const Program *ast, CirOption **out) {
  int n = count_decls(ast, D_OPTION, 0), k = 0, errors0 = diag->errors;
  CirOption *opts = arena_alloc(arena, sizeof(CirOption) * (size_t)(n + 1));
  for (int i = 0; i < ast->decls.len; i++) {
    const Decl *d = ast->decls.items[i];
    if (d->kind != D_OPTION) continue;
    CirOption *o = &opts[k];
    o->name = d->name.name;
    o->loc = d->name.loc;
    o->def = d->value->name;
    o->nvalues = d->names.len;
    o->values = arena_alloc(arena, sizeof(char *) * (size_t)o->nvalues);
    int has_def = 0;
    for (int j = 0; j < d->names.len; j++) {
      const Ident *v = d->names.items[j];
      for (int m = 0; m < j; m++)
        if (!strcmp(o->values[m], v->name)) diag_error(diag, v->loc, "option '%s' lists '%s' twice", o->name, v->name);
      o->values[j] = v->name;
      has_def |= !strcmp(v->name, o->def);
    }
    if (!has_def)
      diag_error(diag, d->value->loc, "the default '%s' of option '%s' is not one of its values", o->def, o->name);
    for (int m = 0; m < k; m++)
      if (!strcmp(opts[m].name, o->name)) diag_error(diag, o->loc, "option '%s' is declared twice", o->name);
    if (k == CAKE_MAX_OPTIONS) diag_error(diag, o->loc, "a program may declare at most %d options", CAKE_MAX_OPTIONS);
    k++;
  }
  if (k != n) {
    /* an option inside `if` would make the set of variants depend on itself */
    diag_error(diag, ast->name.loc, "options must be declared at the top level, outside any `if`");
  }
  *out = opts;
  return diag->errors == errors0 ? k : -1;
}

/* `ranks R [, fragments F]`: R (and F) must be dims declared before, and
 * the program a sequence of documents, whose docs are then this rank's
 * fragments; F is the most fragments any rank holds (the runtime sets it),
 * the extent of per-fragment data that ranks exchange. */
static void ranks_decl(Sema *s, const Decl *d, const Decl *seq) {
  CirProgram *p = s->p;
  if (p->ranks_dim >= 0) {
    ERR(d->loc, "a program has one `ranks` declaration");
    return;
  }
  if (!seq || p->docs_dim < 0) {
    if (!s->lost_sequence)
      ERR(d->loc, "a context-parallel program splits a sequence of documents: declare `sequence T, docs N, chunk C` "
                  "before `ranks`");
    return;
  }
  const Ident *ids[2] = {&d->name, d->frags.name ? &d->frags : NULL};
  int idx[2] = {-1, -1};
  for (int i = 0; i < 2 && ids[i]; i++) {
    Sym *y = find_sym(s, ids[i]->name);
    if (is_poison_sym(y)) return;
    if (!y || y->kind != SYM_DIM) {
      ERR(ids[i]->loc, "'%s' must be a dim declared before `ranks`", ids[i]->name);
      return;
    }
    if (p->dims[y->index].role != DIM_USER) {
      ERR(ids[i]->loc, "'%s' is already the sequence's %s dim", ids[i]->name,
          p->dims[y->index].role == DIM_TOKENS ? "tokens" : p->dims[y->index].role == DIM_DOCS ? "docs" : "ranks");
      return;
    }
    idx[i] = y->index;
  }
  if (idx[1] >= 0 && idx[1] == idx[0]) {
    ERR(d->frags.loc, "the ranks and the fragments must be different dims");
    return;
  }
  p->ranks_dim = idx[0];
  p->dims[idx[0]].role = DIM_RANKS;
  if (idx[1] >= 0) {
    p->frags_dim = idx[1];
    p->dims[idx[1]].role = DIM_FRAGMENTS;
  }
}

/* `exchange NAME = halo(SRC, B, A) -> DST`: SRC a token tensor (first axis
 * the tokens dim) of any role, DST a temp [F, B + A] + SRC's other extents,
 * one dtype; B, A constants in [0, C], not both 0; one halo per source. The
 * shifted windows of SRC read the other ranks' tokens through DST. */
static void halo_decl(Sema *s, const Decl *d) {
  CirProgram *p = s->p;
  if (d->xargs.len != 2) {
    ERR(d->xop.loc, "halo takes its source and two widths, the tokens before each fragment and after it: "
                    "`halo(x, 3, 0)`");
    poison_name(s, &d->name);
    return;
  }
  long long w[2];
  for (int i = 0; i < 2; i++) {
    const Expr *e = d->xargs.items[i];
    if (!const_int(s, e, &w[i], i ? "the tokens after" : "the tokens before")) {
      poison_name(s, &d->name);
      return;
    }
    if (w[i] < 0 || w[i] > p->chunk) {
      ERR(e->loc, "a halo is at most a chunk wide (0 to %d tokens), not %lld", p->chunk, w[i]);
      poison_name(s, &d->name);
      return;
    }
  }
  if (!w[0] && !w[1]) {
    ERR(d->xop.loc, "a halo of no tokens before and none after exchanges nothing");
    poison_name(s, &d->name);
    return;
  }
  CirTensor *t[2] = {0};
  const Ident *ids[2] = {&d->xsrc, &d->xdst};
  for (int i = 0; i < 2; i++) {
    Sym *y = find_sym(s, ids[i]->name);
    if (is_poison_sym(y)) {
      poison_name(s, &d->name);
      return;
    }
    if (!y || y->kind != SYM_TENSOR) {
      ERR(ids[i]->loc, "'%s' must be a tensor declared before the exchange", ids[i]->name);
      poison_name(s, &d->name);
      return;
    }
    t[i] = y->ptr;
  }
  CirTensor *src = t[0], *dst = t[1];
  if (src->optional) {
    ERR(d->xsrc.loc, "'%s' is optional: a halo's source must be present on every rank", src->name);
    poison_name(s, &d->name);
    return;
  }
  if (src->shape[0].sym != p->tokens_dim || src->shape[0].sym < 0) {
    ERR(d->xsrc.loc, "a halo exchanges tokens: the first axis of '%s' must be the token dim%s%s", src->name,
        p->tokens_dim >= 0 ? " " : "", p->tokens_dim >= 0 ? p->dims[p->tokens_dim].name : "");
    poison_name(s, &d->name);
    return;
  }
  if (dst->role != ROLE_TEMP) {
    ERR(d->xdst.loc, "an exchange's destination is a temp; '%s' is %s", dst->name, role_name(dst->role));
    poison_name(s, &d->name);
    return;
  }
  int ok = src != dst && src->dtype == dst->dtype && dst->rank == src->rank + 1 && p->frags_dim >= 0 &&
           dst->shape[0].sym == p->frags_dim && dst->shape[1].sym < 0 && dst->shape[1].value == w[0] + w[1];
  for (int i = 1; ok && i < src->rank; i++)
    ok = dst->shape[i + 1].sym == src->shape[i].sym && (src->shape[i].sym >= 0 || dst->shape[i + 1].value == src->shape[i].value);
  if (!ok) {
    ERR(d->xdst.loc, "halo's destination must be [%s, %lld] followed by the source's extents after its first, with "
                     "its dtype (%s): '%s' is not",
        p->frags_dim >= 0 ? p->dims[p->frags_dim].name : "F", w[0] + w[1], dtype_name(src->dtype), dst->name);
    poison_name(s, &d->name);
    return;
  }
  for (int i = 0; i < p->nexchanges; i++)
    if (p->exchanges[i]->exchange == XCHG_HALO && p->exchanges[i]->xsrc == src) {
      ERR(d->xsrc.loc, "'%s' already has a halo ('%s'); give it one, as wide as its shifted windows need",
          src->name, p->exchanges[i]->name);
      poison_name(s, &d->name);
      return;
    }
  CirKernel *k = arena_alloc(s->a, sizeof(CirKernel));
  k->name = d->name.name;
  k->loc = d->name.loc;
  k->exchange = XCHG_HALO;
  k->xsrc = src;
  k->xdst = dst;
  k->xbefore = (int)w[0];
  k->xafter = (int)w[1];
  Sym *y = add_sym(s, k->name, SYM_KERNEL, d->name.loc);
  if (!y) return;
  y->ptr = k;
  k->index = p->nexchanges;
  p->exchanges[p->nexchanges++] = k;
}

/* `exchange NAME = all_gather(SRC) -> DST`: SRC and DST temps declared
 * before, DST = [R] + SRC's shape, the same dtype; SRC's shape the same on
 * every rank (no tokens, docs or chunks extent). `send_next(SRC) -> DST`
 * (`send_prev`): rank r's SRC lands in rank r + 1's (r - 1's) DST, which
 * has SRC's shape and dtype; the first (last) rank's DST reads 0. */
static void exchange_decl(Sema *s, const Decl *d) {
  CirProgram *p = s->p;
  if (p->ranks_dim < 0) {
    ERR(d->loc, "an exchange passes data between ranks: it needs a context-parallel program (a `ranks` declaration "
                "before it)");
    poison_name(s, &d->name);
    return;
  }
  if (!strcmp(d->xop.name, "halo")) {
    halo_decl(s, d);
    return;
  }
  XchgOp op = !strcmp(d->xop.name, "all_gather") ? XCHG_ALL_GATHER
             : !strcmp(d->xop.name, "send_next") ? XCHG_SEND_NEXT
             : !strcmp(d->xop.name, "send_prev") ? XCHG_SEND_PREV
                                                 : XCHG_NONE;
  if (op == XCHG_NONE) {
    ERR(d->xop.loc, "unknown exchange '%s' (there are `all_gather`, `halo`, `send_next` and `send_prev`)", d->xop.name);
    poison_name(s, &d->name);
    return;
  }
  const char *opn = xchg_op_name(op);
  int gather = op == XCHG_ALL_GATHER;
  if (d->xargs.len) {
    ERR(((const Expr *)d->xargs.items[0])->loc, "%s takes only its source: `%s(%s)`", opn, opn, d->xsrc.name);
    poison_name(s, &d->name);
    return;
  }
  CirTensor *t[2] = {0};
  const Ident *ids[2] = {&d->xsrc, &d->xdst};
  for (int i = 0; i < 2; i++) {
    Sym *y = find_sym(s, ids[i]->name);
    if (is_poison_sym(y)) {
      poison_name(s, &d->name);
      return;
    }
    if (!y || y->kind != SYM_TENSOR) {
      ERR(ids[i]->loc, "'%s' must be a tensor declared before the exchange", ids[i]->name);
      poison_name(s, &d->name);
      return;
    }
    t[i] = y->ptr;
    if (t[i]->role != ROLE_TEMP) {
      ERR(ids[i]->loc, "an exchange's buffers are temps; '%s' is %s", t[i]->name, role_name(t[i]->role));
      poison_name(s, &d->name);
      return;
    }
  }
  CirTensor *src = t[0], *dst = t[1];
  int lead = gather ? 1 : 0; /* all_gather's destination starts with [R] */
  int ok = src != dst && src->dtype == dst->dtype && dst->rank == src->rank + lead && dst->rank <= CIR_MAX_TENSOR_RANK &&
           (!gather || dst->shape[0].sym == p->ranks_dim);
  for (int i = 0; ok && i < src->rank; i++)
    ok = dst->shape[i + lead].sym == src->shape[i].sym &&
         (src->shape[i].sym >= 0 || dst->shape[i + lead].value == src->shape[i].value);
  if (!ok) {
    if (gather)
      ERR(d->xdst.loc, "all_gather's destination must be [%s] followed by the source's shape, with its dtype (%s): "
                       "'%s' is not", p->dims[p->ranks_dim].name, dtype_name(src->dtype), dst->name);
    else
      ERR(d->xdst.loc, "%s's destination must have the source's shape and dtype (%s): '%s' has not", opn,
          dtype_name(src->dtype), dst->name);
    poison_name(s, &d->name);
    return;
  }
  for (int i = 0; i < src->rank; i++) {
    int sym = src->shape[i].sym;
    if (sym >= 0 && (p->dims[sym].role == DIM_TOKENS || p->dims[sym].role == DIM_DOCS || p->dims[sym].role == DIM_CHUNKS)) {
      ERR(d->xsrc.loc, "%s sends the same number of bytes from every rank, but '%s' has an extent of %s, "
                       "which differs between ranks (per-fragment data has the extent of the fragments dim of `ranks R, fragments F`)",
          opn, src->name, p->dims[sym].name);
      poison_name(s, &d->name);
      return;
    }
  }
  CirKernel *k = arena_alloc(s->a, sizeof(CirKernel));
  k->name = d->name.name;
  k->loc = d->name.loc;
  k->exchange = op;
  k->xsrc = src;
  k->xdst = dst;
  Sym *y = add_sym(s, k->name, SYM_KERNEL, d->name.loc);
  if (!y) return;
  y->ptr = k;
  k->index = p->nexchanges;
  p->exchanges[p->nexchanges++] = k;
}

/* Pass 1 over declarations: program-level names, in order (a name is
 * usable after its declaration); `if` picks a branch by the options. The
 * declarations that apply are collected for pass 2. */
static void decls_pass1(Sema *s, const PtrVec *decls, PtrVec *active, const Decl **seq) {
  CirProgram *p = s->p;
  for (int i = 0; i < decls->len; i++) {
    const Decl *d = decls->items[i];
    switch (d->kind) {
      case D_IF: {
        int c = cond_eval(s, d->value);
        if (c >= 0) {
          decls_pass1(s, c ? &d->body : &d->else_body, active, seq);
        } else {
          poison_decl_names(s, &d->body);
          poison_decl_names(s, &d->else_body);
        }
        break;
      }
      case D_OPTION: break; /* bound before pass 1 */
      case D_DIM:
        for (int j = 0; j < d->names.len; j++) {
          const Ident *id = d->names.items[j];
          Sym *y = add_sym(s, id->name, SYM_DIM, id->loc);
          if (!y) continue;
          y->index = p->ndims;
          p->dims[p->ndims++] = (CirDim){id->name, DIM_USER, id->loc};
        }
        break;
      case D_CONST: {
        CVal v;
        if (!const_eval(s, d->value, &v)) {
          poison_name(s, &d->name);
          break;
        }
        Sym *y = add_sym(s, d->name.name, SYM_CONST, d->name.loc);
        if (y) y->value = v;
        break;
      }
      case D_SEQUENCE: {
        if (*seq) {
          ERR(d->loc, "a program has one sequence declaration");
          NOTE((*seq)->loc, "the first one is here");
          break;
        }
        *seq = d;
        Sym *t = find_sym(s, d->seq_tokens.name);
        if (is_poison_sym(t)) {
          s->lost_sequence = 1;
          break;
        }
        if (!t || t->kind != SYM_DIM) {
          ERR(d->seq_tokens.loc, "'%s' must be a dim declared before the sequence", d->seq_tokens.name);
          break;
        }
        if (d->seq_docs.name) {
          Sym *n = find_sym(s, d->seq_docs.name);
          if (is_poison_sym(n)) {
            s->lost_sequence = 1;
            break;
          }
          if (!n || n->kind != SYM_DIM) {
            ERR(d->seq_docs.loc, "'%s' must be a dim declared before the sequence", d->seq_docs.name);
            break;
          }
          if (n == t) {
            ERR(d->seq_docs.loc, "tokens and docs must be different dims");
            break;
          }
          p->docs_dim = n->index;
          p->dims[n->index].role = DIM_DOCS;
        }
        long long c;
        if (!const_int(s, d->seq_chunk, &c, "the chunk size")) break;
        if (c < 16 || c > 256 || c % 16) {
          ERR(d->seq_chunk->loc, "the chunk size must be a multiple of 16 in [16, 256], got %lld", c);
          break;
        }
        p->tokens_dim = t->index;
        p->dims[t->index].role = DIM_TOKENS;
        p->chunk = (int)c;
        /* the number of chunks, an extent for per-chunk tensors (`chunks`) */
        p->chunks_dim = p->ndims;
        p->dims[p->ndims++] = (CirDim){"chunks", DIM_CHUNKS, d->loc};
        break;
      }
      case D_TENSOR: tensor_decl(s, d); break;
      case D_PARAM: {
        if (d->dtype != DT_F32 && d->dtype != DT_I32) {
          ERR(d->dtype_loc, "a parameter is f32 or i32, got %s", dtype_name(d->dtype));
          poison_name(s, &d->name);
          break;
        }
        CirParam *pa = arena_alloc(s->a, sizeof(CirParam));
        pa->name = d->name.name;
        pa->dtype = d->dtype;
        pa->loc = d->name.loc;
        if (d->value) {
          CVal v;
          if (!const_eval(s, d->value, &v)) {
            poison_name(s, &d->name);
            break;
          }
          if (d->dtype == DT_I32 && (!v.is_int || v.i < INT32_MIN || v.i > INT32_MAX)) {
            ERR(d->value->loc, "the default of an i32 parameter must be an integer constant that fits in i32");
            poison_name(s, &d->name);
            break;
          }
          if (!isfinite(cnum(v)) || (d->dtype == DT_F32 && fabs(cnum(v)) > FLT_MAX)) { /* as the loader checks */
            ERR(d->value->loc, "the default of a parameter must be a finite number (within the f32 range for f32)");
            poison_name(s, &d->name);
            break;
          }
          pa->def = cnum(v);
          pa->has_default = 1;
        }
        Sym *y = add_sym(s, pa->name, SYM_PARAM, d->name.loc);
        if (!y) break;
        y->ptr = pa;
        pa->index = p->nparams;
        p->params[p->nparams++] = pa;
        break;
      }
      case D_KERNEL: {
        CirKernel *k = arena_alloc(s->a, sizeof(CirKernel));
        k->name = d->name.name;
        k->loc = d->name.loc;
        Sym *y = add_sym(s, k->name, SYM_KERNEL, d->name.loc);
        if (!y) break;
        y->ptr = k;
        k->index = p->nkernels;
        p->kernels[p->nkernels++] = k;
        ptrvec_push(s->a, active, (void *)d);
        break;
      }
      case D_ENTRY: ptrvec_push(s->a, active, (void *)d); break;
      case D_REQUIRE: require_decl(s, d); break;
      case D_RANKS: ranks_decl(s, d, *seq); break;
      case D_EXCHANGE: exchange_decl(s, d); break;
    }
  }
}

/* Every shifted load in `b` that reads through a halo is of a halo run
 * before stage `at` of entry `en` (its destination holds nothing before). */
static void check_halo_loads(Sema *s, const CirEntry *en, int at, const CirBlock *b) {
  for (int i = 0; i < b->len; i++) {
    const CirInst *in = b->insts[i];
    if (in->body) check_halo_loads(s, en, at, in->body);
    for (int j = 0; in->op == OP_LOAD && j < in->tensor->rank; j++) {
      const CirTensor *h = in->index[j].halo;
      if (!h) continue;
      int seen = 0;
      for (int q = 0; q < at; q++) seen |= en->stages[q]->exchange == XCHG_HALO && en->stages[q]->xdst == h;
      for (int q = 0; q < s->p->nexchanges && !seen; q++) {
        const CirKernel *x = s->p->exchanges[q];
        if (x->exchange == XCHG_HALO && x->xdst == h) {
          ERR(en->loc, "entry '%s' runs kernel '%s', whose shifted windows of '%s' read its halo, before the "
                       "halo's exchange '%s': list '%s' before '%s'",
              en->name, en->stages[at]->name, in->tensor->name, x->name, x->name, en->stages[at]->name);
          return;
        }
      }
    }
  }
}

/* A stage of a `rounds(...)` group: the program is context-parallel, and a
 * kernel runs over docs and is in rounds of the same direction wherever an
 * entry lists it (its code skips the fragments of other rounds). */
static void entry_round_stage(Sema *s, const CirEntry *en, CirKernel *k, const StageRef *st) {
  const Ident *id = &st->id;
  const char *dir = st->reverse ? "rounds reverse(...)" : "rounds(...)";
  if (s->p->ranks_dim < 0) {
    ERR(id->loc, "entry '%s' lists '%s' in %s: rounds pass values from fragment to fragment of a document across "
                 "ranks, so they need a context-parallel program (a `ranks` declaration)",
        en->name, id->name, dir);
    return;
  }
  if (k->exchange) return;
  int ax = -1;
  for (int i = 0; i < k->naxes; i++)
    if (k->axes[i].kind == GA_DOCS) ax = i;
  if (ax < 0) {
    ERR(id->loc, "kernel '%s' is in %s of entry '%s' but has no axis over docs: a round runs the fragments that are "
                 "k-th in their document, so the kernel needs an axis like `n in docs`",
        id->name, dir, en->name);
    return;
  }
  int want = st->reverse ? 2 : 1;
  if (k->rounds && k->rounds != want) {
    ERR(id->loc, "kernel '%s' is in %s of entry '%s' and in %s elsewhere: a kernel runs its rounds one way", id->name,
        dir, en->name, k->rounds == 2 ? "rounds reverse(...)" : "rounds(...)");
    return;
  }
  k->rounds = want;
  k->rounds_axis = ax;
}

/* A kernel listed in rounds in one entry and outside them in another. */
static void check_round_kernels(Sema *s, CirProgram *p) {
  for (int e = 0; e < p->nentries; e++) {
    const CirEntry *en = p->entries[e];
    for (int i = 0; i < en->nstages; i++)
      if (!en->group[i] && en->stages[i]->rounds)
        ERR(en->loc, "entry '%s' runs kernel '%s' outside rounds, and another entry in %s: its code runs one "
                     "fragment position per launch, so list it in rounds everywhere",
            en->name, en->stages[i]->name, en->stages[i]->rounds == 2 ? "rounds reverse(...)" : "rounds(...)");
  }
}

/* Does a kernel stage of entry `en` in positions [from, to), or of the
 * rounds group of stage `at` (its stages run again the next round), do
 * `what` (ACC_STORE, ACC_LOAD) to tensor t? */
static int entry_touches(const CirProgram *p, const CirEntry *en, int from, int to, int at, int t, int what) {
  int *acc = cake_xcalloc((size_t)p->ntensors + 1, sizeof(int)), found = 0;
  for (int i = 0; i < en->nstages && !found; i++) {
    const CirKernel *k = en->stages[i];
    int in_range = i >= from && i < to, in_group = en->group[at] && en->group[i] == en->group[at];
    if (k->exchange || !(in_range || in_group)) continue;
    memset(acc, 0, sizeof(int) * (size_t)p->ntensors);
    cir_access(k, acc);
    found = (acc[t] & what) != 0;
  }
  free(acc);
  return found;
}

/* An exchange sends what a stage before it wrote (a temp source: an
 * earlier stage of the entry, or one of its rounds group) and what it
 * receives is read after it (a later stage, or one of its group). */
static void check_entry_exchanges(Sema *s, const CirEntry *en) {
  const CirProgram *p = s->p;
  for (int i = 0; i < en->nstages; i++) {
    const CirKernel *x = en->stages[i];
    if (!x->exchange) continue;
    if (x->xsrc->role == ROLE_TEMP && !entry_touches(p, en, 0, i, i, x->xsrc->index, ACC_STORE))
      ERR(en->loc, "entry '%s' runs exchange '%s', which sends '%s', but no stage before it in the entry writes '%s'",
          en->name, x->name, x->xsrc->name, x->xsrc->name);
    if (!entry_touches(p, en, i + 1, en->nstages, i, x->xdst->index, ACC_LOAD))
      ERR(en->loc, "entry '%s' runs exchange '%s', which fills '%s', but no stage after it in the entry reads '%s'",
          en->name, x->name, x->xdst->name, x->xdst->name);
  }
}

static void check_entry_halos(Sema *s, const CirEntry *en) {
  for (int i = 0; i < en->nstages; i++)
    if (!en->stages[i]->exchange) check_halo_loads(s, en, i, &en->stages[i]->body);
}

CirProgram *cake_sema(Arena *arena, Diag *diag, const Program *ast, const CirOptionSet *opts) {
  Sema ss = {0}, *s = &ss;
  s->a = arena;
  s->d = diag;
  s->ast = ast;
  int errors0 = diag->errors;
  CirProgram *p = arena_alloc(arena, sizeof(CirProgram));
  s->p = p;
  p->name = ast->name.name;
  p->src = ast->src;
  p->tokens_dim = p->docs_dim = p->chunks_dim = p->ranks_dim = p->frags_dim = -1;
  p->exchanges = arena_alloc(arena, sizeof(CirKernel *) * (size_t)(count_decls(ast, D_EXCHANGE, 0) + 1));
  p->dims = arena_alloc(arena, sizeof(CirDim) * (size_t)(count_decls(ast, D_DIM, 1) + 2));
  p->tensors = arena_alloc(arena, sizeof(CirTensor *) * (size_t)(count_decls(ast, D_TENSOR, 1) + 1));
  p->params = arena_alloc(arena, sizeof(CirParam *) * (size_t)(count_decls(ast, D_PARAM, 0) + 1));
  p->kernels = arena_alloc(arena, sizeof(CirKernel *) * (size_t)(count_decls(ast, D_KERNEL, 0) + 1));
  p->entries = arena_alloc(arena, sizeof(CirEntry *) * (size_t)(count_decls(ast, D_ENTRY, 0) + 1));
  p->requires = arena_alloc(arena, sizeof(CirRequire) * (size_t)(CAKE_MAX_REQUIRES + 1));

  /* Options first: their values decide which declarations apply. */
  p->noptions = cake_program_options(arena, diag, ast, &p->options);
  if (p->noptions < 0) return NULL;
  Buf variant;
  buf_init(&variant);
  for (int i = 0; i < p->noptions; i++) {
    CirOption *o = &p->options[i];
    o->value = o->def;
    for (int j = 0; opts && j < opts->n; j++)
      if (!strcmp(opts->names[j], o->name)) o->value = opts->values[j];
    if (!option_has(o, o->value)) {
      char vals[256];
      option_values_str(o, vals, sizeof vals);
      ERR(o->loc, "option '%s' has no value '%s' (it takes %s)", o->name, o->value, vals);
    }
    Sym *y = add_sym(s, o->name, SYM_OPTION, o->loc);
    if (y) y->ptr = o;
    buf_printf(&variant, "%s%s=%s", i ? "," : "", o->name, o->value);
  }
  for (int j = 0; opts && j < opts->n; j++) {
    int known = 0;
    for (int i = 0; i < p->noptions; i++) known |= !strcmp(opts->names[j], p->options[i].name);
    if (!known) diag_plain(diag, "program '%s' has no option '%s'", p->name, opts->names[j]);
  }
  p->variant = arena_strdup(arena, variant.data ? variant.data : "");
  buf_free(&variant);
  if (diag->errors != errors0) return NULL;

  PtrVec active = {0};
  const Decl *seq = NULL;
  decls_pass1(s, &ast->decls, &active, &seq);
  if (diag->errors != errors0) return NULL;
  /* prefer clauses: over the top-level dims and constants, known now */
  for (int i = 0, k = 0; i < ast->decls.len; i++) {
    const Decl *d = ast->decls.items[i];
    if (d->kind == D_OPTION && k < p->noptions) prefer_decls(s, d, &p->options[k++]);
  }
  if (diag->errors != errors0) return NULL;

  /* Pass 2: kernel bodies, then entries. */
  for (int i = 0, ki = 0; i < active.len; i++) {
    const Decl *d = active.items[i];
    if (d->kind == D_KERNEL) kernel_decl(s, d, p->kernels[ki++]);
  }
  for (int i = 0; i < active.len; i++) {
    const Decl *d = active.items[i];
    if (d->kind != D_ENTRY) continue;
    Sym *y = add_sym(s, d->name.name, SYM_ENTRY, d->name.loc);
    if (!y) continue;
    CirEntry *en = arena_alloc(arena, sizeof(CirEntry));
    en->name = d->name.name;
    en->loc = d->name.loc;
    en->stages = arena_alloc(arena, sizeof(CirKernel *) * (size_t)d->names.len);
    en->group = arena_alloc(arena, sizeof(int) * (size_t)(d->names.len + 1));
    en->reverse = arena_alloc(arena, sizeof(int) * (size_t)(d->names.len + 1));
    for (int j = 0; j < d->names.len; j++) {
      const StageRef *st = d->names.items[j];
      const Ident *id = &st->id;
      Sym *ky = find_sym(s, id->name);
      if (is_poison_sym(ky)) continue;
      if (!ky || ky->kind != SYM_KERNEL) {
        ERR(id->loc, "entry '%s' lists '%s', which is not a kernel", en->name, id->name);
        continue;
      }
      en->group[en->nstages] = st->group;
      en->reverse[en->nstages] = st->reverse;
      en->stages[en->nstages++] = ky->ptr;
      if (st->group) entry_round_stage(s, en, ky->ptr, st);
    }
    y->ptr = en;
    p->entries[p->nentries++] = en;
    check_entry_halos(s, en);
    check_entry_exchanges(s, en);
  }
  check_round_kernels(s, p);
  if (p->nkernels == 0 && diag->errors == errors0) ERR(ast->name.loc, "program '%s' has no kernels", p->name);
  if (diag->errors != errors0) return NULL;
  return p;
}
