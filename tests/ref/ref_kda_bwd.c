/* ref_kda_bwd.c - float64 reference of the KDA backward (see ref_kda.h):
 * BPTT through the token recurrence per document and value head, with the
 * per-token states of a re-run forward kept in memory, then the chain rules
 * through the gate, the beta sigmoid and the q/k L2 norm. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ref_kda.h"
#include "ref_kda_token.h"

/* The problem and the gradients w.r.t. the recurrence's own operands: the
 * normalised q, k (summed over a key head's group), the log-decay and the
 * beta value. */
typedef struct Bwd {
  const KdaOptions *opt;
  int64_t T, H, HV;
  int K, V;
  const double *q, *k, *v, *g, *beta, *A_log, *dt_bias, *h0, *do_, *dht;
  double *dqn, *dkn; /* [T, H, K] */
  double *dv;        /* [T, HV, V] */
  double *dlg;       /* [T, HV, K] */
  double *dbv;       /* [T, HV] */
  double *dh0;       /* [N, HV, K, V] */
} Bwd;

static double *zeros(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

/* states[0] = the initial state, states[i + 1] = the state after token lo + i. */
static void forward_states(const Bwd *b, int64_t d, int64_t hv, int64_t lo, int64_t hi, KdaToken *tok, double *u,
                           double *states) {
  size_t kv = (size_t)b->K * b->V;
  if (b->h0) memcpy(states, b->h0 + ((size_t)d * b->HV + hv) * kv, sizeof(double) * kv);
  else memset(states, 0, sizeof(double) * kv);
  for (int64_t t = lo; t < hi; t++) {
    double *S = states + (size_t)(t - lo + 1) * kv;
    memcpy(S, S - kv, sizeof(double) * kv);
    ref_kda_token(b->opt, b->H, b->HV, b->K, b->q, b->k, b->g, b->beta, b->A_log, b->dt_bias, t, hv, tok);
    ref_kda_step(tok, b->K, b->V, b->v + ((size_t)t * b->HV + hv) * b->V, S, u);
  }
}

/* Scratch of one backward step: the decayed state S', r = v - S'^T k, du. */
typedef struct StepScratch {
  double *Sd, *r, *du;
} StepScratch;

/* One token backwards: dS holds dL/dS_t on entry and dL/dS_{t-1} on return. */
static void step_back(Bwd *b, const KdaToken *tok, int64_t t, int64_t hv, const double *S_prev, const double *S_t,
                      double *dS, StepScratch *w) {
  int K = b->K, V = b->V;
  int64_t h = hv / (b->HV / b->H);
  size_t vo = ((size_t)t * b->HV + hv) * V, qk = ((size_t)t * b->H + h) * K, gi = ((size_t)t * b->HV + hv) * K;
  const double *v = b->v + vo, *dO = b->do_ + vo, *kn = tok->kn, *qn = tok->qn;
  double *dqn = b->dqn + qk, *dkn = b->dkn + qk, sc = b->opt->scale;
  /* re-derive S' and r = v - S'^T k from the state before the token */
  for (int i = 0; i < K; i++) {
    double e = exp(tok->gt[i]);
    for (int j = 0; j < V; j++) w->Sd[i * V + j] = e * S_prev[i * V + j];
  }
  for (int j = 0; j < V; j++) {
    double p = 0;
    for (int i = 0; i < K; i++) p += w->Sd[i * V + j] * kn[i];
    w->r[j] = v[j] - p;
  }
  /* o_t = scale S_t^T q_t */
  for (int i = 0; i < K; i++) {
    double acc = 0;
    for (int j = 0; j < V; j++) {
      dS[i * V + j] += sc * qn[i] * dO[j];
      acc += S_t[i * V + j] * dO[j];
    }
    dqn[i] += sc * acc;
  }
  /* S_t = S' + k u^T */
  for (int i = 0; i < K; i++) {
    double acc = 0;
    for (int j = 0; j < V; j++) acc += dS[i * V + j] * tok->b * w->r[j];
    dkn[i] += acc;
  }
  for (int j = 0; j < V; j++) {
    double acc = 0;
    for (int i = 0; i < K; i++) acc += dS[i * V + j] * kn[i];
    w->du[j] = acc;
  }
  /* u = beta (v - p), p = S'^T k */
  double db = 0;
  for (int j = 0; j < V; j++) {
    b->dv[vo + j] = tok->b * w->du[j];
    db += w->r[j] * w->du[j];
  }
  b->dbv[t * b->HV + hv] = db;
  for (int i = 0; i < K; i++) {
    double acc = 0;
    for (int j = 0; j < V; j++) {
      double dp = -tok->b * w->du[j];
      dS[i * V + j] += kn[i] * dp;
      acc += w->Sd[i * V + j] * dp;
    }
    dkn[i] += acc;
  }
  /* S' = Diag(exp(g)) S_{t-1} */
  for (int i = 0; i < K; i++) {
    double e = exp(tok->gt[i]), acc = 0;
    for (int j = 0; j < V; j++) {
      acc += S_prev[i * V + j] * dS[i * V + j];
      dS[i * V + j] *= e;
    }
    b->dlg[gi + i] = e * acc;
  }
}

/* BPTT over document d, value head hv. */
static void bwd_doc_head(Bwd *b, int64_t d, int64_t hv, int64_t lo, int64_t hi) {
  int K = b->K, V = b->V;
  size_t kv = (size_t)K * V;
  double *states = malloc(sizeof(double) * kv * (size_t)(hi - lo + 1)), *dS = malloc(sizeof(double) * kv);
  KdaToken tok = {zeros(K), zeros(K), zeros(K), 0};
  StepScratch w = {zeros(kv), zeros(V), zeros(V)};
  forward_states(b, d, hv, lo, hi, &tok, w.du, states);
  size_t so = ((size_t)d * b->HV + hv) * kv;
  if (b->dht) memcpy(dS, b->dht + so, sizeof(double) * kv);
  else memset(dS, 0, sizeof(double) * kv);
  for (int64_t t = hi - 1; t >= lo; t--) {
    ref_kda_token(b->opt, b->H, b->HV, K, b->q, b->k, b->g, b->beta, b->A_log, b->dt_bias, t, hv, &tok);
    const double *S_prev = states + (size_t)(t - lo) * kv;
    step_back(b, &tok, t, hv, S_prev, S_prev + kv, dS, &w);
  }
  memcpy(b->dh0 + so, dS, sizeof(double) * kv);
  free(states), free(dS), free(tok.qn), free(tok.kn), free(tok.gt), free(w.Sd), free(w.r), free(w.du);
}

typedef struct HeadWork {
  Bwd *b;
  const int32_t *cu;
  int64_t nd, h_begin, h_end; /* key heads [h_begin, h_end) */
} HeadWork;

static void *bwd_heads(void *arg) {
  HeadWork *w = arg;
  int64_t G = w->b->HV / w->b->H;
  for (int64_t d = 0; d < w->nd; d++)
    for (int64_t hv = w->h_begin * G; hv < w->h_end * G; hv++)
      bwd_doc_head(w->b, d, hv, w->cu ? w->cu[d] : 0, w->cu ? w->cu[d + 1] : w->b->T);
  return NULL;
}

/* dx = r (dy - y (y . dy)) for y = x r, r = 1 / sqrt(sum x^2 + 1e-6). */
static void normalize_back(const double *x, const double *dy, int n, int on, double *dx) {
  if (!on) {
    memcpy(dx, dy, sizeof(double) * n);
    return;
  }
  double ss = 0, ydy = 0;
  for (int i = 0; i < n; i++) ss += x[i] * x[i];
  double r = 1.0 / sqrt(ss + 1e-6);
  for (int i = 0; i < n; i++) ydy += x[i] * r * dy[i];
  for (int i = 0; i < n; i++) dx[i] = r * (dy[i] - x[i] * r * ydy);
}

static void qk_chain(const Bwd *b, const KdaGrads *gr) {
  size_t n = (size_t)b->T * b->H;
  for (size_t i = 0; i < n; i++) {
    size_t o = i * b->K;
    if (gr->dq) normalize_back(b->q + o, b->dqn + o, b->K, b->opt->qk_norm, gr->dq + o);
    if (gr->dk) normalize_back(b->k + o, b->dkn + o, b->K, b->opt->qk_norm, gr->dk + o);
  }
}

/* Through the gate: dg (raw input), dA_log, ddt_bias from the log-decay's
 * gradient dlg, summing over tokens in ascending order. */
static void gate_chain(const Bwd *b, const KdaGrads *gr) {
  int64_t HV = b->HV;
  int K = b->K, gate = b->opt->gate;
  double *dA = zeros((size_t)HV), *ddt = zeros((size_t)HV * K);
  double *sA = zeros((size_t)HV), *sdt = zeros((size_t)HV * K); /* sums of squared terms */
  for (int64_t t = 0; t < b->T; t++)
    for (int64_t hv = 0; hv < HV; hv++)
      for (int c = 0; c < K; c++) {
        size_t i = ((size_t)t * HV + hv) * K;
        double dl = b->dlg[i + c], dx = dl, dal = 0;
        if (gate != KDA_GATE_EXTERNAL) {
          double a = exp(b->A_log[hv]), x = b->g[i + c] + b->dt_bias[hv * K + c];
          if (gate == KDA_GATE_SAFE) { /* lb * sigmoid(a x) */
            double s = ref_kda_sigmoid(a * x), ds = dl * b->opt->lower_bound * s * (1 - s);
            dx = ds * a, dal = ds * a * x;
          } else { /* -a softplus(x) */
            dx = -dl * a * ref_kda_sigmoid(x);
            dal = -dl * a * (x > 30 ? x : log1p(exp(x)));
          }
          dA[hv] += dal;
          ddt[hv * K + c] += dx;
          sA[hv] += dal * dal;
          sdt[hv * K + c] += dx * dx;
        }
        if (gr->dg) gr->dg[i + c] = dx;
      }
  if (gr->dA_log) memcpy(gr->dA_log, dA, sizeof(double) * (size_t)HV);
  if (gr->ddt_bias) memcpy(gr->ddt_bias, ddt, sizeof(double) * (size_t)HV * K);
  if (gr->dA_log_scale)
    for (int64_t i = 0; i < HV; i++) gr->dA_log_scale[i] = sqrt(sA[i]);
  if (gr->ddt_bias_scale)
    for (int64_t i = 0; i < HV * K; i++) gr->ddt_bias_scale[i] = sqrt(sdt[i]);
  free(dA), free(ddt), free(sA), free(sdt);
}

static void beta_chain(const Bwd *b, const KdaGrads *gr) {
  if (!gr->dbeta) return;
  for (int64_t i = 0; i < b->T * b->HV; i++) {
    double s = ref_kda_sigmoid(b->beta[i]);
    gr->dbeta[i] = b->opt->beta_logits ? b->dbv[i] * s * (1 - s) : b->dbv[i];
  }
}

void ref_kda_bwd(const KdaOptions *opt, int64_t T, int64_t H, int64_t HV, int K, int V, const int32_t *cu,
                 int64_t ndocs, const double *q, const double *k, const double *v, const double *g,
                 const double *beta, const double *A_log, const double *dt_bias, const double *h0,
                 const double *do_, const double *dht, const KdaGrads *grads) {
  int64_t nd = cu ? ndocs : 1;
  size_t nqk = (size_t)T * H * K, ng = (size_t)T * HV * K, kv = (size_t)K * V;
  Bwd b = {opt, T, H, HV, K, V, q, k, v, g, beta, A_log, dt_bias, h0, do_, dht,
           zeros(nqk), zeros(nqk), zeros((size_t)T * HV * V), zeros(ng), zeros((size_t)T * HV),
           zeros((size_t)nd * HV * kv)};
  /* Key heads are independent: each worker takes whole key heads (their
   * value heads in ascending order, document by document), so every group
   * sum into dq, dk is made in the same order whatever the thread count. */
  int nt = ref_kda_threads < 1 ? 1 : ref_kda_threads > H ? (int)H : ref_kda_threads;
  HeadWork work[64];
  pthread_t tid[64];
  if (nt > 64) nt = 64;
  for (int i = 0; i < nt; i++) {
    work[i] = (HeadWork){&b, cu, nd, H * i / nt, H * (i + 1) / nt};
    if (i == nt - 1 || pthread_create(&tid[i], NULL, bwd_heads, &work[i]) != 0) {
      bwd_heads(&work[i]);
      tid[i] = 0;
    }
  }
  for (int i = 0; i < nt; i++)
    if (tid[i]) pthread_join(tid[i], NULL);
  qk_chain(&b, grads);
  gate_chain(&b, grads);
  beta_chain(&b, grads);
  if (grads->dv) memcpy(grads->dv, b.dv, sizeof(double) * (size_t)T * HV * V);
  if (grads->dh0) memcpy(grads->dh0, b.dh0, sizeof(double) * (size_t)nd * HV * kv);
  free(b.dqn), free(b.dkn), free(b.dv), free(b.dlg), free(b.dbv), free(b.dh0);
}
