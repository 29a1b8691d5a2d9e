/* ref_conv1d.h - float64 reference of the causal depthwise conv1d
 * (specs/conv1d/conv1d.cake): per document, width W, x before a document's
 * first token 0; optional bias; SiLU or no activation. x, dy, y, dx are
 * [T, D]; w, dw are [D, W]; bias, dbias [D] (bias may be NULL; dbias is
 * written when not NULL). cu: ndocs + 1 offsets (NULL: one document). */
#ifndef CAKE_REF_CONV1D_H
#define CAKE_REF_CONV1D_H

#include <stdint.h>

void ref_conv1d_fwd(int64_t T, int64_t D, int W, const long long *cu, int64_t ndocs, const double *x, const double *w,
                    const double *bias, int silu, double *y);
void ref_conv1d_bwd(int64_t T, int64_t D, int W, const long long *cu, int64_t ndocs, const double *x, const double *w,
                    const double *bias, int silu, const double *dy, double *dx, double *dw, double *dbias);
/* The same on channels [d0, d1) only (the others are not touched): for threads. */
void ref_conv1d_fwd_range(int64_t T, int64_t D, int W, const long long *cu, int64_t ndocs, const double *x,
                          const double *w, const double *bias, int silu, double *y, int64_t d0, int64_t d1);
void ref_conv1d_bwd_range(int64_t T, int64_t D, int W, const long long *cu, int64_t ndocs, const double *x,
                          const double *w, const double *bias, int silu, const double *dy, double *dx, double *dw,
                          double *dbias, int64_t d0, int64_t d1);

#endif
