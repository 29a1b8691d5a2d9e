/* test_gdn_interp.c - the Gated DeltaNet forward spec (specs/gdn/gdn_fwd.cake),
 * run by the CPU interpreter, against the float64 recurrence
 * (tests/ref/ref_gdn.c): several packings with partial chunks and one-token
 * documents, h0 and ht, qk_norm on and off, beta as logits and as values, a
 * mild (fla's logsigmoid / 4) and a strong per-token decay, and no decay at
 * all. The spec rounds operands of its matmuls to bf16, so the two agree to
 * bf16 accuracy: fla's threshold (0.005 error ratio) applies.
 * The reference itself is checked against KDA's with g broadcast over the
 * key channels (the external gate). */
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
#include "ref_gdn.h"
#include "ref_kda.h"

enum { K = 128, V = 128 };

static Arena g_arena;
static Diag g_diag;
static Program *g_ast;

static int setup(void **st) {
  arena_init(&g_arena);
  diag_init(&g_diag, 20);
  g_ast = fixture_parse_spec(&g_arena, &g_diag, CAKE_SOURCE_DIR "/specs/gdn/gdn_fwd.cake", "gdn_fwd.cake");
  return g_ast ? 0 : -1;
}

static int teardown(void **st) {
  arena_free(&g_arena);
  diag_free(&g_diag);
  return 0;
}

static uint64_t g_rng = 0x9e3779b9;
static double urand(void) { return fixture_urand(&g_rng); }
static double nrand(void) { return fixture_nrand(&g_rng); }

typedef struct Case {
  const char *name;
  const char *qk_norm, *beta_logits, *vblock;
  int64_t T, H;
  int ndocs;
  long long cu[8];
  int with_h0;
  double g_scale; /* g = g_scale * logsigmoid(N(0, 1)); 0: no decay */
} Case;

static double ratio(const double *a, const double *b, size_t n) { return fixture_err_ratio(a, b, n); }

typedef struct Inputs {
  double *q, *k, *v, *g, *beta, *h0;
} Inputs;

static Inputs make_inputs(const Case *cs, const GdnOptions *go) {
  int64_t T = cs->T, H = cs->H, N = cs->ndocs;
  size_t nqk = (size_t)(T * H * K), nv = (size_t)(T * H * V), ns = (size_t)(N * H * K * V);
  Inputs in = {calloc(nqk, 8), calloc(nqk, 8), calloc(nv, 8), calloc((size_t)(T * H), 8), calloc((size_t)(T * H), 8),
               calloc(ns, 8)};
  for (size_t i = 0; i < nqk; i++) in.q[i] = cake_round_bf16(nrand()), in.k[i] = cake_round_bf16(nrand());
  if (!go->qk_norm) /* the caller normalises: keep the delta rule stable */
    for (size_t t = 0; t < nqk / K; t++) {
      double sq = 0, sk = 0;
      for (int c = 0; c < K; c++) sq += in.q[t * K + c] * in.q[t * K + c], sk += in.k[t * K + c] * in.k[t * K + c];
      for (int c = 0; c < K; c++)
        in.q[t * K + c] = cake_round_bf16(in.q[t * K + c] / sqrt(sq)),
        in.k[t * K + c] = cake_round_bf16(in.k[t * K + c] / sqrt(sk));
    }
  for (size_t i = 0; i < nv; i++) in.v[i] = cake_round_bf16(nrand());
  for (int64_t i = 0; i < T * H; i++) {
    in.g[i] = cake_round_f32(-cs->g_scale * log1p(exp(-nrand()))); /* g_scale * logsigmoid */
    in.beta[i] = cake_round_bf16(go->beta_logits ? nrand() : urand());
  }
  for (size_t i = 0; i < ns; i++) in.h0[i] = cake_round_f32(0.5 * nrand());
  return in;
}

static void free_inputs(Inputs *in) { free(in->q), free(in->k), free(in->v), free(in->g), free(in->beta), free(in->h0); }

static void run_case(const Case *cs) {
  CirOptionSet set = {{"qk_norm", "beta_logits", "vblock"}, {cs->qk_norm, cs->beta_logits, cs->vblock}, 3};
  CirProgram *p = cake_sema(&g_arena, &g_diag, g_ast, &set);
  if (!p) fprintf(stderr, "%s", g_diag.out.data);
  assert_non_null(p);
  int64_t T = cs->T, H = cs->H, N = cs->ndocs;
  size_t nv = (size_t)(T * H * V), ns = (size_t)(N * H * K * V);
  GdnOptions go = {!strcmp(cs->qk_norm, "true"), !strcmp(cs->beta_logits, "true"), 1.0 / sqrt(K)};
  Inputs in = make_inputs(cs, &go);
  double *o = calloc(nv, 8), *ht = calloc(ns, 8), *ro = calloc(nv, 8), *rht = calloc(ns, 8);

  long long dims[8] = {0};
  dims[0] = T, dims[1] = N, dims[2] = H;
  double *tensors[32] = {0};
  tensors[cir_tensor_index(p, "q")] = in.q;
  tensors[cir_tensor_index(p, "k")] = in.k;
  tensors[cir_tensor_index(p, "v")] = in.v;
  tensors[cir_tensor_index(p, "g")] = in.g;
  tensors[cir_tensor_index(p, "beta")] = in.beta;
  tensors[cir_tensor_index(p, "h0")] = cs->with_h0 ? in.h0 : NULL;
  tensors[cir_tensor_index(p, "o")] = o;
  tensors[cir_tensor_index(p, "ht")] = ht;
  InterpArgs args = {dims, cs->cu, N, NULL, tensors, 0, 0, NULL, NULL, 0, 0};
  assert_int_equal(fixture_run(p, "fwd", &args), 0); /* temps allocated there */
  int32_t cu32[8];
  for (int i = 0; i <= N; i++) cu32[i] = (int32_t)cs->cu[i];
  ref_gdn_fwd(&go, T, H, K, V, cu32, N, in.q, in.k, in.v, in.g, in.beta, cs->with_h0 ? in.h0 : NULL, ro, rht);
  double eo = ratio(o, ro, nv), eh = ratio(ht, rht, ns);
  printf("%-52s o %.2e  ht %.2e\n", cs->name, eo, eh);
  assert_true(eo < 0.005);
  assert_true(eh < 0.005);
  assert_true(eo > 1e-6); /* bf16 operands: the comparison sees real differences */
  free_inputs(&in);
  free(o), free(ht), free(ro), free(rht);
}

static void norm_logits_h0_short_docs(void **st) {
  Case c = {"norm, logits, h0, docs 1/69/80, v32", "true", "true", "v32", 150, 2, 3, {0, 1, 70, 150}, 1, 0.25};
  run_case(&c);
}

static void one_token_documents(void **st) {
  Case c = {"no norm, values, h0, docs 1/1/64/1/63/1, v16", "false", "false", "v16", 131, 2, 6,
            {0, 1, 2, 66, 67, 130, 131}, 1, 0.25};
  run_case(&c);
}

static void strong_decay(void **st) {
  /* per-token log-decay down to about -30: exp(G) underflows inside a chunk */
  Case c = {"norm, values, strong decay (8 x logsigmoid), 2 docs", "true", "false", "v32", 200, 2, 2, {0, 77, 200}, 0,
            8.0};
  run_case(&c);
}

static void no_decay(void **st) {
  Case c = {"no norm, logits, g = 0 (plain delta rule), h0, v16", "false", "true", "v16", 190, 1, 2, {0, 64, 190}, 1,
            0.0};
  run_case(&c);
}

static void single_token(void **st) {
  Case c = {"a single one-token document, h0", "true", "true", "v32", 1, 2, 1, {0, 1}, 1, 0.25};
  run_case(&c);
}

/* ref_gdn_fwd is KDA's external-gate reference with g broadcast over K */
static void reference_is_kda_with_scalar_gate(void **st) {
  Case cs = {"", "true", "true", "v32", 70, 2, 2, {0, 5, 70}, 1, 1.0};
  int64_t T = cs.T, H = cs.H, N = cs.ndocs;
  GdnOptions go = {1, 1, 0.125};
  Inputs in = make_inputs(&cs, &go);
  size_t nv = (size_t)(T * H * V), ns = (size_t)(N * H * K * V);
  double *gk = malloc((size_t)(T * H * K) * 8);
  for (int64_t i = 0; i < T * H; i++)
    for (int c = 0; c < K; c++) gk[i * K + c] = in.g[i];
  double *o1 = calloc(nv, 8), *o2 = calloc(nv, 8), *h1 = calloc(ns, 8), *h2 = calloc(ns, 8);
  int32_t cu[3] = {0, 5, 70};
  KdaOptions ko = {KDA_GATE_EXTERNAL, 1, 1, 0.125, 0};
  ref_gdn_fwd(&go, T, H, K, V, cu, N, in.q, in.k, in.v, in.g, in.beta, in.h0, o1, h1);
  ref_kda_fwd(&ko, T, H, K, V, cu, N, in.q, in.k, in.v, gk, in.beta, NULL, NULL, in.h0, o2, h2);
  assert_memory_equal(o1, o2, nv * 8);
  assert_memory_equal(h1, h2, ns * 8);
  free_inputs(&in);
  free(gk), free(o1), free(o2), free(h1), free(h2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reference_is_kda_with_scalar_gate),
      cmocka_unit_test(norm_logits_h0_short_docs),
      cmocka_unit_test(one_token_documents),
      cmocka_unit_test(strong_decay),
      cmocka_unit_test(no_decay),
      cmocka_unit_test(single_token),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
