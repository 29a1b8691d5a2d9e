/* test_kda_ref.c - the float64 KDA backward reference (tests/ref/ref_kda_bwd.c)
 * against central finite differences of its own forward (ref_kda_fwd_gva):
 * the scalar loss L = sum(o * Wo) + sum(ht * Wh) (the second term only when
 * dht is given, Wh = dht) and every gradient of every input, element by
 * element, on small random problems. Covered: the three gates, qk_norm and
 * beta_logits on and off, grouped value heads (HV = 2H) and HV = H, several
 * packings (one document, several, one-token documents), h0 given or not
 * (dh0 is then checked at the zero state) and dht given or not. Also: the GVA
 * forward and backward agree with the HV = H reference on q, k replicated
 * over the group, and the check itself flags a slightly wrong gradient. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_kda.h"

static uint64_t g_rng = 0x5eed1234abcdull;
static double urand(void) {
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return ((double)(g_rng >> 11) + 0.5) / 9007199254740992.0;
}
static double nrand(void) { return sqrt(-2 * log(urand())) * cos(6.283185307179586 * urand()); }

enum { MAX_DOCS = 8 };

typedef struct Case {
  int gate, qk_norm, beta_logits;
  int64_t T, H, HV;
  int K, V;
  int ndocs;
  int32_t cu[MAX_DOCS + 1];
  int with_h0, with_dht;
  int small_rows; /* q, k of token T / 2 scaled to norm 0.02 */
} Case;

/* One random problem: inputs, loss weights and analytic gradients. */
typedef struct Problem {
  Case c;
  KdaOptions opt;
  size_t nqk, nv, ng, nb, ns;
  double *q, *k, *v, *g, *beta, *A_log, *dt_bias, *h0; /* h0 all zero when !with_h0 */
  double *wo, *wh;                                     /* dL/do, dL/dht */
  double *o, *ht;                                      /* forward scratch */
  KdaGrads gr;
} Problem;

static double *alloc(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

static void fill_unit_rows(double *x, size_t rows, int n) { /* the caller normalises: a stable delta rule */
  for (size_t r = 0; r < rows; r++) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[r * n + i] * x[r * n + i];
    for (int i = 0; i < n; i++) x[r * n + i] /= sqrt(ss);
  }
}

static void problem_init(Problem *p, const Case *c) {
  memset(p, 0, sizeof *p);
  p->c = *c;
  p->opt = (KdaOptions){c->gate, c->qk_norm, c->beta_logits, 1.0 / sqrt(c->K), -5.0};
  p->nqk = (size_t)(c->T * c->H * c->K), p->nv = (size_t)(c->T * c->HV * c->V);
  p->ng = (size_t)(c->T * c->HV * c->K), p->nb = (size_t)(c->T * c->HV);
  p->ns = (size_t)(c->ndocs * c->HV * c->K * c->V);
  p->q = alloc(p->nqk), p->k = alloc(p->nqk), p->v = alloc(p->nv), p->g = alloc(p->ng), p->beta = alloc(p->nb);
  p->A_log = alloc((size_t)c->HV), p->dt_bias = alloc((size_t)(c->HV * c->K)), p->h0 = alloc(p->ns);
  p->wo = alloc(p->nv), p->wh = alloc(p->ns), p->o = alloc(p->nv), p->ht = alloc(p->ns);
  for (size_t i = 0; i < p->nqk; i++) p->q[i] = nrand(), p->k[i] = nrand();
  if (!c->qk_norm) fill_unit_rows(p->q, p->nqk / c->K, c->K), fill_unit_rows(p->k, p->nqk / c->K, c->K);
  if (c->small_rows) {
    size_t row = (size_t)(c->T / 2 * c->H);
    fill_unit_rows(p->q + row * c->K, (size_t)c->H, c->K), fill_unit_rows(p->k + row * c->K, (size_t)c->H, c->K);
    for (size_t i = row * c->K; i < (row + c->H) * c->K; i++) p->q[i] *= 0.02, p->k[i] *= 0.02;
  }
  for (size_t i = 0; i < p->nv; i++) p->v[i] = nrand(), p->wo[i] = nrand();
  for (size_t i = 0; i < p->ng; i++) p->g[i] = c->gate == KDA_GATE_EXTERNAL ? -0.05 - urand() : nrand();
  for (size_t i = 0; i < p->nb; i++) p->beta[i] = c->beta_logits ? nrand() : 0.1 + 0.8 * urand();
  for (int64_t h = 0; h < c->HV; h++) p->A_log[h] = log(0.5 + 1.5 * urand());
  for (int64_t i = 0; i < c->HV * c->K; i++) p->dt_bias[i] = 0.5 * nrand();
  for (size_t i = 0; i < p->ns; i++) {
    if (c->with_h0) p->h0[i] = 0.5 * nrand();
    if (c->with_dht) p->wh[i] = nrand();
  }
  p->gr = (KdaGrads){alloc(p->nqk), alloc(p->nqk), alloc(p->nv), alloc(p->ng), alloc(p->nb),
                     alloc((size_t)c->HV), alloc((size_t)(c->HV * c->K)), alloc(p->ns), NULL, NULL};
}

static void problem_free(Problem *p) {
  double *a[] = {p->q, p->k, p->v, p->g, p->beta, p->A_log, p->dt_bias, p->h0, p->wo, p->wh, p->o, p->ht,
                 p->gr.dq, p->gr.dk, p->gr.dv, p->gr.dg, p->gr.dbeta, p->gr.dA_log, p->gr.ddt_bias, p->gr.dh0};
  for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) free(a[i]);
}

static double loss(Problem *p) {
  const Case *c = &p->c;
  ref_kda_fwd_gva(&p->opt, c->T, c->H, c->HV, c->K, c->V, c->cu, c->ndocs, p->q, p->k, p->v, p->g, p->beta,
                  p->A_log, p->dt_bias, p->h0, p->o, p->ht);
  double L = 0;
  for (size_t i = 0; i < p->nv; i++) L += p->o[i] * p->wo[i];
  if (c->with_dht)
    for (size_t i = 0; i < p->ns; i++) L += p->ht[i] * p->wh[i];
  return L;
}

static void backward(Problem *p) {
  const Case *c = &p->c;
  ref_kda_bwd(&p->opt, c->T, c->H, c->HV, c->K, c->V, c->cu, c->ndocs, p->q, p->k, p->v, p->g, p->beta, p->A_log,
              p->dt_bias, c->with_h0 ? p->h0 : NULL, p->wo, c->with_dht ? p->wh : NULL, &p->gr);
}

/* max_i |fd_i - an_i| / max_i |an_i| over one input x [n] and its gradient
 * an (an absolute error when the gradient is all zero). */
static double fd_error(Problem *p, double *x, const double *an, size_t n) {
  double err = 0, amax = 0;
  for (size_t i = 0; i < n; i++) {
    double x0 = x[i], h = 1e-6 * fmax(1.0, fabs(x0));
    x[i] = x0 + h;
    double lp = loss(p);
    x[i] = x0 - h;
    double lm = loss(p);
    x[i] = x0;
    double fd = (lp - lm) / (2 * h);
    err = fmax(err, fabs(fd - an[i]));
    amax = fmax(amax, fabs(an[i]));
  }
  return amax > 0 ? err / amax : err;
}

enum { G_DQ, G_DK, G_DV, G_DG, G_DBETA, G_DALOG, G_DDT, G_DH0, NGRADS };
static const char *g_names[NGRADS] = {"dq", "dk", "dv", "dg", "dbeta", "dA_log", "ddt_bias", "dh0"};
static double g_worst[NGRADS];

/* The FD errors of every gradient of p (backward() already run). */
static void fd_errors(Problem *p, double err[NGRADS]) {
  const Case *c = &p->c;
  size_t nhv = (size_t)c->HV, ndt = (size_t)(c->HV * c->K);
  double *x[NGRADS] = {p->q, p->k, p->v, p->g, p->beta, p->A_log, p->dt_bias, p->h0};
  double *an[NGRADS] = {p->gr.dq, p->gr.dk, p->gr.dv, p->gr.dg, p->gr.dbeta, p->gr.dA_log, p->gr.ddt_bias, p->gr.dh0};
  size_t n[NGRADS] = {p->nqk, p->nqk, p->nv, p->ng, p->nb, nhv, ndt, p->ns};
  for (int i = 0; i < NGRADS; i++) err[i] = fd_error(p, x[i], an[i], n[i]);
}

static const double TOL = 1e-6;

static void check_case(const Case *c) {
  Problem p;
  problem_init(&p, c);
  backward(&p);
  double err[NGRADS];
  fd_errors(&p, err);
  static const char *gates[] = {"safe", "softplus", "external"};
  printf("%-8s norm %d logits %d T %2lld H %lld HV %lld K %d V %d docs %d h0 %d dht %d |", gates[c->gate], c->qk_norm,
         c->beta_logits, (long long)c->T, (long long)c->H, (long long)c->HV, c->K, c->V, c->ndocs, c->with_h0,
         c->with_dht);
  for (int i = 0; i < NGRADS; i++) printf(" %.0e", err[i]);
  printf("\n");
  for (int i = 0; i < NGRADS; i++) {
    if (err[i] >= TOL) fprintf(stderr, "%s: FD error %.3e\n", g_names[i], err[i]);
    assert_true(err[i] < TOL);
    g_worst[i] = fmax(g_worst[i], err[i]);
  }
  if (c->gate == KDA_GATE_EXTERNAL) /* the gate parameters do not enter */
    for (int64_t i = 0; i < c->HV * c->K; i++) assert_true(p.gr.ddt_bias[i] == 0 && p.gr.dA_log[i / c->K] == 0);
  problem_free(&p);
}

/* Packings of T tokens: one document; several with a one-token document in
 * the middle; one-token documents at both ends. */
static void packing(Case *c, int kind) {
  int32_t T = (int32_t)c->T;
  if (kind == 0) c->ndocs = 1, c->cu[0] = 0, c->cu[1] = T;
  else if (kind == 1) c->ndocs = 4, c->cu[0] = 0, c->cu[1] = T / 3, c->cu[2] = T / 3 + 1, c->cu[3] = T - 3, c->cu[4] = T;
  else c->ndocs = 3, c->cu[0] = 0, c->cu[1] = 1, c->cu[2] = T - 1, c->cu[3] = T;
}

/* Every gate x qk_norm x beta_logits x h0 x dht x (HV = H or 2H); sizes
 * (T 7..20, H 1..2, K, V 4..8) and packings rotate. */
static void fd_all_options(void **st) {
  (void)st;
  int n = 0;
  for (int gate = 0; gate < 3; gate++)
    for (int norm = 0; norm < 2; norm++)
      for (int logits = 0; logits < 2; logits++)
        for (int var = 0; var < 8; var++, n++) {
          Case c = {gate, norm, logits, 0, 0, 0, 0, 0, 0, {0}, var & 1, (var >> 1) & 1, 0};
          c.T = 7 + (n * 5) % 14;
          c.H = 1 + (n / 3) % 2;
          c.HV = c.H * (1 + (var >> 2));
          c.K = 4 + n % 5, c.V = 4 + (n * 3) % 5;
          packing(&c, n % 3);
          check_case(&c);
        }
  printf("max FD error:");
  for (int i = 0; i < NGRADS; i++) printf(" %s %.1e", g_names[i], g_worst[i]);
  printf("\n");
}

/* q, k rows of norm 0.02 at one token: the L2 norm's eps (1e-6 under the
 * square root) changes the result at 1e-3 there, so its backward must use
 * the same eps. */
static void fd_norm_of_small_rows(void **st) {
  (void)st;
  Case c = {KDA_GATE_SAFE, 1, 1, 10, 1, 2, 6, 5, 2, {0, 6, 10}, 1, 1, 1};
  check_case(&c);
}

/* Grouped value heads are the HV = H problem with q, k repeated over each
 * group: the forward matches, and dq, dk are the group sums. */
static void gva_matches_replicated_heads(void **st) {
  (void)st;
  Case c = {KDA_GATE_SAFE, 1, 1, 11, 2, 6, 5, 4, 2, {0, 4, 11}, 1, 1, 0};
  Problem p, r;
  problem_init(&p, &c);
  Case cr = c;
  cr.H = c.HV;
  problem_init(&r, &cr);
  int64_t grp = c.HV / c.H;
  memcpy(r.v, p.v, p.nv * 8), memcpy(r.g, p.g, p.ng * 8), memcpy(r.beta, p.beta, p.nb * 8);
  memcpy(r.A_log, p.A_log, (size_t)c.HV * 8), memcpy(r.dt_bias, p.dt_bias, (size_t)(c.HV * c.K) * 8);
  memcpy(r.h0, p.h0, p.ns * 8), memcpy(r.wo, p.wo, p.nv * 8), memcpy(r.wh, p.wh, p.ns * 8);
  for (int64_t t = 0; t < c.T; t++)
    for (int64_t hv = 0; hv < c.HV; hv++) {
      size_t dst = ((size_t)t * c.HV + hv) * c.K, src = ((size_t)t * c.H + hv / grp) * c.K;
      memcpy(r.q + dst, p.q + src, (size_t)c.K * 8), memcpy(r.k + dst, p.k + src, (size_t)c.K * 8);
    }
  assert_true(fabs(loss(&p) - loss(&r)) < 1e-12);
  for (size_t i = 0; i < p.nv; i++) assert_true(fabs(p.o[i] - r.o[i]) < 1e-12);
  for (size_t i = 0; i < p.ns; i++) assert_true(fabs(p.ht[i] - r.ht[i]) < 1e-12);
  backward(&p), backward(&r);
  for (size_t i = 0; i < p.nv; i++) assert_true(fabs(p.gr.dv[i] - r.gr.dv[i]) < 1e-12);
  for (size_t i = 0; i < p.ng; i++) assert_true(fabs(p.gr.dg[i] - r.gr.dg[i]) < 1e-12);
  for (size_t i = 0; i < p.ns; i++) assert_true(fabs(p.gr.dh0[i] - r.gr.dh0[i]) < 1e-12);
  for (int64_t t = 0; t < c.T; t++)
    for (int64_t h = 0; h < c.H; h++)
      for (int i = 0; i < c.K; i++) {
        double sq = 0, sk = 0;
        for (int64_t j = 0; j < grp; j++) {
          size_t ri = ((size_t)t * c.HV + h * grp + j) * c.K + i;
          sq += r.gr.dq[ri], sk += r.gr.dk[ri];
        }
        size_t pi = ((size_t)t * c.H + h) * c.K + i;
        assert_true(fabs(p.gr.dq[pi] - sq) < 1e-12 && fabs(p.gr.dk[pi] - sk) < 1e-12);
      }
  problem_free(&p), problem_free(&r);
}

/* The check is sharp: a gradient off by 1e-5 of its largest entry in a
 * single element fails it, for every gradient. */
static void fd_check_flags_a_wrong_gradient(void **st) {
  (void)st;
  Case c = {KDA_GATE_SOFTPLUS, 1, 1, 9, 1, 2, 4, 5, 2, {0, 5, 9}, 1, 1, 0};
  Problem p;
  problem_init(&p, &c);
  backward(&p);
  double *an[NGRADS] = {p.gr.dq, p.gr.dk, p.gr.dv, p.gr.dg, p.gr.dbeta, p.gr.dA_log, p.gr.ddt_bias, p.gr.dh0};
  size_t n[NGRADS] = {p.nqk, p.nqk, p.nv, p.ng, p.nb, (size_t)c.HV, (size_t)(c.HV * c.K), p.ns};
  for (int gi = 0; gi < NGRADS; gi++) {
    double amax = 0, err[NGRADS];
    for (size_t i = 0; i < n[gi]; i++) amax = fmax(amax, fabs(an[gi][i]));
    size_t at = n[gi] / 2;
    an[gi][at] += 1e-5 * amax;
    fd_errors(&p, err);
    an[gi][at] -= 1e-5 * amax;
    for (int j = 0; j < NGRADS; j++) assert_true(j == gi ? err[j] > TOL : err[j] < TOL);
  }
  problem_free(&p);
}

/* Threads split the key heads; the gradients are the same bits whatever
 * their number (GVA, several documents). */
static void threads_give_the_same_bits(void **st) {
  (void)st;
  Case c = {KDA_GATE_SOFTPLUS, 1, 1, 13, 3, 6, 4, 5, 3, {0, 4, 5, 13}, 1, 1, 0};
  Problem p;
  problem_init(&p, &c);
  backward(&p);
  double *an[NGRADS] = {p.gr.dq, p.gr.dk, p.gr.dv, p.gr.dg, p.gr.dbeta, p.gr.dA_log, p.gr.ddt_bias, p.gr.dh0};
  size_t n[NGRADS] = {p.nqk, p.nqk, p.nv, p.ng, p.nb, (size_t)c.HV, (size_t)(c.HV * c.K), p.ns};
  double *one[NGRADS];
  for (int gi = 0; gi < NGRADS; gi++) {
    one[gi] = alloc(n[gi]);
    memcpy(one[gi], an[gi], n[gi] * 8);
  }
  for (int threads = 2; threads <= 4; threads++) {
    ref_kda_threads = threads;
    for (int gi = 0; gi < NGRADS; gi++) memset(an[gi], 0xff, n[gi] * 8);
    backward(&p);
    for (int gi = 0; gi < NGRADS; gi++) assert_memory_equal(an[gi], one[gi], n[gi] * 8);
  }
  ref_kda_threads = 1;
  for (int gi = 0; gi < NGRADS; gi++) free(one[gi]);
  problem_free(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fd_all_options),
      cmocka_unit_test(fd_norm_of_small_rows),
      cmocka_unit_test(gva_matches_replicated_heads),
      cmocka_unit_test(fd_check_flags_a_wrong_gradient),
      cmocka_unit_test(threads_give_the_same_bits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
