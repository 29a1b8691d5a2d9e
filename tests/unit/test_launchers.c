/* test_launchers.c - the typed C launchers that `cakec --emit=header` writes
 * (compiler/header.c), compiled here against the runtime: plan through
 * them, bind by field, validate, and the errors they report. The headers
 * are generated at build time from specs/first/first.cake,
 * specs/kda/kda_fwd.cake and tests/lit/diag/options.cake; packages are
 * compiled into a temporary directory (sm_90a; no GPU is needed: nothing is
 * launched). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cake.h"
#include "first.h"
#include "kda_fwd.h"
#include "opts.h"
#include "rt.h" /* plan->prog: which variant a plan took */

static char g_dir[500];

static int compile(const char *spec, const char *options, const char *sub) {
  char out[600];
  snprintf(out, sizeof out, "%s/%s", g_dir, sub);
  cake_source src = {spec, NULL};
  cake_options opt = {.emit = "package", .archs = "sm_90a", .output = out, .options = options};
  cake_result *r;
  int rc = cake_compile(&src, 1, &opt, &r);
  if (rc) fprintf(stderr, "%s", cake_result_diagnostics(r));
  cake_result_free(r);
  return rc;
}

static int setup(void **st) {
  (void)st;
  const char *t = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/cake-gen-XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(g_dir)) return -1;
  return compile(CAKE_SOURCE_DIR "/specs/first/first.cake", NULL, "first") ||
         compile(CAKE_SOURCE_DIR "/tests/lit/diag/options.cake", NULL, "opts") ||
         compile(CAKE_SOURCE_DIR "/specs/kda/kda_fwd.cake", "gate=external,qk_norm=false,beta_logits=true", "kda");
}

static int teardown(void **st) {
  (void)st;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

static cake_package *load(const char *sub) {
  char dir[600];
  snprintf(dir, sizeof dir, "%s/%s", g_dir, sub);
  cake_package *pkg = NULL;
  assert_int_equal(cake_package_load(dir, NULL, &pkg), CAKE_OK);
  return pkg;
}

/* a contiguous tensor at a fake (aligned) device address */
static cake_tensor tensor(uint64_t at, cake_dtype dt, int rank, ...) {
  cake_tensor t;
  memset(&t, 0, sizeof t);
  t.data = at;
  t.dtype = dt;
  t.rank = rank;
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; i++) t.shape[i] = va_arg(ap, int64_t);
  va_end(ap);
  return t;
}

static void first_plans_and_validates_by_field(void **st) {
  (void)st;
  cake_package *pkg = load("first");
  first_dims d = {.T = 256, .H = 2};
  cake_plan *plan;
  assert_int_equal(first_plan(pkg, NULL, &d, NULL, &plan), CAKE_OK);
  int64_t T = 256, H = 2, D = 64;
  first_tensors t = {
      .x = tensor(0x10000, CAKE_BF16, 3, T, H, D),
      .y = tensor(0x20000, CAKE_BF16, 3, T, H, D),
      .w = tensor(0x30000, CAKE_F32, 2, H, D),
      .z = tensor(0x40000, CAKE_F32, 3, T, H, D),
  };
  assert_int_equal(first_validate_fwd(plan, &t), CAKE_OK);
  t.z.shape[1] = 3; /* the wrong H */
  assert_int_equal(first_validate_fwd(plan, &t), CAKE_ERR_TENSOR);
  assert_non_null(strstr(cake_last_error(), "z"));
  t.z.shape[1] = 2;
  t.w.data = 0; /* a required tensor left out */
  assert_int_equal(first_validate_fwd(plan, &t), CAKE_ERR_ARGUMENT);
  assert_non_null(strstr(cake_last_error(), "'w'"));
  assert_int_equal(first_validate_fwd(NULL, &t), CAKE_ERR_ARGUMENT);
  assert_non_null(strstr(cake_last_error(), "first_validate_fwd"));
  cake_plan_free(plan);
  assert_int_equal(first_plan(NULL, NULL, &d, NULL, &plan), CAKE_ERR_ARGUMENT);
  assert_null(plan);
  d.H = -1; /* the runtime's own check of the dims */
  assert_int_not_equal(first_plan(pkg, NULL, &d, NULL, &plan), CAKE_OK);
  assert_non_null(strstr(cake_last_error(), "H"));
  assert_null(plan);
  cake_package_free(pkg);
}

static void options_pick_the_variant(void **st) {
  (void)st;
  cake_package *pkg = load("opts");
  char name[64];
  opts_options o = {0};
  assert_int_equal(opts_variant_name(&o, name, sizeof name), CAKE_OK);
  assert_string_equal(name, "mode=a,fast=true"); /* the defaults */
  o.mode = OPTS_MODE_C;
  o.fast = OPTS_FAST_FALSE;
  assert_int_equal(opts_variant_name(&o, name, sizeof name), CAKE_OK);
  assert_string_equal(name, "mode=c,fast=false");
  volatile size_t small = 8; /* (not a constant: no truncation warning) */
  assert_int_equal(opts_variant_name(&o, name, small), CAKE_ERR_ARGUMENT);
  assert_non_null(strstr(cake_last_error(), "too small"));
  o.mode = (opts_mode)7;
  assert_int_equal(opts_variant_name(&o, name, sizeof name), CAKE_ERR_ARGUMENT);
  assert_non_null(strstr(cake_last_error(), "option mode"));
  cake_plan *plan;
  assert_int_equal(opts_plan(pkg, &o, &(opts_dims){.T = 64}, NULL, &plan), CAKE_ERR_ARGUMENT);
  o.mode = OPTS_MODE_C;
  assert_int_equal(opts_plan(pkg, &o, &(opts_dims){.T = 64}, NULL, &plan), CAKE_OK);
  int64_t chunks;
  assert_int_equal(cake_plan_get_dim(plan, "chunks", &chunks), CAKE_OK);
  assert_int_equal(chunks, 4);
  cake_plan_free(plan);
  cake_package_free(pkg);
}

static void kda_binds_what_the_variant_has(void **st) {
  (void)st;
  cake_package *pkg = load("kda");
  int32_t cu[] = {0, 100, 101, 300};
  kda_fwd_dims d = {.T = 300, .H = 2, .HV = 3, .cu_seqlens = cu, .ndocs = 3};
  kda_fwd_options o = {.gate = KDA_FWD_GATE_EXTERNAL, .qk_norm = KDA_FWD_QK_NORM_FALSE,
                       .vblock = KDA_FWD_VBLOCK_V16};
  kda_fwd_params p = {.scale = {1, 0.25}};
  cake_plan *plan;
  /* value heads that are not a multiple of the key heads: the spec's requirement */
  assert_int_equal(kda_fwd_plan(pkg, &o, &d, &p, &plan), CAKE_ERR_PLAN);
  assert_non_null(strstr(cake_last_error(), "dims break 'HV % H == 0' (kda_fwd.cake:"));
  assert_non_null(strstr(cake_last_error(), "): HV = 3, H = 2"));
  d.HV = 2;
  assert_int_equal(kda_fwd_plan(pkg, &o, &d, &p, &plan), CAKE_OK);
  int64_t n;
  assert_int_equal(cake_plan_get_dim(plan, "N", &n), CAKE_OK);
  assert_int_equal(n, 3);
  int64_t T = 300, H = 2;
  kda_fwd_tensors t = {
      .q = tensor(0x100000, CAKE_BF16, 3, T, H, (int64_t)128),
      .k = tensor(0x200000, CAKE_BF16, 3, T, H, (int64_t)128),
      .v = tensor(0x300000, CAKE_BF16, 3, T, H, (int64_t)128),
      .g = tensor(0x400000, CAKE_F32, 3, T, H, (int64_t)128),
      .beta = tensor(0x500000, CAKE_BF16, 2, T, H),
      .o = tensor(0x600000, CAKE_BF16, 3, T, H, (int64_t)128),
  };
  assert_int_equal(kda_fwd_validate_fwd(plan, &t), CAKE_OK); /* no h0, ht: optional */
  t.ht = tensor(0x700000, CAKE_F32, 4, (int64_t)3, H, (int64_t)128, (int64_t)128);
  assert_int_equal(kda_fwd_validate_fwd(plan, &t), CAKE_OK);
  t.A_log = tensor(0x800000, CAKE_F32, 1, H); /* the external gate has no A_log */
  assert_int_equal(kda_fwd_validate_fwd(plan, &t), CAKE_ERR_ARGUMENT);
  assert_non_null(strstr(cake_last_error(), "A_log"));
  t.A_log.data = 0;
  t.g.dtype = CAKE_BF16; /* the external gate's g is f32 */
  assert_int_equal(kda_fwd_validate_fwd(plan, &t), CAKE_ERR_TENSOR);
  cake_plan_free(plan);
  /* vblock left at DEFAULT: the spec's `prefer v16 when N * HV * (V / 16) <= 2 * SMS` */
  o.vblock = KDA_FWD_VBLOCK_DEFAULT;
  setenv("CAKE_DEVICE_SMS", "132", 1);
  assert_int_equal(kda_fwd_plan(pkg, &o, &d, &p, &plan), CAKE_OK); /* 3 * 2 * 8 = 48 <= 264 */
  assert_string_equal(plan->prog->variant, "gate=external,qk_norm=false,beta_logits=true,vblock=v16");
  cake_plan_free(plan);
  setenv("CAKE_DEVICE_SMS", "23", 1);
  assert_int_equal(kda_fwd_plan(pkg, &o, &d, &p, &plan), CAKE_OK); /* 48 > 46 */
  assert_string_equal(plan->prog->variant, "gate=external,qk_norm=false,beta_logits=true,vblock=v32");
  cake_plan_free(plan);
  d.cu_seqlens = NULL; /* one document: 16 <= 46 */
  assert_int_equal(kda_fwd_plan(pkg, &o, &d, &p, &plan), CAKE_OK);
  assert_string_equal(plan->prog->variant, "gate=external,qk_norm=false,beta_logits=true,vblock=v16");
  cake_plan_free(plan);
  o.vblock = KDA_FWD_VBLOCK_V32; /* given wins */
  assert_int_equal(kda_fwd_plan(pkg, &o, &d, &p, &plan), CAKE_OK);
  assert_string_equal(plan->prog->variant, "gate=external,qk_norm=false,beta_logits=true,vblock=v32");
  cake_plan_free(plan);
  /* the hand-written entry keeps its behaviour: vblock 0 chooses, 16 / 32 force */
  cake_kda_options ko = {"external", 0, 1, 0.25, 0, 0, 2};
  assert_int_equal(cake_kda_plan(pkg, &ko, 300, 2, NULL, 0, &plan), CAKE_OK);
  assert_string_equal(plan->prog->variant, "gate=external,qk_norm=false,beta_logits=true,vblock=v16");
  cake_plan_free(plan);
  assert_int_equal(cake_kda_plan(pkg, &ko, 300, 2, cu, 3, &plan), CAKE_OK);
  assert_string_equal(plan->prog->variant, "gate=external,qk_norm=false,beta_logits=true,vblock=v32");
  cake_plan_free(plan);
  ko.vblock = 16;
  assert_int_equal(cake_kda_plan(pkg, &ko, 300, 2, cu, 3, &plan), CAKE_OK);
  assert_string_equal(plan->prog->variant, "gate=external,qk_norm=false,beta_logits=true,vblock=v16");
  cake_plan_free(plan);
  unsetenv("CAKE_DEVICE_SMS");
  d.cu_seqlens = cu;
  o.gate = KDA_FWD_GATE_SAFE; /* not compiled into this package */
  assert_int_equal(kda_fwd_plan(pkg, &o, &d, &p, &plan), CAKE_ERR_NOT_FOUND);
  cake_package_free(pkg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(first_plans_and_validates_by_field),
      cmocka_unit_test(options_pick_the_variant),
      cmocka_unit_test(kda_binds_what_the_variant_has),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
