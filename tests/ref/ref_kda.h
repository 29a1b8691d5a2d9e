/* ref_kda.h - float64 reference of the KDA forward: the token-by-token
 * recurrence of ../../shared/design/kda.md, per document and head, with
 * every gate / normalisation / beta option.
 *
 * Layouts (row-major): q, k [T, H, K]; v, o [T, H, V]; g [T, H, K] (raw gate
 * or the log-decay); beta [T, H]; A_log [H]; dt_bias [H, K];
 * h0, ht [N, H, K, V] (either may be NULL). */
#ifndef CAKE_REF_KDA_H
#define CAKE_REF_KDA_H
#include <stdint.h>

enum { KDA_GATE_SAFE, KDA_GATE_SOFTPLUS, KDA_GATE_EXTERNAL };

typedef struct KdaOptions {
  int gate;          /* KDA_GATE_* */
  int qk_norm;       /* q, k <- x / sqrt(sum x^2 + 1e-6) */
  int beta_logits;   /* beta <- sigmoid(beta) */
  double scale;      /* usually 1/sqrt(K) */
  double lower_bound;/* the safe gate's bound, usually -5 */
} KdaOptions;

/* The log-decay of one token and head: g [K] -> out [K]. */
void ref_kda_gate(const KdaOptions *opt, int K, const double *g, double A_log, const double *dt_bias, double *out);

void ref_kda_fwd(const KdaOptions *opt, int64_t T, int64_t H, int K, int V, const int32_t *cu, int64_t ndocs,
                 const double *q, const double *k, const double *v, const double *g, const double *beta,
                 const double *A_log, const double *dt_bias, const double *h0, double *o, double *ht);

/* The same for heads [h_begin, h_end) only (the others are not touched). */
void ref_kda_fwd_heads(const KdaOptions *opt, int64_t T, int64_t H, int K, int V, const int32_t *cu, int64_t ndocs,
                       const double *q, const double *k, const double *v, const double *g, const double *beta,
                       const double *A_log, const double *dt_bias, const double *h0, double *o, double *ht,
                       int64_t h_begin, int64_t h_end);

#endif
