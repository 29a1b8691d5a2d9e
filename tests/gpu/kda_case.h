/* kda_case.h - one KDA training case for the GPU tests: fresh random inputs
 * drawn for the options (bf16/f32 as the program reads them, float64 copies
 * for the reference) and the float64 forward and backward (ref_kda.h).
 * test_kda_train runs a case on one rank, test_kcp_train over R ranks. */
#ifndef CAKE_KDA_CASE_H
#define CAKE_KDA_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "ref_kda.h"

enum { KDA_K = 128, KDA_V = 128, KDA_NOUT = 10 };

/* The outputs in order: o, ht, dq, dk, dv, dg, dbeta, dA_log, ddt_bias, dh0. */
extern const char *const kda_out_names[KDA_NOUT];
extern const double kda_out_tol[KDA_NOUT];  /* the interpreter test's thresholds */
extern const int kda_out_bf16[KDA_NOUT];    /* 1: bf16 on the GPU, 0: f32 */

typedef struct KdaCase {
  /* what was asked */
  const char *gate; /* "safe", "softplus", "external" */
  int qk_norm, beta_logits, with_h0, with_dht;
  int64_t T, H, HV, N;
  const int32_t *cu; /* NULL: one document */
  /* derived */
  int external;
  KdaOptions ko;
  size_t n[KDA_NOUT]; /* elements of each output */
  size_t nq, nv, nb, ns;
  /* the inputs as uploaded (g16 or g32 by the gate) */
  uint16_t *q, *k, *v, *g16, *beta, *dO;
  float *g32, *A_log, *dt_bias, *h0, *dht;
  /* float64 copies and the reference outputs (NULL until kda_case_reference) */
  double *fq, *fk, *fv, *fg, *fbeta, *fA, *fdt, *fh0, *fdo, *fdht;
  double *ref[KDA_NOUT];
  double *scale[KDA_NOUT]; /* dA_log, ddt_bias: the scale of their terms (KdaGrads); else NULL */
} KdaCase;

/* Draws the inputs (the order of draws is fixed: the same seed, the same case). */
void kda_case_make(KdaCase *c, const char *gate, int qk_norm, int beta_logits, int64_t T, int64_t H, int64_t HV,
                   int64_t ndocs, const int32_t *cu, int with_h0, int with_dht, uint64_t *rng);
void kda_case_reference(KdaCase *c);
void kda_case_free(KdaCase *c);
/* Prints " name err" for every output the case has (dA_log and ddt_bias not
 * with the external gate), `got` against the reference with kda_out_tol (for
 * dA_log and ddt_bias relative to the larger of the sum and its terms' scale),
 * "(not bitwise)" where `again` (a second run) differs, " FAIL" after a bad
 * one. Returns 1 when every output is finite, within its threshold and
 * bitwise repeated. */
int kda_case_report(const KdaCase *c, void *const got[KDA_NOUT], void *const again[KDA_NOUT]);
/* An output of the GPU (bf16 or f32 bytes, n[o] elements) as doubles (malloc'd). */
double *kda_case_widen(const KdaCase *c, int o, const void *bytes);

#endif
