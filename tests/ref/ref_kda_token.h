/* ref_kda_token.h - helpers shared by the KDA forward and backward references
 * (private to tests/ref). */
#ifndef CAKE_REF_KDA_TOKEN_H
#define CAKE_REF_KDA_TOKEN_H
#include "ref_kda.h"

/* The inputs of one token t and value head hv, as the recurrence uses them. */
typedef struct KdaToken {
  double *qn, *kn;  /* [K] q, k after the optional L2 norm */
  double *gt;       /* [K] log-decay */
  double b;         /* beta after the optional sigmoid */
} KdaToken;

double ref_kda_sigmoid(double x);

/* out = x / sqrt(sum x^2 + 1e-6) when on, else x. */
void ref_kda_normalize(const double *x, int n, int on, double *out);

/* Fills tok (arrays of K, owned by the caller) for token t, value head hv. */
void ref_kda_token(const KdaOptions *opt, int64_t H, int64_t HV, int K, const double *q, const double *k,
                   const double *g, const double *beta, const double *A_log, const double *dt_bias, int64_t t,
                   int64_t hv, KdaToken *tok);

/* One step on the state S [K, V]: decay by exp(gt), then the delta-rule
 * update with v [V]; u [V] receives beta (v - S'^T k). */
void ref_kda_step(const KdaToken *tok, int K, int V, const double *v, double *S, double *u);

/* o [V] = scale S^T qn. */
void ref_kda_out(const KdaToken *tok, int K, int V, double scale, const double *S, double *o);

#endif
