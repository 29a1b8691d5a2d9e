/* gpu_util.h - shared pieces of the GPU test programs: CUDA setup, random
 * inputs, bf16 conversion, poisoning, error metrics. Every CUDA call is
 * checked; a failure ends the test with a message and exit status 1. */
#ifndef CAKE_GPU_UTIL_H
#define CAKE_GPU_UTIL_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "cake_runtime.h"

#define CK(call) gpu_check((call), #call, __FILE__, __LINE__)
#define RT(call) gpu_rt_check((call), #call, __FILE__, __LINE__)
void gpu_check(CUresult rc, const char *what, const char *file, int line);
void gpu_rt_check(cake_status s, const char *what, const char *file, int line);

void gpu_init(void); /* cuInit, device 0, primary context made current */
CUdeviceptr gpu_alloc(size_t bytes);
void gpu_free(CUdeviceptr p);
void gpu_poison(CUdeviceptr p, size_t bytes); /* 0xFF bytes: NaN in every float format */
/* A device copy of `bytes` host bytes (at least 4 allocated: 0 bytes is a valid empty tensor). */
CUdeviceptr gpu_upload(const void *host, size_t bytes);
/* A tensor of rank `rank` with extents a, b, c, d (the unused ones 0). */
cake_tensor gpu_tensor(CUdeviceptr p, cake_dtype dt, int rank, int64_t a, int64_t b, int64_t c, int64_t d);

/* A random stream; the seed comes from the clock unless given (printed for reruns). */
uint64_t rng_seed(int argc, char **argv);
/* The largest T a test runs: `--max-t N`, else `quick_t` with --quick, else
 * no limit (the sanitizers run the tests on their small shapes). */
long long max_tokens(int argc, char **argv, long long quick_t);
double rng_uniform(uint64_t *s); /* [0, 1) */
double rng_normal(uint64_t *s);

uint16_t f32_to_bf16(float f);   /* round to nearest even */
float bf16_to_f32(uint16_t h);

/* RMS(out - ref) / RMS(ref) and the count of non-finite outputs. */
typedef struct ErrStats {
  double err_ratio, max_abs, max_ref;
  long long nonfinite, n;
} ErrStats;
ErrStats err_stats(const double *out, const double *ref, long long n);
/* The same with each element's reference magnitude at least scale[i] (a sum
 * whose terms cancel: the size of its terms, not of the sum, sets the error
 * to expect). */
ErrStats err_stats_scaled(const double *out, const double *ref, const double *scale, long long n);

double gpu_time_ms(void (*fn)(void *), void *ctx, int reps);

/* The value of option `name` in a variant ("a=x,b=y"), copied to buf ("?" when absent). */
const char *variant_value(const char *variant, const char *name, char *buf, size_t n);

#endif
