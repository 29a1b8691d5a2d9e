/* test_run.c - `cakec run` reproduces the interpreter's results from .npy
 * files. Inputs are written as .npy files here (or drawn by cakec and
 * written back with --write-inputs), cakec runs the spec in a child
 * process, and every output it writes is compared bit for bit with the
 * interpreter run in this process on the same inputs, and with the float64
 * references of tests/ref to the spec's accuracy:
 *   - first: T and H taken from the files' shapes, documents from --cu-seqlens;
 *   - the KDA forward: two of test_kda_interp's cases (h0 and three
 *     documents with the safe gate; the external gate);
 *   - KDA training with save = states: the forward's saved states go to the
 *     backward through a .npy file, as `save` tensors do between entries.
 * Usage: test_run PATH/TO/cakec */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interp.h"
#include "spec_fixture.h"
#include "npy.h"
#include "ref_first.h"
#include "ref_kda.h"

enum { K = 128, V = 128 };

static const char *g_cakec;
static char g_dir[64];

static uint64_t g_rng = 0x1234abcd;
static double urand(void) { return fixture_urand(&g_rng); }
static double nrand(void) { return fixture_nrand(&g_rng); }

static char *path_of(const char *sub, const char *name) {
  static char buf[4][512];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 512, "%s/%s/%s.npy", g_dir, sub, name);
  return p;
}

static void write_npy(const char *name, const char *descr, int rank, const int64_t *shape, const double *data) {
  char err[256];
  FILE *f = fopen(path_of("in", name), "wb");
  assert_non_null(f);
  if (npy_write(f, descr, rank, shape, data, err, sizeof err)) fail_msg("%s", err);
  assert_int_equal(fclose(f), 0);
}

/* The file's elements; its shape must be `shape`. */
static double *read_npy(const char *path, int rank, const int64_t *shape) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cakec did not write %s", path);
  NpyHeader h;
  char err[256];
  if (npy_read_header(f, &h, err, sizeof err)) fail_msg("%s: %s", path, err);
  assert_int_equal(h.rank, rank);
  for (int i = 0; i < rank; i++) assert_int_equal(h.shape[i], shape[i]);
  double *d = malloc(sizeof(double) * (size_t)(h.count ? h.count : 1));
  if (npy_read_data(f, &h, d, err, sizeof err)) fail_msg("%s: %s", path, err);
  fclose(f);
  return d;
}

/* cakec with these arguments (NULL-terminated); its exit status. */
static int run_cakec(const char *const *args) {
  const char *argv[64];
  int n = 0;
  argv[n++] = g_cakec;
  for (; *args; args++) argv[n++] = *args;
  argv[n] = NULL;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    execv(g_cakec, (char *const *)argv);
    _exit(127);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void same_bits(const char *what, const double *a, const double *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!(a[i] == b[i] || (isnan(a[i]) && isnan(b[i]))))
      fail_msg("%s: element %zu is %.9g from cakec run, %.9g from the interpreter", what, i, a[i], b[i]);
}

static double ratio(const double *a, const double *b, size_t n) { return fixture_err_ratio(a, b, n); }

/* A spec compiled here, as cakec compiles it. */
static Arena g_arena;
static Diag g_diag;
static CirProgram *compile_spec(const char *path, const CirOptionSet *set) {
  Buf text;
  buf_init(&text);
  assert_int_equal(buf_read_file(&text, path), 0);
  Source *src = arena_alloc(&g_arena, sizeof(Source));
  *src = (Source){path, arena_strndup(&g_arena, text.data, text.len), text.len};
  buf_free(&text);
  Program *ast = cake_parse(&g_arena, &g_diag, src);
  CirProgram *p = ast ? cake_sema(&g_arena, &g_diag, ast, set) : NULL;
  if (!p) fail_msg("%s", g_diag.out.data);
  return p;
}

static int setup(void **st) {
  snprintf(g_dir, sizeof g_dir, "/tmp/cake-test-run-XXXXXX");
  if (!mkdtemp(g_dir)) return -1;
  char sub[128];
  snprintf(sub, sizeof sub, "%s/in", g_dir);
  arena_init(&g_arena);
  diag_init(&g_diag, 20);
  return make_dirs(sub);
}

static int teardown(void **st) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  int rc = system(cmd);
  arena_free(&g_arena);
  diag_free(&g_diag);
  return rc;
}

/* ---- first ---- */

static void first_from_files(void **st) {
  enum { T = 200, H = 2, D = 64 };
  static double x[T * H * D], y[T * H * D], w[H * D], z[T * H * D], ref[T * H * D];
  for (int i = 0; i < T * H * D; i++) x[i] = cake_round_bf16(urand() * 2 - 1), y[i] = cake_round_bf16(urand() * 2 - 1);
  for (int i = 0; i < H * D; i++) w[i] = urand() * 2 - 1; /* a double: the file keeps it, the spec rounds it */
  int64_t sx[3] = {T, H, D}, sw[2] = {H, D};
  write_npy("x", "<f4", 3, sx, x);
  write_npy("y", "<f2", 3, sx, y); /* any float file: the tensor's dtype rounds it */
  write_npy("w", "<f8", 2, sw, w);
  double *y16 = read_npy(path_of("in", "y"), 3, sx); /* what the f16 file holds */
  char out[512], xa[600], ya[600], wa[600];
  snprintf(out, sizeof out, "%s/first", g_dir);
  snprintf(xa, sizeof xa, "x=%s", path_of("in", "x"));
  snprintf(ya, sizeof ya, "y=%s", path_of("in", "y"));
  snprintf(wa, sizeof wa, "w=%s", path_of("in", "w"));
  const char *args[] = {"run", CAKE_SOURCE_DIR "/specs/first/first.cake", "--cu-seqlens", "0,1,70,200",
                        "--in", xa, "--in", ya, "--in", wa, "--out-dir", out, NULL};
  assert_int_equal(run_cakec(args), 0);
  double *zr = read_npy(path_of("first", "z"), 3, sx);

  CirProgram *p = compile_spec(CAKE_SOURCE_DIR "/specs/first/first.cake", NULL);
  long long dims[3] = {T, H}, cu[4] = {0, 1, 70, 200};
  double *tensors[4] = {x, y16, w, z};
  InterpArgs args2 = {dims, cu, 3, NULL, tensors, 0, 0, NULL, NULL, 0, 0};
  char err[256];
  assert_int_equal(cake_interp_run(p, "fwd", &args2, err, sizeof err), 0);
  same_bits("first: z", zr, z, T * H * D);
  int32_t cu32[4] = {0, 1, 70, 200};
  ref_first(T, H, cu32, 3, x, y16, w, ref);
  double e = ratio(zr, ref, T * H * D);
  printf("first from .npy files: error ratio %.3e against the float64 reference\n", e);
  assert_true(e < 1e-2 && e > 1e-6);
  free(y16);
  free(zr);
}

/* ---- the KDA forward ---- */

typedef struct Case {
  const char *name, *options, *vblock;
  int gate_kind, qk_norm, beta_logits;
  int64_t T, H;
  int ndocs;
  long long cu[4];
  const char *cu_text;
  int with_h0;
} Case;

static void kda_forward_case(const Case *cs) {
  int64_t T = cs->T, H = cs->H, N = cs->ndocs;
  size_t nqk = (size_t)(T * H * K), nv = (size_t)(T * H * V), ns = (size_t)(N * H * K * V);
  double *q = calloc(nqk, 8), *k = calloc(nqk, 8), *v = calloc(nv, 8), *g = calloc(nqk, 8), *beta = calloc((size_t)(T * H), 8);
  double *A_log = calloc((size_t)H, 8), *dt_bias = calloc((size_t)(H * K), 8), *h0 = calloc(ns, 8);
  double *o = calloc(nv, 8), *ht = calloc(ns, 8), *ro = calloc(nv, 8), *rht = calloc(ns, 8);
  KdaOptions ko = {cs->gate_kind, cs->qk_norm, cs->beta_logits, 1.0 / sqrt(K), -5.0};
  for (size_t i = 0; i < nqk; i++) {
    q[i] = cake_round_bf16(nrand());
    k[i] = cake_round_bf16(nrand());
    g[i] = cs->gate_kind == KDA_GATE_EXTERNAL ? cake_round_f32(-log1p(exp(-nrand())) / 4) : cake_round_bf16(nrand());
  }
  if (!ko.qk_norm)
    for (size_t t = 0; t < nqk / K; t++) {
      double sq = 0, sk = 0;
      for (int c = 0; c < K; c++) sq += q[t * K + c] * q[t * K + c], sk += k[t * K + c] * k[t * K + c];
      for (int c = 0; c < K; c++)
        q[t * K + c] = cake_round_bf16(q[t * K + c] / sqrt(sq)), k[t * K + c] = cake_round_bf16(k[t * K + c] / sqrt(sk));
    }
  for (size_t i = 0; i < nv; i++) v[i] = cake_round_bf16(nrand());
  for (int64_t i = 0; i < T * H; i++) beta[i] = cake_round_bf16(ko.beta_logits ? nrand() : urand());
  for (int64_t h = 0; h < H; h++) A_log[h] = cake_round_f32(log(1 + 15 * urand()));
  for (int64_t i = 0; i < H * K; i++) {
    double dt = exp(log(0.001) + urand() * (log(0.1) - log(0.001)));
    dt_bias[i] = cake_round_f32(dt + log(-expm1(-dt)));
  }
  for (size_t i = 0; i < ns; i++) h0[i] = cake_round_f32(0.5 * nrand());
  int64_t sqk[3] = {T, H, K}, sv[3] = {T, H, V}, sb[2] = {T, H}, sa[1] = {H}, sd[2] = {H, K}, ss[4] = {N, H, K, V};
  write_npy("q", "<f4", 3, sqk, q);
  write_npy("k", "<f4", 3, sqk, k);
  write_npy("v", "<f4", 3, sv, v);
  write_npy("g", "<f4", 3, sqk, g);
  write_npy("beta", "<f4", 2, sb, beta);
  write_npy("A_log", "<f4", 1, sa, A_log);
  write_npy("dt_bias", "<f4", 2, sd, dt_bias);
  write_npy("h0", "<f4", 4, ss, h0);
  const char *names[] = {"q", "k", "v", "g", "beta", "A_log", "dt_bias", "h0"};
  int nin = cs->gate_kind == KDA_GATE_EXTERNAL ? 5 : 7;
  char ins[8][600], out[512];
  const char *args[40] = {"run", CAKE_SOURCE_DIR "/specs/kda/kda_fwd.cake", "--entry", "fwd", "--option",
                          cs->options, "--cu-seqlens", cs->cu_text, "--out-dir", out};
  int na = 10;
  snprintf(out, sizeof out, "%s/kda", g_dir);
  for (int i = 0; i < 8; i++) {
    if (i >= nin && i < 7) continue;
    if (i == 7 && !cs->with_h0) continue;
    snprintf(ins[i], sizeof ins[i], "%s=%s", names[i], path_of("in", names[i]));
    args[na++] = "--in";
    args[na++] = ins[i];
  }
  args[na] = NULL;
  assert_int_equal(run_cakec(args), 0);
  double *fo = read_npy(path_of("kda", "o"), 3, sv), *fht = read_npy(path_of("kda", "ht"), 4, ss);

  /* the interpreter here, on the same values */
  CirOptionSet set = {{"gate", "qk_norm", "beta_logits", "vblock"}, {0}, 4};
  set.values[0] = cs->gate_kind == KDA_GATE_SAFE ? "safe" : cs->gate_kind == KDA_GATE_SOFTPLUS ? "softplus" : "external";
  set.values[1] = cs->qk_norm ? "true" : "false";
  set.values[2] = cs->beta_logits ? "true" : "false";
  set.values[3] = cs->vblock;
  CirProgram *p = compile_spec(CAKE_SOURCE_DIR "/specs/kda/kda_fwd.cake", &set);
  long long nchunks = cake_interp_chunk_count(p, T, cs->cu, N);
  long long dims[5] = {T, N, H, H, nchunks}; /* T, N, H, HV (= H), chunks */
  double *tensors[32] = {0};
  double *data[8] = {q, k, v, g, beta, A_log, dt_bias, h0};
  for (int i = 0; i < 8; i++) {
    int ti = cir_tensor_index(p, names[i]);
    if (ti >= 0) tensors[ti] = data[i];
  }
  if (!cs->with_h0) tensors[cir_tensor_index(p, "h0")] = NULL;
  tensors[cir_tensor_index(p, "o")] = o;
  tensors[cir_tensor_index(p, "ht")] = ht;
  InterpArgs iargs = {dims, cs->cu, N, NULL, tensors, 0, 0, NULL, NULL, 0, 0};
  assert_int_equal(fixture_run(p, "fwd", &iargs), 0); /* temps allocated there */
  same_bits("kda o", fo, o, nv);
  same_bits("kda ht", fht, ht, ns);
  int32_t cu32[4];
  for (int i = 0; i <= N; i++) cu32[i] = (int32_t)cs->cu[i];
  ref_kda_fwd(&ko, T, H, K, V, cu32, N, q, k, v, g, beta, A_log, dt_bias, cs->with_h0 ? h0 : NULL, ro, rht);
  double eo = ratio(fo, ro, nv), eh = ratio(fht, rht, ns);
  printf("%-40s o %.2e  ht %.2e against the float64 reference\n", cs->name, eo, eh);
  assert_true(eo < 0.005 && eh < 0.005);
  assert_true(eo > 1e-6);
  free(q), free(k), free(v), free(g), free(beta), free(A_log), free(dt_bias), free(h0);
  free(o), free(ht), free(ro), free(rht), free(fo), free(fht);
}

static void kda_forward_safe_gate_h0(void **st) {
  Case c = {"kda_fwd: safe gate, h0, docs 1/69/80", "gate=safe,qk_norm=true,beta_logits=true", "v32", KDA_GATE_SAFE, 1, 1,
            150, 2, 3, {0, 1, 70, 150}, "0,1,70,150", 1};
  kda_forward_case(&c);
}

static void kda_forward_external_gate(void **st) {
  Case c = {"kda_fwd: external gate, beta values, v16", "gate=external,qk_norm=false,beta_logits=false,vblock=v16",
            "v16", KDA_GATE_EXTERNAL, 0, 0, 130, 1, 2, {0, 64, 130}, "0,64,130", 0};
  kda_forward_case(&c);
}

/* ---- KDA training: the saved states travel between entries as a file ---- */

typedef struct Arr {
  const char *name;
  int rank;
  int64_t shape[4];
} Arr;

static void kda_train_states_through_files(void **st) {
  enum { T = 70, H = 1, N = 2, NC = 2 }; /* documents of 63 and 7 tokens: a chunk each */
  char out_f[512], out_b[512];
  snprintf(out_f, sizeof out_f, "%s/train_fwd", g_dir);
  snprintf(out_b, sizeof out_b, "%s/train_bwd", g_dir);
  const char *spec = CAKE_SOURCE_DIR "/specs/kda/kda_train.cake";
  const char *fwd[] = {"run", spec, "--entry", "fwd", "--option", "save=states", "--dim", "H=1", "--dim", "HV=1", "--cu-seqlens",
                       "0,63,70", "--seed", "11", "--write-inputs", "--out-dir", out_f, NULL};
  assert_int_equal(run_cakec(fwd), 0);
  const Arr fin[] = {{"q", 3, {T, H, K}}, {"k", 3, {T, H, K}}, {"v", 3, {T, H, V}}, {"g", 3, {T, H, K}},
                     {"beta", 2, {T, H}}, {"A_log", 1, {H}}, {"dt_bias", 2, {H, K}}};
  char ins[8][600];
  const char *bwd[40] = {"run", spec, "--entry", "bwd", "--option", "save=states", "--cu-seqlens", "0,63,70",
                         "--seed", "12", "--write-inputs", "--out-dir", out_b};
  int na = 13;
  for (int i = 0; i < 7; i++) {
    snprintf(ins[i], sizeof ins[i], "%s=%s", fin[i].name, path_of("train_fwd", fin[i].name));
    bwd[na++] = "--in";
    bwd[na++] = ins[i];
  }
  snprintf(ins[7], sizeof ins[7], "hs=%s", path_of("train_fwd", "hs"));
  bwd[na++] = "--in";
  bwd[na++] = ins[7];
  bwd[na] = NULL;
  assert_int_equal(run_cakec(bwd), 0);

  /* here: the forward, then the backward, on the files' inputs */
  CirOptionSet set = {{"save"}, {"states"}, 1};
  CirProgram *p = compile_spec(spec, &set);
  long long dims[5] = {T, N, H, H, NC}, cu[3] = {0, 63, 70}; /* T, N, H, HV (= H), chunks */
  double *tensors[64] = {0};
  for (int i = 0; i < p->ntensors; i++)
    if (!p->tensors[i]->optional || p->tensors[i]->role == ROLE_OUT)
      tensors[i] = calloc((size_t)cake_interp_numel(p, p->tensors[i], dims), 8);
  for (int i = 0; i < 7; i++) {
    int ti = cir_tensor_index(p, fin[i].name);
    free(tensors[ti]);
    tensors[ti] = read_npy(path_of("train_fwd", fin[i].name), fin[i].rank, fin[i].shape);
  }
  InterpArgs args = {dims, cu, N, NULL, tensors, 0, 0, NULL, NULL, 0, 0};
  char err[512];
  if (cake_interp_run(p, "fwd", &args, err, sizeof err)) fail_msg("%s", err);
  const Arr fout[] = {{"o", 3, {T, H, V}}, {"ht", 4, {N, H, K, V}}, {"hs", 4, {NC, H, K, V}}};
  for (int i = 0; i < 3; i++) {
    double *f = read_npy(path_of("train_fwd", fout[i].name), fout[i].rank, fout[i].shape);
    same_bits(fout[i].name, f, tensors[cir_tensor_index(p, fout[i].name)],
              (size_t)cake_interp_numel(p, p->tensors[cir_tensor_index(p, fout[i].name)], dims));
    free(f);
  }
  int tdo = cir_tensor_index(p, "do");
  free(tensors[tdo]);
  tensors[tdo] = read_npy(path_of("train_bwd", "do"), 3, (int64_t[]){T, H, V});
  if (cake_interp_run(p, "bwd", &args, err, sizeof err)) fail_msg("%s", err);
  const Arr grads[] = {{"dq", 3, {T, H, K}}, {"dk", 3, {T, H, K}}, {"dv", 3, {T, H, V}},   {"dg", 3, {T, H, K}},
                       {"dbeta", 2, {T, H}}, {"dA_log", 1, {H}},   {"ddt_bias", 2, {H, K}}, {"dh0", 4, {N, H, K, V}}};
  double nonzero = 0;
  for (int i = 0; i < 8; i++) {
    double *f = read_npy(path_of("train_bwd", grads[i].name), grads[i].rank, grads[i].shape);
    int ti = cir_tensor_index(p, grads[i].name);
    size_t n = (size_t)cake_interp_numel(p, p->tensors[ti], dims);
    same_bits(grads[i].name, f, tensors[ti], n);
    for (size_t j = 0; j < n; j++) nonzero += fabs(f[j]);
    free(f);
  }
  assert_true(nonzero > 0);
  for (int i = 0; i < p->ntensors; i++) free(tensors[i]);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_run PATH/TO/cakec\n");
    return 2;
  }
  g_cakec = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(first_from_files),
      cmocka_unit_test(kda_forward_safe_gate_h0),
      cmocka_unit_test(kda_forward_external_gate),
      cmocka_unit_test(kda_train_states_through_files),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
