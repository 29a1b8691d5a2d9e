/* test_first.c - specs/first/first.cake on the GPU against the float64
 * reference: fresh random inputs per run (the seed is printed), the output
 * poisoned with NaN before each launch (so an unwritten element fails),
 * every element compared, and a second launch compared bit for bit.
 *
 * usage: test_first PACKAGE_DIR [--seed N] [--quick] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "ref_first.h"

enum { D = REF_FIRST_D };

typedef struct Shape {
  const char *name;
  int64_t T, H;
  int ndocs;
  int32_t cu[16];
} Shape;

static int run_shape(const cake_program *prog, const Shape *sh, uint64_t *rng) {
  int64_t T = sh->T, H = sh->H;
  size_t nx = (size_t)(T * H * D), nw = (size_t)(H * D);
  uint16_t *hx = malloc(nx * 2), *hy = malloc(nx * 2);
  float *hw = malloc(nw * 4), *hz = malloc(nx * 4), *hz2 = malloc(nx * 4);
  double *dx = malloc(nx * 8), *dy = malloc(nx * 8), *dw = malloc(nw * 8), *ref = malloc(nx * 8), *out = malloc(nx * 8);
  for (size_t i = 0; i < nx; i++) {
    hx[i] = f32_to_bf16((float)rng_normal(rng));
    hy[i] = f32_to_bf16((float)rng_normal(rng));
    dx[i] = bf16_to_f32(hx[i]);
    dy[i] = bf16_to_f32(hy[i]);
  }
  for (size_t i = 0; i < nw; i++) dw[i] = hw[i] = (float)rng_normal(rng);
  ref_first(T, H, sh->ndocs ? sh->cu : NULL, sh->ndocs, dx, dy, dw, ref);

  cake_plan *plan;
  RT(cake_plan_create(prog, &plan));
  RT(cake_plan_set_dim(plan, "T", T));
  RT(cake_plan_set_dim(plan, "H", H));
  if (sh->ndocs) RT(cake_plan_set_docs(plan, sh->cu, sh->ndocs));
  RT(cake_plan_finalize(plan));
  size_t ws;
  RT(cake_plan_workspace_bytes(plan, &ws));
  CUdeviceptr x = gpu_alloc(nx * 2), y = gpu_alloc(nx * 2), w = gpu_alloc(nw * 4), z = gpu_alloc(nx * 4),
              work = gpu_alloc(ws);
  CK(cuMemcpyHtoD(x, hx, nx * 2));
  CK(cuMemcpyHtoD(y, hy, nx * 2));
  CK(cuMemcpyHtoD(w, hw, nw * 4));
  cake_binding b[4] = {
      {"x", {x, CAKE_BF16, 3, {T, H, D}, {0}}},
      {"y", {y, CAKE_BF16, 3, {T, H, D}, {0}}},
      {"w", {w, CAKE_F32, 2, {H, D}, {0}}},
      {"z", {z, CAKE_F32, 3, {T, H, D}, {0}}},
  };
  float *dst[2] = {hz, hz2};
  for (int run = 0; run < 2; run++) {
    gpu_poison(z, nx * 4);
    RT(cake_launch(plan, "fwd", b, 4, work, ws, 0, 0, NULL));
    CK(cuCtxSynchronize());
    CK(cuMemcpyDtoH(dst[run], z, nx * 4));
  }
  for (size_t i = 0; i < nx; i++) out[i] = hz[i];
  ErrStats e = err_stats(out, ref, (long long)nx);
  int bitwise = memcmp(hz, hz2, nx * 4) == 0;
  int ok = e.nonfinite == 0 && e.err_ratio < 1e-2 && bitwise;
  printf("%-34s T=%-6lld H=%-3lld chunks=%-5lld err_ratio=%.2e max_abs=%.2e (max |ref| %.2e) unwritten/nan=%lld "
         "bitwise=%s  %s\n",
         sh->name, (long long)T, (long long)H, (long long)cake_plan_chunk_count(plan), e.err_ratio, e.max_abs, e.max_ref,
         e.nonfinite, bitwise ? "yes" : "NO", ok ? "PASS" : "FAIL");
  gpu_free(x), gpu_free(y), gpu_free(w), gpu_free(z), gpu_free(work);
  cake_plan_free(plan);
  free(hx), free(hy), free(hw), free(hz), free(hz2), free(dx), free(dy), free(dw), free(ref), free(out);
  return ok;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PACKAGE_DIR [--seed N] [--quick]\n", argv[0]);
    return 2;
  }
  int quick = 0; /* --quick: only the shapes of at most 10000 tokens */
  for (int i = 2; i < argc; i++) quick |= !strcmp(argv[i], "--quick");
  uint64_t seed = rng_seed(argc, argv), rng = seed;
  printf("test_first: seed %llu\n", (unsigned long long)seed);
  gpu_init();
  cake_package *pkg;
  RT(cake_package_load(argv[1], NULL, &pkg));
  const cake_program *prog;
  RT(cake_package_program(pkg, "first", &prog));
  static const Shape shapes[] = {
      {"ragged end (1000 = 15x64 + 40)", 1000, 3, 0, {0}},
      {"one full chunk", 64, 1, 0, {0}},
      {"one token", 1, 2, 0, {0}},
      {"4097 tokens, 8 heads", 4097, 8, 0, {0}},
      {"packed docs 1,63,64,65,807,2000", 3000, 4, 6, {0, 1, 64, 128, 193, 1000, 3000}},
      {"T=32768 H=16", 32768, 16, 0, {0}},
  };
  int fails = 0;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    if (!quick || shapes[i].T <= 10000) fails += !run_shape(prog, &shapes[i], &rng);
  cake_package_free(pkg);
  printf("test_first: %s (%d failing shape%s)\n", fails ? "FAIL" : "PASS", fails, fails == 1 ? "" : "s");
  return fails ? 1 : 0;
}
