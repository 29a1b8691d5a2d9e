/* test_emu.c - the PTX emulator through the driver API, on small PTX
 * modules with known results: a warp sum by shuffles, bf16 packing, the
 * moment an asynchronous copy lands, and the faults it must report (an
 * access outside every allocation, past shared memory, misaligned, a
 * deadlocked warp, a shared-memory race, an instruction it does not
 * know). A fault is sticky for
 * the process, as on a GPU, so each fault case runs in a child process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>

#define HEAD ".version 8.8\n.target sm_90a\n.address_size 64\n.extern .shared .align 16 .b8 smem[];\n"

/* out[tid] = sum over the warp of (tid + 1), by five butterfly shuffles */
static const char warp_sum[] = HEAD
    ".visible .entry k(.param .u64 .ptr .global .align 1 k_param_0)\n{\n"
    "  .reg .pred %p<2>;\n  .reg .b32 %r<8>;\n  .reg .b64 %rd<4>;\n"
    "  ld.param.b64 %rd1, [k_param_0];\n  mov.u32 %r1, %tid.x;\n  add.s32 %r2, %r1, 1;\n"
    "  shfl.sync.bfly.b32 %r3, %r2, 16, 31, -1;\n  add.s32 %r2, %r2, %r3;\n"
    "  shfl.sync.bfly.b32 %r3, %r2, 8, 31, -1;\n  add.s32 %r2, %r2, %r3;\n"
    "  shfl.sync.bfly.b32 %r3, %r2, 4, 31, -1;\n  add.s32 %r2, %r2, %r3;\n"
    "  shfl.sync.bfly.b32 %r3, %r2, 2, 31, -1;\n  add.s32 %r2, %r2, %r3;\n"
    "  shfl.sync.bfly.b32 %r3, %r2, 1, 31, -1;\n  add.s32 %r2, %r2, %r3;\n"
    "  mul.wide.u32 %rd2, %r1, 4;\n  add.s64 %rd3, %rd1, %rd2;\n  st.global.b32 [%rd3], %r2;\n  ret;\n}\n";

/* out = {cvt.rn.bf16x2.f32 (1.0, -2.0), the f32 of the low half} */
static const char bf16_pack[] = HEAD
    ".visible .entry k(.param .u64 .ptr .global .align 1 k_param_0)\n{\n"
    "  .reg .b16 %rs<3>;\n  .reg .b32 %r<6>;\n  .reg .b64 %rd<2>;\n"
    "  ld.param.b64 %rd1, [k_param_0];\n"
    "  cvt.rn.bf16x2.f32 %r1, 0f3F800000, 0fC0000000;\n  mov.b32 {%rs1, %rs2}, %r1;\n"
    "  cvt.f32.bf16 %r2, %rs1;\n  st.global.v2.b32 [%rd1], {%r1, %r2};\n  ret;\n}\n";

/* edge cases of conversions and loads, into out[0..4] (32-bit words, the
 * last two one 64-bit word): f16 subnormals, bfe.s32 past the top bit, and
 * a signed 32-bit load into a 64-bit register (sign-extended) */
static const char edges[] = HEAD
    ".visible .entry k(.param .u64 .ptr .global .align 1 k_param_0, .param .u64 .ptr .global .align 1 k_param_1)\n{\n"
    "  .reg .b16 %rs<3>;\n  .reg .b32 %r<6>;\n  .reg .b64 %rd<4>;\n"
    "  ld.param.b64 %rd1, [k_param_0];\n  ld.param.b64 %rd2, [k_param_1];\n"
    "  cvt.rn.f16.f32 %rs1, 0f38000000;\n  cvt.u32.u16 %r1, %rs1;\n"   /* 2^-15 */
    "  cvt.rn.f16.f32 %rs2, 0f33800000;\n  cvt.u32.u16 %r2, %rs2;\n"   /* 2^-24 */
    "  bfe.s32 %r3, -2147483648, 31, 4;\n"
    "  ld.global.s32 %rd3, [%rd1];\n"
    "  st.global.v2.b32 [%rd2], {%r1, %r2};\n  st.global.b32 [%rd2+8], %r3;\n  st.global.b64 [%rd2+16], %rd3;\n"
    "  ret;\n}\n";

/* a cp.async of 16 bytes into shared memory; the first word read before
 * the wait (what the block found there) and after it */
static const char async_copy[] = HEAD
    ".visible .entry k(.param .u64 .ptr .global .align 1 k_param_0, .param .u64 .ptr .global .align 1 k_param_1)\n{\n"
    "  .reg .b32 %r<6>;\n  .reg .b64 %rd<3>;\n"
    "  ld.param.b64 %rd1, [k_param_0];\n  ld.param.b64 %rd2, [k_param_1];\n  mov.b32 %r1, smem;\n"
    "  cp.async.cg.shared.global [%r1], [%rd1], 16, 16;\n  cp.async.commit_group;\n"
    "  ld.shared.b32 %r2, [%r1];\n  cp.async.wait_group 0;\n  ld.shared.b32 %r3, [%r1];\n"
    "  st.global.v2.b32 [%rd2], {%r2, %r3};\n  ret;\n}\n";

/* a store 4 bytes past the end of the buffer of 64 bytes */
static const char out_of_bounds[] = HEAD
    ".visible .entry k(.param .u64 .ptr .global .align 1 k_param_0)\n{\n"
    "  .reg .b32 %r<2>;\n  .reg .b64 %rd<2>;\n"
    "  ld.param.b64 %rd1, [k_param_0];\n  st.global.b32 [%rd1+64], 7;\n  ret;\n}\n";

/* a shared load past the 256 bytes the launch gives */
static const char shared_past[] = HEAD
    ".visible .entry k(.param .u64 .ptr .global .align 1 k_param_0)\n{\n"
    "  .reg .b32 %r<3>;\n  .reg .b64 %rd<2>;\n"
    "  ld.param.b64 %rd1, [k_param_0];\n  mov.b32 %r1, smem;\n  ld.shared.b32 %r2, [%r1+256];\n"
    "  st.global.b32 [%rd1], %r2;\n  ret;\n}\n";

/* a 16-byte load from an address 8 bytes into the buffer */
static const char misaligned[] = HEAD
    ".visible .entry k(.param .u64 .ptr .global .align 1 k_param_0)\n{\n"
    "  .reg .b32 %r<5>;\n  .reg .b64 %rd<2>;\n"
    "  ld.param.b64 %rd1, [k_param_0];\n  ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd1+8];\n  ret;\n}\n";

/* lane 0 waits at a block barrier, the other lanes of its warp at a shuffle */
static const char deadlock[] = HEAD
    ".visible .entry k(.param .u64 .ptr .global .align 1 k_param_0)\n{\n"
    "  .reg .pred %p<2>;\n  .reg .b32 %r<4>;\n"
    "  mov.u32 %r1, %tid.x;\n  setp.eq.s32 %p1, %r1, 0;\n  @%p1 bra $L__BB0_2;\n"
    "  shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;\n  ret;\n"
    "$L__BB0_2:\n  bar.sync 0;\n  ret;\n}\n";

/* thread 0 stores a word to shared memory, thread 33 (another warp) loads
 * it; BARRIER is "bar.sync 0;" or nothing */
#define HANDOFF(BARRIER)                                                                                     \
  HEAD ".visible .entry k(.param .u64 .ptr .global .align 1 k_param_0)\n{\n"                               \
       "  .reg .pred %p<3>;\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<2>;\n"                                     \
       "  ld.param.b64 %rd1, [k_param_0];\n  mov.u32 %r1, %tid.x;\n  mov.b32 %r2, smem;\n"                  \
       "  setp.ne.s32 %p1, %r1, 0;\n  @%p1 bra $L__BB0_1;\n  st.shared.b32 [%r2], 5;\n$L__BB0_1:\n"       \
       "  " BARRIER "\n  setp.ne.s32 %p2, %r1, 33;\n  @%p2 bra $L__BB0_2;\n  ld.shared.b32 %r3, [%r2];\n" \
       "  st.global.b32 [%rd1], %r3;\n$L__BB0_2:\n  ret;\n}\n"
static const char handoff_race[] = HANDOFF("");
static const char handoff_ok[] = HANDOFF("bar.sync 0;");

static const char unknown_op[] = HEAD
    ".visible .entry k(.param .u64 .ptr .global .align 1 k_param_0)\n{\n"
    "  .reg .b32 %r<3>;\n  prmt.b32 %r1, %r1, %r2, 0x3210;\n  ret;\n}\n";

/* the module of the last load (unloaded by the next, and by done()) */
static CUmodule g_module;

static void done(void) {
  if (g_module) assert_int_equal(cuModuleUnload(g_module), CUDA_SUCCESS);
  g_module = NULL;
}

static CUfunction load(const char *ptx) {
  CUcontext ctx;
  done();
  assert_int_equal(cuInit(0), CUDA_SUCCESS);
  assert_int_equal(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
  assert_int_equal(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  assert_int_equal(cuModuleLoadData(&g_module, ptx), CUDA_SUCCESS);
  CUfunction f = NULL;
  CUresult r = cuModuleGetFunction(&f, g_module, "k");
  return r == CUDA_SUCCESS ? f : NULL;
}

static CUresult launch(CUfunction f, unsigned threads, unsigned shared, CUdeviceptr a, CUdeviceptr b) {
  void *params[] = {&a, &b};
  return cuLaunchKernel(f, 1, 1, 1, threads, 1, 1, shared, NULL, params, NULL);
}

static void test_warp_sum(void **state) {
  (void)state;
  CUfunction f = load(warp_sum);
  assert_non_null(f);
  CUdeviceptr out;
  assert_int_equal(cuMemAlloc(&out, 64 * 4), CUDA_SUCCESS);
  assert_int_equal(launch(f, 64, 0, out, 0), CUDA_SUCCESS);
  int32_t h[64];
  assert_int_equal(cuMemcpyDtoH(h, out, sizeof h), CUDA_SUCCESS);
  for (int i = 0; i < 64; i++) assert_int_equal(h[i], i < 32 ? 528 : 1552); /* 1..32 and 33..64 */
  assert_int_equal(cuMemFree(out), CUDA_SUCCESS);
  done();
}

static void test_bf16_pack(void **state) {
  (void)state;
  CUfunction f = load(bf16_pack);
  assert_non_null(f);
  CUdeviceptr out;
  assert_int_equal(cuMemAlloc(&out, 8), CUDA_SUCCESS);
  assert_int_equal(launch(f, 1, 0, out, 0), CUDA_SUCCESS);
  uint32_t h[2];
  assert_int_equal(cuMemcpyDtoH(h, out, sizeof h), CUDA_SUCCESS);
  assert_int_equal(h[0], 0x3f80c000u); /* the first source in the upper half */
  assert_int_equal(h[1], 0xc0000000u);
  assert_int_equal(cuMemFree(out), CUDA_SUCCESS);
  done();
}

static void test_edges(void **state) {
  (void)state;
  CUfunction f = load(edges);
  assert_non_null(f);
  CUdeviceptr in, out;
  int32_t minus5 = -5;
  assert_int_equal(cuMemAlloc(&in, 4), CUDA_SUCCESS);
  assert_int_equal(cuMemAlloc(&out, 24), CUDA_SUCCESS);
  assert_int_equal(cuMemcpyHtoD(in, &minus5, 4), CUDA_SUCCESS);
  assert_int_equal(launch(f, 1, 0, in, out), CUDA_SUCCESS);
  uint32_t h[6];
  assert_int_equal(cuMemcpyDtoH(h, out, sizeof h), CUDA_SUCCESS);
  assert_int_equal(h[0], 0x0200u); /* 2^-15: a subnormal half */
  assert_int_equal(h[1], 0x0001u); /* 2^-24: the smallest */
  assert_int_equal(h[2], 0xffffffffu);
  uint64_t w;
  memcpy(&w, &h[4], 8);
  assert_true(w == 0xfffffffffffffffbull);
  assert_int_equal(cuMemFree(in), CUDA_SUCCESS);
  assert_int_equal(cuMemFree(out), CUDA_SUCCESS);
  done();
}

static void test_async_copy_lands_at_wait(void **state) {
  (void)state;
  CUfunction f = load(async_copy);
  assert_non_null(f);
  CUdeviceptr src, out;
  uint32_t words[4] = {0x12345678u, 1, 2, 3};
  assert_int_equal(cuMemAlloc(&src, 16), CUDA_SUCCESS);
  assert_int_equal(cuMemAlloc(&out, 8), CUDA_SUCCESS);
  assert_int_equal(cuMemcpyHtoD(src, words, 16), CUDA_SUCCESS);
  assert_int_equal(launch(f, 1, 16, src, out), CUDA_SUCCESS);
  uint32_t h[2];
  assert_int_equal(cuMemcpyDtoH(h, out, sizeof h), CUDA_SUCCESS);
  assert_int_equal(h[0], 0xffffffffu); /* not there before the wait */
  assert_int_equal(h[1], 0x12345678u);
  assert_int_equal(cuMemFree(src), CUDA_SUCCESS);
  assert_int_equal(cuMemFree(out), CUDA_SUCCESS);
  done();
}

/* runs the PTX in a child; returns the launch's result there, or -1 when
 * the module did not load */
static int child(const char *ptx, unsigned threads, unsigned shared) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    CUfunction f = load(ptx);
    if (!f) _exit(255);
    CUdeviceptr buf;
    if (cuMemAlloc(&buf, 64)) _exit(254);
    CUresult r = launch(f, threads, shared, buf, 0);
    /* sticky: a later call fails the same way */
    CUdeviceptr more;
    if (r != CUDA_SUCCESS && cuMemAlloc(&more, 4) != r) _exit(253);
    _exit((int)r & 0xff);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  return WEXITSTATUS(st) == 255 ? -1 : WEXITSTATUS(st); /* the result's low byte */
}

static void test_faults(void **state) {
  (void)state;
  assert_int_equal(child(out_of_bounds, 1, 0), CUDA_ERROR_ILLEGAL_ADDRESS & 0xff);
  assert_int_equal(child(misaligned, 1, 0), CUDA_ERROR_ILLEGAL_ADDRESS & 0xff);
  assert_int_equal(child(shared_past, 1, 256), CUDA_ERROR_LAUNCH_FAILED & 0xff);
  assert_int_equal(child(deadlock, 32, 0), CUDA_ERROR_LAUNCH_FAILED & 0xff);
  assert_int_equal(child(unknown_op, 1, 0), -1);
  assert_int_equal(child(handoff_race, 64, 16), CUDA_ERROR_LAUNCH_FAILED & 0xff);
  assert_int_equal(child(handoff_ok, 64, 16), CUDA_SUCCESS);
  assert_int_equal(child(warp_sum, 16, 0), CUDA_SUCCESS); /* and the harness itself passes a good kernel */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_warp_sum),
      cmocka_unit_test(test_bf16_pack),
      cmocka_unit_test(test_edges),
      cmocka_unit_test(test_async_copy_lands_at_wait),
      cmocka_unit_test(test_faults),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
