/* test_interp.c - the CPU interpreter: each op against a direct computation,
 * scans with carries across documents, and the first program against its
 * float64 reference. Inputs are pseudo-random with a fixed seed (CI must be
 * reproducible; the GPU tests draw fresh inputs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"
#include "ref_first.h"

static Arena g_arena;
static Diag g_diag;

static CirProgram *compile(const char *text) {
  arena_free(&g_arena);
  diag_free(&g_diag);
  arena_init(&g_arena);
  diag_init(&g_diag, 20);
  Source *src = arena_alloc(&g_arena, sizeof(Source));
  *src = (Source){"t.cake", arena_strdup(&g_arena, text), strlen(text)};
  Program *ast = cake_parse(&g_arena, &g_diag, src);
  CirProgram *p = ast ? cake_sema(&g_arena, &g_diag, ast, NULL) : NULL;
  if (!p) fprintf(stderr, "%s", g_diag.out.data);
  assert_non_null(p);
  return p;
}

static uint64_t g_rng = 12345;
static double urand(void) {
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(g_rng >> 11) / 9007199254740992.0;
}

static char *read_text(const char *path) {
  Buf b;
  buf_init(&b);
  assert_int_equal(buf_read_file(&b, path), 0);
  return buf_take(&b);
}

static void rounding(void **st) {
  assert_true(cake_round_bf16(1.0) == 1.0);
  assert_true(cake_round_bf16(1.0 + 1.0 / 256) == 1.0);                 /* tie to even */
  assert_true(cake_round_bf16(1.0 + 3.0 / 256) == 1.0 + 4.0 / 256);    /* tie to even, up */
  assert_true(cake_round_bf16(1.0 + 1.5 / 256) == 1.0 + 2.0 / 256);
  assert_true(isnan(cake_round_bf16(NAN)));
  assert_true(cake_round_f16(1.0 + 1.0 / 4096) == 1.0);
}

/* cumsum, tril, sum, where, valid, unit_lower_inv and decay_dot on one chunk */
static void ops_on_a_chunk(void **st) {
  CirProgram *p = compile(
      "program t\ndim T\nconst C = 16\nsequence T, chunk C\n"
      "in a, g : f32[T, C]\n"
      "out cs, tl, inv, dd, sm, vv : f32[T, C]\n"
      "kernel k over (c in chunks) {\n"
      "  x = load a[c, :]\n"
      "  G = cumsum(-abs(load g[c, :]), 0)\n"
      "  store cs[c, :] = cumsum(x, 0)\n"
      "  store tl[c, :] = tril(x, -1)\n"
      "  store inv[c, :] = unit_lower_inv(x)\n"
      "  store dd[c, :] = decay_dot(x, x, G)\n"
      "  store sm[c, :] = sum(x, 1)[:, None] + rcumsum(x, 1)\n"
      "  store vv[c, :] = where(valid(c)[:, None], x, 7.0)\n"
      "}\nentry fwd = k\n");
  enum { C = 16, T = 13 }; /* one partial chunk */
  double a[T * C], g[T * C], out[6][T * C];
  for (int i = 0; i < T * C; i++) a[i] = cake_round_f32(urand() - 0.5), g[i] = cake_round_f32(urand());
  for (int o = 0; o < 6; o++)
    for (int i = 0; i < T * C; i++) out[o][i] = NAN;
  long long dims[2] = {T}; /* T, chunks (not read) */
  assert_int_equal(p->ndims, 2);
  double *tensors[8] = {a, g, out[0], out[1], out[2], out[3], out[4], out[5]};
  InterpArgs args = {dims, NULL, 0, NULL, tensors, 0, 0, NULL, NULL, 0, 0};
  char err[256];
  assert_int_equal(cake_interp_run(p, "fwd", &args, err, sizeof err), 0);
  /* rows past T were loaded as 0, so every quantity is that of the padded chunk */
  double x[C][C] = {{0}}, G[C][C] = {{0}};
  for (int r = 0; r < T; r++)
    for (int c = 0; c < C; c++) x[r][c] = a[r * C + c];
  for (int c = 0; c < C; c++) {
    double acc = 0;
    for (int r = 0; r < C; r++) acc += r < T ? -fabs(g[r * C + c]) : 0, G[r][c] = acc;
  }
  for (int r = 0; r < T; r++)
    for (int c = 0; c < C; c++) {
      double cs = 0;
      for (int i = 0; i <= r; i++) cs += x[i][c];
      assert_true(fabs(out[0][r * C + c] - cs) < 1e-6); /* stored as f32 */
      assert_true(out[1][r * C + c] == (c < r ? x[r][c] : 0));
      double dd = 0;
      if (c <= r)
        for (int k = 0; k < C; k++) dd += x[r][k] * x[c][k] * exp(G[r][k] - G[c][k]);
      assert_true(fabs(out[3][r * C + c] - dd) < 1e-6);
      double rowsum = 0, suffix = 0;
      for (int k = 0; k < C; k++) rowsum += x[r][k];
      for (int k = c; k < C; k++) suffix += x[r][k];
      assert_true(fabs(out[4][r * C + c] - (rowsum + suffix)) < 1e-6);
      assert_true(out[5][r * C + c] == x[r][c]);
    }
  /* (I + tril(x, -1)) @ inv == I on the whole padded chunk: check the stored rows */
  for (int r = 0; r < T; r++)
    for (int c = 0; c < C; c++) {
      double acc = out[2][r * C + c];
      for (int j = 0; j < r; j++) acc += x[r][j] * (j < T ? out[2][j * C + c] : (j == c));
      assert_true(fabs(acc - (r == c)) < 1e-6);
    }
}

/* A scan: the running sum of every chunk's column sums, per document, from h0. */
static void scan_over_documents(void **st) {
  CirProgram *p = compile(
      "program t\ndim T, N\nconst C = 16\nsequence T, docs N, chunk C\n"
      "in x : f32[T, 4]\nin h0 : f32[N, 4] optional\nout y : f32[T, 4]\nout ht : f32[N, 4]\n"
      "kernel k over (n in docs) {\n"
      "  S = load h0[n, :] or 1.5\n"
      "  for c in chunks(n) carry S {\n"
      "    v = load x[c, :]\n"
      "    store y[c, :] = v + S[None, :]\n"
      "    S = S + sum(v, 0)\n"
      "  }\n"
      "  store ht[n, :] = S\n"
      "}\nentry fwd = k\n");
  enum { T = 50 };
  long long cu[4] = {0, 17, 17, 50}; /* an empty document in the middle */
  double x[T * 4], y[T * 4], ht[3 * 4];
  for (int i = 0; i < T * 4; i++) x[i] = urand();
  long long dims[3] = {T, 3}; /* T, N, chunks: N and chunks are not read */
  assert_int_equal(p->ndims, 3);
  double *tensors[4] = {x, NULL, y, ht};
  InterpArgs args = {dims, cu, 3, NULL, tensors, 0, 0, NULL, NULL, 0, 0};
  char err[256];
  assert_int_equal(cake_interp_run(p, "fwd", &args, err, sizeof err), 0);
  for (int d = 0; d < 3; d++)
    for (int j = 0; j < 4; j++) {
      double S = 1.5;
      for (long long t0 = cu[d]; t0 < cu[d + 1]; t0 += 16) {
        double sum = 0;
        for (long long t = t0; t < t0 + 16 && t < cu[d + 1]; t++) {
          assert_true(fabs(y[t * 4 + j] - cake_round_f32(x[t * 4 + j] + S)) < 1e-6);
          sum += x[t * 4 + j];
        }
        S = cake_round_f32(S + sum); /* an f32 carry holds f32 values from step to step */
      }
      assert_true(fabs(ht[d * 4 + j] - S) < 1e-5);
    }
}

static double rms_ratio(const double *a, const double *b, long long n) {
  double se = 0, sr = 0;
  for (long long i = 0; i < n; i++) se += (a[i] - b[i]) * (a[i] - b[i]), sr += b[i] * b[i];
  return sqrt(se / sr);
}

/* The first program: the interpreter against the float64 reference. The spec
 * rounds p and s to bf16 for the second matmul, so they agree to bf16 level. */
static void first_program_matches_reference(void **st) {
  char *text = read_text(CAKE_SOURCE_DIR "/specs/first/first.cake");
  CirProgram *p = compile(text);
  enum { T = 200, H = 2, D = 64 };
  int32_t cu32[4] = {0, 1, 70, 200};
  long long cu[4] = {0, 1, 70, 200};
  static double x[T * H * D], y[T * H * D], w[H * D], z[T * H * D], ref[T * H * D];
  for (int i = 0; i < T * H * D; i++) x[i] = cake_round_bf16(urand() * 2 - 1), y[i] = cake_round_bf16(urand() * 2 - 1);
  for (int i = 0; i < H * D; i++) w[i] = urand() * 2 - 1;
  long long dims[3] = {T, H}; /* T, H, chunks (not read) */
  assert_int_equal(p->ndims, 3);
  double *tensors[4] = {x, y, w, z};
  InterpArgs args = {dims, cu, 3, NULL, tensors, 0, 0, NULL, NULL, 0, 0};
  char err[256];
  /* the first program has no docs dim; documents still split its chunks */
  assert_int_equal(cake_interp_run(p, "fwd", &args, err, sizeof err), 0);
  ref_first(T, H, cu32, 3, x, y, w, ref);
  double e = rms_ratio(z, ref, T * H * D);
  printf("first: interpreter vs float64 reference, error ratio %.3e\n", e);
  assert_true(e < 1e-2);
  assert_true(e > 1e-6); /* the bf16 rounding in the spec is visible: the test compares real values */
  free(text);
}

/* The results the GPU code gives too (dsl/README.md): i32 division and
 * remainder by 0 and INT32_MIN / -1, wrapping i32 arithmetic, saturating
 * float -> i32, NaN through maximum / minimum / amax, signed zeros, and
 * softplus = max(x, 0) + log1p(exp(-|x|)) with no cut-off. */
static void integer_and_special_values(void **st) {
  CirProgram *p = compile(
      "program t\ndim T\nsequence T, chunk 16\n"
      "in a, b : i32[T, 16]\nin x, y : f32[T, 16]\n"
      "out q, r, s, m, n : i32[T, 16]\nout mx, mn, sp : f32[T, 16]\nout am : f32[T]\n"
      "kernel k over (c in chunks) {\n"
      "  i = load a[c, :]\n  j = load b[c, :]\n  u = load x[c, :]\n  v = load y[c, :]\n"
      "  store q[c, :] = i / j\n  store r[c, :] = i % j\n  store s[c, :] = i + j\n  store m[c, :] = i * j\n"
      "  store n[c, :] = u as i32\n"
      "  store mx[c, :] = maximum(u, v)\n  store mn[c, :] = minimum(u, v)\n  store sp[c, :] = softplus(u)\n"
      "  store am[c] = amax(u, 1)\n"
      "}\nentry fwd = k\n");
  enum { T = 16, C = 16 };
  const double IMIN = -2147483648.0, IMAX = 2147483647.0;
  static double a[T * C], b[T * C], x[T * C], y[T * C], out[8][T * C], am[T];
  /* row 0: the integer cases, one per column */
  const double ia[] = {7, -7, 7, IMIN, IMIN, IMAX, IMAX, 5, -9, 0};
  const double ib[] = {0, 0, -2, -1, 1, 1, 2, 3, 4, 0};
  const double iq[] = {0, 0, -3, IMIN, IMIN, IMAX, 1073741823, 1, -2, 0};
  const double ir[] = {7, -7, 1, 0, 0, 0, 1, 2, -1, 0};
  const double is[] = {7, -7, 5, IMAX, -2147483647, IMIN, -2147483647, 8, -5, 0}; /* a + b, wrapped */
  const double fx[] = {NAN, 1, -0.0, 0.0, 1e10, -1e10, 3.99, -3.99, INFINITY, -INFINITY};
  const double fn[] = {0, 1, 0, 0, IMAX, IMIN, 3, -3, IMAX, IMIN};
  const double fy[] = {1, NAN, 0.0, -0.0, 0, 0, 0, 0, 0, 0};
  for (int i = 0; i < T * C; i++) a[i] = b[i] = 1, x[i] = y[i] = 0.5;
  for (int c = 0; c < 10; c++) a[c] = ia[c], b[c] = ib[c], x[c] = fx[c], y[c] = fy[c];
  /* row 1: softplus over its whole range */
  for (int c = 0; c < C; c++) x[C + c] = cake_round_f32(-100 + 200.0 * c / (C - 1));
  x[2 * C + 3] = NAN; /* row 2: amax sees a NaN */
  long long dims[2] = {T};
  assert_int_equal(p->ndims, 2);
  double *tensors[13] = {a, b, x, y, out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7], am};
  InterpArgs args = {dims, NULL, 0, NULL, tensors, 0, 0, NULL, NULL, 0, 0};
  char err[256];
  assert_int_equal(cake_interp_run(p, "fwd", &args, err, sizeof err), 0);
  for (int c = 0; c < 10; c++) {
    assert_true(out[0][c] == iq[c]);
    assert_true(out[1][c] == ir[c]);
    assert_true(out[2][c] == is[c]);
    assert_true(out[4][c] == fn[c]);
  }
  assert_true(out[3][3] == IMIN && out[3][5] == IMAX && out[3][6] == -2); /* IMAX * 2 wraps */
  assert_true(isnan(out[5][0]) && isnan(out[5][1]) && isnan(out[6][0]) && isnan(out[6][1]));
  assert_true(out[5][2] == 0 && !signbit(out[5][2]) && out[5][3] == 0 && !signbit(out[5][3])); /* max(-0, +0) = +0 */
  assert_true(out[6][2] == 0 && signbit(out[6][2]) && out[6][3] == 0 && signbit(out[6][3]));   /* min(-0, +0) = -0 */
  assert_true(isnan(out[7][0]) && out[7][8] == INFINITY && out[7][9] == 0);
  for (int c = 0; c < C; c++) {
    double u = x[C + c], want = (u > 0 ? u : 0) + log1p(exp(-fabs(u)));
    assert_true(out[7][C + c] == cake_round_f32(want)); /* stored as f32 */
    assert_true(out[7][C + c] > 0);                          /* no cut-off: e^-100 is not 0 */
  }
  assert_true(isnan(am[2]) && am[1] == 100);
}

static int close_rel(double got, double want, double tol) {
  return got == want || fabs(got - want) <= tol * fabs(want);
}

/* tanh, log1p, expm1, logsigmoid and silu (dsl/README.md): the special
 * values the GPU gives too, relative accuracy near 0 (no cancellation), no
 * cut-off at either end, and agreement with other formulas of the same
 * functions over the whole range. Every value is stored as f32. */
static void elementwise_functions(void **st) {
  CirProgram *p = compile(
      "program t\ndim T\nsequence T, chunk 16\n"
      "in x : f32[T, 16]\nout th, l1, em, ls, si, sp : f32[T, 16]\n"
      "kernel k over (c in chunks) {\n"
      "  u = load x[c, :]\n"
      "  store th[c, :] = tanh(u)\n  store l1[c, :] = log1p(u)\n  store em[c, :] = expm1(u)\n"
      "  store ls[c, :] = logsigmoid(u)\n  store si[c, :] = silu(u)\n  store sp[c, :] = softplus(-u)\n"
      "}\nentry fwd = k\n");
  enum { T = 16, C = 16, N = T * C };
  static double x[N], out[6][N];
  /* row 0: special values */
  const double sx[] = {NAN, 0.0, -0.0, INFINITY, -INFINITY, -1.0, -2.0, 1e-30, -1e-30, 1e30, -1e30, 100, -100};
  enum { NS = sizeof sx / sizeof sx[0] };
  for (int i = 0; i < N; i++) x[i] = 0.5;
  for (int c = 0; c < NS; c++) x[c] = cake_round_f32(sx[c]);
  /* rows 1..15: +-2^e for e from -40 to 7 (|x| up to 128), 120 magnitudes, both signs */
  for (int i = C; i < N; i++) {
    int k = (i - C) / 2;
    double m = cake_round_f32(ldexp(1.0 + 0.37 * ((k * 7) % 11) / 11.0, -40 + (47 * k) / 119));
    x[i] = (i % 2) ? -m : m;
  }
  long long dims[2] = {T};
  double *tensors[7] = {x, out[0], out[1], out[2], out[3], out[4], out[5]};
  InterpArgs args = {dims, NULL, 0, NULL, tensors, 0, 0, NULL, NULL, 0, 0};
  char err[256];
  assert_int_equal(cake_interp_run(p, "fwd", &args, err, sizeof err), 0);
  double *th = out[0], *l1 = out[1], *em = out[2], *ls = out[3], *si = out[4], *sp = out[5];
  for (int o = 0; o < 5; o++) assert_true(isnan(out[o][0])); /* NaN in, NaN out */
  /* +0 and -0 keep their sign where the function is odd at 0; logsigmoid and silu at the ends */
  assert_true(th[1] == 0 && !signbit(th[1]) && th[2] == 0 && signbit(th[2]));
  assert_true(l1[1] == 0 && !signbit(l1[1]) && l1[2] == 0 && signbit(l1[2]));
  assert_true(em[1] == 0 && !signbit(em[1]) && em[2] == 0 && signbit(em[2]));
  assert_true(si[1] == 0 && !signbit(si[1]) && si[2] == 0 && signbit(si[2]));
  assert_true(ls[1] == cake_round_f32(-log(2.0)) && ls[2] == ls[1]);
  assert_true(th[3] == 1 && th[4] == -1 && th[9] == 1 && th[10] == -1);
  assert_true(l1[3] == INFINITY && isnan(l1[4]) && l1[5] == -INFINITY && isnan(l1[6]));
  assert_true(em[3] == INFINITY && em[4] == -1 && em[10] == -1 && em[11] == INFINITY); /* e^100 > FLT_MAX */
  assert_true(ls[3] == 0 && signbit(ls[3]) && ls[4] == -INFINITY); /* logsigmoid(+inf) = -0 */
  assert_true(si[3] == INFINITY && si[4] == 0 && signbit(si[4])); /* silu(-inf) = -0, its limit */
  /* tiny x: every function is x (silu x / 2, logsigmoid -log 2 + x / 2) to f32 precision */
  for (int c = 7; c <= 8; c++) {
    assert_true(th[c] == x[c] && l1[c] == x[c] && em[c] == x[c]);
    assert_true(si[c] == cake_round_f32(x[c] / 2));
  }
  /* no cut-off: logsigmoid(100) = -e^-100 and silu(-100) = -100 e^-100 underflow f32 to
   * 0 only through the store; logsigmoid(-1e30) = -1e30 */
  assert_true(ls[11] == cake_round_f32(-exp(-100.0)) && si[12] == cake_round_f32(-100 * exp(-100.0)));
  assert_true(ls[10] == cake_round_f32(-1e30) && si[9] == cake_round_f32(1e30) && si[10] == 0);
  /* the sweep: other formulas of each function, in double, to f32 precision (and
   * near 0 the Taylor series, where exp(x) - 1 or log(1 + x) would cancel) */
  const double tol = 3e-7;
  for (int i = C; i < N; i++) {
    double v = x[i], a = fabs(v);
    double t, l, e;
    if (a < 1e-3) {
      t = v - v * v * v / 3;
      l = v - v * v / 2 + v * v * v / 3;
      e = v + v * v / 2 + v * v * v / 6;
    } else {
      t = v > 0 ? 1 - 2 / (exp(2 * v) + 1) : 2 / (exp(-2 * v) + 1) - 1;
      l = log(1 + v);
      e = exp(v) - 1;
    }
    assert_true(close_rel(th[i], t, tol));
    if (v > -1) assert_true(close_rel(l1[i], l, tol));
    else assert_true(isnan(l1[i]));
    if (v < 88) assert_true(close_rel(em[i], e, tol));
    else assert_true(em[i] == INFINITY);
    double sig = 1 / (1 + exp(-v));
    assert_true(close_rel(si[i], cake_round_f32(v * sig), tol));
    assert_true(ls[i] == -sp[i]); /* logsigmoid(x) = -softplus(-x), exactly */
    double en = exp(-a), lsig = v < -30 ? v - exp(v) : v > 7 ? -(en - en * en / 2 + en * en * en / 3) : log(sig);
    if (fabs(lsig) > 1e-30) assert_true(close_rel(ls[i], cake_round_f32(lsig), tol));
    assert_true(ls[i] < 0 || (ls[i] == 0 && signbit(ls[i])));
  }
}

/* decay(G): exp(G[r] - G[j]) on and below the diagonal, 0 above it, finite
 * however strong the decay (the upper triangle's exponents reach several hundred here);
 * the same from a [C] and a [C, 1] column, and the lower triangle of
 * exp(tril(G[:, None] - G[None, :])), the form it replaces. */
static void decay_matrix(void **st) {
  CirProgram *p = compile(
      "program t\ndim T\nconst C = 16\nsequence T, chunk C\n"
      "in g : f32[T]\nout d1, d2, d3 : f32[T, C]\n"
      "kernel k over (c in chunks) {\n"
      "  G = cumsum(-abs(load g[c]), 0)\n"
      "  store d1[c, :] = decay(G)\n  store d2[c, :] = decay(G[:, None])\n"
      "  store d3[c, :] = exp(tril(G[:, None] - G[None, :]))\n"
      "}\nentry fwd = k\n");
  enum { C = 16, T = 32 }; /* chunk 0: mild decay; chunk 1: strong */
  static double g[T], out[3][T * C];
  for (int i = 0; i < T; i++) g[i] = cake_round_f32(i < C ? urand() * 0.2 : 20 + urand() * 40);
  long long dims[2] = {T};
  double *tensors[4] = {g, out[0], out[1], out[2]};
  InterpArgs args = {dims, NULL, 0, NULL, tensors, 0, 0, NULL, NULL, 0, 0};
  char err[256];
  assert_int_equal(cake_interp_run(p, "fwd", &args, err, sizeof err), 0);
  for (int ch = 0; ch < 2; ch++) {
    double G[C], acc = 0;
    for (int r = 0; r < C; r++) G[r] = acc -= fabs(g[ch * C + r]);
    for (int r = 0; r < C; r++)
      for (int j = 0; j < C; j++) {
        int i = (ch * C + r) * C + j;
        double want = j <= r ? cake_round_f32(exp(G[r] - G[j])) : 0;
        assert_true(isfinite(out[0][i]));
        assert_true(fabs(out[0][i] - want) <= 1e-6 * want); /* G rounds to f32 nowhere: in double */
        assert_true(out[1][i] == out[0][i]);
        if (j <= r) assert_true(out[2][i] == out[0][i]);
        else assert_true(out[0][i] == 0 && out[2][i] == 1);
      }
    if (ch == 1) assert_true(out[0][(ch * C + C - 1) * C] == 0); /* e^-(> 300): underflows in the f32 store */
  }
}

/* sum_{r >= j} M[r,j] sum_c a[r,c] b[j,c] exp(G[r,c] - G[j,c]) in double */
static double decay_loss(int n, int K, const double *M, const double *a, const double *b, const double *G) {
  double L = 0;
  for (int r = 0; r < n; r++)
    for (int j = 0; j <= r; j++)
      for (int c = 0; c < K; c++) L += M[r * n + j] * a[r * K + c] * b[j * K + c] * exp(G[r * K + c] - G[j * K + c]);
  return L;
}

/* decay_mm and decay_mm_t are the gradients of decay_dot: with
 * L = sum(M * decay_dot(a, b, G)), dL/da = decay_mm(M, b, G),
 * dL/db = decay_mm_t(M, a, G), dL/dG = a * dL/da - b * dL/db; checked
 * against central differences of L. Also a scan over every chunk sums in
 * chunk order across documents. */
static void decay_gradients(void **st) {
  CirProgram *p = compile(
      "program t\ndim T, N\nconst C = 16, K = 8\nsequence T, docs N, chunk C\n"
      "in a, b, g : f32[T, K]\nin m : f32[T, C]\n"
      "out da, db, dg : f32[T, K]\nout tot : f32[1, K]\ntemp part : f32[chunks, K]\n"
      "kernel k over (c in chunks) {\n"
      "  x = load a[c, :]\n  y = load b[c, :]\n  G = load g[c, :]\n  M = load m[c, :]\n"
      "  ga = decay_mm(M, y, G)\n  gb = decay_mm_t(M, x, G)\n"
      "  store da[c, :] = ga\n  store db[c, :] = gb\n  store dg[c, :] = x * ga - y * gb\n"
      "  store part[c, :] = sum(ga, 0)\n"
      "}\n"
      "kernel s over (i in 1) {\n"
      "  S = load part[0, :] * 0.0\n"
      "  for c in chunks carry S {\n    S = S + load part[c, :]\n  }\n"
      "  store tot[i, :] = S\n"
      "}\nentry fwd = k, s\n");
  enum { C = 16, K = 8, T = 40 }; /* documents of 20 and 20 tokens: chunks 16+4, 16+4 */
  long long cu[3] = {0, 20, 40};
  double a[T * K], b[T * K], g[T * K], m[T * C], out[3][T * K], tot[K];
  for (int i = 0; i < T * K; i++) a[i] = urand() - 0.5, b[i] = urand() - 0.5;
  for (int i = 0; i < T * C; i++) m[i] = urand() - 0.5;
  /* G non-increasing down each chunk (the tensor is read per chunk) */
  for (int t = 0; t < T; t++)
    for (int c = 0; c < K; c++) g[t * K + c] = (t > 0 && t != 16 && t != 20 && t != 36 ? g[(t - 1) * K + c] : 0) - urand();
  long long dims[3] = {T, 2, 0};
  double *part = calloc(4 * K, 8);
  double *tensors[10] = {a, b, g, m, out[0], out[1], out[2], tot, part};
  InterpArgs args = {dims, cu, 2, NULL, tensors, 0, 0, NULL, NULL, 0, 0};
  char err[256];
  assert_int_equal(cake_interp_run(p, "fwd", &args, err, sizeof err), 0);
  /* the chunks: [0,16) [16,20) [20,36) [36,40) */
  int starts[4] = {0, 16, 20, 36}, lens[4] = {16, 4, 16, 4};
  double want_tot[K] = {0};
  for (int ch = 0; ch < 4; ch++) {
    int s0 = starts[ch], n = lens[ch];
    double Mc[C * C] = {0}, ac[C * K], bc[C * K], Gc[C * K];
    for (int r = 0; r < n; r++)
      for (int j = 0; j < n; j++) Mc[r * n + j] = cake_round_f32(m[(s0 + r) * C + j]);
    for (int i = 0; i < n * K; i++)
      ac[i] = cake_round_f32(a[s0 * K + i]), bc[i] = cake_round_f32(b[s0 * K + i]), Gc[i] = cake_round_f32(g[s0 * K + i]);
    double *xs[3] = {ac, bc, Gc};
    for (int w = 0; w < 3; w++)
      for (int i = 0; i < n * K; i++) {
        double keep = xs[w][i], h = 1e-5;
        xs[w][i] = keep + h;
        double lp = decay_loss(n, K, Mc, ac, bc, Gc);
        xs[w][i] = keep - h;
        double lm = decay_loss(n, K, Mc, ac, bc, Gc);
        xs[w][i] = keep;
        double fd = (lp - lm) / (2 * h), got = out[w][s0 * K + i];
        assert_true(fabs(got - cake_round_f32(fd)) <= 1e-6 * (1 + fabs(fd)));
      }
    for (int i = 0; i < n * K; i++) want_tot[i % K] += cake_round_f32(out[0][s0 * K + i]);
  }
  for (int c = 0; c < K; c++) assert_true(fabs(tot[c] - want_tot[c]) <= 1e-5 * (1 + fabs(want_tot[c])));
  free(part);
}

/* A counted loop sums a group of heads in order (x[t, h * G + i] for
 * i = 0 .. G - 1, G = HV / H), stores inside the loop, a count of 0, and
 * `require`: dims that break it stop the run with its message. */
static void counted_loops_and_requirements(void **st) {
  CirProgram *p = compile(
      "program t\ndim T, H, HV\nconst C = 16\nsequence T, chunk C\n"
      "require HV % H == 0\n"
      "in x : f32[T, HV, 4]\n"
      "out s : f32[T, H, 4]\n"
      "out w : f32[T, HV, 4]\n"
      "out z : f32[T, 4]\n"
      "kernel k over (c in chunks, h in H) {\n"
      "  acc = load x[c, h * (HV / H), :] * 0.0\n"
      "  n = 0\n"
      "  for i in range(HV / H) carry acc, n {\n"
      "    hv = h * (HV / H) + i\n"
      "    acc = acc * 2.0 + load x[c, hv, :]\n"
      "    store w[c, hv, :] = load x[c, hv, :] + (i as f32)\n"
      "    n = n + 1\n"
      "  }\n"
      "  store s[c, h, :] = acc + (n as f32) * 100.0\n"
      "}\n"
      "kernel e over (c in chunks) {\n"
      "  q = load x[c, 0, :] * 0.0 + 5.0\n"
      "  for i in range(H - HV) carry q {\n"
      "    q = q + 1.0\n"
      "  }\n"
      "  store z[c, :] = q\n"
      "}\n"
      "entry fwd = k, e\n");
  assert_int_equal(p->nrequires, 1);
  enum { T = 20, H = 2, HV = 6, G = HV / H };
  static double x[T * HV * 4], s[T * H * 4], w[T * HV * 4], z[T * 4];
  for (int i = 0; i < T * HV * 4; i++) x[i] = cake_round_f32(urand() - 0.5);
  long long dims[4] = {T, H, HV, 0};
  double *tensors[4] = {x, s, w, z};
  InterpArgs args = {dims, NULL, 1, NULL, tensors, 0, 0, NULL, NULL, 0, 0};
  char err[256];
  assert_int_equal(cake_interp_run(p, "fwd", &args, err, sizeof err), 0);
  for (int t = 0; t < T; t++)
    for (int h = 0; h < H; h++)
      for (int j = 0; j < 4; j++) {
        double acc = 0;
        for (int i = 0; i < G; i++) acc = cake_round_f32(acc * 2 + x[(t * HV + h * G + i) * 4 + j]); /* f32 carry */
        assert_true(s[(t * H + h) * 4 + j] == cake_round_f32(acc + G * 100.0));
        for (int i = 0; i < G; i++)
          assert_true(w[(t * HV + h * G + i) * 4 + j] == cake_round_f32(x[(t * HV + h * G + i) * 4 + j] + i));
      }
  for (int i = 0; i < T * 4; i++) assert_true(z[i] == 5.0); /* range(-4): no step */
  dims[2] = 5;
  assert_int_equal(cake_interp_run(p, "fwd", &args, err, sizeof err), -1);
  assert_string_equal(err, "dims break 'HV % H == 0' (t.cake:5:9): HV = 5, H = 2");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(rounding),
      cmocka_unit_test(integer_and_special_values),
      cmocka_unit_test(elementwise_functions),
      cmocka_unit_test(decay_matrix),
      cmocka_unit_test(ops_on_a_chunk),
      cmocka_unit_test(decay_gradients),
      cmocka_unit_test(scan_over_documents),
      cmocka_unit_test(first_program_matches_reference),
      cmocka_unit_test(counted_loops_and_requirements),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  arena_free(&g_arena);
  diag_free(&g_diag);
  return rc;
}
