/* driver.c - the part of the CUDA driver API that Cake's runtime, tests and
 * examples call, over the PTX emulator (emu.h), built as a libcuda.so.1 to
 * put first on the library path (tests/emu/README.md).
 *
 * The device it shows is an sm_90 with 132 SMs, so the runtime picks the
 * sm_90a kernels. A module's kernels are found by name in the PTX files
 * that CAKE_EMU_PTX lists (colon-separated; `cakec --emit=ptx` output,
 * one "// ---- kernel NAME" section per kernel), or in the module image
 * itself when that is PTX text. Device memory is host memory; every
 * pointer the API takes is checked against the live allocations, as is
 * every global access of a kernel. Work on any stream runs at once, in the
 * order it is issued, one call at a time (a lock): streams and events
 * order nothing further. The first kernel fault is sticky, as on a GPU:
 * later calls fail with the same error, and its message goes to stderr.
 * CAKE_EMU_PROFILE names a file that gets each launch's instruction counts,
 * CAKE_EMU_HOTSPOTS one that gets them instruction by instruction,
 * CAKE_EMU_COPIES one that gets a hash of every copy back to the host. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu.h"

/* the runtime asks for the unversioned names by dlsym */
#undef cuEventElapsedTime
#undef cuDevicePrimaryCtxRelease
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b);
CUresult cuDevicePrimaryCtxRelease(CUdevice d);

#define EXPORT __attribute__((visibility("default")))

typedef struct {
  uint64_t lo, hi;
  int host; /* cuMemAllocHost */
} Alloc;

typedef struct Func {
  char name[128];
  EmuKernel *k;
  int max_dynamic_shared;
  struct Func *next;
} Func;

typedef struct Module {
  char *text; /* a PTX image, or NULL */
  size_t len;
  Func *funcs;
} Module;

typedef struct {
  char *text;
  size_t len;
} PtxFile;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static Alloc *g_allocs;
static int g_nallocs, g_capallocs;
static int g_inited;
static CUresult g_sticky = CUDA_SUCCESS;
static PtxFile *g_ptx;
static int g_nptx = -1;
static int g_ctx_token; /* the one context's handle points here */
static __thread CUcontext g_current;

#define LOCK() pthread_mutex_lock(&g_lock)
#define UNLOCK() pthread_mutex_unlock(&g_lock)
#define RETURN(x)     \
  do {                \
    CUresult r_ = (x); \
    UNLOCK();         \
    return r_;        \
  } while (0)

static void say(const char *fmt, const char *a) {
  fprintf(stderr, "cuda emulator: ");
  fprintf(stderr, fmt, a);
  fprintf(stderr, "\n");
}

static CUresult ready(void) {
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  return g_sticky;
}

/* ---- allocations, sorted by address ---- */

static int find_alloc(uint64_t a) {
  int lo = 0, hi = g_nallocs - 1;
  while (lo <= hi) {
    int m = (lo + hi) / 2;
    if (a < g_allocs[m].lo) hi = m - 1;
    else if (a >= g_allocs[m].hi) lo = m + 1;
    else return m;
  }
  return -1;
}

static int mem_find(void *ctx, uint64_t a, uint64_t *lo, uint64_t *hi) {
  (void)ctx;
  int i = find_alloc(a);
  if (i < 0) return -1;
  *lo = g_allocs[i].lo;
  *hi = g_allocs[i].hi;
  return 0;
}

static int range_ok(uint64_t a, size_t n) {
  if (!n) return 1;
  int i = find_alloc(a);
  return i >= 0 && a + n <= g_allocs[i].hi && a + n >= a;
}

static CUresult alloc(uint64_t *out, size_t n, int host) {
  void *p = NULL;
  if (posix_memalign(&p, 256, n ? n : 1)) return CUDA_ERROR_OUT_OF_MEMORY;
  memset(p, host ? 0 : 0xff, n ? n : 1); /* fresh device memory reads as NaN */
  if (g_nallocs == g_capallocs) {
    int c = g_capallocs ? 2 * g_capallocs : 64;
    Alloc *q = realloc(g_allocs, (size_t)c * sizeof *q);
    if (!q) {
      free(p);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    g_allocs = q, g_capallocs = c;
  }
  uint64_t a = (uint64_t)(uintptr_t)p;
  int i = g_nallocs;
  while (i > 0 && g_allocs[i - 1].lo > a) {
    g_allocs[i] = g_allocs[i - 1];
    i--;
  }
  g_allocs[i] = (Alloc){a, a + (n ? n : 1), host};
  g_nallocs++;
  *out = a;
  return CUDA_SUCCESS;
}

static CUresult release(uint64_t a, int host) {
  int i = find_alloc(a);
  if (i < 0 || g_allocs[i].lo != a || g_allocs[i].host != host) return CUDA_ERROR_INVALID_VALUE;
  free((void *)(uintptr_t)a);
  memmove(&g_allocs[i], &g_allocs[i + 1], (size_t)(g_nallocs - i - 1) * sizeof *g_allocs);
  g_nallocs--;
  return CUDA_SUCCESS;
}

/* ---- PTX ---- */

static void load_ptx_files(void) {
  if (g_nptx >= 0) return;
  g_nptx = 0;
  const char *env = getenv("CAKE_EMU_PTX");
  if (!env || !*env) return;
  char *list = strdup(env);
  for (char *f = strtok(list, ":"); f; f = strtok(NULL, ":")) {
    size_t n;
    char *t = emu_read_file(f, &n);
    if (!t) {
      say("cannot read %s (CAKE_EMU_PTX)", f);
      continue;
    }
    g_ptx = realloc(g_ptx, (size_t)(g_nptx + 1) * sizeof *g_ptx);
    g_ptx[g_nptx++] = (PtxFile){t, n};
  }
  free(list);
}

/* the module text that declares entry NAME, from the CAKE_EMU_PTX files */
static int find_ptx(const char *name, const char **text, size_t *len) {
  char pat[200];
  snprintf(pat, sizeof pat, ".entry %s(", name);
  for (int i = 0; i < g_nptx; i++) {
    const char *e = strstr(g_ptx[i].text, pat);
    if (!e) continue;
    emu_ptx_module(g_ptx[i].text, e, text, len);
    return 0;
  }
  return -1;
}

/* ---- the API ---- */

EXPORT CUresult cuInit(unsigned flags) {
  LOCK();
  if (flags) RETURN(CUDA_ERROR_INVALID_VALUE);
  g_inited = 1;
  RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuDriverGetVersion(int *v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = CUDA_VERSION;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *n) {
  LOCK();
  if (!g_inited) RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!n) RETURN(CUDA_ERROR_INVALID_VALUE);
  *n = 1;
  RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  LOCK();
  if (!g_inited) RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!d || ordinal != 0) RETURN(CUDA_ERROR_INVALID_DEVICE);
  *d = 0;
  RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  if (!name || len <= 0 || d != 0) return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "Cake PTX emulator (sm_90)");
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
  if (!v || d != 0) return CUDA_ERROR_INVALID_VALUE;
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = 233472; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
  default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  LOCK();
  if (!g_inited) RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!c || d != 0) RETURN(CUDA_ERROR_INVALID_VALUE);
  *c = (CUcontext)&g_ctx_token;
  RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { return d == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }
EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice d) { return cuDevicePrimaryCtxRelease_v2(d); }

EXPORT CUresult cuCtxSetCurrent(CUcontext c) {
  if (c && c != (CUcontext)&g_ctx_token) return CUDA_ERROR_INVALID_CONTEXT;
  g_current = c;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *c) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
  *c = g_current;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *d) {
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  if (!g_current) return CUDA_ERROR_INVALID_CONTEXT;
  *d = 0;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void) {
  LOCK();
  RETURN(ready());
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  LOCK();
  CUresult r = ready();
  if (r) RETURN(r);
  if (!p || !n) RETURN(CUDA_ERROR_INVALID_VALUE);
  uint64_t a;
  if ((r = alloc(&a, n, 0))) RETURN(r);
  *p = (CUdeviceptr)a;
  RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  LOCK();
  if (!g_inited) RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!p) RETURN(CUDA_SUCCESS);
  RETURN(release((uint64_t)p, 0));
}

EXPORT CUresult cuMemAllocHost_v2(void **p, size_t n) {
  LOCK();
  CUresult r = ready();
  if (r) RETURN(r);
  if (!p || !n) RETURN(CUDA_ERROR_INVALID_VALUE);
  uint64_t a;
  if ((r = alloc(&a, n, 1))) RETURN(r);
  *p = (void *)(uintptr_t)a;
  RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuMemFreeHost(void *p) {
  LOCK();
  if (!p) RETURN(CUDA_SUCCESS);
  RETURN(release((uint64_t)(uintptr_t)p, 1));
}

static CUresult copy(void *dst, const void *src, size_t n) {
  CUresult r = ready();
  if (r) return r;
  if (n) memmove(dst, src, n);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n) {
  LOCK();
  if (n && (!h || !range_ok(d, n))) RETURN(CUDA_ERROR_INVALID_VALUE);
  RETURN(copy((void *)(uintptr_t)d, h, n));
}

/* CAKE_EMU_COPIES=FILE: a line per device-to-host copy, its size and a
 * 64-bit FNV-1a hash of its bytes. Two runs of a test with the same --seed
 * on two packages (say, before and after a compiler change) read back the
 * same bytes exactly when the two files are the same. */
static void trace_copy(const void *h, size_t n) {
  const char *path = getenv("CAKE_EMU_COPIES");
  if (!path || !*path) return;
  uint64_t x = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) x = (x ^ ((const unsigned char *)h)[i]) * 1099511628211ull;
  FILE *f = fopen(path, "a");
  if (!f) {
    say("cannot append to %s (CAKE_EMU_COPIES)", path);
    return;
  }
  fprintf(f, "%zu %016llx\n", n, (unsigned long long)x);
  fclose(f);
}

EXPORT CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n) {
  LOCK();
  if (n && (!h || !range_ok(d, n))) RETURN(CUDA_ERROR_INVALID_VALUE);
  CUresult r = copy(h, (const void *)(uintptr_t)d, n);
  if (r == CUDA_SUCCESS) trace_copy(h, n);
  RETURN(r);
}

EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  LOCK();
  if (n && (!range_ok(d, n) || !range_ok(s, n))) RETURN(CUDA_ERROR_INVALID_VALUE);
  RETURN(copy((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n));
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, CUstream st) {
  (void)st;
  return cuMemcpyHtoD_v2(d, h, n);
}
EXPORT CUresult cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, CUstream st) {
  (void)st;
  return cuMemcpyDtoH_v2(h, d, n);
}
EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
  (void)st;
  return cuMemcpyDtoD_v2(d, s, n);
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  LOCK();
  CUresult r = ready();
  if (r) RETURN(r);
  if (n && !range_ok(d, n)) RETURN(CUDA_ERROR_INVALID_VALUE);
  if (n) memset((void *)(uintptr_t)d, v, n);
  RETURN(CUDA_SUCCESS);
}
EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream st) {
  (void)st;
  return cuMemsetD8_v2(d, v, n);
}

EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr p) {
  LOCK();
  if (!data) RETURN(CUDA_ERROR_INVALID_VALUE);
  int i = find_alloc((uint64_t)p);
  if (i < 0) RETURN(CUDA_ERROR_INVALID_VALUE);
  switch (a) {
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *(unsigned *)data = g_allocs[i].host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    break;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = 0; break;
  default: RETURN(CUDA_ERROR_INVALID_VALUE);
  }
  RETURN(CUDA_SUCCESS);
}

/* ---- modules and launches ---- */

EXPORT CUresult cuModuleLoadData(CUmodule *m, const void *image) {
  LOCK();
  CUresult r = ready();
  if (r) RETURN(r);
  if (!m || !image) RETURN(CUDA_ERROR_INVALID_VALUE);
  Module *mod = calloc(1, sizeof *mod);
  if (!mod) RETURN(CUDA_ERROR_OUT_OF_MEMORY);
  const char *t = image;
  if ((t[0] == '/' || t[0] == '.') && strstr(t, ".entry")) { /* PTX text */
    mod->len = strlen(t);
    mod->text = strdup(t);
  }
  *m = (CUmodule)mod;
  RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuModuleUnload(CUmodule m) {
  LOCK();
  if (!m) RETURN(CUDA_ERROR_INVALID_VALUE);
  Module *mod = (Module *)m;
  for (Func *f = mod->funcs, *n; f; f = n) {
    n = f->next;
    emu_kernel_free(f->k);
    free(f);
  }
  free(mod->text);
  free(mod);
  RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuModuleGetFunction(CUfunction *fn, CUmodule m, const char *name) {
  LOCK();
  CUresult r = ready();
  if (r) RETURN(r);
  if (!fn || !m || !name) RETURN(CUDA_ERROR_INVALID_VALUE);
  Module *mod = (Module *)m;
  for (Func *f = mod->funcs; f; f = f->next)
    if (!strcmp(f->name, name)) {
      *fn = (CUfunction)f;
      RETURN(CUDA_SUCCESS);
    }
  const char *text = NULL;
  size_t len = 0;
  char pat[200];
  snprintf(pat, sizeof pat, ".entry %s(", name);
  if (mod->text && strstr(mod->text, pat)) text = mod->text, len = mod->len;
  else {
    load_ptx_files();
    if (find_ptx(name, &text, &len)) {
      say("no PTX for the kernel %s: CAKE_EMU_PTX must list the output of `cakec --emit=ptx` for the package", name);
      RETURN(CUDA_ERROR_NOT_FOUND);
    }
  }
  char err[600];
  EmuKernel *k = emu_kernel_parse(text, len, name, err, sizeof err);
  if (!k) {
    say("%s", err);
    RETURN(CUDA_ERROR_INVALID_PTX);
  }
  Func *f = calloc(1, sizeof *f);
  if (!f) {
    emu_kernel_free(k);
    RETURN(CUDA_ERROR_OUT_OF_MEMORY);
  }
  snprintf(f->name, sizeof f->name, "%s", name);
  f->k = k;
  f->max_dynamic_shared = 49152;
  f->next = mod->funcs;
  mod->funcs = f;
  *fn = (CUfunction)f;
  RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuFuncSetAttribute(CUfunction fn, CUfunction_attribute a, int v) {
  LOCK();
  if (!fn) RETURN(CUDA_ERROR_INVALID_HANDLE);
  if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) RETURN(CUDA_SUCCESS);
  if (v < 0 || v > 232448) RETURN(CUDA_ERROR_INVALID_VALUE);
  ((Func *)fn)->max_dynamic_shared = v;
  RETURN(CUDA_SUCCESS);
}

/* CAKE_EMU_PROFILE=FILE: a line per launch appended to FILE (tab-separated,
 * a header first when the file is new): the kernel, its blocks, threads per
 * block, shared bytes, then what its threads executed, summed over the grid
 * (emu.h's counts, in that order) */
static void profile(const char *name, const unsigned grid[3], const unsigned block[3], unsigned shared,
                    const uint64_t counts[EMU_COUNTS]) {
  const char *path = getenv("CAKE_EMU_PROFILE");
  if (!path || !*path) return;
  FILE *f = fopen(path, "a");
  if (!f) {
    say("cannot append to %s (CAKE_EMU_PROFILE)", path);
    return;
  }
  if (ftell(f) == 0)
    fprintf(f, "kernel\tblocks\tthreads\tshared\tinstructions\tmma\tldmatrix\tshfl\tbar\tld_shared\tst_shared"
               "\tld_global\tst_global\tcp_async\n");
  fprintf(f, "%s\t%llu\t%u\t%u", name, (unsigned long long)grid[0] * grid[1] * grid[2], block[0] * block[1] * block[2],
          shared);
  for (int c = 0; c < EMU_COUNTS; c++) fprintf(f, "\t%llu", (unsigned long long)counts[c]);
  fprintf(f, "\n");
  fclose(f);
}

/* CAKE_EMU_HOTSPOTS=FILE: per launch, "# kernel NAME, N threads" and then a
 * line per instruction that ran: times run per thread (all threads' count /
 * N), its PTX line, its text */
static void hotspots(const char *path, const Func *f, const uint64_t *per_ins, uint64_t threads) {
  FILE *fp = fopen(path, "a");
  if (!fp) {
    say("cannot append to %s (CAKE_EMU_HOTSPOTS)", path);
    return;
  }
  fprintf(fp, "# kernel %s, %llu threads\n", f->name, (unsigned long long)threads);
  for (int i = 0; i < emu_kernel_nins(f->k); i++)
    if (per_ins[i])
      fprintf(fp, "%.3f\t%d\t%s\n", (double)per_ins[i] / (double)threads, emu_kernel_ins_line(f->k, i),
              emu_kernel_ins_text(f->k, i));
  fclose(fp);
}

EXPORT CUresult cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, CUstream st, void **params, void **extra) {
  (void)st;
  LOCK();
  CUresult r = ready();
  if (r) RETURN(r);
  if (!fn || extra) RETURN(CUDA_ERROR_INVALID_VALUE);
  Func *f = (Func *)fn;
  if (shared > (unsigned)f->max_dynamic_shared) RETURN(CUDA_ERROR_INVALID_VALUE);
  if (emu_kernel_nparams(f->k) && !params) RETURN(CUDA_ERROR_INVALID_VALUE);
  unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  EmuMemory mem = {mem_find, NULL};
  char err[1200];
  uint64_t counts[EMU_COUNTS];
  const char *hot = getenv("CAKE_EMU_HOTSPOTS");
  uint64_t *per_ins = hot && *hot ? calloc((size_t)emu_kernel_nins(f->k), sizeof *per_ins) : NULL;
  if (emu_launch(f->k, grid, block, shared, params, &mem, counts, per_ins, err, sizeof err)) {
    free(per_ins);
    say("%s", err);
    g_sticky = strstr(err, "outside every allocation") || strstr(err, "misaligned") ? CUDA_ERROR_ILLEGAL_ADDRESS
                                                                                    : CUDA_ERROR_LAUNCH_FAILED;
    RETURN(g_sticky);
  }
  profile(f->name, grid, block, shared, counts);
  if (per_ins) {
    hotspots(hot, f, per_ins, (uint64_t)gx * gy * gz * bx * by * bz);
    free(per_ins);
  }
  RETURN(CUDA_SUCCESS);
}

/* ---- streams and events: everything has run by the time a call returns ---- */

typedef struct {
  struct timespec at;
  int recorded;
} Event;

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned flags) {
  (void)flags;
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  *s = (CUstream)malloc(1);
  return *s ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
  free(s);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamSynchronize(CUstream s) {
  (void)s;
  LOCK();
  RETURN(ready());
}
EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  (void)s, (void)flags;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
EXPORT CUresult cuEventCreate(CUevent *e, unsigned flags) {
  (void)flags;
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  *e = (CUevent)calloc(1, sizeof(Event));
  return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
EXPORT CUresult cuEventDestroy_v2(CUevent e) {
  free(e);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventRecord(CUevent e, CUstream s) {
  (void)s;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  Event *ev = (Event *)e;
  clock_gettime(CLOCK_MONOTONIC, &ev->at);
  ev->recorded = 1;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventSynchronize(CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  LOCK();
  RETURN(ready());
}
EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) {
  if (!ms || !a || !b) return CUDA_ERROR_INVALID_VALUE;
  Event *x = (Event *)a, *y = (Event *)b;
  if (!x->recorded || !y->recorded) return CUDA_ERROR_INVALID_HANDLE;
  *ms = (float)((double)(y->at.tv_sec - x->at.tv_sec) * 1e3 + (double)(y->at.tv_nsec - x->at.tv_nsec) * 1e-6);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { return cuEventElapsedTime_v2(ms, a, b); }

EXPORT CUresult cuGetErrorString(CUresult e, const char **s) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  switch (e) {
  case CUDA_SUCCESS: *s = "no error"; break;
  case CUDA_ERROR_INVALID_VALUE: *s = "invalid argument"; break;
  case CUDA_ERROR_OUT_OF_MEMORY: *s = "out of memory"; break;
  case CUDA_ERROR_NOT_INITIALIZED: *s = "initialization error"; break;
  case CUDA_ERROR_INVALID_DEVICE: *s = "invalid device ordinal"; break;
  case CUDA_ERROR_INVALID_CONTEXT: *s = "invalid device context"; break;
  case CUDA_ERROR_INVALID_PTX: *s = "a PTX JIT compilation failed (emulator: see stderr)"; break;
  case CUDA_ERROR_INVALID_HANDLE: *s = "invalid resource handle"; break;
  case CUDA_ERROR_NOT_FOUND: *s = "named symbol not found (emulator: see stderr)"; break;
  case CUDA_ERROR_ILLEGAL_ADDRESS: *s = "an illegal memory access was encountered (emulator: see stderr)"; break;
  case CUDA_ERROR_LAUNCH_FAILED: *s = "unspecified launch failure (emulator: see stderr)"; break;
  default: *s = "unknown error"; return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
EXPORT CUresult cuGetErrorName(CUresult e, const char **s) { return cuGetErrorString(e, s); }
