#include "ref_kda.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double softplus(double x) { return x > 30 ? x : log1p(exp(x)); }

void ref_kda_gate(const KdaOptions *opt, int K, const double *g, double A_log, const double *dt_bias, double *out) {
  for (int c = 0; c < K; c++) {
    switch (opt->gate) {
      case KDA_GATE_SAFE: out[c] = opt->lower_bound * sigmoid(exp(A_log) * (g[c] + dt_bias[c])); break;
      case KDA_GATE_SOFTPLUS: out[c] = -exp(A_log) * softplus(g[c] + dt_bias[c]); break;
      default: out[c] = g[c]; break;
    }
  }
}

static void normalize(const double *x, int n, int on, double *out) {
  double ss = 0;
  for (int i = 0; i < n; i++) ss += x[i] * x[i];
  double r = on ? 1.0 / sqrt(ss + 1e-6) : 1.0;
  for (int i = 0; i < n; i++) out[i] = x[i] * r;
}

void ref_kda_fwd(const KdaOptions *opt, int64_t T, int64_t H, int K, int V, const int32_t *cu, int64_t ndocs,
                 const double *q, const double *k, const double *v, const double *g, const double *beta,
                 const double *A_log, const double *dt_bias, const double *h0, double *o, double *ht) {
  ref_kda_fwd_heads(opt, T, H, K, V, cu, ndocs, q, k, v, g, beta, A_log, dt_bias, h0, o, ht, 0, H);
}

void ref_kda_fwd_heads(const KdaOptions *opt, int64_t T, int64_t H, int K, int V, const int32_t *cu, int64_t ndocs,
                       const double *q, const double *k, const double *v, const double *g, const double *beta,
                       const double *A_log, const double *dt_bias, const double *h0, double *o, double *ht,
                       int64_t h_begin, int64_t h_end) {
  double *S = malloc(sizeof(double) * (size_t)K * V), *qn = malloc(sizeof(double) * K),
         *kn = malloc(sizeof(double) * K), *gt = malloc(sizeof(double) * K), *u = malloc(sizeof(double) * V);
  int64_t nd = cu ? ndocs : 1;
  for (int64_t d = 0; d < nd; d++) {
    int64_t lo = cu ? cu[d] : 0, hi = cu ? cu[d + 1] : T;
    for (int64_t h = h_begin; h < h_end; h++) {
      if (h0) memcpy(S, h0 + ((size_t)d * H + h) * K * V, sizeof(double) * (size_t)K * V);
      else memset(S, 0, sizeof(double) * (size_t)K * V);
      for (int64_t t = lo; t < hi; t++) {
        size_t qk = ((size_t)t * H + h) * K, vo = ((size_t)t * H + h) * V;
        normalize(q + qk, K, opt->qk_norm, qn);
        normalize(k + qk, K, opt->qk_norm, kn);
        ref_kda_gate(opt, K, g + qk, A_log ? A_log[h] : 0, dt_bias ? dt_bias + h * K : NULL, gt);
        double b = beta[t * H + h];
        if (opt->beta_logits) b = sigmoid(b);
        /* S <- Diag(exp(g)) S;  u = b (v - S^T k);  S <- S + k u^T;  o = scale S^T q */
        for (int i = 0; i < K; i++) {
          double e = exp(gt[i]);
          for (int j = 0; j < V; j++) S[i * V + j] *= e;
        }
        for (int j = 0; j < V; j++) {
          double sk = 0;
          for (int i = 0; i < K; i++) sk += S[i * V + j] * kn[i];
          u[j] = b * (v[vo + j] - sk);
        }
        for (int i = 0; i < K; i++)
          for (int j = 0; j < V; j++) S[i * V + j] += kn[i] * u[j];
        for (int j = 0; j < V; j++) {
          double acc = 0;
          for (int i = 0; i < K; i++) acc += S[i * V + j] * qn[i];
          o[vo + j] = opt->scale * acc;
        }
      }
      if (ht) memcpy(ht + ((size_t)d * H + h) * K * V, S, sizeof(double) * (size_t)K * V);
    }
  }
  free(S), free(qn), free(kn), free(gt), free(u);
}
