/* kcp_train_step.c - one context-parallel KDA training step from C:
 * specs/kda/kda_train.cake with cp = summary (or exact), its packed
 * sequence split across R ranks.
 *
 * With at least R GPUs, one process per rank: the program forks R workers,
 * worker 0 makes the NCCL id (cake_comm_unique_id) and hands it to the others
 * through a pipe, and worker r runs rank r on GPU r over NCCL
 * (cake_comm_init_nccl, cake_launch_comm). With fewer GPUs, R in-process
 * ranks on GPU 0 (cake_comm_init_local, cake_launch_group), and the same
 * step on one rank (cp = none) for comparison.
 *
 * Each rank: its plan from the global documents (cake_plan_set_partition),
 * the workspace, saved and communication bytes queried before anything is
 * allocated, its tokens of a global sequence every rank draws from the same
 * seed, the forward, a loss 0.5 ||o - target||^2 over its tokens, do = o -
 * target, the backward. Printed: each rank's share of the loss and the
 * norm of dA_log (the same on every rank: the ranks' sums, in rank order).
 *
 *   build/examples/kcp_train_step build/package [R] [layout] [summary|exact]
 *   (R: 1..8, default 2; layout: contiguous | zigzag | zigzag_per_document, default zigzag;
 *   the mode, default summary: exact gives dA_log bitwise equal to one rank's, which the
 *   in-process run checks)
 */
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cake_runtime.h"

#define CU(x)                                                  \
  do {                                                         \
    CUresult r_ = (x);                                         \
    if (r_) {                                                  \
      const char *m_;                                          \
      cuGetErrorString(r_, &m_);                               \
      fprintf(stderr, "%s: %s\n", #x, m_);                     \
      exit(1);                                                 \
    }                                                          \
  } while (0)
#define CK(x)                                                  \
  do {                                                         \
    if ((x) != CAKE_OK) {                                      \
      fprintf(stderr, "%s: %s\n", #x, cake_last_error());      \
      exit(1);                                                 \
    }                                                          \
  } while (0)

enum { K = 128, V = 128, MAXR = 8, NB = 18 };
static const int64_t T = 8192, H = 4;
static const int32_t CU_SEQ[] = {0, 3000, 3001, 8192}; /* three documents, one of a single token */
static const int64_t NDOCS = 3;

static unsigned short bf16(float f) {
  unsigned u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
static float from_bf16(unsigned short h) {
  unsigned u = (unsigned)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* The global sequence, the same for every rank (a fixed seed). */
typedef struct Global {
  unsigned short *q, *k, *v, *g, *beta, *target;
  float A_log[16], dt_bias[16 * K];
} Global;

static void make_global(Global *x) {
  unsigned s = 2024;
  size_t nq = (size_t)(T * H * K);
  x->q = malloc(nq * 2), x->k = malloc(nq * 2), x->v = malloc(nq * 2), x->g = malloc(nq * 2);
  x->beta = malloc((size_t)(T * H) * 2), x->target = malloc(nq * 2);
  unsigned short *all[] = {x->q, x->k, x->v, x->g, x->target};
  for (int a = 0; a < 5; a++)
    for (size_t i = 0; i < nq; i++) {
      s = s * 1664525u + 1013904223u;
      all[a][i] = bf16((float)(s >> 8) / 8388608.0f - 1.0f);
    }
  for (int64_t i = 0; i < T * H; i++) x->beta[i] = bf16(0.5f * from_bf16(x->q[i * K]));
  for (int h = 0; h < H; h++) x->A_log[h] = logf(1.0f + h);
  for (int i = 0; i < H * K; i++) x->dt_bias[i] = -2.0f + 0.001f * (float)i;
}

static cake_tensor tensor(CUdeviceptr p, cake_dtype dt, int rank, int64_t a, int64_t b, int64_t c) {
  cake_tensor t = {p, dt, rank, {a, b, c}, {0}};
  return t;
}

static CUdeviceptr alloc_up(const void *host, size_t bytes) {
  CUdeviceptr d;
  CU(cuMemAlloc(&d, bytes ? bytes : 4));
  if (host && bytes) CU(cuMemcpyHtoD(d, host, bytes));
  return d;
}

/* One rank's step state: plan, buffers and bindings. */
typedef struct Rank {
  cake_plan *plan;
  int64_t Tl, nfr;
  cake_fragment *fr;
  unsigned short *target; /* its tokens of the target */
  CUdeviceptr buf[NB], work, saved;
  size_t ws, sv;
  cake_binding b[NB];
} Rank;

/* A rank's tokens of a global per-token bf16 array ([T, H, width]). */
static unsigned short *local_rows(const Rank *r, const unsigned short *global, int64_t width) {
  size_t row = (size_t)(H * width);
  unsigned short *x = malloc((size_t)r->Tl * row * 2 + 2);
  for (int64_t f = 0; f < r->nfr; f++)
    memcpy(x + (size_t)r->fr[f].local_start * row, global + (size_t)r->fr[f].start * row,
           (size_t)(r->fr[f].end - r->fr[f].start) * row * 2);
  return x;
}

static const char *g_cp = "summary"; /* the KCP mode (cp = summary or exact) */

/* Plans rank `rank` of R (R = 0: the single-rank program on the whole sequence), allocates and binds. */
static void setup(Rank *r, const cake_package *pkg, const Global *x, int R, int rank, cake_layout layout) {
  memset(r, 0, sizeof *r);
  const cake_program *prog;
  char opts[96];
  snprintf(opts, sizeof opts, "gate=softplus,qk_norm=true,beta_logits=true,save=ckpt,cp=%s", R ? g_cp : "none");
  CK(cake_package_variant(pkg, "kda_train", opts, &prog));
  CK(cake_plan_create(prog, &r->plan));
  CK(cake_plan_set_dim(r->plan, "H", H));
  CK(cake_plan_set_dim(r->plan, "HV", H));
  if (R) {
    CK(cake_plan_set_partition(r->plan, CU_SEQ, NDOCS, T, R, rank, layout, 64));
    CK(cake_partition(CU_SEQ, NDOCS, T, R, rank, layout, 64, NULL, 0, &r->nfr, NULL));
    r->fr = calloc((size_t)r->nfr + 1, sizeof *r->fr);
    CK(cake_partition(CU_SEQ, NDOCS, T, R, rank, layout, 64, r->fr, r->nfr, &r->nfr, NULL));
  } else {
    CK(cake_plan_set_dim(r->plan, "T", T));
    CK(cake_plan_set_docs(r->plan, CU_SEQ, NDOCS));
    r->nfr = NDOCS;
    r->fr = calloc((size_t)NDOCS, sizeof *r->fr);
    for (int d = 0; d < NDOCS; d++) r->fr[d] = (cake_fragment){.start = CU_SEQ[d], .end = CU_SEQ[d + 1], .local_start = CU_SEQ[d]};
  }
  CK(cake_plan_finalize(r->plan));
  int64_t N;
  CK(cake_plan_get_dim(r->plan, "T", &r->Tl));
  CK(cake_plan_get_dim(r->plan, "N", &N));
  /* the bytes, before anything is allocated */
  CK(cake_plan_workspace_bytes(r->plan, &r->ws));
  CK(cake_plan_saved_bytes(r->plan, &r->sv));
  uint64_t fs = 0, fr = 0, bs = 0, br = 0;
  if (R) {
    CK(cake_plan_comm_bytes(r->plan, "fwd", &fs, &fr));
    CK(cake_plan_comm_bytes(r->plan, "bwd", &bs, &br));
  }
  printf("%s %d: %lld tokens in %lld fragments; workspace %zu B, saved %zu B; comm fwd %llu B out, %llu B in; "
         "bwd %llu B out, %llu B in\n",
         R ? "rank" : "single rank", rank, (long long)r->Tl, (long long)r->nfr, r->ws, r->sv, (unsigned long long)fs,
         (unsigned long long)fr, (unsigned long long)bs, (unsigned long long)br);
  int64_t Tl = r->Tl;
  size_t tok = (size_t)(Tl * H * K) * 2;
  unsigned short *lq = local_rows(r, x->q, K), *lk = local_rows(r, x->k, K), *lv = local_rows(r, x->v, V);
  unsigned short *lg = local_rows(r, x->g, K), *lb = local_rows(r, x->beta, 1);
  r->target = local_rows(r, x->target, V);
  const char *names[NB] = {"q", "k", "v", "g", "beta", "A_log", "dt_bias", "o", "ht", "do",
                           "dq", "dk", "dv", "dg", "dbeta", "dA_log", "ddt_bias", "dh0"};
  const void *init[NB] = {lq, lk, lv, lg, lb, x->A_log, x->dt_bias};
  size_t state = (size_t)(N * H * K * V) * 4;
  size_t bytes[NB] = {tok, tok, tok, tok, (size_t)(Tl * H) * 2, (size_t)H * 4, (size_t)(H * K) * 4, tok, state, tok,
                      tok, tok, tok, (size_t)(Tl * H * K) * 4, (size_t)(Tl * H) * 4, (size_t)H * 4, (size_t)(H * K) * 4,
                      state};
  cake_tensor shapes[NB] = {
      tensor(0, CAKE_BF16, 3, Tl, H, K),     tensor(0, CAKE_BF16, 3, Tl, H, K),  tensor(0, CAKE_BF16, 3, Tl, H, V),
      tensor(0, CAKE_BF16, 3, Tl, H, K),     tensor(0, CAKE_BF16, 2, Tl, H, 0),  tensor(0, CAKE_F32, 1, H, 0, 0),
      tensor(0, CAKE_F32, 2, H, K, 0),       tensor(0, CAKE_BF16, 3, Tl, H, V),  tensor(0, CAKE_F32, 4, N, H, K),
      tensor(0, CAKE_BF16, 3, Tl, H, V),     tensor(0, CAKE_BF16, 3, Tl, H, K),  tensor(0, CAKE_BF16, 3, Tl, H, K),
      tensor(0, CAKE_BF16, 3, Tl, H, V),     tensor(0, CAKE_F32, 3, Tl, H, K),   tensor(0, CAKE_F32, 2, Tl, H, 0),
      tensor(0, CAKE_F32, 1, H, 0, 0),       tensor(0, CAKE_F32, 2, H, K, 0),    tensor(0, CAKE_F32, 4, N, H, K)};
  for (int i = 0; i < NB; i++) {
    r->buf[i] = alloc_up(i < 7 ? init[i] : NULL, bytes[i]);
    r->b[i].name = names[i];
    r->b[i].tensor = shapes[i];
    r->b[i].tensor.data = r->buf[i];
    if (shapes[i].rank == 4) r->b[i].tensor.shape[3] = V;
  }
  r->work = alloc_up(NULL, r->ws), r->saved = alloc_up(NULL, r->sv);
  free(lq), free(lk), free(lv), free(lg), free(lb);
}

/* After the forward: the loss share 0.5 ||o - target||^2 and do = o - target. */
static double loss_and_do(Rank *r) {
  size_t n = (size_t)(r->Tl * H * V);
  unsigned short *o = malloc(n * 2 + 2), *d = malloc(n * 2 + 2);
  if (n) CU(cuMemcpyDtoH(o, r->buf[7], n * 2));
  double loss = 0;
  for (size_t i = 0; i < n; i++) {
    float e = from_bf16(o[i]) - from_bf16(r->target[i]);
    loss += 0.5 * (double)e * e;
    d[i] = bf16(e);
  }
  if (n) CU(cuMemcpyHtoD(r->buf[9], d, n * 2));
  free(o), free(d);
  return loss;
}

static void dA_of(const Rank *r, float g[16]) { CU(cuMemcpyDtoH(g, r->buf[15], (size_t)H * 4)); }

static double dA_norm(const Rank *r) {
  float g[16];
  dA_of(r, g);
  double s = 0;
  for (int h = 0; h < H; h++) s += (double)g[h] * g[h];
  return sqrt(s);
}

static void teardown(Rank *r) {
  for (int i = 0; i < NB; i++) cuMemFree(r->buf[i]);
  cuMemFree(r->work), cuMemFree(r->saved);
  cake_plan_free(r->plan);
  free(r->fr), free(r->target);
}

/* One process per rank over NCCL: worker `rank` on GPU `rank`; its loss share goes up the pipe. */
static void worker(const char *pkgdir, int R, int rank, cake_layout layout, int id_fd[2], int loss_fd) {
  uint8_t id[CAKE_COMM_ID_BYTES];
  if (rank == 0) {
    CK(cake_comm_unique_id(id));
    for (int i = 1; i < R; i++)
      if (write(id_fd[1], id, sizeof id) != (ssize_t)sizeof id) exit(1);
  } else if (read(id_fd[0], id, sizeof id) != (ssize_t)sizeof id) {
    exit(1);
  }
  CUdevice dev;
  CUcontext ctx;
  CU(cuInit(0));
  CU(cuDeviceGet(&dev, rank));
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  cake_package *pkg;
  CK(cake_package_load(pkgdir, NULL, &pkg));
  cake_comm *comm;
  CK(cake_comm_init_nccl(id, R, rank, &comm));
  Global x;
  make_global(&x);
  Rank r;
  setup(&r, pkg, &x, R, rank, layout);
  CK(cake_launch_comm(r.plan, "fwd", r.b, NB, r.work, r.ws, r.saved, r.sv, comm, NULL));
  CU(cuCtxSynchronize());
  double loss = loss_and_do(&r);
  CK(cake_launch_comm(r.plan, "bwd", r.b, NB, r.work, r.ws, r.saved, r.sv, comm, NULL));
  CU(cuCtxSynchronize());
  printf("rank %d: loss share %.6f, |dA_log| %.6e\n", rank, loss, dA_norm(&r));
  if (write(loss_fd, &loss, sizeof loss) != (ssize_t)sizeof loss) exit(1);
  teardown(&r);
  cake_comm_destroy(comm);
  cake_package_free(pkg);
  exit(0);
}

/* The number of GPUs, counted in a child process: the driver must not be
 * initialised in a process that forks workers which use it. */
static int gpu_count(void) {
  int fd[2], n = 0;
  if (pipe(fd)) return 0;
  pid_t pid = fork();
  if (pid == 0) {
    int c = 0;
    if (cuInit(0) == CUDA_SUCCESS && cuDeviceGetCount(&c) != CUDA_SUCCESS) c = 0;
    if (write(fd[1], &c, sizeof c) != (ssize_t)sizeof c) _exit(1);
    _exit(0);
  }
  close(fd[1]);
  if (pid < 0 || read(fd[0], &n, sizeof n) != (ssize_t)sizeof n) n = 0;
  close(fd[0]);
  if (pid > 0) waitpid(pid, NULL, 0);
  return n;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PACKAGE_DIR [R] [contiguous|zigzag|zigzag_per_document] [summary|exact]\n", argv[0]);
    return 2;
  }
  int R = argc > 2 ? atoi(argv[2]) : 2;
  cake_layout layout = CAKE_LAYOUT_ZIGZAG;
  for (int l = 0; argc > 3 && l < 3; l++)
    if (!strcmp(argv[3], cake_layout_name((cake_layout)l))) layout = (cake_layout)l;
  if (argc > 4) g_cp = argv[4];
  if (strcmp(g_cp, "summary") && strcmp(g_cp, "exact")) {
    fprintf(stderr, "the mode is summary or exact, not '%s'\n", g_cp);
    return 2;
  }
  if (R < 1 || R > MAXR) {
    fprintf(stderr, "R must be in [1, %d]\n", MAXR);
    return 2;
  }
  int ngpu = gpu_count();
  printf("kcp_train_step: T=%lld H=%lld, documents 3000/1/5191, R=%d, %s, aligned to 64 tokens, cp=%s\n", (long long)T,
         (long long)H, R, cake_layout_name(layout), g_cp);
  if (ngpu >= R && R > 1) { /* one process per rank, over NCCL */
    printf("%d GPUs: one process per rank over NCCL\n", ngpu);
    fflush(stdout);
    int id_fd[2], loss_fd[2];
    if (pipe(id_fd) || pipe(loss_fd)) return 1;
    for (int rank = 0; rank < R; rank++)
      if (fork() == 0) worker(argv[1], R, rank, layout, id_fd, loss_fd[1]);
    int failed = 0;
    for (int i = 0; i < R; i++) {
      int st;
      wait(&st);
      failed |= !WIFEXITED(st) || WEXITSTATUS(st);
    }
    double total = 0, part;
    for (int i = 0; !failed && i < R; i++) failed |= read(loss_fd[0], &part, sizeof part) != (ssize_t)sizeof part, total += part;
    if (failed) return 1;
    printf("loss (the ranks' shares) %.6f\n", total);
    return 0;
  }
  /* R in-process ranks on GPU 0, then the same step on one rank */
  printf("%d GPU%s: %d in-process ranks on GPU 0\n", ngpu, ngpu == 1 ? "" : "s", R);
  CU(cuInit(0));
  CUdevice dev;
  CUcontext ctx;
  CU(cuDeviceGet(&dev, 0));
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  cake_package *pkg;
  CK(cake_package_load(argv[1], NULL, &pkg));
  Global x;
  make_global(&x);
  static Rank rk[MAXR];
  cake_comm *comms[MAXR];
  cake_plan *plans[MAXR];
  const cake_binding *bp[MAXR];
  int nb[MAXR];
  uint64_t ws[MAXR], sv[MAXR];
  size_t wsb[MAXR], svb[MAXR];
  CK(cake_comm_init_local(R, comms));
  for (int r = 0; r < R; r++) {
    setup(&rk[r], pkg, &x, R, r, layout);
    plans[r] = rk[r].plan, bp[r] = rk[r].b, nb[r] = NB;
    ws[r] = rk[r].work, wsb[r] = rk[r].ws, sv[r] = rk[r].saved, svb[r] = rk[r].sv;
  }
  CK(cake_launch_group(plans, R, "fwd", bp, nb, ws, wsb, sv, svb, comms, NULL));
  CU(cuCtxSynchronize());
  double total = 0;
  for (int r = 0; r < R; r++) total += loss_and_do(&rk[r]);
  CK(cake_launch_group(plans, R, "bwd", bp, nb, ws, wsb, sv, svb, comms, NULL));
  CU(cuCtxSynchronize());
  for (int r = 0; r < R; r++) printf("rank %d: |dA_log| %.6e\n", r, dA_norm(&rk[r]));
  Rank one;
  setup(&one, pkg, &x, 0, 0, layout);
  CK(cake_launch(one.plan, "fwd", one.b, NB, one.work, one.ws, one.saved, one.sv, NULL));
  CU(cuCtxSynchronize());
  double single = loss_and_do(&one);
  CK(cake_launch(one.plan, "bwd", one.b, NB, one.work, one.ws, one.saved, one.sv, NULL));
  CU(cuCtxSynchronize());
  printf("loss: %d ranks %.6f, one rank %.6f; |dA_log|: %d ranks %.6e, one rank %.6e\n", R, total, single, R,
         dA_norm(&rk[0]), dA_norm(&one));
  float ga[16], gb[16];
  dA_of(&rk[0], ga), dA_of(&one, gb);
  int same = !memcmp(ga, gb, (size_t)H * 4);
  printf("dA_log bitwise equal to one rank's: %s\n", same ? "yes" : "no");
  int status = !strcmp(g_cp, "exact") && !same; /* exact mode promises the single rank's bits */
  teardown(&one);
  for (int r = 0; r < R; r++) teardown(&rk[r]), cake_comm_destroy(comms[r]);
  cake_package_free(pkg);
  return status;
}
