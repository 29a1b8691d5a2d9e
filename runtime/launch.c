/* launch.c - cake_launch(), cake_launch_comm() and cake_launch_group():
 * validation, the plan's tables, then each stage of the entry in order on
 * the caller's stream(s). One rank's launch (RtRun: checks, tables, a
 * kernel stage, an exchange's buffers) is shared by all three; the group
 * drives its ranks stage by stage. */
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

/* ---- one rank's launch, shared by cake_launch, cake_launch_comm and cake_launch_group ---- */

/* One rank's launch of an entry: its plan, where its tensors and tables
 * are, its stream, and the context and target it runs in. */
typedef struct RtRun {
  cake_plan *p;
  const RtEntry *e;
  int ei;
  uint64_t workspace;
  uint64_t chunk_table, doc_table, frag_table;
  void *stream;
  void *ctx;
  int device;
  char target[16];
  int32_t round; /* the round of the rounds group being run (the kernels' round argument) */
  uint64_t ptr[RT_MAX_TENSORS]; /* every tensor's address: bound, temp or saved */
} RtRun;

/* The order an entry's stages run in: each stage once, except that the
 * stages of a rounds group run as a block once per round (nrounds times:
 * the most fragments a document has; the same on every rank). */
typedef struct Walk {
  const RtEntry *e;
  int64_t nrounds;
  int at, count, j; /* the block [at, at + count), its next stage j */
  int64_t k, nr;    /* its pass k of nr */
  int grouped;
  int idle;         /* a group of no rounds: its stages pass once, running nothing (their timing marks only) */
} Walk;

static void walk_init(Walk *w, const RtEntry *e, int64_t nrounds) {
  memset(w, 0, sizeof *w);
  w->e = e;
  w->nrounds = nrounds;
}

/* The next stage: 1 and *si, *round (-1 outside rounds), *first and
 * *last (its first and last pass), *run (0: a group of no rounds, whose
 * stages only record their timing marks); 0 when done. */
static int walk_next(Walk *w, int *si, int32_t *round, int *first, int *last, int *run) {
  for (;;) {
    if (w->j < w->at + w->count && w->k < w->nr) {
      *si = w->j++;
      *round = w->grouped ? (int32_t)w->k : -1;
      *first = w->k == 0;
      *last = w->k == w->nr - 1;
      *run = !w->idle;
      return 1;
    }
    if (w->count && ++w->k < w->nr) { /* the block again, next round */
      w->j = w->at;
      continue;
    }
    w->at += w->count;
    if (w->at >= w->e->n) return 0;
    const RtRounds *g = NULL;
    for (int i = 0; i < w->e->nrounds && !g; i++)
      if (w->e->rounds[i].first == w->at) g = &w->e->rounds[i];
    w->grouped = g != NULL;
    w->count = g ? g->count : 1;
    w->nr = g ? w->nrounds : 1;
    w->idle = g && w->nr <= 0;
    if (w->idle) w->nr = 1;
    w->j = w->at;
    w->k = 0;
  }
}

/* The host checks of one rank's launch (no driver call): the bindings
 * (cake_validate), the workspace and saved areas, and every address. */
static cake_status run_check(RtRun *r, cake_plan *p, const char *entry, const cake_binding *b, int n, uint64_t workspace,
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
  memset(r, 0, sizeof *r);
  r->p = p;
  r->ei = rt_entry_index(prog, entry);
  r->e = &prog->entries[r->ei];
  r->workspace = workspace;
  r->stream = stream;
  for (int i = 0; i < n; i++) r->ptr[rt_tensor_index(prog, b[i].name)] = b[i].tensor.data;
  for (int i = 0; i < p->nitems; i++) {
    const RtItem *it = &p->items[i];
    uint64_t at = (it->area ? saved : workspace) + it->offset;
    if (it->tensor >= 0) r->ptr[it->tensor] = at;
    else if (!strcmp(it->name, "chunk_table")) r->chunk_table = at;
    else if (!strcmp(it->name, "doc_table")) r->doc_table = at;
    else r->frag_table = at;
  }
  return CAKE_OK;
}

/* The device checks: a current context, and every pointer device memory of its device. */
static cake_status run_device(RtRun *r, const cake_binding *b, int n, uint64_t saved) {
  cake_status s = rt_current_target(r->target, sizeof r->target, &r->ctx, &r->device);
  for (int i = 0; i < n && !s; i++)
    if (b[i].tensor.data) s = rt_check_device_pointer(b[i].tensor.data, r->device, b[i].name);
  if (!s && r->p->workspace_bytes) s = rt_check_device_pointer(r->workspace, r->device, "workspace");
  if (!s && r->p->saved_bytes) s = rt_check_device_pointer(saved, r->device, "saved area");
  return s;
}

/* The plan's tables go to the device once per workspace address and context
 * (finalize and set_partition make them go again). */
static cake_status run_tables(RtRun *r) {
  cake_plan *p = r->p;
  cake_status s;
  if (!(r->chunk_table || r->doc_table || r->frag_table) || (p->tables_uploaded_to == r->workspace && p->tables_ctx == r->ctx))
    return CAKE_OK;
  if (r->chunk_table && (s = rt_memcpy_htod(r->chunk_table, p->chunk_table, (size_t)p->nchunks * 16, r->stream))) return s;
  if (r->doc_table && (s = rt_memcpy_htod(r->doc_table, p->doc_table, (size_t)(p->ndocs + 1) * 4, r->stream))) return s;
  if (r->frag_table && (s = rt_memcpy_htod(r->frag_table, p->frag_table, (size_t)p->frag_ints * 4, r->stream))) return s;
  p->tables_uploaded_to = r->workspace;
  p->tables_ctx = r->ctx;
  return CAKE_OK;
}

/* Stage timing (cake_plan_set_timing): the entry's events, made in the
 * run's context on its first timed launch (remade when the context
 * changes); the entry counts as timed once a launch went through. */
static cake_status run_timing(RtRun *r) {
  cake_plan *p = r->p;
  if (!p->timing) return CAKE_OK;
  if (p->timing_ctx != r->ctx) rt_plan_timing_free(p);
  p->timing_ctx = r->ctx;
  int ne = p->prog->nentries, n = 2 * r->e->n;
  if (!p->stage_events && !(p->stage_events = rt_alloc(&p->al, sizeof(void **) * (size_t)ne))) return CAKE_ERR_MEMORY;
  if (!p->stage_timed && !(p->stage_timed = rt_alloc(&p->al, sizeof(int) * (size_t)ne))) return CAKE_ERR_MEMORY;
  p->stage_timed[r->ei] = 0;
  if (p->stage_events[r->ei]) return CAKE_OK;
  void **ev = rt_alloc(&p->al, sizeof(void *) * (size_t)(n ? n : 1));
  if (!ev) return CAKE_ERR_MEMORY;
  cake_status s = CAKE_OK;
  for (int i = 0; i < n && !s; i++) s = rt_event_create_timed(&ev[i]);
  if (s) {
    for (int i = 0; i < n; i++) rt_event_destroy(ev[i]);
    rt_free(&p->al, ev);
    return s;
  }
  p->stage_events[r->ei] = ev;
  return CAKE_OK;
}

/* Records the event before (after = 0) or after stage si when timing. */
static cake_status run_mark(RtRun *r, int si, int after) {
  if (!r->p->timing) return CAKE_OK;
  return rt_event_record(r->p->stage_events[r->ei][2 * si + after], r->stream);
}

/* Launches kernel stage `si` of the entry (not an exchange). */
static cake_status run_kernel(RtRun *r, int si) {
  const cake_plan *p = r->p;
  const cake_program *prog = p->prog;
  RtStage *st = &prog->stages[r->e->stages[si]];
  unsigned grid[3];
  cake_status s = rt_grid_of(p, st, grid);
  if (s) return s;
  if (!grid[0] || !grid[1] || !grid[2]) return CAKE_OK; /* nothing to do (e.g. no tokens) */
  void *fn;
  if ((s = rt_load_stage(prog->pkg, st, r->ctx, r->target, &fn))) return s;
  void *params[RT_MAX_ARGS]; /* the loader allows no more */
  union { uint64_t p; int32_t i; float f; } vals[RT_MAX_ARGS];
  for (int a = 0; a < st->nargs; a++) {
    const RtArg *ra = &st->args[a];
    switch (ra->what) {
      case A_TENSOR: vals[a].p = r->ptr[ra->index]; break;
      case A_CHUNK_TABLE: vals[a].p = r->chunk_table; break;
      case A_DOC_TABLE: vals[a].p = r->doc_table; break;
      case A_FRAG_TABLE: vals[a].p = r->frag_table; break;
      case A_ROUND: vals[a].i = r->round; break;
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
    if (!strcmp(st->kernels[k].target, r->target)) shared = st->kernels[k].shared_bytes;
  if ((s = rt_launch_kernel(fn, grid, (unsigned)st->threads, (unsigned)shared, r->stream, params)))
    return rt_fail(CAKE_ERR_CUDA, "stage '%s' of '%s': %s", st->name, prog->name, cake_last_error());
  return CAKE_OK;
}

/* The exchange at position si: what this rank sends (its SRC), where the
 * gathered data lands (its DST), and the bytes of one rank's part. Every
 * size fits: finalize checked each tensor's. */
static const RtExchange *run_exchange(const RtRun *r, int si, uint64_t *send, uint64_t *recv, size_t *bytes) {
  const cake_program *prog = r->p->prog;
  int xi = RT_EXCHANGE_INDEX(r->e->stages[si]);
  const RtExchange *x = &prog->exchanges[xi];
  *bytes = rt_exchange_bytes(r->p, x);
  if (x->op == X_HALO) { /* through its staging buffers */
    *send = r->workspace + r->p->halo_at[2 * xi];
    *recv = r->workspace + r->p->halo_at[2 * xi + 1];
  } else {
    *send = r->ptr[x->src];
    *recv = r->ptr[x->dst];
  }
  return x;
}

/* ---- halo exchanges: the edge tokens of every fragment, staged in the
 * workspace (plan->halo_at), all-gathered, and placed around each local
 * fragment. A fragment's slot in the staging buffer holds `before` rows,
 * its last tokens right-aligned (a shorter fragment leaves the first rows
 * unused), then `after` rows, its first tokens. ---- */

/* The bytes of one token of the halo's source (its extents after the first). */
static size_t halo_row(const cake_plan *p, const RtExchange *x) {
  const RtTensor *t = &p->prog->tensors[x->src];
  size_t n = rt_dtype_bytes(t->dtype);
  for (int j = 1; j < t->rank; j++) n *= (size_t)rt_extent(p, t->shape[j]);
  return n;
}

/* This rank's fragments' edge tokens into its send buffer. */
static cake_status halo_pack(const RtRun *r, const RtExchange *x, uint64_t send) {
  const cake_plan *p = r->p;
  size_t row = halo_row(p, x), slot = (size_t)(x->before + x->after) * row;
  uint64_t src = r->ptr[x->src];
  cake_status s = CAKE_OK;
  for (int64_t f = 0; f < p->ndocs && !s; f++) {
    int64_t start = p->cu[f], len = p->cu[f + 1] - p->cu[f];
    int64_t kb = len < x->before ? len : x->before, ka = len < x->after ? len : x->after;
    uint64_t at = send + (uint64_t)f * slot;
    if (kb) s = rt_memcpy_dtod(at + (uint64_t)(x->before - kb) * row, src + (uint64_t)(start + len - kb) * row,
                               (size_t)kb * row, r->stream);
    if (!s && ka) s = rt_memcpy_dtod(at + (uint64_t)x->before * row, src + (uint64_t)start * row, (size_t)ka * row, r->stream);
  }
  return s;
}

/* Every local fragment's halo from the gathered edges: the tokens before it
 * from the fragments before it, nearest first; those after it from the ones
 * after it; zero beyond its document. */
static cake_status halo_unpack(const RtRun *r, const RtExchange *x, uint64_t recv) {
  const cake_plan *p = r->p;
  size_t row = halo_row(p, x);
  int64_t B = x->before, A = x->after, F = p->nfrags_max, N = p->ndocs;
  uint64_t dst = r->ptr[x->dst];
  size_t slot = (size_t)(B + A) * row;
  cake_status s = rt_memset_zero(dst, (size_t)F * slot, r->stream);
  const int32_t *tab = p->frag_table, *pairs = p->frag_table + 6 * N + p->prog->frag_header;
  for (int64_t f = 0; f < N && !s; f++) {
    if (p->cu[f + 1] == p->cu[f]) continue; /* the empty document of a rank without fragments */
    const int32_t *fr = tab + 6 * f;
    uint64_t out = dst + (uint64_t)f * slot;
    int64_t need = B; /* rows [0, need) of the before part still to fill, from the end */
    for (int32_t i = fr[3] - 1; i >= 0 && need > 0 && !s; i--) {
      int32_t q = pairs[2 * (fr[2] + i)], g = pairs[2 * (fr[2] + i) + 1];
      int64_t len = p->part_len[p->part_first[q] + g], k = len < need ? len : need;
      uint64_t from = recv + ((uint64_t)q * (uint64_t)F + (uint64_t)g) * slot + (uint64_t)(B - k) * row;
      s = rt_memcpy_dtod(out + (uint64_t)(need - k) * row, from, (size_t)k * row, r->stream);
      need -= k;
    }
    int64_t done = 0; /* rows of the after part filled */
    for (int32_t i = 0; i < fr[5] && done < A && !s; i++) {
      int32_t q = pairs[2 * (fr[4] + i)], g = pairs[2 * (fr[4] + i) + 1];
      int64_t len = p->part_len[p->part_first[q] + g], k = len < A - done ? len : A - done;
      uint64_t from = recv + ((uint64_t)q * (uint64_t)F + (uint64_t)g) * slot + (uint64_t)B * row;
      s = rt_memcpy_dtod(out + (uint64_t)(B + done) * row, from, (size_t)k * row, r->stream);
      done += k;
    }
  }
  return s;
}

/* The first exchange of the entry, or NULL. */
static const RtExchange *first_exchange(const cake_program *prog, const RtEntry *e) {
  for (int si = 0; si < e->n; si++)
    if (RT_IS_EXCHANGE(e->stages[si])) return &prog->exchanges[RT_EXCHANGE_INDEX(e->stages[si])];
  return NULL;
}

cake_status cake_launch(cake_plan *p, const char *entry, const cake_binding *b, int n, uint64_t workspace,
                        size_t workspace_bytes, uint64_t saved, size_t saved_bytes, void *stream) {
  int ei = p && entry ? rt_entry_index(p->prog, entry) : -1;
  const RtExchange *x = ei >= 0 ? first_exchange(p->prog, &p->prog->entries[ei]) : NULL;
  if (x) /* before anything else: no binding or plan makes this launch possible */
    return rt_fail(CAKE_ERR_ARGUMENT,
                   "entry '%s' exchanges data with other ranks (stage '%s'): launch it with cake_launch_comm or "
                   "cake_launch_group",
                   entry, x->name);
  RtRun r;
  cake_status s = run_check(&r, p, entry, b, n, workspace, workspace_bytes, saved, saved_bytes, stream);
  if (s) return s;
  if ((s = run_device(&r, b, n, saved)) || (s = run_tables(&r)) || (s = run_timing(&r))) return s;
  Walk w;
  int si, first, last, run;
  walk_init(&w, r.e, p->nrounds);
  while (!s && walk_next(&w, &si, &r.round, &first, &last, &run))
    if (!(s = first ? run_mark(&r, si, 0) : CAKE_OK) && !(s = run ? run_kernel(&r, si) : CAKE_OK) && last)
      s = run_mark(&r, si, 1);
  if (!s && p->timing) p->stage_timed[r.ei] = 1;
  return s;
}

/* A program with a ranks dim, for the launches with a communicator. */
static cake_status need_kcp(const cake_program *prog, const char *fn) {
  if (prog->ranks_dim < 0)
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: program '%s' is not context-parallel (no dim with role 'ranks'): launch it with cake_launch",
                   fn, prog->name);
  return CAKE_OK;
}

cake_status cake_launch_comm(cake_plan *p, const char *entry, const cake_binding *b, int n, uint64_t workspace,
                             size_t workspace_bytes, uint64_t saved, size_t saved_bytes, cake_comm *comm,
                             void *stream) {
  const char *fn = "cake_launch_comm";
  if (!p || !comm) return rt_fail(CAKE_ERR_ARGUMENT, "%s: plan and comm are required", fn);
  RtRun r;
  cake_status s = need_kcp(p->prog, fn);
  if (!s) s = run_check(&r, p, entry, b, n, workspace, workspace_bytes, saved, saved_bytes, stream);
  if (s) return s;
  if (cake_comm_is_local(comm))
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: the communicator is a member of an in-process group: launch with cake_launch_group", fn);
  if (cake_comm_size(comm) != p->nranks)
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: the communicator has %d ranks; the plan's partition has R = %d", fn,
                   cake_comm_size(comm), p->nranks);
  if (cake_comm_rank(comm) != p->rank)
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: the communicator is rank %d; the plan is rank %d's", fn, cake_comm_rank(comm),
                   p->rank);
  if ((s = run_device(&r, b, n, saved)) || (s = run_tables(&r)) || (s = run_timing(&r))) return s;
  Walk w;
  int si, first, last, run;
  walk_init(&w, r.e, p->nrounds);
  while (!s && walk_next(&w, &si, &r.round, &first, &last, &run)) {
    if (first && (s = run_mark(&r, si, 0))) break;
    if (!run) {
      /* a group of no rounds: nothing to run */
    } else if (!RT_IS_EXCHANGE(r.e->stages[si])) {
      s = run_kernel(&r, si);
    } else {
      uint64_t send, recv;
      size_t bytes;
      const RtExchange *x = run_exchange(&r, si, &send, &recv, &bytes);
      int to, from;
      if (rt_send_peers(x, p->rank, p->nranks, &to, &from)) { /* to the next (previous) rank; none past the ends: 0 */
        if (from < 0) s = rt_memset_zero(recv, bytes, stream);
        if (!s) s = rt_comm_send_recv(comm, send, to, recv, from, bytes, stream);
      } else {
        if (x->op == X_HALO) s = halo_pack(&r, x, send);
        if (!s) s = rt_comm_all_gather(comm, send, recv, bytes, stream);
        if (!s && x->op == X_HALO) s = halo_unpack(&r, x, recv);
      }
      if (s) s = rt_fail(s, "exchange '%s' of '%s': %s", x->name, p->prog->name, cake_last_error());
    }
    if (!s && last) s = run_mark(&r, si, 1);
  }
  if (!s && p->timing) p->stage_timed[r.ei] = 1;
  return s;
}

/* "program 'p' (variant)" */
static const char *prog_text(const cake_program *prog, char *buf, size_t n) {
  snprintf(buf, n, prog->variant[0] ? "'%s' (%s)" : "'%s'", prog->name, prog->variant);
  return buf;
}

/* The group's arguments, before anything is launched: one program, plans of
 * ranks 0..n-1 of one partition with the same dims (but their own tokens and
 * documents), the group's members in rank order, each rank's launch
 * (run_check), workspaces and saved areas that do not overlap. */
static cake_status group_check(RtRun *runs, cake_plan *const *plans, int n, const char *entry,
                               const cake_binding *const *b, const int *nb, const uint64_t *workspace,
                               const size_t *workspace_bytes, const uint64_t *saved, const size_t *saved_bytes,
                               cake_comm *const *comms, void *const *streams) {
  const char *fn = "cake_launch_group";
  const cake_program *prog = plans[0]->prog;
  char a[300], c[300];
  cake_status s = need_kcp(prog, fn);
  if (s) return s;
  for (int r = 1; r < n; r++)
    if (plans[r]->prog != prog) {
      prog_text(plans[r]->prog, a, sizeof a);
      prog_text(prog, c, sizeof c);
      return rt_fail(CAKE_ERR_ARGUMENT, "%s: plans[%d] is of program %s%s, plans[0] of %s: every rank runs the same program",
                     fn, r, a, strcmp(a, c) ? "" : " of another package", c);
    }
  for (int r = 0; r < n; r++) {
    const cake_plan *q = plans[r];
    if (!q->finalized)
      return rt_fail(CAKE_ERR_PLAN, "%s: plans[%d] is not finalized%s", fn, r,
                     q->partitioned ? " (call cake_plan_finalize after setting dims)" : ": give it its partition with cake_plan_set_partition, then finalize it");
    if (q->nranks != n)
      return rt_fail(CAKE_ERR_ARGUMENT, "%s: plans[%d]'s partition has R = %d ranks; the group has %d", fn, r, q->nranks, n);
    if (q->rank != r)
      return rt_fail(CAKE_ERR_ARGUMENT, "%s: plans[%d] is rank %d's plan; plans[r] must be rank r's", fn, r, q->rank);
    if (q->partition_id != plans[0]->partition_id)
      return rt_fail(CAKE_ERR_ARGUMENT,
                     "%s: plans[%d] was partitioned from other documents (or another T, layout or alignment) than plans[0]",
                     fn, r);
    for (int d = 0; d < prog->ndims; d++)
      if (d != prog->tokens_dim && d != prog->docs_dim && d != prog->chunks_dim && q->dims[d] != plans[0]->dims[d])
        return rt_fail(CAKE_ERR_ARGUMENT, "%s: plans[%d] has dim %s = %lld, plans[0] %lld (ranks differ only in their tokens and documents)",
                       fn, r, prog->dims[d], (long long)q->dims[d], (long long)plans[0]->dims[d]);
  }
  if ((s = rt_comm_check_group(fn, comms, n))) return s;
  for (int r = 0; r < n; r++) {
    if ((s = run_check(&runs[r], plans[r], entry, b[r], nb[r], workspace[r], workspace_bytes[r], saved ? saved[r] : 0,
                       saved && saved_bytes ? saved_bytes[r] : 0, streams ? streams[r] : NULL)))
      return rt_fail(s, "%s: rank %d: %s", fn, r, cake_last_error());
  }
  for (int r = 0; r < n; r++) /* every rank its own bytes: [x, x + what its plan needs) */
    for (int q = 0; q < r; q++) {
      size_t wr = plans[r]->workspace_bytes, wq = plans[q]->workspace_bytes;
      if (wr && wq && workspace[r] < workspace[q] + wq && workspace[q] < workspace[r] + wr)
        return rt_fail(CAKE_ERR_ARGUMENT, "%s: the workspaces of ranks %d and %d overlap", fn, q, r);
      size_t sr = plans[r]->saved_bytes, sq = plans[q]->saved_bytes;
      if (sr && sq && saved[r] < saved[q] + sq && saved[q] < saved[r] + sr)
        return rt_fail(CAKE_ERR_ARGUMENT, "%s: the saved areas of ranks %d and %d overlap", fn, q, r);
    }
  return CAKE_OK;
}

cake_status cake_launch_group(cake_plan *const *plans, int n, const char *entry, const cake_binding *const *b,
                              const int *nb, const uint64_t *workspace, const size_t *workspace_bytes,
                              const uint64_t *saved, const size_t *saved_bytes, cake_comm *const *comms,
                              void *const *streams) {
  const char *fn = "cake_launch_group";
  if (!plans || !entry || !b || !nb || !workspace || !workspace_bytes || !comms)
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: plans, entry, b, nb, workspace, workspace_bytes and comms are required", fn);
  if (n < 1 || n > CAKE_MAX_RANKS)
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: n is %d, outside [1, %d]", fn, n, CAKE_MAX_RANKS);
  if (saved && !saved_bytes) return rt_fail(CAKE_ERR_ARGUMENT, "%s: saved needs saved_bytes", fn);
  for (int r = 0; r < n; r++)
    if (!plans[r]) return rt_fail(CAKE_ERR_ARGUMENT, "%s: plans[%d] is NULL", fn, r);
  const cake_allocator *al = &plans[0]->al;
  RtRun *runs = rt_alloc(al, sizeof(RtRun) * (size_t)n);
  uint64_t *send = rt_alloc(al, sizeof(uint64_t) * (size_t)n), *recv = rt_alloc(al, sizeof(uint64_t) * (size_t)n);
  void **st = rt_alloc(al, sizeof(void *) * (size_t)n);
  cake_status s = !runs || !send || !recv || !st ? CAKE_ERR_MEMORY : CAKE_OK;
  if (!s) s = group_check(runs, plans, n, entry, b, nb, workspace, workspace_bytes, saved, saved_bytes, comms, streams);
  /* nothing was launched up to here; now the device */
  for (int r = 0; r < n && !s; r++) {
    st[r] = streams ? streams[r] : NULL;
    if ((s = run_device(&runs[r], b[r], nb[r], saved ? saved[r] : 0)) || (s = run_tables(&runs[r])) ||
        (s = run_timing(&runs[r])))
      s = rt_fail(s, "%s: rank %d: %s", fn, r, cake_last_error());
  }
  const RtEntry *e = s ? NULL : runs[0].e; /* the same entry of the same program on every rank */
  Walk w;
  int si, first, last, run;
  int32_t round;
  if (e) walk_init(&w, e, plans[0]->nrounds); /* the same partition: the same rounds on every rank */
  while (e && !s && walk_next(&w, &si, &round, &first, &last, &run)) {
    for (int r = 0; r < n; r++) runs[r].round = round;
    if (!run) { /* a group of no rounds: its marks only */
      for (int r = 0; r < n && !s; r++)
        if ((s = run_mark(&runs[r], si, 0)) || (s = run_mark(&runs[r], si, 1))) s = rt_fail(s, "rank %d: %s", r, cake_last_error());
      continue;
    }
    if (!RT_IS_EXCHANGE(e->stages[si])) { /* every rank's kernel of this stage, each timed alone */
      for (int r = 0; r < n && !s; r++)
        if ((first && (s = run_mark(&runs[r], si, 0))) || (s = run_kernel(&runs[r], si)) ||
            (last && (s = run_mark(&runs[r], si, 1))))
          s = rt_fail(s, "rank %d: %s", r, cake_last_error());
      continue;
    }
    size_t bytes = 0;
    const RtExchange *x = NULL;
    for (int r = 0; r < n && !s; r++) {
      x = run_exchange(&runs[r], si, &send[r], &recv[r], &bytes); /* the same bytes: same dims */
      if (first) s = run_mark(&runs[r], si, 0);
      if (!s && x->op == X_HALO) s = halo_pack(&runs[r], x, send[r]);
    }
    int to[CAKE_MAX_RANKS], from[CAKE_MAX_RANKS];
    if (!s && rt_send_peers(x, 0, n, &to[0], &from[0])) { /* to the next (previous) rank; the end's gets 0 */
      for (int r = 0; r < n && !s; r++) {
        rt_send_peers(x, r, n, &to[r], &from[r]);
        if (from[r] < 0) s = rt_memset_zero(recv[r], bytes, st[r]);
      }
      if (!s) s = rt_comm_local_send_recv(comms, n, send, to, recv, from, bytes, st);
    } else if (!s) {
      s = rt_comm_local_all_gather(comms, n, send, recv, bytes, st);
    }
    for (int r = 0; r < n && !s && x->op == X_HALO; r++) s = halo_unpack(&runs[r], x, recv[r]);
    if (s) s = rt_fail(s, "exchange '%s' of '%s': %s", x->name, plans[0]->prog->name, cake_last_error());
    for (int r = 0; r < n && !s && last; r++) s = run_mark(&runs[r], si, 1);
  }
  for (int r = 0; e && r < n && !s; r++)
    if (plans[r]->timing) plans[r]->stage_timed[runs[r].ei] = 1;
  rt_free(al, runs);
  rt_free(al, send);
  rt_free(al, recv);
  rt_free(al, st);
  return s;
}
