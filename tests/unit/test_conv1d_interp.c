/* test_conv1d_interp.c - the causal conv1d spec (specs/conv1d/conv1d.cake),
 * forward and backward, run by the CPU interpreter against the float64
 * definition (tests/ref/ref_conv1d.c), over packings with one-token
 * documents, documents shorter than the width, partial chunks and documents
 * longer than a chunk; SiLU and no activation, with and without bias.
 *   - exact arithmetic (no rounding): y, dx, dw, dbias equal to 1e-12, so
 *     every shifted window, document edge and tap is the definition's;
 *   - the dtypes' rounding (bf16 y and dx, f32 dw and dbias): within bf16's
 *     precision for y and dx, f32's for dw and dbias;
 * and the errors of the language's shifted windows. */
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
#include "ref_conv1d.h"
#include "spec_fixture.h"

enum { W = 4, BD = 64 };

static Arena g_arena;
static Diag g_diag;
static Program *g_ast;

static int setup(void **st) {
  (void)st;
  arena_init(&g_arena);
  diag_init(&g_diag, 20);
  g_ast = fixture_parse_spec(&g_arena, &g_diag, CAKE_SOURCE_DIR "/specs/conv1d/conv1d.cake", "conv1d.cake");
  return g_ast ? 0 : -1;
}

static int teardown(void **st) {
  (void)st;
  arena_free(&g_arena);
  diag_free(&g_diag);
  return 0;
}

static uint64_t g_rng = 0xc0417d;

typedef struct Case {
  const char *name, *activation;
  int64_t T, G;
  int ndocs;
  long long cu[12];
  int bias;
} Case;

/* max |a - b| / (1 + |b|); infinite for a non-finite a */
static double worst(const double *a, const double *b, size_t n) {
  double w = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(a[i])) return INFINITY;
    double e = fabs(a[i] - b[i]) / (1 + fabs(b[i]));
    if (e > w) w = e;
  }
  return w;
}

static void run_case(const Case *cs, int exact) {
  CirOptionSet set = {{"activation", "cp"}, {cs->activation, "none"}, 2};
  CirProgram *p = cake_sema(&g_arena, &g_diag, g_ast, &set);
  if (!p) fprintf(stderr, "%s", g_diag.out.data);
  assert_non_null(p);
  int64_t T = cs->T, D = cs->G * BD;
  size_t nt = (size_t)(T * D), nw = (size_t)(D * W);
  double *x = malloc(nt * 8), *dy = malloc(nt * 8), *w = malloc(nw * 8), *bias = malloc((size_t)D * 8);
  for (size_t i = 0; i < nt; i++)
    x[i] = cake_round_bf16(fixture_nrand(&g_rng)), dy[i] = cake_round_bf16(fixture_nrand(&g_rng));
  for (size_t i = 0; i < nw; i++) w[i] = cake_round_f32(0.5 * fixture_nrand(&g_rng));
  for (int64_t i = 0; i < D; i++) bias[i] = cake_round_f32(0.3 * fixture_nrand(&g_rng));
  double *y = calloc(nt, 8), *dx = calloc(nt, 8), *dw = calloc(nw, 8), *db = calloc((size_t)D, 8);
  double *ry = calloc(nt, 8), *rdx = calloc(nt, 8), *rdw = calloc(nw, 8), *rdb = calloc((size_t)D, 8);
  long long dims[8] = {0};
  dims[0] = T, dims[1] = cs->ndocs, dims[2] = cs->G;
  double *tensors[32] = {0};
  tensors[cir_tensor_index(p, "x")] = x;
  tensors[cir_tensor_index(p, "w")] = w;
  tensors[cir_tensor_index(p, "bias")] = cs->bias ? bias : NULL;
  tensors[cir_tensor_index(p, "y")] = y;
  tensors[cir_tensor_index(p, "dy")] = dy;
  tensors[cir_tensor_index(p, "dx")] = dx;
  tensors[cir_tensor_index(p, "dw")] = dw;
  tensors[cir_tensor_index(p, "dbias")] = db;
  InterpArgs args = {dims, cs->cu, cs->ndocs, NULL, tensors, exact, 0, NULL, NULL, 0, 0};
  assert_int_equal(fixture_run(p, "fwd", &args), 0);
  assert_int_equal(fixture_run(p, "bwd", &args), 0);
  int silu = !strcmp(cs->activation, "silu");
  ref_conv1d_fwd(T, D, W, cs->cu, cs->ndocs, x, w, cs->bias ? bias : NULL, silu, ry);
  ref_conv1d_bwd(T, D, W, cs->cu, cs->ndocs, x, w, cs->bias ? bias : NULL, silu, dy, rdx, rdw, rdb);
  double ey = worst(y, ry, nt), ex = worst(dx, rdx, nt), ew = worst(dw, rdw, nw), eb = worst(db, rdb, (size_t)D);
  printf("%-48s %-7s y %.1e  dx %.1e  dw %.1e  dbias %.1e\n", cs->name, exact ? "exact" : "rounded", ey, ex, ew, eb);
  double tol_tok = exact ? 1e-12 : 8e-3, tol_sum = exact ? 1e-12 : 1e-5;
  assert_true(ey < tol_tok);
  assert_true(ex < tol_tok);
  assert_true(ew < tol_sum);
  assert_true(eb < tol_sum);
  free(x), free(dy), free(w), free(bias), free(y), free(dx), free(dw), free(db);
  free(ry), free(rdx), free(rdw), free(rdb);
}

static void both(const Case *c) {
  run_case(c, 1);
  run_case(c, 0);
}

static void short_documents(void **st) {
  (void)st;
  Case c = {"docs 1/2/3/4/5/64/65/66, silu, bias", "silu", 210, 2, 8, {0, 1, 3, 6, 10, 15, 79, 144, 210}, 1};
  both(&c);
}

static void long_documents(void **st) {
  (void)st;
  Case c = {"docs 130/200, no activation, no bias", "none", 330, 1, 2, {0, 130, 330}, 0};
  both(&c);
}

static void one_document(void **st) {
  (void)st;
  Case c = {"one document of 190, silu, no bias", "silu", 190, 3, 1, {0, 190}, 0};
  both(&c);
}

static void single_tokens(void **st) {
  (void)st;
  Case c = {"five one-token documents, none, bias", "none", 5, 1, 5, {0, 1, 2, 3, 4, 5}, 1};
  both(&c);
}

/* shifted windows: what the language refuses, with the place */
static void errors(void **st) {
  (void)st;
  static const struct {
    const char *body, *msg;
  } cases[] = {
      {"store y[shift(c, 1), :] = load x[c, :]", "a shifted window can only be loaded"},
      {"store y[c, :] = load x[shift(c, 65), :]", "shift moves rows by at most the chunk size"},
      {"store y[c, :] = load x[shift(c, n), :]", "not a compile-time constant"},
      {"store y[c, :] = load x[shift(1, -1), :]", "shift's first argument must be a chunk index"},
      {"store y[c, :] = load x[c, :] + load w[shift(c, -1)]", "along the token axis"},
      {"store y[c, :] = shift(c, 1) + load x[c, :]", "is a window index on a token axis"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char src[1024];
    snprintf(src, sizeof src,
             "program t\ndim T, N\nconst D = 64\nsequence T, docs N, chunk 64\nin x : bf16[T, D]\nin w : f32[D]\n"
             "out y : bf16[T, D]\nkernel k over (c in chunks) {\n  n = 1\n  %s\n}\nentry fwd = k\n",
             cases[i].body);
    Arena a;
    Diag d;
    arena_init(&a);
    diag_init(&d, 20);
    Source s = {"t.cake", src, strlen(src)};
    Program *ast = cake_parse(&a, &d, &s);
    CirProgram *p = ast ? cake_sema(&a, &d, ast, NULL) : NULL;
    const char *out = d.out.data ? d.out.data : "";
    if (p || !strstr(out, cases[i].msg)) fprintf(stderr, "case %zu: %s\n", i, out);
    assert_null(p);
    assert_non_null(strstr(out, cases[i].msg));
    arena_free(&a);
    diag_free(&d);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(short_documents), cmocka_unit_test(long_documents), cmocka_unit_test(one_document),
      cmocka_unit_test(single_tokens),   cmocka_unit_test(errors),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
