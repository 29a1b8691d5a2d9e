/* ref_conv1d.c - float64 causal depthwise conv1d, forward and backward, the
 * definition written out token by token (see ref_conv1d.h). Channels are
 * independent: each function works on channels [d0, d1). */
#include "ref_conv1d.h"

#include <math.h>
#include <stdlib.h>

/* p[t, d] for token t of the document starting at s */
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

void ref_conv1d_fwd_range(int64_t T, int64_t D, int W, const long long *cu, int64_t ndocs, const double *x,
                          const double *w, const double *bias, int silu, double *y, int64_t d0, int64_t d1) {
  int64_t nd = cu ? ndocs : 1;
  for (int64_t n = 0; n < nd; n++) {
    int64_t s = cu ? cu[n] : 0, e = cu ? cu[n + 1] : T;
    for (int64_t t = s; t < e; t++)
      for (int64_t d = d0; d < d1; d++) {
        double p = pre(D, W, s, t, d, x, w, bias);
        y[t * D + d] = silu ? p * sigm(p) : p;
      }
  }
}

void ref_conv1d_bwd_range(int64_t T, int64_t D, int W, const long long *cu, int64_t ndocs, const double *x,
                          const double *w, const double *bias, int silu, const double *dy, double *dx, double *dw,
                          double *dbias, int64_t d0, int64_t d1) {
  int64_t nd = cu ? ndocs : 1;
  for (int64_t d = d0; d < d1; d++) {
    for (int i = 0; i < W; i++) dw[d * W + i] = 0;
    if (dbias) dbias[d] = 0;
    for (int64_t t = 0; t < T; t++) dx[t * D + d] = 0;
  }
  for (int64_t n = 0; n < nd; n++) {
    int64_t s = cu ? cu[n] : 0, e = cu ? cu[n + 1] : T;
    for (int64_t t = s; t < e; t++)
      for (int64_t d = d0; d < d1; d++) {
        double p = pre(D, W, s, t, d, x, w, bias), g = dy[t * D + d]; /* g: dL/dp at token t */
        if (silu) {
          double sg = sigm(p);
          g *= sg * (1.0 + p * (1.0 - sg));
        }
        if (dbias) dbias[d] += g;
        for (int i = 0; i < W; i++) {
          int64_t u = t - (W - 1) + i; /* output t reads x[u] with w[i] */
          if (u < s) continue;
          dx[u * D + d] += w[d * W + i] * g;
          dw[d * W + i] += g * x[u * D + d];
        }
      }
  }
}

void ref_conv1d_fwd(int64_t T, int64_t D, int W, const long long *cu, int64_t ndocs, const double *x, const double *w,
                    const double *bias, int silu, double *y) {
  ref_conv1d_fwd_range(T, D, W, cu, ndocs, x, w, bias, silu, y, 0, D);
}

void ref_conv1d_bwd(int64_t T, int64_t D, int W, const long long *cu, int64_t ndocs, const double *x, const double *w,
                    const double *bias, int silu, const double *dy, double *dx, double *dw, double *dbias) {
  ref_conv1d_bwd_range(T, D, W, cu, ndocs, x, w, bias, silu, dy, dx, dw, dbias, 0, D);
}
