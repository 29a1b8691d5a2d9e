/* kda.c - the KDA convenience entry over the generic path. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rt.h"

cake_status cake_kda_plan(const cake_package *pkg, const cake_kda_options *opt, int64_t T, int64_t H,
                          const int32_t *cu_seqlens, int64_t ndocs, cake_plan **out) {
  if (out) *out = NULL;
  if (!pkg || !opt || !out) return rt_fail(CAKE_ERR_ARGUMENT, "cake_kda_plan: pkg, opt and out are required");
  const char *gate = opt->gate ? opt->gate : "safe";
  if (strcmp(gate, "safe") && strcmp(gate, "softplus") && strcmp(gate, "external"))
    return rt_fail(CAKE_ERR_ARGUMENT, "unknown KDA gate '%s' (safe, softplus or external)", gate);
  if (opt->vblock != 0 && opt->vblock != 16 && opt->vblock != 32)
    return rt_fail(CAKE_ERR_ARGUMENT, "KDA vblock is %d; expected 16, 32 or 0 (chosen from the problem)", opt->vblock);
  if (!isfinite(opt->scale))
    return rt_fail(CAKE_ERR_ARGUMENT, "KDA scale is %g; expected a finite value (0: 1/sqrt(K))", opt->scale);
  if (!isfinite(opt->lower_bound) || opt->lower_bound > 0)
    return rt_fail(CAKE_ERR_ARGUMENT, "KDA lower_bound is %g; expected a negative value (0: -5)", opt->lower_bound);
  cake_status s;
  if ((s = rt_check_dim("T", T)) || (s = rt_check_dim("H", H)) || (cu_seqlens && (s = rt_check_ndocs(ndocs)))) return s;
  /* The chain runs one block per (document, head, V block): with too few
   * to keep two per multiprocessor busy, blocks of 16 columns instead of 32. */
  int sms = 132;
  cake_device_sm_count(&sms);
  int64_t nd = cu_seqlens ? ndocs : 1, blocks;
  int v16 = !__builtin_mul_overflow(nd, H * (128 / 16), &blocks) && blocks <= 2 * (int64_t)sms;
  if (opt->vblock) v16 = opt->vblock == 16;
  char variant[160];
  snprintf(variant, sizeof variant, "gate=%s,qk_norm=%s,beta_logits=%s,vblock=%s", gate,
           opt->qk_norm ? "true" : "false", opt->beta_logits ? "true" : "false", v16 ? "v16" : "v32");
  const cake_program *prog;
  s = cake_package_variant(pkg, "kda_fwd", variant, &prog);
  if (s) return s;
  cake_plan *plan;
  if ((s = cake_plan_create(prog, &plan))) return s;
  if (!(s = cake_plan_set_dim(plan, "T", T)) && !(s = cake_plan_set_dim(plan, "H", H)) &&
      (!cu_seqlens || !(s = cake_plan_set_docs(plan, cu_seqlens, ndocs))) &&
      (!opt->scale || !(s = cake_plan_set_param(plan, "scale", opt->scale))) &&
      (!opt->lower_bound || !(s = cake_plan_set_param(plan, "lower_bound", opt->lower_bound))))
    s = cake_plan_finalize(plan);
  if (s) {
    cake_plan_free(plan);
    return s;
  }
  *out = plan;
  return CAKE_OK;
}

cake_status cake_kda_forward(cake_plan *plan, const cake_kda_tensors *t, uint64_t workspace, size_t workspace_bytes,
                             void *stream) {
  return cake_kda_launch(plan, "fwd", t, workspace, workspace_bytes, stream);
}

cake_status cake_kda_launch(cake_plan *plan, const char *entry, const cake_kda_tensors *t, uint64_t workspace,
                            size_t workspace_bytes, void *stream) {
  if (!plan || !t || !entry) return rt_fail(CAKE_ERR_ARGUMENT, "cake_kda_launch: plan, entry and tensors are required");
  cake_binding b[10];
  int n = 0;
  b[n++] = (cake_binding){"q", t->q};
  b[n++] = (cake_binding){"k", t->k};
  b[n++] = (cake_binding){"v", t->v};
  b[n++] = (cake_binding){"g", t->g};
  b[n++] = (cake_binding){"beta", t->beta};
  if (rt_tensor_index(plan->prog, "A_log") >= 0) {
    b[n++] = (cake_binding){"A_log", t->A_log};
    b[n++] = (cake_binding){"dt_bias", t->dt_bias};
  }
  b[n++] = (cake_binding){"h0", t->h0};
  b[n++] = (cake_binding){"o", t->o};
  b[n++] = (cake_binding){"ht", t->ht};
  /* an entry needs only its stages' tensors: bind those */
  cake_binding used[10];
  int m = 0, ei = rt_entry_index(plan->prog, entry);
  if (ei < 0) return rt_fail(CAKE_ERR_NOT_FOUND, "kda_fwd has no entry '%s'", entry);
  const RtEntry *e = &plan->prog->entries[ei];
  for (int i = 0; i < n; i++) {
    int ti = rt_tensor_index(plan->prog, b[i].name), need = 0;
    for (int s = 0; s < e->n && !need; s++) {
      const RtStage *st = &plan->prog->stages[e->stages[s]];
      for (int a = 0; a < st->nargs; a++) need |= st->args[a].what == A_TENSOR && st->args[a].index == ti;
    }
    if (need) used[m++] = b[i];
  }
  return cake_launch(plan, entry, used, m, workspace, workspace_bytes, 0, 0, stream);
}
