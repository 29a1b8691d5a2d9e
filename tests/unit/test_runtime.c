/* test_runtime.c - the package, the plan and tensor validation in libcakert,
 * plus its SHA-256 (against OpenSSL) and its JSON reader. A package is
 * compiled with the compiler library into a temporary directory first.
 * The second half treats packages and arguments as untrusted: manifests
 * with bad values, files that are links, FIFOs or directories, NULL
 * arguments, sizes that would wrap (the reliability audit's findings). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cake.h"
#include "manifest_fixture.h"
#include "rt.h"

static char g_pkg[500], g_opts[500]; /* first.cake; tests/lit/diag/options.cake (6 variants) */

static int make_package(void **st) {
  const char *t = getenv("TMPDIR");
  snprintf(g_pkg, sizeof g_pkg, "%s/cake-rt-XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(g_pkg)) return -1;
  strcat(g_pkg, "/pkg");
  cake_source src = {CAKE_SOURCE_DIR "/specs/first/first.cake", NULL};
  cake_options opt = {.emit = "package", .archs = "sm_90a", .output = g_pkg};
  cake_result *r;
  int rc = cake_compile(&src, 1, &opt, &r);
  if (rc) fprintf(stderr, "%s", cake_result_diagnostics(r));
  cake_result_free(r);
  if (rc) return rc;
  snprintf(g_opts, sizeof g_opts, "%.*s/opts", (int)(strlen(g_pkg) - 4), g_pkg);
  src.name = CAKE_SOURCE_DIR "/tests/lit/diag/options.cake";
  opt.output = g_opts;
  rc = cake_compile(&src, 1, &opt, &r);
  if (rc) fprintf(stderr, "%s", cake_result_diagnostics(r));
  cake_result_free(r);
  return rc;
}

/* Compile `spec` (named `name`) for sm_90a into the package directory
 * `sub` beside the test's package; its path goes to `dir`. */
static int compile_spec_text(const char *spec, const char *name, const char *sub, char *dir, size_t n) {
  snprintf(dir, n, "%.*s/%s", (int)(strlen(g_pkg) - 4), g_pkg, sub);
  cake_source src = {name, spec};
  cake_options opt = {.emit = "package", .archs = "sm_90a", .output = dir};
  cake_result *r;
  int rc = cake_compile(&src, 1, &opt, &r);
  if (rc) fprintf(stderr, "%s", cake_result_diagnostics(r));
  cake_result_free(r);
  return rc;
}

static int remove_package(void **st) {
  char dir[500], cmd[1100];
  snprintf(dir, sizeof dir, "%s", g_pkg);
  char *slash = strrchr(dir, '/'); /* the temporary directory holding pkg */
  if (slash) *slash = 0;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void loads_and_describes(void **st) {
  cake_package *pkg;
  assert_int_equal(cake_package_load(g_pkg, NULL, &pkg), CAKE_OK);
  assert_int_equal(cake_package_program_count(pkg), 1);
  assert_string_equal(cake_package_program_name(pkg, 0), "first");
  const cake_program *p;
  assert_int_equal(cake_package_program(pkg, "first", &p), CAKE_OK);
  assert_int_equal(p->ntensors, 4);
  assert_int_equal(p->chunk, 64);
  assert_int_equal(p->nstages, 1);
  assert_int_equal(p->stages[0].threads, 128);
  assert_int_equal(p->stages[0].nkernels, 1);
  assert_string_equal(p->stages[0].kernels[0].target, "sm_90a");
  assert_true(p->stages[0].kernels[0].len > 1000);
  assert_int_equal(cake_package_program(pkg, "nope", &p), CAKE_ERR_NOT_FOUND);
  assert_string_equal(cake_last_error(), "the package has no program 'nope'");
  cake_package_free(pkg);
}

static void plan_layout_and_docs(void **st) {
  cake_package *pkg;
  assert_int_equal(cake_package_load(g_pkg, NULL, &pkg), CAKE_OK);
  const cake_program *prog;
  cake_package_program(pkg, "first", &prog);
  cake_plan *plan;
  assert_int_equal(cake_plan_create(prog, &plan), CAKE_OK);
  assert_int_equal(cake_plan_finalize(plan), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "dim 'T' of program 'first' is not set");
  assert_int_equal(cake_plan_set_dim(plan, "Q", 1), CAKE_ERR_ARGUMENT);
  int64_t dim = -1;
  assert_int_equal(cake_plan_get_dim(plan, "T", &dim), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "dim 'T' is not set");
  assert_int_equal(cake_plan_set_dim(plan, "T", 1000), CAKE_OK);
  assert_int_equal(cake_plan_set_dim(plan, "H", 3), CAKE_OK);
  assert_int_equal(cake_plan_get_dim(plan, "T", &dim), CAKE_OK);
  assert_int_equal(dim, 1000);
  assert_int_equal(cake_plan_get_dim(plan, "Q", &dim), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "program 'first' has no dim 'Q'");
  assert_int_equal(cake_plan_get_dim(plan, "T", NULL), CAKE_ERR_ARGUMENT);
  size_t ws = 0, off, bytes, saved = 1;
  assert_int_equal(cake_plan_workspace_bytes(plan, &ws), CAKE_ERR_PLAN);
  assert_int_equal(cake_plan_saved_bytes(plan, &saved), CAKE_ERR_PLAN);
  assert_int_equal(cake_plan_finalize(plan), CAKE_OK);
  assert_int_equal(cake_plan_saved_bytes(plan, &saved), CAKE_OK);
  assert_int_equal(saved, 0); /* the first program saves nothing */
  assert_int_equal(cake_plan_chunk_count(plan), 16);
  assert_int_equal(cake_plan_workspace_bytes(plan, &ws), CAKE_OK);
  assert_int_equal(ws, 256); /* 16 chunks x 16 bytes, rounded to 256 */
  assert_int_equal(cake_plan_item(plan, "chunk_table", &off, &bytes), CAKE_OK);
  assert_int_equal(off, 0);
  assert_int_equal(bytes, 256);
  /* documents: chunks restart at every document */
  int32_t cu[5] = {0, 1, 65, 65, 1000};
  assert_int_equal(cake_plan_set_docs(plan, cu, 4), CAKE_OK);
  assert_int_equal(cake_plan_finalize(plan), CAKE_OK);
  assert_int_equal(cake_plan_chunk_count(plan), 1 + 1 + 0 + 15);
  assert_int_equal(plan->chunk_table[4 * 1 + 0], 1);
  assert_int_equal(plan->chunk_table[4 * 1 + 1], 65);
  assert_int_equal(plan->chunk_table[4 * 2 + 0], 65);
  assert_int_equal(plan->chunk_table[4 * 2 + 2], 3);
  assert_int_equal(plan->chunk_table[4 * 16 + 1], 1000);
  int32_t bad1[3] = {0, 10, 5};
  assert_int_equal(cake_plan_set_docs(plan, bad1, 2), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "cu_seqlens[2] is 5, less than cu_seqlens[1] = 10 (the offsets must not decrease)");
  int32_t bad2[3] = {0, 10, 999};
  assert_int_equal(cake_plan_set_docs(plan, bad2, 2), CAKE_OK);
  assert_int_equal(cake_plan_finalize(plan), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "cu_seqlens[2] (the last offset) is 999 but the token dim T is 1000");
  cake_plan_free(plan);
  cake_package_free(pkg);
}

static void validation_messages(void **st) {
  cake_package *pkg;
  assert_int_equal(cake_package_load(g_pkg, NULL, &pkg), CAKE_OK);
  const cake_program *prog;
  cake_package_program(pkg, "first", &prog);
  cake_plan *plan;
  cake_plan_create(prog, &plan);
  cake_plan_set_dim(plan, "T", 100);
  cake_plan_set_dim(plan, "H", 2);
  cake_plan_finalize(plan);
  cake_binding b[4] = {
      {"x", {0x1000, CAKE_BF16, 3, {100, 2, 64}, {0}}},
      {"y", {0x2000, CAKE_BF16, 3, {100, 2, 64}, {0}}},
      {"w", {0x3000, CAKE_F32, 2, {2, 64}, {0}}},
      {"z", {0x4000, CAKE_F32, 3, {100, 2, 64}, {0}}},
  };
  assert_int_equal(cake_validate(plan, "fwd", b, 4), CAKE_OK);
  assert_int_equal(cake_validate(plan, "bwd", b, 4), CAKE_ERR_NOT_FOUND);
  b[0].tensor.shape[2] = 32;
  assert_int_equal(cake_validate(plan, "fwd", b, 4), CAKE_ERR_TENSOR);
  assert_string_equal(cake_last_error(), "x: axis 2 (64) has extent 32, expected 64");
  b[0].tensor.shape[2] = 64;
  b[0].tensor.shape[0] = 99;
  assert_int_equal(cake_validate(plan, "fwd", b, 4), CAKE_ERR_TENSOR);
  assert_string_equal(cake_last_error(), "x: axis 0 (T) has extent 99, expected 100");
  b[0].tensor.shape[0] = 100;
  b[1].tensor.dtype = CAKE_F32;
  assert_int_equal(cake_validate(plan, "fwd", b, 4), CAKE_ERR_TENSOR);
  assert_string_equal(cake_last_error(), "y must be bf16, got f32");
  b[1].tensor.dtype = CAKE_BF16;
  b[2].tensor.rank = 3;
  assert_int_equal(cake_validate(plan, "fwd", b, 4), CAKE_ERR_TENSOR);
  assert_string_equal(cake_last_error(), "w must have rank 2, got 3");
  b[2].tensor.rank = 2;
  b[3].tensor.data = 0x4008;
  assert_int_equal(cake_validate(plan, "fwd", b, 4), CAKE_ERR_TENSOR);
  assert_string_equal(cake_last_error(), "z: data pointer 0x4008 is not 16-byte aligned");
  b[3].tensor.data = 0x4000;
  int64_t strides[3] = {128, 64, 1};
  memcpy(b[3].tensor.strides, strides, sizeof strides);
  assert_int_equal(cake_validate(plan, "fwd", b, 4), CAKE_OK); /* explicit dense strides */
  b[3].tensor.strides[0] = 256;
  assert_int_equal(cake_validate(plan, "fwd", b, 4), CAKE_ERR_TENSOR);
  assert_string_equal(cake_last_error(), "z: axis 0 has stride 256, expected 128 (tensors must be contiguous row-major)");
  memset(b[3].tensor.strides, 0, sizeof strides);
  assert_int_equal(cake_validate(plan, "fwd", b, 3), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "entry 'fwd' needs tensor 'z', which is not bound");
  b[3].name = "x";
  assert_int_equal(cake_validate(plan, "fwd", b, 4), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "tensor 'x' is bound twice");
  b[3].name = "zz";
  assert_int_equal(cake_validate(plan, "fwd", b, 4), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "program 'first' has no tensor 'zz'");
  cake_plan_free(plan);
  cake_package_free(pkg);
}

static void integrity_failures(void **st) {
  char copy[600], cmd[2400], file[2000];
  snprintf(copy, sizeof copy, "%s-copy", g_pkg);
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", copy, g_pkg, copy);
  assert_int_equal(system(cmd), 0);
  /* flip one byte of the fatbin */
  char fatbin[600];
  snprintf(cmd, sizeof cmd, "cd '%s' && ls *.fatbin", copy);
  FILE *ls = popen(cmd, "r");
  assert_non_null(ls);
  assert_non_null(fgets(fatbin, sizeof fatbin, ls));
  pclose(ls);
  fatbin[strcspn(fatbin, "\n")] = 0;
  snprintf(file, sizeof file, "%s/%s", copy, fatbin);
  FILE *f = fopen(file, "r+b");
  assert_non_null(f);
  fseek(f, 100, SEEK_SET);
  int c = fgetc(f);
  fseek(f, 100, SEEK_SET);
  fputc(c ^ 1, f);
  fclose(f);
  cake_package *pkg = NULL;
  assert_int_equal(cake_package_load(copy, NULL, &pkg), CAKE_ERR_PACKAGE);
  char want[800];
  snprintf(want, sizeof want, "package file '%s' fails its sha256 check", fatbin);
  assert_non_null(strstr(cake_last_error(), want));
  assert_null(pkg);
  unlink(file);
  assert_int_equal(cake_package_load(copy, NULL, &pkg), CAKE_ERR_PACKAGE);
  snprintf(want, sizeof want, "'%s' listed in the manifest is missing", fatbin);
  assert_non_null(strstr(cake_last_error(), want));
  snprintf(file, sizeof file, "%s/manifest.json", copy);
  f = fopen(file, "wb");
  fputs("{\"schema\": \"other\", \"schema_version\": 1}", f);
  fclose(f);
  assert_int_equal(cake_package_load(copy, NULL, &pkg), CAKE_ERR_PACKAGE);
  assert_non_null(strstr(cake_last_error(), "is not a Cake package manifest"));
  f = fopen(file, "wb");
  fputs("{\"schema\": \"cake.package\",\n \"schema_version\": 1,, }", f);
  fclose(f);
  assert_int_equal(cake_package_load(copy, NULL, &pkg), CAKE_ERR_PACKAGE);
  assert_non_null(strstr(cake_last_error(), "is not valid JSON: line 2, column 22: expected a string"));
  assert_int_equal(cake_package_load("/nonexistent-dir", NULL, &pkg), CAKE_ERR_IO);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", copy);
  assert_int_equal(system(cmd), 0);
}

static void sha256_matches_openssl(void **st) {
  uint8_t buf[1000];
  for (int i = 0; i < 1000; i++) buf[i] = (uint8_t)(i * 131 + 7);
  for (size_t n = 0; n < 300; n += 1) {
    uint8_t a[32], b[32];
    unsigned len;
    rt_sha256(buf, n, a);
    EVP_Digest(buf, n, b, &len, EVP_sha256(), NULL);
    assert_memory_equal(a, b, 32);
  }
  char hex[65];
  rt_sha256_hex("abc", 3, hex);
  assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void json_reader(void **st) {
  JDoc doc = {rt_default_allocator(), NULL, 0, 0};
  char err[128];
  const char *text = "{\"a\": [1, 2.5, -3e2], \"b\": {\"c\": \"x\\u00e9\\n\"}, \"d\": true, \"e\": null}";
  JNode *n = json_parse(&doc, text, strlen(text), err, sizeof err);
  assert_non_null(n);
  const JNode *a = json_get(n, "a");
  assert_int_equal(a->n, 3);
  assert_true(a->items[2]->num == -300);
  assert_string_equal(json_get(json_get(n, "b"), "c")->str, "x\xc3\xa9\n");
  assert_int_equal(json_get(n, "d")->boolean, 1);
  json_free(&doc);
  assert_null(json_parse(&doc, "[1, 2", 5, err, sizeof err));
  assert_string_equal(err, "line 1, column 6: expected ',' or ']'");
  json_free(&doc);
  assert_null(json_parse(&doc, "{} x", 4, err, sizeof err));
  assert_string_equal(err, "line 1, column 4: trailing characters after the document");
  json_free(&doc);
  /* stricter than many readers: the manifest's values must mean one thing */
  static const struct {
    const char *text, *err;
  } bad[] = {
      {"{\"a\": 1, \"a\": 2}", "line 1, column 10: duplicate key \"a\""},
      {"[1e999]", "line 1, column 2: bad number (the JSON form, at most 63 characters, finite)"},
      {"[1.e5]", "line 1, column 2: bad number (the JSON form, at most 63 characters, finite)"},
      {"[-]", "line 1, column 2: bad number (the JSON form, at most 63 characters, finite)"},
      {"[01]", "line 1, column 3: expected ',' or ']'"},
      {"[\"a\\u0000b\"]", "line 1, column 10: \\u0000 in a string"},
      {"[\"\\ud800\"]", "line 1, column 9: unpaired surrogate in a \\u escape"},
      {"[\"\\udc00x\"]", "line 1, column 9: unpaired surrogate in a \\u escape"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_null(json_parse(&doc, bad[i].text, strlen(bad[i].text), err, sizeof err));
    assert_string_equal(err, bad[i].err);
    json_free(&doc);
  }
  const char *pair = "[\"\\ud83d\\ude00\", -0.5e+2]"; /* U+1F600 */
  n = json_parse(&doc, pair, strlen(pair), err, sizeof err);
  assert_non_null(n);
  assert_string_equal(n->items[0]->str, "\xf0\x9f\x98\x80");
  assert_true(n->items[1]->num == -50);
  json_free(&doc);
}

/* ---- untrusted packages: fixtures ---- */

/* The manifests below are written with ' for " (see fixture_q()). SYNTH is a small
 * package of one program that uses every kind of record: a token sequence
 * with documents, each tensor role, both param types, every grid and
 * argument kind, and one kernel whose file ("abc") lies in a subdirectory. */
#define SYNTH_FILE \
  "{'path': 'bin/k.bin', 'sha256': 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', 'bytes': 3}"
#define SYNTH_PROGRAM                                                                                                  \
  "{'name': 'p', 'variant': 'm=a', 'options': [{'name': 'm', 'value': 'a', 'default': 'a', 'values': ['a', 'b']}],"    \
  " 'dims': [{'name': 'T', 'role': 'tokens'}, {'name': 'H', 'role': 'size'}, {'name': 'N', 'role': 'docs'},"           \
  " {'name': 'chunks', 'role': 'chunks'}], 'chunk': 64,"                                                               \
  " 'requires': [{'text': 'H >= 0', 'expr': 'H >= 0', 'loc': 'p.cake:3:9'}],"                                         \
  " 'tensors': [{'name': 'x', 'role': 'in', 'dtype': 'bf16', 'shape': ['T', 'H', 64], 'optional': false},"            \
  " {'name': 'y', 'role': 'out', 'dtype': 'f32', 'shape': ['T', 'H']},"                                                \
  " {'name': 'tmp', 'role': 'temp', 'dtype': 'f32', 'shape': ['T', 'H', 'H'],"                                         \
  " 'live': [{'entry': 'fwd', 'first': 0, 'last': 0}], 'pinned': false},"                                              \
  " {'name': 'sv', 'role': 'save', 'dtype': 'f32', 'shape': ['chunks', 'H']}],"                                        \
  " 'params': [{'name': 'scale', 'dtype': 'f32', 'default': 0.5}, {'name': 'k', 'dtype': 'i32', 'default': 3}],"                     \
  " 'stages': [{'name': 'main', 'block': [128, 1, 1],"                                                                 \
  " 'grid': [{'kind': 'chunks'}, {'kind': 'dim', 'name': 'H'}, {'kind': 'const', 'value': 2}],"                        \
  " 'args': [{'kind': 'buffer', 'name': 'x'}, {'kind': 'buffer', 'name': 'y', 'dtype': 'f32', 'shape': ['T', 'H']}, {'kind': 'workspace', 'name': 'tmp'},"  \
  " {'kind': 'saved', 'name': 'sv'}, {'kind': 'workspace', 'name': 'chunk_table'},"                                    \
  " {'kind': 'workspace', 'name': 'doc_table'}, {'kind': 'parameter', 'name': 'T'},"                                   \
  " {'kind': 'parameter', 'name': 'scale'}],"                                                                          \
  " 'kernels': [{'target': 'sm_90a', 'symbol': 's', 'format': 'cubin', 'file': 'bin/k.bin', 'shared_bytes': 1024}]}]," \
  " 'entries': [{'name': 'fwd', 'stages': ['main']}]}"
#define SYNTH_HEAD "{'schema': 'cake.package', 'schema_version': 2, 'files': [" SYNTH_FILE "], 'programs': ["
static const char SYNTH[] = SYNTH_HEAD SYNTH_PROGRAM "]}";

static int g_seq;

/* A fresh directory under the test's temporary directory. */
static void fresh_dir(char *out, size_t n, const char *tag) {
  snprintf(out, n, "%.*s/%s-%d", (int)(strlen(g_pkg) - 4), g_pkg, tag, g_seq++);
  assert_int_equal(mkdir(out, 0755), 0);
}

/* A package directory holding `manifest` (JSON, not the ' form) and bin/k.bin. */
static void synth_dir(char *dir, size_t n, const char *manifest) {
  fresh_dir(dir, n, "synth");
  fixture_package_dir(dir, manifest);
}

static cake_status load_text(const char *manifest, cake_package **pkg) {
  char dir[700];
  synth_dir(dir, sizeof dir, manifest);
  *pkg = (cake_package *)&g_seq; /* must come back NULL on failure */
  return cake_package_load(dir, NULL, pkg);
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

/* ---- untrusted packages: the manifest (F7, F8) ---- */

static void synthetic_package_loads_and_plans(void **st) {
  char *m = fixture_q(SYNTH);
  cake_package *pkg;
  assert_int_equal(load_text(m, &pkg), CAKE_OK);
  free(m);
  const cake_program *p;
  assert_int_equal(cake_package_program(pkg, "p", &p), CAKE_OK);
  assert_int_equal(p->chunk, 64);
  assert_int_equal(p->ntensors, 4);
  assert_int_equal(p->tensors[2].role, ROLE_TEMP_);
  assert_int_equal(p->stages[0].threads, 128);
  assert_int_equal(p->stages[0].grid[2].value, 2);
  assert_int_equal(p->stages[0].kernels[0].shared_bytes, 1024);
  assert_int_equal(p->stages[0].kernels[0].len, 3);
  cake_plan *plan;
  assert_int_equal(cake_plan_create(p, &plan), CAKE_OK);
  cake_plan_set_dim(plan, "T", 100);
  cake_plan_set_dim(plan, "H", 2);
  assert_int_equal(cake_plan_finalize(plan), CAKE_OK);
  size_t ws, sv, off, bytes;
  assert_int_equal(cake_plan_workspace_bytes(plan, &ws), CAKE_OK);
  assert_int_equal(ws, 256 + 256 + 1792); /* chunk table, doc table, tmp (100 x 2 x 2 x 4 = 1600) */
  assert_int_equal(cake_plan_item(plan, "tmp", &off, &bytes), CAKE_OK);
  assert_int_equal(off, 512);
  assert_int_equal(bytes, 1600);
  assert_int_equal(cake_plan_saved_bytes(plan, &sv), CAKE_OK);
  assert_int_equal(sv, 256); /* sv: 2 chunks x 2 x 4 */
  cake_plan_free(plan);
  cake_package_free(pkg);
}

/* One edit of SYNTH each (in the ' form), and what the loader must say. */
static const struct {
  const char *old, *new_, *msg;
} bad_manifests[] = {
    /* chunk (F7): the audit's rt_chunk0 and rt_chunk_neg, and the undefined conversions */
    {"'chunk': 64", "'chunk': 0", "program 'p' (m=a): 'chunk' is 0; expected a multiple of 16 in [16, 256]"},
    {"'chunk': 64", "'chunk': -64", "'chunk' is -64; expected a multiple of 16 in [16, 256]"},
    {"'chunk': 64", "'chunk': 0.5", "'chunk' is 0.5; expected a multiple of 16"},
    {"'chunk': 64", "'chunk': 24", "'chunk' is 24; expected a multiple of 16"},
    {"'chunk': 64", "'chunk': 272", "'chunk' is 272; expected"},
    {"'chunk': 64", "'chunk': 1e308", "'chunk' is 1e+308; expected"},
    {"'chunk': 64", "'chunk': 9223372036854775807", "'chunk' is 9.22337203685478e+18; expected"},
    {"'chunk': 64", "'chunk': '64'", "'chunk' must be a number, not a string"},
    {"{'name': 'T', 'role': 'tokens'}, {'name': 'H', 'role': 'size'}, {'name': 'N', 'role': 'docs'}, {'name': "
     "'chunks', 'role': 'chunks'}",
     "{'name': 'T', 'role': 'size'}, {'name': 'H', 'role': 'size'}", "'chunk' is 64; a program without a token sequence has chunk 0"},
    /* other numbers (F8) */
    {"'shape': ['T', 'H', 64]", "'shape': ['T', 'H', -1]", "tensor 'x': 'shape[2]' is -1; expected an integer in [1, 2147483647]"},
    {"'shape': ['T', 'H', 64]", "'shape': ['T', 'H', 0]", "tensor 'x': 'shape[2]' is 0; expected"},
    {"'shape': ['T', 'H', 64]", "'shape': ['T', 'H', 2.5]", "tensor 'x': 'shape[2]' is 2.5; expected"},
    {"'shape': ['T', 'H', 64]", "'shape': ['T', 'H', 1e308]", "tensor 'x': 'shape[2]' is 1e+308; expected"},
    {"'shape': ['T', 'H', 64]", "'shape': ['T', 'H', 2147483648]", "tensor 'x': 'shape[2]' is 2147483648; expected"},
    {"'shape': ['T', 'H', 64]", "'shape': ['T', 'Q', 64]", "tensor 'x': 'shape[1]' names 'Q', which is not a dim"},
    {"'shape': ['T', 'H', 64]", "'shape': ['T', 'H', null]", "tensor 'x': 'shape[2]' must be a number, not null"},
    {"'shape': ['T', 'H', 64]", "'shape': [1, 1, 1, 1, 1, 1, 1]", "tensor 'x': 'shape' has 7 axes; at most 6"},
    {"'block': [128, 1, 1]", "'block': [null, 1, 1]", "stage 'main': 'block[0]' must be a number, not null"},
    {"'block': [128, 1, 1]", "'block': ['128', 1, 1]", "stage 'main': 'block[0]' must be a number, not a string"},
    {"'block': [128, 1, 1]", "'block': [100, 1, 1]", "stage 'main': 'block[0]' is 100; expected a multiple of 32"},
    {"'block': [128, 1, 1]", "'block': [2048, 1, 1]", "stage 'main': 'block[0]' is 2048; expected an integer in [32, 1024]"},
    {"'block': [128, 1, 1]", "'block': [1e308, 1, 1]", "'block[0]' is 1e+308; expected"},
    {"'block': [128, 1, 1]", "'block': [128, 2, 1]", "stage 'main': 'block[1]' is 2; expected an integer in [1, 1]"},
    {"'block': [128, 1, 1]", "'block': [128, 1]", "stage 'main': 'block' must have 3 entries, has 2"},
    {"'shared_bytes': 1024", "'shared_bytes': -5", "stage 'main': 'shared_bytes' is -5; expected an integer in [0, 232448]"},
    {"'shared_bytes': 1024", "'shared_bytes': 1e9", "'shared_bytes' is 1000000000; expected"},
    {"'shared_bytes': 1024", "'shared_bytes': 0.5", "'shared_bytes' is 0.5; expected"},
    {"{'kind': 'const', 'value': 2}", "{'kind': 'const', 'value': -5}", "stage 'main': 'value' is -5; expected an integer in [1, 65535]"},
    {"{'kind': 'const', 'value': 2}", "{'kind': 'const', 'value': 0}", "'value' is 0; expected an integer in [1, 65535]"},
    {"{'kind': 'const', 'value': 2}", "{'kind': 'const', 'value': 70000}", "'value' is 70000; expected"},
    {"{'kind': 'const', 'value': 2}", "{'kind': 'dim', 'name': 'Q'}", "stage 'main': grid[2] names 'Q', which is not a dim"},
    {"{'kind': 'const', 'value': 2}", "{'kind': 'rows'}", "stage 'main': 'kind' is 'rows'; expected chunks, docs, dim or const"},
    {"'default': 0.5}", "'default': 1e39}", "param 'scale': 'default' 1e+39 is not a finite f32"},
    {"'default': 3", "'default': 0.5", "param 'k': 'default' is 0.5; expected an integer in [-2147483648, 2147483647]"},
    {"{'name': 'k', 'dtype': 'i32'", "{'name': 'k', 'dtype': 'i64'", "param 'k': 'dtype' is 'i64'; expected f32 or i32"},
    {"'schema_version': 2", "'schema_version': '2'", "'schema_version' must be a number, not a string"},
    {"'bytes': 3", "'bytes': 4", "file 'bin/k.bin': the manifest gives 4 bytes, the file has 3"},
    /* enums */
    {"'role': 'in'", "'role': 'bogus'", "tensor 'x': 'role' is 'bogus'; expected in, out, temp or save"},
    {"'dtype': 'bf16'", "'dtype': 'f64'", "tensor 'x': 'dtype' is 'f64'; expected bf16, f16, f32 or i32"},
    {"{'name': 'H', 'role': 'size'}", "{'name': 'H', 'role': 'heads'}", "dim 'H': 'role' is 'heads'; expected size, tokens, docs or chunks"},
    {"'format': 'cubin'", "'format': 'elf'", "stage 'main': 'format' is 'elf'; expected cubin or ptx"},
    {"{'kind': 'buffer', 'name': 'x'}", "{'kind': 'input', 'name': 'x'}", "'kind' is 'input'; expected buffer, saved, workspace or parameter"},
    {"'optional': false", "'optional': 'no'", "tensor 'x': 'optional' must be a boolean, not a string"},
    /* duplicates */
    {"'chunk': 64", "'chunk': 64, 'chunk': 16", "is not valid JSON: line 1, column "},
    {"'chunk': 64", "'chunk': 64, 'chunk': 16", "duplicate key \"chunk\""},
    {"{'name': 'y', 'role': 'out'", "{'name': 'x', 'role': 'out'", "tensor 'x': declared twice"},
    /* the names of the plan's tables: a tensor of that name made the kernel argument and
       cake_plan_item ambiguous (the compiler refuses such tensors) */
    {"{'name': 'tmp', 'role': 'temp'", "{'name': 'chunk_table', 'role': 'temp'",
     "tensor 'chunk_table': the name is reserved for the runtime's table in the workspace"},
    {"{'name': 'sv', 'role': 'save'", "{'name': 'doc_table', 'role': 'save'",
     "tensor 'doc_table': the name is reserved for the runtime's table in the workspace"},
    {"{'name': 'H', 'role': 'size'}", "{'name': 'T', 'role': 'size'}", "dim 'T': declared twice"},
    {"{'name': 'k', 'dtype': 'i32'", "{'name': 'scale', 'dtype': 'i32'", "param 'scale': declared twice"},
    {"{'name': 'k', 'dtype': 'i32'", "{'name': 'T', 'dtype': 'i32'", "param 'T': a dim has the same name"},
    {"'entries': [{'name': 'fwd', 'stages': ['main']}]", "'entries': [{'name': 'fwd', 'stages': ['main']}, {'name': 'fwd', 'stages': []}]",
     "entry 'fwd': declared twice"},
    {"'stages': ['main']", "'stages': ['mian']", "entry 'fwd': names an unknown stage 'mian'"},
    {"'files': [", "'files': [" SYNTH_FILE ", ", "file 'bin/k.bin': listed twice"},
    {"'shared_bytes': 1024}]", "'shared_bytes': 1024}, {'target': 'sm_90a', 'symbol': 't', 'format': 'cubin', 'file': "
     "'bin/k.bin', 'shared_bytes': 0}]", "stage 'main': two kernels for target 'sm_90a'"},
    {"{'name': 'N', 'role': 'docs'}", "{'name': 'N', 'role': 'tokens'}", "dim 'N': a second dim with role 'tokens'"},
    {"'values': ['a', 'b']", "'values': ['b']", "option 'm': 'a' is not among its values"},
    /* references and roles */
    {"{'kind': 'buffer', 'name': 'y'", "{'kind': 'buffer', 'name': 'tmp'", "buffer argument 'tmp' is a tensor of another role"},
    {"{'kind': 'saved', 'name': 'sv'}", "{'kind': 'saved', 'name': 'x'}", "saved argument 'x' is a tensor of another role"},
    {"{'kind': 'buffer', 'name': 'y'", "{'kind': 'buffer', 'name': 'zz'", "buffer argument 'zz' names no tensor"},
    {"{'kind': 'parameter', 'name': 'T'}", "{'kind': 'parameter', 'name': 'zz'}", "parameter argument 'zz' is neither a dim nor a param"},
    {"'file': 'bin/k.bin'", "'file': 'k.bin'", "kernel file 'k.bin' is not among the package files"},
    {"{'kind': 'buffer', 'name': 'x'}", "{'kind': 'buffer', 'name': 'x', 'dtype': 'f32'}", "stage 'main': argument 'x' has dtype 'f32'; what it passes is bf16"},
    {"{'kind': 'buffer', 'name': 'x'}", "{'kind': 'buffer', 'name': 'x', 'shape': ['T', 'H', 32]}", "stage 'main': argument 'x' has another shape than its tensor"},
    {"{'kind': 'parameter', 'name': 'scale'}", "{'kind': 'parameter', 'name': 'scale', 'dtype': 'i32'}", "argument 'scale' has dtype 'i32'; what it passes is f32"},
    /* requirements: each a text, a location, and an expression over the program's dims and params */
    {"'requires': [", "'requires': 5, 'x': [", "program 'p' (m=a): 'requires' must be an array, not a number"},
    {"'requires': [{", "'requires': [7, {", "requires[0]: must be an object, not a number"},
    {"'text': 'H >= 0', ", "", "requires[0]: 'text' is missing"},
    {"'text': 'H >= 0'", "'text': ''", "requires[0]: 'text' is empty"},
    {"'loc': 'p.cake:3:9'", "'loc': 3", "requires[0]: 'loc' must be a string, not a number"},
    {"'text': 'H >= 0'", "'text': 'H %\\t2'", "requires[0]: 'text' holds a character that is not printable ASCII"},
    {"'expr': 'H >= 0'", "'expr': 'X % 2 == 0'", "requires[0]: 'expr' is not a requirement over the program's dims and parameters: unknown name 'X'"},
    {"'expr': 'H >= 0'", "'expr': 'H % 2'", "the expression is a number; a requirement is a comparison"},
    {"'expr': 'H >= 0'", "'expr': 'H %'", "'expr' is not a requirement over the program's dims and parameters: an operand is missing at the end"},
    {"'expr': 'H >= 0'", "'expr': 'H % 2 == 0 )'", "unexpected ')' after the expression"},
    {"'expr': 'H >= 0'", "'expr': '(H % 2 == 0'", "expected ')' at 'the end'"},
    {"'expr': 'H >= 0'", "'expr': '0 < H < 4'", "comparisons do not chain; combine them with && or ||"},
    {"'expr': 'H >= 0'", "'expr': 'H == 99999999999999999999'", "an integer does not fit in 64 bits"},
    {"'expr': 'H >= 0'", "'expr': 'H + (H > 1) == 2'", "'+' takes numbers, not a comparison's result"},
    {"'expr': 'H >= 0'", "'expr': 'H && T'", "'&&' takes comparisons (booleans), not numbers"},
    {"'expr': 'H >= 0'", "'expr': '!H'", "'!' takes comparisons (booleans), not numbers"},
    {"'expr': 'H >= 0'", "'expr': 'H = 2'", "unexpected '= 2' after the expression"},
    {"'expr': 'H >= 0'", "'expr': 'H == 2 & T == 1'", "unexpected '& T == 1' after the expression"},
    {"'expr': 'H >= 0'", "'expr': 'H == 2x'", "a name cannot start with a digit"},
    {"'expr': 'H >= 0'", "'expr': 'H == 2.'", "a decimal point needs digits after it"},
    {"'expr': 'H >= 0'", "'expr': 'H == 2.5e'", "an exponent needs digits"},
    {"'expr': 'H >= 0'", "'expr': 'H == 1.0e999'", "the decimal number 1.0e999 does not fit in a double"},
    {"'expr': 'H >= 0'", "'expr': 'H % 2.5 == 1'", "'%' takes integers, not decimal numbers or float parameters"},
    {"'expr': 'H >= 0'", "'expr': 'H == 2.5x'", "a name cannot start with a digit"},
    /* prefer clauses of an option: each a value among the option's, a text, a location, and a
       condition over the program's dims and the device facts (SMS) */
#define PREFER_AT "'values': ['a', 'b']}"
#define PREFER(x) "'values': ['a', 'b'], 'prefer': " x "}"
#define GOOD_CLAUSE "{'value': 'b', 'text': 'H <= 2 * SMS', 'expr': 'H <= 2 * SMS', 'loc': 'p.cake:2:30'}"
    {PREFER_AT, PREFER("3"), "option 'm': 'prefer' must be an array, not a number"},
    {PREFER_AT, PREFER("[3]"), "option 'm' prefer[0]: must be an object, not a number"},
    {PREFER_AT, PREFER("[" GOOD_CLAUSE ", 3]"), "option 'm' prefer[1]: must be an object, not a number"},
    {PREFER_AT, PREFER("[{'text': 'H > 1', 'expr': 'H > 1', 'loc': 'p.cake:2:30'}]"), "option 'm' prefer[0]: 'value' is missing"},
    {PREFER_AT, PREFER("[{'value': 'c', 'text': 'H > 1', 'expr': 'H > 1', 'loc': 'p.cake:2:30'}]"),
     "option 'm' prefer[0]: 'value' is 'c', which is not among the option's values"},
    {PREFER_AT, PREFER("[{'value': 'b', 'expr': 'H > 1', 'loc': 'p.cake:2:30'}]"), "option 'm' prefer[0]: 'text' is missing"},
    {PREFER_AT, PREFER("[{'value': 'b', 'text': 'H > 1', 'expr': 'H > 1'}]"), "option 'm' prefer[0]: 'loc' is missing"},
    {PREFER_AT, PREFER("[{'value': 'b', 'text': 'H >\\t1', 'expr': 'H > 1', 'loc': 'p.cake:2:30'}]"),
     "option 'm' prefer[0]: 'text' holds a character that is not printable ASCII"},
    {PREFER_AT, PREFER("[{'value': 'b', 'text': 'X > 1', 'expr': 'X > SMS', 'loc': 'p.cake:2:30'}]"),
     "option 'm' prefer[0]: 'expr' is not a condition over the program's dims and the device facts: unknown name 'X'"},
    {PREFER_AT, PREFER("[{'value': 'b', 'text': 'H * SMS', 'expr': 'H * SMS', 'loc': 'p.cake:2:30'}]"),
     "option 'm' prefer[0]: 'expr' is not a condition over the program's dims and the device facts: the expression is a number"},
    {PREFER_AT, PREFER("[{'value': 'b', 'text': 'H > 1', 'expr': 'H >', 'loc': 'p.cake:2:30'}]"),
     "an operand is missing at the end"},
    {PREFER_AT, "'prefer': [" GOOD_CLAUSE "]}", "option 'm': 'prefer' needs the option's 'values'"},
    /* the schema version: this runtime reads versions 2 (temps' live ranges), 3 (context parallelism) and 4 (halos) */
    {"'schema_version': 2", "'schema_version': 1", "has schema version 1; this runtime reads versions 2 to 5 (rebuild the package"},
    {"'schema_version': 2", "'schema_version': 6", "has schema version 6; this runtime reads versions 2 to 5"},
    {"'schema_version': 2", "'schema_version': 2.5", "has schema version 2.5; this runtime reads versions 2 to 5"},
    /* schema 2 knows no context parallelism */
    {"{'name': 'H', 'role': 'size'}", "{'name': 'H', 'role': 'ranks'}",
     "dim 'H': 'role' is 'ranks'; expected size, tokens, docs or chunks"},
    {"'entries': [", "'exchanges': [], 'entries': [", "program 'p' (m=a): 'exchanges' needs schema version 3"},
    {"{'kind': 'workspace', 'name': 'doc_table'}", "{'kind': 'workspace', 'name': 'frag_table'}",
     "stage 'main': workspace argument 'frag_table' names no tensor"},
    /* the temps' live ranges */
    {"'live': [{'entry': 'fwd', 'first': 0, 'last': 0}], ", "", "tensor 'tmp': 'live' is missing"},
    {", 'pinned': false}", "}", "tensor 'tmp': 'pinned' is missing"},
    {"'pinned': false}", "'pinned': 0}", "tensor 'tmp': 'pinned' must be a boolean, not a number"},
    {"'live': [{'entry': 'fwd', 'first': 0, 'last': 0}]", "'live': {}", "tensor 'tmp': 'live' must be an array, not an object"},
    {"'live': [{", "'live': [7, {", "tensor 'tmp' live[0]: must be an object, not a number"},
    {"'entry': 'fwd'", "'entry': 'bwd'", "tensor 'tmp' live[0]: names an unknown entry 'bwd'"},
    {"'entry': 'fwd', ", "", "tensor 'tmp' live[0]: 'entry' is missing"},
    {"'entry': 'fwd'", "'entry': 3", "tensor 'tmp' live[0]: 'entry' must be a string, not a number"},
    {"'first': 0", "'first': 1", "tensor 'tmp' live[0]: 'first' is 1; expected an integer in [0, 0]"},
    {"'first': 0", "'first': -1", "tensor 'tmp' live[0]: 'first' is -1; expected an integer in [0, 0]"},
    {"'first': 0", "'first': 0.5", "tensor 'tmp' live[0]: 'first' is 0.5; expected an integer in [0, 0]"},
    {"'first': 0", "'first': 1e308", "'first' is 1e+308; expected"},
    {"'last': 0", "'last': 2147483648", "tensor 'tmp' live[0]: 'last' is 2147483648; expected an integer in [0, 0]"},
    {"'last': 0", "'last': '0'", "tensor 'tmp' live[0]: 'last' must be a number, not a string"},
    {"'last': 0}]", "'last': 0}, {'entry': 'fwd', 'first': 0, 'last': 0}]",
     "tensor 'tmp' live[1]: entry 'fwd' has a second range"},
    {"'live': [{'entry': 'fwd', 'first': 0, 'last': 0}]", "'live': []",
     "tensor 'tmp': stage 'main' (position 0 of entry 'fwd') takes the tensor outside its live range"},
    {"'shape': ['T', 'H']}", "'shape': ['T', 'H'], 'live': []}", "tensor 'y': 'live' and 'pinned' are for temp tensors only"},
    {"'shape': ['chunks', 'H']}", "'shape': ['chunks', 'H'], 'pinned': true}",
     "tensor 'sv': 'live' and 'pinned' are for temp tensors only"},
    /* the JSON itself */
    {"'chunk': 64", "'chunk': 1e999", "bad number"},
    {"'chunk': 64", "'chunk': 064", "is not valid JSON"},
    {"'name': 'p'", "'name': 'p\\u0000q'", "\\u0000 in a string"},
    /* file paths */
    {"'path': 'bin/k.bin'", "'path': 'bin//k.bin'", "file 'bin//k.bin': the path must stay inside the package directory: the path has an empty component"},
    {"'path': 'bin/k.bin'", "'path': './bin/k.bin'", "the path has a '.' component"},
    {"'path': 'bin/k.bin'", "'path': 'bin/../bin/k.bin'", "the path has a '..' component"},
    {"'path': 'bin/k.bin'", "'path': '/etc/hostname'", "the path is absolute"},
    {"'path': 'bin/k.bin'", "'path': 'bin/'", "the path has an empty component"},
    {"'path': 'bin/k.bin'", "'path': 'bin'", "package file 'bin' listed in the manifest is missing or unreadable: 'bin' is a directory, not a regular file"},
    {"'sha256': 'ba7816bf", "'sha256': 'BA7816BF", "file 'bin/k.bin': 'sha256' is not 64 lower-case hex digits"},
};

static void manifest_values_are_validated(void **st) {
  for (size_t i = 0; i < sizeof bad_manifests / sizeof bad_manifests[0]; i++) {
    char *m = fixture_replaced(SYNTH, bad_manifests[i].old, bad_manifests[i].new_);
    cake_package *pkg;
    cake_status s = load_text(m, &pkg);
    free(m);
    if (s != CAKE_ERR_PACKAGE || !strstr(cake_last_error(), bad_manifests[i].msg))
      fail_msg("case %zu (%s): %s: %s\n  expected: %s", i, bad_manifests[i].new_, cake_status_name(s), cake_last_error(),
               bad_manifests[i].msg);
    assert_null(pkg);
  }
}

/* tests/lit/package/Inputs/live.cake: five temps of 4,096 bytes at T = 64
 * (a: fwd 0..1 and step 1..1; b: fwd 1..2; d: fwd 2..2; acc: pinned;
 * unused: no stage). Placed by size, then the longest lived first: acc, a,
 * b, then d beside a (never live together) and unused beside acc's
 * neighbours, in 3 slots rather than 5. */
static void temps_share_by_live_range(void **st) {
  char dir[700];
  assert_int_equal(compile_spec_text(NULL, CAKE_SOURCE_DIR "/tests/lit/package/Inputs/live.cake", "live", dir, sizeof dir), 0);
  cake_package *pkg;
  assert_int_equal(cake_package_load(dir, NULL, &pkg), CAKE_OK);
  const cake_program *p;
  assert_int_equal(cake_package_program(pkg, "live", &p), CAKE_OK);
  int acc = rt_tensor_index(p, "acc"), a = rt_tensor_index(p, "a"), b = rt_tensor_index(p, "b");
  assert_true(p->tensors[acc].pinned);
  assert_false(p->tensors[a].pinned);
  assert_int_equal(p->tensors[a].live[0].first, 0); /* fwd */
  assert_int_equal(p->tensors[a].live[0].last, 1);
  assert_int_equal(p->tensors[a].live[1].first, 1); /* step */
  assert_int_equal(p->tensors[a].live[1].last, 1);
  assert_int_equal(p->tensors[b].live[1].first, -1);
  cake_plan *plan;
  assert_int_equal(cake_plan_create(p, &plan), CAKE_OK);
  assert_int_equal(cake_plan_set_dim(plan, "T", 64), CAKE_OK);
  for (int r = 0; r < 2; r++) { /* finalized twice: the same layout */
    assert_int_equal(cake_plan_finalize(plan), CAKE_OK);
    static const struct {
      const char *name;
      size_t offset;
    } want[] = {{"chunk_table", 0}, {"acc", 256}, {"a", 4352}, {"b", 8448}, {"d", 4352}, {"unused", 4352}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
      size_t off, n;
      assert_int_equal(cake_plan_item(plan, want[i].name, &off, &n), CAKE_OK);
      if (off != want[i].offset) fail_msg("%s at %zu, expected %zu", want[i].name, off, want[i].offset);
      assert_int_equal(n, i ? 4096 : 64);
    }
    size_t ws;
    assert_int_equal(cake_plan_workspace_bytes(plan, &ws), CAKE_OK);
    assert_int_equal(ws, 256 + 3 * 4096);
  }
  cake_plan_free(plan);
  cake_package_free(pkg);
}

/* Live ranges against an entry of two stages (fwd = main, main): ordered,
 * covering every stage that takes the temp, in an entry with stages. */
static void live_ranges_are_validated(void **st) {
  static const struct {
    const char *old, *new_, *msg;
  } cases[] = {
      {"'first': 0, 'last': 1", "'first': 1, 'last': 0", "tensor 'tmp' live[0]: 'first' is 1, after 'last' (0)"},
      {"'first': 0, 'last': 1", "'first': 0, 'last': 2", "tensor 'tmp' live[0]: 'last' is 2; expected an integer in [0, 1]"},
      {"'first': 0, 'last': 1", "'first': 1, 'last': 1",
       "tensor 'tmp': stage 'main' (position 0 of entry 'fwd') takes the tensor outside its live range"},
      {"'first': 0, 'last': 1", "'first': 0, 'last': 0",
       "tensor 'tmp': stage 'main' (position 1 of entry 'fwd') takes the tensor outside its live range"},
      {"'stages': ['main', 'main']}]", "'stages': ['main', 'main']}, {'name': 'none', 'stages': []}]",
       "tensor 'tmp' live[1]: entry 'none' has no stages"},
  };
  char *two = fixture_replaced(SYNTH, "'stages': ['main']}]", "'stages': ['main', 'main']}]");
  char *base = fixture_replaced(two, "'first': 0, 'last': 0", "'first': 0, 'last': 1");
  free(two);
  cake_package *pkg;
  assert_int_equal(load_text(base, &pkg), CAKE_OK);
  cake_package_free(pkg);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *m = fixture_replaced(base, cases[i].old, cases[i].new_);
    if (i == 4) { /* a range in the entry without stages */
      char *n = fixture_replaced(m, "'last': 1}]", "'last': 1}, {'entry': 'none', 'first': 0, 'last': 0}]");
      free(m);
      m = n;
    }
    cake_status s = load_text(m, &pkg);
    free(m);
    if (s != CAKE_ERR_PACKAGE || !strstr(cake_last_error(), cases[i].msg))
      fail_msg("case %zu: %s: %s\n  expected: %s", i, cake_status_name(s), cake_last_error(), cases[i].msg);
    assert_null(pkg);
  }
  free(base);
}

/* Requirements the loader cannot hold: too many, too long, too deep. */
static void oversized_requirements_are_rejected(void **st) {
  const char *one = "{'text': 'H > 0', 'expr': 'H > 0', 'loc': 'p.cake:3:9'}";
  char *many = malloc(65 * 80 + 64);
  strcpy(many, "'requires': [");
  for (int i = 0; i < 65; i++) {
    strcat(many, i ? ", " : "");
    strcat(many, one);
  }
  strcat(many, "],");
  char *m = fixture_replaced(SYNTH, "'requires': [{'text': 'H >= 0', 'expr': 'H >= 0', 'loc': 'p.cake:3:9'}],", many);
  cake_package *pkg;
  assert_int_equal(load_text(m, &pkg), CAKE_ERR_PACKAGE);
  assert_non_null(strstr(cake_last_error(), "program 'p' (m=a): 65 requirements; at most 64 are supported"));
  free(m), free(many);
  /* a text of 1025 characters */
  char *big = malloc(1200), *edit = malloc(1300);
  memset(big, 0, 1200);
  strcpy(big, "H == 1");
  while (strlen(big) < 1025) strcat(big, " ");
  big[1025] = 0;
  snprintf(edit, 1300, "'text': '%s'", big);
  m = fixture_replaced(SYNTH, "'text': 'H >= 0'", edit);
  assert_int_equal(load_text(m, &pkg), CAKE_ERR_PACKAGE);
  assert_non_null(strstr(cake_last_error(), "requires[0]: 'text' has 1025 characters; at most 1024"));
  free(m);
  snprintf(edit, 1300, "'expr': '%s'", big);
  m = fixture_replaced(SYNTH, "'expr': 'H >= 0'", edit);
  assert_int_equal(load_text(m, &pkg), CAKE_ERR_PACKAGE);
  assert_non_null(strstr(cake_last_error(), "requires[0]: 'expr' has 1025 characters; at most 1024"));
  free(m);
  /* 65 levels of parentheses, and 65 of unary operators: too deep (no stack exhaustion) */
  for (int kind = 0; kind < 2; kind++) {
    char expr[400] = "";
    for (int i = 0; i < 65; i++) strcat(expr, kind ? "!" : "(");
    strcat(expr, "H == 1");
    for (int i = 0; kind == 0 && i < 65; i++) strcat(expr, ")");
    snprintf(edit, 1300, "'expr': '%s'", expr);
    m = fixture_replaced(SYNTH, "'expr': 'H >= 0'", edit);
    assert_int_equal(load_text(m, &pkg), CAKE_ERR_PACKAGE);
    assert_non_null(strstr(cake_last_error(), "requires[0]: 'expr' is not a requirement over the program's dims and parameters: "
                                              "nested more than 64 levels deep"));
    free(m);
  }
  /* 64 levels are fine */
  char expr[400] = "";
  for (int i = 0; i < 64; i++) strcat(expr, "(");
  strcat(expr, "H == 2");
  for (int i = 0; i < 64; i++) strcat(expr, ")");
  snprintf(edit, 1300, "'expr': '%s'", expr);
  m = fixture_replaced(SYNTH, "'expr': 'H >= 0'", edit);
  assert_int_equal(load_text(m, &pkg), CAKE_OK);
  cake_package_free(pkg);
  free(m), free(big), free(edit);
}

/* A plan whose dims break a requirement fails to finalize, naming it, where
 * it is and the dims it reads; a division or remainder by zero makes it
 * false with the reason, never a crash. */
static void requirements_are_checked_at_finalize(void **st) {
  char *m = fixture_replaced(SYNTH, "'requires': [{'text': 'H >= 0', 'expr': 'H >= 0', 'loc': 'p.cake:3:9'}]",
                     "'requires': [{'text': 'H % 2 == 0', 'expr': 'H % 2 == 0', 'loc': 'p.cake:3:9'}, "
                     "{'text': 'T % (H * C) == 0 || N > 1', 'expr': 'T % (H * 4) == 0 || N > 1', 'loc': 'p.cake:4:9'}, "
                     "{'text': 'T / H >= -9223372036854775807 - 1', 'expr': 'T / H >= -9223372036854775807 - 1', "
                     "'loc': 'p.cake:5:9'}]");
  cake_package *pkg;
  assert_int_equal(load_text(m, &pkg), CAKE_OK);
  free(m);
  const cake_program *p;
  assert_int_equal(cake_package_program(pkg, "p", &p), CAKE_OK);
  assert_int_equal(p->nrequires, 3);
  cake_plan *plan;
  assert_int_equal(cake_plan_create(p, &plan), CAKE_OK);
  cake_plan_set_dim(plan, "T", 100);
  cake_plan_set_dim(plan, "H", 3);
  assert_int_equal(cake_plan_finalize(plan), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "dims break 'H % 2 == 0' (p.cake:3:9): H = 3");
  size_t ws;
  assert_int_equal(cake_plan_workspace_bytes(plan, &ws), CAKE_ERR_PLAN); /* not finalized */
  cake_plan_set_dim(plan, "H", 2);
  assert_int_equal(cake_plan_finalize(plan), CAKE_ERR_PLAN); /* 100 % 8 != 0 and one document */
  assert_string_equal(cake_last_error(), "dims break 'T % (H * C) == 0 || N > 1' (p.cake:4:9): T = 100, H = 2, N = 1");
  int32_t cu[3] = {0, 40, 100};
  assert_int_equal(cake_plan_set_docs(plan, cu, 2), CAKE_OK);
  assert_int_equal(cake_plan_finalize(plan), CAKE_OK); /* N = 2 */
  cake_plan_set_dim(plan, "H", 0);
  assert_int_equal(cake_plan_finalize(plan), CAKE_ERR_PLAN); /* 0 % 2 == 0; then T % 0: false, with the reason */
  assert_string_equal(cake_last_error(),
                      "dims break 'T % (H * C) == 0 || N > 1' (p.cake:4:9): T = 100, H = 0, N = 2 (a remainder by zero)");
  cake_plan_free(plan);
  cake_package_free(pkg);
}

/* A compiled spec's `require` reaches the manifest with its text and place,
 * and a plan of dims that break it fails to finalize with its message. */
static void compiled_requirement_is_enforced(void **st) {
  static const char spec[] =
      "program gva\n"
      "dim T, H, HV\n"
      "const C = 16\n"
      "sequence T, chunk C\n"
      "require HV % H == 0 && HV >= H\n"
      "in  x : f32[T, H, 16]\n"
      "out y : f32[T, HV, 16]\n"
      "kernel k over (c in chunks, h in HV) {\n"
      "  store y[c, h, :] = load x[c, h / (HV / H), :]\n"
      "}\n"
      "entry fwd = k\n";
  char dir[700];
  assert_int_equal(compile_spec_text(spec, "specs/gva.cake", "gva-pkg", dir, sizeof dir), 0);
  cake_package *pkg;
  assert_int_equal(cake_package_load(dir, NULL, &pkg), CAKE_OK);
  const cake_program *p;
  assert_int_equal(cake_package_program(pkg, "gva", &p), CAKE_OK);
  assert_int_equal(p->nrequires, 1);
  assert_string_equal(p->requires[0].loc, "gva.cake:5:9");
  cake_plan *plan;
  assert_int_equal(cake_plan_create(p, &plan), CAKE_OK);
  cake_plan_set_dim(plan, "T", 64);
  cake_plan_set_dim(plan, "H", 2);
  cake_plan_set_dim(plan, "HV", 3);
  assert_int_equal(cake_plan_finalize(plan), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "dims break 'HV % H == 0 && HV >= H' (gva.cake:5:9): HV = 3, H = 2");
  cake_plan_set_dim(plan, "HV", 8);
  assert_int_equal(cake_plan_finalize(plan), CAKE_OK);
  cake_plan_free(plan);
  cake_package_free(pkg);
}

/* A requirement over parameters is checked with the values a plan is given
 * (else the defaults), as the kernels get them (f32), when it is finalized. */
static void parameter_requirement_is_enforced(void **st) {
  static const char spec[] =
      "program lb\n"
      "dim T\n"
      "const C = 16\n"
      "sequence T, chunk C\n"
      "param lower_bound : f32 = -5.0\n"
      "param n : i32 = 2\n"
      "require lower_bound < 0 && lower_bound >= -1.0e3 && n * lower_bound != -8.5\n"
      "in  x : f32[T, 16]\n"
      "out y : f32[T, 16]\n"
      "kernel k over (c in chunks) {\n"
      "  store y[c, :] = load x[c, :] * lower_bound\n"
      "}\n"
      "entry fwd = k\n";
  char dir[700];
  assert_int_equal(compile_spec_text(spec, "specs/lb.cake", "lb-pkg", dir, sizeof dir), 0);
  cake_package *pkg;
  assert_int_equal(cake_package_load(dir, NULL, &pkg), CAKE_OK);
  const cake_program *p;
  assert_int_equal(cake_package_program(pkg, "lb", &p), CAKE_OK);
  cake_plan *plan;
  assert_int_equal(cake_plan_create(p, &plan), CAKE_OK);
  cake_plan_set_dim(plan, "T", 64);
  assert_int_equal(cake_plan_finalize(plan), CAKE_OK); /* the defaults hold */
  assert_int_equal(cake_plan_set_param(plan, "lower_bound", 0.5), CAKE_OK);
  size_t bytes;
  assert_int_equal(cake_plan_workspace_bytes(plan, &bytes), CAKE_ERR_PLAN); /* setting a param unfinalizes */
  assert_int_equal(cake_plan_finalize(plan), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "the parameters break 'lower_bound < 0 && lower_bound >= -1.0e3 && n * "
                                         "lower_bound != -8.5' (lb.cake:7:9): lower_bound = 0.5, n = 2");
  size_t ws;
  assert_int_equal(cake_plan_workspace_bytes(plan, &ws), CAKE_ERR_PLAN); /* not finalized */
  assert_int_equal(cake_plan_set_param(plan, "lower_bound", -4.25), CAKE_OK);
  assert_int_equal(cake_plan_set_param(plan, "n", 2), CAKE_OK);
  assert_int_equal(cake_plan_finalize(plan), CAKE_ERR_PLAN); /* 2 * -4.25 == -8.5 */
  assert_non_null(strstr(cake_last_error(), "lower_bound = -4.25, n = 2"));
  assert_int_equal(cake_plan_set_param(plan, "n", 3), CAKE_OK);
  assert_int_equal(cake_plan_finalize(plan), CAKE_OK);
  assert_int_equal(cake_plan_set_param(plan, "lower_bound", -2000), CAKE_OK);
  assert_int_equal(cake_plan_finalize(plan), CAKE_ERR_PLAN);
  cake_plan_free(plan);
  cake_package_free(pkg);
}

/* SYNTH_PROGRAM's option m with the prefer clauses `clauses`, as variant m=`v`. */
static char *prefer_variant(const char *v, const char *clauses) {
  char opt[400], var[64];
  snprintf(opt, sizeof opt, "'value': '%s', 'default': 'a', 'values': ['a', 'b'], 'prefer': %s}", v, clauses);
  snprintf(var, sizeof var, "'variant': 'm=%s'", v);
  char *a = fixture_replaced(SYNTH_PROGRAM, "'value': 'a', 'default': 'a', 'values': ['a', 'b']}", opt);
  for (char *c = a; *c; c++)
    if (*c == '"') *c = '\'';
  char *b = fixture_replaced(a, "'variant': 'm=a'", var);
  free(a);
  for (char *c = b; *c; c++)
    if (*c == '"') *c = '\'';
  return b;
}

/* cake_package_choose: given options win, unset ones with prefer clauses
 * take the first clause that holds for the dims and the device facts, the
 * others their default; errors name the option and the clause. */
static void options_are_chosen_from_the_problem(void **st) {
  const char *clause = "[{'value': 'b', 'text': 'N * H <= 2 * SMS', 'expr': 'N * H <= 2 * SMS', 'loc': 'p.cake:2:30'}]";
  char *va = prefer_variant("a", clause), *vb = prefer_variant("b", clause);
  char *m = malloc(strlen(va) + strlen(vb) + 400);
  sprintf(m, SYNTH_HEAD "%s, %s]}", va, vb);
  char *mq = fixture_q(m);
  cake_package *pkg;
  assert_int_equal(load_text(mq, &pkg), CAKE_OK);
  const cake_program *p;
  cake_dim_value d4[] = {{"H", 4}}, d1[] = {{"H", 1}};
  cake_device_facts two = {2}, one = {1};
  assert_int_equal(cake_package_choose(pkg, "p", NULL, d4, 1, 0, &two, &p), CAKE_OK); /* 1 * 4 <= 4 */
  assert_string_equal(cake_program_variant(p), "m=b");
  assert_int_equal(cake_package_choose(pkg, "p", "", d4, 1, 0, &one, &p), CAKE_OK); /* 4 > 2: the default */
  assert_string_equal(cake_program_variant(p), "m=a");
  assert_int_equal(cake_package_choose(pkg, "p", "m=a", d4, 1, 0, &two, &p), CAKE_OK); /* given wins */
  assert_string_equal(cake_program_variant(p), "m=a");
  assert_int_equal(cake_package_choose(pkg, "p", "m=b", d4, 1, 0, &one, &p), CAKE_OK);
  assert_string_equal(cake_program_variant(p), "m=b");
  assert_int_equal(cake_package_choose(pkg, "p", NULL, d1, 1, 2, &one, &p), CAKE_OK); /* documents: N = 2 */
  assert_string_equal(cake_program_variant(p), "m=b");
  assert_int_equal(cake_package_choose(pkg, "p", NULL, d1, 1, 3, &one, &p), CAKE_OK);
  assert_string_equal(cake_program_variant(p), "m=a");
  /* the environment stands in for the device (and a caller's facts win over it) */
  setenv("CAKE_DEVICE_SMS", "2", 1);
  assert_int_equal(cake_package_choose(pkg, "p", NULL, d4, 1, 1, NULL, &p), CAKE_OK);
  assert_string_equal(cake_program_variant(p), "m=b");
  assert_int_equal(cake_package_choose(pkg, "p", NULL, d4, 1, 1, &one, &p), CAKE_OK);
  assert_string_equal(cake_program_variant(p), "m=a");
  setenv("CAKE_DEVICE_SMS", "1", 1);
  assert_int_equal(cake_package_choose(pkg, "p", NULL, d4, 1, 1, NULL, &p), CAKE_OK);
  assert_string_equal(cake_program_variant(p), "m=a");
  unsetenv("CAKE_DEVICE_SMS");
  /* errors */
  assert_int_equal(cake_package_choose(pkg, "p", NULL, NULL, 0, 0, &two, &p), CAKE_ERR_ARGUMENT);
  assert_null(p);
  assert_string_equal(cake_last_error(), "option 'm' of 'p': 'prefer b when N * H <= 2 * SMS' (p.cake:2:30) reads dim "
                                         "'H', which was not given");
  assert_int_equal(cake_package_choose(pkg, "p", "m=a", NULL, 0, 0, &two, &p), CAKE_OK); /* given: nothing to read */
  cake_dim_value bad[] = {{"Z", 1}}, docs[] = {{"N", 1}}, neg[] = {{"H", -1}}, twice[] = {{"H", 1}, {"H", 2}};
  assert_int_equal(cake_package_choose(pkg, "p", NULL, bad, 1, 0, &two, &p), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "program 'p' has no dim 'Z'");
  assert_int_equal(cake_package_choose(pkg, "p", NULL, docs, 1, 0, &two, &p), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "dim 'N' is the number of documents: pass it as ndocs");
  assert_int_equal(cake_package_choose(pkg, "p", NULL, neg, 1, 0, &two, &p), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_package_choose(pkg, "p", NULL, twice, 2, 0, &two, &p), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "dim 'H' is given twice");
  assert_int_equal(cake_package_choose(pkg, "p", "m=c", d4, 1, 0, &two, &p), CAKE_ERR_NOT_FOUND);
  assert_int_equal(cake_package_choose(pkg, "p", "x=c", d4, 1, 0, &two, &p), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_package_choose(pkg, "q", NULL, d4, 1, 0, &two, &p), CAKE_ERR_NOT_FOUND);
  assert_int_equal(cake_package_choose(NULL, "p", NULL, d4, 1, 0, &two, &p), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_package_choose(pkg, "p", NULL, NULL, 1, 0, &two, &p), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_package_choose(pkg, "p", NULL, d4, 1, -1, &two, &p), CAKE_ERR_ARGUMENT);
  cake_package_free(pkg);
  free(mq), free(m), free(va), free(vb);

  /* a clause whose arithmetic fails is an error naming it */
  const char *div = "[{'value': 'b', 'text': 'H / T <= SMS', 'expr': 'H / T <= SMS', 'loc': 'p.cake:2:30'}]";
  va = prefer_variant("a", div);
  m = malloc(strlen(va) + 400);
  sprintf(m, SYNTH_HEAD "%s]}", va);
  mq = fixture_q(m);
  assert_int_equal(load_text(mq, &pkg), CAKE_OK);
  cake_dim_value t0[] = {{"H", 4}, {"T", 0}};
  assert_int_equal(cake_package_choose(pkg, "p", NULL, t0, 2, 0, &two, &p), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "option 'm' of 'p': 'prefer b when H / T <= SMS' (p.cake:2:30) cannot be "
                                         "evaluated: H = 4, T = 0, SMS = 2 (a division by zero)");
  /* the chosen value has no variant in the package */
  t0[1].value = 8;
  assert_int_equal(cake_package_choose(pkg, "p", NULL, t0, 2, 0, &two, &p), CAKE_ERR_NOT_FOUND);
  assert_non_null(strstr(cake_last_error(), "no variant of 'p' with options 'm=b'"));
  cake_package_free(pkg);
  free(mq), free(m), free(va);

  /* variants of one program must agree on the clauses */
  va = prefer_variant("a", clause);
  vb = prefer_variant("b", div);
  m = malloc(strlen(va) + strlen(vb) + 400);
  sprintf(m, SYNTH_HEAD "%s, %s]}", va, vb);
  mq = fixture_q(m);
  assert_int_equal(load_text(mq, &pkg), CAKE_ERR_PACKAGE);
  assert_non_null(strstr(cake_last_error(), "option 'm' has other prefer clauses than in an earlier variant of 'p'"));
  free(mq), free(m), free(va), free(vb);
}

/* A compiled spec's prefer clause reaches the manifest and chooses the variant. */
static void compiled_prefer_chooses(void **st) {
  static const char spec[] =
      "program pv\n"
      "option vb = v32 in (v32, v16)\n"
      "  prefer v16 when N * H * (V / 16) <= 2 * SMS\n"
      "dim T, N, H\n"
      "const V = 32, C = 16\n"
      "sequence T, docs N, chunk C\n"
      "in  x : f32[T, H, 16]\n"
      "out y : f32[T, H, 16]\n"
      "kernel k over (c in chunks, h in H) {\n"
      "  store y[c, h, :] = load x[c, h, :]\n"
      "}\n"
      "entry fwd = k\n";
  char dir[700];
  assert_int_equal(compile_spec_text(spec, "specs/pv.cake", "pv-pkg", dir, sizeof dir), 0);
  cake_package *pkg;
  assert_int_equal(cake_package_load(dir, NULL, &pkg), CAKE_OK);
  const cake_program *p;
  assert_int_equal(cake_package_variant(pkg, "pv", NULL, &p), CAKE_OK);
  assert_int_equal(p->options[0].nprefer, 1);
  assert_string_equal(p->options[0].prefer[0].text, "N * H * (V / 16) <= 2 * SMS");
  assert_string_equal(p->options[0].prefer[0].expr, "N * H * (32 / 16) <= 2 * SMS");
  assert_string_equal(p->options[0].prefer[0].loc, "pv.cake:3:19");
  cake_device_facts f = {132};
  cake_dim_value h[] = {{"T", 4096}, {"H", 132}};
  assert_int_equal(cake_package_choose(pkg, "pv", NULL, h, 2, 1, &f, &p), CAKE_OK); /* 264 <= 264 */
  assert_string_equal(cake_program_variant(p), "vb=v16");
  h[1].value = 133;
  assert_int_equal(cake_package_choose(pkg, "pv", NULL, h, 2, 1, &f, &p), CAKE_OK);
  assert_string_equal(cake_program_variant(p), "vb=v32");
  cake_package_free(pkg);
}

/* Programs of one name are variants with distinct option values. */
static void duplicate_programs_are_rejected(void **st) {
  char *same = fixture_q(SYNTH_HEAD SYNTH_PROGRAM ", " SYNTH_PROGRAM "]}");
  cake_package *pkg;
  assert_int_equal(load_text(same, &pkg), CAKE_ERR_PACKAGE);
  assert_non_null(strstr(cake_last_error(), "program 'p' (m=a): appears twice with the same option values"));
  free(same);
  char *other = fixture_replaced(SYNTH_HEAD SYNTH_PROGRAM ", " SYNTH_PROGRAM "]}", "}], 'dims'", "}, {'name': 'n', 'value': "
                                                                                          "'a', 'default': 'a'}], 'dims'");
  assert_int_equal(load_text(other, &pkg), CAKE_ERR_PACKAGE);
  assert_non_null(strstr(cake_last_error(), "declares other options than an earlier variant of 'p'"));
  free(other);
  char *b = fixture_replaced(SYNTH_HEAD SYNTH_PROGRAM ", " SYNTH_PROGRAM "]}", "'value': 'a', 'default'",
                     "'value': 'b', 'default'");
  assert_int_equal(load_text(b, &pkg), CAKE_OK); /* the variants m=b and m=a */
  const cake_program *p;
  assert_int_equal(cake_package_variant(pkg, "p", "m=b", &p), CAKE_OK);
  assert_string_equal(p->options[0].value, "b");
  cake_package_free(pkg);
  free(b);
}

/* The audit's reproducers, as they were. */
static void audit_manifests(void **st) {
  static const struct {
    const char *manifest, *msg;
  } cases[] = {
      {"{'schema': 'cake.package', 'schema_version': 2, 'files': [], 'programs': [{'name': 'p', 'dims': [{'name': 'T', "
       "'role': 'tokens'}], 'chunk': 0, 'tensors': [], 'params': [], 'stages': [], 'entries': []}]}",
       "program 'p': 'chunk' is 0; expected a multiple of 16 in [16, 256]"},
      {"{'schema': 'cake.package', 'schema_version': 2, 'files': [], 'programs': [{'name': 'p', 'dims': [{'name': 'T', "
       "'role': 'tokens'}], 'chunk': -64, 'tensors': [], 'params': [], 'stages': [], 'entries': []}]}",
       "program 'p': 'chunk' is -64; expected a multiple of 16 in [16, 256]"},
      {"{'schema': 'cake.package', 'schema_version': 2, 'files': [{'path': '.', 'sha256': "
       "'0000000000000000000000000000000000000000000000000000000000000000'}], 'programs': []}",
       "file '.': the path must stay inside the package directory: the path has a '.' component"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *m = fixture_q(cases[i].manifest);
    cake_package *pkg;
    cake_status s = load_text(m, &pkg);
    free(m);
    if (s != CAKE_ERR_PACKAGE || !strstr(cake_last_error(), cases[i].msg))
      fail_msg("case %zu: %s: %s", i, cake_status_name(s), cake_last_error());
  }
}

/* F17: the cause of a missing file survives, after the prefix, once. */
static void missing_file_names_its_cause(void **st) {
  char *m = fixture_q("{'schema': 'cake.package', 'schema_version': 2, 'files': [{'path': 'missing.bin', 'sha256': "
              "'0000000000000000000000000000000000000000000000000000000000000000'}], 'programs': []}");
  cake_package *pkg;
  assert_int_equal(load_text(m, &pkg), CAKE_ERR_PACKAGE);
  free(m);
  assert_string_equal(cake_last_error(),
                      "package file 'missing.bin' listed in the manifest is missing or unreadable: No such file or directory");
  assert_int_equal(count(cake_last_error(), "listed in the manifest"), 1);
}

/* ---- untrusted packages: the files (F9, F10) ---- */

/* A copy of the first package in a fresh directory. */
static void copy_first(char *dir, size_t n) {
  char cmd[2400];
  fresh_dir(dir, n, "copy");
  snprintf(cmd, sizeof cmd, "cp -r '%s'/. '%s'", g_pkg, dir);
  assert_int_equal(system(cmd), 0);
}

/* Lists one more file (`path`, whose content is `content`) in dir's manifest. */
static void list_file(const char *dir, const char *path, const char *content) {
  char mpath[1200], hex[65], entry[400];
  snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
  char *text = NULL;
  size_t len = 0;
  FILE *f = fopen(mpath, "rb");
  assert_non_null(f);
  assert_int_equal(getdelim(&text, &len, 0, f) > 0, 1);
  fclose(f);
  rt_sha256_hex(content, strlen(content), hex);
  snprintf(entry, sizeof entry, "{\"path\": \"%s\", \"sha256\": \"%s\"}, ", path, hex);
  char *at = strchr(strstr(text, "\"files\":"), '[') + 1;
  f = fopen(mpath, "wb");
  assert_non_null(f);
  fprintf(f, "%.*s%s%s", (int)(at - text), text, entry, at);
  fclose(f);
  free(text);
}

static void expect_load_error(const char *dir, cake_status want, const char *msg) {
  cake_package *pkg = NULL;
  cake_status s = cake_package_load(dir, NULL, &pkg);
  if (s != want || !strstr(cake_last_error(), msg))
    fail_msg("%s: %s: %s\n  expected %s: %s", dir, cake_status_name(s), cake_last_error(), cake_status_name(want), msg);
  assert_null(pkg);
}

static void files_stay_inside_the_package(void **st) {
  char dir[700], out[700], path[1600], cmd[3400];
  /* a listed file replaced by a symbolic link to a file outside, of the same content */
  copy_first(dir, sizeof dir);
  fresh_dir(out, sizeof out, "outside");
  snprintf(cmd, sizeof cmd, "cd '%s' && f=$(ls *.cubin) && mv \"$f\" '%s'/ && ln -s '%s'/\"$f\" \"$f\"", dir, out, out);
  assert_int_equal(system(cmd), 0);
  expect_load_error(dir, CAKE_ERR_PACKAGE, ".cubin' is a symbolic link (package files must lie inside the package directory)");
  /* a directory component that is a symbolic link leaving the package: sub/hostname with sub -> outside */
  copy_first(dir, sizeof dir);
  fixture_write_file(out, "hostname", "host\n");
  snprintf(path, sizeof path, "%s/sub", dir);
  assert_int_equal(symlink(out, path), 0);
  list_file(dir, "sub/hostname", "host\n");
  expect_load_error(dir, CAKE_ERR_PACKAGE,
                    "package file 'sub/hostname' listed in the manifest is missing or unreadable: 'sub' is a symbolic link");
  /* the same with a real subdirectory loads */
  copy_first(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/sub", dir);
  assert_int_equal(mkdir(path, 0755), 0);
  fixture_write_file(path, "hostname", "host\n");
  list_file(dir, "sub/hostname", "host\n");
  cake_package *pkg;
  assert_int_equal(cake_package_load(dir, NULL, &pkg), CAKE_OK);
  cake_package_free(pkg);
  /* a name with ".." inside it is an ordinary name */
  copy_first(dir, sizeof dir);
  fixture_write_file(dir, "a..b", "x");
  list_file(dir, "a..b", "x");
  assert_int_equal(cake_package_load(dir, NULL, &pkg), CAKE_OK);
  cake_package_free(pkg);
  /* manifest.json itself may not be a symbolic link */
  fresh_dir(dir, sizeof dir, "manifest-link");
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  snprintf(cmd, sizeof cmd, "%s/manifest.json", g_pkg);
  assert_int_equal(symlink(cmd, path), 0);
  expect_load_error(dir, CAKE_ERR_PACKAGE, "manifest.json: 'manifest.json' is a symbolic link");
}

static void only_regular_files_are_read(void **st) {
  char dir[700], path[1200];
  /* a FIFO: the loader must answer (it used to block forever in open) */
  alarm(60);
  copy_first(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/pipe", dir);
  assert_int_equal(mkfifo(path, 0644), 0);
  list_file(dir, "pipe", "");
  expect_load_error(dir, CAKE_ERR_PACKAGE, "'pipe' is a FIFO, not a regular file");
  alarm(0);
  /* a directory listed as a file (it used to ask for 2^63 bytes) */
  copy_first(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/subdir", dir);
  assert_int_equal(mkdir(path, 0755), 0);
  list_file(dir, "subdir", "");
  expect_load_error(dir, CAKE_ERR_PACKAGE, "'subdir' is a directory, not a regular file");
  /* a file over the limit is refused from its size, before it is read (sparse here) */
  copy_first(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/big.bin", dir);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(ftruncate(fileno(f), (off_t)RT_MAX_FILE_BYTES + 1), 0);
  fclose(f);
  list_file(dir, "big.bin", "");
  expect_load_error(dir, CAKE_ERR_PACKAGE, "'big.bin' has 1073741825 bytes; the limit is 1073741824");
  /* the package directory must be one */
  expect_load_error(CAKE_SOURCE_DIR "/README.md", CAKE_ERR_IO, "Not a directory");
}

/* The bytes hashed are the bytes the kernels (and so the driver) get. */
static void kernels_use_the_hashed_bytes(void **st) {
  cake_package *pkg;
  assert_int_equal(cake_package_load(g_pkg, NULL, &pkg), CAKE_OK);
  const RtKernel *k = &pkg->programs[0].stages[0].kernels[0];
  const RtStage *s = &pkg->programs[0].stages[0];
  int image = 0, fatbin = 0;
  char path[1200], hex[65];
  snprintf(path, sizeof path, "%s/manifest.json", g_pkg);
  FILE *f = fopen(path, "rb");
  char *text = NULL;
  size_t len = 0;
  assert_int_equal(getdelim(&text, &len, 0, f) > 0, 1);
  fclose(f);
  for (int i = 0; i < pkg->nfiles; i++) {
    image |= pkg->files[i].data == k->image && pkg->files[i].len == k->len;
    fatbin |= pkg->files[i].data == s->fatbin && pkg->files[i].len == s->fatbin_len;
    rt_sha256_hex(pkg->files[i].data, pkg->files[i].len, hex);
    assert_non_null(strstr(text, hex)); /* what was checked is what is kept */
  }
  assert_true(image && fatbin);
  free(text);
  cake_package_free(pkg);
}

/* ---- the API: arguments (F11), documents, sizes (F13, F14) ---- */

static void null_and_out_of_range_arguments(void **st) {
  char *m = fixture_q(SYNTH);
  cake_package *pkg, *none = (cake_package *)&g_seq;
  assert_int_equal(load_text(m, &pkg), CAKE_OK);
  free(m);
  const cake_program *p;
  cake_plan *plan;
  size_t n, off;
  assert_int_equal(cake_package_load(NULL, NULL, &none), CAKE_ERR_ARGUMENT);
  assert_null(none);
  assert_int_equal(cake_package_load(g_pkg, NULL, NULL), CAKE_ERR_ARGUMENT);
  cake_allocator half = {NULL, NULL, NULL};
  assert_int_equal(cake_package_load(g_pkg, &half, &none), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_package_program(NULL, "p", &p), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_package_variant(pkg, NULL, NULL, &p), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_package_program_count(NULL), 0);
  assert_null(cake_package_program_name(pkg, -1));
  assert_null(cake_package_program_name(pkg, 1));
  assert_int_equal(cake_package_program(pkg, "p", &p), CAKE_OK);
  assert_int_equal(cake_plan_create(NULL, &plan), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_create(p, NULL), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_create(p, &plan), CAKE_OK);
  assert_int_equal(cake_plan_finalize(NULL), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "cake_plan_finalize: plan is required");
  assert_int_equal(cake_plan_set_dim(plan, "T", 100), CAKE_OK);
  assert_int_equal(cake_plan_set_dim(plan, "H", 2), CAKE_OK);
  assert_int_equal(cake_plan_finalize(plan), CAKE_OK);
  assert_int_equal(cake_plan_workspace_bytes(plan, NULL), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_workspace_bytes(NULL, &n), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_saved_bytes(plan, NULL), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_item(plan, NULL, &off, &n), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_item(plan, "tmp", NULL, &n), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_item(plan, "tmp", &off, NULL), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_item(NULL, "tmp", &off, &n), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_chunk_count(NULL), -1);
  /* parameters: present, and their values must fit the kernel's type */
  assert_int_equal(cake_plan_set_param(NULL, "k", 1), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_set_param(plan, NULL, 1), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_set_param(plan, "k", 0.5), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "parameter 'k' is i32; 0.5 is not an integer in [-2^31, 2^31)");
  assert_int_equal(cake_plan_set_param(plan, "k", 3e9), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_set_param(plan, "k", NAN), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_set_param(plan, "k", -7), CAKE_OK);
  assert_int_equal(cake_plan_set_param(plan, "scale", NAN), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "parameter 'scale' is f32; nan is not a finite f32 value");
  assert_int_equal(cake_plan_set_param(plan, "scale", 1e39), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_set_param(plan, "scale", INFINITY), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_set_param(plan, "scale", 0.25), CAKE_OK);
  assert_int_equal(cake_plan_finalize(plan), CAKE_OK); /* setting a param unfinalized it */
  /* validation */
  cake_binding b[2] = {{"x", {0x1000, CAKE_BF16, 3, {100, 2, 64}, {0}}}, {"y", {0x2000, CAKE_F32, 2, {100, 2}, {0}}}};
  assert_int_equal(cake_validate(plan, "fwd", b, 2), CAKE_OK);
  assert_int_equal(cake_validate(plan, NULL, b, 2), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_validate(plan, "fwd", NULL, 2), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_validate(plan, "fwd", b, -3), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_validate(NULL, "fwd", b, 2), CAKE_ERR_ARGUMENT);
  b[1].name = NULL;
  assert_int_equal(cake_validate(plan, "fwd", b, 2), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "binding 1 has no name");
  assert_int_equal(cake_launch(NULL, "fwd", b, 2, 0, 0, 0, 0, NULL), CAKE_ERR_ARGUMENT);
  /* the device queries */
  assert_int_equal(cake_device_sm_count(NULL), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_device_target(NULL, 16), CAKE_ERR_ARGUMENT);
  char buf[16];
  assert_int_equal(cake_device_target(buf, 0), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_status_name((cake_status)99), "CAKE_ERR_?");
  assert_string_equal(cake_dtype_name((cake_dtype)99), "?");
  /* a plan copies its allocator: freeing it after its package touches nothing freed */
  cake_package_free(pkg);
  cake_plan_free(plan);
  cake_plan_free(NULL);
  cake_package_free(NULL);
}

static void cu_seqlens_are_validated(void **st) {
  cake_package *pkg;
  assert_int_equal(cake_package_load(g_pkg, NULL, &pkg), CAKE_OK);
  const cake_program *prog;
  cake_package_program(pkg, "first", &prog);
  cake_plan *plan;
  cake_plan_create(prog, &plan);
  cake_plan_set_dim(plan, "T", 100);
  cake_plan_set_dim(plan, "H", 2);
  int32_t ok[4] = {0, 40, 40, 100}, start[3] = {5, 40, 100}, neg[3] = {0, -5, 100}, dec[4] = {0, 60, 50, 100};
  assert_int_equal(cake_plan_set_docs(NULL, ok, 3), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_set_docs(plan, NULL, 3), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_set_docs(plan, ok, 0), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "ndocs = 0 is out of range [1, 2147483646]");
  assert_int_equal(cake_plan_set_docs(plan, ok, -1), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_set_docs(plan, ok, INT64_MAX), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_set_docs(plan, ok, INT32_MAX), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_set_docs(plan, start, 2), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "cu_seqlens[0] is 5; the offsets must start at 0");
  assert_int_equal(cake_plan_set_docs(plan, neg, 2), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "cu_seqlens[1] is -5, less than cu_seqlens[0] = 0 (the offsets must not decrease)");
  assert_int_equal(cake_plan_set_docs(plan, dec, 3), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "cu_seqlens[2] is 50, less than cu_seqlens[1] = 60 (the offsets must not decrease)");
  assert_int_equal(cake_plan_set_docs(plan, ok, 3), CAKE_OK);
  assert_int_equal(cake_plan_finalize(plan), CAKE_OK);
  assert_int_equal(cake_plan_chunk_count(plan), 1 + 0 + 1);
  cake_plan_set_dim(plan, "T", 50); /* T changed after the documents */
  assert_int_equal(cake_plan_finalize(plan), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "cu_seqlens[3] (the last offset) is 100 but the token dim T is 50");
  /* a failed finalize leaves no plan behind */
  size_t ws;
  assert_int_equal(cake_plan_workspace_bytes(plan, &ws), CAKE_ERR_PLAN);
  assert_int_equal(cake_plan_chunk_count(plan), -1);
  cake_plan_free(plan);
  cake_package_free(pkg);
}

static char g_big_error[2048]; /* plan_big's message */
static size_t g_big_ws;        /* and its workspace bytes */

/* Plans with H = 2^31 - 1 over SYNTH (T small, so the tables stay small). */
static cake_status plan_big(const char *old, const char *new_) {
  char *m = fixture_replaced(SYNTH, old, new_);
  cake_package *pkg;
  if (load_text(m, &pkg)) fail_msg("%s", cake_last_error());
  free(m);
  const cake_program *p;
  cake_plan *plan;
  assert_int_equal(cake_package_program(pkg, "p", &p), CAKE_OK);
  assert_int_equal(cake_plan_create(p, &plan), CAKE_OK);
  cake_plan_set_dim(plan, "T", 100);
  cake_plan_set_dim(plan, "H", INT32_MAX);
  cake_status s = cake_plan_finalize(plan);
  snprintf(g_big_error, sizeof g_big_error, "%s", cake_last_error());
  size_t ws = 1;
  assert_int_equal(cake_plan_workspace_bytes(plan, &ws), s ? CAKE_ERR_PLAN : CAKE_OK);
  g_big_ws = s ? 0 : ws;
  cake_plan_free(plan);
  cake_package_free(pkg);
  return s;
}

static void sizes_never_wrap(void **st) {
  /* a temp tensor of more than 2^64 bytes (F14) */
  assert_int_equal(plan_big("", ""), CAKE_ERR_PLAN); /* SYNTH as it is */
  assert_string_equal(g_big_error, "tensor 'tmp' [T=100, H=2147483647, H=2147483647] of f32 has more than 2^64 bytes");
  /* temps that fit one by one, not together */
  assert_int_equal(plan_big("'shape': ['T', 'H', 'H']", "'shape': ['H', 'H'], 'live': [{'entry': 'fwd', 'first': 0, "
                                                          "'last': 0}], 'pinned': false}, {'name': 'tmp2', 'role': "
                                                          "'temp', 'dtype': 'f32', 'shape': ['H', 'H']"),
                   CAKE_ERR_PLAN);
  assert_string_equal(g_big_error, "the workspace passes 2^64 bytes at tensor 'tmp2' [H=2147483647, "
                                         "H=2147483647] (18446744056529682436 bytes)");
  /* the same two, never live at once: they share their bytes, and the plan fits */
#define TMP_LIVE "'live': [{'entry': 'fwd', 'first': 0, 'last': 0}], 'pinned': false}"
  assert_int_equal(plan_big("'shape': ['T', 'H', 'H'], " TMP_LIVE,
                            "'shape': ['H', 'H'], " TMP_LIVE ", {'name': 'tmp2', 'role': 'temp', 'dtype': 'f32', "
                            "'shape': ['H', 'H'], 'live': [], 'pinned': false}"),
                   CAKE_OK);
  assert_int_equal(g_big_ws, 512 + 18446744056529682688u); /* the tables, then both at one offset */
#undef TMP_LIVE
  /* a rounding to the 256-byte alignment that passes 2^64 */
  assert_int_equal(plan_big("'shape': ['T', 'H', 'H']", "'shape': ['H', 3, 715827883]"), CAKE_ERR_PLAN); /* 2^64 - 4 */
  assert_string_equal(g_big_error, "the workspace passes 2^64 bytes at tensor 'tmp' [H=2147483647, 3, 715827883] "
                                   "(18446744073709551612 bytes)");
  /* an input that large is refused at finalize, so validation's stride products cannot overflow (F13) */
  assert_int_equal(plan_big("'shape': ['T', 'H', 64]", "'shape': ['H', 'H', 'H']"), CAKE_ERR_PLAN);
  assert_string_equal(g_big_error, "tensor 'x' [H=2147483647, H=2147483647, H=2147483647] of bf16 has more than 2^64 bytes");
}

/* The launch computes each stage's grid within CUDA's range, whatever a
 * stage record says (the loader refuses such records first). */
static void grids_stay_in_range(void **st) {
  char *m = fixture_q(SYNTH);
  cake_package *pkg;
  assert_int_equal(load_text(m, &pkg), CAKE_OK);
  free(m);
  cake_plan *plan;
  assert_int_equal(cake_plan_create(&pkg->programs[0], &plan), CAKE_OK);
  cake_plan_set_dim(plan, "T", 100);
  cake_plan_set_dim(plan, "H", 3);
  assert_int_equal(cake_plan_finalize(plan), CAKE_OK);
  RtStage stage = pkg->programs[0].stages[0];
  unsigned grid[3];
  assert_int_equal(rt_grid_of(plan, &stage, grid), CAKE_OK);
  assert_int_equal(grid[0], 2); /* chunks */
  assert_int_equal(grid[1], 3); /* H */
  assert_int_equal(grid[2], 2); /* const */
  stage.grid[2].value = -5;
  assert_int_equal(rt_grid_of(plan, &stage, grid), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "stage 'main': grid dimension z = -5 is outside the CUDA range [0, 65535]");
  stage.grid[2].value = 65536;
  assert_int_equal(rt_grid_of(plan, &stage, grid), CAKE_ERR_PLAN);
  stage.grid[0] = (RtGrid){G_CONST, -1, (int64_t)1 << 31};
  assert_int_equal(rt_grid_of(plan, &stage, grid), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "stage 'main': grid dimension x = 2147483648 is outside the CUDA range [0, 2147483647]");
  cake_plan_free(plan);
  cake_package_free(pkg);
}

/* Without a driver, the reason given is libcuda.so.1's own. */
static void missing_driver_is_named(void **st) {
  char buf[16];
  cake_status s = cake_device_target(buf, sizeof buf);
  if (s != CAKE_ERR_CUDA || !strstr(cake_last_error(), "could not be loaded")) skip(); /* a driver is present */
  assert_non_null(strstr(cake_last_error(), "the CUDA driver (libcuda.so.1) could not be loaded: libcuda.so.1: "));
}

/* An allocator that fails from its n-th allocation on and counts what is live. */
typedef struct FailAlloc {
  long calls, fail_at, live;
} FailAlloc;

static void *fail_alloc(void *ctx, size_t n) {
  FailAlloc *f = ctx;
  if (f->calls++ >= f->fail_at) return NULL;
  f->live++;
  return malloc(n);
}

static void fail_free(void *ctx, void *p) {
  FailAlloc *f = ctx;
  f->live--;
  free(p);
}

static int open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  assert_non_null(d);
  while (readdir(d)) n++;
  closedir(d);
  return n;
}

/* Fails each allocation in turn while loading `dir` and planning `program`
 * (T = 1000, H = 2) until all succeed; a load that cannot succeed ends with
 * `final` once nothing fails. */
static void fail_each_allocation(const char *dir, const char *program, cake_status final) {
  int done = 0;
  for (long k = 0; k < 20000 && !done; k++) {
    FailAlloc f = {0, k, 0};
    cake_allocator al = {fail_alloc, fail_free, &f};
    cake_package *pkg = NULL;
    cake_status s = cake_package_load(dir, &al, &pkg);
    if (s == CAKE_OK) {
      const cake_program *prog;
      assert_int_equal(cake_package_program(pkg, program, &prog), CAKE_OK);
      cake_plan *plan = NULL;
      s = cake_plan_create(prog, &plan);
      if (s == CAKE_OK) {
        cake_plan_set_dim(plan, "T", 1000);
        cake_plan_set_dim(plan, "H", 2);
        s = cake_plan_finalize(plan);
        done = s == CAKE_OK;
        cake_plan_free(plan);
      }
      cake_package_free(pkg);
    } else if (s == final) {
      done = 1;
    }
    if (!done) assert_int_equal(s, CAKE_ERR_MEMORY);
    assert_int_equal(f.live, 0);
  }
  assert_true(done);
}

/* Every allocation failure while loading and planning comes back as
 * CAKE_ERR_MEMORY, with nothing leaked (memory or descriptors) and nothing
 * dereferenced: on the compiled package, on SYNTH (a subdirectory, options,
 * params, every record kind), and on the error path of a bad manifest. */
static void out_of_memory_paths(void **st) {
  int fds = open_fds();
  char dir[700];
  fail_each_allocation(g_pkg, "first", CAKE_OK);
  char *m = fixture_q(SYNTH);
  synth_dir(dir, sizeof dir, m);
  free(m);
  fail_each_allocation(dir, "p", CAKE_OK);
  m = fixture_replaced(SYNTH, "'stages': ['main']", "'stages': ['mian']");
  synth_dir(dir, sizeof dir, m);
  free(m);
  fail_each_allocation(dir, "p", CAKE_ERR_PACKAGE);
  assert_int_equal(open_fds(), fds);
}

/* The context-parallel programs as cakec packages them (schema 3): they
 * load, plan with cake_plan_set_partition on every rank, and cake_launch
 * refuses their exchanging entry before any driver call. */
static void compiled_kcp_packages_plan(void **st) {
  static const char *const specs[] = {"kda_kcp_fwd", "kcp_cumsum"};
  for (int i = 0; i < 2; i++) {
    char dir[700], path[600];
    snprintf(path, sizeof path, CAKE_SOURCE_DIR "/tests/unit/kcp/%s.cake", specs[i]);
    assert_int_equal(compile_spec_text(NULL, path, specs[i], dir, sizeof dir), 0);
    cake_package *pkg;
    if (cake_package_load(dir, NULL, &pkg)) fail_msg("%s", cake_last_error());
    const cake_program *prog = &pkg->programs[0];
    assert_true(prog->ranks_dim >= 0);
    assert_true(prog->nexchanges >= 1);
    static const int32_t cu[] = {0, 1000, 1001, 1001, 4096, 6000};
    for (int R = 1; R <= 4; R++)
      for (int r = 0; r < R; r++) {
        cake_plan *plan;
        assert_int_equal(cake_plan_create(prog, &plan), CAKE_OK);
        for (int d = 0; d < prog->ndims; d++)
          if (d != prog->tokens_dim && d != prog->docs_dim && d != prog->chunks_dim && d != prog->ranks_dim &&
              d != prog->frags_dim)
            assert_int_equal(cake_plan_set_dim(plan, prog->dims[d], 4), CAKE_OK);
        assert_int_equal(cake_plan_set_partition(plan, cu, 5, 6000, R, r, CAKE_LAYOUT_ZIGZAG, 64), CAKE_OK);
        if (cake_plan_finalize(plan)) fail_msg("%s R=%d rank %d: %s", specs[i], R, r, cake_last_error());
        size_t off, bytes;
        assert_int_equal(cake_plan_item(plan, "frag_table", &off, &bytes), CAKE_OK);
        assert_int_equal(bytes, (size_t)plan->frag_ints * 4);
        assert_int_equal(cake_launch(plan, "fwd", NULL, 0, 0, 0, 0, 0, NULL), CAKE_ERR_ARGUMENT);
        assert_non_null(strstr(cake_last_error(), "exchanges data with other ranks (stage '"));
        cake_plan_free(plan);
      }
    cake_package_free(pkg);
  }
}

static void variants_by_options(void **st) {
  cake_package *pkg;
  assert_int_equal(cake_package_load(g_opts, NULL, &pkg), CAKE_OK);
  assert_int_equal(cake_package_program_count(pkg), 6);
  const cake_program *p;
  assert_int_equal(cake_package_program(pkg, "opts", &p), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(),
                      "program 'opts' has 6 variants in the package; choose one with cake_package_variant");
  assert_int_equal(cake_package_variant(pkg, "opts", NULL, &p), CAKE_OK); /* every option at its default */
  assert_string_equal(cake_program_variant(p), "mode=a,fast=true");
  assert_int_equal(cake_package_variant(pkg, "opts", "mode=b", &p), CAKE_OK);
  assert_string_equal(cake_program_variant(p), "mode=b,fast=true");
  assert_int_equal(cake_package_variant(pkg, "opts", "fast=false,mode=c", &p), CAKE_OK);
  assert_string_equal(cake_program_variant(p), "mode=c,fast=false");
  assert_int_equal(cake_package_variant(pkg, "opts", "mode=b,nope=1", &p), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "program 'opts' has no option 'nope'");
  assert_int_equal(cake_package_variant(pkg, "opts", "mode=z", &p), CAKE_ERR_NOT_FOUND);
  assert_string_equal(cake_last_error(), "the package has no variant of 'opts' with options 'mode=z'");
  /* each element is name=value, a known name given once with a value */
  static const struct {
    const char *options, *msg;
  } bad[] = {
      {"mode=b,mode=c", "option 'mode' is given twice in 'mode=b,mode=c'"},
      {"mode=b,", "options 'mode=b,' have an empty element (the form is name=value,name=value)"},
      {",mode=b", "options ',mode=b' have an empty element (the form is name=value,name=value)"},
      {"mode=b,,fast=true", "options 'mode=b,,fast=true' have an empty element (the form is name=value,name=value)"},
      {",", "options ',' have an empty element (the form is name=value,name=value)"},
      {"mode", "option element 'mode' in 'mode' is not of the form name=value"},
      {"=b", "option element '=b' in '=b' is not of the form name=value"},
      {"mode=", "option 'mode' has an empty value"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(cake_package_variant(pkg, "opts", bad[i].options, &p), CAKE_ERR_ARGUMENT);
    assert_string_equal(cake_last_error(), bad[i].msg);
  }
  assert_int_equal(cake_package_variant(pkg, "opts", "", &p), CAKE_OK);
  assert_string_equal(cake_program_variant(p), "mode=a,fast=true");
  assert_int_equal(cake_package_variant(pkg, "first", NULL, &p), CAKE_ERR_NOT_FOUND);
  assert_null(cake_program_variant(NULL));
  cake_package_free(pkg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(loads_and_describes),  cmocka_unit_test(plan_layout_and_docs),
      cmocka_unit_test(validation_messages),  cmocka_unit_test(integrity_failures),
      cmocka_unit_test(sha256_matches_openssl), cmocka_unit_test(json_reader),
      cmocka_unit_test(out_of_memory_paths),  cmocka_unit_test(variants_by_options),
      cmocka_unit_test(synthetic_package_loads_and_plans), cmocka_unit_test(manifest_values_are_validated),
      cmocka_unit_test(live_ranges_are_validated), cmocka_unit_test(temps_share_by_live_range),
      cmocka_unit_test(oversized_requirements_are_rejected), cmocka_unit_test(requirements_are_checked_at_finalize),
      cmocka_unit_test(compiled_requirement_is_enforced),
      cmocka_unit_test(parameter_requirement_is_enforced),
      cmocka_unit_test(options_are_chosen_from_the_problem), cmocka_unit_test(compiled_prefer_chooses),
      cmocka_unit_test(duplicate_programs_are_rejected), cmocka_unit_test(audit_manifests),
      cmocka_unit_test(missing_file_names_its_cause), cmocka_unit_test(files_stay_inside_the_package),
      cmocka_unit_test(only_regular_files_are_read), cmocka_unit_test(kernels_use_the_hashed_bytes),
      cmocka_unit_test(null_and_out_of_range_arguments), cmocka_unit_test(cu_seqlens_are_validated),
      cmocka_unit_test(sizes_never_wrap),
      cmocka_unit_test(grids_stay_in_range), cmocka_unit_test(missing_driver_is_named),
      cmocka_unit_test(compiled_kcp_packages_plan),
  };
  return cmocka_run_group_tests(tests, make_package, remove_package);
}
