/* test_kcp_train.c - KDA training in context-parallel summary and exact
 * modes (specs/kda/kda_train.cake, option cp = summary, exact) on one GPU as an
 * in-process group of R ranks (cake_comm_init_local, cake_launch_group),
 * entries fwd then bwd, against the float64 forward and backward of the
 * whole packed sequence (ref_kda.h through kda_case.h).
 *
 * For each case, R in {2, 4, 8}, each layout (contiguous, zigzag,
 * zigzag_per_document) and align in {0, 64} (64 only above 20,000 tokens): the sequence is
 * partitioned (cake_plan_set_partition; the host copies of the fragments from
 * cake_partition), each rank gets its fragments' tokens, h0 on a fragment
 * that starts its document and dht on one that ends it (NaN on the others:
 * they must not be read). The per-token outputs are gathered back by the
 * fragments, ht from each document's last fragment, dh0 from its first;
 * dA_log and ddt_bias (sums over every token) must be the same bits on every
 * rank. Reported per output: RMS(x - ref) / RMS(ref) with test_kda_train's
 * thresholds, no non-finite value, and a second fwd + bwd equal bit for bit.
 * An empty document has no fragment: its ht and dh0 are left out.
 * Exact mode (run_exact): R in {2, 4, 8}, each layout, align 64, every
 * output bitwise equal to the single rank's (cp = none on the same inputs),
 * besides the same checks.
 *
 * usage: test_kcp_train PACKAGE_DIR [--seed N] [--quick] [--max-t N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcp_group.h"

enum { K = KDA_K, V = KDA_V, NOUT = KDA_NOUT };

typedef struct Shape {
  const char *name, *gate, *save;
  int qk_norm, beta_logits;
  int64_t T, H, HV;
  int ndocs; /* 0: random documents of 1..random_docs tokens */
  const int32_t *cu;
  int random_docs;
  int with_h0, with_dht;
} Shape;

/* cp = exact: every output and gradient bitwise the single rank's (cp =
 * none, launched here on the same inputs), R = 2, 4, 8, each layout, cuts
 * at chunk boundaries (align 64); also within the thresholds against
 * float64, a second launch bitwise equal, the comm bytes the formula's
 * (each exchange once per round). */
static int run_exact(const cake_package *pkg, const Shape *sh, const KdaCase *c) {
  char opts[160];
  const cake_program *one, *prog;
  snprintf(opts, sizeof opts, "gate=%s,qk_norm=%s,beta_logits=%s,save=%s,cp=none", sh->gate,
           sh->qk_norm ? "true" : "false", sh->beta_logits ? "true" : "false", sh->save);
  RT(cake_package_variant(pkg, "kda_train", opts, &one));
  snprintf(opts, sizeof opts, "gate=%s,qk_norm=%s,beta_logits=%s,save=%s,cp=exact", sh->gate,
           sh->qk_norm ? "true" : "false", sh->beta_logits ? "true" : "false", sh->save);
  RT(cake_package_variant(pkg, "kda_train", opts, &prog));
  KcpGroup g;
  void *base[NOUT];
  kcp_group_init(&g, one, c, 0, CAKE_LAYOUT_CONTIGUOUS, 0, 0);
  kcp_group_launch(&g, 1);
  kcp_group_gather(&g, c, base);
  kcp_group_free(&g);
  static const int Rs[] = {2, 4, 8};
  int fails = 0;
  for (int ri = 0; ri < 3; ri++)
    for (int layout = 0; layout < 3; layout++) {
      kcp_group_init(&g, prog, c, Rs[ri], (cake_layout)layout, 64, 0);
      uint64_t comm[4];
      RT(cake_plan_comm_bytes(g.plans[0], "fwd", &comm[0], &comm[1]));
      RT(cake_plan_comm_bytes(g.plans[0], "bwd", &comm[2], &comm[3]));
      int64_t F = g.F, D = kcp_rounds(c, Rs[ri], (cake_layout)layout, 64);
      void *host[2][NOUT];
      int agree = 1;
      for (int run = 0; run < 2; run++) {
        kcp_group_launch(&g, run == 0);
        agree &= kcp_group_gather(&g, c, host[run]);
      }
      kcp_group_free(&g);
      /* per round: the states leaving the fragments [F, HV, K, V] f32 (forward,
       * and the backward's ckpt recomputation), their gradients entering them
       * (backward), the gate's per-fragment sums [F, HV] and [F, HV, K] f32 */
      uint64_t state = (uint64_t)F * (uint64_t)c->HV * K * V * 4, sums = c->external ? 0 : (uint64_t)F * c->HV * (1 + K) * 4;
      uint64_t want_fwd = (uint64_t)D * state,
               want_bwd = (uint64_t)D * ((strcmp(sh->save, "ckpt") ? 1 : 2) * state + sums);
      int comm_ok = comm[0] == want_fwd && comm[1] == want_fwd * (uint64_t)(Rs[ri] - 1) && comm[2] == want_bwd &&
                    comm[3] == want_bwd * (uint64_t)(Rs[ri] - 1);
      int same = 1, first = -1;
      for (int o = 0; o < NOUT && same; o++) {
        if (c->external && (o == 7 || o == 8)) continue;
        if (memcmp(host[0][o], base[o], c->n[o] * (kda_out_bf16[o] ? 2 : 4))) same = 0, first = o;
      }
      int ok = agree && comm_ok && same;
      printf("%-40s %-6s exact R=%d %-19s align=64 F=%-3lld rounds %lld comm fwd %llu bwd %llu B: bitwise one rank %s%s:",
             sh->name, sh->save, Rs[ri], cake_layout_name((cake_layout)layout), (long long)F, (long long)D,
             (unsigned long long)comm[0], (unsigned long long)comm[2], same ? "yes" : "NO, first output ",
             same ? "" : kda_out_names[first]);
      ok &= kda_case_report(c, host[0], host[1]);
      printf("%s%s  %s\n", agree ? "" : " (ranks' dA_log/ddt_bias differ)",
             comm_ok ? "" : " (comm bytes differ from the formula)", ok ? "PASS" : "FAIL");
      fflush(stdout);
      fails += !ok;
      for (int o = 0; o < NOUT; o++) free(host[0][o]), free(host[1][o]);
    }
  for (int o = 0; o < NOUT; o++) free(base[o]);
  return fails;
}

static int run_shape(const cake_package *pkg, const Shape *sh, uint64_t *rng) {
  /* random documents when asked */
  int32_t *cu = NULL;
  int64_t N = sh->ndocs;
  if (!sh->ndocs) {
    cu = malloc(sizeof(int32_t) * (size_t)(sh->T + 2));
    cu[0] = 0;
    for (int64_t t = 0; t < sh->T;) {
      int64_t len = 1 + (int64_t)(rng_uniform(rng) * sh->random_docs);
      t = t + len < sh->T ? t + len : sh->T;
      cu[++N] = (int32_t)t;
    }
  }
  KdaCase c;
  kda_case_make(&c, sh->gate, sh->qk_norm, sh->beta_logits, sh->T, sh->H, sh->HV, N, cu ? cu : sh->cu, sh->with_h0,
                sh->with_dht, rng);
  kda_case_reference(&c);
  char opts[160];
  snprintf(opts, sizeof opts, "gate=%s,qk_norm=%s,beta_logits=%s,save=%s,cp=summary", sh->gate,
           sh->qk_norm ? "true" : "false", sh->beta_logits ? "true" : "false", sh->save);
  const cake_program *prog;
  RT(cake_package_variant(pkg, "kda_train", opts, &prog));
  /* an empty document has no fragment, so no ht or dh0: left out of the comparison */
  size_t rows = (size_t)(c.HV * K * V);
  for (int64_t d = 0; d < c.N; d++)
    if (c.cu[d] == c.cu[d + 1]) memset(c.ref[1] + (size_t)d * rows, 0, rows * 8), memset(c.ref[9] + (size_t)d * rows, 0, rows * 8);
  static const int Rs[] = {2, 4, 8};
  int fails = 0;
  for (int ri = 0; ri < 3; ri++)
    for (int layout = 0; layout < 3; layout++)
      for (int align = sh->T > 20000 ? 64 : 0; align <= 64; align += 64) { /* long sequences: aligned only */
        KcpGroup g;
        kcp_group_init(&g, prog, &c, Rs[ri], (cake_layout)layout, align, 0);
        uint64_t comm[4];
        RT(cake_plan_comm_bytes(g.plans[0], "fwd", &comm[0], &comm[1]));
        RT(cake_plan_comm_bytes(g.plans[0], "bwd", &comm[2], &comm[3]));
        int64_t F = g.F;
        void *host[2][NOUT];
        int agree = 1;
        for (int run = 0; run < 2; run++) { /* the second reuses the tables and the first's workspace */
          kcp_group_launch(&g, run == 0);
          agree &= kcp_group_gather(&g, &c, host[run]);
        }
        kcp_group_free(&g);
        /* every exchange's source per rank: M, X, Y [F, HV, K, V] f32 each; the
         * gate's sums [HV] and [HV, K] f32. The backward recomputes X and the
         * incoming states with save = ckpt only. */
        uint64_t state = (uint64_t)F * (uint64_t)c.HV * K * V * 4, sums = c.external ? 0 : (uint64_t)c.HV * (1 + K) * 4;
        uint64_t want_fwd = 2 * state, want_bwd = (strcmp(sh->save, "ckpt") ? 2 : 3) * state + sums;
        int comm_ok = comm[0] == want_fwd && comm[1] == want_fwd * (uint64_t)(Rs[ri] - 1) && comm[2] == want_bwd &&
                      comm[3] == want_bwd * (uint64_t)(Rs[ri] - 1);
        int ok = agree && comm_ok;
        printf("%-40s %-6s T=%-5lld H=%-2lld HV=%-2lld docs=%-4lld R=%d %-19s align=%-2d F=%-3lld comm fwd %llu/%llu "
               "bwd %llu/%llu B:",
               sh->name, sh->save, (long long)c.T, (long long)c.H, (long long)c.HV, (long long)c.N, Rs[ri],
               cake_layout_name((cake_layout)layout), align, (long long)F, (unsigned long long)comm[0],
               (unsigned long long)comm[1], (unsigned long long)comm[2], (unsigned long long)comm[3]);
        ok &= kda_case_report(&c, host[0], host[1]);
        printf("%s%s  %s\n", agree ? "" : " (ranks' dA_log/ddt_bias differ)",
               comm_ok ? "" : " (comm bytes differ from the formula)", ok ? "PASS" : "FAIL");
        fflush(stdout);
        fails += !ok;
        for (int o = 0; o < NOUT; o++) free(host[0][o]), free(host[1][o]);
      }
  fails += run_exact(pkg, sh, &c);
  kda_case_free(&c);
  free(cu);
  return fails;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PACKAGE_DIR [--seed N] [--quick] [--max-t N]\n", argv[0]);
    return 2;
  }
  long long max_t = max_tokens(argc, argv, 5000);
  uint64_t seed = rng_seed(argc, argv), rng = seed;
  printf("test_kcp_train: seed %llu\n", (unsigned long long)seed);
  gpu_init();
  cake_package *pkg;
  RT(cake_package_load(argv[1], NULL, &pkg));
  static const int32_t cu_three[] = {0, 1000, 1001, 4096};
  static const int32_t cu_two[] = {0, 77, 700};
  static const int32_t cu_mixed[] = {0, 1000, 1001, 1001, 4096, 6000}; /* a one-token and an empty document */
  static const int32_t cu_tiny[] = {0, 1, 3};                          /* ranks without fragments */
  static const int32_t cu_one[] = {0, 1000};
  static const int32_t cu_anchor[] = {0, 15945, 15945 + 21845, 65536};
  const Shape shapes[] = {
      {"safe, h0, dht, docs 1000/1/3095", "safe", "ckpt", 1, 1, 4096, 4, 0, 3, cu_three, 0, 1, 1},
      {"softplus, dht, docs 77/623", "softplus", "states", 1, 1, 700, 2, 0, 2, cu_two, 0, 0, 1},
      {"external, no norm, beta values, h0, dht", "external", "ckpt", 0, 0, 1000, 3, 0, 1, cu_one, 0, 1, 1},
      {"GVA H=2 HV=8, safe, h0, docs 77/623", "safe", "states", 1, 1, 700, 2, 8, 2, cu_two, 0, 1, 0},
      {"tiny: ranks without fragments, h0, dht", "softplus", "ckpt", 1, 1, 3, 2, 0, 2, cu_tiny, 0, 1, 1},
      {"mixed: a one-token and an empty document", "softplus", "states", 1, 1, 6000, 4, 0, 5, cu_mixed, 0, 1, 1},
      {"many short documents (1..200), h0, dht", "softplus", "states", 1, 1, 8192, 4, 0, 0, NULL, 200, 1, 1},
      {"packed 15945/21845/27746 (layer), dht", "softplus", "ckpt", 1, 1, 65536, 16, 0, 3, cu_anchor, 0, 0, 1},
  };
  int fails = 0;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    if (shapes[i].T <= max_t) fails += run_shape(pkg, &shapes[i], &rng);
  cake_package_free(pkg);
  printf("test_kcp_train: %s (%d failing case%s)\n", fails ? "FAIL" : "PASS", fails, fails == 1 ? "" : "s");
  return fails ? 1 : 0;
}
