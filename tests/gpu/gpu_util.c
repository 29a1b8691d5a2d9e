#include "gpu_util.h"

#include <limits.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static CUcontext g_ctx;

void gpu_check(CUresult rc, const char *what, const char *file, int line) {
  if (rc == CUDA_SUCCESS) return;
  const char *m = NULL;
  cuGetErrorString(rc, &m);
  fprintf(stderr, "FAIL %s:%d: %s -> %s (%d)\n", file, line, what, m ? m : "?", rc);
  exit(1);
}

void gpu_rt_check(cake_status s, const char *what, const char *file, int line) {
  if (s == CAKE_OK) return;
  fprintf(stderr, "FAIL %s:%d: %s -> %s: %s\n", file, line, what, cake_status_name(s), cake_last_error());
  exit(1);
}

void gpu_init(void) {
  CK(cuInit(0));
  CUdevice dev;
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&g_ctx, dev));
  CK(cuCtxSetCurrent(g_ctx));
  char name[256];
  CK(cuDeviceGetName(name, sizeof name, dev));
  int sms;
  CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  char target[16];
  RT(cake_device_target(target, sizeof target));
  printf("device: %s, %d SMs, target %s\n", name, sms, target);
}

CUdeviceptr gpu_alloc(size_t bytes) {
  CUdeviceptr p = 0;
  CK(cuMemAlloc(&p, bytes ? bytes : 256));
  return p;
}

void gpu_free(CUdeviceptr p) {
  if (p) CK(cuMemFree(p));
}

void gpu_poison(CUdeviceptr p, size_t bytes) { CK(cuMemsetD8(p, 0xFF, bytes)); }

CUdeviceptr gpu_upload(const void *host, size_t bytes) {
  CUdeviceptr d = gpu_alloc(bytes ? bytes : 4);
  if (bytes) CK(cuMemcpyHtoD(d, host, bytes));
  return d;
}

cake_tensor gpu_tensor(CUdeviceptr p, cake_dtype dt, int rank, int64_t a, int64_t b, int64_t c, int64_t d) {
  cake_tensor t = {p, dt, rank, {a, b, c, d}, {0}};
  return t;
}

uint64_t rng_seed(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--seed")) return strtoull(argv[i + 1], NULL, 10);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec;
}

long long max_tokens(int argc, char **argv, long long quick_t) {
  long long t = LLONG_MAX;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick") && quick_t < t) t = quick_t;
    if (!strcmp(argv[i], "--max-t") && i + 1 < argc) return strtoll(argv[i + 1], NULL, 10);
  }
  return t;
}

static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double rng_uniform(uint64_t *s) { return (double)(next(s) >> 11) * (1.0 / 9007199254740992.0); }

double rng_normal(uint64_t *s) {
  double u = rng_uniform(s), v = rng_uniform(s);
  if (u < 1e-300) u = 1e-300;
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return (uint16_t)((u >> 16) | ((u & 0xffff) ? 0x40 : 0));
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

float bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

ErrStats err_stats(const double *out, const double *ref, long long n) { return err_stats_scaled(out, ref, NULL, n); }

ErrStats err_stats_scaled(const double *out, const double *ref, const double *scale, long long n) {
  ErrStats e = {0};
  double se = 0, sr = 0;
  e.n = n;
  for (long long i = 0; i < n; i++) {
    if (!isfinite(out[i])) {
      e.nonfinite++;
      continue;
    }
    double d = out[i] - ref[i];
    se += d * d;
    sr += scale ? fmax(ref[i] * ref[i], scale[i] * scale[i]) : ref[i] * ref[i];
    if (fabs(d) > e.max_abs) e.max_abs = fabs(d);
    if (fabs(ref[i]) > e.max_ref) e.max_ref = fabs(ref[i]);
  }
  e.err_ratio = sr > 0 ? sqrt(se / sr) : sqrt(se);
  return e;
}

double gpu_time_ms(void (*fn)(void *), void *ctx, int reps) {
  CUevent a, b;
  CK(cuEventCreate(&a, CU_EVENT_DEFAULT));
  CK(cuEventCreate(&b, CU_EVENT_DEFAULT));
  fn(ctx); /* warm up */
  CK(cuCtxSynchronize());
  float *t = malloc(sizeof(float) * (size_t)reps);
  for (int i = 0; i < reps; i++) {
    CK(cuEventRecord(a, 0));
    fn(ctx);
    CK(cuEventRecord(b, 0));
    CK(cuEventSynchronize(b));
    CK(cuEventElapsedTime(&t[i], a, b));
  }
  for (int i = 0; i < reps; i++)
    for (int j = i + 1; j < reps; j++)
      if (t[j] < t[i]) {
        float x = t[i];
        t[i] = t[j];
        t[j] = x;
      }
  double med = t[reps / 2];
  free(t);
  cuEventDestroy(a);
  cuEventDestroy(b);
  return med;
}

const char *variant_value(const char *variant, const char *name, char *buf, size_t n) {
  size_t len = strlen(name);
  snprintf(buf, n, "?");
  for (const char *at = variant; at && *at; at = strchr(at, ',') ? strchr(at, ',') + 1 : NULL)
    if (!strncmp(at, name, len) && at[len] == '=') {
      size_t v = strcspn(at + len + 1, ",");
      snprintf(buf, n, "%.*s", (int)v, at + len + 1);
      break;
    }
  return buf;
}
