/* consumer.c - a host program built against an installed Cake: it compiles a
 * spec with the compiler library into a package, loads the package with the
 * runtime and plans a problem. Planning needs no GPU, so this runs anywhere
 * the compiler's tools (ptxas, fatbinary) are installed.
 *
 *   consumer OUT_DIR [ARCH]   (ARCH defaults to sm_90a)
 */
#include <stdio.h>

#include "cake.h"
#include "cake_runtime.h"

static const char *spec =
    "program scale_rows\n"
    "dim T, H\n"
    "const C = 64, D = 64\n"
    "sequence T, chunk C\n"
    "in  x : bf16[T, H, D]\n"
    "in  w : f32[H, D]\n"
    "out y : f32[T, H, D]\n"
    "kernel main over (c in chunks, h in H) {\n"
    "  store y[c, h, :] = load x[c, h, :] * load w[h, :][None, :]\n"
    "}\n"
    "entry fwd = main\n";

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s OUT_DIR [ARCH]\n", argv[0]);
    return 2;
  }
  cake_source src = {"scale_rows.cake", spec};
  cake_options opt = {.emit = "package", .archs = argc > 2 ? argv[2] : "sm_90a", .output = argv[1]};
  cake_result *r;
  int rc = cake_compile(&src, 1, &opt, &r);
  if (rc) {
    fprintf(stderr, "compile failed (%d):\n%s", rc, r ? cake_result_diagnostics(r) : "");
    cake_result_free(r);
    return 1;
  }
  cake_result_free(r);

  cake_package *pkg;
  const cake_program *prog;
  cake_plan *plan;
  size_t ws = 0;
  if (cake_package_load(argv[1], NULL, &pkg) || cake_package_program(pkg, "scale_rows", &prog) ||
      cake_plan_create(prog, &plan)) {
    fprintf(stderr, "runtime: %s\n", cake_last_error());
    return 1;
  }
  if (cake_plan_set_dim(plan, "T", 1000) || cake_plan_set_dim(plan, "H", 4) || cake_plan_finalize(plan) ||
      cake_plan_workspace_bytes(plan, &ws)) {
    fprintf(stderr, "plan: %s\n", cake_last_error());
    return 1;
  }
  printf("consumer: cake %s compiled scale_rows; plan T=1000 H=4: %lld chunks, workspace %zu bytes\n", cake_version(),
         (long long)cake_plan_chunk_count(plan), ws);
  cake_plan_free(plan);
  cake_package_free(pkg);
  return 0;
}
