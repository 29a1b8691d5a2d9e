/* mlb.c - the op builder (see mlb.h). */
#include "mlb.h"

#include <mlir-c/Dialect/LLVM.h>
#include <stdio.h>
#include <string.h>

static MlirStringRef S(const char *s) { return mlirStringRefCreateFromCString(s); }

MlirType mlb_type(Mlb *b, const char *text) {
  MlirType t = mlirTypeParseGet(b->ctx, S(text));
  if (mlirTypeIsNull(t)) cake_die("cannot parse MLIR type '%s'", text);
  return t;
}

MlirAttribute mlb_attr(Mlb *b, const char *text) {
  MlirAttribute a = mlirAttributeParseGet(b->ctx, S(text));
  if (mlirAttributeIsNull(a)) cake_die("cannot parse MLIR attribute '%s'", text);
  return a;
}

MlirType mlb_vec(Mlb *b, int n, MlirType elem) {
  int64_t shape[1] = {n};
  return mlirVectorTypeGet(1, shape, elem);
}

MlirNamedAttribute mlb_named(Mlb *b, const char *name, MlirAttribute a) {
  return mlirNamedAttributeGet(mlirIdentifierGet(b->ctx, S(name)), a);
}

void mlb_init(Mlb *b, MlirContext ctx) {
  memset(b, 0, sizeof *b);
  b->ctx = ctx;
  b->loc = mlirLocationUnknownGet(ctx);
  b->i1 = mlirIntegerTypeGet(ctx, 1);
  b->i8 = mlirIntegerTypeGet(ctx, 8);
  b->i16 = mlirIntegerTypeGet(ctx, 16);
  b->i32 = mlirIntegerTypeGet(ctx, 32);
  b->i64 = mlirIntegerTypeGet(ctx, 64);
  b->f32 = mlirF32TypeGet(ctx);
  b->bf16 = mlirBF16TypeGet(ctx);
  b->f16 = mlirF16TypeGet(ctx);
  b->index = mlirIndexTypeGet(ctx);
  b->ptr_g = mlb_type(b, "!llvm.ptr<1>");
  b->ptr_s = mlb_type(b, "!llvm.ptr<3>");
  b->ptr_generic = mlb_type(b, "!llvm.ptr");
}

/* Ops after which a block barrier orders nothing more than the previous one
 * did: register arithmetic, region terminators, and asynchronous copies
 * issued or committed (their data is ordered by a wait and the barrier after
 * it, not by the barrier that follows the issue). */
static int barrier_neutral(const char *name) {
  static const char *const prefixes[] = {"arith.", "math.", "llvm.mlir.constant", "llvm.mlir.undef",
                                         "llvm.mlir.poison", "llvm.extractvalue", "llvm.insertvalue",
                                         "llvm.extractelement", "llvm.insertelement", "llvm.bitcast",
                                         "llvm.getelementptr", "llvm.addrspacecast", "llvm.inttoptr", "llvm.ptrtoint",
                                         "nvvm.read.ptx.sreg.", "gpu.thread_id", "gpu.block_id", "scf.yield",
                                         "nvvm.cp.async.shared.global", "nvvm.cp.async.commit.group"};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (!strncmp(name, prefixes[i], strlen(prefixes[i]))) return 1;
  return 0;
}

MlirOperation mlb_op(Mlb *b, const char *name, int nres, const MlirType *res, int nops, const MlirValue *ops,
                     int nattrs, const MlirNamedAttribute *attrs) {
  MlirOperationState st = mlirOperationStateGet(S(name), b->loc);
  if (nres) mlirOperationStateAddResults(&st, nres, res);
  if (nops) mlirOperationStateAddOperands(&st, nops, ops);
  if (nattrs) mlirOperationStateAddAttributes(&st, nattrs, attrs);
  MlirOperation op = mlirOperationCreate(&st);
  if (mlirOperationIsNull(op)) cake_die("cannot create MLIR operation '%s'", name);
  mlirBlockAppendOwnedOperation(b->block, op);
  if (!barrier_neutral(name)) b->quiet = 0;
  if (!strncmp(name, "nvvm.cp.async.shared", 20)) b->copied = 1;
  return op;
}

MlirValue mlb_res(MlirOperation op, int i) { return mlirOperationGetResult(op, i); }

MlirValue mlb_op1(Mlb *b, const char *name, MlirType res, int nops, const MlirValue *ops, int nattrs,
                  const MlirNamedAttribute *attrs) {
  return mlb_res(mlb_op(b, name, 1, &res, nops, ops, nattrs, attrs), 0);
}

MlirValue mlb_const(Mlb *b, MlirType t, double v) {
  MlirAttribute a;
  if (mlirTypeIsAFloat(t)) a = mlirFloatAttrDoubleGet(b->ctx, t, v);
  else a = mlirIntegerAttrGet(t, (int64_t)v);
  MlirNamedAttribute na = mlb_named(b, "value", a);
  return mlb_op1(b, "arith.constant", t, 0, NULL, 1, &na);
}

MlirValue mlb_i32(Mlb *b, long long v) { return mlb_const(b, b->i32, (double)v); }
MlirValue mlb_i64(Mlb *b, long long v) {
  MlirNamedAttribute na = mlb_named(b, "value", mlirIntegerAttrGet(b->i64, v));
  return mlb_op1(b, "arith.constant", b->i64, 0, NULL, 1, &na);
}
MlirValue mlb_f32(Mlb *b, double v) { return mlb_const(b, b->f32, v); }
MlirValue mlb_bool(Mlb *b, int v) { return mlb_const(b, b->i1, v ? 1 : 0); }

/* Float adds, subtracts and multiplies may contract into fused multiply-adds
 * (one rounding instead of two), except while b->no_contract is set: the same
 * code always fuses the same pairs, so results stay bitwise repeatable. */
MlirValue mlb_bin(Mlb *b, const char *arith_op, MlirValue x, MlirValue y) {
  MlirValue ops[2] = {x, y};
  if (!b->no_contract && (!strcmp(arith_op, "arith.addf") || !strcmp(arith_op, "arith.subf") || !strcmp(arith_op, "arith.mulf"))) {
    MlirNamedAttribute fm = mlb_named(b, "fastmath", mlb_attr(b, "#arith.fastmath<contract>"));
    return mlb_op1(b, arith_op, mlirValueGetType(x), 2, ops, 1, &fm);
  }
  return mlb_op1(b, arith_op, mlirValueGetType(x), 2, ops, 0, NULL);
}

static int is_float_value(MlirValue v) {
  MlirType t = mlirValueGetType(v);
  if (mlirTypeIsAVector(t)) t = mlirShapedTypeGetElementType(t);
  return mlirTypeIsAFloat(t);
}

MlirValue mlb_add(Mlb *b, MlirValue x, MlirValue y) {
  return mlb_bin(b, is_float_value(x) ? "arith.addf" : "arith.addi", x, y);
}
MlirValue mlb_mul(Mlb *b, MlirValue x, MlirValue y) {
  return mlb_bin(b, is_float_value(x) ? "arith.mulf" : "arith.muli", x, y);
}

MlirValue mlb_bin_c(Mlb *b, const char *arith_op, MlirValue x, long long k) {
  MlirValue c = mlb_i32(b, k);
  return mlb_bin(b, arith_op, x, c);
}
MlirValue mlb_add_c(Mlb *b, MlirValue x, long long k) { return mlb_bin_c(b, "arith.addi", x, k); }
MlirValue mlb_mul_c(Mlb *b, MlirValue x, long long k) { return mlb_bin_c(b, "arith.muli", x, k); }
MlirValue mlb_binf_c(Mlb *b, const char *arith_op, MlirValue x, double k) {
  MlirValue c = mlb_f32(b, k);
  return mlb_bin(b, arith_op, x, c);
}

static int pred_code(const char *const *names, int n, const char *pred) {
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], pred)) return i;
  cake_die("unknown comparison predicate '%s'", pred);
}

MlirValue mlb_cmpi(Mlb *b, const char *pred, MlirValue x, MlirValue y) {
  static const char *const names[] = {"eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"};
  MlirNamedAttribute na = mlb_named(b, "predicate", mlirIntegerAttrGet(b->i64, pred_code(names, 10, pred)));
  MlirValue ops[2] = {x, y};
  return mlb_op1(b, "arith.cmpi", b->i1, 2, ops, 1, &na);
}

MlirValue mlb_cmpf(Mlb *b, const char *pred, MlirValue x, MlirValue y) {
  static const char *const names[] = {"false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
                                      "ueq",   "ugt", "uge", "ult", "ule", "une", "uno", "true"};
  MlirNamedAttribute na = mlb_named(b, "predicate", mlirIntegerAttrGet(b->i64, pred_code(names, 16, pred)));
  MlirValue ops[2] = {x, y};
  return mlb_op1(b, "arith.cmpf", b->i1, 2, ops, 1, &na);
}

MlirValue mlb_select(Mlb *b, MlirValue c, MlirValue x, MlirValue y) {
  MlirValue ops[3] = {c, x, y};
  return mlb_op1(b, "arith.select", mlirValueGetType(x), 3, ops, 0, NULL);
}

MlirValue mlb_cast(Mlb *b, const char *op, MlirValue x, MlirType to) { return mlb_op1(b, op, to, 1, &x, 0, NULL); }

MlirValue mlb_intrinsic(Mlb *b, const char *name, MlirType res, int n, const MlirValue *args) {
  int32_t seg[2] = {n, 0};
  MlirNamedAttribute na[3] = {
      mlb_named(b, "intrin", mlirStringAttrGet(b->ctx, S(name))),
      mlb_named(b, "operandSegmentSizes", mlirDenseI32ArrayGet(b->ctx, 2, seg)),
      mlb_named(b, "op_bundle_sizes", mlirDenseI32ArrayGet(b->ctx, 0, NULL)),
  };
  return mlb_op1(b, "llvm.call_intrinsic", res, n, args, 3, na);
}

MlirValue mlb_gep(Mlb *b, MlirValue base, MlirValue byte_off) {
  int32_t dyn = INT32_MIN; /* "dynamic index" marker of llvm.getelementptr */
  MlirNamedAttribute na[2] = {
      mlb_named(b, "rawConstantIndices", mlirDenseI32ArrayGet(b->ctx, 1, &dyn)),
      mlb_named(b, "elem_type", mlirTypeAttrGet(b->i8)),
  };
  MlirValue ops[2] = {base, byte_off};
  return mlb_op1(b, "llvm.getelementptr", mlirValueGetType(base), 2, ops, 2, na);
}

MlirValue mlb_load(Mlb *b, MlirType t, MlirValue ptr, int align) {
  MlirNamedAttribute na = mlb_named(b, "alignment", mlirIntegerAttrGet(b->i64, align));
  return mlb_op1(b, "llvm.load", t, 1, &ptr, 1, &na);
}

MlirValue mlb_load_table(Mlb *b, MlirType t, MlirValue ptr, int align) {
  /* the tables live in device memory (address space 1), never in shared memory */
  CAKE_ASSERT(mlirLLVMPointerTypeGetAddressSpace(mlirValueGetType(ptr)) == 1);
  int quiet = b->quiet;
  MlirValue v = mlb_load(b, t, ptr, align);
  b->quiet = quiet; /* no thread writes it: nothing for a barrier to order */
  return v;
}

void mlb_store(Mlb *b, MlirValue v, MlirValue ptr, int align) {
  MlirNamedAttribute na = mlb_named(b, "alignment", mlirIntegerAttrGet(b->i64, align));
  MlirValue ops[2] = {v, ptr};
  mlb_op(b, "llvm.store", 0, NULL, 2, ops, 1, &na);
}

MlirValue mlb_extract(Mlb *b, MlirValue agg, int i, MlirType t) {
  int64_t pos = i;
  MlirNamedAttribute na = mlb_named(b, "position", mlirDenseI64ArrayGet(b->ctx, 1, &pos));
  return mlb_op1(b, "llvm.extractvalue", t, 1, &agg, 1, &na);
}

MlirValue mlb_vextract(Mlb *b, MlirValue vec, int i) {
  MlirValue ops[2] = {vec, mlb_i32(b, i)};
  MlirType et = mlirShapedTypeGetElementType(mlirValueGetType(vec));
  return mlb_op1(b, "llvm.extractelement", et, 2, ops, 0, NULL);
}

MlirValue mlb_vinsert(Mlb *b, MlirValue vec, MlirValue v, int i) {
  MlirValue ops[3] = {vec, v, mlb_i32(b, i)};
  return mlb_op1(b, "llvm.insertelement", mlirValueGetType(vec), 3, ops, 0, NULL);
}

MlirValue mlb_undef(Mlb *b, MlirType t) { return mlb_op1(b, "llvm.mlir.undef", t, 0, NULL, 0, NULL); }

MlirValue mlb_bitcast(Mlb *b, MlirValue v, MlirType t) { return mlb_op1(b, "llvm.bitcast", t, 1, &v, 0, NULL); }

/* ---- scf ---- */

static MlirRegion new_region_with_block(Mlb *b, int nargs, const MlirType *types, MlirBlock *out) {
  MlirRegion r = mlirRegionCreate();
  MlirLocation locs[65];
  for (int i = 0; i < nargs; i++) locs[i] = b->loc;
  MlirBlock blk = mlirBlockCreate(nargs, types, locs);
  mlirRegionAppendOwnedBlock(r, blk);
  *out = blk;
  return r;
}

void mlb_for_begin(Mlb *b, MlbFor *f, MlirValue lo, MlirValue hi, MlirValue step, int niter, const MlirValue *init) {
  memset(f, 0, sizeof *f);
  CAKE_ASSERT(niter <= 64);
  MlirType types[65];
  types[0] = mlirValueGetType(lo);
  for (int i = 0; i < niter; i++) types[i + 1] = mlirValueGetType(init[i]);
  MlirOperationState st = mlirOperationStateGet(S("scf.for"), b->loc);
  MlirValue ops[67];
  ops[0] = lo;
  ops[1] = hi;
  ops[2] = step;
  for (int i = 0; i < niter; i++) ops[3 + i] = init[i];
  mlirOperationStateAddOperands(&st, 3 + niter, ops);
  if (niter) mlirOperationStateAddResults(&st, niter, types + 1);
  MlirRegion r = new_region_with_block(b, niter + 1, types, &f->body);
  mlirOperationStateAddOwnedRegions(&st, 1, &r);
  f->op = mlirOperationCreate(&st);
  if (mlirOperationIsNull(f->op)) cake_die("cannot create scf.for");
  mlirBlockAppendOwnedOperation(b->block, f->op);
  f->iv = mlirBlockGetArgument(f->body, 0);
  f->niter = niter;
  for (int i = 0; i < niter; i++) f->iter[i] = mlirBlockGetArgument(f->body, i + 1);
  f->saved = b->block;
  b->block = f->body;
}

/* Leaving a region: a barrier inside it is not one of the enclosing block's
 * (the next barrier there is needed) */
static void leave_region(Mlb *b, MlirBlock inner, MlirBlock outer) {
  if (mlirBlockEqual(b->bar_block, inner)) b->quiet = 0;
  b->block = outer;
}

void mlb_for_end(Mlb *b, MlbFor *f, int n, const MlirValue *yield) {
  CAKE_ASSERT(n == f->niter);
  mlb_op(b, "scf.yield", 0, NULL, n, yield, 0, NULL);
  leave_region(b, f->body, f->saved);
}

void mlb_if_begin(Mlb *b, MlbIf *f, MlirValue cond, int nres, const MlirType *res) {
  memset(f, 0, sizeof *f);
  MlirOperationState st = mlirOperationStateGet(S("scf.if"), b->loc);
  mlirOperationStateAddOperands(&st, 1, &cond);
  if (nres) mlirOperationStateAddResults(&st, nres, res);
  MlirRegion r[2];
  r[0] = new_region_with_block(b, 0, NULL, &f->then_b);
  r[1] = new_region_with_block(b, 0, NULL, &f->else_b);
  mlirOperationStateAddOwnedRegions(&st, 2, r);
  f->op = mlirOperationCreate(&st);
  if (mlirOperationIsNull(f->op)) cake_die("cannot create scf.if");
  mlirBlockAppendOwnedOperation(b->block, f->op);
  f->nres = nres;
  f->saved = b->block;
  b->block = f->then_b;
}

void mlb_if_else(Mlb *b, MlbIf *f, int n, const MlirValue *yield) {
  mlb_op(b, "scf.yield", 0, NULL, n, yield, 0, NULL);
  leave_region(b, f->then_b, f->else_b);
}

void mlb_if_end(Mlb *b, MlbIf *f, int n, const MlirValue *yield) {
  mlb_op(b, "scf.yield", 0, NULL, n, yield, 0, NULL);
  leave_region(b, f->else_b, f->saved);
}

/* ---- gpu ---- */

static MlirValue gpu_id(Mlb *b, const char *op, int dim) {
  static const char *const dims[] = {"#gpu<dim x>", "#gpu<dim y>", "#gpu<dim z>"};
  MlirNamedAttribute na = mlb_named(b, "dimension", mlb_attr(b, dims[dim]));
  MlirValue idx = mlb_op1(b, op, b->index, 0, NULL, 1, &na);
  return mlb_cast(b, "arith.index_cast", idx, b->i32);
}

MlirValue mlb_thread_id(Mlb *b) { return gpu_id(b, "gpu.thread_id", 0); }
MlirValue mlb_block_id(Mlb *b, int dim) { return gpu_id(b, "gpu.block_id", dim); }
void mlb_barrier(Mlb *b) {
  if (b->quiet && mlirBlockEqual(b->bar_block, b->block)) return;
  b->bar_op = mlb_op(b, "gpu.barrier", 0, NULL, 0, NULL, 0, NULL);
  b->quiet = 1;
  b->copied = 0;
  b->bar_block = b->block;
}

int mlb_drop_barrier(Mlb *b) {
  /* a copy issued after it writes a buffer the barrier let go of */
  if (!b->quiet || b->copied || !mlirBlockEqual(b->bar_block, b->block)) return 0;
  mlirOperationDestroy(b->bar_op);
  b->quiet = 0;
  return 1;
}
