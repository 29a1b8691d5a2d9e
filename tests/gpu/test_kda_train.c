/* test_kda_train.c - the KDA training program (specs/kda/kda_train.cake)
 * on the GPU against the float64 recurrence and its backward: entries fwd and
 * bwd through the typed launchers generated from the spec (kda_train.h; one
 * tensor struct for both entries), fresh random inputs (seed printed),
 * outputs poisoned with NaN before each launch, fla's error metric
 * RMS(x - ref) / RMS(ref) with the thresholds of the interpreter test
 * (o, ht 0.005; dq, dk, dv, dh0 0.008; dg, dbeta, dA_log, ddt_bias 0.02), and
 * a second bwd launch compared bit for bit. Grouped value heads (GVA: HV
 * value heads over H key heads; dq and dk sum over each group) among the
 * shapes.
 *
 * usage: test_kda_train PACKAGE_DIR [--seed N] [--quick] [--max-t N] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "kda_train.h"
#include "kda_case.h"

enum { K = KDA_K, V = KDA_V, NOUT = KDA_NOUT };

typedef struct Shape {
  const char *name;
  const char *gate, *save;
  int qk_norm, beta_logits;
  int64_t T, H;
  int ndocs; /* 0: one document */
  const int32_t *cu;
  int with_h0, with_dht;
  int64_t HV; /* value heads (GVA); 0: H */
} Shape;

/* FNV-1a over bytes, chained: the digest of every output of a run */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* digest: FNV-1a of every output's bytes (to compare save modes) */
static int run_shape(const cake_package *pkg, const Shape *sh, uint64_t *rng, uint64_t *digest) {
  KdaCase c;
  kda_case_make(&c, sh->gate, sh->qk_norm, sh->beta_logits, sh->T, sh->H, sh->HV, sh->ndocs, sh->ndocs ? sh->cu : NULL,
                sh->with_h0, sh->with_dht, rng);
  kda_case_reference(&c);
  int64_t T = c.T, H = c.H, HV = c.HV, N = c.N;
  const int32_t *cu = c.cu;
  int external = c.external;
  const size_t *n = c.n;

  /* the GPU: every option given (kda_train has no prefer clauses), params at their defaults */
  kda_train_options opt = {
      .gate = !strcmp(sh->gate, "safe")       ? KDA_TRAIN_GATE_SAFE
              : !strcmp(sh->gate, "softplus") ? KDA_TRAIN_GATE_SOFTPLUS
                                              : KDA_TRAIN_GATE_EXTERNAL,
      .qk_norm = sh->qk_norm ? KDA_TRAIN_QK_NORM_TRUE : KDA_TRAIN_QK_NORM_FALSE,
      .beta_logits = sh->beta_logits ? KDA_TRAIN_BETA_LOGITS_TRUE : KDA_TRAIN_BETA_LOGITS_FALSE,
      .save = !strcmp(sh->save, "states") ? KDA_TRAIN_SAVE_STATES : KDA_TRAIN_SAVE_CKPT,
  };
  kda_train_dims dims = {.T = T, .H = H, .HV = HV, .cu_seqlens = cu, .ndocs = N}; /* cu NULL: one document */
  cake_plan *plan;
  RT(kda_train_plan(pkg, &opt, &dims, NULL, &plan));
  size_t ws, sv;
  RT(cake_plan_workspace_bytes(plan, &ws));
  RT(cake_plan_saved_bytes(plan, &sv));
  CUdeviceptr work = gpu_alloc(ws ? ws : 256), saved = gpu_alloc(sv ? sv : 256);
  CUdeviceptr dq = gpu_upload(c.q, c.nq * 2), dk = gpu_upload(c.k, c.nq * 2), dv = gpu_upload(c.v, c.nv * 2), ddo = gpu_upload(c.dO, c.nv * 2);
  CUdeviceptr dg = external ? gpu_upload(c.g32, c.nv * 4) : gpu_upload(c.g16, c.nv * 2), db = gpu_upload(c.beta, c.nb * 2);
  CUdeviceptr dA = gpu_upload(c.A_log, (size_t)HV * 4), ddt = gpu_upload(c.dt_bias, (size_t)(HV * K) * 4);
  CUdeviceptr dh0 = gpu_upload(c.h0, c.ns * 4), ddht = gpu_upload(c.dht, c.ns * 4);
  CUdeviceptr out[NOUT];
  for (int o = 0; o < NOUT; o++) out[o] = gpu_alloc(n[o] * (kda_out_bf16[o] ? 2 : 4));
  /* one struct for both entries (each binds what it is given: fwd's inputs and
   * outputs, bwd's do, dht and gradients); the external gate's variant has no
   * A_log, dt_bias or their gradients: left unbound (data 0) */
  kda_train_tensors t = {
      .q = gpu_tensor(dq, CAKE_BF16, 3, T, H, K, 0),
      .k = gpu_tensor(dk, CAKE_BF16, 3, T, H, K, 0),
      .v = gpu_tensor(dv, CAKE_BF16, 3, T, HV, V, 0),
      .g = gpu_tensor(dg, external ? CAKE_F32 : CAKE_BF16, 3, T, HV, K, 0),
      .beta = gpu_tensor(db, CAKE_BF16, 2, T, HV, 0, 0),
      .h0 = gpu_tensor(sh->with_h0 ? dh0 : 0, CAKE_F32, 4, N, HV, K, V),
      .A_log = gpu_tensor(external ? 0 : dA, CAKE_F32, 1, HV, 0, 0, 0),
      .dt_bias = gpu_tensor(external ? 0 : ddt, CAKE_F32, 2, HV, K, 0, 0),
      .o = gpu_tensor(out[0], CAKE_BF16, 3, T, HV, V, 0),
      .ht = gpu_tensor(out[1], CAKE_F32, 4, N, HV, K, V),
      .do_ = gpu_tensor(ddo, CAKE_BF16, 3, T, HV, V, 0),
      .dht = gpu_tensor(sh->with_dht ? ddht : 0, CAKE_F32, 4, N, HV, K, V),
      .dq = gpu_tensor(out[2], CAKE_BF16, 3, T, H, K, 0),
      .dk = gpu_tensor(out[3], CAKE_BF16, 3, T, H, K, 0),
      .dv = gpu_tensor(out[4], CAKE_BF16, 3, T, HV, V, 0),
      .dg = gpu_tensor(out[5], CAKE_F32, 3, T, HV, K, 0),
      .dbeta = gpu_tensor(out[6], CAKE_F32, 2, T, HV, 0, 0),
      .dA_log = gpu_tensor(external ? 0 : out[7], CAKE_F32, 1, HV, 0, 0, 0),
      .ddt_bias = gpu_tensor(external ? 0 : out[8], CAKE_F32, 2, HV, K, 0, 0),
      .dh0 = gpu_tensor(out[9], CAKE_F32, 4, N, HV, K, V),
  };
  void *host[2][NOUT];
  for (int run = 0; run < 2; run++) {
    for (int o = 0; o < NOUT; o++) gpu_poison(out[o], n[o] * (kda_out_bf16[o] ? 2 : 4));
    RT(kda_train_launch_fwd(plan, &t, work, ws, saved, sv, NULL));
    RT(kda_train_launch_bwd(plan, &t, work, ws, saved, sv, NULL));
    CK(cuCtxSynchronize());
    for (int o = 0; o < NOUT; o++) {
      host[run][o] = malloc(n[o] * 4);
      CK(cuMemcpyDtoH(host[run][o], out[o], n[o] * (kda_out_bf16[o] ? 2 : 4)));
    }
  }
  uint64_t dg64 = 0xcbf29ce484222325ull;
  for (int o = 0; o < NOUT; o++) dg64 = fnv1a(dg64, host[0][o], n[o] * (kda_out_bf16[o] ? 2 : 4));
  *digest = dg64;
  int ok = 1;
  printf("%-40s %-6s T=%-5lld H=%-2lld HV=%-2lld docs=%-3lld saved %zu B/token/head:", sh->name, sh->save, (long long)T,
         (long long)H, (long long)HV, (long long)N, sv / (size_t)(T * HV));
  ok &= kda_case_report(&c, host[0], host[1]);
  printf("  %s\n", ok ? "PASS" : "FAIL");
  fflush(stdout);
  for (int o = 0; o < NOUT; o++) gpu_free(out[o]), free(host[0][o]), free(host[1][o]);
  gpu_free(work), gpu_free(saved), gpu_free(dq), gpu_free(dk), gpu_free(dv), gpu_free(ddo), gpu_free(dg);
  gpu_free(db), gpu_free(dA), gpu_free(ddt), gpu_free(dh0), gpu_free(ddht);
  cake_plan_free(plan);
  kda_case_free(&c);
  return ok;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PACKAGE_DIR [--seed N] [--quick] [--max-t N]\n", argv[0]);
    return 2;
  }
  long long max_t = max_tokens(argc, argv, 5000);
  uint64_t seed = rng_seed(argc, argv), rng = seed;
  printf("test_kda_train: seed %llu\n", (unsigned long long)seed);
  gpu_init();
  cake_package *pkg;
  RT(cake_package_load(argv[1], NULL, &pkg));
  static const int32_t cu_anchor[] = {0, 15945, 15945 + 21845, 65536};
  /* many short documents: lengths 1..200 from a fixed sequence, T = 8192 */
  static int32_t cu_short[8192 + 1];
  int nshort = 0;
  for (uint32_t x = 12345; cu_short[nshort] < 8192; nshort++) {
    x = x * 1103515245u + 12345u;
    int32_t len = 1 + (int32_t)((x >> 8) % 200);
    cu_short[nshort + 1] = cu_short[nshort] + len < 8192 ? cu_short[nshort] + len : 8192;
  }
  static const int32_t cu_three[] = {0, 1000, 1001, 4096};
  static const int32_t cu_two[] = {0, 77, 700};
  static const int32_t cu_one[] = {0, 1};
  const Shape shapes[] = {
      {"safe, h0, dht, docs 1000/1/3095", "safe", "ckpt", 1, 1, 4096, 4, 3, cu_three, 1, 1, 0},
      {"safe, h0, dht, docs 1000/1/3095", "safe", "states", 1, 1, 4096, 4, 3, cu_three, 1, 1, 0},
      {"softplus, docs 77/623", "softplus", "states", 1, 1, 700, 2, 2, cu_two, 0, 1, 0},
      {"external, no norm, beta values, h0", "external", "ckpt", 0, 0, 1000, 3, 0, NULL, 1, 1, 0},
      {"a single one-token document", "safe", "ckpt", 1, 1, 1, 8, 1, cu_one, 1, 1, 0},
      {"T=16384 H=8 one document", "softplus", "ckpt", 1, 1, 16384, 8, 0, NULL, 0, 0, 0},
      {"many short documents (1..200 tokens), h0, dht", "softplus", "states", 1, 1, 8192, 4, nshort, cu_short, 1, 1, 0},
      {"packed 15945/21845/27746 (layer)", "softplus", "ckpt", 1, 1, 65536, 16, 3, cu_anchor, 0, 1, 0},
      {"packed 15945/21845/27746 (safe gate)", "safe", "states", 1, 1, 65536, 16, 3, cu_anchor, 0, 1, 0},
      {"T=32768 H=16 one document", "softplus", "states", 1, 1, 32768, 16, 0, NULL, 0, 0, 0},
      /* grouped value heads: dq and dk sum over each key head's group */
      {"GVA H=4 HV=16, docs 1000/1/3095, dht", "softplus", "ckpt", 1, 1, 4096, 4, 3, cu_three, 0, 1, 16},
      {"GVA H=1 HV=4, h0, dht, external", "external", "states", 0, 0, 1000, 1, 0, NULL, 1, 1, 4},
      {"GVA H=2 HV=8, safe, docs 77/623", "safe", "states", 1, 1, 700, 2, 2, cu_two, 1, 0, 8},
  };
  int n = (int)(sizeof shapes / sizeof shapes[0]), fails = 0;
  for (int i = 0; i < n; i++) {
    if (shapes[i].T > max_t) continue;
    uint64_t digest;
    fails += !run_shape(pkg, &shapes[i], &rng, &digest);
  }
  /* ckpt and states compute the same arithmetic (states only keeps what
   * ckpt recomputes): on the same inputs every output is the same bits */
  static const Shape pairs[2][2] = {
      {{"save modes: ckpt", "softplus", "ckpt", 1, 1, 4096, 4, 3, cu_three, 1, 1, 0},
       {"save modes: states", "softplus", "states", 1, 1, 4096, 4, 3, cu_three, 1, 1, 0}},
      {{"save modes, GVA H=2 HV=6: ckpt", "safe", "ckpt", 1, 1, 700, 2, 2, cu_two, 1, 1, 6},
       {"save modes, GVA H=2 HV=6: states", "safe", "states", 1, 1, 700, 2, 2, cu_two, 1, 1, 6}},
  };
  for (int pi = 0; pi < 2; pi++) {
    if (pairs[pi][0].T > max_t) continue;
    uint64_t d[2], seed2 = rng;
    for (int m = 0; m < 2; m++) {
      uint64_t r = seed2; /* the same inputs for both */
      fails += !run_shape(pkg, &pairs[pi][m], &r, &d[m]);
    }
    printf("save modes ckpt and states on the same inputs%s: outputs %s\n", pi ? " (GVA)" : "",
           d[0] == d[1] ? "bitwise identical  PASS" : "DIFFER  FAIL");
    fails += d[0] != d[1];
  }
  cake_package_free(pkg);
  printf("test_kda_train: %s (%d failing shape%s)\n", fails ? "FAIL" : "PASS", fails, fails == 1 ? "" : "s");
  return fails ? 1 : 0;
}
