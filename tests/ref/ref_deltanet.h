/* ref_deltanet.h - float64 reference of the DeltaNet forward
 * (specs/deltanet/deltanet_fwd.cake), token by token.
 *
 * Layouts (row-major): q, k [T, H, K]; v, o [T, H, V]; beta [T, H] (logits
 * when beta_logits, else the values); h0, ht [N, H, K, V] (either may be
 * NULL); cu [N + 1] document starts (NULL: one document of T tokens).
 *
 * Per document and head, from S = h0 (or 0), for each token t:
 *   u = beta_t (v_t - S^T k_t);  S <- S + k_t u^T
 *     (= (I - beta_t k_t k_t^T) S + beta_t k_t v_t^T);
 *   o_t = scale S^T q_t;  ht = S after the document's last token,
 * with q, k optionally L2-normalised (x / sqrt(sum x^2 + 1e-6)) and beta
 * optionally sigmoid(logit). */
#ifndef CAKE_REF_DELTANET_H
#define CAKE_REF_DELTANET_H
#include <stdint.h>

typedef struct DeltanetOptions {
  int qk_norm;     /* q, k <- x / sqrt(sum x^2 + 1e-6) */
  int beta_logits; /* beta <- sigmoid(beta) */
  double scale;    /* usually 1/sqrt(K) */
} DeltanetOptions;

/* Heads [h_begin, h_end) only (the others are not touched). */
void ref_deltanet_fwd_heads(const DeltanetOptions *opt, int64_t T, int64_t H, int K, int V, const int32_t *cu,
                            int64_t ndocs, const double *q, const double *k, const double *v, const double *beta,
                            const double *h0, double *o, double *ht, int64_t h_begin, int64_t h_end);

/* Every head. */
void ref_deltanet_fwd(const DeltanetOptions *opt, int64_t T, int64_t H, int K, int V, const int32_t *cu,
                      int64_t ndocs, const double *q, const double *k, const double *v, const double *beta,
                      const double *h0, double *o, double *ht);

#endif
