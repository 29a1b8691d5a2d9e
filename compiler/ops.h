/* ops.h - the one table of CIR operations.
 *
 * X(ID, spelling, kind, arity, doc)
 *   ID        CirOp enumerator (OP_<ID>)
 *   spelling  the surface name: a builtin function name when kind is callable,
 *             an operator for arithmetic, or an internal name
 *   kind      drives type checking (sema.c), evaluation (interp.c) and lowering
 *   arity     number of tile operands written by the user (-1: special form)
 *   doc       the typing rule, one line; dsl/README.md lists every callable op
 *             and a unit test keeps the two in step
 *
 * Adding an op: one line here, its case in interp.c, its lowering.
 */
#ifndef CAKE_OPS_H
#define CAKE_OPS_H

#define CAKE_OPS(X)                                                                              \
  /* leaves */                                                                                   \
  X(CONST, "const", OK_LEAF, 0, "a number")                                                      \
  X(DIMVAL, "dim", OK_LEAF, 0, "a symbolic dimension's value, i32")                              \
  X(PARAMVAL, "param", OK_LEAF, 0, "a runtime scalar parameter")                                 \
  X(GRIDVAR, "gridvar", OK_LEAF, 0, "a kernel grid index, i32")                                  \
  X(CHUNKVAR, "chunkvar", OK_LEAF, 0, "the chunk index of a scan, i32")                          \
  X(LOOPVAR, "loopvar", OK_LEAF, 0, "the index of a counted loop, i32")                          \
  X(CARRY, "carry", OK_LEAF, 0, "a scan's carried value inside its body")                        \
  X(VALID, "valid", OK_VALID, 1, "valid(c) -> bool[C]: rows of chunk c inside its document")     \
  X(IOTA, "iota", OK_IOTA, 1, "iota(n) -> i32[n]: 0, 1, ..., n - 1 (n a constant)")              \
  X(CONTINUES, "continues", OK_FRAG, 1,                                                           \
    "continues(n) -> bool: fragment n continues a document from an earlier rank")               \
  X(CONTINUED, "continued", OK_FRAG, 1,                                                           \
    "continued(n) -> bool: a later rank continues fragment n's document")                        \
  /* memory */                                                                                   \
  X(LOAD, "load", OK_MEM, -1, "load t[idx] -> the window's tile, t's dtype")                     \
  X(STORE, "store", OK_MEM, -1, "store t[idx] = v; v must have t's dtype and the window's shape") \
  /* elementwise, float in -> f32 out */                                                         \
  X(NEG, "neg", OK_UNARY, 1, "-x: same dtype class, f32 for floats")                             \
  X(EXP, "exp", OK_UNARY, 1, "exp(x) -> f32")                                                    \
  X(EXP2, "exp2", OK_UNARY, 1, "exp2(x) -> f32")                                                 \
  X(LOG, "log", OK_UNARY, 1, "log(x) -> f32")                                                    \
  X(SIGMOID, "sigmoid", OK_UNARY, 1, "sigmoid(x) = 1/(1+exp(-x)) -> f32")                        \
  X(SOFTPLUS, "softplus", OK_UNARY, 1, "softplus(x) = log(1+exp(x)) -> f32")                     \
  X(SQRT, "sqrt", OK_UNARY, 1, "sqrt(x) -> f32")                                                 \
  X(RSQRT, "rsqrt", OK_UNARY, 1, "rsqrt(x) = 1/sqrt(x) -> f32")                                  \
  X(ABS, "abs", OK_UNARY, 1, "abs(x) -> f32")                                                    \
  X(TANH, "tanh", OK_UNARY, 1, "tanh(x) -> f32")                                                 \
  X(LOG1P, "log1p", OK_UNARY, 1, "log1p(x) = log(1+x) -> f32")                                   \
  X(EXPM1, "expm1", OK_UNARY, 1, "expm1(x) = exp(x)-1 -> f32")                                   \
  X(LOGSIGMOID, "logsigmoid", OK_UNARY, 1, "logsigmoid(x) = -softplus(-x) -> f32")               \
  X(SILU, "silu", OK_UNARY, 1, "silu(x) = x*sigmoid(x) -> f32")                                  \
  X(NOT, "not", OK_LOGIC1, 1, "!b: bool -> bool")                                                \
  X(ADD, "+", OK_BINARY, 2, "a + b: broadcast; floats -> f32, i32 + i32 -> i32")                 \
  X(SUB, "-", OK_BINARY, 2, "a - b")                                                             \
  X(MUL, "*", OK_BINARY, 2, "a * b")                                                             \
  X(DIV, "/", OK_BINARY, 2, "a / b (i32: truncating)")                                           \
  X(MOD, "%", OK_BINARY, 2, "a % b (i32 only)")                                                  \
  X(MAXIMUM, "maximum", OK_BINARY, 2, "maximum(a, b): elementwise larger")                       \
  X(MINIMUM, "minimum", OK_BINARY, 2, "minimum(a, b): elementwise smaller")                      \
  X(LT, "<", OK_COMPARE, 2, "a < b -> bool")                                                     \
  X(LE, "<=", OK_COMPARE, 2, "a <= b -> bool")                                                   \
  X(GT, ">", OK_COMPARE, 2, "a > b -> bool")                                                     \
  X(GE, ">=", OK_COMPARE, 2, "a >= b -> bool")                                                   \
  X(EQ, "==", OK_COMPARE, 2, "a == b -> bool")                                                   \
  X(NE, "!=", OK_COMPARE, 2, "a != b -> bool")                                                   \
  X(AND, "&&", OK_LOGIC2, 2, "a && b: bool")                                                     \
  X(OR, "||", OK_LOGIC2, 2, "a || b: bool")                                                      \
  X(WHERE, "where", OK_SELECT, 3, "where(cond, a, b): cond bool, a and b broadcast")             \
  X(CAST, "as", OK_CAST, 1, "x as dtype: convert (round to nearest even)")                      \
  /* layout */                                                                                   \
  X(TRANSPOSE, "transpose", OK_LAYOUT, 1, "x.T: [m, n] -> [n, m]")                               \
  X(EXPAND, "expand", OK_LAYOUT, 1, "x[:, None] / x[None, :]: insert a unit axis")               \
  X(PICK, "pick", OK_LAYOUT, 1, "x[i, :] / x[:, j] / x[i]: one row, column or element")          \
  X(TRIL, "tril", OK_MASK, -1, "tril(x, d = 0): keep x[r, j] with j <= r + d, else 0")           \
  X(TRIU, "triu", OK_MASK, -1, "triu(x, d = 0): keep x[r, j] with j >= r + d, else 0")           \
  X(DECAY, "decay", OK_DECAY_TRI, 1,                                                             \
    "decay(g): g float [C] or [C, 1] -> f32[C, C]: exp(g[r]-g[j]) for j <= r, else 0")           \
  /* reductions and scans */                                                                     \
  X(SUM, "sum", OK_REDUCE, 2, "sum(x, axis): drop the axis; f32")                                \
  X(AMAX, "amax", OK_REDUCE, 2, "amax(x, axis): the largest along the axis; f32")                \
  X(CUMSUM, "cumsum", OK_SCAN, 2, "cumsum(x, axis): inclusive prefix sum along the axis; f32")   \
  X(RCUMSUM, "rcumsum", OK_SCAN, 2, "rcumsum(x, axis): inclusive suffix sum along the axis; f32") \
  /* matrix */                                                                                   \
  X(MATMUL, "matmul", OK_DOT, 2, "a @ b: [m, k] x [k, n] -> f32[m, n]; a, b bf16 or f16")        \
  X(UNIT_LOWER_INV, "unit_lower_inv", OK_SOLVE, 1,                                               \
    "unit_lower_inv(a): (I + tril(a, -1))^-1 for square f32 a -> f32")                           \
  X(DECAY_DOT, "decay_dot", OK_DECAY, 3,                                                         \
    "decay_dot(a, b, g): [C, K] x3 -> f32[C, C], r >= j: sum_c a[r,c] b[j,c] exp(g[r,c]-g[j,c]), else 0") \
  X(DECAY_MM, "decay_mm", OK_DECAY_MM, 3,                                                        \
    "decay_mm(m, b, g): f32[C, C], [C, K] x2 -> f32[C, K]: sum_{j<=r} m[r,j] b[j,:] exp(g[r,:]-g[j,:])") \
  X(DECAY_MM_T, "decay_mm_t", OK_DECAY_MM, 3,                                                    \
    "decay_mm_t(m, a, g): f32[C, C], [C, K] x2 -> f32[C, K]: sum_{r>=j} m[r,j] a[r,:] exp(g[r,:]-g[j,:])") \
  /* control */                                                                                  \
  X(FOR, "for", OK_CONTROL, -1, "scan over chunks, or a counted loop, with carried values")      \
  X(YIELD, "yield", OK_CONTROL, -1, "the carried values at the end of one scan step")            \
  X(FORRES, "result", OK_CONTROL, -1, "a scan's final carried value")

typedef enum {
  OK_LEAF,
  OK_VALID,
  OK_IOTA,     /* iota(n): the indices of a vector */
  OK_FRAG,     /* continues(n), continued(n): a fragment's place in its document (ranks) */
  OK_MEM,
  OK_UNARY,
  OK_LOGIC1,
  OK_BINARY,
  OK_COMPARE,
  OK_LOGIC2,
  OK_SELECT,
  OK_CAST,
  OK_LAYOUT,
  OK_MASK,
  OK_DECAY_TRI, /* decay(g): the lower triangle of exp(g[r] - g[j]), from a column g */
  OK_REDUCE,
  OK_SCAN,
  OK_DOT,
  OK_SOLVE,
  OK_DECAY,
  OK_DECAY_MM, /* the decayed products' gradients: decay_mm, decay_mm_t */
  OK_CONTROL,
} OpKind;

typedef enum {
#define X(id, sp, kind, arity, doc) OP_##id,
  CAKE_OPS(X)
#undef X
  OP__COUNT
} CirOp;

typedef struct OpInfo {
  const char *id;
  const char *spelling;
  OpKind kind;
  int arity;
  const char *doc;
} OpInfo;

extern const OpInfo cake_ops[OP__COUNT];

/* The op a builtin call `name(...)` names, or -1. */
int op_by_call_name(const char *name);
/* Is `op` elementwise (one output element depends on the same element of its operands)? */
int op_is_elementwise(CirOp op);
/* Can a user call `op` by its spelling? */
int op_is_callable(int op);

#endif
