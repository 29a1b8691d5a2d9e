/* cir.h - CIR, the chunked-attention IR.
 *
 * Contract: a CirProgram is what semantic analysis (sema.c) makes of a .cake
 * program: symbolic dims, tensors with roles, runtime parameters, kernels
 * (stages) with grids and bodies of SSA tile values, and entries (ordered
 * kernel sequences). Every instruction has a fully known type: a dtype and a
 * static shape of rank 0, 1 or 2. Everything lives in one Arena.
 * cir_dump() is the textual form (cakec --emit=cir); it is also what the
 * kernel digests hash, so it must print everything that affects codegen.
 */
#ifndef CAKE_CIR_H
#define CAKE_CIR_H

#include "ast.h"
#include "cake_limits.h"
#include "ops.h"

enum { CIR_MAX_RANK = 2, CIR_MAX_TENSOR_RANK = 6, CIR_MAX_AXES = 3 };

typedef struct CirType {
  DType dt;
  int rank;
  int shape[CIR_MAX_RANK];
} CirType;

/* A symbolic dimension bound at plan time. */
typedef enum { DIM_USER, DIM_TOKENS, DIM_DOCS, DIM_CHUNKS, DIM_RANKS, DIM_FRAGMENTS } DimRole;
typedef struct CirDim {
  const char *name;
  DimRole role;
  Loc loc;
} CirDim;

/* One axis extent of a tensor: a constant or a symbolic dim. */
typedef struct CirExtent {
  int sym;   /* index into CirProgram.dims, or -1 */
  long long value; /* when sym < 0 */
} CirExtent;

typedef struct CirTensor {
  const char *name;
  Role role;
  DType dtype;
  int rank;
  CirExtent shape[CIR_MAX_TENSOR_RANK];
  int optional;
  Loc loc;
  int index;
} CirTensor;

typedef struct CirParam {
  const char *name;
  DType dtype;
  int has_default;
  double def;
  Loc loc;
  int index;
} CirParam;

typedef enum { GA_CHUNKS, GA_DOCS, GA_RANGE } GridKind;
typedef struct CirAxis {
  const char *var;
  GridKind kind;
  CirExtent extent; /* GA_RANGE: number of grid points */
  int block;        /* GA_RANGE over `X / B`: B (window block size); 0 = plain index */
  Loc loc;
} CirAxis;

/* How one tensor axis is indexed in a load/store window. */
typedef enum { IX_FULL, IX_CHUNK, IX_BLOCK, IX_SCALAR } IndexKind;
typedef struct CirIndex {
  IndexKind kind;
  struct CirInst *v; /* IX_CHUNK: chunk index; IX_BLOCK: block index; IX_SCALAR: i32 value */
  int size;          /* extent of the selected window along this axis (IX_FULL/IX_CHUNK/IX_BLOCK) */
  int shift;         /* IX_CHUNK: `shift(c, s)`, the chunk's rows moved by s tokens (0: the chunk itself) */
  struct CirTensor *halo; /* a shifted window of a context-parallel program: the destination of its
                             tensor's halo exchange, which holds the tokens of other ranks */
} CirIndex;

typedef struct CirBlock CirBlock;

typedef struct CirInst {
  CirOp op;
  int id;
  CirType ty;
  Loc loc;
  struct CirInst **args;
  int nargs;
  int axis;    /* REDUCE, SCAN, EXPAND, PICK: axis; GRIDVAR: grid axis; CARRY/FORRES: slot */
  long long ival; /* CONST (integer), TRIL/TRIU diagonal, PICK position */
  double fval; /* CONST */
  int is_int;  /* CONST: an integer literal */
  CirTensor *tensor;        /* LOAD, STORE */
  CirIndex index[CIR_MAX_TENSOR_RANK];
  CirParam *param;          /* PARAMVAL */
  int dim;                  /* DIMVAL: index into dims */
  CirBlock *body;           /* FOR */
  int reverse;              /* FOR */
  int all_chunks;           /* FOR: every chunk of every document; args[0] is then the chunk count */
  int before;               /* FOR: 1 the fragments before fragment args[0] in its document, 2 those
                               after it (on other ranks; a context-parallel program), in document
                               order or `reverse`; LOOPVAR axis 0 = the rank, 1 = the fragment's
                               index on that rank */
  int counted;              /* FOR: a counted loop `for i in range(n)`; args[0] is n (i32), its index a LOOPVAR */
  struct CirInst *parent;   /* CARRY, CHUNKVAR, LOOPVAR, YIELD: their FOR; FORRES: its FOR */
  int nuses;
  int depth;   /* the longest chain of operands below it (sema keeps it <= CAKE_MAX_EXPR_DEPTH) */
} CirInst;

struct CirBlock {
  CirInst **insts;
  int len, cap;
};

/* An exchange stage of a context-parallel program (between kernels). */
typedef enum { XCHG_NONE = 0, XCHG_ALL_GATHER, XCHG_HALO, XCHG_SEND_NEXT, XCHG_SEND_PREV } XchgOp;
const char *xchg_op_name(XchgOp op);

typedef struct CirKernel {
  const char *name;
  Loc loc;
  /* an exchange stage instead of a kernel: no grid, no body; `src` of every
   * rank lands in `dst` (all_gather: dst[r, ...] = src of rank r) */
  XchgOp exchange;
  CirTensor *xsrc, *xdst;
  /* halo: dst[f, i, ...] = the token `before` - i tokens before fragment f
   * (i < before), or i - before after its end, of its document (0 outside
   * it); src a token tensor, dst [F, before + after] + src's other extents */
  int xbefore, xafter;
  /* listed in `rounds(...)` (1) or `rounds reverse(...)` (2) of an entry: in
   * round k it runs only the fragments k-th in their document (from the
   * start, or from the end), its docs axis `rounds_axis`; 0 otherwise */
  int rounds, rounds_axis;
  CirAxis axes[CIR_MAX_AXES];
  int naxes;
  int threads;
  /* blocks per multiprocessor the kernel is planned for (`per_sm`): 1 or 2;
   * 0: two when shared memory allows, else one */
  int per_sm;
  CirBlock body;
  int index;
} CirKernel;

typedef struct CirEntry {
  const char *name;
  Loc loc;
  CirKernel **stages;
  int nstages;
  /* per stage: 0, or the number (from 1) of the `rounds(...)` group it is
   * in; reverse[i] 1 for `rounds reverse(...)`. A group's stages run in
   * order once per round, for as many rounds as the longest document has
   * fragments. */
  int *group, *reverse;
} CirEntry;

/* `prefer VALUE when EXPR` of an option: the runtime's choice when the
 * caller leaves the option unset (the first clause that holds wins). */
typedef struct CirPrefer {
  const char *value; /* one of the option's values */
  const char *text;  /* the condition as written (constants by name), for messages */
  const char *expr;  /* the canonical form (cake_require.h): dims and device facts by name, constants by value */
  const char *where; /* "file.cake:line:col" of the condition */
  Loc loc;
} CirPrefer;

/* A compile-time option: `option gate = safe in (safe, softplus, external)`. */
typedef struct CirOption {
  const char *name;
  const char *def;
  const char **values;
  int nvalues;
  const char *value; /* the value this program was compiled with */
  Loc loc;
  CirPrefer *prefers; /* filled by cake_sema (not by cake_program_options) */
  int nprefers;
} CirOption;

/* Chosen option values (name=value pairs); options not named take their default. */
typedef struct CirOptionSet {
  const char *names[CAKE_MAX_OPTIONS];
  const char *values[CAKE_MAX_OPTIONS];
  int n;
} CirOptionSet;

/* `require EXPR`: a relation between dims that a plan's dims must satisfy. */
typedef struct CirRequire {
  const char *text;  /* the expression as written (constants by name), for messages */
  const char *expr;  /* the canonical form the runtime evaluates (cake_require.h): dims by name,
                        constants by value */
  const char *where; /* "file.cake:line:col" (the file's base name) */
  Loc loc;
} CirRequire;

typedef struct CirProgram {
  const char *name;
  const char *variant;      /* "gate=safe,qk_norm=true" or "" without options */
  CirOption *options;
  int noptions;
  int chunks_dim;           /* the chunk-count dim, or -1 */
  const Source *src;
  CirDim *dims;
  int ndims;
  int tokens_dim, docs_dim; /* -1 if absent */
  int ranks_dim, frags_dim; /* `ranks R, fragments F` of a context-parallel program (F: the most fragments
                               any rank holds); -1 if absent */
  CirKernel **exchanges;    /* its exchange stages (not in `kernels`: nothing to compile) */
  int nexchanges;
  int chunk;                /* chunk size; 0 if there is no sequence */
  CirTensor **tensors;
  int ntensors;
  CirParam **params;
  int nparams;
  CirKernel **kernels;
  int nkernels;
  CirEntry **entries;
  int nentries;
  CirRequire *requires;
  int nrequires;
  int next_id;
} CirProgram;

/* Build CIR from a parsed program, with the given option values (NULL: all
 * defaults). NULL when errors were reported. */
CirProgram *cake_sema(Arena *arena, Diag *diag, const Program *ast, const CirOptionSet *opts);

/* The options a program declares (top level), checked. -1 after errors. */
int cake_program_options(Arena *arena, Diag *diag, const Program *ast, CirOption **out);

CirInst *cir_inst_new(Arena *a, CirProgram *p, CirOp op, CirType ty, Loc loc, int nargs);
void cir_block_push(Arena *a, CirBlock *b, CirInst *inst);

void cir_dump(Buf *out, const CirProgram *p);
void cir_dump_kernel(Buf *out, const CirProgram *p, const CirKernel *k);
void cir_type_str(char *buf, size_t n, CirType t);
void cir_extent_str(char *buf, size_t n, const CirProgram *p, CirExtent e);

/* Pass: recount uses of every instruction (nuses). */
void cir_count_uses(CirKernel *k);
/* The index of tensor `name` in p->tensors, or -1. */
int cir_tensor_index(const CirProgram *p, const char *name);

/* The halo exchange whose destination is `dst` (CirIndex.halo), or NULL. */
const CirKernel *cir_halo_exchange(const CirProgram *p, const CirTensor *dst);

#endif
