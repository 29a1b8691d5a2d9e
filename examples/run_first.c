/* run_first.c - launch the first program from C: load the package, plan,
 * allocate the workspace the plan asks for, bind tensors, launch, time.
 *
 *   build/examples/run_first build/package [T] [H]
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "cake_runtime.h"

#define CU(x) do { CUresult r_ = (x); if (r_) { const char *m; cuGetErrorString(r_, &m); \
  fprintf(stderr, "%s: %s\n", #x, m); return 1; } } while (0)
#define CK(x) do { cake_status s_ = (x); if (s_) { fprintf(stderr, "%s: %s\n", #x, cake_last_error()); return 1; } } while (0)

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "build/package";
  long long T = argc > 2 ? atoll(argv[2]) : 32768, H = argc > 3 ? atoll(argv[3]) : 16, D = 64;
  CUdevice dev;
  CUcontext ctx;
  CU(cuInit(0));
  CU(cuDeviceGet(&dev, 0));
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));

  cake_package *pkg;
  const cake_program *prog;
  cake_plan *plan;
  CK(cake_package_load(dir, NULL, &pkg));
  CK(cake_package_program(pkg, "first", &prog));
  CK(cake_plan_create(prog, &plan));
  CK(cake_plan_set_dim(plan, "T", T));
  CK(cake_plan_set_dim(plan, "H", H));
  CK(cake_plan_finalize(plan));
  size_t ws;
  CK(cake_plan_workspace_bytes(plan, &ws));

  size_t n = (size_t)(T * H * D);
  unsigned short *hx = malloc(n * 2);
  float *hw = malloc((size_t)(H * D) * 4), *hz = malloc(n * 4);
  unsigned s = 1;
  for (size_t i = 0; i < n; i++) hx[i] = (unsigned short)(0x3c00 + ((s = s * 1103515245u + 12345u) >> 24) % 128);
  for (long long i = 0; i < H * D; i++) hw[i] = 0.01f * (float)(i % 7);
  CUdeviceptr x, w, z, work;
  CU(cuMemAlloc(&x, n * 2));
  CU(cuMemAlloc(&w, (size_t)(H * D) * 4));
  CU(cuMemAlloc(&z, n * 4));
  CU(cuMemAlloc(&work, ws ? ws : 256));
  CU(cuMemcpyHtoD(x, hx, n * 2));
  CU(cuMemcpyHtoD(w, hw, (size_t)(H * D) * 4));
  cake_binding b[] = {
      {"x", {x, CAKE_BF16, 3, {T, H, D}, {0}}},
      {"y", {x, CAKE_BF16, 3, {T, H, D}, {0}}},
      {"w", {w, CAKE_F32, 2, {H, D}, {0}}},
      {"z", {z, CAKE_F32, 3, {T, H, D}, {0}}},
  };
  CK(cake_launch(plan, "fwd", b, 4, work, ws, 0, 0, NULL));
  CUevent e0, e1;
  CU(cuEventCreate(&e0, 0));
  CU(cuEventCreate(&e1, 0));
  CU(cuEventRecord(e0, NULL));
  for (int i = 0; i < 20; i++) CK(cake_launch(plan, "fwd", b, 4, work, ws, 0, 0, NULL));
  CU(cuEventRecord(e1, NULL));
  CU(cuEventSynchronize(e1));
  float ms;
  CU(cuEventElapsedTime(&ms, e0, e1));
  CU(cuMemcpyDtoH(hz, z, n * 4));
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += hz[i];
  printf("first: T=%lld H=%lld checksum %.6e, %.3f ms per launch\n", T, H, sum, ms / 20);
  cake_plan_free(plan);
  cake_package_free(pkg);
  return 0;
}
