/* test_runtime.c - the package, the plan and tensor validation in libcakert,
 * plus its SHA-256 (against OpenSSL) and its JSON reader. A package is
 * compiled with the compiler library into a temporary directory first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cake.h"
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

/* Every allocation failure while loading and planning comes back as
 * CAKE_ERR_MEMORY, with nothing leaked and nothing dereferenced. */
static void out_of_memory_paths(void **st) {
  int loaded = 0;
  for (long k = 0; k < 20000 && !loaded; k++) {
    FailAlloc f = {0, k, 0};
    cake_allocator al = {fail_alloc, fail_free, &f};
    cake_package *pkg = NULL;
    cake_status s = cake_package_load(g_pkg, &al, &pkg);
    if (s == CAKE_OK) {
      const cake_program *prog;
      assert_int_equal(cake_package_program(pkg, "first", &prog), CAKE_OK);
      cake_plan *plan = NULL;
      s = cake_plan_create(prog, &plan);
      if (s == CAKE_OK) {
        cake_plan_set_dim(plan, "T", 1000);
        cake_plan_set_dim(plan, "H", 2);
        s = cake_plan_finalize(plan);
        loaded = s == CAKE_OK;
        cake_plan_free(plan);
      }
      cake_package_free(pkg);
    }
    if (!loaded) assert_int_equal(s, CAKE_ERR_MEMORY);
    assert_int_equal(f.live, 0);
  }
  assert_true(loaded);
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
  };
  return cmocka_run_group_tests(tests, make_package, remove_package);
}
