/* ast.h - the syntax tree of a .cake program.
 *
 * Contract: every node carries the Loc of the source text it came from. The
 * tree is built by the parser (parser.y) in the caller's Arena and is never
 * mutated afterwards; semantic analysis (compiler/sema.c) reads it and builds
 * CIR. In a tree that cake_parse() returns no expression and no nesting of
 * blocks (if, else if, for) is deeper than CAKE_MAX_EXPR_DEPTH
 * (cake_limits.h), so passes may recurse on it. ast_dump() prints the tree
 * (cakec --emit=ast).
 */
#ifndef CAKE_AST_H
#define CAKE_AST_H

#include "base.h"
#include "diag.h"

typedef enum {
  DT_NONE = 0,
  DT_BF16,
  DT_F16,
  DT_F32,
  DT_I32,
  DT_BOOL,
} DType;

const char *dtype_name(DType t);
int dtype_bytes(DType t);

typedef enum {
  E_INT,     /* ival */
  E_FLOAT,   /* fval; text keeps the spelling */
  E_NAME,    /* name */
  E_UNARY,   /* op, a */
  E_BINARY,  /* op, a, b */
  E_CALL,    /* name, args */
  E_INDEX,   /* a[args]; an arg of kind E_SLICE is ':', E_NONE is None */
  E_SLICE,
  E_NONE,
  E_TRANSPOSE, /* a.T */
  E_CAST,    /* a as dtype */
  E_LOAD,    /* load name[args] (or b) */
} ExprKind;

typedef struct Expr Expr;
struct Expr {
  ExprKind kind;
  Loc loc;
  int op;             /* token code of the operator for E_UNARY / E_BINARY */
  const char *name;   /* E_NAME, E_CALL, E_LOAD (tensor name) */
  const char *text;   /* literal spelling */
  long long ival;
  double fval;
  DType dtype;        /* E_CAST */
  Expr *a, *b;        /* operands; E_LOAD: b = default value (or NULL) */
  PtrVec args;        /* E_CALL, E_INDEX, E_LOAD: Expr* */
  int depth;          /* levels of operators below and including this one; at most CAKE_MAX_EXPR_DEPTH */
};

typedef enum {
  S_ASSIGN, /* name = value */
  S_STORE,  /* store target = value; target is an E_INDEX on a name */
  S_FOR,    /* for var in [reverse] chunks(doc) carry names { body }, or
               for var in range(count) carry names { body } (count in `value`), or
               for var, name2 in [reverse] before|after(doc) carry names { body } (`before`) */
  S_IF,     /* if cond { body } else { else_body }: cond is compile-time */
} StmtKind;

typedef struct Stmt Stmt;
struct Stmt {
  StmtKind kind;
  Loc loc;
  const char *name;  /* S_ASSIGN target; S_FOR chunk variable */
  Loc name_loc;
  Expr *target;      /* S_STORE */
  Expr *value;       /* S_ASSIGN, S_STORE: the value; S_IF: the condition; S_FOR: a counted loop's count (or NULL) */
  const char *doc;   /* S_FOR: the document index, or NULL: every chunk of every document
                        (or a counted loop, when `value` holds its count) */
  Loc doc_loc;
  int reverse;
  int before;        /* S_FOR over before(doc) (1) or after(doc) (2): name = the rank, name2 = the fragment */
  const char *name2;
  Loc name2_loc;
  PtrVec carries;    /* S_FOR: Ident* */
  PtrVec body;       /* S_FOR, S_IF: Stmt* */
  PtrVec else_body;  /* S_IF */
  int depth;         /* S_FOR, S_IF: levels of blocks below and including this one */
};

typedef struct Ident {
  const char *name;
  Loc loc;
} Ident;

/* A stage of an entry: its name, and the `rounds(...)` group it is in (0:
 * none, else its number from 1), reverse 1 for `rounds reverse(...)`. The
 * Ident comes first: a StageRef* reads as an Ident*. */
typedef struct StageRef {
  Ident id;
  int group, reverse;
} StageRef;

typedef enum {
  AX_CHUNKS, /* c in chunks */
  AX_DOCS,   /* n in docs */
  AX_RANGE,  /* h in H, or j in V / BV (extent is an E_BINARY '/') */
} AxisKind;

typedef struct Axis {
  AxisKind kind;
  Ident var;
  Expr *extent; /* AX_RANGE */
  Loc loc;
} Axis;

typedef enum {
  D_DIM,      /* dim T, H */
  D_CONST,    /* const K = 128 */
  D_SEQUENCE, /* sequence T, docs N, chunk C */
  D_TENSOR,   /* in|out|temp|save names : dtype[shape] [optional] */
  D_PARAM,    /* param scale : f32 = expr */
  D_KERNEL,   /* kernel name over (axes) [threads n] { body } */
  D_ENTRY,    /* entry fwd = a, b, c */
  D_OPTION,   /* option gate = safe in (safe, softplus, external) */
  D_IF,       /* if cond { decls } else { decls }: cond is compile-time */
  D_REQUIRE,  /* require expr: a relation between dims, checked at plan time */
  D_RANKS,    /* ranks R [, fragments F]: a context-parallel program */
  D_EXCHANGE, /* exchange name = op(src) -> dst */
} DeclKind;

typedef enum { ROLE_IN, ROLE_OUT, ROLE_TEMP, ROLE_SAVE } Role;
const char *role_name(Role r);

/* `prefer VALUE when EXPR` after an option's values: chosen at plan time
 * when the caller leaves the option unset. */
typedef struct Prefer {
  Ident value;
  Expr *cond;
  Loc loc;      /* the keyword `prefer` */
  Loc cond_loc; /* where the condition starts */
} Prefer;

typedef struct Decl {
  DeclKind kind;
  Loc loc;
  PtrVec names;     /* Ident*: D_DIM, D_TENSOR; StageRef*: D_ENTRY stages */
  Ident name;       /* D_CONST, D_PARAM, D_KERNEL, D_ENTRY */
  Expr *value;      /* D_CONST value, D_PARAM default, D_REQUIRE expression */
  Loc value_loc;    /* D_REQUIRE: where the expression starts (and its extent on that line) */
  /* D_SEQUENCE */
  Ident seq_tokens, seq_docs, seq_chunk_name;
  Expr *seq_chunk;
  /* D_TENSOR / D_PARAM */
  Role role;
  DType dtype;
  Loc dtype_loc;
  PtrVec shape;     /* Expr* */
  int optional;
  /* D_KERNEL */
  PtrVec axes;      /* Axis* */
  Expr *threads;
  Expr *per_sm;     /* NULL: as shared memory allows */
  PtrVec body;      /* Stmt* (D_KERNEL), Decl* (D_IF) */
  PtrVec else_body; /* D_IF: Decl* */
  int depth;        /* D_IF: levels of `if` below and including this one */
  /* D_OPTION: name, default (in `value` as an E_NAME), values in `names` */
  PtrVec prefers;   /* D_OPTION: Prefer*, in order */
  Ident frags;      /* D_RANKS: the fragments dim, the most any rank holds (name NULL when absent) */
  Ident xop, xsrc, xdst; /* D_EXCHANGE: the operation, its source and destination tensors */
  PtrVec xargs;          /* D_EXCHANGE: the numbers after the source (Expr*) */
} Decl;

typedef struct Program {
  Ident name;
  PtrVec decls; /* Decl* */
  const Source *src;
} Program;

/* Parse `src` into a Program allocated in `arena`. Returns NULL when any
 * syntax error was reported to `diag`. */
Program *cake_parse(Arena *arena, Diag *diag, const Source *src);

void ast_dump(Buf *out, const Program *p);
const char *ast_op_spelling(int op);

#endif
