/* test_conv1d.c - the causal conv1d (specs/conv1d/conv1d.cake) on the GPU,
 * forward and backward, through the generic runtime:
 *   - one rank (cp = none) against the float64 definition
 *     (tests/ref/ref_conv1d.c, on every CPU core): fresh random inputs (seed
 *     printed), outputs poisoned with NaN before each launch, every element
 *     compared (error ratio RMS(out - ref) / RMS(ref): y, dx below 0.005,
 *     bf16 outputs; dw, dbias below 1e-4, f32 sums over every token), NaN or
 *     unwritten failing, and a second launch equal bit for bit;
 *   - R in-process ranks (cp = halo, cake_launch_group) for R = 2, 4, 8 and
 *     the three layouts: y and dx gathered from the ranks bitwise equal to
 *     one rank's (the halos bring the other ranks' tokens, so every token is
 *     computed alike), dw and dbias the same bits on every rank and within
 *     1e-4 of the reference, the exchanges' bytes per rank against the
 *     formula (halos: F fragments x (6 + 3) tokens x D x 2 B; dw, dbias: 5 D
 *     x 4 B), and a second group launch equal bit for bit.
 * Shapes: short and one-token documents; many short documents; the anchor's
 * packed T = 65536 (documents 15945 / 21845 / 27746) over D = 4096
 * channels, with timings (median of 20, events) of fwd and bwd.
 *
 * usage: test_conv1d PACKAGE_DIR [--seed N] [--quick] [--max-t N] */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_util.h"
#include "ref_conv1d.h"

enum { W = 4, BD = 64, MAXR = 8 };

typedef struct Shape {
  const char *name;
  int64_t T, G;
  int ndocs;          /* 0: random documents of 1..random_docs tokens */
  const int32_t *cu;
  int random_docs;
  int silu, bias;
} Shape;

typedef struct Data {
  int64_t T, D, N;
  int32_t *cu;
  long long *cul;
  int silu, bias;
  uint16_t *x, *dy;          /* bf16 [T, D] */
  float *w, *b;              /* [D, W], [D] */
  double *ry, *rdx, *rdw, *rdb; /* the reference */
} Data;

typedef struct RefJob {
  const Data *d;
  double *x, *dy, *w, *b;
  int64_t d0, d1;
} RefJob;

static void *ref_job(void *arg) {
  RefJob *j = arg;
  const Data *d = j->d;
  ref_conv1d_fwd_range(d->T, d->D, W, d->cul, d->N, j->x, j->w, d->bias ? j->b : NULL, d->silu, d->ry, j->d0, j->d1);
  ref_conv1d_bwd_range(d->T, d->D, W, d->cul, d->N, j->x, j->w, d->bias ? j->b : NULL, d->silu, j->dy, d->rdx, d->rdw,
                       d->rdb, j->d0, j->d1);
  return NULL;
}

static void make_data(Data *d, const Shape *sh, uint64_t *rng) {
  memset(d, 0, sizeof *d);
  d->T = sh->T, d->D = sh->G * BD, d->silu = sh->silu, d->bias = sh->bias;
  int64_t T = d->T, D = d->D;
  d->cu = calloc((size_t)T + 2, sizeof(int32_t));
  if (sh->ndocs) {
    memcpy(d->cu, sh->cu, sizeof(int32_t) * (size_t)(sh->ndocs + 1));
    d->N = sh->ndocs;
  } else {
    int64_t t = 0;
    while (t < T) {
      int64_t len = 1 + (int64_t)(rng_uniform(rng) * sh->random_docs);
      if (t + len > T) len = T - t;
      d->cu[++d->N] = (int32_t)(t += len);
    }
  }
  d->cul = calloc((size_t)d->N + 1, sizeof(long long));
  for (int64_t i = 0; i <= d->N; i++) d->cul[i] = d->cu[i];
  size_t nt = (size_t)(T * D);
  d->x = malloc(nt * 2), d->dy = malloc(nt * 2), d->w = malloc((size_t)(D * W) * 4), d->b = malloc((size_t)D * 4);
  double *x = malloc(nt * 8), *dy = malloc(nt * 8), *w = malloc((size_t)(D * W) * 8), *b = malloc((size_t)D * 8);
  for (size_t i = 0; i < nt; i++) {
    d->x[i] = f32_to_bf16((float)rng_normal(rng)), x[i] = bf16_to_f32(d->x[i]);
    d->dy[i] = f32_to_bf16((float)rng_normal(rng)), dy[i] = bf16_to_f32(d->dy[i]);
  }
  for (int64_t i = 0; i < D * W; i++) d->w[i] = (float)(0.5 * rng_normal(rng)), w[i] = d->w[i];
  for (int64_t i = 0; i < D; i++) d->b[i] = (float)(0.3 * rng_normal(rng)), b[i] = d->b[i];
  d->ry = malloc(nt * 8), d->rdx = malloc(nt * 8), d->rdw = malloc((size_t)(D * W) * 8), d->rdb = malloc((size_t)D * 8);
  long nth = sysconf(_SC_NPROCESSORS_ONLN);
  if (nth < 1) nth = 1;
  if (nth > 64) nth = 64;
  pthread_t th[64];
  RefJob jobs[64];
  for (long i = 0; i < nth; i++) {
    jobs[i] = (RefJob){d, x, dy, w, b, D * i / nth, D * (i + 1) / nth};
    pthread_create(&th[i], NULL, ref_job, &jobs[i]);
  }
  for (long i = 0; i < nth; i++) pthread_join(th[i], NULL);
  free(x), free(dy), free(w), free(b);
}

static void free_data(Data *d) {
  free(d->cu), free(d->cul), free(d->x), free(d->dy), free(d->w), free(d->b);
  free(d->ry), free(d->rdx), free(d->rdw), free(d->rdb);
}

/* The outputs of a run, on the host: y, dx (bf16), dw, dbias (f32). */
typedef struct Out {
  uint16_t *y, *dx;
  float *dw, *db;
} Out;

static Out out_alloc(const Data *d) {
  size_t nt = (size_t)(d->T * d->D);
  return (Out){malloc(nt * 2 + 2), malloc(nt * 2 + 2), malloc((size_t)(d->D * W) * 4), malloc((size_t)d->D * 4)};
}
static void out_free(Out *o) { free(o->y), free(o->dx), free(o->dw), free(o->db); }

/* One rank's device buffers and bindings over T tokens. */
typedef struct Dev {
  CUdeviceptr x, dy, w, b, y, dx, dw, db, work;
  size_t ws;
  cake_binding bind[8];
  int nb;
} Dev;

static void dev_init(Dev *v, const Data *d, cake_plan *plan, int64_t T, const uint16_t *x, const uint16_t *dy) {
  int64_t D = d->D, G = D / BD;
  size_t nt = (size_t)(T * D);
  v->x = gpu_upload(x, nt * 2), v->dy = gpu_upload(dy, nt * 2);
  v->w = gpu_upload(d->w, (size_t)(D * W) * 4), v->b = gpu_upload(d->b, (size_t)D * 4);
  v->y = gpu_alloc(nt * 2 + 4), v->dx = gpu_alloc(nt * 2 + 4);
  v->dw = gpu_alloc((size_t)(D * W) * 4), v->db = gpu_alloc((size_t)D * 4);
  RT(cake_plan_workspace_bytes(plan, &v->ws));
  v->work = gpu_alloc(v->ws ? v->ws : 256);
  cake_binding b[] = {
      {"x", gpu_tensor(v->x, CAKE_BF16, 3, T, G, BD, 0)},   {"dy", gpu_tensor(v->dy, CAKE_BF16, 3, T, G, BD, 0)},
      {"w", gpu_tensor(v->w, CAKE_F32, 3, G, BD, W, 0)},    {"y", gpu_tensor(v->y, CAKE_BF16, 3, T, G, BD, 0)},
      {"dx", gpu_tensor(v->dx, CAKE_BF16, 3, T, G, BD, 0)}, {"dw", gpu_tensor(v->dw, CAKE_F32, 3, G, BD, W, 0)},
      {"bias", gpu_tensor(d->bias ? v->b : 0, CAKE_F32, 2, G, BD, 0, 0)},
      {"dbias", gpu_tensor(d->bias ? v->db : 0, CAKE_F32, 2, G, BD, 0, 0)},
  };
  memcpy(v->bind, b, sizeof b);
  v->nb = 8;
}

/* NaN into the outputs and the whole workspace (no launch may read what it
 * did not write); the runtime keeps its chunk tables in the workspace, so
 * the plan is finalized again to have the next launch rewrite them (the
 * runtime's contract for a workspace used for something else). */
static void dev_poison(const Dev *v, const Data *d, int64_t T, cake_plan *plan) {
  gpu_poison(v->y, (size_t)(T * d->D) * 2), gpu_poison(v->dx, (size_t)(T * d->D) * 2);
  gpu_poison(v->dw, (size_t)(d->D * W) * 4), gpu_poison(v->db, (size_t)d->D * 4);
  gpu_poison(v->work, v->ws ? v->ws : 256);
  RT(cake_plan_finalize(plan));
}

static void dev_free(Dev *v) {
  gpu_free(v->x), gpu_free(v->dy), gpu_free(v->w), gpu_free(v->b), gpu_free(v->y), gpu_free(v->dx);
  gpu_free(v->dw), gpu_free(v->db), gpu_free(v->work);
}

static const cake_program *variant(cake_package *pkg, const Data *d, const char *cp) {
  char opts[64];
  snprintf(opts, sizeof opts, "activation=%s,cp=%s", d->silu ? "silu" : "none", cp);
  const cake_program *prog;
  RT(cake_package_variant(pkg, "conv1d", opts, &prog));
  return prog;
}

static int g_failures;

/* err ratio of a bf16 or f32 output against the reference */
static ErrStats errs(const void *o, int bf16, const double *ref, size_t n) {
  double *v = malloc(n * 8 + 8);
  for (size_t i = 0; i < n; i++) v[i] = bf16 ? bf16_to_f32(((const uint16_t *)o)[i]) : ((const float *)o)[i];
  ErrStats e = err_stats(v, ref, (long long)n);
  free(v);
  return e;
}

static int check_ref(const char *what, const Data *d, const Out *o) {
  size_t nt = (size_t)(d->T * d->D);
  ErrStats ey = errs(o->y, 1, d->ry, nt), ex = errs(o->dx, 1, d->rdx, nt), ew = errs(o->dw, 0, d->rdw, (size_t)(d->D * W));
  ErrStats eb = d->bias ? errs(o->db, 0, d->rdb, (size_t)d->D) : (ErrStats){0};
  long long bad = ey.nonfinite + ex.nonfinite + ew.nonfinite + eb.nonfinite;
  int ok = !bad && ey.err_ratio < 0.005 && ex.err_ratio < 0.005 && ew.err_ratio < 1e-4 && eb.err_ratio < 1e-4;
  printf("  %-34s y %.2e  dx %.2e  dw %.2e  dbias %s%.2e  nan/unwritten %lld  %s\n", what, ey.err_ratio, ex.err_ratio,
         ew.err_ratio, d->bias ? "" : "(none) ", eb.err_ratio, bad, ok ? "ok" : "FAIL");
  return ok;
}

static void fetch(const Dev *v, const Data *d, int64_t T, uint16_t *y, uint16_t *dx, float *dw, float *db) {
  CK(cuMemcpyDtoH(y, v->y, (size_t)(T * d->D) * 2));
  CK(cuMemcpyDtoH(dx, v->dx, (size_t)(T * d->D) * 2));
  CK(cuMemcpyDtoH(dw, v->dw, (size_t)(d->D * W) * 4));
  CK(cuMemcpyDtoH(db, v->db, (size_t)d->D * 4));
}

/* The first differing element of two buffers of n elements of `size` bytes, or -1. */
static long long first_diff(const void *a, const void *b, size_t n, size_t size) {
  for (size_t i = 0; i < n; i++)
    if (memcmp((const char *)a + i * size, (const char *)b + i * size, size)) return (long long)i;
  return -1;
}

/* Bit for bit; on a difference, which output and where. */
static int same_out(const Out *a, const Out *b, const Data *d) {
  size_t nt = (size_t)(d->T * d->D);
  long long at[4] = {first_diff(a->y, b->y, nt, 2), first_diff(a->dx, b->dx, nt, 2),
                     first_diff(a->dw, b->dw, (size_t)(d->D * W), 4),
                     d->bias ? first_diff(a->db, b->db, (size_t)d->D, 4) : -1};
  static const char *const names[4] = {"y", "dx", "dw", "dbias"};
  int same = 1;
  for (int i = 0; i < 4; i++)
    if (at[i] >= 0) {
      same = 0;
      long long e = at[i], D = d->D;
      if (i < 2)
        printf("    %s differs first at token %lld, channel %lld\n", names[i], e / D, e % D);
      else
        printf("    %s differs first at element %lld\n", names[i], e);
    }
  return same;
}

typedef struct LaunchCtx {
  cake_plan *plan;
  Dev *v;
  const char *entry;
} LaunchCtx;

static void launch_one(void *arg) {
  LaunchCtx *c = arg;
  RT(cake_launch(c->plan, c->entry, c->v->bind, c->v->nb, c->v->work, c->v->ws, 0, 0, NULL));
}

/* One rank: fwd and bwd twice (bitwise), against the reference. */
static void single(cake_package *pkg, const Data *d, Out *o, int timed) {
  const cake_program *prog = variant(pkg, d, "none");
  cake_plan *plan;
  RT(cake_plan_create(prog, &plan));
  RT(cake_plan_set_dim(plan, "T", d->T));
  RT(cake_plan_set_dim(plan, "G", d->D / BD));
  RT(cake_plan_set_docs(plan, d->cu, d->N));
  RT(cake_plan_finalize(plan));
  Dev v;
  dev_init(&v, d, plan, d->T, d->x, d->dy);
  Out again = out_alloc(d);
  for (int run = 0; run < 2; run++) {
    dev_poison(&v, d, d->T, plan);
    RT(cake_launch(plan, "fwd", v.bind, v.nb, v.work, v.ws, 0, 0, NULL));
    RT(cake_launch(plan, "bwd", v.bind, v.nb, v.work, v.ws, 0, 0, NULL));
    CK(cuCtxSynchronize());
    Out *t = run ? &again : o;
    fetch(&v, d, d->T, t->y, t->dx, t->dw, t->db);
  }
  int ok = check_ref("one rank", d, o);
  int bit = same_out(o, &again, d);
  printf("  %-34s bitwise %s\n", "one rank, second launch", bit ? "yes" : "NO");
  if (timed) {
    LaunchCtx f = {plan, &v, "fwd"}, b = {plan, &v, "bwd"};
    double tf = gpu_time_ms(launch_one, &f, 20), tb = gpu_time_ms(launch_one, &b, 20);
    double bytes = (double)d->T * (double)d->D * 2;
    printf("  timing: fwd %.3f ms (%.0f GB/s of x + y), bwd %.3f ms (%.0f GB/s of x + dy + dx)\n", tf,
           2 * bytes / tf / 1e6, tb, 3 * bytes / tb / 1e6);
  }
  g_failures += !ok || !bit;
  out_free(&again);
  dev_free(&v);
  cake_plan_free(plan);
}

/* R in-process ranks: each rank's fragments' tokens, launched as a group. */
static void group(cake_package *pkg, const Data *d, const Out *one, int R, cake_layout layout, int timed) {
  const cake_program *prog = variant(pkg, d, "halo");
  int64_t D = d->D, G = D / BD;
  cake_comm *comms[MAXR];
  cake_plan *plans[MAXR];
  Dev v[MAXR];
  cake_fragment *fr[MAXR];
  int64_t nfr[MAXR], Tl[MAXR], F = 0;
  const cake_binding *bp[MAXR];
  int nb[MAXR];
  uint64_t ws[MAXR];
  size_t wsb[MAXR];
  RT(cake_comm_init_local(R, comms));
  uint64_t sent = 0, recv = 0;
  for (int r = 0; r < R; r++) {
    RT(cake_plan_create(prog, &plans[r]));
    RT(cake_plan_set_dim(plans[r], "G", G));
    RT(cake_plan_set_partition(plans[r], d->cu, d->N, d->T, R, r, layout, 0));
    RT(cake_plan_finalize(plans[r]));
    RT(cake_plan_get_dim(plans[r], "T", &Tl[r]));
    RT(cake_plan_get_dim(plans[r], "F", &F));
    RT(cake_partition(d->cu, d->N, d->T, R, r, layout, 0, NULL, 0, &nfr[r], NULL));
    fr[r] = calloc((size_t)nfr[r] + 1, sizeof(cake_fragment));
    RT(cake_partition(d->cu, d->N, d->T, R, r, layout, 0, fr[r], nfr[r], &nfr[r], NULL));
    size_t row = (size_t)D * 2, nt = (size_t)Tl[r] * row;
    uint16_t *lx = malloc(nt + 2), *ldy = malloc(nt + 2);
    for (int64_t f = 0; f < nfr[r]; f++) {
      size_t n = (size_t)(fr[r][f].end - fr[r][f].start) * row;
      memcpy((char *)lx + fr[r][f].local_start * row, (const char *)d->x + fr[r][f].start * row, n);
      memcpy((char *)ldy + fr[r][f].local_start * row, (const char *)d->dy + fr[r][f].start * row, n);
    }
    dev_init(&v[r], d, plans[r], Tl[r], lx, ldy);
    free(lx), free(ldy);
    bp[r] = v[r].bind, nb[r] = v[r].nb, ws[r] = v[r].work, wsb[r] = v[r].ws;
    uint64_t s1, r1;
    RT(cake_plan_comm_bytes(plans[r], "bwd", &s1, &r1));
    if (r == 0) sent = s1, recv = r1;
    if (s1 != sent || r1 != recv) g_failures++;
  }
  uint64_t want = (uint64_t)F * (6 + 3) * (uint64_t)D * 2 + (uint64_t)D * W * 4 + (uint64_t)D * 4;
  Out got = out_alloc(d), again = out_alloc(d);
  float *dw = malloc((size_t)(D * W) * 4), *db = malloc((size_t)D * 4);
  int same_ranks = 1;
  for (int run = 0; run < 2; run++) {
    Out *o = run ? &again : &got;
    for (int r = 0; r < R; r++) dev_poison(&v[r], d, Tl[r], plans[r]);
    RT(cake_launch_group(plans, R, "fwd", bp, nb, ws, wsb, NULL, NULL, comms, NULL));
    RT(cake_launch_group(plans, R, "bwd", bp, nb, ws, wsb, NULL, NULL, comms, NULL));
    CK(cuCtxSynchronize());
    for (int r = 0; r < R; r++) {
      size_t row = (size_t)D * 2, nt = (size_t)Tl[r] * row;
      uint16_t *ly = malloc(nt + 2), *ldx = malloc(nt + 2);
      fetch(&v[r], d, Tl[r], ly, ldx, r ? dw : o->dw, r ? db : o->db);
      for (int64_t f = 0; f < nfr[r]; f++) {
        size_t n = (size_t)(fr[r][f].end - fr[r][f].start) * row;
        memcpy((char *)o->y + fr[r][f].start * row, (char *)ly + fr[r][f].local_start * row, n);
        memcpy((char *)o->dx + fr[r][f].start * row, (char *)ldx + fr[r][f].local_start * row, n);
      }
      if (r && (memcmp(dw, o->dw, (size_t)(D * W) * 4) || (d->bias && memcmp(db, o->db, (size_t)D * 4)))) same_ranks = 0;
      free(ly), free(ldx);
    }
  }
  char what[96];
  snprintf(what, sizeof what, "R = %d %s", R, cake_layout_name(layout));
  int ok = check_ref(what, d, &got);
  size_t nt = (size_t)(d->T * D);
  int eq_one = !memcmp(got.y, one->y, nt * 2) && !memcmp(got.dx, one->dx, nt * 2);
  int bit = same_out(&got, &again, d);
  int bytes_ok = sent == want && recv == want * (uint64_t)(R - 1);
  printf("    y, dx bitwise = one rank's %s; dw, dbias same on every rank %s; second launch bitwise %s; "
         "bwd sends %llu B (formula %llu), receives %llu B %s\n",
         eq_one ? "yes" : "NO", same_ranks ? "yes" : "NO", bit ? "yes" : "NO", (unsigned long long)sent,
         (unsigned long long)want, (unsigned long long)recv, bytes_ok ? "ok" : "FAIL");
  if (timed) {
    {
      CUevent e0, e1;
      CK(cuEventCreate(&e0, 0));
      CK(cuEventCreate(&e1, 0));
      float ms[2];
      const char *ent[2] = {"fwd", "bwd"};
      for (int k = 0; k < 2; k++) {
        RT(cake_launch_group(plans, R, ent[k], bp, nb, ws, wsb, NULL, NULL, comms, NULL));
        CK(cuCtxSynchronize());
        CK(cuEventRecord(e0, NULL));
        for (int i = 0; i < 10; i++) RT(cake_launch_group(plans, R, ent[k], bp, nb, ws, wsb, NULL, NULL, comms, NULL));
        CK(cuEventRecord(e1, NULL));
        CK(cuEventSynchronize(e1));
        CK(cuEventElapsedTime(&ms[k], e0, e1));
        ms[k] /= 10;
      }
      printf("    group of %d on one GPU (ranks one after another): fwd %.3f ms, bwd %.3f ms\n", R, ms[0], ms[1]);
      cuEventDestroy(e0), cuEventDestroy(e1);
    }
  }
  g_failures += !ok || !eq_one || !bit || !same_ranks || !bytes_ok;
  for (int r = 0; r < R; r++) dev_free(&v[r]), cake_plan_free(plans[r]), free(fr[r]), cake_comm_destroy(comms[r]);
  out_free(&got), out_free(&again), free(dw), free(db);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PACKAGE_DIR [--seed N] [--quick] [--max-t N]\n", argv[0]);
    return 2;
  }
  uint64_t rng = rng_seed(argc, argv);
  long long tmax = max_tokens(argc, argv, 10000);
  gpu_init();
  cake_package *pkg;
  RT(cake_package_load(argv[1], NULL, &pkg));
  static const int32_t cu1[] = {0, 1, 3, 6, 10, 15, 79, 144, 210};
  static const int32_t cu3[] = {0, 15945, 37790, 65536};
  const Shape shapes[] = {
      {"short and one-token documents", 210, 2, 8, cu1, 0, 1, 1},
      {"many short documents (1..40 tokens)", 6000, 4, 0, NULL, 40, 0, 0},
      {"anchor: packed 65536, D = 4096", 65536, 64, 3, cu3, 0, 1, 1},
  };
  static const cake_layout lays[] = {CAKE_LAYOUT_CONTIGUOUS, CAKE_LAYOUT_ZIGZAG, CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const Shape *sh = &shapes[s];
    if (sh->T > tmax) continue;
    Data d;
    make_data(&d, sh, &rng);
    printf("%s: T=%lld D=%lld docs=%lld %s %s\n", sh->name, (long long)d.T, (long long)d.D, (long long)d.N,
           d.silu ? "silu" : "no activation", d.bias ? "bias" : "no bias");
    fflush(stdout);
    Out one = out_alloc(&d);
    int big = d.T >= 65536;
    single(pkg, &d, &one, big);
    for (int R = 2; R <= MAXR; R *= 2)
      for (int l = 0; l < 3; l++) {
        group(pkg, &d, &one, R, lays[l], big && R == 4);
        fflush(stdout);
      }
    out_free(&one);
    free_data(&d);
  }
  cake_package_free(pkg);
  printf("%s\n", g_failures ? "FAIL" : "PASS");
  return g_failures ? 1 : 0;
}
