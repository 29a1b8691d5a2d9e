/* test_kda_interp.c - the KDA forward spec (specs/kda/kda_fwd.cake), run by
 * the CPU interpreter, against the float64 recurrence (tests/ref/ref_kda.c):
 * several packings with partial chunks and a one-token document, h0, the
 * safe gate near its lower bound, the softplus gate with strong decay, and
 * an external gate. The spec rounds operands of its matmuls to bf16, so the
 * two agree to bf16 accuracy: fla's threshold (0.005 error ratio) applies. */
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
#include "ref_kda.h"

enum { K = 128, V = 128 };

static Arena g_arena;
static Diag g_diag;
static Program *g_ast;

static int setup(void **st) {
  arena_init(&g_arena);
  diag_init(&g_diag, 20);
  Buf text;
  buf_init(&text);
  if (buf_read_file(&text, CAKE_SOURCE_DIR "/specs/kda/kda_fwd.cake")) return -1;
  Source *src = arena_alloc(&g_arena, sizeof(Source));
  *src = (Source){"kda_fwd.cake", arena_strndup(&g_arena, text.data, text.len), text.len};
  buf_free(&text);
  g_ast = cake_parse(&g_arena, &g_diag, src);
  return g_ast ? 0 : -1;
}

static int teardown(void **st) {
  arena_free(&g_arena);
  diag_free(&g_diag);
  return 0;
}

static uint64_t g_rng = 0x1234abcd;
static double urand(void) {
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return ((double)(g_rng >> 11) + 0.5) / 9007199254740992.0;
}
static double nrand(void) { return sqrt(-2 * log(urand())) * cos(6.283185307179586 * urand()); }

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
} Case;

static double ratio(const double *a, const double *b, size_t n) {
  double se = 0, sr = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(a[i])) return INFINITY;
    se += (a[i] - b[i]) * (a[i] - b[i]);
    sr += b[i] * b[i];
  }
  return sqrt(se / sr);
}

static void run_case(const Case *cs) {
  CirOptionSet set = {{"gate", "qk_norm", "beta_logits", "vblock"},
                      {cs->gate, cs->qk_norm, cs->beta_logits, cs->vblock ? cs->vblock : "v32"}, 4};
  CirProgram *p = cake_sema(&g_arena, &g_diag, g_ast, &set);
  if (!p) fprintf(stderr, "%s", g_diag.out.data);
  assert_non_null(p);
  int64_t T = cs->T, H = cs->H, N = cs->ndocs;
  size_t nqk = (size_t)(T * H * K), nv = (size_t)(T * H * V), ns = (size_t)(N * H * K * V);
  double *q = calloc(nqk, 8), *k = calloc(nqk, 8), *v = calloc(nv, 8), *g = calloc(nqk, 8), *beta = calloc((size_t)(T * H), 8);
  double *A_log = calloc((size_t)H, 8), *dt_bias = calloc((size_t)(H * K), 8), *h0 = calloc(ns, 8);
  double *o = calloc(nv, 8), *ht = calloc(ns, 8), *ro = calloc(nv, 8), *rht = calloc(ns, 8);
  KdaOptions ko = {cs->gate_kind, !strcmp(cs->qk_norm, "true"), !strcmp(cs->beta_logits, "true"), 1.0 / sqrt(K), -5.0};
  for (size_t i = 0; i < nqk; i++) {
    q[i] = cake_round_bf16(nrand());
    k[i] = cake_round_bf16(nrand());
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
  for (int64_t i = 0; i < T * H; i++) beta[i] = cake_round_bf16(ko.beta_logits ? nrand() : urand());
  for (int64_t h = 0; h < H; h++) A_log[h] = cs->a_log_hi > 0 ? cake_round_f32(log(1 + (cs->a_log_hi - 1) * urand())) : 0;
  for (int64_t i = 0; i < H * K; i++) {
    double dt = exp(log(0.001) + urand() * (log(0.1) - log(0.001)));
    dt_bias[i] = cake_round_f32(dt + log(-expm1(-dt)));
  }
  for (size_t i = 0; i < ns; i++) h0[i] = cake_round_f32(0.5 * nrand());

  long long dims[8] = {0};
  long long nchunks = cake_interp_chunk_count(p, T, cs->cu, N);
  dims[0] = T, dims[1] = N, dims[2] = H;
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
  /* temps */
  long long tdims[8] = {T, N, H, nchunks};
  void *temps[8];
  int nt = 0;
  for (int i = 0; i < p->ntensors; i++)
    if (p->tensors[i]->role == ROLE_TEMP) temps[nt++] = tensors[i] = calloc((size_t)cake_interp_numel(p, p->tensors[i], tdims), 8);
  InterpArgs args = {dims, cs->cu, N, NULL, tensors};
  char err[512];
  int rc = cake_interp_run(p, "fwd", &args, err, sizeof err);
  if (rc) fprintf(stderr, "interp: %s\n", err);
  assert_int_equal(rc, 0);
  int32_t cu32[8];
  for (int i = 0; i <= N; i++) cu32[i] = (int32_t)cs->cu[i];
  ref_kda_fwd(&ko, T, H, K, V, cu32, N, q, k, v, g, beta, A_log, dt_bias, cs->with_h0 ? h0 : NULL, ro, rht);
  double eo = ratio(o, ro, nv), eh = ratio(ht, rht, ns);
  printf("%-44s o %.2e  ht %.2e\n", cs->name, eo, eh);
  assert_true(eo < 0.005);
  assert_true(eh < 0.005);
  assert_true(eo > 1e-6); /* bf16 operands: the comparison sees real differences */
  free(q), free(k), free(v), free(g), free(beta), free(A_log), free(dt_bias), free(h0);
  free(o), free(ht), free(ro), free(rht);
  for (int i = 0; i < nt; i++) free(temps[i]);
}

static void safe_gate_with_h0(void **st) {
  Case c = {"safe gate, norm, logits, h0, docs 1/69/80", "safe", "true", "true", NULL, KDA_GATE_SAFE, 150, 2, 3, {0, 1, 70, 150}, 1, 0, 0};
  run_case(&c);
}

static void safe_gate_at_lower_bound(void **st) {
  Case c = {"safe gate near its bound (g ~ -5), vblock 16", "safe", "true", "true", "v16", KDA_GATE_SAFE, 130, 1, 1, {0, 130}, 1, 8.0, 0};
  run_case(&c);
}

static void softplus_gate_strong_decay(void **st) {
  Case c = {"softplus gate, A_log up to log 16, 2 docs", "softplus", "true", "true", NULL, KDA_GATE_SOFTPLUS, 200, 2, 2, {0, 77, 200}, 0, 1.0, 16};
  run_case(&c);
}

static void external_gate_values(void **st) {
  Case c = {"external gate, no norm, beta values, h0, vblock 16", "external", "false", "false", "v16", KDA_GATE_EXTERNAL, 190, 2, 2, {0, 64, 190}, 1, 0, 0};
  run_case(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(safe_gate_with_h0),
      cmocka_unit_test(safe_gate_at_lower_bound),
      cmocka_unit_test(softplus_gate_strong_decay),
      cmocka_unit_test(external_gate_values),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
