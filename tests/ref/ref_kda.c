#include "ref_kda.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ref_kda_token.h"

double ref_kda_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double softplus(double x) { return x > 30 ? x : log1p(exp(x)); }

void ref_kda_gate(const KdaOptions *opt, int K, const double *g, double A_log, const double *dt_bias, double *out) {
  for (int c = 0; c < K; c++) {
    switch (opt->gate) {
      case KDA_GATE_SAFE: out[c] = opt->lower_bound * ref_kda_sigmoid(exp(A_log) * (g[c] + dt_bias[c])); break;
      case KDA_GATE_SOFTPLUS: out[c] = -exp(A_log) * softplus(g[c] + dt_bias[c]); break;
      default: out[c] = g[c]; break;
    }
  }
}

void ref_kda_normalize(const double *x, int n, int on, double *out) {
  double ss = 0;
  for (int i = 0; i < n; i++) ss += x[i] * x[i];
  double r = on ? 1.0 / sqrt(ss + 1e-6) : 1.0;
  for (int i = 0; i < n; i++) out[i] = x[i] * r;
}

void ref_kda_token(const KdaOptions *opt, int64_t H, int64_t HV, int K, const double *q, const double *k,
                   const double *g, const double *beta, const double *A_log, const double *dt_bias, int64_t t,
                   int64_t hv, KdaToken *tok) {
  int64_t h = hv / (HV / H);
  size_t qk = ((size_t)t * H + h) * K, gi = ((size_t)t * HV + hv) * K;
  ref_kda_normalize(q + qk, K, opt->qk_norm, tok->qn);
  ref_kda_normalize(k + qk, K, opt->qk_norm, tok->kn);
  ref_kda_gate(opt, K, g + gi, A_log ? A_log[hv] : 0, dt_bias ? dt_bias + hv * K : NULL, tok->gt);
  double b = beta[t * HV + hv];
  tok->b = opt->beta_logits ? ref_kda_sigmoid(b) : b;
}

void ref_kda_step(const KdaToken *tok, int K, int V, const double *v, double *S, double *u) {
  for (int i = 0; i < K; i++) {
    double e = exp(tok->gt[i]);
    for (int j = 0; j < V; j++) S[i * V + j] *= e;
  }
  for (int j = 0; j < V; j++) {
    double sk = 0;
    for (int i = 0; i < K; i++) sk += S[i * V + j] * tok->kn[i];
    u[j] = tok->b * (v[j] - sk);
  }
  for (int i = 0; i < K; i++)
    for (int j = 0; j < V; j++) S[i * V + j] += tok->kn[i] * u[j];
}

void ref_kda_out(const KdaToken *tok, int K, int V, double scale, const double *S, double *o) {
  for (int j = 0; j < V; j++) {
    double acc = 0;
    for (int i = 0; i < K; i++) acc += S[i * V + j] * tok->qn[i];
    o[j] = scale * acc;
  }
}

void ref_kda_fwd(const KdaOptions *opt, int64_t T, int64_t H, int K, int V, const int32_t *cu, int64_t ndocs,
                 const double *q, const double *k, const double *v, const double *g, const double *beta,
                 const double *A_log, const double *dt_bias, const double *h0, double *o, double *ht) {
  ref_kda_fwd_gva_heads(opt, T, H, H, K, V, cu, ndocs, q, k, v, g, beta, A_log, dt_bias, h0, o, ht, 0, H);
}

void ref_kda_fwd_heads(const KdaOptions *opt, int64_t T, int64_t H, int K, int V, const int32_t *cu, int64_t ndocs,
                       const double *q, const double *k, const double *v, const double *g, const double *beta,
                       const double *A_log, const double *dt_bias, const double *h0, double *o, double *ht,
                       int64_t h_begin, int64_t h_end) {
  ref_kda_fwd_gva_heads(opt, T, H, H, K, V, cu, ndocs, q, k, v, g, beta, A_log, dt_bias, h0, o, ht, h_begin, h_end);
}

int ref_kda_threads = 1;

typedef struct FwdWork {
  const KdaOptions *opt;
  int64_t T, H, HV;
  int K, V;
  const int32_t *cu;
  int64_t ndocs;
  const double *q, *k, *v, *g, *beta, *A_log, *dt_bias, *h0;
  double *o, *ht;
  int64_t hv_begin, hv_end;
} FwdWork;

static void *fwd_heads(void *arg) {
  const FwdWork *w = arg;
  ref_kda_fwd_gva_heads(w->opt, w->T, w->H, w->HV, w->K, w->V, w->cu, w->ndocs, w->q, w->k, w->v, w->g, w->beta,
                        w->A_log, w->dt_bias, w->h0, w->o, w->ht, w->hv_begin, w->hv_end);
  return NULL;
}

void ref_kda_fwd_gva(const KdaOptions *opt, int64_t T, int64_t H, int64_t HV, int K, int V, const int32_t *cu,
                     int64_t ndocs, const double *q, const double *k, const double *v, const double *g,
                     const double *beta, const double *A_log, const double *dt_bias, const double *h0, double *o,
                     double *ht) {
  /* value heads are independent: split them over ref_kda_threads workers */
  int nt = ref_kda_threads < 1 ? 1 : ref_kda_threads > HV ? (int)HV : ref_kda_threads;
  if (nt > 64) nt = 64;
  FwdWork w[64];
  pthread_t tid[64];
  for (int i = 0; i < nt; i++) {
    w[i] = (FwdWork){opt, T, H, HV, K, V, cu, ndocs, q, k, v, g, beta, A_log, dt_bias, h0, o, ht,
                     HV * i / nt, HV * (i + 1) / nt};
    if (i == nt - 1 || pthread_create(&tid[i], NULL, fwd_heads, &w[i]) != 0) {
      fwd_heads(&w[i]);
      tid[i] = 0;
    }
  }
  for (int i = 0; i < nt; i++)
    if (tid[i]) pthread_join(tid[i], NULL);
}

void ref_kda_fwd_gva_heads(const KdaOptions *opt, int64_t T, int64_t H, int64_t HV, int K, int V, const int32_t *cu,
                           int64_t ndocs, const double *q, const double *k, const double *v, const double *g,
                           const double *beta, const double *A_log, const double *dt_bias, const double *h0,
                           double *o, double *ht, int64_t hv_begin, int64_t hv_end) {
  size_t kv = (size_t)K * V;
  double *S = malloc(sizeof(double) * kv), *u = malloc(sizeof(double) * V);
  KdaToken tok = {malloc(sizeof(double) * K), malloc(sizeof(double) * K), malloc(sizeof(double) * K), 0};
  int64_t nd = cu ? ndocs : 1;
  for (int64_t d = 0; d < nd; d++) {
    int64_t lo = cu ? cu[d] : 0, hi = cu ? cu[d + 1] : T;
    for (int64_t hv = hv_begin; hv < hv_end; hv++) {
      if (h0) memcpy(S, h0 + ((size_t)d * HV + hv) * kv, sizeof(double) * kv);
      else memset(S, 0, sizeof(double) * kv);
      for (int64_t t = lo; t < hi; t++) {
        size_t vo = ((size_t)t * HV + hv) * V;
        ref_kda_token(opt, H, HV, K, q, k, g, beta, A_log, dt_bias, t, hv, &tok);
        ref_kda_step(&tok, K, V, v + vo, S, u);
        ref_kda_out(&tok, K, V, opt->scale, S, o + vo);
      }
      if (ht) memcpy(ht + ((size_t)d * HV + hv) * kv, S, sizeof(double) * kv);
    }
  }
  free(S), free(u), free(tok.qn), free(tok.kn), free(tok.gt);
}
