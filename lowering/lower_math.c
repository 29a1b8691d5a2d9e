/* lower_math.c - the elementwise functions that need care near 0 or at the
 * ends of the range: tanh, log1p, expm1, logsigmoid, silu (dsl/README.md,
 * "Accuracy of the elementwise functions").
 *
 * The fast units give ex2 with a relative error of about 2^-22 and lg2 with
 * an absolute error of about 2^-22.6 (not a relative one: lg2(u) near u = 1
 * has few correct bits). So nothing here takes lg2 of a value near 1 nor
 * subtracts two nearly equal results of them:
 *   exp_acc(x)  2^y (1 + t) with y = x log2 e rounded and t = ln 2 times the
 *               rounding error of y (by fma): the rounding of x log2 e, which
 *               grows with |x|, is compensated; x is clamped to [-104, 89],
 *               which changes no f32 result, so the correction is never NaN.
 *               Results below 2^-126 flush to 0 (ex2.approx.ftz).
 *   expm1(x)    |x| < 1: p (p + 2), p = h P(h) = expm1(h), h = x / 2, P the
 *               Taylor polynomial of degree 7 (truncation < 2^-26 for
 *               |h| < 1/2); else exp_acc(x) - 1 (no cancellation: |x| >= 1).
 *   log1p(x)    x in [-1/2, 1]: 2 atanh(s) = 2 s Q(s^2), s = x / (2 + x),
 *               |s| <= 1/3, Q of degree 6 (truncation < 2^-26); else
 *               lg2(1 + x) ln 2, where 1 + x is outside [1/2, 2] and lg2's
 *               absolute error is a relative one.
 *   tanh(x)     copysign(m / (m + 2), x), m = expm1(2 min(|x|, 10)):
 *               tanh(10) rounds to 1, and the clamp keeps m finite.
 *   logsigmoid  -(max(-x, 0) + log1p(e)), e = exp_acc(-|x|) in [0, 1], log1p
 *               by the series (s <= 1/3): no cut-off, no overflow.
 *   silu(x)     x n / (1 + e), e = exp_acc(-|x|), n = 1 for x >= 0 and e
 *               below (x sigmoid(x) without overflow); -0 at x = -inf.
 * Polynomials run on fma. Every step is an f32 operation with one rounding,
 * so scripts/ops_accuracy.py replays them in NumPy to bound the error.
 *
 * lowering/mlb.h: one builder call per argument list. */
#include <math.h>

#include "lower.h"

static MlirValue fma3(Mlb *b, MlirValue x, MlirValue y, MlirValue z) {
  MlirValue a[3] = {x, y, z};
  return mlb_intrinsic(b, "llvm.fma.f32", b->f32, 3, a);
}

static MlirValue un(Mlb *b, const char *name, MlirValue x) { return mlb_intrinsic(b, name, b->f32, 1, &x); }

/* p(z) = c[0] z^(n-1) + ... + c[n-1], by Horner's rule on fma */
static MlirValue horner(Mlb *b, MlirValue z, const double *c, int n) {
  MlirValue p = mlb_f32(b, c[0]);
  for (int i = 1; i < n; i++) {
    MlirValue k = mlb_f32(b, c[i]);
    p = fma3(b, p, z, k);
  }
  return p;
}

/* exp(x) with the rounding of x log2 e compensated (see the top) */
static MlirValue exp_acc(Mlb *b, MlirValue x) {
  const double l2e = 1.4426950408889634, l2e_lo = l2e - (double)(float)l2e;
  MlirValue xc = mlb_binf_c(b, "arith.maximumf", x, -104.0); /* NaN stays NaN */
  xc = mlb_binf_c(b, "arith.minimumf", xc, 89.0);
  MlirValue y = mlb_binf_c(b, "arith.mulf", xc, l2e);
  MlirValue ny = mlb_cast(b, "arith.negf", y, b->f32);
  MlirValue k = mlb_f32(b, l2e);
  MlirValue err = fma3(b, xc, k, ny); /* x log2 e - y, exactly */
  MlirValue klo = mlb_f32(b, l2e_lo);
  err = fma3(b, xc, klo, err);
  MlirValue t = mlb_binf_c(b, "arith.mulf", err, 0.6931471805599453);
  MlirValue e = un(b, "llvm.nvvm.ex2.approx.ftz.f32", y);
  MlirValue scale = mlb_binf_c(b, "arith.addf", t, 1.0);
  return mlb_bin(b, "arith.mulf", e, scale);
}

static MlirValue expm1_acc(Mlb *b, MlirValue x) {
  static const double c[8] = {1 / 40320., 1 / 5040., 1 / 720., 1 / 120., 1 / 24., 1 / 6., 1 / 2., 1.};
  MlirValue h = mlb_binf_c(b, "arith.mulf", x, 0.5);
  MlirValue ph = horner(b, h, c, 8);
  MlirValue p = mlb_bin(b, "arith.mulf", h, ph); /* expm1(h); -0 stays -0 */
  MlirValue p2 = mlb_binf_c(b, "arith.addf", p, 2.0);
  MlirValue small = mlb_bin(b, "arith.mulf", p, p2);
  MlirValue u = exp_acc(b, x);
  MlirValue big = mlb_binf_c(b, "arith.subf", u, 1.0);
  MlirValue ax = un(b, "llvm.fabs.f32", x);
  MlirValue near0 = mlb_cmpf(b, "olt", ax, mlb_f32(b, 1.0));
  return mlb_select(b, near0, small, big);
}

/* log1p(x) = 2 atanh(s), s = x / (2 + x), for |s| <= 1/3; *s_out = s */
static MlirValue log1p_series(Mlb *b, MlirValue x, MlirValue *s_out) {
  static const double c[7] = {1 / 13., 1 / 11., 1 / 9., 1 / 7., 1 / 5., 1 / 3., 1.};
  MlirValue d = mlb_binf_c(b, "arith.addf", x, 2.0);
  MlirValue s = mlb_bin(b, "arith.divf", x, d);
  MlirValue z = mlb_bin(b, "arith.mulf", s, s);
  MlirValue q = horner(b, z, c, 7);
  MlirValue s2 = mlb_bin(b, "arith.addf", s, s);
  if (s_out) *s_out = s;
  return mlb_bin(b, "arith.mulf", s2, q);
}

static MlirValue log1p_acc(Mlb *b, MlirValue x) {
  MlirValue s;
  MlirValue series = log1p_series(b, x, &s);
  MlirValue u = mlb_binf_c(b, "arith.addf", x, 1.0);
  MlirValue lu = un(b, "llvm.nvvm.lg2.approx.f", u);
  MlirValue big = mlb_binf_c(b, "arith.mulf", lu, 0.6931471805599453);
  /* |s| <= 1/3 exactly for x in [-1/2, 1]; false for NaN, -1, x < -1 and inf */
  MlirValue as = un(b, "llvm.fabs.f32", s);
  MlirValue third = mlb_f32(b, 1.0 / 3.0);
  MlirValue near0 = mlb_cmpf(b, "ole", as, third);
  return mlb_select(b, near0, series, big);
}

static MlirValue tanh_acc(Mlb *b, MlirValue x) {
  MlirValue ax = un(b, "llvm.fabs.f32", x);
  MlirValue t = mlb_binf_c(b, "arith.minimumf", ax, 10.0); /* NaN stays NaN */
  MlirValue t2 = mlb_bin(b, "arith.addf", t, t);
  MlirValue m = expm1_acc(b, t2);
  MlirValue d = mlb_binf_c(b, "arith.addf", m, 2.0);
  MlirValue y = mlb_bin(b, "arith.divf", m, d);
  MlirValue a[2] = {y, x};
  return mlb_intrinsic(b, "llvm.copysign.f32", b->f32, 2, a);
}

static MlirValue logsigmoid_acc(Mlb *b, MlirValue x) {
  MlirValue ax = un(b, "llvm.fabs.f32", x);
  MlirValue nax = mlb_cast(b, "arith.negf", ax, b->f32);
  MlirValue e = exp_acc(b, nax);
  MlirValue l = log1p_series(b, e, NULL);
  MlirValue nx = mlb_cast(b, "arith.negf", x, b->f32);
  MlirValue m = mlb_binf_c(b, "arith.maximumf", nx, 0.0);
  MlirValue sp = mlb_bin(b, "arith.addf", m, l);
  return mlb_cast(b, "arith.negf", sp, b->f32);
}

static MlirValue silu_acc(Mlb *b, MlirValue x) {
  MlirValue ax = un(b, "llvm.fabs.f32", x);
  MlirValue nax = mlb_cast(b, "arith.negf", ax, b->f32);
  MlirValue e = exp_acc(b, nax);
  MlirValue pos = mlb_cmpf(b, "oge", x, mlb_f32(b, 0.0));
  MlirValue one = mlb_f32(b, 1.0);
  MlirValue num = mlb_select(b, pos, one, e);
  MlirValue den = mlb_binf_c(b, "arith.addf", e, 1.0);
  MlirValue s = mlb_bin(b, "arith.divf", num, den);
  MlirValue r = mlb_bin(b, "arith.mulf", x, s);
  MlirValue at_ninf = mlb_cmpf(b, "oeq", x, mlb_f32(b, -INFINITY));
  MlirValue nzero = mlb_f32(b, -0.0);
  return mlb_select(b, at_ninf, nzero, r);
}

MlirValue lower_math_unary(LK *L, CirOp op, MlirValue x) {
  Mlb *b = &L->b;
  switch (op) {
    case OP_TANH: return tanh_acc(b, x);
    case OP_LOG1P: return log1p_acc(b, x);
    case OP_EXPM1: return expm1_acc(b, x);
    case OP_LOGSIGMOID: return logsigmoid_acc(b, x);
    case OP_SILU: return silu_acc(b, x);
    default: cake_die("not a math op: %s", cake_ops[op].id);
  }
}
