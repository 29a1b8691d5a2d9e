/* ref_first.h - float64 reference of specs/first/first.cake (exact math:
 * no bf16 rounding of intermediates). Tokens are split into documents by
 * cu_seqlens (NULL: one document), each document into chunks of 64. */
#ifndef CAKE_REF_FIRST_H
#define CAKE_REF_FIRST_H
#include <stdint.h>

enum { REF_FIRST_D = 64, REF_FIRST_C = 64 };

/* x, y: [T, H, 64]; w: [H, 64]; z: [T, H, 64] (written) */
void ref_first(int64_t T, int64_t H, const int32_t *cu, int64_t ndocs, const double *x, const double *y,
               const double *w, double *z);

#endif
