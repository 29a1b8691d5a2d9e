/* kda.c - the KDA convenience entries over the generic path: the forward
 * (program kda_fwd) here, training (kda_train) in kda_train.c; the variant
 * chosen from the options, tensors bound by their names. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rt.h"

cake_status rt_kda_variant(const cake_kda_options *opt, char *buf, size_t n) {
  const char *gate = opt->gate ? opt->gate : "safe";
  if (strcmp(gate, "safe") && strcmp(gate, "softplus") && strcmp(gate, "external"))
    return rt_fail(CAKE_ERR_ARGUMENT, "unknown KDA gate '%s' (safe, softplus or external)", gate);
  if (!isfinite(opt->scale))
    return rt_fail(CAKE_ERR_ARGUMENT, "KDA scale is %g; expected a finite value (0: 1/sqrt(K))", opt->scale);
  if (!isfinite(opt->lower_bound) || opt->lower_bound > 0)
    return rt_fail(CAKE_ERR_ARGUMENT, "KDA lower_bound is %g; expected a negative value (0: -5)", opt->lower_bound);
  snprintf(buf, n, "gate=%s,qk_norm=%s,beta_logits=%s", gate, opt->qk_norm ? "true" : "false",
           opt->beta_logits ? "true" : "false");
  return CAKE_OK;
}

cake_status rt_kda_plan_variant(const cake_package *pkg, const char *program, const char *variant,
                                const cake_kda_options *opt, int64_t T, int64_t H, const int32_t *cu_seqlens,
                                int64_t ndocs, cake_plan **out) {
  const cake_program *prog;
  /* value heads (GVA): the spec requires HV % H == 0, checked by finalize */
  int64_t HV = opt->hv ? opt->hv : H;
  /* options left unset with prefer clauses (kda_fwd's vblock) are chosen from the problem */
  const cake_dim_value dims[] = {{"T", T}, {"H", H}, {"HV", HV}};
  cake_status s = cake_package_choose(pkg, program, variant, dims, 3, cu_seqlens ? ndocs : 0, NULL, &prog);
  if (s) return s;
  cake_plan *plan;
  if ((s = cake_plan_create(prog, &plan))) return s;
  if (!(s = cake_plan_set_dim(plan, "T", T)) && !(s = cake_plan_set_dim(plan, "H", H)) &&
      !(s = cake_plan_set_dim(plan, "HV", HV)) &&
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

cake_status rt_launch_named(cake_plan *plan, const char *entry, const cake_binding *b, int n, uint64_t workspace,
                            size_t workspace_bytes, uint64_t saved, size_t saved_bytes, void *stream) {
  int ei = rt_entry_index(plan->prog, entry);
  if (ei < 0) return rt_fail(CAKE_ERR_NOT_FOUND, "program '%s' has no entry '%s'", plan->prog->name, entry);
  /* an entry needs only its stages' tensors (and the program's: an external
   * gate has no A_log): bind those */
  cake_binding used[32];
  int m = 0;
  const RtEntry *e = &plan->prog->entries[ei];
  for (int i = 0; i < n && m < 32; i++) {
    int ti = rt_tensor_index(plan->prog, b[i].name), need = 0;
    for (int s = 0; s < e->n && !need && ti >= 0; s++) {
      const RtStage *st = &plan->prog->stages[e->stages[s]];
      for (int a = 0; a < st->nargs; a++) need |= st->args[a].what == A_TENSOR && st->args[a].index == ti;
    }
    if (need) used[m++] = b[i];
  }
  return cake_launch(plan, entry, used, m, workspace, workspace_bytes, saved, saved_bytes, stream);
}

cake_status cake_kda_plan(const cake_package *pkg, const cake_kda_options *opt, int64_t T, int64_t H,
                          const int32_t *cu_seqlens, int64_t ndocs, cake_plan **out) {
  if (out) *out = NULL;
  if (!pkg || !opt || !out) return rt_fail(CAKE_ERR_ARGUMENT, "cake_kda_plan: pkg, opt and out are required");
  if (opt->vblock != 0 && opt->vblock != 16 && opt->vblock != 32)
    return rt_fail(CAKE_ERR_ARGUMENT, "KDA vblock is %d; expected 16, 32 or 0 (chosen from the problem)", opt->vblock);
  char variant[160];
  cake_status s = rt_kda_variant(opt, variant, sizeof variant);
  if (s) return s;
  if ((s = rt_check_dim("T", T)) || (s = rt_check_dim("H", H)) || (s = rt_check_dim("HV", opt->hv)) ||
      (cu_seqlens && (s = rt_check_ndocs(ndocs))))
    return s;
  /* vblock: forced by the caller, or left to the spec's prefer clause */
  size_t len = strlen(variant);
  if (opt->vblock) snprintf(variant + len, sizeof variant - len, ",vblock=%s", opt->vblock == 16 ? "v16" : "v32");
  return rt_kda_plan_variant(pkg, "kda_fwd", variant, opt, T, H, cu_seqlens, ndocs, out);
}

cake_status cake_kda_forward(cake_plan *plan, const cake_kda_tensors *t, uint64_t workspace, size_t workspace_bytes,
                             void *stream) {
  return cake_kda_launch(plan, "fwd", t, workspace, workspace_bytes, stream);
}

cake_status cake_kda_launch(cake_plan *plan, const char *entry, const cake_kda_tensors *t, uint64_t workspace,
                            size_t workspace_bytes, void *stream) {
  if (!plan || !t || !entry) return rt_fail(CAKE_ERR_ARGUMENT, "cake_kda_launch: plan, entry and tensors are required");
  const cake_binding b[] = {
      {"q", t->q},         {"k", t->k},   {"v", t->v}, {"g", t->g},   {"beta", t->beta},
      {"A_log", t->A_log}, {"dt_bias", t->dt_bias},    {"h0", t->h0}, {"o", t->o},       {"ht", t->ht},
  };
  return rt_launch_named(plan, entry, b, (int)(sizeof b / sizeof b[0]), workspace, workspace_bytes, 0, 0, stream);
}
