/* test_api.c - the compiler as a library (compiler/cake.h): specs given as
 * strings, text returned, diagnostics returned rather than printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cake.h"

/* The compiler library's malloc (linked with --wrap=malloc): requests of
 * fail_from bytes or more fail, to reach the out-of-memory path. */
void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);
static size_t fail_from = SIZE_MAX;
void *__wrap_malloc(size_t n) { return n >= fail_from ? NULL : __real_malloc(n); }

static const char *SPEC =
    "program api\n"
    "dim T\n"
    "const C = 16\n"
    "sequence T, chunk C\n"
    "in x : bf16[T, 16]\n"
    "out y : f32[T, 16]\n"
    "kernel k over (c in chunks) {\n"
    "  a = load x[c, :]\n"
    "  store y[c, :] = a @ a.T\n"
    "}\n"
    "entry fwd = k\n";

static void compiles_a_string_to_ptx(void **st) {
  cake_source src = {"api.cake", SPEC};
  cake_options opt = {.emit = "ptx", .archs = "sm_90a"};
  cake_result *r;
  assert_int_equal(cake_compile(&src, 1, &opt, &r), 0);
  assert_string_equal(cake_result_diagnostics(r), "");
  assert_int_equal(cake_result_error_count(r), 0);
  assert_non_null(strstr(cake_result_text(r), ".target sm_90a"));
  assert_non_null(strstr(cake_result_text(r), "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
  cake_result_free(r);
}

static void returns_diagnostics(void **st) {
  cake_source src = {"bad.cake", "program bad\ndim T\nkernel k over (i in T) {\n  a = b\n}\n"};
  cake_options opt = {.emit = "cir"};
  cake_result *r;
  assert_int_equal(cake_compile(&src, 1, &opt, &r), 1);
  assert_int_equal(cake_result_error_count(r), 1);
  assert_string_equal(cake_result_diagnostics(r), "bad.cake:4:7: error: unknown name 'b'\n  a = b\n      ^\n");
  assert_string_equal(cake_result_text(r), "");
  cake_result_free(r);
}

static void rejects_bad_options(void **st) {
  cake_source src = {"api.cake", SPEC};
  cake_options opt = {.emit = "package"}; /* no output directory */
  cake_result *r;
  assert_int_equal(cake_compile(&src, 1, &opt, &r), 2);
  assert_non_null(strstr(cake_result_diagnostics(r), "give an output directory"));
  cake_result_free(r);
  cake_options opt2 = {.emit = "ptx", .archs = "sm_75"};
  assert_int_equal(cake_compile(&src, 1, &opt2, &r), 2);
  assert_non_null(strstr(cake_result_diagnostics(r), "unknown target 'sm_75'"));
  cake_result_free(r);
  /* a path that file names could not be built from without truncation */
  static char longdir[3000];
  memset(longdir, 'd', sizeof longdir - 1);
  cake_options opt3 = {.emit = "package", .archs = "sm_90a", .output = longdir};
  assert_int_equal(cake_compile(&src, 1, &opt3, &r), 2);
  assert_non_null(strstr(cake_result_diagnostics(r), "the output directory's path has more than 2048 characters"));
  cake_result_free(r);
  /* the same spec twice */
  cake_source twice[2] = {{"api.cake", SPEC}, {"api.cake", SPEC}};
  cake_options opt4 = {.emit = "cir"};
  assert_int_equal(cake_compile(twice, 2, &opt4, &r), 2);
  assert_string_equal(cake_result_diagnostics(r), "cakec: error: spec 'api.cake' is given twice\n");
  cake_result_free(r);
}

/* An internal error (here: out of memory in the arena) does not end the
 * process: cake_compile returns 3 with the message and frees what it holds. */
static void internal_error_returns_3(void **st) {
  cake_source src = {"api.cake", SPEC};
  cake_options opt = {.emit = "cir"};
  cake_result *r;
  fail_from = 64 * 1024; /* an arena block */
  int rc = cake_compile(&src, 1, &opt, &r);
  fail_from = SIZE_MAX;
  assert_int_equal(rc, 3);
  assert_non_null(strstr(cake_result_diagnostics(r), "cakec: error: internal error at "));
  assert_non_null(strstr(cake_result_diagnostics(r), "out of memory"));
  cake_result_free(r);
  /* and the next compilation works */
  assert_int_equal(cake_compile(&src, 1, &opt, &r), 0);
  cake_result_free(r);
}

static void same_output_twice(void **st) {
  cake_source src = {"api.cake", SPEC};
  cake_options opt = {.emit = "ptx", .archs = "sm_100a"};
  cake_result *a, *b;
  assert_int_equal(cake_compile(&src, 1, &opt, &a), 0);
  assert_int_equal(cake_compile(&src, 1, &opt, &b), 0);
  assert_string_equal(cake_result_text(a), cake_result_text(b));
  cake_result_free(a);
  cake_result_free(b);
}

/* A kernel that would take more arguments than the runtime passes is an
 * error at the kernel, not a crash. */
static void too_many_kernel_arguments(void **st) {
  char text[8192] = "program wide\ndim T\nconst C = 16\nsequence T, chunk C\n";
  char body[4096] = "kernel k over (c in chunks) {\n  s = 0.0";
  for (int i = 0; i < 64; i++) {
    sprintf(text + strlen(text), "in x%d : f32[T, 16]\n", i);
    sprintf(body + strlen(body), " + load x%d[c, :]", i);
  }
  strcat(text, "out y : f32[T, 16]\n");
  strcat(text, body);
  strcat(text, "\n  store y[c, :] = s\n}\n");
  cake_source src = {"wide.cake", text};
  cake_options opt = {.emit = "ptx", .archs = "sm_90a"};
  cake_result *r;
  assert_int_equal(cake_compile(&src, 1, &opt, &r), 1);
  assert_non_null(strstr(cake_result_diagnostics(r),
                         "wide.cake:70:8: error: kernel 'k' takes 67 arguments (the tensors it touches, its tables, "
                         "the dims and params it reads); at most 64 are supported: split it"));
  cake_result_free(r);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *s = calloc(1, 1 << 20);
  fread(s, 1, (1 << 20) - 1, f);
  fclose(f);
  return s;
}

/* Jobs and the cache change no byte of a package (its manifest pins every
 * file by sha256); an unusable cache directory is a warning. */
static void jobs_and_cache_change_nothing(void **st) {
  char dir[] = "/tmp/cake-api-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char cache[64], out[64], bad[128];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  const struct { int jobs; const char *cache; const char *from_cache; } runs[] = {
      {1, "", "(0 from the cache, lowered to PTX: 1 in 1 lowerings)"},
      {3, cache, "(0 from the cache, lowered to PTX: 1 in 1 lowerings)"},
      {2, cache, "(1 from the cache, lowered to PTX: 0 in 0 lowerings)"}};
  char *first = NULL;
  for (int i = 0; i < 3; i++) {
    snprintf(out, sizeof out, "%s/o%d", dir, i);
    cake_source src = {"api.cake", SPEC};
    cake_options opt = {.emit = "package", .archs = "sm_90a", .output = out, .jobs = runs[i].jobs,
                        .cache_dir = runs[i].cache, .timing = 1};
    cake_result *r;
    assert_int_equal(cake_compile(&src, 1, &opt, &r), 0);
    assert_non_null(strstr(cake_result_notes(r), runs[i].from_cache));
    cake_result_free(r);
    snprintf(out, sizeof out, "%s/o%d/manifest.json", dir, i);
    char *m = slurp(out);
    assert_non_null(m);
    if (!first) first = m;
    else {
      assert_string_equal(first, m);
      free(m);
    }
  }
  free(first);
  snprintf(bad, sizeof bad, "%s/o0/manifest.json/cache", dir);
  snprintf(out, sizeof out, "%s/o3", dir);
  cake_source src = {"api.cake", SPEC};
  cake_options opt = {.emit = "package", .archs = "sm_90a", .output = out, .cache_dir = bad};
  cake_result *r;
  assert_int_equal(cake_compile(&src, 1, &opt, &r), 0);
  assert_non_null(strstr(cake_result_notes(r), "warning: not using the cache"));
  cake_result_free(r);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(compiles_a_string_to_ptx),
      cmocka_unit_test(returns_diagnostics),
      cmocka_unit_test(rejects_bad_options),
      cmocka_unit_test(same_output_twice),
      cmocka_unit_test(internal_error_returns_3),
      cmocka_unit_test(too_many_kernel_arguments),
      cmocka_unit_test(jobs_and_cache_change_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
