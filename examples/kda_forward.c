/* kda_forward.c - run the KDA forward from C on random data: load the
 * package, plan (documents from cu_seqlens on the host), allocate exactly the
 * workspace the plan asks for, launch, print a checksum of o and ht and the
 * time per call. Through the typed launchers that `cakec --emit=header`
 * generates from specs/kda/kda_fwd.cake (build/gen/kda_fwd.h): options as
 * enums, dims, tensors by field.
 *
 *   build/examples/kda_forward build/package [T] [H] [gate] [ndocs] [HV]
 *   (gate: safe | softplus | external; HV value heads, a multiple of H
 *   (grouped value heads); defaults 32768 16 safe 1 H)
 */
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kda_fwd.h"

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

static unsigned g_seed = 12345;
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

static cake_tensor T3(CUdeviceptr p, cake_dtype dt, long long a, long long b, long long c) {
  cake_tensor t = {p, dt, 3, {a, b, c}, {0}};
  return t;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "build/package";
  long long T = argc > 2 ? atoll(argv[2]) : 32768, H = argc > 3 ? atoll(argv[3]) : 16, K = 128, V = 128;
  const char *gate = argc > 4 ? argv[4] : "safe";
  long long N = argc > 5 ? atoll(argv[5]) : 1;
  long long HV = argc > 6 ? atoll(argv[6]) : H; /* q, k: H heads; v, g, beta, o, ht: HV */
  int external = !strcmp(gate, "external");
  /* the variant: the gate given, q/k norm and beta logits in the kernel, vblock
   * left to the spec's prefer clause (16 columns when 32 would not fill the GPU) */
  kda_fwd_options opt = {.qk_norm = KDA_FWD_QK_NORM_TRUE, .beta_logits = KDA_FWD_BETA_LOGITS_TRUE};
  if (!strcmp(gate, "safe")) opt.gate = KDA_FWD_GATE_SAFE;
  else if (!strcmp(gate, "softplus")) opt.gate = KDA_FWD_GATE_SOFTPLUS;
  else if (external) opt.gate = KDA_FWD_GATE_EXTERNAL;
  else {
    fprintf(stderr, "kda_forward: unknown gate '%s' (safe, softplus or external)\n", gate);
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
  int32_t *cu = malloc(sizeof(int32_t) * (size_t)(N + 1));
  for (long long d = 0; d <= N; d++) cu[d] = (int32_t)(T * d / N); /* N documents of about T/N tokens */
  kda_fwd_dims dims = {.T = T, .H = H, .HV = HV, .cu_seqlens = cu, .ndocs = N};
  cake_plan *plan;
  CK(kda_fwd_plan(pkg, &opt, &dims, NULL, &plan)); /* params (scale, lower_bound): their defaults */
  size_t ws;
  CK(cake_plan_workspace_bytes(plan, &ws));

  size_t nq = (size_t)(T * H * K), nv = (size_t)(T * HV * V), ns = (size_t)(N * HV * K * V);
  size_t nmax = nq > nv ? nq : nv;
  unsigned short *h16 = malloc(nmax * 2);
  float *h32 = malloc((nmax > ns ? nmax : ns) * 4);
  CUdeviceptr q, k, v, g, beta, A_log, dt_bias, o, ht, work;
  CU(cuMemAlloc(&q, nq * 2));
  CU(cuMemAlloc(&k, nq * 2));
  CU(cuMemAlloc(&v, nv * 2));
  CU(cuMemAlloc(&g, nv * 4));
  CU(cuMemAlloc(&beta, (size_t)(T * HV) * 2));
  CU(cuMemAlloc(&A_log, (size_t)HV * 4));
  CU(cuMemAlloc(&dt_bias, (size_t)(HV * K) * 4));
  CU(cuMemAlloc(&o, nv * 2));
  CU(cuMemAlloc(&ht, ns * 4));
  CU(cuMemAlloc(&work, ws ? ws : 256));
  CUdeviceptr *bf[] = {&q, &k, &v};
  for (int i = 0; i < 3; i++) {
    size_t n = i < 2 ? nq : nv;
    for (size_t j = 0; j < n; j++) h16[j] = bf16(frand());
    CU(cuMemcpyHtoD(*bf[i], h16, n * 2));
  }
  if (external) {
    for (size_t j = 0; j < nv; j++) h32[j] = -0.1f * (1.0f + frand());
    CU(cuMemcpyHtoD(g, h32, nv * 4));
  } else {
    for (size_t j = 0; j < nv; j++) h16[j] = bf16(frand());
    CU(cuMemcpyHtoD(g, h16, nv * 2));
  }
  for (long long j = 0; j < T * HV; j++) h16[j] = bf16(frand());
  CU(cuMemcpyHtoD(beta, h16, (size_t)(T * HV) * 2));
  for (long long j = 0; j < HV; j++) h32[j] = 0.0f;
  CU(cuMemcpyHtoD(A_log, h32, (size_t)HV * 4));
  for (long long j = 0; j < HV * K; j++) h32[j] = -2.0f;
  CU(cuMemcpyHtoD(dt_bias, h32, (size_t)(HV * K) * 4));

  kda_fwd_tensors t = {
      .q = T3(q, CAKE_BF16, T, H, K),
      .k = T3(k, CAKE_BF16, T, H, K),
      .v = T3(v, CAKE_BF16, T, HV, V),
      .g = T3(g, external ? CAKE_F32 : CAKE_BF16, T, HV, K),
      .beta = {beta, CAKE_BF16, 2, {T, HV}, {0}},
      /* the external gate's variant has no A_log, dt_bias: left unbound (data 0) */
      .A_log = {external ? 0 : A_log, CAKE_F32, 1, {HV}, {0}},
      .dt_bias = {external ? 0 : dt_bias, CAKE_F32, 2, {HV, K}, {0}},
      .h0 = {0, CAKE_F32, 4, {N, HV, K, V}, {0}}, /* absent: the state starts at zero */
      .o = T3(o, CAKE_BF16, T, HV, V),
      .ht = {ht, CAKE_F32, 4, {N, HV, K, V}, {0}},
  };
  CK(kda_fwd_launch_fwd(plan, &t, work, ws, 0, 0, NULL)); /* warm-up: loads the module */
  CUevent e0, e1;
  CU(cuEventCreate(&e0, 0));
  CU(cuEventCreate(&e1, 0));
  CU(cuEventRecord(e0, NULL));
  int reps = 20;
  for (int i = 0; i < reps; i++) CK(kda_fwd_launch_fwd(plan, &t, work, ws, 0, 0, NULL));
  CU(cuEventRecord(e1, NULL));
  CU(cuEventSynchronize(e1));
  float ms;
  CU(cuEventElapsedTime(&ms, e0, e1));
  CU(cuMemcpyDtoH(h16, o, nv * 2));
  CU(cuMemcpyDtoH(h32, ht, ns * 4));
  double so = 0, sh = 0;
  for (size_t j = 0; j < nv; j++) {
    unsigned u = (unsigned)h16[j] << 16;
    float f;
    memcpy(&f, &u, 4);
    so += fabs(f);
  }
  for (size_t j = 0; j < ns; j++) sh += fabs(h32[j]);
  printf("kda_forward: T=%lld H=%lld HV=%lld docs=%lld gate=%s workspace %zu bytes\n", T, H, HV, N, gate, ws);
  printf("  sum|o| = %.6e  sum|ht| = %.6e  %.3f ms per call\n", so, sh, ms / reps);
  cake_plan_free(plan);
  cake_package_free(pkg);
  free(cu), free(h16), free(h32);
  return 0;
}
