/* test_kcp.c - the context-parallel KDA forward (kda_kcp_fwd, summary mode:
 * tests/unit/kcp/kda_kcp_fwd.cake) on one GPU as an in-process group of R
 * ranks (cake_comm_init_local, cake_launch_group), against the single-rank
 * kda_fwd (gate=softplus, qk_norm=true, beta_logits=true, vblock=v32) of the
 * same package on the same global inputs.
 *
 * For each shape, R in {2, 4}, each layout (contiguous, zigzag,
 * zigzag_per_document) and align in {0, 64}: the global packed sequence is
 * partitioned (cake_plan_set_partition; the host copies of the fragments from
 * cake_partition), each rank gets its fragments' tokens (h0 on a fragment
 * that starts its document, NaN on the others: it must not be read), the
 * group runs entry fwd on one stream per rank, o is gathered back by the
 * fragments and ht taken from each document's last fragment. Reported:
 * RMS(x - ref) / RMS(ref) for o and ht, required below 1e-2 (the
 * interpreter measures 4.4e-3 for both against exact arithmetic), no
 * non-finite value, and a second launch equal bit for bit. Also: cake_launch
 * refuses the entry (it exchanges).
 *
 * usage: test_kcp PACKAGE_DIR [--seed N] [--quick] [--max-t N]
 * (--max-t: only the shapes of at most N tokens) */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"

enum { K = 128, V = 128, MAXR = 4 };
static const double TOL = 1e-2;

typedef struct Shape {
  const char *name;
  int64_t T, H;
  int ndocs; /* 0: random documents of 1..random_docs tokens */
  const int32_t *cu;
  int random_docs;
  int quick; /* run with --quick */
} Shape;

/* The global inputs, on the host (bf16 as uint16, f32) and on the device. */
typedef struct Inputs {
  int64_t T, H, N;
  int32_t *cu;
  uint16_t *q, *k, *v, *g, *beta;
  float *A_log, *dt_bias, *h0;
  CUdeviceptr dA, ddt; /* shared by every rank (per-head, not split) */
} Inputs;

/* Random inputs as test_kda draws them for the layer's options. */
static void make_inputs(Inputs *in, const Shape *sh, uint64_t *rng) {
  int64_t T = sh->T, H = sh->H;
  in->T = T, in->H = H;
  if (sh->ndocs) {
    in->N = sh->ndocs;
    in->cu = malloc(sizeof(int32_t) * (size_t)(in->N + 1));
    memcpy(in->cu, sh->cu, sizeof(int32_t) * (size_t)(in->N + 1));
  } else {
    in->cu = malloc(sizeof(int32_t) * (size_t)(T + 2));
    in->cu[0] = 0;
    in->N = 0;
    for (int64_t t = 0; t < T;) {
      int64_t len = 1 + (int64_t)(rng_uniform(rng) * sh->random_docs);
      t = t + len < T ? t + len : T;
      in->cu[++in->N] = (int32_t)t;
    }
  }
  size_t nq = (size_t)(T * H * K), nb = (size_t)(T * H), ns = (size_t)(in->N * H * K * V);
  in->q = malloc(nq * 2 + 2), in->k = malloc(nq * 2 + 2), in->v = malloc(nq * 2 + 2), in->g = malloc(nq * 2 + 2);
  in->beta = malloc(nb * 2 + 2);
  in->A_log = malloc((size_t)H * 4), in->dt_bias = malloc((size_t)(H * K) * 4), in->h0 = malloc(ns * 4 + 4);
  for (size_t i = 0; i < nq; i++) {
    in->q[i] = f32_to_bf16((float)rng_normal(rng));
    in->k[i] = f32_to_bf16((float)rng_normal(rng));
    in->v[i] = f32_to_bf16((float)rng_normal(rng));
    in->g[i] = f32_to_bf16((float)rng_normal(rng));
  }
  for (size_t i = 0; i < nb; i++) in->beta[i] = f32_to_bf16((float)rng_normal(rng));
  for (int64_t h = 0; h < H; h++) in->A_log[h] = (float)log(1 + 15 * rng_uniform(rng)); /* fla's layer init */
  for (int64_t i = 0; i < H * K; i++) {
    double dt = exp(log(0.001) + rng_uniform(rng) * (log(0.1) - log(0.001)));
    in->dt_bias[i] = (float)(dt + log(-expm1(-dt)));
  }
  for (size_t i = 0; i < ns; i++) in->h0[i] = (float)(0.5 * rng_normal(rng));
  in->dA = gpu_upload(in->A_log, (size_t)H * 4);
  in->ddt = gpu_upload(in->dt_bias, (size_t)(H * K) * 4);
}

static void free_inputs(Inputs *in) {
  gpu_free(in->dA), gpu_free(in->ddt);
  free(in->cu), free(in->q), free(in->k), free(in->v), free(in->g), free(in->beta);
  free(in->A_log), free(in->dt_bias), free(in->h0);
}

/* The single-rank kda_fwd on the global inputs: o [T, H, V] (bf16 as double), ht [N, H, K, V]. */
static void reference(const cake_program *prog, const Inputs *in, double *o, double *ht) {
  int64_t T = in->T, H = in->H, N = in->N;
  size_t nq = (size_t)(T * H * K), nb = (size_t)(T * H), ns = (size_t)(N * H * K * V);
  cake_plan *plan;
  RT(cake_plan_create(prog, &plan));
  RT(cake_plan_set_dim(plan, "T", T));
  RT(cake_plan_set_dim(plan, "H", H));
  RT(cake_plan_set_dim(plan, "HV", H));
  RT(cake_plan_set_docs(plan, in->cu, N));
  RT(cake_plan_finalize(plan));
  size_t ws;
  RT(cake_plan_workspace_bytes(plan, &ws));
  CUdeviceptr dq = gpu_upload(in->q, nq * 2), dk = gpu_upload(in->k, nq * 2), dv = gpu_upload(in->v, nq * 2),
              dg = gpu_upload(in->g, nq * 2), db = gpu_upload(in->beta, nb * 2), dh0 = gpu_upload(in->h0, ns * 4),
              dout = gpu_alloc(nq * 2), dht = gpu_alloc(ns * 4), work = gpu_alloc(ws);
  gpu_poison(dout, nq * 2);
  gpu_poison(dht, ns * 4);
  cake_binding b[] = {
      {"q", gpu_tensor(dq, CAKE_BF16, 3, T, H, K, 0)},        {"k", gpu_tensor(dk, CAKE_BF16, 3, T, H, K, 0)},
      {"v", gpu_tensor(dv, CAKE_BF16, 3, T, H, V, 0)},        {"g", gpu_tensor(dg, CAKE_BF16, 3, T, H, K, 0)},
      {"A_log", gpu_tensor(in->dA, CAKE_F32, 1, H, 0, 0, 0)}, {"dt_bias", gpu_tensor(in->ddt, CAKE_F32, 2, H, K, 0, 0)},
      {"beta", gpu_tensor(db, CAKE_BF16, 2, T, H, 0, 0)},     {"h0", gpu_tensor(dh0, CAKE_F32, 4, N, H, K, V)},
      {"o", gpu_tensor(dout, CAKE_BF16, 3, T, H, V, 0)},      {"ht", gpu_tensor(dht, CAKE_F32, 4, N, H, K, V)},
  };
  CK(cuCtxSynchronize());
  RT(cake_launch(plan, "fwd", b, (int)(sizeof b / sizeof b[0]), work, ws, 0, 0, NULL));
  CK(cuCtxSynchronize());
  uint16_t *ho = malloc(nq * 2 + 2);
  float *hht = malloc(ns * 4 + 4);
  CK(cuMemcpyDtoH(ho, dout, nq * 2));
  CK(cuMemcpyDtoH(hht, dht, ns * 4));
  for (size_t i = 0; i < nq; i++) o[i] = bf16_to_f32(ho[i]);
  for (size_t i = 0; i < ns; i++) ht[i] = hht[i];
  free(ho), free(hht);
  gpu_free(dq), gpu_free(dk), gpu_free(dv), gpu_free(dg), gpu_free(db), gpu_free(dh0), gpu_free(dout), gpu_free(dht);
  gpu_free(work);
  cake_plan_free(plan);
}

/* One rank: its plan, fragments, device tensors and workspace. */
typedef struct Rank {
  cake_plan *plan;
  cake_fragment *fr;
  int64_t nfr, Tl, Nl;
  CUdeviceptr q, k, v, g, beta, h0, o, ht, work;
  size_t ws;
  cake_binding b[10];
  CUstream stream;
} Rank;

/* A rank's local token rows (`row` bytes each) of a global per-token array, fragment by fragment. */
static void *split_tokens(const Rank *r, const void *global, size_t row) {
  char *x = malloc((size_t)r->Tl * row + 1);
  for (int64_t f = 0; f < r->nfr; f++)
    memcpy(x + (size_t)r->fr[f].local_start * row, (const char *)global + (size_t)r->fr[f].start * row,
           (size_t)(r->fr[f].end - r->fr[f].start) * row);
  return x;
}

/* KCP over R ranks: the gathered o [T, H, V] and ht [N, H, K, V] of two
 * launches; *bitwise whether they are equal. */
static void kcp(const cake_program *prog, const Inputs *in, int R, cake_layout layout, int align, double *o, double *ht,
               int *bitwise, int64_t *F) {
  int64_t T = in->T, H = in->H, N = in->N;
  size_t rowq = (size_t)(H * K) * 2, rowb = (size_t)H * 2, rows = (size_t)(H * K * V) * 4;
  Rank rk[MAXR];
  memset(rk, 0, sizeof rk);
  cake_comm *comms[MAXR];
  RT(cake_comm_init_local(R, comms));
  cake_plan *plans[MAXR];
  const cake_binding *bp[MAXR];
  int nb[MAXR];
  uint64_t ws[MAXR];
  size_t wsb[MAXR];
  void *streams[MAXR];
  for (int r = 0; r < R; r++) {
    Rank *a = &rk[r];
    RT(cake_plan_create(prog, &a->plan));
    RT(cake_plan_set_dim(a->plan, "H", H));
    RT(cake_plan_set_partition(a->plan, in->cu, N, T, R, r, layout, align));
    RT(cake_plan_finalize(a->plan));
    RT(cake_plan_get_dim(a->plan, "T", &a->Tl));
    RT(cake_plan_get_dim(a->plan, "N", &a->Nl));
    RT(cake_plan_get_dim(a->plan, "F", F));
    RT(cake_partition(in->cu, N, T, R, r, layout, align, NULL, 0, &a->nfr, NULL));
    a->fr = calloc((size_t)a->nfr + 1, sizeof(cake_fragment));
    RT(cake_partition(in->cu, N, T, R, r, layout, align, a->fr, a->nfr, &a->nfr, NULL));
    void *x;
    a->q = gpu_upload(x = split_tokens(a, in->q, rowq), (size_t)a->Tl * rowq), free(x);
    a->k = gpu_upload(x = split_tokens(a, in->k, rowq), (size_t)a->Tl * rowq), free(x);
    a->v = gpu_upload(x = split_tokens(a, in->v, rowq), (size_t)a->Tl * rowq), free(x);
    a->g = gpu_upload(x = split_tokens(a, in->g, rowq), (size_t)a->Tl * rowq), free(x);
    a->beta = gpu_upload(x = split_tokens(a, in->beta, rowb), (size_t)a->Tl * rowb), free(x);
    /* h0 on the fragment that starts its document; NaN (must not be read) elsewhere */
    float *h0 = malloc((size_t)a->Nl * rows);
    memset(h0, 0xFF, (size_t)a->Nl * rows);
    for (int64_t f = 0; f < a->nfr; f++)
      if (!a->fr[f].continues) memcpy((char *)h0 + (size_t)f * rows, (const char *)in->h0 + (size_t)a->fr[f].doc * rows, rows);
    a->h0 = gpu_upload(h0, (size_t)a->Nl * rows);
    free(h0);
    a->o = gpu_alloc((size_t)a->Tl * (size_t)(H * V) * 2);
    a->ht = gpu_alloc((size_t)a->Nl * rows);
    RT(cake_plan_workspace_bytes(a->plan, &a->ws));
    a->work = gpu_alloc(a->ws);
    int64_t Tl = a->Tl, Nl = a->Nl;
    cake_binding b[10] = {
        {"q", gpu_tensor(a->q, CAKE_BF16, 3, Tl, H, K, 0)},     {"k", gpu_tensor(a->k, CAKE_BF16, 3, Tl, H, K, 0)},
        {"v", gpu_tensor(a->v, CAKE_BF16, 3, Tl, H, V, 0)},     {"g", gpu_tensor(a->g, CAKE_BF16, 3, Tl, H, K, 0)},
        {"A_log", gpu_tensor(in->dA, CAKE_F32, 1, H, 0, 0, 0)}, {"dt_bias", gpu_tensor(in->ddt, CAKE_F32, 2, H, K, 0, 0)},
        {"beta", gpu_tensor(a->beta, CAKE_BF16, 2, Tl, H, 0, 0)}, {"h0", gpu_tensor(a->h0, CAKE_F32, 4, Nl, H, K, V)},
        {"o", gpu_tensor(a->o, CAKE_BF16, 3, Tl, H, V, 0)},     {"ht", gpu_tensor(a->ht, CAKE_F32, 4, Nl, H, K, V)},
    };
    memcpy(a->b, b, sizeof b);
    CK(cuStreamCreate(&a->stream, CU_STREAM_DEFAULT));
    plans[r] = a->plan, bp[r] = a->b, nb[r] = 10, ws[r] = a->work, wsb[r] = a->ws, streams[r] = a->stream;
  }
  /* one rank alone cannot run an entry that exchanges */
  cake_status s = cake_launch(plans[0], "fwd", rk[0].b, 10, ws[0], wsb[0], 0, 0, streams[0]);
  if (s != CAKE_ERR_ARGUMENT || !strstr(cake_last_error(), "exchanges data with other ranks")) {
    fprintf(stderr, "test_kcp: cake_launch of fwd: %s: %s (expected the refusal)\n", cake_status_name(s), cake_last_error());
    exit(1);
  }
  size_t no = (size_t)(T * H * V), ns = (size_t)(N * H * K * V);
  uint16_t *go[2] = {malloc(no * 2 + 2), malloc(no * 2 + 2)};
  float *ght[2] = {malloc(ns * 4 + 4), malloc(ns * 4 + 4)};
  for (int run = 0; run < 2; run++) {
    for (int r = 0; r < R; r++) {
      gpu_poison(rk[r].o, (size_t)rk[r].Tl * (size_t)(H * V) * 2);
      gpu_poison(rk[r].ht, (size_t)rk[r].Nl * rows);
      /* the first launch on a fresh plan writes the tables: the temps start as NaN;
       * the second reuses the tables and the temps as the first left them */
      if (run == 0) gpu_poison(rk[r].work, rk[r].ws);
    }
    CK(cuCtxSynchronize());
    RT(cake_launch_group(plans, R, "fwd", bp, nb, ws, wsb, NULL, NULL, comms, streams));
    CK(cuCtxSynchronize());
    memset(go[run], 0, no * 2);
    memset(ght[run], 0, ns * 4);
    for (int r = 0; r < R; r++) {
      const Rank *a = &rk[r];
      uint16_t *lo = malloc((size_t)a->Tl * (size_t)(H * V) * 2 + 2);
      float *lh = malloc((size_t)a->Nl * rows);
      if (a->Tl) CK(cuMemcpyDtoH(lo, a->o, (size_t)a->Tl * (size_t)(H * V) * 2));
      CK(cuMemcpyDtoH(lh, a->ht, (size_t)a->Nl * rows));
      for (int64_t f = 0; f < a->nfr; f++) {
        const cake_fragment *x = &a->fr[f];
        memcpy(go[run] + (size_t)x->start * (size_t)(H * V), lo + (size_t)x->local_start * (size_t)(H * V),
               (size_t)(x->end - x->start) * (size_t)(H * V) * 2);
        if (!x->continued) memcpy((char *)ght[run] + (size_t)x->doc * rows, (char *)lh + (size_t)f * rows, rows);
      }
      free(lo), free(lh);
    }
  }
  *bitwise = memcmp(go[0], go[1], no * 2) == 0 && memcmp(ght[0], ght[1], ns * 4) == 0;
  for (size_t i = 0; i < no; i++) o[i] = bf16_to_f32(go[0][i]);
  for (size_t i = 0; i < ns; i++) ht[i] = ght[0][i];
  free(go[0]), free(go[1]), free(ght[0]), free(ght[1]);
  for (int r = 0; r < R; r++) {
    Rank *a = &rk[r];
    CK(cuStreamDestroy(a->stream));
    gpu_free(a->q), gpu_free(a->k), gpu_free(a->v), gpu_free(a->g), gpu_free(a->beta), gpu_free(a->h0);
    gpu_free(a->o), gpu_free(a->ht), gpu_free(a->work);
    cake_plan_free(a->plan);
    free(a->fr);
  }
  for (int r = 0; r < R; r++) cake_comm_destroy(comms[r]);
}

static int run_shape(const cake_program *ref, const cake_program *prog, const Shape *sh, uint64_t *rng) {
  Inputs in;
  make_inputs(&in, sh, rng);
  size_t no = (size_t)(in.T * in.H * V), ns = (size_t)(in.N * in.H * K * V), rows = (size_t)(in.H * K * V);
  double *ro = malloc(no * 8 + 8), *rht = malloc(ns * 8 + 8), *o = malloc(no * 8 + 8), *ht = malloc(ns * 8 + 8);
  reference(ref, &in, ro, rht);
  /* an empty document has no fragment, so no final state: left out of the comparison */
  for (int64_t d = 0; d < in.N; d++)
    if (in.cu[d] == in.cu[d + 1]) memset(rht + (size_t)d * rows, 0, rows * 8);
  static const int Rs[] = {2, 4};
  int fails = 0;
  for (int ri = 0; ri < 2; ri++)
    for (int layout = 0; layout < 3; layout++)
      for (int align = 0; align <= 64; align += 64) {
        int bitwise;
        int64_t F;
        kcp(prog, &in, Rs[ri], (cake_layout)layout, align, o, ht, &bitwise, &F);
        for (int64_t d = 0; d < in.N; d++)
          if (in.cu[d] == in.cu[d + 1]) memset(ht + (size_t)d * rows, 0, rows * 8);
        ErrStats eo = err_stats(o, ro, (long long)no), eh = err_stats(ht, rht, (long long)ns);
        int ok = eo.nonfinite == 0 && eh.nonfinite == 0 && eo.err_ratio < TOL && eh.err_ratio < TOL && bitwise;
        printf("%-34s T=%-6lld H=%-2lld docs=%-5lld R=%d %-19s align=%-2d F=%-3lld o %.2e  ht %.2e  nonfinite %lld  "
               "bitwise %s  %s\n",
               sh->name, (long long)in.T, (long long)in.H, (long long)in.N, Rs[ri], cake_layout_name((cake_layout)layout),
               align, (long long)F, eo.err_ratio, eh.err_ratio, eo.nonfinite + eh.nonfinite, bitwise ? "yes" : "NO",
               ok ? "PASS" : "FAIL");
        fflush(stdout);
        fails += !ok;
      }
  free(ro), free(rht), free(o), free(ht);
  free_inputs(&in);
  return fails;
}

/* tests/unit/kcp/kcp_send.cake: each rank's total of x to the next rank
 * (send_next) and the previous one (send_prev); u = x + the previous rank's
 * total + 2 x the next rank's. R in-process ranks, every layout, against
 * the totals summed here in double; the comm bytes per rank (the first and
 * the last rank send and receive one way only). */
static int run_send(const cake_package *pkg, uint64_t *rng) {
  enum { W = 8 };
  static const int32_t cu[] = {0, 500, 501, 1700, 3000};
  const int nd = 4;
  const int64_t T = cu[nd];
  const cake_program *prog;
  RT(cake_package_program(pkg, "kcp_send", &prog));
  float *x = malloc(sizeof(float) * (size_t)(T * W));
  for (int64_t i = 0; i < T * W; i++) x[i] = (float)rng_normal(rng);
  int fails = 0;
  static const int Rs[] = {1, 2, 4, 8};
  for (int ri = 0; ri < 4; ri++)
    for (int L = 0; L < 3; L++) {
      int R = Rs[ri];
      cake_comm *comms[8];
      cake_plan *plans[8];
      cake_binding b[8][2];
      const cake_binding *bp[8];
      int nb[8];
      uint64_t ws[8];
      size_t wsb[8];
      CUdeviceptr dx[8], du[8];
      cake_fragment *fr[8];
      int64_t nfr[8], Tl[8];
      double tot[8][W];
      RT(cake_comm_init_local(R, comms));
      for (int r = 0; r < R; r++) {
        RT(cake_plan_create(prog, &plans[r]));
        RT(cake_plan_set_partition(plans[r], cu, nd, T, R, r, (cake_layout)L, 0));
        RT(cake_plan_finalize(plans[r]));
        RT(cake_plan_get_dim(plans[r], "T", &Tl[r]));
        RT(cake_partition(cu, nd, T, R, r, (cake_layout)L, 0, NULL, 0, &nfr[r], NULL));
        fr[r] = calloc((size_t)nfr[r] + 1, sizeof(cake_fragment));
        RT(cake_partition(cu, nd, T, R, r, (cake_layout)L, 0, fr[r], nfr[r], &nfr[r], NULL));
        float *lx = malloc(sizeof(float) * (size_t)(Tl[r] * W) + 4);
        for (int c = 0; c < W; c++) tot[r][c] = 0;
        for (int64_t f = 0; f < nfr[r]; f++)
          for (int64_t t = fr[r][f].start; t < fr[r][f].end; t++)
            for (int c = 0; c < W; c++) {
              lx[(fr[r][f].local_start + t - fr[r][f].start) * W + c] = x[t * W + c];
              tot[r][c] += x[t * W + c];
            }
        dx[r] = gpu_upload(lx, sizeof(float) * (size_t)(Tl[r] * W) + 4);
        du[r] = gpu_alloc(sizeof(float) * (size_t)(Tl[r] * W) + 4);
        gpu_poison(du[r], sizeof(float) * (size_t)(Tl[r] * W) + 4);
        free(lx);
        RT(cake_plan_workspace_bytes(plans[r], &wsb[r]));
        ws[r] = gpu_alloc(wsb[r] ? wsb[r] : 256);
        gpu_poison(ws[r], wsb[r] ? wsb[r] : 256);
        b[r][0] = (cake_binding){"x", gpu_tensor(dx[r], CAKE_F32, 2, Tl[r], W, 0, 0)};
        b[r][1] = (cake_binding){"u", gpu_tensor(du[r], CAKE_F32, 2, Tl[r], W, 0, 0)};
        bp[r] = b[r], nb[r] = 2;
      }
      RT(cake_launch_group(plans, R, "fwd", bp, nb, ws, wsb, NULL, NULL, comms, NULL));
      CK(cuCtxSynchronize());
      double worst = 0;
      int bytes_ok = 1;
      for (int r = 0; r < R; r++) {
        float *lu = malloc(sizeof(float) * (size_t)(Tl[r] * W) + 4);
        CK(cuMemcpyDtoH(lu, du[r], sizeof(float) * (size_t)(Tl[r] * W)));
        for (int64_t f = 0; f < nfr[r]; f++)
          for (int64_t t = fr[r][f].start; t < fr[r][f].end; t++)
            for (int c = 0; c < W; c++) {
              double want = x[t * W + c] + (r > 0 ? tot[r - 1][c] : 0) + 2 * (r + 1 < R ? tot[r + 1][c] : 0);
              double got = lu[(fr[r][f].local_start + t - fr[r][f].start) * W + c];
              double e = fabs(got - want) / (1 + fabs(want));
              if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
            }
        uint64_t sent, recv, one = W * 4;
        RT(cake_plan_comm_bytes(plans[r], "fwd", &sent, &recv));
        /* send_next: every rank but the last sends, every rank but the first receives; send_prev the mirror */
        uint64_t want_s = (r + 1 < R ? one : 0) + (r > 0 ? one : 0);
        bytes_ok &= sent == want_s && recv == want_s;
        free(lu);
        gpu_free(dx[r]), gpu_free(du[r]), gpu_free(ws[r]);
        cake_plan_free(plans[r]), cake_comm_destroy(comms[r]), free(fr[r]);
      }
      int ok = worst < 1e-4 && bytes_ok;
      printf("%-34s T=%-6lld docs=%-4d R=%d %-19s worst %.2e  comm bytes %s  %s\n", "send_next / send_prev",
             (long long)T, nd, R, cake_layout_name((cake_layout)L), worst, bytes_ok ? "ok" : "DIFFER",
             ok ? "PASS" : "FAIL");
      fails += !ok;
    }
  free(x);
  return fails;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PACKAGE_DIR [--seed N] [--quick] [--max-t N]\n", argv[0]);
    return 2;
  }
  int quick = 0;
  for (int i = 2; i < argc; i++) quick |= !strcmp(argv[i], "--quick");
  long long max_t = max_tokens(argc, argv, LLONG_MAX);
  uint64_t seed = rng_seed(argc, argv), rng = seed;
  printf("test_kcp: seed %llu\n", (unsigned long long)seed);
  gpu_init();
  cake_package *pkg;
  RT(cake_package_load(argv[1], NULL, &pkg));
  const cake_program *ref, *prog;
  RT(cake_package_variant(pkg, "kda_fwd", "gate=softplus,qk_norm=true,beta_logits=true,vblock=v32", &ref));
  RT(cake_package_variant(pkg, "kda_kcp_fwd", NULL, &prog));
  static const int32_t cu_mixed[] = {0, 1000, 1001, 1001, 4096, 6000}; /* a one-token and an empty document */
  static const int32_t cu_one[] = {0, 5000};
  static const int32_t cu_tiny[] = {0, 1, 3}; /* fewer tokens than blocks: ranks without fragments */
  const Shape shapes[] = {
      {"mixed documents, h0", 6000, 4, 5, cu_mixed, 0, 1},
      {"one document", 5000, 2, 1, cu_one, 0, 1},
      {"tiny: ranks without fragments", 3, 2, 2, cu_tiny, 0, 1},
      {"many short documents (1..300)", 8192, 4, 0, NULL, 300, 0},
      {"T=32768 H=8, documents of 1..8000", 32768, 8, 0, NULL, 8000, 0},
  };
  int fails = 0;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    if ((!quick || shapes[i].quick) && shapes[i].T <= max_t) fails += run_shape(ref, prog, &shapes[i], &rng);
  fails += run_send(pkg, &rng);
  cake_package_free(pkg);
  printf("test_kcp: %s (%d failing case%s)\n", fails ? "FAIL" : "PASS", fails, fails == 1 ? "" : "s");
  return fails ? 1 : 0;
}
