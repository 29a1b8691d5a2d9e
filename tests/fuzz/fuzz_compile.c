/* fuzz_compile.c - libFuzzer harness for the compiler's front end.
 *
 * Each input is spec text given to cake_compile() (the public API of cake.h)
 * with emit "cir": lexer, parser, semantic analysis of every variant and the
 * CIR dump. Inputs with a NUL byte go through a file, so that the NUL reaches
 * the lexer; others are passed as text. Besides the sanitizers, the harness
 * checks the API's contract: a result is always returned, the status is one
 * of 0..2 (3, an internal error, is a bug), a success has text, an error has
 * diagnostics.
 *
 * CAKE_FUZZ_EMIT=ast|cir|mlir|llvm|ptx picks another emit (mlir and later
 * lower every kernel: far slower, for long runs).
 * Build: cmake -DCAKE_FUZZ=ON with clang; run: scripts/fuzz.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cake.h"

static const char *emit = "cir";
static char tmpdir[256];
static char tmpfile_path[300];

static void cleanup(void) {
  if (tmpfile_path[0]) unlink(tmpfile_path);
  if (tmpdir[0]) rmdir(tmpdir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *e = getenv("CAKE_FUZZ_EMIT");
  if (e && *e) emit = e;
  const char *t = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/cake-fuzz-compile-XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("fuzz_compile: mkdtemp");
    abort();
  }
  snprintf(tmpfile_path, sizeof tmpfile_path, "%s/input.cake", tmpdir);
  atexit(cleanup);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cake_source src = {"input.cake", NULL};
  char *text = NULL;
  if (memchr(data, 0, size)) { /* a NUL: only a file carries it to the lexer */
    FILE *f = fopen(tmpfile_path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
      perror("fuzz_compile: writing the input");
      abort();
    }
    src.name = tmpfile_path;
  } else {
    text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    src.text = text;
  }
  cake_options opt = {.emit = emit, .archs = "sm_90a", .jobs = 1, .cache_dir = "", .max_errors = 0};
  cake_result *r = NULL;
  int rc = cake_compile(&src, 1, &opt, &r);
  if (!r) {
    fprintf(stderr, "fuzz_compile: cake_compile returned %d and no result\n", rc);
    abort();
  }
  const char *diag = cake_result_diagnostics(r), *out = cake_result_text(r);
  if (rc < 0 || rc > 2 || !diag || (rc == 0 && (!out || cake_result_error_count(r) != 0)) ||
      (rc == 1 && (!diag[0] || cake_result_error_count(r) <= 0))) {
    fprintf(stderr, "fuzz_compile: status %d, %d errors, diagnostics:\n%s\n", rc, cake_result_error_count(r),
            diag ? diag : "(null)");
    abort();
  }
  cake_result_free(r);
  free(text);
  return 0;
}
