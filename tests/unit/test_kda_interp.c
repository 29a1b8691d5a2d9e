/* test_kda_interp.c - the KDA forward spec (specs/kda/kda_fwd.cake), run by
 * the CPU interpreter, against the float64 recurrence (tests/ref/ref_kda.c):
 * several packings with partial chunks and a one-token document, h0, the
 * safe gate near its lower bound, the softplus gate with strong decay, an
 * external gate, and grouped value heads (GVA: HV value heads over H key
 * heads). The spec rounds operands of its matmuls to bf16, so the two agree
 * to bf16 accuracy: fla's threshold (0.005 error ratio) applies. Dims that
 * break the spec's `require HV % H == 0` fail with its message. */
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
#include "ref_kda.h"

enum { K = 128, V = 128 };

static Arena g_arena;
static Diag g_diag;
static Program *g_ast;

static int setup(void **st) {
  arena_init(&g_arena);
  diag_init(&g_diag, 20);
  g_ast = fixture_parse_spec(&g_arena, &g_diag, CAKE_SOURCE_DIR "/specs/kda/kda_fwd.cake", "kda_fwd.cake");
  return g_ast ? 0 : -1;
}

static int teardown(void **st) {
  arena_free(&g_arena);
  diag_free(&g_diag);
  return 0;
}

static uint64_t g_rng = 0x1234abcd;
static double urand(void) { return fixture_urand(&g_rng); }
static double nrand(void) { return fixture_nrand(&g_rng); }

typedef struct Case {
  const char *name;
  const char *gate, *qk_norm, *beta_logits, *vblock;
  int gate_kind;
  int64_t T, H;
  int ndocs;
  long long cu[8];
  int with_h0;
  double g_shift;  /* added to the raw gate (pushes the safe gate to its bound) */
  double a_log_hi; /* A_log ~ log(uniform(1, a_log_hi)); 0: A_log = 0 */
  int64_t HV;      /* value heads (GVA); 0: H */
} Case;

static double ratio(const double *a, const double *b, size_t n) { return fixture_err_ratio(a, b, n); }

/* The program's dims by name (T, N, H, HV, and the chunk count). */
static void set_dims(const CirProgram *p, long long *dims, long long T, long long N, long long H, long long HV,
                     long long nchunks) {
  for (int i = 0; i < p->ndims; i++) {
    const char *n = p->dims[i].name;
    dims[i] = !strcmp(n, "T") ? T : !strcmp(n, "N") ? N : !strcmp(n, "H") ? H : !strcmp(n, "HV") ? HV : nchunks;
  }
}

static void run_case(const Case *cs) {
  CirOptionSet set = {{"gate", "qk_norm", "beta_logits", "vblock"},
                      {cs->gate, cs->qk_norm, cs->beta_logits, cs->vblock ? cs->vblock : "v32"}, 4};
  CirProgram *p = cake_sema(&g_arena, &g_diag, g_ast, &set);
  if (!p) fprintf(stderr, "%s", g_diag.out.data);
  assert_non_null(p);
  int64_t T = cs->T, H = cs->H, HV = cs->HV ? cs->HV : cs->H, N = cs->ndocs;
  size_t nqk = (size_t)(T * H * K), ng = (size_t)(T * HV * K), nv = (size_t)(T * HV * V),
         ns = (size_t)(N * HV * K * V);
  double *q = calloc(nqk, 8), *k = calloc(nqk, 8), *v = calloc(nv, 8), *g = calloc(ng, 8), *beta = calloc((size_t)(T * HV), 8);
  double *A_log = calloc((size_t)HV, 8), *dt_bias = calloc((size_t)(HV * K), 8), *h0 = calloc(ns, 8);
  double *o = calloc(nv, 8), *ht = calloc(ns, 8), *ro = calloc(nv, 8), *rht = calloc(ns, 8);
  KdaOptions ko = {cs->gate_kind, !strcmp(cs->qk_norm, "true"), !strcmp(cs->beta_logits, "true"), 1.0 / sqrt(K), -5.0};
  for (size_t i = 0; i < ng; i++) { /* (in the order of the HV = H tests before GVA: the same inputs) */
    if (i < nqk) {
      q[i] = cake_round_bf16(nrand());
      k[i] = cake_round_bf16(nrand());
    }
    if (cs->gate_kind == KDA_GATE_EXTERNAL) g[i] = cake_round_f32(-log1p(exp(-nrand())) / 4); /* logsigmoid / 4 */
    else g[i] = cake_round_bf16(nrand() + cs->g_shift);
  }
  if (!ko.qk_norm) /* the caller normalises: keep the delta rule stable */
    for (size_t t = 0; t < nqk / K; t++) {
      double sq = 0, sk = 0;
      for (int c = 0; c < K; c++) sq += q[t * K + c] * q[t * K + c], sk += k[t * K + c] * k[t * K + c];
      for (int c = 0; c < K; c++) q[t * K + c] = cake_round_bf16(q[t * K + c] / sqrt(sq)), k[t * K + c] = cake_round_bf16(k[t * K + c] / sqrt(sk));
    }
  for (size_t i = 0; i < nv; i++) v[i] = cake_round_bf16(nrand());
  for (int64_t i = 0; i < T * HV; i++) beta[i] = cake_round_bf16(ko.beta_logits ? nrand() : urand());
  for (int64_t h = 0; h < HV; h++) A_log[h] = cs->a_log_hi > 0 ? cake_round_f32(log(1 + (cs->a_log_hi - 1) * urand())) : 0;
  for (int64_t i = 0; i < HV * K; i++) {
    double dt = exp(log(0.001) + urand() * (log(0.1) - log(0.001)));
    dt_bias[i] = cake_round_f32(dt + log(-expm1(-dt)));
  }
  for (size_t i = 0; i < ns; i++) h0[i] = cake_round_f32(0.5 * nrand());

  long long dims[8] = {0};
  long long nchunks = cake_interp_chunk_count(p, T, cs->cu, N);
  set_dims(p, dims, T, N, H, HV, nchunks);
  double *tensors[32] = {0};
  tensors[cir_tensor_index(p, "q")] = q;
  tensors[cir_tensor_index(p, "k")] = k;
  tensors[cir_tensor_index(p, "v")] = v;
  tensors[cir_tensor_index(p, "g")] = g;
  tensors[cir_tensor_index(p, "beta")] = beta;
  if (cir_tensor_index(p, "A_log") >= 0) tensors[cir_tensor_index(p, "A_log")] = A_log;
  if (cir_tensor_index(p, "dt_bias") >= 0) tensors[cir_tensor_index(p, "dt_bias")] = dt_bias;
  tensors[cir_tensor_index(p, "h0")] = cs->with_h0 ? h0 : NULL;
  tensors[cir_tensor_index(p, "o")] = o;
  tensors[cir_tensor_index(p, "ht")] = ht;
  InterpArgs args = {dims, cs->cu, N, NULL, tensors, 0, 0, NULL, NULL, 0, 0};
  assert_int_equal(fixture_run(p, "fwd", &args), 0); /* temps allocated there */
  int32_t cu32[8];
  for (int i = 0; i <= N; i++) cu32[i] = (int32_t)cs->cu[i];
  ref_kda_fwd_gva(&ko, T, H, HV, K, V, cu32, N, q, k, v, g, beta, A_log, dt_bias, cs->with_h0 ? h0 : NULL, ro, rht);
  double eo = ratio(o, ro, nv), eh = ratio(ht, rht, ns);
  printf("%-50s o %.2e  ht %.2e\n", cs->name, eo, eh);
  assert_true(eo < 0.005);
  assert_true(eh < 0.005);
  assert_true(eo > 1e-6); /* bf16 operands: the comparison sees real differences */
  free(q), free(k), free(v), free(g), free(beta), free(A_log), free(dt_bias), free(h0);
  free(o), free(ht), free(ro), free(rht);
}

static void safe_gate_with_h0(void **st) {
  Case c = {"safe gate, norm, logits, h0, docs 1/69/80", "safe", "true", "true", NULL, KDA_GATE_SAFE, 150, 2, 3, {0, 1, 70, 150}, 1, 0, 0, 0};
  run_case(&c);
}

static void safe_gate_at_lower_bound(void **st) {
  Case c = {"safe gate near its bound (g ~ -5), vblock 16", "safe", "true", "true", "v16", KDA_GATE_SAFE, 130, 1, 1, {0, 130}, 1, 8.0, 0, 0};
  run_case(&c);
}

static void softplus_gate_strong_decay(void **st) {
  Case c = {"softplus gate, A_log up to log 16, 2 docs", "softplus", "true", "true", NULL, KDA_GATE_SOFTPLUS, 200, 2, 2, {0, 77, 200}, 0, 1.0, 16, 0};
  run_case(&c);
}

static void external_gate_values(void **st) {
  Case c = {"external gate, no norm, beta values, h0, vblock 16", "external", "false", "false", "v16", KDA_GATE_EXTERNAL, 190, 2, 2, {0, 64, 190}, 1, 0, 0, 0};
  run_case(&c);
}

static void gva_one_key_head_two_value_heads(void **st) {
  Case c = {"GVA H=1 HV=2, safe gate, h0, docs 1/69/80", "safe", "true", "true", NULL, KDA_GATE_SAFE, 150, 1, 3,
            {0, 1, 70, 150}, 1, 0, 0, 2};
  run_case(&c);
}

static void gva_two_key_heads_four_value_heads(void **st) {
  Case c = {"GVA H=2 HV=4, softplus gate, docs 77/53, vblock 16", "softplus", "true", "true", "v16", KDA_GATE_SOFTPLUS,
            130, 2, 2, {0, 77, 130}, 1, 1.0, 16, 4};
  run_case(&c);
}

static void gva_external_gate_no_norm(void **st) {
  Case c = {"GVA H=1 HV=3, external gate, no norm, beta values", "external", "false", "false", NULL, KDA_GATE_EXTERNAL,
            100, 1, 1, {0, 100}, 0, 0, 0, 3};
  run_case(&c);
}

/* Dims that break `require HV % H == 0`: the interpreter (like the runtime)
 * refuses to run and names the requirement, where it is and the dims. */
static void gva_heads_must_divide(void **st) {
  CirOptionSet set = {{"gate"}, {"safe"}, 1};
  CirProgram *p = cake_sema(&g_arena, &g_diag, g_ast, &set);
  assert_non_null(p);
  assert_int_equal(p->nrequires, 2); /* and the safe gate's lower_bound < 0 */
  assert_string_equal(p->requires[0].text, "HV % H == 0");
  assert_string_equal(p->requires[1].text, "lower_bound < 0");
  long long dims[8] = {0};
  long long cu[2] = {0, 64};
  set_dims(p, dims, 64, 1, 2, 3, 1);
  double *tensors[32] = {0};
  InterpArgs args = {dims, cu, 1, NULL, tensors, 0, 0, NULL, NULL, 0, 0};
  char err[512];
  assert_int_equal(cake_interp_run(p, "fwd", &args, err, sizeof err), -1);
  char want[256];
  snprintf(want, sizeof want, "dims break 'HV %% H == 0' (%s): HV = 3, H = 2", p->requires[0].where);
  assert_string_equal(err, want);
  assert_non_null(strstr(p->requires[0].where, "kda_fwd.cake:"));
  set_dims(p, dims, 64, 1, 0, 3, 1); /* a remainder by zero: false, with the reason */
  assert_int_equal(cake_interp_run(p, "fwd", &args, err, sizeof err), -1);
  assert_non_null(strstr(err, ": HV = 3, H = 0 (a remainder by zero)"));
  /* a positive lower_bound breaks the safe gate's requirement, before anything runs */
  set_dims(p, dims, 64, 1, 2, 4, 1);
  double params[8];
  for (int i = 0; i < 8; i++) params[i] = NAN;
  assert_true(p->nparams <= 8);
  for (int i = 0; i < p->nparams; i++)
    if (!strcmp(p->params[i]->name, "lower_bound")) params[p->params[i]->index] = 0.5;
  args.params = params;
  assert_int_equal(cake_interp_run(p, "fwd", &args, err, sizeof err), -1);
  snprintf(want, sizeof want, "the parameters break 'lower_bound < 0' (%s): lower_bound = 0.5", p->requires[1].where);
  assert_string_equal(err, want);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(safe_gate_with_h0),
      cmocka_unit_test(safe_gate_at_lower_bound),
      cmocka_unit_test(softplus_gate_strong_decay),
      cmocka_unit_test(external_gate_values),
      cmocka_unit_test(gva_one_key_head_two_value_heads),
      cmocka_unit_test(gva_two_key_heads_four_value_heads),
      cmocka_unit_test(gva_external_gate_no_norm),
      cmocka_unit_test(gva_heads_must_divide),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
