/* kda_train_step.c - KDA training steps from C: the training forward, a
 * loss on the host (0.5 ||o - target||^2), its gradient uploaded as do, the
 * backward, and a gradient step on the gate parameters A_log and dt_bias.
 * The loss goes down step by step; each step prints it with the gradient
 * norms and the time of the forward and the backward. Through the typed
 * launchers that `cakec --emit=header` generates from
 * specs/kda/kda_train.cake (build/gen/kda_train.h): one tensor struct for
 * both entries, the same plan, workspace and saved area for both.
 *
 *   build/examples/kda_train_step build/package [T] [H] [steps] [save]
 *   (save: ckpt | states; defaults 4096 4 5 ckpt)
 */
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kda_train.h"

#define CU(x)                                                  \
  do {                                                         \
    CUresult r_ = (x);                                         \
    if (r_) {                                                  \
      const char *m_;                                          \
      cuGetErrorString(r_, &m_);                               \
      fprintf(stderr, "%s: %s\n", #x, m_);                     \
      return 1;                                                \
    }                                                          \
  } while (0)
#define CK(x)                                                  \
  do {                                                         \
    if ((x) != CAKE_OK) {                                      \
      fprintf(stderr, "%s: %s\n", #x, cake_last_error());      \
      return 1;                                                \
    }                                                          \
  } while (0)

static unsigned g_seed = 2024;
static float frand(void) { /* uniform in [-1, 1) */
  g_seed = g_seed * 1664525u + 1013904223u;
  return (float)(g_seed >> 8) / 8388608.0f - 1.0f;
}
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

static cake_tensor tensor(CUdeviceptr p, cake_dtype dt, int rank, long long a, long long b, long long c) {
  cake_tensor t = {p, dt, rank, {a, b, c}, {0}};
  return t;
}

/* a device buffer of n bf16 values uniform in [-scale, scale) */
static CUresult upload_bf16(CUdeviceptr *d, size_t n, float scale) {
  unsigned short *h = malloc(n * 2);
  for (size_t i = 0; i < n; i++) h[i] = bf16(scale * frand());
  CUresult r = cuMemAlloc(d, n * 2);
  if (!r) r = cuMemcpyHtoD(*d, h, n * 2);
  free(h);
  return r;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "build/package";
  long long T = argc > 2 ? atoll(argv[2]) : 4096, H = argc > 3 ? atoll(argv[3]) : 4, K = 128, V = 128;
  int steps = argc > 4 ? atoi(argv[4]) : 5;
  const char *save = argc > 5 ? argv[5] : "ckpt";
  /* the variant: the softplus gate (Kimi Linear's layer), q/k norm and beta
   * logits in the kernel, the save mode given */
  kda_train_options opt = {.gate = KDA_TRAIN_GATE_SOFTPLUS, .qk_norm = KDA_TRAIN_QK_NORM_TRUE,
                           .beta_logits = KDA_TRAIN_BETA_LOGITS_TRUE};
  if (!strcmp(save, "ckpt")) opt.save = KDA_TRAIN_SAVE_CKPT;
  else if (!strcmp(save, "states")) opt.save = KDA_TRAIN_SAVE_STATES;
  else {
    fprintf(stderr, "kda_train_step: unknown save mode '%s' (ckpt or states)\n", save);
    return 2;
  }
  CUdevice dev;
  CUcontext ctx;
  CU(cuInit(0));
  CU(cuDeviceGet(&dev, 0));
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));

  cake_package *pkg;
  CK(cake_package_load(dir, NULL, &pkg));
  kda_train_dims dims = {.T = T, .H = H, .HV = H}; /* one document; as many value heads as key heads */
  cake_plan *plan;
  CK(kda_train_plan(pkg, &opt, &dims, NULL, &plan)); /* params (scale, lower_bound): their defaults */
  size_t ws, sv;
  CK(cake_plan_workspace_bytes(plan, &ws));
  CK(cake_plan_saved_bytes(plan, &sv));
  printf("kda_train (%s): T=%lld H=%lld workspace %zu B, saved %zu B\n", save, T, H, ws, sv);

  size_t nq = (size_t)(T * H * K), nb = (size_t)(T * H);
  CUdeviceptr q, k, v, g, beta, o, dout, dq, dk, dv, dg, dbeta, A_log, dt_bias, dA, ddt, work, saved;
  CU(upload_bf16(&q, nq, 1.0f));
  CU(upload_bf16(&k, nq, 1.0f));
  CU(upload_bf16(&v, nq, 1.0f));
  CU(upload_bf16(&g, nq, 2.0f));
  CU(upload_bf16(&beta, nb, 2.0f));
  CU(cuMemAlloc(&o, nq * 2));
  CU(cuMemAlloc(&dout, nq * 2));
  CU(cuMemAlloc(&dq, nq * 2));
  CU(cuMemAlloc(&dk, nq * 2));
  CU(cuMemAlloc(&dv, nq * 2));
  CU(cuMemAlloc(&dg, nq * 4));
  CU(cuMemAlloc(&dbeta, nb * 4));
  CU(cuMemAlloc(&A_log, (size_t)H * 4));
  CU(cuMemAlloc(&dt_bias, (size_t)(H * K) * 4));
  CU(cuMemAlloc(&dA, (size_t)H * 4));
  CU(cuMemAlloc(&ddt, (size_t)(H * K) * 4));
  CU(cuMemAlloc(&work, ws ? ws : 256));
  CU(cuMemAlloc(&saved, sv ? sv : 256));
  /* the parameters we train, and a target the model should reach */
  float *hA = malloc((size_t)H * 4), *hdt = malloc((size_t)(H * K) * 4), *hgA = malloc((size_t)H * 4);
  float *hgdt = malloc((size_t)(H * K) * 4), *target = malloc(nq * 4);
  unsigned short *ho = malloc(nq * 2), *hdo = malloc(nq * 2);
  for (long long h = 0; h < H; h++) hA[h] = 0.5f;
  for (long long i = 0; i < H * K; i++) hdt[i] = -2.0f;
  for (size_t i = 0; i < nq; i++) target[i] = 0.1f * frand();

  kda_train_tensors t = { /* no h0, ht, dht, dh0: optional, left unbound */
      .q = tensor(q, CAKE_BF16, 3, T, H, K), .k = tensor(k, CAKE_BF16, 3, T, H, K),
      .v = tensor(v, CAKE_BF16, 3, T, H, V), .g = tensor(g, CAKE_BF16, 3, T, H, K),
      .beta = tensor(beta, CAKE_BF16, 2, T, H, 0), .A_log = tensor(A_log, CAKE_F32, 1, H, 0, 0),
      .dt_bias = tensor(dt_bias, CAKE_F32, 2, H, K, 0), .o = tensor(o, CAKE_BF16, 3, T, H, V),
      .do_ = tensor(dout, CAKE_BF16, 3, T, H, V), .dq = tensor(dq, CAKE_BF16, 3, T, H, K),
      .dk = tensor(dk, CAKE_BF16, 3, T, H, K), .dv = tensor(dv, CAKE_BF16, 3, T, H, V),
      .dg = tensor(dg, CAKE_F32, 3, T, H, K), .dbeta = tensor(dbeta, CAKE_F32, 2, T, H, 0),
      .dA_log = tensor(dA, CAKE_F32, 1, H, 0, 0), .ddt_bias = tensor(ddt, CAKE_F32, 2, H, K, 0),
  };
  CUevent e0, e1, e2;
  CU(cuEventCreate(&e0, 0));
  CU(cuEventCreate(&e1, 0));
  CU(cuEventCreate(&e2, 0));
  const float lr = 0.5f;
  for (int step = 0; step < steps; step++) {
    CU(cuMemcpyHtoD(A_log, hA, (size_t)H * 4));
    CU(cuMemcpyHtoD(dt_bias, hdt, (size_t)(H * K) * 4));
    CU(cuEventRecord(e0, NULL));
    CK(kda_train_launch_fwd(plan, &t, work, ws, saved, sv, NULL));
    CU(cuMemcpyDtoH(ho, o, nq * 2));
    double loss = 0;
    for (size_t i = 0; i < nq; i++) {
      float d = from_bf16(ho[i]) - target[i];
      loss += 0.5 * (double)d * d;
      hdo[i] = bf16(d / (float)T); /* the mean over tokens */
    }
    CU(cuMemcpyHtoD(dout, hdo, nq * 2));
    CU(cuEventRecord(e1, NULL));
    CK(kda_train_launch_bwd(plan, &t, work, ws, saved, sv, NULL));
    CU(cuEventRecord(e2, NULL));
    CU(cuEventSynchronize(e2));
    float ms_fwd, ms_bwd;
    CU(cuEventElapsedTime(&ms_fwd, e0, e1));
    CU(cuEventElapsedTime(&ms_bwd, e1, e2));
    CU(cuMemcpyDtoH(hgA, dA, (size_t)H * 4));
    CU(cuMemcpyDtoH(hgdt, ddt, (size_t)(H * K) * 4));
    double nA = 0, ndt = 0;
    for (long long h = 0; h < H; h++) nA += (double)hgA[h] * hgA[h], hA[h] -= lr * hgA[h];
    for (long long i = 0; i < H * K; i++) ndt += (double)hgdt[i] * hgdt[i], hdt[i] -= lr * hgdt[i];
    printf("step %d: loss %.6e  |dA_log| %.3e  |ddt_bias| %.3e  backward %.3f ms (forward + host loss %.3f ms)\n",
           step, loss / (double)T, sqrt(nA), sqrt(ndt), ms_bwd, ms_fwd);
  }
  free(hA), free(hdt), free(hgA), free(hgdt), free(target), free(ho), free(hdo);
  cake_plan_free(plan);
  cake_package_free(pkg);
  return 0;
}
