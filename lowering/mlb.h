/* mlb.h - a small op builder over the MLIR C API.
 *
 * Contract: Mlb appends operations at the end of its current block, each with
 * the builder's current location (set from the CIR instruction being lowered,
 * so every MLIR op points back at .cake source). Operations are created the
 * way mlir/test/CAPI/ir.c does it: an MlirOperationState, operands, results,
 * attributes, regions, then mlirOperationCreate. Helpers exist for the ops the
 * lowering uses (arith, scf, gpu, llvm, nvvm); anything else goes through
 * mlb_op(). A malformed op is an internal error (cake_die).
 *
 * Order: C does not say in which order a call's arguments are evaluated, so
 * two builder calls given as arguments of one call would create their ops in
 * an order (and with SSA numbers, kernel names and PTX) that depends on the C
 * compiler. The lowering creates at most one op per call's argument list:
 * other builder calls go into statements before it, and the *_c helpers
 * below take a constant operand by value (created after `x`).
 * scripts/check_eval_order.py finds any that slip in.
 */
#ifndef CAKE_MLB_H
#define CAKE_MLB_H

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>
#include <mlir-c/IR.h>

#include "base.h"

typedef struct Mlb {
  MlirContext ctx;
  MlirBlock block;
  MlirLocation loc;
  /* since the last barrier, which is in `bar_block`, only ops that another
   * barrier would not order (register arithmetic, read-only table loads,
   * asynchronous copies issued, control flow around them): one more barrier
   * in bar_block would be redundant */
  int quiet;
  MlirBlock bar_block;
  MlirOperation bar_op; /* that barrier */
  int copied;           /* an asynchronous copy was issued since it */
  /* > 0: float adds and multiplies stay separate operations (no fma) */
  int no_contract;
  /* cached types */
  MlirType i1, i8, i16, i32, i64, f32, bf16, f16, index, ptr_g, ptr_s, ptr_generic;
} Mlb;

void mlb_init(Mlb *b, MlirContext ctx);

MlirType mlb_type(Mlb *b, const char *text); /* parse a type, e.g. "vector<4xf32>" */
MlirAttribute mlb_attr(Mlb *b, const char *text);
MlirType mlb_vec(Mlb *b, int n, MlirType elem);
MlirNamedAttribute mlb_named(Mlb *b, const char *name, MlirAttribute a);

/* Generic op: appends and returns the operation. */
MlirOperation mlb_op(Mlb *b, const char *name, int nres, const MlirType *res, int nops, const MlirValue *ops,
                     int nattrs, const MlirNamedAttribute *attrs);
MlirValue mlb_op1(Mlb *b, const char *name, MlirType res, int nops, const MlirValue *ops, int nattrs,
                  const MlirNamedAttribute *attrs);
MlirValue mlb_res(MlirOperation op, int i);

/* constants */
MlirValue mlb_i32(Mlb *b, long long v);
MlirValue mlb_i64(Mlb *b, long long v);
MlirValue mlb_f32(Mlb *b, double v);
MlirValue mlb_bool(Mlb *b, int v);
MlirValue mlb_const(Mlb *b, MlirType t, double v);

/* arithmetic: the result has x's type */
MlirValue mlb_bin(Mlb *b, const char *arith_op, MlirValue x, MlirValue y);
MlirValue mlb_add(Mlb *b, MlirValue x, MlirValue y); /* addi or addf by type */
MlirValue mlb_mul(Mlb *b, MlirValue x, MlirValue y);
/* x op an i32 constant k (x is i32), resp. an f32 constant (x is f32) */
MlirValue mlb_bin_c(Mlb *b, const char *arith_op, MlirValue x, long long k);
MlirValue mlb_add_c(Mlb *b, MlirValue x, long long k);
MlirValue mlb_mul_c(Mlb *b, MlirValue x, long long k);
MlirValue mlb_binf_c(Mlb *b, const char *arith_op, MlirValue x, double k);
MlirValue mlb_cmpi(Mlb *b, const char *pred, MlirValue x, MlirValue y); /* "slt", "eq", ... */
MlirValue mlb_cmpf(Mlb *b, const char *pred, MlirValue x, MlirValue y); /* "olt", ... */
MlirValue mlb_select(Mlb *b, MlirValue c, MlirValue x, MlirValue y);
MlirValue mlb_cast(Mlb *b, const char *op, MlirValue x, MlirType to); /* arith.extf, ... */
MlirValue mlb_intrinsic(Mlb *b, const char *name, MlirType res, int n, const MlirValue *args);

/* memory (llvm dialect); offsets in bytes */
MlirValue mlb_gep(Mlb *b, MlirValue base, MlirValue byte_off);
MlirValue mlb_load(Mlb *b, MlirType t, MlirValue ptr, int align);
/* a load of memory that nothing writes while the kernel runs (the runtime's tables) */
MlirValue mlb_load_table(Mlb *b, MlirType t, MlirValue ptr, int align);
void mlb_store(Mlb *b, MlirValue v, MlirValue ptr, int align);
MlirValue mlb_extract(Mlb *b, MlirValue agg, int i, MlirType t);    /* llvm.extractvalue */
MlirValue mlb_vextract(Mlb *b, MlirValue vec, int i);                 /* vector.extractelement via llvm */
MlirValue mlb_vinsert(Mlb *b, MlirValue vec, MlirValue v, int i);
MlirValue mlb_undef(Mlb *b, MlirType t);
MlirValue mlb_bitcast(Mlb *b, MlirValue v, MlirType t);

/* control flow: scf.for over i32 with loop-carried values */
typedef struct MlbFor {
  MlirOperation op;
  MlirBlock body, saved;
  MlirValue iv;
  MlirValue iter[64];
  int niter;
} MlbFor;
void mlb_for_begin(Mlb *b, MlbFor *f, MlirValue lo, MlirValue hi, MlirValue step, int niter, const MlirValue *init);
void mlb_for_end(Mlb *b, MlbFor *f, int n, const MlirValue *yield); /* results: mlb_res(f->op, i) */

typedef struct MlbIf {
  MlirOperation op;
  MlirBlock then_b, else_b, saved;
  int nres;
} MlbIf;
void mlb_if_begin(Mlb *b, MlbIf *f, MlirValue cond, int nres, const MlirType *res);
void mlb_if_else(Mlb *b, MlbIf *f, int n, const MlirValue *yield);
void mlb_if_end(Mlb *b, MlbIf *f, int n, const MlirValue *yield);

/* gpu */
MlirValue mlb_thread_id(Mlb *b);          /* i32 */
MlirValue mlb_block_id(Mlb *b, int dim);  /* i32; dim 0, 1, 2 = x, y, z */
void mlb_barrier(Mlb *b); /* a block barrier; none when one precedes it with nothing between that matters */
/* Remove the last barrier when nothing but register arithmetic and table
 * loads followed it in this block (no asynchronous copy either: its buffer
 * was freed by the barrier) and the caller knows that a later barrier orders
 * the same; 1 if it did. */
int mlb_drop_barrier(Mlb *b);

#endif
