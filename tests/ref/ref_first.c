#include "ref_first.h"

#include <math.h>
#include <stdlib.h>

void ref_first(int64_t T, int64_t H, const int32_t *cu, int64_t ndocs, const double *x, const double *y,
               const double *w, double *z) {
  enum { D = REF_FIRST_D, C = REF_FIRST_C };
  double *s = malloc(sizeof(double) * C * D), *p = malloc(sizeof(double) * C * C);
  int64_t nd = cu ? ndocs : 1;
  for (int64_t d = 0; d < nd; d++) {
    int64_t lo = cu ? cu[d] : 0, hi = cu ? cu[d + 1] : T;
    for (int64_t t0 = lo; t0 < hi; t0 += C) {
      int64_t n = hi - t0 < C ? hi - t0 : C;
      for (int64_t h = 0; h < H; h++) {
#define X(r, k) x[((t0 + (r)) * H + h) * D + (k)]
#define Y(r, k) y[((t0 + (r)) * H + h) * D + (k)]
        for (int k = 0; k < D; k++) {
          double acc = 0;
          for (int r = 0; r < n; r++) {
            acc += 1.0 / (1.0 + exp(-X(r, k) * w[h * D + k]));
            s[r * D + k] = acc;
          }
        }
        for (int r = 0; r < n; r++)
          for (int j = 0; j <= r; j++) {
            double acc = 0;
            for (int k = 0; k < D; k++) acc += X(r, k) * Y(j, k);
            p[r * C + j] = acc;
          }
        for (int r = 0; r < n; r++)
          for (int k = 0; k < D; k++) {
            double acc = s[r * D + k];
            for (int j = 0; j <= r; j++) acc += p[r * C + j] * s[j * D + k];
            z[((t0 + r) * H + h) * D + k] = acc;
          }
#undef X
#undef Y
      }
    }
  }
  free(s);
  free(p);
}
