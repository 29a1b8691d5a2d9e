#include "ops.h"

#include <string.h>

const OpInfo cake_ops[OP__COUNT] = {
#define X(id, sp, kind, arity, doc) {#id, sp, kind, arity, doc},
    CAKE_OPS(X)
#undef X
};

/* Builtins a user calls by name; the rest are operators or internal. */
static int callable(int op) {
  switch (cake_ops[op].kind) {
    case OK_UNARY: return op != OP_NEG;
    case OK_BINARY: return op == OP_MAXIMUM || op == OP_MINIMUM;
    case OK_VALID: case OK_IOTA: case OK_FRAG: case OK_SELECT: case OK_MASK: case OK_DECAY_TRI: case OK_REDUCE: case OK_SCAN:
    case OK_SOLVE: case OK_DECAY: case OK_DECAY_MM:
      return 1;
    default: return 0;
  }
}

int op_by_call_name(const char *name) {
  for (int i = 0; i < OP__COUNT; i++)
    if (callable(i) && strcmp(cake_ops[i].spelling, name) == 0) return i;
  return -1;
}

int op_is_callable(int op) { return callable(op); }

int op_is_elementwise(CirOp op) {
  switch (cake_ops[op].kind) {
    case OK_UNARY: case OK_LOGIC1: case OK_BINARY: case OK_COMPARE: case OK_LOGIC2:
    case OK_SELECT: case OK_CAST: case OK_MASK:
      return 1;
    default: return 0;
  }
}
