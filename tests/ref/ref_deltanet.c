#include "ref_deltanet.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* out = x / sqrt(sum x^2 + 1e-6) when on, else x. */
static void normalize(const double *x, int n, int on, double *out) {
  double s = 0;
  if (on)
    for (int i = 0; i < n; i++) s += x[i] * x[i];
  double r = on ? 1.0 / sqrt(s + 1e-6) : 1.0;
  for (int i = 0; i < n; i++) out[i] = x[i] * r;
}

/* The recurrence as written, one token at a time: O(K V) memory per call,
 * so a worker per group of heads needs no more. */
void ref_deltanet_fwd_heads(const DeltanetOptions *opt, int64_t T, int64_t H, int K, int V, const int32_t *cu,
                            int64_t ndocs, const double *q, const double *k, const double *v, const double *beta,
                            const double *h0, double *o, double *ht, int64_t h_begin, int64_t h_end) {
  size_t kv = (size_t)K * V;
  double *S = malloc(sizeof(double) * kv), *u = malloc(sizeof(double) * V);
  double *qn = malloc(sizeof(double) * K), *kn = malloc(sizeof(double) * K);
  int64_t nd = cu ? ndocs : 1;
  for (int64_t d = 0; d < nd; d++) {
    int64_t lo = cu ? cu[d] : 0, hi = cu ? cu[d + 1] : T;
    for (int64_t h = h_begin; h < h_end; h++) {
      if (h0) memcpy(S, h0 + ((size_t)d * H + h) * kv, sizeof(double) * kv);
      else memset(S, 0, sizeof(double) * kv);
      for (int64_t t = lo; t < hi; t++) {
        const double *vt = v + ((size_t)t * H + h) * V;
        double *ot = o + ((size_t)t * H + h) * V;
        normalize(q + ((size_t)t * H + h) * K, K, opt->qk_norm, qn);
        normalize(k + ((size_t)t * H + h) * K, K, opt->qk_norm, kn);
        double b = beta[t * H + h];
        if (opt->beta_logits) b = 1.0 / (1.0 + exp(-b));
        /* u = beta (v - S^T k), from the state before the update */
        for (int e = 0; e < V; e++) u[e] = vt[e];
        for (int c = 0; c < K; c++) {
          const double *row = S + (size_t)c * V;
          for (int e = 0; e < V; e++) u[e] -= kn[c] * row[e];
        }
        for (int e = 0; e < V; e++) u[e] *= b;
        for (int c = 0; c < K; c++) {
          double *row = S + (size_t)c * V;
          for (int e = 0; e < V; e++) row[e] += kn[c] * u[e];
        }
        for (int e = 0; e < V; e++) ot[e] = 0;
        for (int c = 0; c < K; c++) {
          const double *row = S + (size_t)c * V;
          for (int e = 0; e < V; e++) ot[e] += qn[c] * row[e];
        }
        for (int e = 0; e < V; e++) ot[e] *= opt->scale;
      }
      if (ht) memcpy(ht + ((size_t)d * H + h) * kv, S, sizeof(double) * kv);
    }
  }
  free(S), free(u), free(qn), free(kn);
}

void ref_deltanet_fwd(const DeltanetOptions *opt, int64_t T, int64_t H, int K, int V, const int32_t *cu,
                      int64_t ndocs, const double *q, const double *k, const double *v, const double *beta,
                      const double *h0, double *o, double *ht) {
  ref_deltanet_fwd_heads(opt, T, H, K, V, cu, ndocs, q, k, v, beta, h0, o, ht, 0, H);
}
