/* test_kda_train_interp.c - the KDA training program
 * (specs/kda/kda_train.cake), run by the CPU interpreter, against the
 * float64 recurrence and its exact backward (tests/ref): entries fwd (o, ht)
 * and bwd (dq, dk, dv, dg, dbeta, dA_log, ddt_bias, dh0) on small problems:
 * several packings with partial chunks and a one-token document, h0 and an
 * incoming dht, every gate, q/k normalisation and beta logits on and off,
 * both save modes, and grouped value heads (GVA: HV value heads over H key
 * heads; dq and dk sum over each group). The spec rounds its matmul operands to bf16, so errors
 * are fla's ratio RMS(x - ref) / RMS(ref) against bf16-level thresholds. The
 * two save modes run the same arithmetic, so their gradients must agree bit
 * for bit. */
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

enum { K = 128, V = 128, MAXT = 40 };

static Arena g_arena;
static Diag g_diag;
static Program *g_ast;

static int setup(void **st) {
  arena_init(&g_arena);
  diag_init(&g_diag, 20);
  g_ast = fixture_parse_spec(&g_arena, &g_diag, CAKE_SOURCE_DIR "/specs/kda/kda_train.cake", "kda_train.cake");
  return g_ast ? 0 : -1;
}

static int teardown(void **st) {
  arena_free(&g_arena);
  diag_free(&g_diag);
  return 0;
}

static uint64_t g_rng = 0x5eedf00d;
static double urand(void) { return fixture_urand(&g_rng); }
static double nrand(void) { return fixture_nrand(&g_rng); }

typedef struct Case {
  const char *name;
  const char *gate, *qk_norm, *beta_logits;
  int gate_kind;
  int64_t T, H;
  int ndocs;
  long long cu[8];
  int with_h0, with_dht;
  double g_shift;  /* added to the raw gate (pushes the safe gate to its bound) */
  double a_log_hi; /* A_log ~ log(uniform(1, a_log_hi)); 0: A_log = 0 */
  int both_modes;  /* run save = ckpt and save = states and compare them */
  const char *save; /* the one mode otherwise */
  int64_t HV;       /* value heads (GVA); 0: H */
} Case;

static double ratio(const double *a, const double *b, size_t n) { return fixture_err_ratio(a, b, n); }

/* The problem's inputs (host arrays of doubles, already rounded to the dtypes
 * of the spec's tensors). */
typedef struct Inputs {
  double *q, *k, *v, *g, *beta, *A_log, *dt_bias, *h0, *do_, *dht;
} Inputs;

enum { NOUT = 10 };
static const char *const out_names[NOUT] = {"o", "ht", "dq", "dk", "dv", "dg", "dbeta", "dA_log", "ddt_bias", "dh0"};

/* Runs fwd then bwd of one variant; out[i] receives out_names[i] (NULL when
 * the variant has no such tensor). */
static void run_variant(const Case *cs, const char *save, const Inputs *in, double **out, size_t *out_n) {
  CirOptionSet set = {{"gate", "qk_norm", "beta_logits", "save"}, {cs->gate, cs->qk_norm, cs->beta_logits, save}, 4};
  CirProgram *p = cake_sema(&g_arena, &g_diag, g_ast, &set);
  if (!p) fprintf(stderr, "%s", g_diag.out.data);
  assert_non_null(p);
  int64_t T = cs->T, H = cs->H, HV = cs->HV ? cs->HV : cs->H, N = cs->ndocs;
  long long nchunks = cake_interp_chunk_count(p, T, cs->cu, N);
  long long dims[8] = {0};
  for (int i = 0; i < p->ndims; i++) {
    const char *n = p->dims[i].name;
    dims[i] = !strcmp(n, "T") ? T : !strcmp(n, "N") ? N : !strcmp(n, "H") ? H : !strcmp(n, "HV") ? HV : nchunks;
  }
  double *tensors[64] = {0};
  assert_true(p->ntensors <= 64);
  struct { const char *name; double *data; } ins[] = {
      {"q", in->q}, {"k", in->k}, {"v", in->v}, {"g", in->g}, {"beta", in->beta}, {"A_log", in->A_log},
      {"dt_bias", in->dt_bias}, {"h0", cs->with_h0 ? in->h0 : NULL}, {"do", in->do_},
      {"dht", cs->with_dht ? in->dht : NULL}};
  for (size_t i = 0; i < sizeof ins / sizeof ins[0]; i++) {
    int ix = cir_tensor_index(p, ins[i].name);
    if (ix >= 0) tensors[ix] = ins[i].data;
  }
  /* everything the program writes: outputs, saved and temporary tensors */
  for (int i = 0; i < p->ntensors; i++)
    if (p->tensors[i]->role != ROLE_IN) {
      size_t n = (size_t)cake_interp_numel(p, p->tensors[i], dims);
      tensors[i] = calloc(n ? n : 1, sizeof(double));
    }
  InterpArgs args = {dims, cs->cu, N, NULL, tensors, 0, 0, NULL, NULL, 0, 0};
  char err[512];
  int rc = cake_interp_run(p, "fwd", &args, err, sizeof err);
  if (rc) fprintf(stderr, "interp fwd: %s\n", err);
  assert_int_equal(rc, 0);
  rc = cake_interp_run(p, "bwd", &args, err, sizeof err);
  if (rc) fprintf(stderr, "interp bwd: %s\n", err);
  assert_int_equal(rc, 0);
  for (int o = 0; o < NOUT; o++) {
    int ix = cir_tensor_index(p, out_names[o]);
    out[o] = NULL;
    out_n[o] = 0;
    if (ix < 0) continue;
    out[o] = tensors[ix];
    out_n[o] = (size_t)cake_interp_numel(p, p->tensors[ix], dims);
    tensors[ix] = NULL;
  }
  for (int i = 0; i < p->ntensors; i++)
    if (p->tensors[i]->role != ROLE_IN) free(tensors[i]);
}

static void run_case(const Case *cs) {
  int64_t T = cs->T, H = cs->H, HV = cs->HV ? cs->HV : cs->H, N = cs->ndocs;
  size_t nqk = (size_t)(T * H * K), ng = (size_t)(T * HV * K), nv = (size_t)(T * HV * V),
         ns = (size_t)(N * HV * K * V);
  Inputs in = {calloc(nqk, 8), calloc(nqk, 8), calloc(nv, 8), calloc(ng, 8), calloc((size_t)(T * HV), 8),
               calloc((size_t)HV, 8), calloc((size_t)(HV * K), 8), calloc(ns, 8), calloc(nv, 8), calloc(ns, 8)};
  KdaOptions ko = {cs->gate_kind, !strcmp(cs->qk_norm, "true"), !strcmp(cs->beta_logits, "true"), 1.0 / sqrt(K), -5.0};
  for (size_t i = 0; i < ng; i++) { /* (in the order of the HV = H tests before GVA: the same inputs) */
    if (i < nqk) {
      in.q[i] = cake_round_bf16(nrand());
      in.k[i] = cake_round_bf16(nrand());
    }
    if (cs->gate_kind == KDA_GATE_EXTERNAL) in.g[i] = cake_round_f32(-log1p(exp(-nrand())) / 4);
    else in.g[i] = cake_round_bf16(nrand() + cs->g_shift);
  }
  if (!ko.qk_norm) /* the caller normalises: keep the delta rule stable */
    for (size_t t = 0; t < nqk / K; t++) {
      double sq = 0, sk = 0;
      for (int c = 0; c < K; c++) sq += in.q[t * K + c] * in.q[t * K + c], sk += in.k[t * K + c] * in.k[t * K + c];
      for (int c = 0; c < K; c++)
        in.q[t * K + c] = cake_round_bf16(in.q[t * K + c] / sqrt(sq)),
        in.k[t * K + c] = cake_round_bf16(in.k[t * K + c] / sqrt(sk));
    }
  for (size_t i = 0; i < nv; i++) in.v[i] = cake_round_bf16(nrand()), in.do_[i] = cake_round_bf16(nrand());
  for (int64_t i = 0; i < T * HV; i++) in.beta[i] = cake_round_bf16(ko.beta_logits ? nrand() : urand());
  for (int64_t h = 0; h < HV; h++)
    in.A_log[h] = cs->a_log_hi > 0 ? cake_round_f32(log(1 + (cs->a_log_hi - 1) * urand())) : 0;
  for (int64_t i = 0; i < HV * K; i++) {
    double dt = exp(log(0.001) + urand() * (log(0.1) - log(0.001)));
    in.dt_bias[i] = cake_round_f32(dt + log(-expm1(-dt)));
  }
  for (size_t i = 0; i < ns; i++) in.h0[i] = cake_round_f32(0.5 * nrand()), in.dht[i] = cake_round_f32(0.1 * nrand());

  /* the reference */
  int32_t cu32[8];
  for (int i = 0; i <= N; i++) cu32[i] = (int32_t)cs->cu[i];
  double *ref[NOUT];
  size_t ref_n[NOUT] = {nv, ns, nqk, nqk, nv, ng, (size_t)(T * HV), (size_t)HV, (size_t)(HV * K), ns};
  for (int o = 0; o < NOUT; o++) ref[o] = calloc(ref_n[o], 8);
  const double *h0 = cs->with_h0 ? in.h0 : NULL;
  ref_kda_fwd_gva(&ko, T, H, HV, K, V, cu32, N, in.q, in.k, in.v, in.g, in.beta, in.A_log, in.dt_bias, h0, ref[0],
                  ref[1]);
  KdaGrads gr = {ref[2], ref[3], ref[4], ref[5], ref[6], ref[7], ref[8], ref[9], NULL, NULL};
  ref_kda_bwd(&ko, T, H, HV, K, V, cu32, N, in.q, in.k, in.v, in.g, in.beta, in.A_log, in.dt_bias, h0, in.do_,
              cs->with_dht ? in.dht : NULL, &gr);

  static const double tol[NOUT] = {0.005, 0.005, 0.008, 0.008, 0.008, 0.02, 0.02, 0.02, 0.02, 0.008};
  const char *modes[2] = {cs->both_modes ? "ckpt" : cs->save, "states"};
  double *got[2][NOUT];
  size_t got_n[2][NOUT];
  for (int m = 0; m < (cs->both_modes ? 2 : 1); m++) {
    run_variant(cs, modes[m], &in, got[m], got_n[m]);
    printf("%-52s %-6s", cs->name, modes[m]);
    for (int o = 0; o < NOUT; o++) {
      if (!got[m][o]) continue;
      assert_int_equal(got_n[m][o], ref_n[o]);
      double e = ratio(got[m][o], ref[o], ref_n[o]);
      printf(" %s %.1e", out_names[o], e);
      if (!(e < tol[o])) printf(" (> %.3f!)", tol[o]);
      assert_true(e < tol[o]);
    }
    printf("\n");
  }
  if (cs->both_modes) {
    for (int o = 0; o < NOUT; o++) {
      if (!got[0][o]) continue;
      assert_memory_equal(got[0][o], got[1][o], got_n[0][o] * sizeof(double));
    }
    for (int o = 0; o < NOUT; o++) free(got[1][o]);
  }
  for (int o = 0; o < NOUT; o++) free(got[0][o]), free(ref[o]);
  free(in.q), free(in.k), free(in.v), free(in.g), free(in.beta), free(in.A_log), free(in.dt_bias);
  free(in.h0), free(in.do_), free(in.dht);
}

static void safe_gate_h0_dht_both_modes(void **st) {
  Case c = {"safe, norm, logits, h0, dht, docs 1/69/80", "safe", "true", "true", KDA_GATE_SAFE, 150, 2, 3,
            {0, 1, 70, 150}, 1, 1, 0, 0, 1, NULL, 0};
  run_case(&c);
}

static void safe_gate_at_lower_bound(void **st) {
  Case c = {"safe near its bound (g ~ -5), dht, 1 doc", "safe", "true", "true", KDA_GATE_SAFE, 130, 1, 1,
            {0, 130}, 0, 1, 8.0, 0, 0, "states", 0};
  run_case(&c);
}

static void softplus_gate_strong_decay(void **st) {
  Case c = {"softplus, A_log up to log 16, docs 77/123", "softplus", "true", "true", KDA_GATE_SOFTPLUS, 200, 1, 2,
            {0, 77, 200}, 0, 0, 1.0, 16, 0, "ckpt", 0};
  run_case(&c);
}

static void softplus_no_norm_beta_values(void **st) {
  Case c = {"softplus, no norm, beta values, h0, docs 64/1/65", "softplus", "false", "false", KDA_GATE_SOFTPLUS,
            130, 1, 3, {0, 64, 65, 130}, 1, 1, 0, 4, 1, NULL, 0};
  run_case(&c);
}

static void external_gate_both_modes(void **st) {
  Case c = {"external, no norm, beta values, h0, dht, 2 docs", "external", "false", "false", KDA_GATE_EXTERNAL,
            190, 1, 2, {0, 64, 190}, 1, 1, 0, 0, 1, NULL, 0};
  run_case(&c);
}

static void safe_no_norm_logits(void **st) {
  Case c = {"safe, no norm, logits, 1-token doc first", "safe", "false", "true", KDA_GATE_SAFE, 100, 1, 2,
            {0, 1, 100}, 0, 1, 0, 8, 0, "ckpt", 0};
  run_case(&c);
}

static void safe_norm_beta_values(void **st) {
  Case c = {"safe, norm, beta values, h0, docs 63/7", "safe", "true", "false", KDA_GATE_SAFE, 70, 2, 2,
            {0, 63, 70}, 1, 0, 0, 0, 0, "states", 0};
  run_case(&c);
}

static void gva_h1_hv2_safe_h0_dht_both_modes(void **st) {
  Case c = {"GVA H=1 HV=2, safe, norm, logits, h0, dht, docs 1/69/80", "safe", "true", "true", KDA_GATE_SAFE, 150, 1,
            3, {0, 1, 70, 150}, 1, 1, 0, 0, 1, NULL, 2};
  run_case(&c);
}

static void gva_h2_hv4_softplus(void **st) {
  Case c = {"GVA H=2 HV=4, softplus, A_log up to log 16, docs 77/53", "softplus", "true", "true", KDA_GATE_SOFTPLUS,
            130, 2, 2, {0, 77, 130}, 0, 1, 1.0, 16, 0, "ckpt", 4};
  run_case(&c);
}

static void gva_h1_hv3_external_both_modes(void **st) {
  Case c = {"GVA H=1 HV=3, external, no norm, beta values, h0", "external", "false", "false", KDA_GATE_EXTERNAL, 100, 1,
            2, {0, 64, 100}, 1, 0, 0, 0, 1, NULL, 3};
  run_case(&c);
}

static void gva_h2_hv4_safe_no_norm_beta_values(void **st) {
  Case c = {"GVA H=2 HV=4, safe near its bound, no norm, beta values", "safe", "false", "false", KDA_GATE_SAFE, 70, 2,
            2, {0, 1, 70}, 1, 1, 8.0, 0, 0, "states", 4};
  run_case(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(safe_gate_h0_dht_both_modes), cmocka_unit_test(safe_gate_at_lower_bound),
      cmocka_unit_test(softplus_gate_strong_decay),  cmocka_unit_test(softplus_no_norm_beta_values),
      cmocka_unit_test(external_gate_both_modes),    cmocka_unit_test(safe_no_norm_logits),
      cmocka_unit_test(safe_norm_beta_values),      cmocka_unit_test(gva_h1_hv2_safe_h0_dht_both_modes),
      cmocka_unit_test(gva_h2_hv4_softplus),        cmocka_unit_test(gva_h1_hv3_external_both_modes),
      cmocka_unit_test(gva_h2_hv4_safe_no_norm_beta_values),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
