/* launch.c - cake_launch(): validation, the chunk tables, then each stage of
 * the entry in order on the caller's stream. */
#include <stdio.h>
#include <string.h>

#include "rt.h"

cake_status rt_grid_of(const cake_plan *p, const RtStage *st, unsigned g[3]) {
  g[0] = g[1] = g[2] = 1;
  for (int i = 0; i < st->ngrid; i++) {
    const RtGrid *r = &st->grid[i];
    int64_t n = r->kind == G_CHUNKS ? p->nchunks : r->kind == G_DOCS ? p->ndocs : r->kind == G_DIM ? p->dims[r->dim] : r->value;
    int64_t lim = i == 0 ? INT32_MAX : 65535;
    if (n < 0 || n > lim) /* the loader and the plan keep every count in range: never launch a wrapped one */
      return rt_fail(CAKE_ERR_PLAN, "stage '%s': grid dimension %c = %lld is outside the CUDA range [0, %lld]",
                     st->name, "xyz"[i], (long long)n, (long long)lim);
    g[i] = (unsigned)n;
  }
  return CAKE_OK;
}

cake_status cake_launch(cake_plan *p, const char *entry, const cake_binding *b, int n, uint64_t workspace,
                        size_t workspace_bytes, uint64_t saved, size_t saved_bytes, void *stream) {
  cake_status s = cake_validate(p, entry, b, n);
  if (s) return s;
  const cake_program *prog = p->prog;
  if (workspace_bytes < p->workspace_bytes)
    return rt_fail(CAKE_ERR_ARGUMENT, "the workspace has %zu bytes; the plan needs %zu", workspace_bytes, p->workspace_bytes);
  if (saved_bytes < p->saved_bytes)
    return rt_fail(CAKE_ERR_ARGUMENT, "the saved area has %zu bytes; the plan needs %zu", saved_bytes, p->saved_bytes);
  if (p->workspace_bytes && (!workspace || workspace % 256))
    return rt_fail(CAKE_ERR_ARGUMENT, "the workspace must be a 256-byte aligned device pointer");
  if (p->saved_bytes && (!saved || saved % 256))
    return rt_fail(CAKE_ERR_ARGUMENT, "the saved area must be a 256-byte aligned device pointer");
  char target[16];
  void *ctx;
  int device;
  if ((s = rt_current_target(target, sizeof target, &ctx, &device))) return s;
  uint64_t ptr[RT_MAX_TENSORS] = {0};
  for (int i = 0; i < n; i++) {
    int ti = rt_tensor_index(prog, b[i].name);
    ptr[ti] = b[i].tensor.data;
    if (ptr[ti] && (s = rt_check_device_pointer(ptr[ti], device, b[i].name))) return s;
  }
  if (p->workspace_bytes && (s = rt_check_device_pointer(workspace, device, "workspace"))) return s;
  if (p->saved_bytes && (s = rt_check_device_pointer(saved, device, "saved area"))) return s;
  uint64_t chunk_table = 0, doc_table = 0;
  for (int i = 0; i < p->nitems; i++) {
    const RtItem *it = &p->items[i];
    uint64_t at = (it->area ? saved : workspace) + it->offset;
    if (it->tensor >= 0) ptr[it->tensor] = at;
    else if (!strcmp(it->name, "chunk_table")) chunk_table = at;
    else doc_table = at;
  }
  /* the tables go to the device once per workspace address and plan */
  if ((chunk_table || doc_table) && (p->tables_uploaded_to != workspace || p->tables_ctx != ctx)) {
    if (chunk_table && (s = rt_memcpy_htod(chunk_table, p->chunk_table, (size_t)p->nchunks * 16, stream))) return s;
    if (doc_table && (s = rt_memcpy_htod(doc_table, p->doc_table, (size_t)(p->ndocs + 1) * 4, stream))) return s;
    p->tables_uploaded_to = workspace;
    p->tables_ctx = ctx;
  }
  const RtEntry *e = &prog->entries[rt_entry_index(prog, entry)];
  for (int si = 0; si < e->n; si++) {
    RtStage *st = &prog->stages[e->stages[si]];
    unsigned grid[3];
    if ((s = rt_grid_of(p, st, grid))) return s;
    if (!grid[0] || !grid[1] || !grid[2]) continue; /* nothing to do (e.g. no tokens) */
    void *fn;
    if ((s = rt_load_stage(prog->pkg, st, ctx, target, &fn))) return s;
    void *params[RT_MAX_ARGS]; /* the loader allows no more */
    union { uint64_t p; int32_t i; float f; } vals[RT_MAX_ARGS];
    for (int a = 0; a < st->nargs; a++) {
      const RtArg *ra = &st->args[a];
      switch (ra->what) {
        case A_TENSOR: vals[a].p = ptr[ra->index]; break;
        case A_CHUNK_TABLE: vals[a].p = chunk_table; break;
        case A_DOC_TABLE: vals[a].p = doc_table; break;
        case A_DIM: vals[a].i = (int32_t)p->dims[ra->index]; break; /* < 2^31: cake_plan_set_dim */
        case A_PARAM: {
          const RtParam *pa = &prog->params[ra->index];
          double v = p->param_set[ra->index] ? p->params[ra->index] : pa->def;
          if (pa->is_int) vals[a].i = (int32_t)v; /* in range: checked on load and by cake_plan_set_param */
          else vals[a].f = (float)v;
          break;
        }
      }
      params[a] = &vals[a];
    }
    int shared = 0;
    for (int k = 0; k < st->nkernels; k++)
      if (!strcmp(st->kernels[k].target, target)) shared = st->kernels[k].shared_bytes;
    if ((s = rt_launch_kernel(fn, grid, (unsigned)st->threads, (unsigned)shared, stream, params))) {
      return rt_fail(CAKE_ERR_CUDA, "stage '%s' of '%s': %s", st->name, prog->name, cake_last_error());
    }
  }
  return CAKE_OK;
}
