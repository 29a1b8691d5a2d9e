/* test_gla_interp.c - the Gated Linear Attention forward spec
 * (specs/gla/gla_fwd.cake), run by the CPU interpreter, against the float64
 * recurrence (tests/ref/ref_gla.c): several packings with partial chunks and
 * one-token documents, h0 given or not, ht asked for or not, both vblock
 * variants, a non-default scale, fla's mild gate (logsigmoid / 16), a
 * per-channel decay strong enough to underflow exp(G) inside a chunk, and no
 * decay at all. The spec rounds the operands of its matmuls to bf16, so the
 * two agree to bf16 accuracy: fla's threshold (0.005 error ratio) applies.
 * The reference itself is checked against the closed form of the output,
 * a sum over the document's earlier tokens (no state at all). */
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
#include "spec_fixture.h"
#include "ref_gla.h"

enum { K = 128, V = 128 };

static Arena g_arena;
static Diag g_diag;
static Program *g_ast;

static int setup(void **st) {
  arena_init(&g_arena);
  diag_init(&g_diag, 20);
  g_ast = fixture_parse_spec(&g_arena, &g_diag, CAKE_SOURCE_DIR "/specs/gla/gla_fwd.cake", "gla_fwd.cake");
  return g_ast ? 0 : -1;
}

static int teardown(void **st) {
  arena_free(&g_arena);
  diag_free(&g_diag);
  return 0;
}

static uint64_t g_rng = 0x51ed2701;
static double nrand(void) { return fixture_nrand(&g_rng); }

typedef struct Case {
  const char *name;
  const char *vblock;
  int64_t T, H;
  int ndocs;
  long long cu[8];
  int with_h0, with_ht;
  double g_scale; /* g = g_scale * logsigmoid(N(0, 1)), per channel; 0: no decay */
  double scale;   /* 0: the spec's default, 1/sqrt(K) */
} Case;

typedef struct Inputs {
  double *q, *k, *v, *g, *h0;
} Inputs;

static Inputs make_inputs(const Case *cs) {
  int64_t T = cs->T, H = cs->H, N = cs->ndocs;
  size_t nqk = (size_t)(T * H * K), nv = (size_t)(T * H * V), ns = (size_t)(N * H * K * V);
  Inputs in = {calloc(nqk, 8), calloc(nqk, 8), calloc(nv, 8), calloc(nqk, 8), calloc(ns, 8)};
  for (size_t i = 0; i < nqk; i++) {
    in.q[i] = cake_round_bf16(nrand()), in.k[i] = cake_round_bf16(nrand());
    in.g[i] = cake_round_f32(-cs->g_scale * log1p(exp(-nrand()))); /* g_scale * logsigmoid */
  }
  for (size_t i = 0; i < nv; i++) in.v[i] = cake_round_bf16(nrand());
  for (size_t i = 0; i < ns; i++) in.h0[i] = cake_round_f32(0.5 * nrand());
  return in;
}

static void free_inputs(Inputs *in) { free(in->q), free(in->k), free(in->v), free(in->g), free(in->h0); }

static void run_case(const Case *cs) {
  CirOptionSet set = {{"vblock"}, {cs->vblock}, 1};
  CirProgram *p = cake_sema(&g_arena, &g_diag, g_ast, &set);
  if (!p) fprintf(stderr, "%s", g_diag.out.data);
  assert_non_null(p);
  int64_t T = cs->T, H = cs->H, N = cs->ndocs;
  size_t nv = (size_t)(T * H * V), ns = (size_t)(N * H * K * V);
  double scale = cs->scale ? cs->scale : 1.0 / sqrt(K);
  Inputs in = make_inputs(cs);
  double *o = calloc(nv, 8), *ht = calloc(ns, 8), *ro = calloc(nv, 8), *rht = calloc(ns, 8);

  long long dims[8] = {0};
  dims[0] = T, dims[1] = N, dims[2] = H;
  double params[4] = {NAN, NAN, NAN, NAN};
  assert_int_equal(p->nparams, 1);
  assert_string_equal(p->params[0]->name, "scale");
  if (cs->scale) params[0] = cs->scale;
  double *tensors[32] = {0};
  tensors[cir_tensor_index(p, "q")] = in.q;
  tensors[cir_tensor_index(p, "k")] = in.k;
  tensors[cir_tensor_index(p, "v")] = in.v;
  tensors[cir_tensor_index(p, "g")] = in.g;
  tensors[cir_tensor_index(p, "h0")] = cs->with_h0 ? in.h0 : NULL;
  tensors[cir_tensor_index(p, "o")] = o;
  tensors[cir_tensor_index(p, "ht")] = cs->with_ht ? ht : NULL;
  InterpArgs args = {dims, cs->cu, N, params, tensors, 0, 0, NULL, NULL, 0, 0};
  assert_int_equal(fixture_run(p, "fwd", &args), 0); /* temps allocated there */
  int32_t cu32[8];
  for (int i = 0; i <= N; i++) cu32[i] = (int32_t)cs->cu[i];
  ref_gla_fwd(scale, T, H, K, V, cu32, N, in.q, in.k, in.v, in.g, cs->with_h0 ? in.h0 : NULL, ro, rht);
  double eo = fixture_err_ratio(o, ro, nv), eh = cs->with_ht ? fixture_err_ratio(ht, rht, ns) : 0;
  printf("%-56s o %.2e  ht %.2e\n", cs->name, eo, eh);
  assert_true(eo < 0.005);
  assert_true(eh < 0.005);
  assert_true(eo > 1e-6); /* bf16 operands: the comparison sees real differences */
  free_inputs(&in);
  free(o), free(ht), free(ro), free(rht);
}

static void h0_short_docs(void **st) {
  Case c = {"h0, docs 1/69/80, mild gate (logsigmoid / 16), v32", "v32", 150, 2, 3, {0, 1, 70, 150}, 1, 1, 1.0 / 16,
            0};
  run_case(&c);
}

static void one_token_documents(void **st) {
  Case c = {"h0, docs 1/1/64/1/63/1, logsigmoid gate, v16", "v16", 131, 2, 6, {0, 1, 2, 66, 67, 130, 131}, 1, 1, 1.0,
            0};
  run_case(&c);
}

static void strong_decay(void **st) {
  /* per-channel log-decay down to about -30: exp(G) underflows inside a chunk */
  Case c = {"no h0, strong decay (8 x logsigmoid), 2 docs, v32", "v32", 200, 2, 2, {0, 77, 200}, 0, 1, 8.0, 0};
  run_case(&c);
}

static void no_decay(void **st) {
  Case c = {"h0, g = 0 (plain linear attention), scale 0.05, v16", "v16", 190, 1, 2, {0, 64, 190}, 1, 1, 0.0, 0.05};
  run_case(&c);
}

static void no_ht(void **st) {
  Case c = {"h0, ht not asked for, 3 full chunks, v32", "v32", 192, 3, 1, {0, 192}, 1, 0, 1.0 / 16, 0};
  run_case(&c);
}

static void single_token(void **st) {
  Case c = {"a single one-token document, h0", "v32", 1, 2, 1, {0, 1}, 1, 1, 1.0, 0};
  run_case(&c);
}

/* ref_gla_fwd against the closed form: with G_t = sum_{s <= t} g_s per channel
 * (from the document's start),
 *   o_t = scale (sum_c q_t[c] exp(G_t[c]) h0[c, :]
 *                + sum_{s <= t} (sum_c q_t[c] k_s[c] exp(G_t[c] - G_s[c])) v_s) */
static void reference_is_the_closed_form(void **st) {
  Case cs = {"", "v32", 70, 2, 2, {0, 5, 70}, 1, 1, 1.0, 0};
  int64_t T = cs.T, H = cs.H, N = cs.ndocs;
  const double scale = 0.125;
  Inputs in = make_inputs(&cs);
  size_t nv = (size_t)(T * H * V), ns = (size_t)(N * H * K * V);
  double *o = calloc(nv, 8), *ht = calloc(ns, 8), *G = calloc((size_t)(T * H * K), 8), *ow = calloc(V, 8);
  int32_t cu[3] = {0, 5, 70};
  ref_gla_fwd(scale, T, H, K, V, cu, N, in.q, in.k, in.v, in.g, in.h0, o, ht);
  double worst = 0;
  for (int d = 0; d < N; d++)
    for (int64_t h = 0; h < H; h++)
      for (int64_t t = cu[d]; t < cu[d + 1]; t++) {
        for (int c = 0; c < K; c++)
          G[(t * H + h) * K + c] = in.g[(t * H + h) * K + c] + (t > cu[d] ? G[((t - 1) * H + h) * K + c] : 0);
        memset(ow, 0, V * 8);
        const double *qt = in.q + (t * H + h) * K, *Gt = G + (t * H + h) * K;
        for (int c = 0; c < K; c++)
          for (int e = 0; e < V; e++) ow[e] += qt[c] * exp(Gt[c]) * in.h0[(((size_t)d * H + h) * K + c) * V + e];
        for (int64_t s = cu[d]; s <= t; s++) {
          double a = 0;
          for (int c = 0; c < K; c++) a += qt[c] * in.k[(s * H + h) * K + c] * exp(Gt[c] - G[(s * H + h) * K + c]);
          for (int e = 0; e < V; e++) ow[e] += a * in.v[(s * H + h) * V + e];
        }
        for (int e = 0; e < V; e++) {
          double ref = scale * ow[e], got = o[(t * H + h) * V + e];
          double err = fabs(got - ref) / (1 + fabs(ref));
          if (err > worst) worst = err;
        }
      }
  printf("reference against the closed form: worst error %.2e\n", worst);
  assert_true(worst < 1e-10);
  free_inputs(&in);
  free(o), free(ht), free(G), free(ow);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reference_is_the_closed_form),
      cmocka_unit_test(h0_short_docs),
      cmocka_unit_test(one_token_documents),
      cmocka_unit_test(strong_decay),
      cmocka_unit_test(no_decay),
      cmocka_unit_test(no_ht),
      cmocka_unit_test(single_token),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
