/* ref_kda.h - float64 reference of KDA training: the token-by-token
 * recurrence of ../../shared/design/kda.md, per document and value head, with
 * every gate / normalisation / beta option, and its exact backward (BPTT).
 *
 * Shapes: T tokens (all documents packed), H key heads, HV value heads
 * (HV a multiple of H; value head hv reads key head hv / (HV / H), "GVA";
 * HV = H is the plain case), K key and V value channels, N documents.
 *
 * Layouts (row-major):
 *   q, k            [T, H, K]
 *   v, o            [T, HV, V]
 *   g               [T, HV, K]  raw gate (safe, softplus) or the log-decay (external)
 *   beta            [T, HV]     logits (opt->beta_logits) or the values
 *   A_log           [HV]        in-kernel gates only (may be NULL for external)
 *   dt_bias         [HV, K]     in-kernel gates only (may be NULL for external)
 *   h0, ht          [N, HV, K, V]  initial / final state per document (either may be NULL)
 *   cu              [N + 1]     document starts: document d holds tokens
 *                               [cu[d], cu[d+1]), lengths >= 1; NULL: one document
 *                               of T tokens (then ndocs is ignored, N = 1).
 *
 * Per document and value head, from S = h0 (or 0), for each token t:
 *   S <- Diag(exp(gate(g_t))) S;  u = beta_t (v_t - S^T k_t);  S <- S + k_t u^T;
 *   o_t = scale S^T q_t;          ht = S after the document's last token.
 * with q, k optionally L2-normalised (x / sqrt(sum x^2 + 1e-6)) and beta
 * optionally sigmoid(logit). */
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

/* The log-decay of one token and head: g [K] -> out [K].
 *   safe:     out = lower_bound * sigmoid(exp(A_log) * (g + dt_bias))
 *   softplus: out = -exp(A_log) * softplus(g + dt_bias)
 *   external: out = g */
void ref_kda_gate(const KdaOptions *opt, int K, const double *g, double A_log, const double *dt_bias, double *out);

/* The forward with HV = H. */
void ref_kda_fwd(const KdaOptions *opt, int64_t T, int64_t H, int K, int V, const int32_t *cu, int64_t ndocs,
                 const double *q, const double *k, const double *v, const double *g, const double *beta,
                 const double *A_log, const double *dt_bias, const double *h0, double *o, double *ht);

/* The same for heads [h_begin, h_end) only (the others are not touched). */
void ref_kda_fwd_heads(const KdaOptions *opt, int64_t T, int64_t H, int K, int V, const int32_t *cu, int64_t ndocs,
                       const double *q, const double *k, const double *v, const double *g, const double *beta,
                       const double *A_log, const double *dt_bias, const double *h0, double *o, double *ht,
                       int64_t h_begin, int64_t h_end);

/* The forward with grouped value heads: HV value heads over H key heads. */
void ref_kda_fwd_gva(const KdaOptions *opt, int64_t T, int64_t H, int64_t HV, int K, int V, const int32_t *cu,
                     int64_t ndocs, const double *q, const double *k, const double *v, const double *g,
                     const double *beta, const double *A_log, const double *dt_bias, const double *h0, double *o,
                     double *ht);

/* The same for value heads [hv_begin, hv_end) only (the others are not touched). */
void ref_kda_fwd_gva_heads(const KdaOptions *opt, int64_t T, int64_t H, int64_t HV, int K, int V, const int32_t *cu,
                           int64_t ndocs, const double *q, const double *k, const double *v, const double *g,
                           const double *beta, const double *A_log, const double *dt_bias, const double *h0,
                           double *o, double *ht, int64_t hv_begin, int64_t hv_end);

/* The backward's outputs. Every non-NULL array is overwritten (not
 * accumulated into); a NULL array is not computed.
 *   dq, dk     [T, H, K]      w.r.t. the raw q, k (through the L2 norm when
 *                             qk_norm); the sum over a key head's group of value
 *                             heads runs in ascending hv order
 *   dv         [T, HV, V]
 *   dg         [T, HV, K]     w.r.t. the raw gate input (safe, softplus) or the
 *                             log-decay itself (external)
 *   dbeta      [T, HV]        w.r.t. the logits (beta_logits) or the values
 *   dA_log     [HV]           in-kernel gates; all zero for external
 *   ddt_bias   [HV, K]        in-kernel gates; all zero for external
 *   dh0        [N, HV, K, V]  w.r.t. the initial state (h0, or the zero state
 *                             when h0 is NULL)
 * dA_log and ddt_bias sum over tokens in ascending order.
 *   dA_log_scale   [HV]       optional: sqrt of the sum of the squares of
 *   ddt_bias_scale [HV, K]    each sum's terms, the size an error of a few
 *                             parts in the terms gives the sum when they
 *                             cancel (the GPU tests bound the error by it) */
typedef struct KdaGrads {
  double *dq, *dk, *dv, *dg, *dbeta, *dA_log, *ddt_bias, *dh0;
  double *dA_log_scale, *ddt_bias_scale;
} KdaGrads;

/* The gradients of a loss L(o, ht) given dL/do = do_ [T, HV, V] and
 * dL/dht = dht [N, HV, K, V] (NULL: zero, ht does not enter the loss).
 * Inputs as for ref_kda_fwd_gva. Re-runs the forward per document and value
 * head, keeps every per-token state, then walks the tokens backwards:
 *   dS += scale q_t do_t^T;   dq_t = scale S_t do_t
 *   dk_t = dS u;  du = dS^T k_t;  dv_t = beta_t du;  dbeta_t = (v_t - S'^T k_t) . du
 *   dp = -beta_t du;  dS' = dS + k_t dp^T;  dk_t += S' dp
 *   dS <- Diag(exp(g_t)) dS';  dlogdecay_t[i] = exp(g_t[i]) sum_j S_{t-1}[i,j] dS'[i,j]
 * (S_{t-1} the state before token t, S' after its decay, S_t after its update),
 * then the chain rules through the gate, the beta sigmoid and the L2 norm. */
/* Worker threads the forward and backward references may use (default 1):
 * heads are split among them; the results are the same bits whatever the
 * count. */
extern int ref_kda_threads;

void ref_kda_bwd(const KdaOptions *opt, int64_t T, int64_t H, int64_t HV, int K, int V, const int32_t *cu,
                 int64_t ndocs, const double *q, const double *k, const double *v, const double *g,
                 const double *beta, const double *A_log, const double *dt_bias, const double *h0,
                 const double *do_, const double *dht, const KdaGrads *grads);

#endif
