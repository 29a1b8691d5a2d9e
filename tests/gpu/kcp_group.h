/* kcp_group.h - a KDA training case (kda_case.h) run over R in-process
 * ranks of a context-parallel kda_train variant (cp = summary): the
 * partition, each rank's plan, local tensors, workspace and saved area,
 * entries fwd and bwd through cake_launch_group, and the outputs gathered
 * back into the global layout. Shared by test_kcp_train and bench_kcp. */
#ifndef CAKE_KCP_GROUP_H
#define CAKE_KCP_GROUP_H

#include "gpu_util.h"
#include "kda_case.h"

enum { KCP_MAXR = 8, KCP_NIN = 8 };

typedef struct KcpRank {
  cake_plan *plan;
  cake_fragment *fr;
  int64_t nfr, Tl, Nl;
  CUdeviceptr in[KCP_NIN], out[KDA_NOUT], work, saved;
  size_t out_bytes[KDA_NOUT], ws, sv;
  cake_binding b[KCP_NIN + KDA_NOUT + 4];
  int nb;
} KcpRank;

typedef struct KcpGroup {
  int R;
  int single; /* kcp_group_init with R = 0: a program without ranks, launched on one rank with cake_launch */
  int64_t F; /* the most fragments a rank holds */
  KcpRank rk[KCP_MAXR];
  cake_comm *comms[KCP_MAXR];
  cake_plan *plans[KCP_MAXR];
  const cake_binding *bp[KCP_MAXR];
  int nb[KCP_MAXR];
  uint64_t ws[KCP_MAXR], sv[KCP_MAXR];
  size_t wsb[KCP_MAXR], svb[KCP_MAXR];
  void *streams[KCP_MAXR];
  CUstream own[KCP_MAXR]; /* the streams made here */
  CUdeviceptr dA, ddt;    /* A_log, dt_bias: every rank reads the same */
} KcpGroup;

/* Partitions the case's sequence over R ranks and uploads each rank's part:
 * its fragments' tokens, h0 on a fragment that starts its document and dht
 * on one that ends it (NaN on the others: never read). shared_stream: every
 * rank on one stream (the ranks' kernels one after another), else a stream
 * per rank. R = 0: a program without ranks (cp = none) on one rank, its
 * plan over the case's documents, launched with cake_launch; gathered the
 * same way. */
void kcp_group_init(KcpGroup *g, const cake_program *prog, const KdaCase *c, int R, cake_layout layout, int align,
                    int shared_stream);
/* Poisons the outputs (and with `fresh` the workspaces and saved areas), then fwd and bwd. Does not synchronise. */
void kcp_group_launch(KcpGroup *g, int fresh);
/* After a launch: the outputs in the global layout (calloc'd, n[o] elements
 * each, bf16 or f32 as written); ht from each document's last fragment, dh0
 * from its first, dA_log and ddt_bias from rank 0. Returns 1 when every
 * rank's dA_log and ddt_bias are the same bits. */
int kcp_group_gather(const KcpGroup *g, const KdaCase *c, void *host[KDA_NOUT]);
void kcp_group_free(KcpGroup *g);
/* The most fragments a document of the case has over the partition: the
 * rounds of a `rounds(...)` group (cp = exact). */
int64_t kcp_rounds(const KdaCase *c, int R, cake_layout layout, int align);

#endif
