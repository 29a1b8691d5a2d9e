/* lower_home.c - what every lowering file asks of a value: its home, and
 * whether a fused value is cheap to recompute; and the lowering's errors.
 * Below all the other lower_*.c files (it calls none of them), so the
 * planner, the walker and the op families form a line, not a circle. */
#include <stdarg.h>

#include "lower.h"

Home *home_of(LK *L, const CirInst *in) {
  CAKE_ASSERT(in->id >= 0 && in->id < L->nids);
  return &L->homes[in->id];
}

/* Is the value defined in a scan over chunks (not a counted loop, not a
 * walk over other fragments)? There latency rules: the step's chain. */
int home_in_scan(const Home *h) { return h->depth > 0 && h->loop && !h->loop->counted && !h->loop->before; }

void lk_error(LK *L, const CirInst *at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Loc loc = at ? at->loc : L->k->loc;
  diag_verror(L->diag, loc, "error", fmt, ap);
  va_end(ap);
  L->failed = 1;
}

int op_is_cheap(CirOp op) {
  switch (cake_ops[op].kind) {
    case OK_BINARY: return op != OP_DIV && op != OP_MOD;
    case OK_COMPARE: case OK_LOGIC1: case OK_LOGIC2: case OK_SELECT: case OK_CAST: case OK_LAYOUT: case OK_MASK:
      return 1;
    case OK_UNARY: return op == OP_NEG || op == OP_ABS;
    default: return 0;
  }
}

/* Can v be recomputed at every use at the price of a few ALU instructions:
 * a cheap op over values already in shared memory or registers (`depth`:
 * how deep in such a tree v is; at most 4)? */
int cheap_tree(LK *L, const CirInst *v, int depth) {
  if (!op_is_cheap(v->op) || depth > 4) return 0;
  for (int j = 0; j < v->nargs; j++) {
    const CirInst *o = v->args[j];
    const Home *oh = home_of(L, o);
    if (o->ty.rank == 0 || oh->kind == H_SMEM || oh->kind == H_SCALAR) continue;
    if (oh->kind == H_FUSED && cheap_tree(L, o, depth + 1)) continue;
    return 0;
  }
  return 1;
}

int home_is_cheap(LK *L, const CirInst *v) { return home_of(L, v)->kind == H_FUSED && cheap_tree(L, v, 0); }
