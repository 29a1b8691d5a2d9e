/* test_launchers.c - the typed C launchers that `cakec --emit=header` writes
 * (compiler/header.c), compiled here against the runtime: plan through
 * them, bind by field, validate, and the errors they report. The headers
 * are generated at build time (build/gen) from specs/first/first.cake,
 * specs/kda/kda_fwd.cake, specs/kda/kda_train.cake and
 * tests/lit/diag/options.cake; the KDA examples, GPU tests and fuzz harness
 * launch through the same headers. Packages are compiled into a temporary
 * directory (sm_90a; no GPU is needed: nothing is launched). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cake.h"
#include "first.h"
#include "kda_fwd.h"
#include "kda_train.h"
#include "opts.h"
#include "rt.h" /* plan->prog: which variant a plan took; the temps' live ranges */

/* The workspace bytes of the KDA plans below, as README.md gives them:
 * kda_train 4,624 B per token and value head (ckpt) or 3,600 (states, with
 * 1,024 saved), kda_fwd 1,160, and the tables */
#define WS_CKPT_SINGLE ((size_t)2424316160)
#define WS_CKPT_PACKED ((size_t)4850745856)
#define WS_STATES_SINGLE ((size_t)1887445248)
#define WS_STATES_PACKED ((size_t)3775955456)
#define WS_FWD_SINGLE ((size_t)608182528)
#define WS_FWD_PACKED ((size_t)1216373248)

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
         compile(CAKE_SOURCE_DIR "/specs/kda/kda_fwd.cake", "gate=external,qk_norm=false,beta_logits=true", "kda") ||
         compile(CAKE_SOURCE_DIR "/specs/kda/kda_train.cake", "gate=softplus,qk_norm=true,beta_logits=true,save=states,cp=none",
                 "kda_train") ||
         compile(CAKE_SOURCE_DIR "/specs/kda/kda_train.cake", "gate=softplus,qk_norm=true,beta_logits=true,save=ckpt,cp=none",
                 "kda_train_ckpt");
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
  /* vblock left at DEFAULT: the spec's `prefer v16x1 when N * HV * (V / 16) <= SMS`,
   * then `prefer v16 when N * HV * (V / 16) <= 2 * SMS` */
  o.vblock = KDA_FWD_VBLOCK_DEFAULT;
  setenv("CAKE_DEVICE_SMS", "132", 1);
  assert_int_equal(kda_fwd_plan(pkg, &o, &d, &p, &plan), CAKE_OK); /* 3 * 2 * 8 = 48 <= 132 */
  assert_string_equal(plan->prog->variant, "gate=external,qk_norm=false,beta_logits=true,vblock=v16x1");
  cake_plan_free(plan);
  setenv("CAKE_DEVICE_SMS", "47", 1);
  assert_int_equal(kda_fwd_plan(pkg, &o, &d, &p, &plan), CAKE_OK); /* 48 > 47, 48 <= 94 */
  assert_string_equal(plan->prog->variant, "gate=external,qk_norm=false,beta_logits=true,vblock=v16");
  cake_plan_free(plan);
  setenv("CAKE_DEVICE_SMS", "23", 1);
  assert_int_equal(kda_fwd_plan(pkg, &o, &d, &p, &plan), CAKE_OK); /* 48 > 46: v32 */
  assert_string_equal(plan->prog->variant, "gate=external,qk_norm=false,beta_logits=true,vblock=v32");
  cake_plan_free(plan);
  d.cu_seqlens = NULL; /* one document: 16 <= 23 */
  assert_int_equal(kda_fwd_plan(pkg, &o, &d, &p, &plan), CAKE_OK);
  assert_string_equal(plan->prog->variant, "gate=external,qk_norm=false,beta_logits=true,vblock=v16x1");
  cake_plan_free(plan);
  o.vblock = KDA_FWD_VBLOCK_V32; /* given wins */
  assert_int_equal(kda_fwd_plan(pkg, &o, &d, &p, &plan), CAKE_OK);
  assert_string_equal(plan->prog->variant, "gate=external,qk_norm=false,beta_logits=true,vblock=v32");
  cake_plan_free(plan);
  d.cu_seqlens = cu; /* forced: v16 where the clause would take v32 */
  o.vblock = KDA_FWD_VBLOCK_V16;
  assert_int_equal(kda_fwd_plan(pkg, &o, &d, &p, &plan), CAKE_OK);
  assert_string_equal(plan->prog->variant, "gate=external,qk_norm=false,beta_logits=true,vblock=v16");
  cake_plan_free(plan);
  unsetenv("CAKE_DEVICE_SMS");
  o.gate = KDA_FWD_GATE_SAFE; /* not compiled into this package */
  assert_int_equal(kda_fwd_plan(pkg, &o, &d, &p, &plan), CAKE_ERR_NOT_FOUND);
  cake_package_free(pkg);
}

/* What the launcher and the runtime check before computing with a value:
 * options (each an enum value), dims and documents (cake_package_choose, F13),
 * params (cake_plan_set_param). */
static void kda_arguments_are_checked(void **st) {
  (void)st;
  cake_package *pkg = load("kda");
  int32_t cu[] = {0, 128};
  kda_fwd_dims d = {.T = 128, .H = 2, .HV = 2};
  kda_fwd_options o = {.gate = KDA_FWD_GATE_EXTERNAL, .qk_norm = KDA_FWD_QK_NORM_FALSE};
  cake_plan *plan = (cake_plan *)&d;
  assert_int_equal(kda_fwd_plan(NULL, &o, &d, NULL, &plan), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "kda_fwd_plan: pkg, d and out are required");
  assert_null(plan);
  assert_int_equal(kda_fwd_plan(pkg, &o, NULL, NULL, &plan), CAKE_ERR_ARGUMENT);
  assert_int_equal(kda_fwd_plan(pkg, &o, &d, NULL, NULL), CAKE_ERR_ARGUMENT);
  static const struct {
    kda_fwd_options o;
    const char *msg;
  } bad_options[] = {
      {{.gate = (kda_fwd_gate)4}, "kda_fwd: option gate is not one of its enum's values"},
      {{.gate = (kda_fwd_gate)-1}, "kda_fwd: option gate is not one of its enum's values"},
      {{.vblock = (kda_fwd_vblock)7}, "kda_fwd: option vblock is not one of its enum's values"},
      {{.qk_norm = (kda_fwd_qk_norm)3}, "kda_fwd: option qk_norm is not one of its enum's values"},
  };
  for (size_t i = 0; i < sizeof bad_options / sizeof bad_options[0]; i++) {
    assert_int_equal(kda_fwd_plan(pkg, &bad_options[i].o, &d, NULL, &plan), CAKE_ERR_ARGUMENT);
    assert_string_equal(cake_last_error(), bad_options[i].msg);
    assert_null(plan);
  }
  const struct { /* (not static: cu is a local) */
    kda_fwd_dims d;
    const char *msg;
  } bad_dims[] = {
      {{.T = 128, .H = INT64_MAX, .HV = 2}, "dim 'H' is 9223372036854775807; expected a value in [0, 2^31)"},
      {{.T = -1, .H = 2, .HV = 2}, "dim 'T' is -1; expected a value in [0, 2^31)"},
      {{.T = 128, .H = 2, .HV = -4}, "dim 'HV' is -4; expected a value in [0, 2^31)"},
      {{.T = 128, .H = 2, .HV = (int64_t)1 << 40}, "dim 'HV' is 1099511627776; expected a value in [0, 2^31)"},
      {{.T = 128, .H = 2, .HV = 2, .cu_seqlens = cu, .ndocs = (int64_t)1 << 40},
       "cake_package_choose: ndocs is 1099511627776; expected 0 (one document) to 2147483646"},
      {{.T = 128, .H = 2, .HV = 2, .cu_seqlens = cu, .ndocs = -1},
       "cake_package_choose: ndocs is -1; expected 0 (one document) to 2147483646"},
  };
  for (size_t i = 0; i < sizeof bad_dims / sizeof bad_dims[0]; i++) {
    assert_int_equal(kda_fwd_plan(pkg, &o, &bad_dims[i].d, NULL, &plan), CAKE_ERR_ARGUMENT);
    assert_string_equal(cake_last_error(), bad_dims[i].msg);
    assert_null(plan);
  }
  static const struct {
    kda_fwd_params p;
    const char *msg;
  } bad_params[] = {
      {{.scale = {1, NAN}}, "parameter 'scale' is f32; nan is not a finite f32 value"},
      {{.scale = {1, INFINITY}}, "parameter 'scale' is f32; inf is not a finite f32 value"},
      {{.lower_bound = {1, NAN}}, "parameter 'lower_bound' is f32; nan is not a finite f32 value"},
      {{.lower_bound = {1, -INFINITY}}, "parameter 'lower_bound' is f32; -inf is not a finite f32 value"},
  };
  for (size_t i = 0; i < sizeof bad_params / sizeof bad_params[0]; i++) {
    assert_int_equal(kda_fwd_plan(pkg, &o, &d, &bad_params[i].p, &plan), CAKE_ERR_ARGUMENT);
    assert_string_equal(cake_last_error(), bad_params[i].msg);
    assert_null(plan);
  }
  /* A param's value is checked against its type only: the spec states no
   * range, so a positive lower_bound (a growing state for the safe gate) is
   * the caller's to refuse. */
  kda_fwd_params p = {.scale = {1, 0.125}, .lower_bound = {1, 5}};
  assert_int_equal(kda_fwd_plan(pkg, &o, &d, &p, &plan), CAKE_OK);
  cake_plan_free(plan);
  cake_package_free(pkg);
}

/* kda_train through its launchers: the arguments, the save mode, and one
 * tensor struct for both entries, as the GPU test and the example bind it
 * (each entry validates what it is given; bwd needs do and the gradients). */
static void kda_train_binds_both_entries_from_one_struct(void **st) {
  (void)st;
  cake_package *first = load("first");
  kda_train_options o = {.gate = KDA_TRAIN_GATE_SOFTPLUS, .save = KDA_TRAIN_SAVE_STATES};
  int32_t cu[] = {0, 100, 101, 300};
  kda_train_dims d = {.T = 300, .H = 2, .HV = 4, .cu_seqlens = cu, .ndocs = 3};
  cake_plan *plan = (cake_plan *)&d;
  assert_int_equal(kda_train_plan(NULL, &o, &d, NULL, &plan), CAKE_ERR_ARGUMENT);
  assert_null(plan);
  o.save = (kda_train_save)3;
  assert_int_equal(kda_train_plan(first, &o, &d, NULL, &plan), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "kda_train: option save is not one of its enum's values");
  o.save = KDA_TRAIN_SAVE_STATES;
  assert_int_equal(kda_train_plan(first, &o, &d, NULL, &plan), CAKE_ERR_NOT_FOUND);
  assert_string_equal(cake_last_error(), "the package has no program 'kda_train'");
  kda_train_tensors t;
  memset(&t, 0, sizeof t);
  assert_int_equal(kda_train_launch_fwd(NULL, &t, 0, 0, 0, 0, NULL), CAKE_ERR_ARGUMENT);
  assert_int_equal(kda_train_launch_bwd(NULL, &t, 0, 0, 0, 0, NULL), CAKE_ERR_ARGUMENT);
  cake_package_free(first);

  cake_package *pkg = load("kda_train");
  assert_int_equal(kda_train_plan(pkg, &o, &d, NULL, &plan), CAKE_OK);
  assert_string_equal(plan->prog->variant, "gate=softplus,qk_norm=true,beta_logits=true,save=states,cp=none");
  size_t ws = 0, sv = 0;
  assert_int_equal(cake_plan_workspace_bytes(plan, &ws), CAKE_OK);
  assert_int_equal(cake_plan_saved_bytes(plan, &sv), CAKE_OK);
  assert_true(ws > 0);
  /* states: the per-chunk states of every value head, f32 [chunks, HV, 128, 128] */
  assert_int_equal(sv, (size_t)cake_plan_chunk_count(plan) * 4 * 128 * 128 * 4);
  int64_t T = 300, H = 2, HV = 4, N = 3, K = 128;
  uint64_t at = 0x1000000;
#define NEXT (at += 0x1000000)
  t = (kda_train_tensors){
      .q = tensor(NEXT, CAKE_BF16, 3, T, H, K),
      .k = tensor(NEXT, CAKE_BF16, 3, T, H, K),
      .v = tensor(NEXT, CAKE_BF16, 3, T, HV, K),
      .g = tensor(NEXT, CAKE_BF16, 3, T, HV, K),
      .A_log = tensor(NEXT, CAKE_F32, 1, HV),
      .dt_bias = tensor(NEXT, CAKE_F32, 2, HV, K),
      .beta = tensor(NEXT, CAKE_BF16, 2, T, HV),
      .h0 = tensor(NEXT, CAKE_F32, 4, N, HV, K, K),
      .o = tensor(NEXT, CAKE_BF16, 3, T, HV, K),
      .ht = tensor(NEXT, CAKE_F32, 4, N, HV, K, K),
      .dq = tensor(NEXT, CAKE_BF16, 3, T, H, K),
      .dk = tensor(NEXT, CAKE_BF16, 3, T, H, K),
      .dv = tensor(NEXT, CAKE_BF16, 3, T, HV, K),
      .dg = tensor(NEXT, CAKE_F32, 3, T, HV, K),
      .dbeta = tensor(NEXT, CAKE_F32, 2, T, HV),
      .dA_log = tensor(NEXT, CAKE_F32, 1, HV),
      .ddt_bias = tensor(NEXT, CAKE_F32, 2, HV, K),
      .dh0 = tensor(NEXT, CAKE_F32, 4, N, HV, K, K),
  };
  assert_int_equal(kda_train_validate_fwd(plan, &t), CAKE_OK); /* the gradients bound too: checked, not used */
  assert_int_equal(kda_train_validate_bwd(plan, &t), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "entry 'bwd' needs tensor 'do', which is not bound");
  t.do_ = tensor(NEXT, CAKE_BF16, 3, T, HV, K);
#undef NEXT
  assert_int_equal(kda_train_validate_bwd(plan, &t), CAKE_OK); /* dht, dh0 optional */
  t.dq.shape[1] = HV; /* dq has the key heads: [T, H, K] */
  assert_int_equal(kda_train_validate_fwd(plan, &t), CAKE_ERR_TENSOR);
  assert_int_equal(kda_train_validate_bwd(plan, &t), CAKE_ERR_TENSOR);
  assert_non_null(strstr(cake_last_error(), "dq"));
  cake_plan_free(plan);
  o.save = KDA_TRAIN_SAVE_DEFAULT; /* ckpt: not compiled into this package */
  assert_int_equal(kda_train_plan(pkg, &o, &d, NULL, &plan), CAKE_ERR_NOT_FOUND);
  cake_package_free(pkg);
}

/* ---- the workspace: temps share bytes when no entry needs them at once ---- */

/* Whether temps a and b of `prog` may hold values at the same time (as the
 * plan decides it, written again here from the manifest's ranges). */
static int live_together(const cake_program *prog, const RtTensor *a, const RtTensor *b) {
  if (a->pinned || b->pinned) return 1;
  for (int e = 0; e < prog->nentries; e++)
    if (a->live[e].first >= 0 && b->live[e].first >= 0 && a->live[e].first <= b->live[e].last &&
        b->live[e].first <= a->live[e].last)
      return 1;
  return 0;
}

typedef struct Layout {
  size_t ws, offset[RT_MAX_TENSORS], bytes[RT_MAX_TENSORS], table_end, sum, peak;
} Layout;

/* The plan's layout, checked: every item inside the workspace and aligned,
 * the tables first and apart, no two temps that are live together on common
 * bytes. `peak`: the most bytes the temps of one stage of one entry take
 * (a lower bound of any layout); `sum`: all temps, one after another. */
static void check_layout(const cake_plan *plan, Layout *L) {
  const cake_program *prog = plan->prog;
  memset(L, 0, sizeof *L);
  assert_int_equal(cake_plan_workspace_bytes(plan, &L->ws), CAKE_OK);
  assert_int_equal(L->ws % 256, 0);
  const char *tables[] = {"chunk_table", "doc_table"};
  for (int i = 0; i < 2; i++) {
    size_t off, n;
    if (cake_plan_item(plan, tables[i], &off, &n) != CAKE_OK) continue;
    assert_int_equal(off, L->table_end); /* the tables: first, one after another */
    L->table_end = (off + n + 255) / 256 * 256;
  }
  for (int i = 0; i < prog->ntensors; i++) {
    const RtTensor *t = &prog->tensors[i];
    if (t->role != ROLE_TEMP_) continue;
    assert_int_equal(cake_plan_item(plan, t->name, &L->offset[i], &L->bytes[i]), CAKE_OK);
    assert_int_equal(L->offset[i] % 256, 0);
    assert_true(L->offset[i] >= L->table_end);
    assert_true(L->offset[i] + L->bytes[i] <= L->ws);
    L->sum += (L->bytes[i] + 255) / 256 * 256;
    for (int j = 0; j < i; j++) {
      const RtTensor *u = &prog->tensors[j];
      if (u->role != ROLE_TEMP_ || !live_together(prog, t, u)) continue;
      if (L->offset[i] < L->offset[j] + L->bytes[j] && L->offset[j] < L->offset[i] + L->bytes[i])
        fail_msg("%s: temps '%s' [%zu, +%zu) and '%s' [%zu, +%zu) are live together but share bytes", prog->variant,
                 t->name, L->offset[i], L->bytes[i], u->name, L->offset[j], L->bytes[j]);
    }
  }
  for (int e = 0; e < prog->nentries; e++)
    for (int k = 0; k < prog->entries[e].n; k++) {
      size_t at = 0;
      for (int i = 0; i < prog->ntensors; i++) {
        const RtTensor *t = &prog->tensors[i];
        if (t->role == ROLE_TEMP_ && (t->pinned || (t->live[e].first >= 0 && t->live[e].first <= k && k <= t->live[e].last)))
          at += (L->bytes[i] + 255) / 256 * 256;
      }
      if (at > L->peak) L->peak = at;
    }
  assert_true(L->ws - L->table_end >= L->peak);
}

/* One program of a package at T tokens (in ndocs documents when cu is
 * given), H key heads and HV value heads: its layout, twice the same. */
static void plan_layout(cake_package *pkg, const char *name, const char *variant, int64_t T, int64_t H, int64_t HV,
                        const int32_t *cu, int ndocs, Layout *L) {
  const cake_program *prog;
  assert_int_equal(cake_package_variant(pkg, name, variant, &prog), CAKE_OK);
  cake_plan *plan[2];
  for (int r = 0; r < 2; r++) {
    assert_int_equal(cake_plan_create(prog, &plan[r]), CAKE_OK);
    assert_int_equal(cake_plan_set_dim(plan[r], "T", T), CAKE_OK);
    assert_int_equal(cake_plan_set_dim(plan[r], "H", H), CAKE_OK);
    assert_int_equal(cake_plan_set_dim(plan[r], "HV", HV), CAKE_OK);
    if (cu) assert_int_equal(cake_plan_set_docs(plan[r], cu, ndocs), CAKE_OK);
    assert_int_equal(cake_plan_finalize(plan[r]), CAKE_OK);
  }
  assert_int_equal(cake_plan_finalize(plan[1]), CAKE_OK); /* finalized again: the same */
  Layout again;
  check_layout(plan[0], L);
  check_layout(plan[1], &again);
  assert_memory_equal(L, &again, sizeof *L);
  cake_plan_free(plan[0]);
  cake_plan_free(plan[1]);
}

/* The shipped KDA programs: the workspace is what the stages need at once.
 * kda_fwd's temps are all live in both of its stages (nothing to share);
 * kda_train's backward hands each intermediate on for a few stages only.
 * The figures are those of README.md (bytes per token and value head). */
static void workspace_temps_share_when_never_live_together(void **st) {
  (void)st;
  static const struct {
    const char *sub, *name, *variant;
    size_t ws_single, ws_packed; /* T = 32768, H = HV = 16; T = 65536 in 3 documents, H = HV = 16 */
  } cases[] = {
      {"kda_train_ckpt", "kda_train", "gate=softplus,qk_norm=true,beta_logits=true,save=ckpt,cp=none", WS_CKPT_SINGLE,
       WS_CKPT_PACKED},
      {"kda_train", "kda_train", "gate=softplus,qk_norm=true,beta_logits=true,save=states,cp=none", WS_STATES_SINGLE,
       WS_STATES_PACKED},
      {"kda", "kda_fwd", "gate=external,qk_norm=false,beta_logits=true,vblock=v32", WS_FWD_SINGLE, WS_FWD_PACKED},
  };
  static const int32_t cu[] = {0, 20000, 45000, 65536}; /* 313 + 391 + 321 chunks of 64 */
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cake_package *pkg = load(cases[i].sub);
    Layout one, packed, grouped;
    plan_layout(pkg, cases[i].name, cases[i].variant, 32768, 16, 16, NULL, 0, &one);
    plan_layout(pkg, cases[i].name, cases[i].variant, 65536, 16, 16, cu, 3, &packed);
    plan_layout(pkg, cases[i].name, cases[i].variant, 32768, 4, 16, NULL, 0, &grouped); /* every temp is per value head */
    print_message("%-10s %-60s T=32768: workspace %zu B (%.1f B/token/head; temps one after another %zu, "
                  "largest stage %zu); T=65536 in 3 documents: %zu B (%.1f B/token/head; one after another %zu)\n",
                  cases[i].name, cases[i].variant, one.ws, (double)one.ws / (32768.0 * 16), one.sum, one.peak,
                  packed.ws, (double)packed.ws / (65536.0 * 16), packed.sum + packed.table_end);
    assert_int_equal(one.ws, cases[i].ws_single);
    assert_int_equal(packed.ws, cases[i].ws_packed);
    assert_int_equal(grouped.ws, one.ws);
    /* no layout can do with less than the temps of its largest stage: this one needs no more */
    assert_int_equal(one.ws - one.table_end, one.peak);
    assert_int_equal(packed.ws - packed.table_end, packed.peak);
    if (!strcmp(cases[i].name, "kda_train")) assert_true(one.ws - one.table_end < one.sum);
    else assert_int_equal(one.ws - one.table_end, one.sum); /* pinned (fwd_chain reads fwd_prep's temps): nothing shared */
    cake_package_free(pkg);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(first_plans_and_validates_by_field),
      cmocka_unit_test(options_pick_the_variant),
      cmocka_unit_test(kda_binds_what_the_variant_has),
      cmocka_unit_test(kda_arguments_are_checked),
      cmocka_unit_test(kda_train_binds_both_entries_from_one_struct),
      cmocka_unit_test(workspace_temps_share_when_never_live_together),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
