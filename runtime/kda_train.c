/* kda_train.c - the KDA training convenience entry (program kda_train of
 * specs/kda) over the generic path: the variant chosen from the options and
 * the save mode, the tensors bound by their names, the forward and the
 * backward launched with the caller's workspace and saved areas. */
#include <stdio.h>
#include <string.h>

#include "rt.h"

cake_status cake_kda_train_plan(const cake_package *pkg, const cake_kda_options *opt, const char *save, int64_t T,
                                int64_t H, const int32_t *cu_seqlens, int64_t ndocs, cake_plan **out) {
  if (out) *out = NULL;
  if (!pkg || !opt || !out) return rt_fail(CAKE_ERR_ARGUMENT, "cake_kda_train_plan: pkg, opt and out are required");
  const char *mode = save ? save : "ckpt";
  if (strcmp(mode, "ckpt") && strcmp(mode, "states"))
    return rt_fail(CAKE_ERR_ARGUMENT, "unknown KDA save mode '%s' (ckpt or states)", mode);
  if (opt->vblock)
    return rt_fail(CAKE_ERR_ARGUMENT, "kda_train has one V block size: leave vblock 0 (it is %d)", opt->vblock);
  char variant[160];
  cake_status s = rt_kda_variant(opt, variant, sizeof variant);
  if (s || (s = rt_check_dim("HV", opt->hv))) return s;
  size_t len = strlen(variant);
  snprintf(variant + len, sizeof variant - len, ",save=%s", mode);
  return rt_kda_plan_variant(pkg, "kda_train", variant, opt, T, H, cu_seqlens, ndocs, out);
}

static cake_status train_launch(cake_plan *plan, const char *entry, const cake_kda_train_tensors *t, uint64_t workspace,
                                size_t workspace_bytes, uint64_t saved, size_t saved_bytes, void *stream) {
  if (!plan || !t) return rt_fail(CAKE_ERR_ARGUMENT, "cake_kda_train_%s: plan and tensors are required", entry);
  const cake_binding b[] = {
      {"q", t->q},   {"k", t->k},         {"v", t->v},         {"g", t->g},         {"beta", t->beta},
      {"A_log", t->A_log}, {"dt_bias", t->dt_bias}, {"h0", t->h0}, {"o", t->o},     {"ht", t->ht},
      {"do", t->do_}, {"dht", t->dht},    {"dq", t->dq},       {"dk", t->dk},       {"dv", t->dv},
      {"dg", t->dg}, {"dbeta", t->dbeta}, {"dA_log", t->dA_log}, {"ddt_bias", t->ddt_bias}, {"dh0", t->dh0},
  };
  return rt_launch_named(plan, entry, b, (int)(sizeof b / sizeof b[0]), workspace, workspace_bytes, saved, saved_bytes,
                         stream);
}

cake_status cake_kda_train_forward(cake_plan *plan, const cake_kda_train_tensors *t, uint64_t workspace,
                                   size_t workspace_bytes, uint64_t saved, size_t saved_bytes, void *stream) {
  return train_launch(plan, "fwd", t, workspace, workspace_bytes, saved, saved_bytes, stream);
}

cake_status cake_kda_train_backward(cake_plan *plan, const cake_kda_train_tensors *t, uint64_t workspace,
                                    size_t workspace_bytes, uint64_t saved, size_t saved_bytes, void *stream) {
  return train_launch(plan, "bwd", t, workspace, workspace_bytes, saved, saved_bytes, stream);
}
