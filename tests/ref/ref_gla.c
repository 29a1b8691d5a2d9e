#include "ref_gla.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The recurrence as written, one token at a time: O(K V) memory per call,
 * so a worker per group of heads needs no more. */
void ref_gla_fwd_heads(double scale, int64_t T, int64_t H, int K, int V, const int32_t *cu, int64_t ndocs,
                       const double *q, const double *k, const double *v, const double *g, const double *h0,
                       double *o, double *ht, int64_t h_begin, int64_t h_end) {
  size_t kv = (size_t)K * V;
  double *S = malloc(sizeof(double) * kv);
  int64_t nd = cu ? ndocs : 1;
  for (int64_t d = 0; d < nd; d++) {
    int64_t lo = cu ? cu[d] : 0, hi = cu ? cu[d + 1] : T;
    for (int64_t h = h_begin; h < h_end; h++) {
      if (h0) memcpy(S, h0 + ((size_t)d * H + h) * kv, sizeof(double) * kv);
      else memset(S, 0, sizeof(double) * kv);
      for (int64_t t = lo; t < hi; t++) {
        const double *qt = q + ((size_t)t * H + h) * K, *kt = k + ((size_t)t * H + h) * K,
                     *gt = g + ((size_t)t * H + h) * K, *vt = v + ((size_t)t * H + h) * V;
        double *ot = o + ((size_t)t * H + h) * V;
        for (int c = 0; c < K; c++) {
          double a = exp(gt[c]), kc = kt[c];
          double *row = S + (size_t)c * V;
          for (int e = 0; e < V; e++) row[e] = a * row[e] + kc * vt[e];
        }
        for (int e = 0; e < V; e++) ot[e] = 0;
        for (int c = 0; c < K; c++) {
          const double *row = S + (size_t)c * V;
          double qc = qt[c];
          for (int e = 0; e < V; e++) ot[e] += qc * row[e];
        }
        for (int e = 0; e < V; e++) ot[e] *= scale;
      }
      if (ht) memcpy(ht + ((size_t)d * H + h) * kv, S, sizeof(double) * kv);
    }
  }
  free(S);
}

void ref_gla_fwd(double scale, int64_t T, int64_t H, int K, int V, const int32_t *cu, int64_t ndocs,
                 const double *q, const double *k, const double *v, const double *g, const double *h0, double *o,
                 double *ht) {
  ref_gla_fwd_heads(scale, T, H, K, V, cu, ndocs, q, k, v, g, h0, o, ht, 0, H);
}
