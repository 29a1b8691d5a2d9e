/* cakec.c - the command-line driver, a thin layer over cake_compile();
 * `cakec run` runs a program on the CPU interpreter (run.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cake.h"
#include "run.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: cakec [options] SPEC.cake...\n"
          "       cakec run SPEC.cake [--entry NAME] [--dim NAME=N] [--in NAME=FILE.npy] ...\n"
          "                 run an entry on the CPU interpreter, .npy in and out (cakec run --help)\n"
          "  --emit=KIND    header | ast | cir | live | mlir | llvm | ptx | cubin | fatbin | package (default: package);\n"
          "                 header: typed C launchers for each program (a header-only C file)\n"
          "  --arch=LIST    comma-separated targets (default: %s)\n"
          "  -o PATH        output directory (package, cubin, fatbin) or file (text forms; default stdout)\n"
          "  --option N=V   compile only the variants with option N = V (repeatable; default: every variant);\n"
          "                 P.N=V: only program P's option N\n"
          "  --max-errors=N stop reporting after N errors (default 20)\n"
          "  -j N, --jobs=N compile N kernels at once (default: the number of online CPUs)\n"
          "  --cache-dir=DIR  reuse compiled kernels from DIR and add new ones (default: $CAKE_CACHE_DIR;\n"
          "                 unset: no cache; --cache-dir= turns it off)\n"
          "  --time         say where the time went (a note on stderr)\n"
          "  --targets      list the targets: limits, code-generation path, features\n"
          "  --version      print the compiler version\n",
          cake_default_archs());
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "run")) return cakec_run(argc - 1, argv + 1);
  cake_options opt = {0};
  const char *out = NULL;
  char *options = NULL;
  size_t options_len = 0;
  cake_source *srcs = calloc((size_t)argc, sizeof *srcs);
  if (!srcs) {
    fputs("cakec: out of memory\n", stderr);
    return 2;
  }
  int n = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strncmp(a, "--emit=", 7)) opt.emit = a + 7;
    else if (!strncmp(a, "--arch=", 7)) opt.archs = a + 7;
    else if (!strncmp(a, "--max-errors=", 13)) opt.max_errors = atoi(a + 13);
    else if (!strncmp(a, "--option", 8) && (a[8] == '=' || (!a[8] && i + 1 < argc))) {
      const char *v = a[8] == '=' ? a + 9 : argv[++i];
      size_t n0 = options_len;
      options_len += strlen(v) + 1;
      char *grown = realloc(options, options_len + 1);
      if (!grown) {
        fputs("cakec: out of memory\n", stderr);
        return 2;
      }
      options = grown;
      sprintf(options + n0, "%s%s", n0 ? "," : "", v);
      if (!n0) options_len--;
      opt.options = options;
    }
    else if (!strcmp(a, "-o") && i + 1 < argc) out = argv[++i];
    else if (!strncmp(a, "--jobs=", 7) || (!strncmp(a, "-j", 2) && (a[2] || i + 1 < argc))) {
      const char *v = a[1] == '-' ? a + 7 : a[2] ? a + 2 : argv[++i];
      char *end;
      long j = strtol(v, &end, 10);
      if (!*v || *end || j < 1 || j > 1024) {
        fprintf(stderr, "cakec: error: -j expects a number of jobs from 1 to 1024, got '%s'\n", v);
        free(srcs);
        free(options);
        return 2;
      }
      opt.jobs = (int)j;
    } else if (!strncmp(a, "--cache-dir=", 12)) opt.cache_dir = a + 12;
    else if (!strcmp(a, "--cache-dir") && i + 1 < argc) opt.cache_dir = argv[++i];
    else if (!strcmp(a, "--time")) opt.timing = 1;
    else if (!strcmp(a, "--targets")) {
      fputs(cake_target_table(), stdout);
      free(srcs);
      free(options);
      return 0;
    } else if (!strcmp(a, "--version")) {
      printf("%s\nbuild %s\n", cake_version(), *cake_build_id() ? cake_build_id() : "(no build id)");
      free(srcs);
      return 0;
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      free(srcs);
      return 0;
    } else if (a[0] == '-') {
      fprintf(stderr, "cakec: error: unknown option '%s'\n", a);
      usage(stderr);
      free(srcs);
      return 2;
    } else {
      srcs[n].name = a;
      srcs[n].text = NULL;
      n++;
    }
  }
  if (n == 0) {
    usage(stderr);
    free(srcs);
    return 2;
  }
  int text_emit = opt.emit && (!strcmp(opt.emit, "header") || !strcmp(opt.emit, "ast") || !strcmp(opt.emit, "cir") || !strcmp(opt.emit, "live") || !strcmp(opt.emit, "mlir") ||
                               !strcmp(opt.emit, "llvm") || !strcmp(opt.emit, "ptx"));
  if (!text_emit) opt.output = out;
  cake_result *r;
  int rc = cake_compile(srcs, n, &opt, &r);
  fputs(cake_result_diagnostics(r), stderr);
  fputs(cake_result_notes(r), stderr);
  if (rc == 0 && text_emit) {
    FILE *f = out ? fopen(out, "wb") : stdout;
    if (!f) {
      fprintf(stderr, "cakec: error: cannot write '%s'\n", out);
      rc = 2;
    } else {
      fputs(cake_result_text(r), f);
      if (out) fclose(f);
    }
  }
  cake_result_free(r);
  free(srcs);
  free(options);
  return rc;
}
