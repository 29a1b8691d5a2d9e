/* lower.h - CIR -> MLIR lowering of one kernel (internal to lowering/).
 *
 * The execution model of a generated kernel: one thread block per grid
 * point, `threads` threads. Each CIR value gets a home:
 *   H_SCALAR  rank-0 values held in registers, computed by every thread;
 *   H_FUSED   single-use elementwise values (and loads), recomputed inside
 *             whatever consumes them: never stored;
 *   H_SMEM    tiles materialised in shared memory (row-major, padded rows):
 *             results of matmul, reductions, scans, solves, multi-use values,
 *             and scan carries (two buffers each, swapped every step).
 * Every materialising step is followed by a block barrier (but a scan
 * step's last one, where the next step's opening barrier orders the same,
 * and one after a matmul that only stores to global memory, where the next
 * matmul writes nothing it read: lower_kernel.c). Shared memory is
 * laid out by a first-fit allocator over live ranges (lower_plan.c). Tensor-
 * core matmuls stage operands as bf16/f16 in shared memory and read them
 * with ldmatrix; accumulators live in registers (mma.sync m16n8k16); in
 * scans a matmul writes its consumer straight from them (an epilogue), and a
 * sum of matmuls shares one set of accumulators. Loads indexed by grid or
 * scan indices are copied with cp.async: at the kernel's start, or in a scan
 * for the next chunk once the current chunk's copy has been read.
 */
#ifndef CAKE_LOWER_H
#define CAKE_LOWER_H

#include "abi.h"
#include "cir.h"
#include "mlb.h"
#include "target.h"

enum { MAX_W = 8, MAX_FUSED_DEPTH = 64 };

typedef enum { H_NONE, H_SCALAR, H_FUSED, H_SMEM } HomeKind;
enum { ASYNC_NONE, ASYNC_HOIST, ASYNC_PREFETCH };

typedef struct Home {
  HomeKind kind;
  MlirValue scalar; /* H_SCALAR once emitted */
  int emitted;
  /* H_SMEM */
  DType sdt;        /* storage dtype: f32, bf16, f16 or i32 (bool as i32) */
  int rows, cols, stride; /* elements; stride = padded row length */
  int bytes;        /* one buffer */
  int offset;       /* static byte offset (first of the pair for carries) */
  int nbufs;        /* 2 for scan carries (not updated in place), and double-buffered prefetches and shadows */
  MlirValue dyn;    /* i32 byte offset when it changes at run time (carries, scan results) */
  int start, end;   /* live range in program positions */
  int depth;        /* loop nesting of the definition (0: the kernel body, 1: a scan's or loop's body) */
  const CirInst *loop; /* the FOR whose body defines it, or NULL */
  int fused_depth;  /* H_FUSED: the longest chain of fused operands below it (< MAX_FUSED_DEPTH) */
  const CirInst *epilogue; /* matmul: the store, stored value or yielded value it writes
                              straight from its accumulators; those: their matmul */
  const CirInst *epilogue_carry; /* matmul writing a yielded value: the carry it updates */
  const CirInst *epilogue_shadow; /* that matmul: a cast of the carry (`S as bf16`) it writes too */
  int shadow;       /* such a cast: written before the scan and by the epilogue, never at its own place */
  const CirInst *sum_with; /* epilogue matmul: a matmul of the same shape added to it (a + b) whose
                              products go into the same accumulators; that one is not emitted */
  const CirInst *sum_node; /* the `+` whose value the accumulators then hold */
  const CirInst *summed_into; /* a matmul folded into another's accumulators */
  const CirInst *pair_with; /* decay_dot: a later decay_dot of the same b and g computed in its pass */
  const CirInst *pair_of;   /* that later one: the decay_dot whose pass computes it */
  int async_mode;   /* a load copied with cp.async: ASYNC_HOIST (at kernel start) or
                       ASYNC_PREFETCH (a scan's next chunk, during the current one) */
  int refill_after; /* ASYNC_PREFETCH: the body position of the last read; the next
                       chunk's copy into the (single) buffer is issued after it */
  /* staging buffers for matmul / solve / decay operands (planned per use) */
  int stage_off[5];
  int stage_stride[5];
  DType stage_dt[5];
} Home;

typedef struct ChunkInfo {
  MlirValue start, end; /* i32 token range of the chunk */
  MlirValue doc, doc_start, doc_end; /* its document, and that one's first token and end (shifted windows) */
  int set;
} ChunkInfo;

typedef struct Vals {
  MlirValue v[MAX_W];
  int n;
} Vals;

/* Accumulator values of a matmul being written by its epilogue: eval() of
 * that matmul at (row, col .. col + n - 1) returns them. */
typedef struct AccCtx {
  const CirInst *mm;
  MlirValue v[2];
  int n;
} AccCtx;

typedef struct LK {
  Mlb b;
  const Target *target; /* the limits planned against */
  Arena *arena;
  Diag *diag;
  const CirProgram *p;
  const CirKernel *k;
  const KernelAbi *abi;
  Home *homes;       /* by instruction id */
  ChunkInfo *chunks; /* by instruction id of chunk indices */
  int *pos;          /* program position by id */
  int nids;
  MlirValue args[CAKE_MAX_KERNEL_ARGS];
  MlirValue tid, smem;
  MlirValue grid[CIR_MAX_AXES];
  int nthreads;
  long long smem_bytes; /* the plan's size, checked against the target's smem_per_block before it is used as an int */
  int failed;
  AccCtx acc;
  int shifts;         /* its shifted windows (`shift(c, s)`): 1 some move rows back (s < 0), 2 some forward */
  int dmm_elementwise; /* decay_mm and decay_mm_t element by element: the blocked form's staging does not fit */
  const CirInst *unbarriered; /* a matmul that needs no barrier at its start (barrier_free_after) */
  /* the scan being emitted: where prefetched loads refill for the next chunk */
  const CirBlock *scan_body;
  const CirInst *scan_cv;
  MlirValue scan_next, scan_has_next;
  MlirValue scan_ahead; /* scan_next, or on the last step the step's own chunk (a chunk that exists) */
  ChunkInfo scan_next_rows; /* the rows of chunk scan_ahead, read once at the top of each step (set: loaded) */
  MlirValue scan_other; /* the buffer index the step does not read (where its copies for the next step go) */
  /* Work the kernel's walker hands down to be emitted behind the next
   * matmul's mma, where nothing waits for it (null: none; a scan step's
   * copies for the next step while they are pending) */
  void (*behind_mma)(struct LK *L);
} LK;

/* lower_plan.c */
void plan_kernel(LK *L); /* homes, live ranges, shared-memory offsets; L->smem_bytes */
int plan_blocks_per_sm(const LK *L); /* what the plan is made for: 1 or 2 */
/* Does v, recomputed where it is read (through fused values), read the tile of `carry`? */
int fused_reads(LK *L, const CirInst *v, const CirInst *carry);
/* Does matmul mm, or one summed into its accumulators, read the tile of
 * `carry` as it runs (as an operand, directly or through fused values)? */
int matmul_reads(LK *L, const CirInst *mm, const CirInst *carry);

/* lower_home.c (below every other lower_*.c file) */
Home *home_of(LK *L, const CirInst *in);
int home_in_scan(const Home *h);
/* Operations worth recomputing rather than storing: a few ALU instructions. */
int op_is_cheap(CirOp op);
/* Can v be recomputed where it is read for a few ALU instructions, from
 * values in shared memory or registers (`depth`: how deep in such a tree)? */
int cheap_tree(LK *L, const CirInst *v, int depth);
/* A fused value that costs a few ALU instructions to recompute from shared memory. */
int home_is_cheap(LK *L, const CirInst *v);
void lk_error(LK *L, const CirInst *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* lower_kernel.c */
void lk_set_loc(LK *L, const CirInst *in);

/* lower_math.c: tanh, log1p, expm1, logsigmoid, silu of one f32 element */
MlirValue lower_math_unary(LK *L, CirOp op, MlirValue x);

/* lower_elem.c: evaluation of elements and element loops */
Vals eval(LK *L, const CirInst *v, MlirValue r, MlirValue c, int W);
MlirValue eval_scalar(LK *L, const CirInst *v);
int tile_width(const CirInst *v);
typedef void (*TileFn)(LK *L, const CirInst *v, MlirValue r, MlirValue c, int W, void *ctx);
/* Items g = tid, tid + threads, ... below total; unrolled when each thread has at most 16. */
typedef void (*StridedFn)(LK *L, MlirValue g, void *ctx);
void strided_loop(LK *L, int total, StridedFn fn, void *ctx);
void tile_loop(LK *L, const CirInst *v, int rows, int cols, int W, TileFn fn, void *ctx);
void smem_store_vals(LK *L, MlirValue base, DType sdt, int stride, MlirValue r, MlirValue c, Vals x);
Vals smem_load_vals(LK *L, MlirValue base, DType sdt, int stride, MlirValue r, MlirValue c, int W);
MlirValue smem_ptr(LK *L, MlirValue byte_off);
MlirValue home_base(LK *L, const CirInst *v); /* i32 byte offset of v's current buffer */
void materialize_to(LK *L, const CirInst *v, MlirValue base, DType sdt, int stride, int own);
void emit_store(LK *L, const CirInst *st);
/* The elements (r, c .. c + W - 1) of a store, as part of a matmul's epilogue. */
void emit_store_at(LK *L, const CirInst *st, MlirValue r, MlirValue c, int W);
/* The same in two halves, so that an epilogue issues all of its loads before its first write:
 * the values of a store at (r, c ..), then their writing */
Vals store_value_at(LK *L, const CirInst *st, MlirValue r, MlirValue c, int W);
void store_vals_at(LK *L, const CirInst *st, MlirValue r, MlirValue c, Vals x);
/* The elements (r, c .. c + W - 1) of v, computed from its operands (eval_own), written to a shared tile. */
Vals eval_own(LK *L, const CirInst *v, MlirValue r, MlirValue c, int W);
void materialize_at(LK *L, const CirInst *v, MlirValue base, DType sdt, int stride, MlirValue r, MlirValue c, int W);
/* The global address of element (r, c) of a load/store window and its row mask (null: always valid). */
/* split: the window's starts apart from the rest (a prefetch repeated every step; see window_addr) */
MlirValue window_elem_ptr(LK *L, const CirInst *in, MlirValue r, MlirValue c, int W, int split, MlirValue *valid);
/* window_elem_ptr's address, and in *row_bytes the i64 bytes from a row of
 * the window to the next (the same column), or null where rows are not a
 * fixed step apart (a halo's rows) */
MlirValue window_row_ptr(LK *L, const CirInst *in, MlirValue r, MlirValue c, int W, int split, MlirValue *row_bytes);
MlirValue to_storage(LK *L, MlirValue x, DType sdt);
MlirValue f32_to_i32(LK *L, MlirValue x); /* truncating, saturating, NaN -> 0 */
int rows_of(CirType t);
/* exp on the fast unit (ex2.approx, subnormal results flushed to 0) */
MlirValue lk_exp(LK *L, MlirValue x);
int cols_of(CirType t);

/* lower_async.c: tile loads with cp.async */
int async_candidate(LK *L, const CirInst *in);
void async_copy(LK *L, const CirInst *in, MlirValue dst_base);
void async_commit(LK *L);
void async_wait(LK *L, int pending);

/* lower_dot.c */
MlirValue ldmatrix_at(LK *L, MlirValue byte_off, int num, int trans);
/* d = a b + c on tensor cores (m16n8k16, bf16 or f16 operands, f32 accumulators) */
MlirOperation mma_sync(LK *L, DType dt, MlirValue a[4], MlirValue b[2], MlirValue c[4]);
void lower_matmul(LK *L, const CirInst *in);
const CirInst *operand_source(const CirInst *v, int *trans);
int operand_needs_stage(LK *L, const CirInst *src);
/* Does matmul mm, or one summed into its accumulators, stage an operand? */
int matmul_stages(LK *L, const CirInst *mm);

/* lower_misc.c */
/* An operand read at random places (solve, decay): from shared memory (its
 * own home or a staged copy) or recomputed where read when cheap. */
typedef struct View {
  MlirValue base;
  DType sdt;
  int stride;
  DType dt;
  const CirInst *fused;
} View;
View operand_view(LK *L, const CirInst *op, int which);
Vals view_vals(LK *L, const View *v, MlirValue r, MlirValue c, int W); /* f32 lanes */
/* x from lane (lane ^ offset); every lane of the warp must take part */
MlirValue lk_shuffle_xor(LK *L, MlirValue x, int offset);
void lower_reduce(LK *L, const CirInst *in);
void lower_scan(LK *L, const CirInst *in);
void lower_solve(LK *L, const CirInst *in);
/* the staging of unit_lower_inv of size n: X [rows][cols] of its widest merge level */
void solve_x_shape(int n, int *rows, int *cols);
/* lower_decay.c */
void lower_decay(LK *L, const CirInst *in);
int decay_bprime_rows(int C);
/* lower_decay_grad.c: decay_mm, decay_mm_t */
void lower_decay_mm(LK *L, const CirInst *in);
/* Does decay_mm / decay_mm_t take the blocked form (tensor cores off the diagonal)? */
int decay_mm_blocked(const LK *L, const CirInst *in);
/* Operands of solve / decay that must be copied to f32 shared memory first. */
int needs_f32_stage(LK *L, const CirInst *src);

/* Build the gpu.module of one kernel into `module_body`. 0 on success. */
int lower_kernel(Arena *arena, Diag *diag, MlirContext ctx, MlirBlock module_body, const CirProgram *p,
                 const CirKernel *k, const KernelAbi *abi, const Target *target, const char *symbol, int *smem_bytes);

#endif
