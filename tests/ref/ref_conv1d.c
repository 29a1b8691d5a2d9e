/* ref_conv1d.c - float64 causal depthwise conv1d, forward and backward, the
 * definition written out token by token (see ref_conv1d.h). */
#include "ref_conv1d.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* p[t, d] for token t of the document [s, e) */
static double pre(int64_t D, int W, int64_t s, int64_t t, int64_t d, const double *x, const double *w,
                  const double *bias) {
  double p = bias ? bias[d] : 0.0;
  for (int i = 0; i < W; i++) {
    int64_t u = t - (W - 1) + i;
    if (u >= s) p += w[d * W + i] * x[u * D + d];
  }
  return p;
}

static double sigm(double p) { return 1.0 / (1.0 + exp(-p)); }

void ref_conv1d_fwd(int64_t T, int64_t D, int W, const long long *cu, int64_t ndocs, const double *x, const double *w,
                    const double *bias, int silu, double *y) {
  int64_t nd = cu ? ndocs : 1;
  for (int64_t n = 0; n < nd; n++) {
    int64_t s = cu ? cu[n] : 0, e = cu ? cu[n + 1] : T;
    for (int64_t t = s; t < e; t++)
      for (int64_t d = 0; d < D; d++) {
        double p = pre(D, W, s, t, d, x, w, bias);
        y[t * D + d] = silu ? p * sigm(p) : p;
      }
  }
}

void ref_conv1d_bwd(int64_t T, int64_t D, int W, const long long *cu, int64_t ndocs, const double *x, const double *w,
                    const double *bias, int silu, const double *dy, double *dx, double *dw, double *dbias) {
  int64_t nd = cu ? ndocs : 1;
  double *dp = malloc(sizeof(double) * (size_t)(T * D > 0 ? T * D : 1));
  memset(dx, 0, sizeof(double) * (size_t)(T * D));
  memset(dw, 0, sizeof(double) * (size_t)(D * W));
  if (dbias) memset(dbias, 0, sizeof(double) * (size_t)D);
  for (int64_t n = 0; n < nd; n++) {
    int64_t s = cu ? cu[n] : 0, e = cu ? cu[n + 1] : T;
    for (int64_t t = s; t < e; t++)
      for (int64_t d = 0; d < D; d++) {
        double p = pre(D, W, s, t, d, x, w, bias), g = dy[t * D + d];
        if (silu) {
          double sg = sigm(p);
          g *= sg * (1.0 + p * (1.0 - sg));
        }
        dp[t * D + d] = g;
      }
    for (int64_t t = s; t < e; t++)
      for (int64_t d = 0; d < D; d++) {
        double g = dp[t * D + d];
        if (dbias) dbias[d] += g;
        for (int i = 0; i < W; i++) {
          int64_t u = t - (W - 1) + i; /* output t reads x[u] with w[i] */
          if (u < s) continue;
          dx[u * D + d] += w[d * W + i] * g;
          dw[d * W + i] += g * x[u * D + d];
        }
      }
  }
  free(dp);
}
