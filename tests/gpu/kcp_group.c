/* kcp_group.c - see kcp_group.h. */
#include "kcp_group.h"

#include <stdlib.h>
#include <string.h>

enum { K = KDA_K, V = KDA_V, NOUT = KDA_NOUT };

/* A rank's local token rows (`row` bytes each) of a global per-token array, fragment by fragment. */
static CUdeviceptr split_tokens(const KcpRank *r, const void *global, size_t row) {
  char *x = malloc((size_t)r->Tl * row + 1);
  for (int64_t f = 0; f < r->nfr; f++)
    memcpy(x + (size_t)r->fr[f].local_start * row, (const char *)global + (size_t)r->fr[f].start * row,
           (size_t)(r->fr[f].end - r->fr[f].start) * row);
  CUdeviceptr d = gpu_upload(x, (size_t)r->Tl * row);
  free(x);
  return d;
}

/* A rank's per-fragment rows of a global per-document array: the document's
 * row where `first` (the fragment starts its document) or not `first` (it
 * ends it) holds, NaN elsewhere. */
static CUdeviceptr split_states(const KcpRank *r, const float *global, size_t row, int first, int single) {
  char *x = malloc((size_t)r->Nl * row + 1);
  memset(x, 0xFF, (size_t)r->Nl * row);
  if (single) memcpy(x, global, (size_t)r->Nl * row); /* one rank: every document's row (empty ones too) */
  for (int64_t f = 0; f < r->nfr && !single; f++)
    if (first ? !r->fr[f].continues : !r->fr[f].continued)
      memcpy(x + (size_t)f * row, (const char *)global + (size_t)r->fr[f].doc * row, row);
  CUdeviceptr d = gpu_upload(x, (size_t)r->Nl * row);
  free(x);
  return d;
}

/* Bytes per token of a per-token output, per document of ht and dh0; 0 for dA_log and ddt_bias. */
static size_t out_row(const KdaCase *c, int o) {
  size_t e = kda_out_bf16[o] ? 2 : 4;
  switch (o) {
    case 0: case 4: return (size_t)(c->HV * V) * e; /* o, dv */
    case 2: case 3: return (size_t)(c->H * K) * e;  /* dq, dk */
    case 5: return (size_t)(c->HV * K) * e;         /* dg */
    case 6: return (size_t)c->HV * e;               /* dbeta */
    case 1: case 9: return (size_t)(c->HV * K * V) * e; /* ht, dh0 */
    default: return 0;
  }
}

static int per_doc(int o) { return o == 1 || o == 9; }

void kcp_group_init(KcpGroup *g, const cake_program *prog, const KdaCase *c, int R, cake_layout layout, int align,
                    int shared_stream) {
  memset(g, 0, sizeof *g);
  g->single = R == 0; /* a program without ranks, on one rank: its documents are its fragments */
  if (g->single) R = 1, layout = CAKE_LAYOUT_CONTIGUOUS, align = 0;
  g->R = R;
  int64_t H = c->H, HV = c->HV;
  size_t rowq = (size_t)(H * K) * 2, rowv = (size_t)(HV * V) * 2, rowb = (size_t)HV * 2;
  size_t rowg = (size_t)(HV * K) * (c->external ? 4 : 2), rows = (size_t)(HV * K * V) * 4;
  if (!g->single) RT(cake_comm_init_local(R, g->comms));
  g->dA = gpu_upload(c->A_log, (size_t)HV * 4), g->ddt = gpu_upload(c->dt_bias, (size_t)(HV * K) * 4);
  for (int r = 0; r < R; r++) {
    KcpRank *a = &g->rk[r];
    RT(cake_plan_create(prog, &a->plan));
    RT(cake_plan_set_dim(a->plan, "H", H));
    RT(cake_plan_set_dim(a->plan, "HV", HV));
    if (g->single) {
      RT(cake_plan_set_dim(a->plan, "T", c->T));
      RT(cake_plan_set_docs(a->plan, c->cu, c->N));
      RT(cake_plan_finalize(a->plan));
      a->Tl = c->T, a->Nl = c->N, g->F = c->N;
    } else {
      RT(cake_plan_set_partition(a->plan, c->cu, c->N, c->T, R, r, layout, align));
      RT(cake_plan_finalize(a->plan));
      RT(cake_plan_get_dim(a->plan, "T", &a->Tl));
      RT(cake_plan_get_dim(a->plan, "N", &a->Nl));
      RT(cake_plan_get_dim(a->plan, "F", &g->F));
    }
    RT(cake_partition(c->cu, c->N, c->T, R, r, layout, align, NULL, 0, &a->nfr, NULL));
    a->fr = calloc((size_t)a->nfr + 1, sizeof(cake_fragment));
    RT(cake_partition(c->cu, c->N, c->T, R, r, layout, align, a->fr, a->nfr, &a->nfr, NULL));
    int64_t Tl = a->Tl, Nl = a->Nl;
    a->in[0] = split_tokens(a, c->q, rowq), a->in[1] = split_tokens(a, c->k, rowq);
    a->in[2] = split_tokens(a, c->v, rowv);
    a->in[3] = split_tokens(a, c->external ? (const void *)c->g32 : c->g16, rowg);
    a->in[4] = split_tokens(a, c->beta, rowb), a->in[5] = split_tokens(a, c->dO, rowv);
    a->in[6] = c->with_h0 ? split_states(a, c->h0, rows, 1, g->single) : 0;
    a->in[7] = c->with_dht ? split_states(a, c->dht, rows, 0, g->single) : 0;
    for (int o = 0; o < NOUT; o++) {
      size_t row = out_row(c, o);
      a->out_bytes[o] = row ? row * (size_t)(per_doc(o) ? Nl : Tl) : c->n[o] * 4;
      a->out[o] = gpu_alloc(a->out_bytes[o] + 4);
    }
    RT(cake_plan_workspace_bytes(a->plan, &a->ws));
    RT(cake_plan_saved_bytes(a->plan, &a->sv));
    a->work = gpu_alloc(a->ws ? a->ws : 256), a->saved = gpu_alloc(a->sv ? a->sv : 256);
    cake_binding b[] = {
        {"q", gpu_tensor(a->in[0], CAKE_BF16, 3, Tl, H, K, 0)},
        {"k", gpu_tensor(a->in[1], CAKE_BF16, 3, Tl, H, K, 0)},
        {"v", gpu_tensor(a->in[2], CAKE_BF16, 3, Tl, HV, V, 0)},
        {"g", gpu_tensor(a->in[3], c->external ? CAKE_F32 : CAKE_BF16, 3, Tl, HV, K, 0)},
        {"beta", gpu_tensor(a->in[4], CAKE_BF16, 2, Tl, HV, 0, 0)},
        {"do", gpu_tensor(a->in[5], CAKE_BF16, 3, Tl, HV, V, 0)},
        {"o", gpu_tensor(a->out[0], CAKE_BF16, 3, Tl, HV, V, 0)},
        {"ht", gpu_tensor(a->out[1], CAKE_F32, 4, Nl, HV, K, V)},
        {"dq", gpu_tensor(a->out[2], CAKE_BF16, 3, Tl, H, K, 0)},
        {"dk", gpu_tensor(a->out[3], CAKE_BF16, 3, Tl, H, K, 0)},
        {"dv", gpu_tensor(a->out[4], CAKE_BF16, 3, Tl, HV, V, 0)},
        {"dg", gpu_tensor(a->out[5], CAKE_F32, 3, Tl, HV, K, 0)},
        {"dbeta", gpu_tensor(a->out[6], CAKE_F32, 2, Tl, HV, 0, 0)},
        {"dh0", gpu_tensor(a->out[9], CAKE_F32, 4, Nl, HV, K, V)},
        /* optional (14, 15) and the gate's parameters (16..19) */
        {"h0", gpu_tensor(a->in[6], CAKE_F32, 4, Nl, HV, K, V)},
        {"dht", gpu_tensor(a->in[7], CAKE_F32, 4, Nl, HV, K, V)},
        {"A_log", gpu_tensor(g->dA, CAKE_F32, 1, HV, 0, 0, 0)},
        {"dt_bias", gpu_tensor(g->ddt, CAKE_F32, 2, HV, K, 0, 0)},
        {"dA_log", gpu_tensor(a->out[7], CAKE_F32, 1, HV, 0, 0, 0)},
        {"ddt_bias", gpu_tensor(a->out[8], CAKE_F32, 2, HV, K, 0, 0)},
    };
    for (int i = 0; i < (int)(sizeof b / sizeof b[0]); i++) {
      if ((i == 14 && !c->with_h0) || (i == 15 && !c->with_dht) || (i >= 16 && c->external)) continue;
      a->b[a->nb++] = b[i];
    }
    if (!shared_stream || r == 0) CK(cuStreamCreate(&g->own[r], CU_STREAM_DEFAULT));
    g->streams[r] = shared_stream ? g->own[0] : g->own[r];
    g->plans[r] = a->plan, g->bp[r] = a->b, g->nb[r] = a->nb;
    g->ws[r] = a->work, g->wsb[r] = a->ws, g->sv[r] = a->saved, g->svb[r] = a->sv;
  }
}

void kcp_group_launch(KcpGroup *g, int fresh) {
  for (int r = 0; r < g->R; r++) {
    KcpRank *a = &g->rk[r];
    for (int o = 0; o < NOUT; o++) gpu_poison(a->out[o], a->out_bytes[o]);
    if (fresh) gpu_poison(a->work, a->ws), gpu_poison(a->saved, a->sv);
  }
  CK(cuCtxSynchronize());
  if (g->single) {
    if (fresh) RT(cake_plan_finalize(g->plans[0])); /* the poisoned workspace held the chunk tables */
    for (int e = 0; e < 2; e++)
      RT(cake_launch(g->plans[0], e ? "bwd" : "fwd", g->bp[0], g->nb[0], g->ws[0], g->wsb[0], g->sv[0], g->svb[0],
                     g->streams[0]));
    return;
  }
  RT(cake_launch_group(g->plans, g->R, "fwd", g->bp, g->nb, g->ws, g->wsb, g->sv, g->svb, g->comms, g->streams));
  RT(cake_launch_group(g->plans, g->R, "bwd", g->bp, g->nb, g->ws, g->wsb, g->sv, g->svb, g->comms, g->streams));
}

int kcp_group_gather(const KcpGroup *g, const KdaCase *c, void *host[KDA_NOUT]) {
  CK(cuCtxSynchronize());
  int agree = 1;
  for (int o = 0; o < NOUT; o++) host[o] = calloc(c->n[o] + 1, kda_out_bf16[o] ? 2 : 4);
  for (int r = 0; r < g->R; r++) {
    const KcpRank *a = &g->rk[r];
    for (int o = 0; o < NOUT; o++) {
      if (c->external && (o == 7 || o == 8)) continue;
      size_t row = out_row(c, o), bytes = a->out_bytes[o];
      char *lo = malloc(bytes + 1), *dst = host[o];
      if (bytes) CK(cuMemcpyDtoH(lo, a->out[o], bytes));
      if (!row) { /* dA_log, ddt_bias: every rank holds the sums */
        if (r == 0) memcpy(dst, lo, bytes);
        else agree &= memcmp(dst, lo, bytes) == 0;
      }
      for (int64_t f = 0; row && f < a->nfr; f++) {
        const cake_fragment *x = &a->fr[f];
        if (!per_doc(o))
          memcpy(dst + (size_t)x->start * row, lo + (size_t)x->local_start * row, (size_t)(x->end - x->start) * row);
        else if (o == 1 ? !x->continued : !x->continues) /* ht: the last fragment; dh0: the first */
          memcpy(dst + (size_t)x->doc * row, lo + (size_t)(g->single ? x->doc : f) * row, row);
      }
      free(lo);
    }
  }
  return agree;
}

int64_t kcp_rounds(const KdaCase *c, int R, cake_layout layout, int align) {
  int64_t *count = calloc((size_t)c->N + 1, sizeof(int64_t)), most = 0;
  for (int r = 0; r < R; r++) {
    int64_t n;
    RT(cake_partition(c->cu, c->N, c->T, R, r, layout, align, NULL, 0, &n, NULL));
    cake_fragment *fr = calloc((size_t)n + 1, sizeof(cake_fragment));
    RT(cake_partition(c->cu, c->N, c->T, R, r, layout, align, fr, n, &n, NULL));
    for (int64_t f = 0; f < n; f++)
      if (++count[fr[f].doc] > most) most = count[fr[f].doc];
    free(fr);
  }
  free(count);
  return most;
}

void kcp_group_free(KcpGroup *g) {
  for (int r = 0; r < g->R; r++) {
    KcpRank *a = &g->rk[r];
    if (g->own[r]) CK(cuStreamDestroy(g->own[r]));
    for (int i = 0; i < KCP_NIN; i++)
      if (a->in[i]) gpu_free(a->in[i]);
    for (int o = 0; o < NOUT; o++) gpu_free(a->out[o]);
    gpu_free(a->work), gpu_free(a->saved);
    cake_plan_free(a->plan);
    free(a->fr);
  }
  gpu_free(g->dA), gpu_free(g->ddt);
  for (int r = 0; r < g->R && !g->single; r++) cake_comm_destroy(g->comms[r]);
  memset(g, 0, sizeof *g);
}
