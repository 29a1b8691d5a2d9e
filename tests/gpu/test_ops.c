/* test_ops.c - every operation of the language on the GPU against the CPU
 * interpreter (the semantic reference of every op): tests/gpu/ops.cake is
 * parsed here for the interpreter and compiled into the package for the GPU;
 * both run on the same fresh random inputs (seed printed). Outputs are
 * poisoned with NaN first; every element is compared; a second launch must
 * give the same bits.
 *
 * usage: test_ops PACKAGE_DIR [--seed N] [--spec ops.cake] [--interp-only]
 * (ops.cake is found beside the package, or given with --spec PATH;
 * --interp-only runs the CPU half alone and needs no GPU) */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "interp.h"

enum { D = 32, CH = 64, DK = 128 };

typedef struct Out {
  const char *name;
  int i32;
  char rows; /* 'T' or 'N': [T or N, H, last]; 'H': [H, last]; 'S': [H, 5, last] */
  int last;
  double tol; /* on the error ratio; 0 = bit exact */
  double rel; /* when > 0, also on every element's relative error (see rel_error) */
} Out;

/* |got - ref| / max(|ref|, 2^-100): relative, except for values the fast
 * units may flush toward 0 (below 2^-126) */
static double rel_error(const double *got, const double *ref, long long n) {
  double m = 0;
  for (long long i = 0; i < n; i++) {
    double d = fabs(got[i] - ref[i]) / fmax(fabs(ref[i]), 0x1p-100);
    if (!(d <= m)) m = d; /* NaN counts */
  }
  return m;
}

static uint16_t f32_to_f16(float f) { /* round to nearest even; the inputs are small normals */
  _Float16 h = (_Float16)f;
  uint16_t u;
  memcpy(&u, &h, 2);
  return u;
}

static int tensor_index(const CirProgram *p, const char *name) {
  int i = cir_tensor_index(p, name);
  if (i < 0) {
    fprintf(stderr, "FAIL: ops.cake has no tensor %s\n", name);
    exit(1);
  }
  return i;
}

static void release(void **bufs, int n, Buf *text, Arena *arena, Diag *diag) {
  for (int i = 0; i < n; i++) free(bufs[i]);
  buf_free(text);
  arena_free(arena);
  diag_free(diag);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PACKAGE_DIR [--seed N] [--spec ops.cake] [--interp-only]\n", argv[0]);
    return 2;
  }
  const char *spec = NULL;
  for (int i = 2; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--spec")) spec = argv[i + 1];
  char pathbuf[4096];
  if (!spec) {
    snprintf(pathbuf, sizeof pathbuf, "%s/../ops.cake", argv[1]);
    spec = pathbuf;
  }
  uint64_t seed = rng_seed(argc, argv), rng = seed;
  printf("test_ops: seed %llu\n", (unsigned long long)seed);

  /* the interpreter's program */
  Buf text;
  buf_init(&text);
  if (buf_read_file(&text, spec)) {
    fprintf(stderr, "FAIL: cannot read %s: %s\n", spec, strerror(errno));
    return 1;
  }
  Arena arena;
  Diag diag;
  arena_init(&arena);
  diag_init(&diag, 20);
  Source src = {"ops.cake", text.data, text.len};
  Program *ast = cake_parse(&arena, &diag, &src);
  CirProgram *prog = ast ? cake_sema(&arena, &diag, ast, NULL) : NULL;
  if (!prog) {
    fprintf(stderr, "FAIL: %s", diag.out.data);
    return 1;
  }

  const int64_t T = 300, H = 3, N = 3;
  int32_t cu32[4] = {0, 100, 101, 300};
  long long cu[4] = {0, 100, 101, 300};
  size_t nx = (size_t)(T * H * D), ns = (size_t)(N * H * D), nk = (size_t)(T * H * DK);
  /* inputs: x, y on a grid of 1/16 (x * 10 is never an integer), bf16, f16 */
  double *x = malloc(nx * 8), *y = malloc(nx * 8), *xb = malloc(nx * 8), *xh = malloc(nx * 8);
  double *w = malloc((size_t)(H * D) * 8), *s0 = malloc(ns * 8), *sc = malloc(D * 8), *sv = malloc(D * 8);
  float *fx = malloc(nx * 4), *fy = malloc(nx * 4), *fw = malloc((size_t)(H * D) * 4), *fs0 = malloc(ns * 4);
  float *fsc = malloc(D * 4), *fsv = malloc(D * 4);
  uint16_t *hb = malloc(nx * 2), *hh = malloc(nx * 2);
  double *xk = malloc(nk * 8), *yk = malloc(nk * 8);
  float *fxk = malloc(nk * 4), *fyk = malloc(nk * 4);
  for (size_t i = 0; i < nx; i++) {
    fx[i] = (float)((double)((int)(rng_uniform(&rng) * 128) - 64) + 0.5) / 16.0f;
    fy[i] = (float)rng_normal(&rng);
    hb[i] = f32_to_bf16((float)rng_normal(&rng));
    hh[i] = f32_to_f16((float)(0.5 * rng_normal(&rng)));
    x[i] = fx[i], y[i] = fy[i], xb[i] = bf16_to_f32(hb[i]);
    _Float16 t;
    memcpy(&t, &hh[i], 2);
    xh[i] = (double)t;
  }
  for (size_t i = 0; i < nk; i++) xk[i] = fxk[i] = (float)rng_normal(&rng), yk[i] = fyk[i] = (float)rng_normal(&rng);
  for (int64_t i = 0; i < H * D; i++) w[i] = fw[i] = (float)rng_normal(&rng);
  for (size_t i = 0; i < ns; i++) s0[i] = fs0[i] = (float)rng_normal(&rng);
  /* the math kernel's scales, 2^-30 .. 2^5 (x 2^e stays exact), and special values (none of magnitude
   * in (87.3, 745): there the GPU's exp(-|x|) flushes to 0 and the interpreter's, in double, does not,
   * so logsigmoid and silu would code -0 on one side only) */
  static const int sc_exp[D] = {-30, -26, -22, -18, -15, -12, -10, -8, -7, -6, -5, -4, -3, -2, -2, -1,
                                -1,  0,   0,   0,   1,   1,   1,  2,  2,  2,  3,  3,  4,  4,  5,  5};
  static const float sv_val[D] = {NAN,   0.0f,   -0.0f, INFINITY, -INFINITY, -1,  -2,   -0.5f, 1,    0.5f, 1e-30f,
                                  -1e-30f, 1e-10f, -1e-10f, 1e30f, -1e30f,     1000, -1000, 80,    -80,  50,   -50,
                                  20,    -20,    10,    -10,      3,         -3,  -0.999f, 1e-5f, -1e-5f, 0.25f};
  for (int i = 0; i < D; i++) sc[i] = fsc[i] = ldexpf(1.0f, sc_exp[i]), sv[i] = fsv[i] = sv_val[i];

  /* tanh, log1p, expm1, logsigmoid, silu and decay: the tolerance of the approximate ops (1e-5 on the
   * error ratio) on every element's relative error too (scripts/ops_accuracy.py: at most 5.4e-7 expected;
   * decay, with exp's approximation of exponents down to -70 (the floor): up to 3.8e-6). decay_mm and
   * decay_mm_t (grads, m_dmm*) take bf16x3 products off the diagonal blocks (tensor cores; hi and lo
   * halves of both operands): by a model of the lowering in float64 (scripts/dmm_accuracy.py: rounding, exp's
   * approximation, round-to-nearest or truncating mma accumulation alike), about 2.2e-6 under weak
   * decay (m_dmm1, m_dmmt1; grads 1.3e-6), 6.5e-8 under strong decay, where the diagonal blocks
   * (f32) dominate (m_dmm, m_dmmt); the f32 element path: 1.6e-7 to 3.2e-7, bf16 alone: 1.2e-3,
   * 6.7e-4 and 4e-6 */
  static const Out outs[] = {
      {"unary", 0, 'T', D, 1e-5, 0},      {"binary", 0, 'T', D, 1e-6, 0},     {"reduce", 0, 'T', D, 1e-6, 0},
      {"layout", 0, 'T', D, 0, 0},        {"dots", 0, 'T', CH, 1e-3, 0},      {"ints", 1, 'T', D, 0, 0},
      {"state", 0, 'N', D, 1e-6, 0},      {"trace", 0, 'T', D, 1e-6, 0},      {"grads", 0, 'T', D, 1e-4, 0},
      {"total", 0, 'H', D, 1e-6, 0},      {"m_tanh", 0, 'T', D, 1e-5, 1e-5},  {"m_log1p", 0, 'T', D, 1e-5, 1e-5},
      {"m_expm1", 0, 'T', D, 1e-5, 1e-5}, {"m_logsig", 0, 'T', D, 1e-5, 1e-5}, {"m_silu", 0, 'T', D, 1e-5, 1e-5},
      {"m_special", 0, 'S', D, 1e-5, 1e-5}, {"m_decay", 0, 'T', CH, 1e-5, 1e-5}, {"m_decay1", 0, 'T', CH, 1e-5, 1e-5},
      {"m_dmm", 0, 'T', DK, 1e-5, 0},      {"m_dmmt", 0, 'T', DK, 1e-5, 0},   {"m_dmm1", 0, 'T', DK, 1e-5, 0},
      {"m_dmmt1", 0, 'T', DK, 1e-5, 0},   {"m_ddot", 0, 'T', CH, 1e-2, 0},   {"m_ddot1", 0, 'T', CH, 1e-2, 0},
      {"m_inv", 0, 'T', CH, 1e-5, 0},
  };
  enum { NOUT = sizeof outs / sizeof outs[0] };
  long long dims[4] = {T, N, H, 0};
  double *ref[NOUT];
  double **tensors = calloc((size_t)prog->ntensors + 1, sizeof *tensors); /* every tensor of ops.cake */
  tensors[tensor_index(prog, "x")] = x;
  tensors[tensor_index(prog, "y")] = y;
  tensors[tensor_index(prog, "xb")] = xb;
  tensors[tensor_index(prog, "xh")] = xh;
  tensors[tensor_index(prog, "w")] = w;
  tensors[tensor_index(prog, "s0")] = s0;
  tensors[tensor_index(prog, "sc")] = sc;
  tensors[tensor_index(prog, "sv")] = sv;
  tensors[tensor_index(prog, "xk")] = xk;
  tensors[tensor_index(prog, "yk")] = yk;
  long long edims[4] = {T, N, H, cake_interp_chunk_count(prog, T, cu, N)};
  for (int o = 0; o < NOUT; o++) {
    int ti = tensor_index(prog, outs[o].name);
    ref[o] = calloc((size_t)cake_interp_numel(prog, prog->tensors[ti], edims), 8);
    tensors[ti] = ref[o];
  }
  double *temps[8];
  int ntemps = 0;
  for (int i = 0; i < prog->ntensors && ntemps < 8; i++)
    if (prog->tensors[i]->role == ROLE_TEMP)
      temps[ntemps++] = tensors[i] = calloc((size_t)cake_interp_numel(prog, prog->tensors[i], edims), 8);
  InterpArgs args = {dims, cu, N, NULL, tensors, 0, 0, NULL, NULL, 0, 0};
  char err[512];
  int irc = cake_interp_run(prog, "run", &args, err, sizeof err);
  for (int i = 0; i < ntemps; i++) free(temps[i]);
  free(tensors);
  if (irc) {
    fprintf(stderr, "FAIL: interpreter: %s\n", err);
    return 1;
  }

  /* the host buffers, freed before either half returns */
  enum { NHOST = 20 };
  void *host_bufs[NHOST + NOUT] = {x, y, xb, xh, w, s0, fx, fy, fw, fs0, hb, hh, sc, sv, fsc, fsv, xk, yk, fxk, fyk};
  for (int o = 0; o < NOUT; o++) host_bufs[NHOST + o] = ref[o];
  int interp_only = 0;
  for (int i = 2; i < argc; i++) interp_only |= !strcmp(argv[i], "--interp-only");
  if (interp_only) { /* the CPU half alone (a CTest): every output written and finite */
    int bad = 0;
    for (int o = 0; o < NOUT; o++) {
      long long n = cake_interp_numel(prog, prog->tensors[tensor_index(prog, outs[o].name)], edims), nonfinite = 0;
      double l1 = 0;
      for (long long i = 0; i < n; i++) {
        if (!isfinite(ref[o][i])) nonfinite++;
        else l1 += fabs(ref[o][i]);
      }
      printf("%-8s elements %-7lld l1 %.6e nonfinite %lld\n", outs[o].name, n, l1, nonfinite);
      bad += nonfinite > 0 || l1 == 0;
    }
    printf("test_ops (interpreter only): %s\n", bad ? "FAIL" : "PASS");
    release(host_bufs, NHOST + NOUT, &text, &arena, &diag);
    return bad ? 1 : 0;
  }

  /* the GPU */
  gpu_init();
  cake_package *pkg;
  RT(cake_package_load(argv[1], NULL, &pkg));
  const cake_program *gp;
  RT(cake_package_program(pkg, "ops", &gp));
  cake_plan *plan;
  RT(cake_plan_create(gp, &plan));
  RT(cake_plan_set_dim(plan, "T", T));
  RT(cake_plan_set_dim(plan, "H", H));
  RT(cake_plan_set_docs(plan, cu32, N));
  RT(cake_plan_finalize(plan));
  size_t ws;
  RT(cake_plan_workspace_bytes(plan, &ws));
  CUdeviceptr dx = gpu_alloc(nx * 4), dy = gpu_alloc(nx * 4), db = gpu_alloc(nx * 2), dh = gpu_alloc(nx * 2),
              dw = gpu_alloc((size_t)(H * D) * 4), ds0 = gpu_alloc(ns * 4), work = gpu_alloc(ws);
  CUdeviceptr dsc = gpu_alloc(D * 4), dsv = gpu_alloc(D * 4), dxk = gpu_alloc(nk * 4), dyk = gpu_alloc(nk * 4);
  CK(cuMemcpyHtoD(dx, fx, nx * 4));
  CK(cuMemcpyHtoD(dy, fy, nx * 4));
  CK(cuMemcpyHtoD(db, hb, nx * 2));
  CK(cuMemcpyHtoD(dh, hh, nx * 2));
  CK(cuMemcpyHtoD(dw, fw, (size_t)(H * D) * 4));
  CK(cuMemcpyHtoD(ds0, fs0, ns * 4));
  CK(cuMemcpyHtoD(dsc, fsc, D * 4));
  CK(cuMemcpyHtoD(dsv, fsv, D * 4));
  CK(cuMemcpyHtoD(dxk, fxk, nk * 4));
  CK(cuMemcpyHtoD(dyk, fyk, nk * 4));
  cake_binding b[10 + NOUT] = {
      {"x", {dx, CAKE_F32, 3, {T, H, D}, {0}}},   {"y", {dy, CAKE_F32, 3, {T, H, D}, {0}}},
      {"xb", {db, CAKE_BF16, 3, {T, H, D}, {0}}}, {"xh", {dh, CAKE_F16, 3, {T, H, D}, {0}}},
      {"w", {dw, CAKE_F32, 2, {H, D}, {0}}},      {"s0", {ds0, CAKE_F32, 3, {N, H, D}, {0}}},
      {"sc", {dsc, CAKE_F32, 1, {D}, {0}}},       {"sv", {dsv, CAKE_F32, 1, {D}, {0}}},
      {"xk", {dxk, CAKE_F32, 3, {T, H, DK}, {0}}}, {"yk", {dyk, CAKE_F32, 3, {T, H, DK}, {0}}},
  };
  int nb = 10;
  CUdeviceptr dout[NOUT];
  size_t bytes[NOUT];
  for (int o = 0; o < NOUT; o++) {
    int64_t last = outs[o].last, rows = outs[o].rows == 'N' ? N : T;
    cake_dtype dt = outs[o].i32 ? CAKE_I32 : CAKE_F32;
    cake_binding *bd = &b[nb++];
    switch (outs[o].rows) {
      case 'H': *bd = (cake_binding){outs[o].name, {0, dt, 2, {H, last}, {0}}}; break;
      case 'S': *bd = (cake_binding){outs[o].name, {0, dt, 3, {H, 5, last}, {0}}}; break;
      default: *bd = (cake_binding){outs[o].name, {0, dt, 3, {rows, H, last}, {0}}}; break;
    }
    bytes[o] = 4;
    for (int i = 0; i < bd->tensor.rank; i++) bytes[o] *= (size_t)bd->tensor.shape[i];
    bd->tensor.data = dout[o] = gpu_alloc(bytes[o]);
  }
  void *host[2][NOUT];
  for (int run = 0; run < 2; run++) {
    for (int o = 0; o < NOUT; o++) gpu_poison(dout[o], bytes[o]);
    RT(cake_launch(plan, "run", b, nb, work, ws, 0, 0, NULL));
    CK(cuCtxSynchronize());
    for (int o = 0; o < NOUT; o++) {
      host[run][o] = malloc(bytes[o]);
      CK(cuMemcpyDtoH(host[run][o], dout[o], bytes[o]));
    }
  }
  int fails = 0;
  for (int o = 0; o < NOUT; o++) {
    size_t n = bytes[o] / 4;
    double *got = malloc(n * 8);
    long long unwritten = 0;
    for (size_t i = 0; i < n; i++) {
      uint32_t u;
      memcpy(&u, (char *)host[0][o] + 4 * i, 4);
      if (u == 0xFFFFFFFFu) unwritten++;
      if (outs[o].i32) got[i] = (double)(int32_t)u;
      else {
        float f;
        memcpy(&f, &u, 4);
        got[i] = f;
      }
    }
    ErrStats e = err_stats(got, ref[o], (long long)n);
    double rel = rel_error(got, ref[o], (long long)n);
    int bitwise = memcmp(host[0][o], host[1][o], bytes[o]) == 0;
    int ok = e.nonfinite == 0 && unwritten == 0 && bitwise &&
             (outs[o].tol == 0 ? e.max_abs == 0 : e.err_ratio < outs[o].tol) && (outs[o].rel == 0 || rel < outs[o].rel);
    printf("%-9s elements %-7zu err_ratio %.2e max_abs %.2e max_rel %.2e unwritten %lld nan %lld bitwise %s  %s\n",
           outs[o].name, n, e.err_ratio, e.max_abs, rel, unwritten, e.nonfinite, bitwise ? "yes" : "NO",
           ok ? "PASS" : "FAIL");
    fails += !ok;
    free(got);
  }
  printf("test_ops: %s (%d failing output%s)\n", fails ? "FAIL" : "PASS", fails, fails == 1 ? "" : "s");
  for (int o = 0; o < NOUT; o++) {
    gpu_free(dout[o]);
    free(host[0][o]), free(host[1][o]);
  }
  gpu_free(dx), gpu_free(dy), gpu_free(db), gpu_free(dh), gpu_free(dw), gpu_free(ds0), gpu_free(work);
  gpu_free(dsc), gpu_free(dsv), gpu_free(dxk), gpu_free(dyk);
  cake_plan_free(plan);
  cake_package_free(pkg);
  release(host_bufs, NHOST + NOUT, &text, &arena, &diag);
  return fails ? 1 : 0;
}
