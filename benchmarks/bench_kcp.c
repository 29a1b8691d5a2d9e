/* bench_kcp.c - context-parallel KDA training (kda_train, cp = summary or exact)
 * with R in-process ranks on one GPU, against the single-rank program
 * (cp = none) on the same inputs.
 *
 * Per layout: each rank's device time per stage (kernels and exchanges),
 * from the runtime's stage timing (cake_plan_set_timing) with every rank on
 * one stream, so that the ranks' kernels run one after another and each
 * rank's times are its own, as they would be on a GPU of its own; the
 * slowest rank's fwd + bwd against the single rank's; the wall time of the
 * group with a stream per rank (R ranks sharing one GPU); and each rank's
 * communication bytes (cake_plan_comm_bytes) next to the exchanged tensors'
 * sizes. Times are medians over --reps launches after --warmup. With
 * --cp exact, a stage of a rounds group is timed from its start in the first
 * round to its end in the last (with the ranks on one stream, the other
 * ranks' work of those rounds falls in between: read the fwd+bwd totals and
 * the group's wall time).
 *
 * usage: bench_kcp KCP_PACKAGE SINGLE_PACKAGE [--R 4] [--T 65536] [--H 16]
 *        [--docs 15945,21845,27746] [--save ckpt|states] [--cp summary|exact] [--reps 20] [--warmup 3] [--seed N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kcp_group.h"

enum { MAXS = 32, MAXREPS = 200 };

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

static float median(float *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_float);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The stage times of one entry over reps: names and per-stage samples. */
typedef struct Times {
  int n;
  const char *names[MAXS];
  float ms[MAXS][MAXREPS];
} Times;

static void take(Times *t, const cake_plan *plan, const char *entry, int rep) {
  float ms[MAXS];
  RT(cake_plan_stage_times(plan, entry, t->names, ms, MAXS, &t->n));
  for (int i = 0; i < t->n && i < MAXS; i++) t->ms[i][rep] = ms[i];
}

static float total(Times *t, int reps, float *med) {
  float sum = 0;
  for (int i = 0; i < t->n; i++) sum += med[i] = median(t->ms[i], reps);
  return sum;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The single rank: fwd and bwd stage medians into tf/tb. */
static void single(const cake_program *prog, const KdaCase *c, int warmup, int reps, Times *tf, Times *tb) {
  enum { K = KDA_K, V = KDA_V };
  int64_t T = c->T, H = c->H, HV = c->HV, N = c->N;
  cake_plan *plan;
  RT(cake_plan_create(prog, &plan));
  RT(cake_plan_set_dim(plan, "T", T));
  RT(cake_plan_set_dim(plan, "H", H));
  RT(cake_plan_set_dim(plan, "HV", HV));
  RT(cake_plan_set_docs(plan, c->cu, N));
  RT(cake_plan_finalize(plan));
  RT(cake_plan_set_timing(plan, 1));
  size_t ws, sv;
  RT(cake_plan_workspace_bytes(plan, &ws));
  RT(cake_plan_saved_bytes(plan, &sv));
  CUdeviceptr work = gpu_alloc(ws ? ws : 256), saved = gpu_alloc(sv ? sv : 256);
  CUdeviceptr in[7] = {gpu_upload(c->q, c->nq * 2), gpu_upload(c->k, c->nq * 2), gpu_upload(c->v, c->nv * 2),
                       gpu_upload(c->g16, c->nv * 2), gpu_upload(c->beta, c->nb * 2), gpu_upload(c->dO, c->nv * 2),
                       gpu_upload(c->A_log, (size_t)HV * 4)};
  CUdeviceptr ddt = gpu_upload(c->dt_bias, (size_t)(HV * K) * 4), out[KDA_NOUT];
  for (int o = 0; o < KDA_NOUT; o++) out[o] = gpu_alloc(c->n[o] * 4 + 4);
  cake_binding b[] = {
      {"q", gpu_tensor(in[0], CAKE_BF16, 3, T, H, K, 0)},       {"k", gpu_tensor(in[1], CAKE_BF16, 3, T, H, K, 0)},
      {"v", gpu_tensor(in[2], CAKE_BF16, 3, T, HV, V, 0)},      {"g", gpu_tensor(in[3], CAKE_BF16, 3, T, HV, K, 0)},
      {"beta", gpu_tensor(in[4], CAKE_BF16, 2, T, HV, 0, 0)},   {"do", gpu_tensor(in[5], CAKE_BF16, 3, T, HV, V, 0)},
      {"A_log", gpu_tensor(in[6], CAKE_F32, 1, HV, 0, 0, 0)},   {"dt_bias", gpu_tensor(ddt, CAKE_F32, 2, HV, K, 0, 0)},
      {"o", gpu_tensor(out[0], CAKE_BF16, 3, T, HV, V, 0)},     {"ht", gpu_tensor(out[1], CAKE_F32, 4, N, HV, K, V)},
      {"dq", gpu_tensor(out[2], CAKE_BF16, 3, T, H, K, 0)},     {"dk", gpu_tensor(out[3], CAKE_BF16, 3, T, H, K, 0)},
      {"dv", gpu_tensor(out[4], CAKE_BF16, 3, T, HV, V, 0)},    {"dg", gpu_tensor(out[5], CAKE_F32, 3, T, HV, K, 0)},
      {"dbeta", gpu_tensor(out[6], CAKE_F32, 2, T, HV, 0, 0)},  {"dA_log", gpu_tensor(out[7], CAKE_F32, 1, HV, 0, 0, 0)},
      {"ddt_bias", gpu_tensor(out[8], CAKE_F32, 2, HV, K, 0, 0)}, {"dh0", gpu_tensor(out[9], CAKE_F32, 4, N, HV, K, V)},
  };
  int nb = (int)(sizeof b / sizeof b[0]);
  for (int rep = -warmup; rep < reps; rep++) {
    RT(cake_launch(plan, "fwd", b, nb, work, ws, saved, sv, NULL));
    RT(cake_launch(plan, "bwd", b, nb, work, ws, saved, sv, NULL));
    if (rep >= 0) take(tf, plan, "fwd", rep), take(tb, plan, "bwd", rep);
  }
  CK(cuCtxSynchronize());
  for (int i = 0; i < 7; i++) gpu_free(in[i]);
  for (int o = 0; o < KDA_NOUT; o++) gpu_free(out[o]);
  gpu_free(ddt), gpu_free(work), gpu_free(saved);
  cake_plan_free(plan);
}

static const char *arg(int argc, char **argv, const char *name, const char *def) {
  for (int i = 3; i + 1 < argc; i++)
    if (!strcmp(argv[i], name)) return argv[i + 1];
  return def;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: %s KCP_PACKAGE SINGLE_PACKAGE [--R 4] [--T 65536] [--H 16] [--docs 15945,21845,27746] "
            "[--save ckpt|states] [--cp summary|exact] [--reps 20] [--warmup 3] [--seed N]\n",
            argv[0]);
    return 2;
  }
  int R = atoi(arg(argc, argv, "--R", "4")), reps = atoi(arg(argc, argv, "--reps", "20"));
  int warmup = atoi(arg(argc, argv, "--warmup", "3"));
  int64_t T = atoll(arg(argc, argv, "--T", "65536")), H = atoll(arg(argc, argv, "--H", "16"));
  const char *save = arg(argc, argv, "--save", "ckpt"), *docs = arg(argc, argv, "--docs", "15945,21845,27746");
  const char *cp = arg(argc, argv, "--cp", "summary");
  int exact = !strcmp(cp, "exact");
  if (!exact && strcmp(cp, "summary")) {
    fprintf(stderr, "bench_kcp: --cp takes summary or exact, not '%s'\n", cp);
    return 2;
  }
  if (R < 1 || R > KCP_MAXR || reps < 1 || reps > MAXREPS || warmup < 0 || T < 1 || H < 1 ||
      (strcmp(save, "ckpt") && strcmp(save, "states"))) {
    fprintf(stderr, "bench_kcp: R in [1, %d], reps in [1, %d], warmup >= 0, T, H >= 1, save ckpt or states\n",
            KCP_MAXR, MAXREPS);
    return 2;
  }
  int32_t cu[64] = {0};
  int64_t N = 0;
  for (const char *p = docs; *p && N < 62; N++) {
    cu[N + 1] = cu[N] + (int32_t)strtol(p, (char **)&p, 10);
    if (*p == ',') p++;
  }
  if (cu[N] != T) {
    fprintf(stderr, "bench_kcp: the documents (--docs) add up to %d tokens, not T = %lld\n", cu[N], (long long)T);
    return 2;
  }
  uint64_t seed = rng_seed(argc, argv), rng = seed;
  gpu_init();
  cake_package *kpkg, *spkg;
  RT(cake_package_load(argv[1], NULL, &kpkg));
  RT(cake_package_load(argv[2], NULL, &spkg));
  char opts[160];
  const cake_program *kprog, *sprog;
  snprintf(opts, sizeof opts, "gate=softplus,qk_norm=true,beta_logits=true,save=%s,cp=%s", save, cp);
  RT(cake_package_variant(kpkg, "kda_train", opts, &kprog));
  snprintf(opts, sizeof opts, "gate=softplus,qk_norm=true,beta_logits=true,save=%s,cp=none", save);
  RT(cake_package_variant(spkg, "kda_train", opts, &sprog));
  KdaCase c;
  kda_case_make(&c, "softplus", 1, 1, T, H, H, N, cu, 0, 0, &rng);
  printf("# bench_kcp: kda_train (layer: softplus gate, qk_norm, beta logits, save=%s, cp=%s), T=%lld H=%lld, %lld "
         "documents, R=%d in-process ranks; seed %llu; medians of %d launches\n\n",
         save, cp, (long long)T, (long long)H, (long long)N, R, (unsigned long long)seed, reps);

  static Times sf, sb;
  single(sprog, &c, warmup, reps, &sf, &sb);
  float smf[MAXS], smb[MAXS];
  float single_fwd = total(&sf, reps, smf), single_bwd = total(&sb, reps, smb);
  printf("single rank (cp=none): fwd %.3f ms, bwd %.3f ms, fwd+bwd %.3f ms\n\n", single_fwd, single_bwd,
         single_fwd + single_bwd);

  for (int layout = 0; layout < 3; layout++) {
    /* every rank on one stream: each rank's stage times alone */
    KcpGroup g;
    kcp_group_init(&g, kprog, &c, R, (cake_layout)layout, 64, 1);
    for (int r = 0; r < R; r++) RT(cake_plan_set_timing(g.plans[r], 1));
    static Times tf[KCP_MAXR], tb[KCP_MAXR];
    for (int rep = -warmup; rep < reps; rep++) {
      RT(cake_launch_group(g.plans, R, "fwd", g.bp, g.nb, g.ws, g.wsb, g.sv, g.svb, g.comms, g.streams));
      RT(cake_launch_group(g.plans, R, "bwd", g.bp, g.nb, g.ws, g.wsb, g.sv, g.svb, g.comms, g.streams));
      for (int r = 0; rep >= 0 && r < R; r++) take(&tf[r], g.plans[r], "fwd", rep), take(&tb[r], g.plans[r], "bwd", rep);
    }
    float med_f[KCP_MAXR][MAXS], med_b[KCP_MAXR][MAXS], tot[KCP_MAXR];
    int slow = 0;
    for (int r = 0; r < R; r++) {
      tot[r] = total(&tf[r], reps, med_f[r]) + total(&tb[r], reps, med_b[r]);
      if (tot[r] > tot[slow]) slow = r;
    }
    printf("## %s, align 64: F=%lld\n\n| stage |", cake_layout_name((cake_layout)layout), (long long)g.F);
    for (int r = 0; r < R; r++) printf(" rank %d (T=%lld) ms |", r, (long long)g.rk[r].Tl);
    printf(" single rank ms |\n|---|");
    for (int r = 0; r <= R; r++) printf("---|");
    printf("\n");
    for (int pass = 0; pass < 2; pass++) {
      Times *t = pass ? tb : tf;
      Times *st = pass ? &sb : &sf;
      float (*med)[MAXS] = pass ? med_b : med_f;
      float *smed = pass ? smb : smf;
      for (int i = 0; i < t[0].n; i++) {
        printf("| %s.%s |", pass ? "bwd" : "fwd", t[0].names[i]);
        for (int r = 0; r < R; r++) printf(" %.3f |", med[r][i]);
        int found = -1;
        for (int j = 0; j < st->n; j++)
          if (!strcmp(st->names[j], t[0].names[i])) found = j;
        if (found >= 0) printf(" %.3f |\n", smed[found]);
        else printf(" - |\n");
      }
    }
    printf("| **fwd+bwd** |");
    for (int r = 0; r < R; r++) printf(" %s%.3f%s |", r == slow ? "**" : "", tot[r], r == slow ? "**" : "");
    printf(" %.3f |\n\n", single_fwd + single_bwd);
    printf("slowest rank %d: %.3f ms = %.3f of the single rank's %.3f ms (ideal 1/R = %.3f)\n", slow, tot[slow],
           tot[slow] / (single_fwd + single_bwd), single_fwd + single_bwd, 1.0 / R);
    uint64_t sent[2], recv[2];
    RT(cake_plan_comm_bytes(g.plans[0], "fwd", &sent[0], &recv[0]));
    RT(cake_plan_comm_bytes(g.plans[0], "bwd", &sent[1], &recv[1]));
    uint64_t state = (uint64_t)g.F * (uint64_t)H * KDA_K * KDA_V * 4, sums = (uint64_t)H * (1 + KDA_K) * 4;
    uint64_t want_f = 2 * state, want_b = (strcmp(save, "ckpt") ? 2 : 3) * state + sums;
    if (exact) { /* per round: the states leaving the fragments, their gradients, the gate's per-fragment sums */
      uint64_t D = (uint64_t)kcp_rounds(&c, R, (cake_layout)layout, 64);
      want_f = D * state, want_b = D * ((strcmp(save, "ckpt") ? 1 : 2) * state + (uint64_t)g.F * H * (1 + KDA_K) * 4);
    }
    printf("comm per rank: fwd sent %llu B, received %llu B; bwd sent %llu B, received %llu B (formula: sent %llu and "
           "%llu B: %s)\n",
           (unsigned long long)sent[0], (unsigned long long)recv[0], (unsigned long long)sent[1],
           (unsigned long long)recv[1], (unsigned long long)want_f, (unsigned long long)want_b,
           sent[0] == want_f && sent[1] == want_b && recv[0] == (uint64_t)(R - 1) * want_f &&
                   recv[1] == (uint64_t)(R - 1) * want_b
               ? "equal"
               : "DIFFERENT");
    kcp_group_free(&g);

    /* a stream per rank: the group's wall time on one shared GPU */
    kcp_group_init(&g, kprog, &c, R, (cake_layout)layout, 64, 0);
    float wall[MAXREPS];
    for (int rep = -warmup; rep < reps; rep++) {
      CK(cuCtxSynchronize());
      double t0 = now_ms();
      RT(cake_launch_group(g.plans, R, "fwd", g.bp, g.nb, g.ws, g.wsb, g.sv, g.svb, g.comms, g.streams));
      RT(cake_launch_group(g.plans, R, "bwd", g.bp, g.nb, g.ws, g.wsb, g.sv, g.svb, g.comms, g.streams));
      CK(cuCtxSynchronize());
      if (rep >= 0) wall[rep] = (float)(now_ms() - t0);
    }
    printf("group wall time, a stream per rank on one GPU (host clock, fwd+bwd): %.3f ms\n\n", median(wall, reps));
    kcp_group_free(&g);
  }
  kda_case_free(&c);
  cake_package_free(kpkg);
  cake_package_free(spkg);
  return 0;
}
