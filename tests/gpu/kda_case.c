/* kda_case.c - see kda_case.h. */
#include "kda_case.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_util.h"

const char *const kda_out_names[KDA_NOUT] = {"o", "ht", "dq", "dk", "dv", "dg", "dbeta", "dA_log", "ddt_bias", "dh0"};
const double kda_out_tol[KDA_NOUT] = {0.005, 0.005, 0.008, 0.008, 0.008, 0.02, 0.02, 0.02, 0.02, 0.008};
const int kda_out_bf16[KDA_NOUT] = {1, 0, 1, 1, 1, 0, 0, 0, 0, 0};

void kda_case_make(KdaCase *c, const char *gate, int qk_norm, int beta_logits, int64_t T, int64_t H, int64_t HV,
                   int64_t ndocs, const int32_t *cu, int with_h0, int with_dht, uint64_t *rng) {
  enum { K = KDA_K, V = KDA_V };
  memset(c, 0, sizeof *c);
  c->gate = gate, c->qk_norm = qk_norm, c->beta_logits = beta_logits, c->with_h0 = with_h0, c->with_dht = with_dht;
  c->T = T, c->H = H, c->HV = HV ? HV : H, c->N = cu ? ndocs : 1, c->cu = cu;
  HV = c->HV;
  c->external = !strcmp(gate, "external");
  KdaOptions ko = {!strcmp(gate, "safe") ? KDA_GATE_SAFE : c->external ? KDA_GATE_EXTERNAL : KDA_GATE_SOFTPLUS,
                   qk_norm, beta_logits, 1.0 / sqrt(K), -5.0};
  c->ko = ko;
  /* q, k, dq, dk: [T, H, K]; v, do, o, dv, g, dg: [T, HV, 128]; beta: [T, HV]; states: [N, HV, K, V] */
  size_t nq = (size_t)(T * H * K), nv = (size_t)(T * HV * V), nb = (size_t)(T * HV), ns = (size_t)(c->N * HV * K * V);
  c->nq = nq, c->nv = nv, c->nb = nb, c->ns = ns;
  size_t n[KDA_NOUT] = {nv, ns, nq, nq, nv, nv, nb, (size_t)HV, (size_t)(HV * K), ns};
  memcpy(c->n, n, sizeof n);
  c->q = malloc(nq * 2 + 2), c->k = malloc(nq * 2 + 2), c->v = malloc(nv * 2 + 2), c->g16 = malloc(nv * 2 + 2);
  c->beta = malloc(nb * 2 + 2), c->dO = malloc(nv * 2 + 2);
  c->g32 = malloc(nv * 4 + 4), c->A_log = malloc((size_t)HV * 4), c->dt_bias = malloc((size_t)(HV * K) * 4);
  c->h0 = malloc(ns * 4 + 4), c->dht = malloc(ns * 4 + 4);
  c->fq = malloc(nq * 8 + 8), c->fk = malloc(nq * 8 + 8), c->fv = malloc(nv * 8 + 8), c->fg = malloc(nv * 8 + 8);
  c->fbeta = malloc(nb * 8 + 8), c->fA = malloc((size_t)HV * 8), c->fdt = malloc((size_t)(HV * K) * 8);
  c->fh0 = malloc(ns * 8 + 8), c->fdo = malloc(nv * 8 + 8), c->fdht = malloc(ns * 8 + 8);
  for (size_t i = 0; i < nv; i++) { /* (for HV = H: the draws of the shapes before GVA) */
    float a = (float)rng_normal(rng), b = (float)rng_normal(rng);
    if (i < nq) c->q[i] = f32_to_bf16(a), c->k[i] = f32_to_bf16(b);
    c->v[i] = f32_to_bf16((float)rng_normal(rng)), c->dO[i] = f32_to_bf16((float)rng_normal(rng));
    float graw = (float)rng_normal(rng);
    if (c->external) c->g32[i] = (float)(-log1p(exp(-(double)graw)) / 4), c->fg[i] = c->g32[i];
    else c->g16[i] = f32_to_bf16(graw), c->fg[i] = bf16_to_f32(c->g16[i]);
  }
  if (!qk_norm) /* the program then expects unit rows */
    for (size_t t = 0; t < nq / K; t++) {
      double sq = 0, sk = 0;
      for (int j = 0; j < K; j++) {
        double a = bf16_to_f32(c->q[t * K + j]), b = bf16_to_f32(c->k[t * K + j]);
        sq += a * a, sk += b * b;
      }
      for (int j = 0; j < K; j++) {
        c->q[t * K + j] = f32_to_bf16((float)(bf16_to_f32(c->q[t * K + j]) / sqrt(sq)));
        c->k[t * K + j] = f32_to_bf16((float)(bf16_to_f32(c->k[t * K + j]) / sqrt(sk)));
      }
    }
  for (size_t i = 0; i < nq; i++) c->fq[i] = bf16_to_f32(c->q[i]), c->fk[i] = bf16_to_f32(c->k[i]);
  for (size_t i = 0; i < nv; i++) c->fv[i] = bf16_to_f32(c->v[i]), c->fdo[i] = bf16_to_f32(c->dO[i]);
  for (size_t i = 0; i < nb; i++) {
    c->beta[i] = f32_to_bf16((float)(beta_logits ? rng_normal(rng) : rng_uniform(rng)));
    c->fbeta[i] = bf16_to_f32(c->beta[i]);
  }
  for (int64_t h = 0; h < HV; h++)
    c->fA[h] = c->A_log[h] = ko.gate == KDA_GATE_SOFTPLUS ? (float)log(1 + 15 * rng_uniform(rng)) : 0.0f;
  for (int64_t i = 0; i < HV * K; i++) {
    double dt = exp(log(0.001) + rng_uniform(rng) * (log(0.1) - log(0.001)));
    c->fdt[i] = c->dt_bias[i] = (float)(dt + log(-expm1(-dt)));
  }
  for (size_t i = 0; i < ns; i++) {
    c->fh0[i] = c->h0[i] = (float)(0.5 * rng_normal(rng));
    c->fdht[i] = c->dht[i] = (float)(0.1 * rng_normal(rng));
  }
}

void kda_case_reference(KdaCase *c) {
  /* the float64 reference splits the heads over threads (same bits for any
   * count); at most 12, each holding one document's per-token states */
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  ref_kda_threads = ncpu < 1 ? 1 : ncpu > 12 ? 12 : (int)ncpu;
  for (int o = 0; o < KDA_NOUT; o++) c->ref[o] = calloc(c->n[o] + 1, 8);
  const double *rh0 = c->with_h0 ? c->fh0 : NULL;
  ref_kda_fwd_gva(&c->ko, c->T, c->H, c->HV, KDA_K, KDA_V, c->cu, c->N, c->fq, c->fk, c->fv, c->fg, c->fbeta, c->fA,
                  c->fdt, rh0, c->ref[0], c->ref[1]);
  c->scale[7] = calloc(c->n[7] + 1, 8), c->scale[8] = calloc(c->n[8] + 1, 8);
  KdaGrads gr = {c->ref[2], c->ref[3], c->ref[4], c->ref[5], c->ref[6], c->ref[7], c->ref[8], c->ref[9],
                 c->scale[7], c->scale[8]};
  ref_kda_bwd(&c->ko, c->T, c->H, c->HV, KDA_K, KDA_V, c->cu, c->N, c->fq, c->fk, c->fv, c->fg, c->fbeta, c->fA,
              c->fdt, rh0, c->fdo, c->with_dht ? c->fdht : NULL, &gr);
}

double *kda_case_widen(const KdaCase *c, int o, const void *bytes) {
  double *x = malloc(c->n[o] * 8 + 8);
  for (size_t i = 0; i < c->n[o]; i++)
    x[i] = kda_out_bf16[o] ? bf16_to_f32(((const uint16_t *)bytes)[i]) : ((const float *)bytes)[i];
  return x;
}

void kda_case_free(KdaCase *c) {
  free(c->q), free(c->k), free(c->v), free(c->g16), free(c->beta), free(c->dO);
  free(c->g32), free(c->A_log), free(c->dt_bias), free(c->h0), free(c->dht);
  free(c->fq), free(c->fk), free(c->fv), free(c->fg), free(c->fbeta), free(c->fA), free(c->fdt), free(c->fh0);
  free(c->fdo), free(c->fdht);
  for (int o = 0; o < KDA_NOUT; o++) free(c->ref[o]), free(c->scale[o]);
  memset(c, 0, sizeof *c);
}

int kda_case_report(const KdaCase *c, void *const got[KDA_NOUT], void *const again[KDA_NOUT]) {
  int ok = 1;
  for (int o = 0; o < KDA_NOUT; o++) {
    if (c->external && (o == 7 || o == 8)) continue;
    double *x = kda_case_widen(c, o, got[o]);
    ErrStats e = err_stats_scaled(x, c->ref[o], c->scale[o], (long long)c->n[o]);
    int bitwise = memcmp(got[o], again[o], c->n[o] * (kda_out_bf16[o] ? 2 : 4)) == 0;
    int good = e.nonfinite == 0 && e.err_ratio < kda_out_tol[o] && bitwise;
    printf(" %s %.1e%s%s", kda_out_names[o], e.err_ratio, bitwise ? "" : " (not bitwise)", good ? "" : " FAIL");
    ok &= good;
    free(x);
  }
  return ok;
}
