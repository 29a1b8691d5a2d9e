#include "ref_gdn.h"

#include <stdlib.h>
#include <string.h>

#include "ref_kda_token.h"

/* KDA's recurrence step by step (ref_kda_step, ref_kda_out) with the token's
 * log-decay g[t, h] in every key channel: exactly the GDN recurrence (every
 * key row of the state decays by the same exp(g_t)). Nothing of [T, H, K] is
 * expanded, so a worker per group of heads needs O(K V) memory. */
void ref_gdn_fwd_heads(const GdnOptions *opt, int64_t T, int64_t H, int K, int V, const int32_t *cu, int64_t ndocs,
                       const double *q, const double *k, const double *v, const double *g, const double *beta,
                       const double *h0, double *o, double *ht, int64_t h_begin, int64_t h_end) {
  size_t kv = (size_t)K * V;
  double *S = malloc(sizeof(double) * kv), *u = malloc(sizeof(double) * V);
  KdaToken tok = {malloc(sizeof(double) * K), malloc(sizeof(double) * K), malloc(sizeof(double) * K), 0};
  int64_t nd = cu ? ndocs : 1;
  for (int64_t d = 0; d < nd; d++) {
    int64_t lo = cu ? cu[d] : 0, hi = cu ? cu[d + 1] : T;
    for (int64_t h = h_begin; h < h_end; h++) {
      if (h0) memcpy(S, h0 + ((size_t)d * H + h) * kv, sizeof(double) * kv);
      else memset(S, 0, sizeof(double) * kv);
      for (int64_t t = lo; t < hi; t++) {
        size_t qk = ((size_t)t * H + h) * K, vo = ((size_t)t * H + h) * V;
        ref_kda_normalize(q + qk, K, opt->qk_norm, tok.qn);
        ref_kda_normalize(k + qk, K, opt->qk_norm, tok.kn);
        for (int c = 0; c < K; c++) tok.gt[c] = g[t * H + h];
        double b = beta[t * H + h];
        tok.b = opt->beta_logits ? ref_kda_sigmoid(b) : b;
        ref_kda_step(&tok, K, V, v + vo, S, u);
        ref_kda_out(&tok, K, V, opt->scale, S, o + vo);
      }
      if (ht) memcpy(ht + ((size_t)d * H + h) * kv, S, sizeof(double) * kv);
    }
  }
  free(S), free(u), free(tok.qn), free(tok.kn), free(tok.gt);
}

void ref_gdn_fwd(const GdnOptions *opt, int64_t T, int64_t H, int K, int V, const int32_t *cu, int64_t ndocs,
                 const double *q, const double *k, const double *v, const double *g, const double *beta,
                 const double *h0, double *o, double *ht) {
  ref_gdn_fwd_heads(opt, T, H, K, V, cu, ndocs, q, k, v, g, beta, h0, o, ht, 0, H);
}
