/* ref_gla.h - float64 reference of the Gated Linear Attention forward
 * (specs/gla/gla_fwd.cake), token by token.
 *
 * Layouts (row-major): q, k [T, H, K]; v, o [T, H, V]; g [T, H, K] (the
 * log-decay per key channel); h0, ht [N, H, K, V] (either may be NULL);
 * cu [N + 1] document starts (NULL: one document of T tokens).
 *
 * Per document and head, from S = h0 (or 0), for each token t:
 *   S[c, :] <- exp(g_t[c]) S[c, :] + k_t[c] v_t;  o_t = scale S^T q_t;
 *   ht = S after the document's last token. */
#ifndef CAKE_REF_GLA_H
#define CAKE_REF_GLA_H
#include <stdint.h>

/* Heads [h_begin, h_end) only (the others are not touched). */
void ref_gla_fwd_heads(double scale, int64_t T, int64_t H, int K, int V, const int32_t *cu, int64_t ndocs,
                       const double *q, const double *k, const double *v, const double *g, const double *h0,
                       double *o, double *ht, int64_t h_begin, int64_t h_end);

/* Every head. */
void ref_gla_fwd(double scale, int64_t T, int64_t H, int K, int V, const int32_t *cu, int64_t ndocs,
                 const double *q, const double *k, const double *v, const double *g, const double *h0, double *o,
                 double *ht);

#endif
