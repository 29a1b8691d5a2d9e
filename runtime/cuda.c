/* cuda.c - the CUDA driver, opened with dlopen on first use, and the few
 * driver calls the runtime makes (module loading, launches, copies, the
 * events of the in-process communicator). */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "rt.h"

struct RtCuda {
  CUresult (*Init)(unsigned);
  CUresult (*CtxGetCurrent)(CUcontext *);
  CUresult (*CtxGetDevice)(CUdevice *);
  CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
  CUresult (*ModuleLoadData)(CUmodule *, const void *);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                           void **, void **);
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*EventCreate)(CUevent *, unsigned);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*EventDestroy)(CUevent);
  CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*PointerGetAttribute)(void *, CUpointer_attribute, CUdeviceptr);
  CUresult (*GetErrorString)(CUresult, const char **);
};

static RtCuda g_cuda;
static int g_cuda_state; /* 0 = not tried, 1 = ok, -1 = failed */
static char g_cuda_error[512];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load_driver(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) { /* the reason given is that of libcuda.so.1, the library the driver installs */
    snprintf(g_cuda_error, sizeof g_cuda_error, "the CUDA driver (libcuda.so.1) could not be loaded: %s", dlerror());
    h = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
  }
  if (!h) {
    g_cuda_state = -1;
    return;
  }
#define SYM(field, name)                                                                          \
  do {                                                                                            \
    *(void **)&g_cuda.field = dlsym(h, name);                                                     \
    if (!g_cuda.field) {                                                                          \
      snprintf(g_cuda_error, sizeof g_cuda_error, "the CUDA driver lacks %s (too old?)", name);   \
      g_cuda_state = -1;                                                                          \
      return;                                                                                     \
    }                                                                                             \
  } while (0)
  SYM(Init, "cuInit");
  SYM(CtxGetCurrent, "cuCtxGetCurrent");
  SYM(CtxGetDevice, "cuCtxGetDevice");
  SYM(DeviceGetAttribute, "cuDeviceGetAttribute");
  SYM(ModuleLoadData, "cuModuleLoadData");
  SYM(ModuleUnload, "cuModuleUnload");
  SYM(ModuleGetFunction, "cuModuleGetFunction");
  SYM(FuncSetAttribute, "cuFuncSetAttribute");
  SYM(LaunchKernel, "cuLaunchKernel");
  SYM(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  SYM(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  SYM(MemsetD8Async, "cuMemsetD8Async");
  SYM(EventCreate, "cuEventCreate");
  SYM(EventRecord, "cuEventRecord");
  SYM(EventSynchronize, "cuEventSynchronize");
  SYM(EventElapsedTime, "cuEventElapsedTime");
  SYM(EventDestroy, "cuEventDestroy_v2");
  SYM(StreamWaitEvent, "cuStreamWaitEvent");
  SYM(PointerGetAttribute, "cuPointerGetAttribute");
  SYM(GetErrorString, "cuGetErrorString");
#undef SYM
  CUresult rc = g_cuda.Init(0);
  if (rc != CUDA_SUCCESS) {
    const char *m = NULL;
    g_cuda.GetErrorString(rc, &m);
    snprintf(g_cuda_error, sizeof g_cuda_error, "cuInit failed: %s (no usable GPU?)", m ? m : "unknown error");
    g_cuda_state = -1;
    return;
  }
  g_cuda_state = 1;
}

cake_status rt_cuda(const RtCuda **out) {
  pthread_once(&g_once, load_driver);
  if (g_cuda_state != 1) return rt_fail(CAKE_ERR_CUDA, "%s", g_cuda_error);
  *out = &g_cuda;
  return CAKE_OK;
}

cake_status rt_cuda_check(int rc, const char *what) {
  if (rc == CUDA_SUCCESS) return CAKE_OK;
  const char *m = NULL;
  if (g_cuda.GetErrorString) g_cuda.GetErrorString((CUresult)rc, &m);
  return rt_fail(CAKE_ERR_CUDA, "%s failed: %s (CUDA error %d)", what, m ? m : "unknown error", rc);
}

cake_status rt_current_target(char *buf, size_t n, void **ctx_out, int *device_out) {
  const RtCuda *cu;
  cake_status s = rt_cuda(&cu);
  if (s) return s;
  CUcontext ctx = NULL;
  if ((s = rt_cuda_check(cu->CtxGetCurrent(&ctx), "cuCtxGetCurrent"))) return s;
  if (!ctx) return rt_fail(CAKE_ERR_CUDA, "no current CUDA context: create or retain one on the launching thread");
  CUdevice dev;
  if ((s = rt_cuda_check(cu->CtxGetDevice(&dev), "cuCtxGetDevice"))) return s;
  int major = 0, minor = 0;
  if ((s = rt_cuda_check(cu->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute")))
    return s;
  if ((s = rt_cuda_check(cu->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute")))
    return s;
  snprintf(buf, n, "sm_%d%da", major, minor);
  if (ctx_out) *ctx_out = ctx;
  if (device_out) *device_out = (int)dev;
  return CAKE_OK;
}

cake_status cake_device_target(char *buf, size_t n) {
  if (!buf || n == 0) return rt_fail(CAKE_ERR_ARGUMENT, "cake_device_target: a buffer is required");
  char target[16];
  cake_status s = rt_current_target(target, sizeof target, NULL, NULL);
  if (s) return s;
  if (strlen(target) >= n)
    return rt_fail(CAKE_ERR_ARGUMENT, "cake_device_target: '%s' needs %zu bytes", target, strlen(target) + 1);
  memcpy(buf, target, strlen(target) + 1);
  return CAKE_OK;
}

cake_status cake_device_sm_count(int *n) {
  if (!n) return rt_fail(CAKE_ERR_ARGUMENT, "cake_device_sm_count: n is required");
  char target[16];
  int dev;
  cake_status s = rt_current_target(target, sizeof target, NULL, &dev);
  if (s) return s;
  int v = 0;
  if ((s = rt_cuda_check(g_cuda.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, (CUdevice)dev),
                         "cuDeviceGetAttribute"))) return s;
  *n = v;
  return CAKE_OK;
}

cake_status rt_check_device_pointer(uint64_t ptr, int device, const char *name) {
  const RtCuda *cu;
  cake_status s = rt_cuda(&cu);
  if (s) return s;
  unsigned int mtype = 0;
  CUresult rc = cu->PointerGetAttribute(&mtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)ptr);
  if (rc != CUDA_SUCCESS || (mtype != CU_MEMORYTYPE_DEVICE && mtype != CU_MEMORYTYPE_UNIFIED))
    return rt_fail(CAKE_ERR_TENSOR, "%s: 0x%llx is not device memory known to CUDA", name, (unsigned long long)ptr);
  int ordinal = -1;
  rc = cu->PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)ptr);
  if (rc == CUDA_SUCCESS && ordinal != device)
    return rt_fail(CAKE_ERR_TENSOR, "%s is on device %d, but the current context is on device %d", name, ordinal, device);
  return CAKE_OK;
}

/* The image for `target`: its cubin, or the fatbin (whose PTX the driver compiles). */
static const RtKernel *pick(const RtStage *st, const char *target) {
  for (int i = 0; i < st->nkernels; i++)
    if (!strcmp(st->kernels[i].target, target)) return &st->kernels[i];
  return NULL;
}

cake_status rt_load_stage(cake_package *pkg, RtStage *st, void *ctx, const char *target, void **function) {
  const RtCuda *cu;
  cake_status s = rt_cuda(&cu);
  if (s) return s;
  const RtKernel *k = pick(st, target);
  if (!k) {
    char have[256] = "";
    for (int i = 0; i < st->nkernels; i++) {
      strncat(have, i ? ", " : "", sizeof have - strlen(have) - 1);
      strncat(have, st->kernels[i].target, sizeof have - strlen(have) - 1);
    }
    return rt_fail(CAKE_ERR_NOT_FOUND, "stage '%s' has no kernel for %s (this GPU); the package has %s", st->name,
                   target, have);
  }
  /* the loaded modules are looked up under the lock too: threads may share the package */
  pthread_mutex_lock(&pkg->lock);
  for (int i = 0; i < st->nloaded; i++)
    if (st->loaded[i].ctx == ctx) {
      *function = st->loaded[i].function;
      pthread_mutex_unlock(&pkg->lock);
      return CAKE_OK;
    }
  CUmodule mod = NULL;
  CUfunction fn = NULL;
  /* PTX-only targets load through the fatbin: the driver compiles the PTX. */
  const void *image = strcmp(k->format, "cubin") == 0 || !st->fatbin ? (const void *)k->image : (const void *)st->fatbin;
  s = rt_cuda_check(cu->ModuleLoadData(&mod, image), "cuModuleLoadData");
  if (!s) s = rt_cuda_check(cu->ModuleGetFunction(&fn, mod, k->symbol), "cuModuleGetFunction");
  if (!s && k->shared_bytes > 48 * 1024)
    s = rt_cuda_check(cu->FuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k->shared_bytes),
                      "cuFuncSetAttribute(max dynamic shared memory)");
  if (!s && st->nloaded == RT_MAX_CTX) s = rt_fail(CAKE_ERR_CUDA, "stage '%s' is loaded in too many contexts", st->name);
  if (!s) {
    RtLoaded *l = &st->loaded[st->nloaded++];
    l->ctx = ctx;
    l->module = mod;
    l->function = fn;
    snprintf(l->target, sizeof l->target, "%s", target);
    *function = fn;
  } else if (mod) {
    cu->ModuleUnload(mod);
  }
  pthread_mutex_unlock(&pkg->lock);
  return s;
}

void rt_unload_modules(cake_package *pkg) {
  if (g_cuda_state != 1) return;
  for (int i = 0; i < pkg->nprograms; i++)
    for (int j = 0; j < pkg->programs[i].nstages; j++) {
      RtStage *st = &pkg->programs[i].stages[j];
      for (int k = 0; k < st->nloaded; k++) g_cuda.ModuleUnload((CUmodule)st->loaded[k].module);
      st->nloaded = 0;
    }
}

cake_status rt_launch_kernel(void *function, const unsigned grid[3], unsigned threads, unsigned shared, void *stream,
                             void **params) {
  const RtCuda *cu;
  cake_status s = rt_cuda(&cu);
  if (s) return s;
  return rt_cuda_check(cu->LaunchKernel((CUfunction)function, grid[0], grid[1], grid[2], threads, 1, 1, shared,
                                        (CUstream)stream, params, NULL),
                       "cuLaunchKernel");
}

cake_status rt_memcpy_htod(uint64_t dst, const void *src, size_t n, void *stream) {
  const RtCuda *cu;
  cake_status s = rt_cuda(&cu);
  if (s) return s;
  return rt_cuda_check(cu->MemcpyHtoDAsync((CUdeviceptr)dst, src, n, (CUstream)stream), "cuMemcpyHtoDAsync");
}

cake_status rt_memcpy_dtod(uint64_t dst, uint64_t src, size_t n, void *stream) {
  const RtCuda *cu;
  cake_status s = rt_cuda(&cu);
  if (s) return s;
  return rt_cuda_check(cu->MemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, n, (CUstream)stream),
                       "cuMemcpyDtoDAsync");
}

cake_status rt_memset_zero(uint64_t dst, size_t n, void *stream) {
  const RtCuda *cu;
  cake_status s = rt_cuda(&cu);
  if (s) return s;
  return rt_cuda_check(cu->MemsetD8Async((CUdeviceptr)dst, 0, n, (CUstream)stream), "cuMemsetD8Async");
}

static cake_status event_create(void **event, unsigned flags) {
  const RtCuda *cu;
  cake_status s = rt_cuda(&cu);
  if (s) return s;
  CUevent ev = NULL;
  if ((s = rt_cuda_check(cu->EventCreate(&ev, flags), "cuEventCreate"))) return s;
  *event = ev;
  return CAKE_OK;
}

cake_status rt_event_create(void **event) { return event_create(event, CU_EVENT_DISABLE_TIMING); }
cake_status rt_event_create_timed(void **event) { return event_create(event, CU_EVENT_DEFAULT); }

cake_status rt_event_elapsed(float *ms, void *start, void *end) {
  const RtCuda *cu;
  cake_status s = rt_cuda(&cu);
  if (s) return s;
  if ((s = rt_cuda_check(cu->EventSynchronize((CUevent)end), "cuEventSynchronize"))) return s;
  return rt_cuda_check(cu->EventElapsedTime(ms, (CUevent)start, (CUevent)end), "cuEventElapsedTime");
}

void rt_event_destroy(void *event) {
  if (event && g_cuda_state == 1) g_cuda.EventDestroy((CUevent)event);
}

cake_status rt_event_record(void *event, void *stream) {
  const RtCuda *cu;
  cake_status s = rt_cuda(&cu);
  if (s) return s;
  return rt_cuda_check(cu->EventRecord((CUevent)event, (CUstream)stream), "cuEventRecord");
}

cake_status rt_stream_wait_event(void *stream, void *event) {
  const RtCuda *cu;
  cake_status s = rt_cuda(&cu);
  if (s) return s;
  return rt_cuda_check(cu->StreamWaitEvent((CUstream)stream, (CUevent)event, 0), "cuStreamWaitEvent");
}
