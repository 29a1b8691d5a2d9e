/* plan.c - the host plan: dims, documents, the chunk table, the byte-exact
 * workspace and saved-area layout, and tensor validation. */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cake_require.h"
#include "rt.h"

enum { ITEM_ALIGN = 256 };

int64_t rt_extent(const cake_plan *plan, RtExtent e) { return e.dim >= 0 ? plan->dims[e.dim] : e.value; }

/* A dim's value must lie in [0, 2^31); ndocs in [1, RT_MAX_DOCS]. */
static cake_status check_dim(const char *name, int64_t value) {
  if (value < 0 || value > INT32_MAX)
    return rt_fail(CAKE_ERR_ARGUMENT, "dim %s = %lld is out of range [0, 2^31)", name, (long long)value);
  return CAKE_OK;
}

cake_status cake_plan_create(const cake_program *prog, cake_plan **out) {
  if (!prog || !out) return rt_fail(CAKE_ERR_ARGUMENT, "cake_plan_create: prog and out are required");
  *out = NULL;
  const cake_allocator *al = &prog->pkg->al;
  cake_plan *p = rt_alloc(al, sizeof *p);
  if (!p) return CAKE_ERR_MEMORY;
  p->al = *al;
  p->prog = prog;
  p->dims = rt_alloc(al, sizeof(int64_t) * (size_t)(prog->ndims + 1));
  p->dim_set = rt_alloc(al, sizeof(int) * (size_t)(prog->ndims + 1));
  p->params = rt_alloc(al, sizeof(double) * (size_t)(prog->nparams + 1));
  p->param_set = rt_alloc(al, sizeof(int) * (size_t)(prog->nparams + 1));
  if (!p->dims || !p->dim_set || !p->params || !p->param_set) {
    cake_plan_free(p);
    return CAKE_ERR_MEMORY;
  }
  *out = p;
  return CAKE_OK;
}

static void free_layout(cake_plan *p) {
  rt_free(&p->al, p->chunk_table);
  rt_free(&p->al, p->doc_table);
  rt_free(&p->al, p->items);
  rt_free(&p->al, p->halo_at);
  p->chunk_table = p->doc_table = NULL;
  p->halo_at = NULL;
  p->items = NULL;
  p->nitems = 0;
  p->nchunks = 0;
}

void cake_plan_free(cake_plan *p) {
  if (!p) return;
  cake_allocator al = p->al; /* the plan's own copy: the package is not touched */
  free_layout(p);
  rt_free(&al, p->dims);
  rt_free(&al, p->dim_set);
  rt_free(&al, p->params);
  rt_free(&al, p->param_set);
  rt_free(&al, p->cu);
  rt_free(&al, p->frag_table);
  rt_free(&al, p->part_first);
  rt_free(&al, p->part_len);
  rt_plan_timing_free(p);
  rt_free(&al, p);
}

void rt_plan_timing_free(cake_plan *p) {
  if (p->stage_events)
    for (int ei = 0; ei < p->prog->nentries; ei++) {
      void **ev = p->stage_events[ei];
      for (int i = 0; ev && i < 2 * p->prog->entries[ei].n; i++) rt_event_destroy(ev[i]);
      rt_free(&p->al, ev);
    }
  rt_free(&p->al, p->stage_events);
  rt_free(&p->al, p->stage_timed);
  p->stage_events = NULL;
  p->stage_timed = NULL;
  p->timing_ctx = NULL;
}

cake_status cake_plan_set_timing(cake_plan *p, int on) {
  if (!p) return rt_fail(CAKE_ERR_ARGUMENT, "cake_plan_set_timing: plan is required");
  p->timing = on != 0;
  return CAKE_OK;
}

cake_status cake_plan_stage_times(const cake_plan *p, const char *entry, const char **names, float *ms, int cap,
                                  int *n) {
  const char *fn = "cake_plan_stage_times";
  if (!p || !entry || !n) return rt_fail(CAKE_ERR_ARGUMENT, "%s: plan, entry and n are required", fn);
  if (cap < 0 || (cap > 0 && !names && !ms))
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: cap is %d; names or ms must hold cap entries", fn, cap);
  int ei = rt_entry_index(p->prog, entry);
  if (ei < 0) return rt_fail(CAKE_ERR_ARGUMENT, "%s: program '%s' has no entry '%s'", fn, p->prog->name, entry);
  if (!p->stage_timed || !p->stage_timed[ei])
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: entry '%s' has not been launched with timing on (cake_plan_set_timing)", fn,
                   entry);
  const RtEntry *e = &p->prog->entries[ei];
  *n = e->n;
  for (int si = 0; si < e->n && si < cap; si++) {
    int ref = e->stages[si];
    if (names)
      names[si] = RT_IS_EXCHANGE(ref) ? p->prog->exchanges[RT_EXCHANGE_INDEX(ref)].name : p->prog->stages[ref].name;
    if (ms) {
      cake_status s = rt_event_elapsed(&ms[si], p->stage_events[ei][2 * si], p->stage_events[ei][2 * si + 1]);
      if (s) return rt_fail(s, "%s: stage %d of entry '%s': %s", fn, si, entry, cake_last_error());
    }
  }
  return CAKE_OK;
}

static cake_status unfinalize(cake_plan *p) {
  p->finalized = 0;
  p->tables_uploaded_to = 0;
  return CAKE_OK;
}

cake_status cake_plan_set_dim(cake_plan *p, const char *name, int64_t value) {
  if (!p || !name) return rt_fail(CAKE_ERR_ARGUMENT, "cake_plan_set_dim: plan and name are required");
  for (int i = 0; i < p->prog->ndims; i++)
    if (!strcmp(p->prog->dims[i], name)) {
      if (i == p->prog->docs_dim)
        return rt_fail(CAKE_ERR_ARGUMENT, "'%s' counts the documents; it is set by cake_plan_set_docs", name);
      if (i == p->prog->chunks_dim)
        return rt_fail(CAKE_ERR_ARGUMENT, "'%s' counts the chunks; the plan computes it", name);
      cake_status s = check_dim(name, value);
      if (s) return s;
      p->dims[i] = value;
      /* the ranks and fragments dims come from the partition: a value given
       * by hand (2) must agree with it (cake_plan_set_partition, finalize) */
      p->dim_set[i] = i == p->prog->ranks_dim || i == p->prog->frags_dim ? 2 : 1;
      return unfinalize(p);
    }
  return rt_fail(CAKE_ERR_ARGUMENT, "program '%s' has no dim '%s'", p->prog->name, name);
}

cake_status cake_plan_get_dim(const cake_plan *p, const char *name, int64_t *value) {
  if (!p || !name || !value) return rt_fail(CAKE_ERR_ARGUMENT, "cake_plan_get_dim: plan, name and value are required");
  for (int i = 0; i < p->prog->ndims; i++)
    if (!strcmp(p->prog->dims[i], name)) {
      if (!p->dim_set[i]) return rt_fail(CAKE_ERR_ARGUMENT, "dim '%s' is not set", name);
      *value = p->dims[i];
      return CAKE_OK;
    }
  return rt_fail(CAKE_ERR_ARGUMENT, "program '%s' has no dim '%s'", p->prog->name, name);
}

cake_status cake_plan_set_docs(cake_plan *p, const int32_t *cu, int64_t ndocs) {
  if (!p || !cu) return rt_fail(CAKE_ERR_ARGUMENT, "cake_plan_set_docs: plan and cu_seqlens are required");
  if (p->prog->tokens_dim < 0) return rt_fail(CAKE_ERR_ARGUMENT, "program '%s' has no token sequence", p->prog->name);
  cake_status s = rt_check_offsets(cu, ndocs);
  if (s) return s;
  int32_t *copy = rt_alloc(&p->al, sizeof(int32_t) * (size_t)(ndocs + 1));
  if (!copy) return CAKE_ERR_MEMORY;
  memcpy(copy, cu, sizeof(int32_t) * (size_t)(ndocs + 1));
  rt_free(&p->al, p->cu);
  p->cu = copy;
  p->ndocs = ndocs;
  /* documents without a partition: a context-parallel program's finalize refuses them */
  rt_free(&p->al, p->frag_table);
  rt_free(&p->al, p->part_first);
  rt_free(&p->al, p->part_len);
  p->frag_table = NULL;
  p->part_first = NULL;
  p->part_len = NULL;
  p->frag_ints = 0;
  p->partitioned = 0;
  return unfinalize(p);
}

/* ---- partitions (context-parallel programs) ---- */

/* FNV-1a, 64 bits: whether the plans of a group come from one partition. */
static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *b = data;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* A fragment of some rank, for finding the fragments before each one. */
typedef struct GFrag {
  int64_t start;
  int32_t doc, rank, index;
} GFrag;

static int by_start(const void *a, const void *b) {
  const GFrag *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

/* The position of the fragment starting at `start` in the sorted `all`. */
static int64_t find_start(const GFrag *all, int64_t n, int64_t start) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (all[mid].start < start) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

cake_status cake_plan_set_partition(cake_plan *p, const int32_t *cu, int64_t ndocs, int64_t T, int32_t R,
                                    int32_t rank, cake_layout layout, int32_t align) {
  if (!p) return rt_fail(CAKE_ERR_ARGUMENT, "cake_plan_set_partition: plan is required");
  const cake_program *prog = p->prog;
  if (prog->ranks_dim < 0)
    return rt_fail(CAKE_ERR_PLAN,
                   "program '%s' is not context-parallel (it has no dim with role 'ranks'): give its documents with "
                   "cake_plan_set_docs",
                   prog->name);
  int64_t nown = 0;
  cake_status s = cake_partition(cu, ndocs, T, R, rank, layout, align, NULL, 0, &nown, NULL); /* every argument check */
  if (s) return s;
  const char *rn = prog->dims[prog->ranks_dim];
  if (p->dim_set[prog->ranks_dim] == 2 && p->dims[prog->ranks_dim] != R)
    return rt_fail(CAKE_ERR_PLAN, "dim '%s' is %lld (cake_plan_set_dim) but the partition has R = %d ranks", rn,
                   (long long)p->dims[prog->ranks_dim], R);
  const cake_allocator *al = &p->al;
  int64_t *first = rt_alloc(al, sizeof(int64_t) * ((size_t)R + 1)); /* rank q's fragments: all[first[q]..first[q+1]) */
  if (!first) return CAKE_ERR_MEMORY;
  int64_t total = 0, F = 1; /* a rank without fragments still runs one (empty) document */
  for (int32_t q = 0; q < R; q++) {
    int64_t n = 0;
    cake_partition(cu, ndocs, T, R, q, layout, align, NULL, 0, &n, NULL); /* the same arguments: it succeeds */
    first[q] = total;
    total += n;
    if (n > F) F = n;
  }
  first[R] = total;
  if (prog->frags_dim >= 0 && p->dim_set[prog->frags_dim] == 2 && p->dims[prog->frags_dim] != F) {
    rt_free(al, first);
    return rt_fail(CAKE_ERR_PLAN, "dim '%s' is %lld (cake_plan_set_dim) but the partition's ranks hold at most %lld fragments",
                   prog->dims[prog->frags_dim], (long long)p->dims[prog->frags_dim], (long long)F);
  }
  int64_t N = nown ? nown : 1;
  cake_fragment *fr = rt_alloc(al, sizeof(cake_fragment) * (size_t)(total + 1));
  GFrag *all = rt_alloc(al, sizeof(GFrag) * (size_t)(total + 1));
  int32_t *lcu = rt_alloc(al, sizeof(int32_t) * (size_t)(N + 1));
  int32_t *lens = rt_alloc(al, sizeof(int32_t) * (size_t)(total + 1));
  int32_t *table = NULL;
  if (!fr || !all || !lcu || !lens) {
    s = CAKE_ERR_MEMORY;
    goto done;
  }
  for (int32_t q = 0; q < R; q++) {
    int64_t n = first[q + 1] - first[q];
    cake_partition(cu, ndocs, T, R, q, layout, align, fr + first[q], n, &n, q == rank ? lcu : NULL);
    for (int64_t f = 0; f < n; f++) {
      all[first[q] + f] = (GFrag){fr[first[q] + f].start, fr[first[q] + f].doc, q, (int32_t)f};
      lens[first[q] + f] = (int32_t)(fr[first[q] + f].end - fr[first[q] + f].start);
    }
  }
  qsort(all, (size_t)total, sizeof *all, by_start); /* fragments are disjoint and not empty: document order */
  /* the fragments before and after each of this rank's, in document order:
   * those of its document that start before it, and after it */
  const cake_fragment *own = fr + first[rank];
  int64_t E = 0;
  for (int64_t f = 0; f < nown; f++) {
    int64_t at = find_start(all, total, own[f].start);
    for (int64_t j = at - 1; j >= 0 && all[j].doc == own[f].doc; j--) E++;
    for (int64_t j = at + 1; j < total && all[j].doc == own[f].doc; j++) E++;
  }
  /* every document's last fragment, in document order (the ends() entries), and the rounds */
  int64_t nends = 0, rounds = total ? 1 : 0;
  for (int64_t j = 0, run = 0; j < total; j++) {
    run = j > 0 && all[j - 1].doc == all[j].doc ? run + 1 : 1;
    if (run > rounds) rounds = run;
    if (j + 1 == total || all[j + 1].doc != all[j].doc) nends++;
  }
  const int hdr = prog->frag_header;
  int64_t ints = 6 * N + hdr + 2 * E + (hdr ? 2 * nends : 0);
  if (ints > INT32_MAX) {
    s = rt_fail(CAKE_ERR_PLAN, "the fragment table of rank %d has %lld entries; at most 2^31 - 1", rank, (long long)ints);
    goto done;
  }
  if (!(table = rt_alloc(al, sizeof(int32_t) * (size_t)ints))) {
    s = CAKE_ERR_MEMORY;
    goto done;
  }
  int64_t b = 0; /* a rank without fragments: one row of zeros */
  for (int64_t f = 0; f < nown; f++) {
    int64_t at = find_start(all, total, own[f].start), j = at, end = at + 1;
    while (j > 0 && all[j - 1].doc == own[f].doc) j--;
    while (end < total && all[end].doc == own[f].doc) end++;
    int32_t *row = table + 6 * f;
    row[0] = own[f].continues;
    row[1] = own[f].continued;
    row[2] = (int32_t)b; /* before: all[j .. at) */
    row[3] = (int32_t)(at - j);
    row[4] = (int32_t)(b + (at - j)); /* after: all[at + 1 .. end) */
    row[5] = (int32_t)(end - at - 1);
    for (; j < end; j++) {
      if (j == at) continue;
      table[6 * N + hdr + 2 * b] = all[j].rank;
      table[6 * N + hdr + 2 * b + 1] = all[j].index;
      b++;
    }
  }
  if (hdr) { /* at 6 N: the first and count of the ends() entries, which follow the others */
    table[6 * N] = (int32_t)b;
    table[6 * N + 1] = (int32_t)nends;
    for (int64_t j = 0; j < total; j++)
      if (j + 1 == total || all[j + 1].doc != all[j].doc) {
        table[6 * N + hdr + 2 * b] = all[j].rank;
        table[6 * N + hdr + 2 * b + 1] = all[j].index;
        b++;
      }
  }
  if (!nown) lcu[0] = lcu[1] = 0;
  uint64_t id = 0xcbf29ce484222325ull;
  int64_t head[5] = {T, R, (int64_t)layout, align, ndocs};
  id = fnv(fnv(id, head, sizeof head), cu, sizeof(int32_t) * (size_t)(ndocs + 1));
  rt_free(al, p->cu);
  rt_free(al, p->frag_table);
  p->cu = lcu;
  p->ndocs = N;
  lcu = NULL;
  p->frag_table = table;
  p->frag_ints = ints;
  p->nrounds = rounds;
  table = NULL;
  rt_free(al, p->part_first);
  rt_free(al, p->part_len);
  p->part_first = first;
  p->part_len = lens;
  first = NULL;
  lens = NULL;
  p->dims[prog->tokens_dim] = p->cu[N];
  p->dim_set[prog->tokens_dim] = 1;
  p->dims[prog->ranks_dim] = R;
  if (!p->dim_set[prog->ranks_dim]) p->dim_set[prog->ranks_dim] = 1;
  if (prog->frags_dim >= 0) {
    p->dims[prog->frags_dim] = F;
    if (!p->dim_set[prog->frags_dim]) p->dim_set[prog->frags_dim] = 1;
  }
  p->partitioned = 1;
  p->rank = rank;
  p->nranks = R;
  p->nfrags_max = F;
  p->partition_id = id;
  unfinalize(p);
done:
  rt_free(al, first);
  rt_free(al, lens);
  rt_free(al, fr);
  rt_free(al, all);
  rt_free(al, lcu);
  rt_free(al, table);
  return s;
}

cake_status cake_plan_set_param(cake_plan *p, const char *name, double value) {
  if (!p || !name) return rt_fail(CAKE_ERR_ARGUMENT, "cake_plan_set_param: plan and name are required");
  for (int i = 0; i < p->prog->nparams; i++)
    if (!strcmp(p->prog->params[i].name, name)) {
      /* the launch converts the value to the kernel's i32 or f32: it must fit */
      if (p->prog->params[i].is_int && !(value >= INT32_MIN && value <= INT32_MAX && (double)(int32_t)value == value))
        return rt_fail(CAKE_ERR_ARGUMENT, "parameter '%s' is i32; %.15g is not an integer in [-2^31, 2^31)", name,
                       value);
      if (!p->prog->params[i].is_int && !(value >= -FLT_MAX && value <= FLT_MAX))
        return rt_fail(CAKE_ERR_ARGUMENT, "parameter '%s' is f32; %.15g is not a finite f32 value", name, value);
      p->params[i] = value;
      p->param_set[i] = 1;
      return unfinalize(p); /* the requirements over parameters are checked again */
    }
  return rt_fail(CAKE_ERR_ARGUMENT, "program '%s' has no parameter '%s'", p->prog->name, name);
}

static int uses_tables(const cake_program *prog, RtArgWhat what) {
  for (int s = 0; s < prog->nstages; s++)
    for (int a = 0; a < prog->stages[s].nargs; a++)
      if (prog->stages[s].args[a].what == what) return 1;
  return 0;
}

/* The chunk and document tables: chunks restart at every document. */
static cake_status chunk_tables(cake_plan *p) {
  const cake_program *prog = p->prog;
  int64_t T = p->dims[prog->tokens_dim], nd = p->cu ? p->ndocs : 1, C = prog->chunk, n = 0;
  if (p->cu && p->cu[nd] != T)
    return rt_fail(CAKE_ERR_PLAN, "cu_seqlens[%lld] (the last offset) is %d but the token dim %s is %lld",
                   (long long)nd, p->cu[nd], prog->dims[prog->tokens_dim], (long long)T);
  if (prog->docs_dim >= 0) {
    p->dims[prog->docs_dim] = nd;
    p->dim_set[prog->docs_dim] = 1;
  }
  for (int64_t d = 0; d < nd; d++) { /* each term <= 2^31 / 16, and nd < 2^31: no overflow */
    int64_t s = p->cu ? p->cu[d] : 0, e = p->cu ? p->cu[d + 1] : T;
    n += (e - s + C - 1) / C;
  }
  if (n > INT32_MAX) return rt_fail(CAKE_ERR_PLAN, "too many chunks (%lld)", (long long)n);
  p->chunk_table = rt_alloc(&p->al, sizeof(int32_t) * 4 * (size_t)(n + 1));
  p->doc_table = rt_alloc(&p->al, sizeof(int32_t) * (size_t)(nd + 1));
  if (!p->chunk_table || !p->doc_table) return CAKE_ERR_MEMORY;
  int64_t c = 0;
  for (int64_t d = 0; d < nd; d++) {
    int64_t s = p->cu ? p->cu[d] : 0, e = p->cu ? p->cu[d + 1] : T;
    p->doc_table[d] = (int32_t)c;
    for (int64_t t = s; t < e; t += C, c++) {
      p->chunk_table[4 * c] = (int32_t)t;
      p->chunk_table[4 * c + 1] = (int32_t)(t + C < e ? t + C : e);
      p->chunk_table[4 * c + 2] = (int32_t)d;
      p->chunk_table[4 * c + 3] = (int32_t)s; /* the document's first token (shifted windows) */
    }
  }
  p->doc_table[nd] = (int32_t)c;
  p->nchunks = n;
  p->ndocs = nd;
  if (prog->chunks_dim >= 0) {
    p->dims[prog->chunks_dim] = n;
    p->dim_set[prog->chunks_dim] = 1;
  }
  return CAKE_OK;
}

/* "[T=100, H=2, 64]" */
static const char *shape_text(const cake_plan *p, const RtTensor *t, char *buf, size_t n) {
  size_t k = 0;
  buf[0] = 0;
  for (int j = 0; j < t->rank && k < n; j++) {
    RtExtent e = t->shape[j];
    if (e.dim >= 0)
      k += (size_t)snprintf(buf + k, n - k, "%s%s=%lld", j ? ", " : "", p->prog->dims[e.dim],
                            (long long)rt_extent(p, e));
    else
      k += (size_t)snprintf(buf + k, n - k, "%s%lld", j ? ", " : "", (long long)e.value);
  }
  return buf;
}

/* The bytes of tensor `t` under the plan's dims, with every product checked. */
static cake_status tensor_bytes(const cake_plan *p, const RtTensor *t, size_t *bytes) {
  size_t b = rt_dtype_bytes(t->dtype);
  for (int j = 0; j < t->rank; j++)
    if (__builtin_mul_overflow(b, (size_t)rt_extent(p, t->shape[j]), &b)) {
      char shape[256];
      return rt_fail(CAKE_ERR_PLAN, "tensor '%s' [%s] of %s has more than 2^64 bytes", t->name,
                     shape_text(p, t, shape, sizeof shape), cake_dtype_name(t->dtype));
    }
  *bytes = b;
  return CAKE_OK;
}

/* Places `bytes` at the end of an area whose size is *end (kept a multiple of
 * ITEM_ALIGN); -1 when the area would pass SIZE_MAX. */
static int place(size_t *end, size_t bytes, size_t *offset) {
  size_t e;
  if (__builtin_add_overflow(*end, bytes, &e) || __builtin_add_overflow(e, (size_t)ITEM_ALIGN - 1, &e)) return -1;
  *offset = *end;
  *end = e / ITEM_ALIGN * ITEM_ALIGN;
  return 0;
}

/* Whether temps a and b may hold values at the same time: either is pinned,
 * or some entry has both live at one stage. */
static int overlap_in_time(const cake_program *prog, const RtTensor *a, const RtTensor *b) {
  if (a->pinned || b->pinned) return 1;
  for (int e = 0; e < prog->nentries; e++) {
    RtLive x = a->live[e], y = b->live[e];
    if (x.first >= 0 && y.first >= 0 && x.first <= y.last && y.first <= x.last) return 1;
  }
  return 0;
}

/* A temp being placed: its tensor, its bytes rounded up to ITEM_ALIGN, how
 * many stages it is live for (over all entries; pinned: all of them), its
 * offset. */
typedef struct Slot {
  int tensor;
  size_t bytes, span;
  long stages;
  size_t offset;
} Slot;

static long live_stages(const cake_program *prog, const RtTensor *t) {
  long n = 0;
  for (int e = 0; e < prog->nentries; e++)
    n += t->pinned ? prog->entries[e].n : t->live[e].first >= 0 ? t->live[e].last - t->live[e].first + 1 : 0;
  return n;
}

/* Larger first; of equal size, the one live longer first (it constrains
 * more; the short-lived then fill the gaps around it); then by tensor index:
 * a total order, so the layout is a function of the manifest and the dims
 * alone. */
static int by_size(const void *a, const void *b) {
  const Slot *x = a, *y = b;
  if (x->span != y->span) return x->span > y->span ? -1 : 1;
  if (x->stages != y->stages) return x->stages > y->stages ? -1 : 1;
  return (x->tensor > y->tensor) - (x->tensor < y->tensor);
}

static int by_offset(const void *a, const void *b) {
  const Slot *x = *(const Slot *const *)a, *y = *(const Slot *const *)b;
  if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
  return (x->tensor > y->tensor) - (x->tensor < y->tensor);
}

/* The temps, from offset `base` on: each, in by_size order, at the lowest
 * offset that overlaps no placed temp live at the same time as it (first
 * fit over the gaps between those, in offset order). *end: the end of the
 * highest one (a multiple of ITEM_ALIGN). */
static cake_status place_temps(cake_plan *p, Slot *slots, int n, size_t base, size_t *end) {
  const cake_program *prog = p->prog;
  Slot **busy = rt_alloc(&p->al, sizeof(Slot *) * (size_t)(n + 1));
  if (!busy) return CAKE_ERR_MEMORY;
  qsort(slots, (size_t)n, sizeof *slots, by_size);
  *end = base;
  for (int i = 0; i < n; i++) {
    Slot *s = &slots[i];
    const RtTensor *t = &prog->tensors[s->tensor];
    int nb = 0;
    for (int j = 0; j < i; j++)
      if (overlap_in_time(prog, t, &prog->tensors[slots[j].tensor])) busy[nb++] = &slots[j];
    qsort(busy, (size_t)nb, sizeof *busy, by_offset);
    size_t at = base, e; /* every placed offset and span is a multiple of ITEM_ALIGN, and so is `at` */
    for (int j = 0; j < nb; j++) {
      if (__builtin_add_overflow(at, s->span, &e)) break;
      if (e <= busy[j]->offset) break; /* fits in the gap before busy[j] */
      size_t bend = busy[j]->offset + busy[j]->span; /* placed: it did not overflow */
      if (bend > at) at = bend;
    }
    if (__builtin_add_overflow(at, s->span, &e)) {
      char shape[256];
      rt_free(&p->al, busy);
      return rt_fail(CAKE_ERR_PLAN, "the workspace passes 2^64 bytes at tensor '%s' [%s] (%zu bytes)", t->name,
                     shape_text(p, t, shape, sizeof shape), s->bytes);
    }
    s->offset = at;
    if (e > *end) *end = e;
  }
  rt_free(&p->al, busy);
  return CAKE_OK;
}

/* The layout: the tables, then the temp tensors in the workspace; the save
 * tensors in the saved area, one after another. Temps that no entry needs
 * at the same time share bytes (place_temps): the workspace is the peak of
 * what the entries need at once, not the sum. Every tensor's size is
 * checked here (inputs and outputs too), so validation and launches compute
 * with sizes that fit. */
static cake_status layout(cake_plan *p) {
  const cake_program *prog = p->prog;
  p->items = rt_alloc(&p->al, sizeof(RtItem) * (size_t)(prog->ntensors + 3));
  Slot *slots = rt_alloc(&p->al, sizeof(Slot) * (size_t)(prog->ntensors + 1));
  if (!p->items || !slots) {
    rt_free(&p->al, slots);
    return CAKE_ERR_MEMORY;
  }
  size_t ws = 0, sv = 0, off; /* the tables are at most 2^35 bytes: they cannot overflow */
  if (p->chunk_table && uses_tables(prog, A_CHUNK_TABLE) && !place(&ws, (size_t)p->nchunks * 16, &off))
    p->items[p->nitems++] = (RtItem){"chunk_table", 0, off, (size_t)p->nchunks * 16, -1};
  if (p->doc_table && uses_tables(prog, A_DOC_TABLE) && !place(&ws, (size_t)(p->ndocs + 1) * 4, &off))
    p->items[p->nitems++] = (RtItem){"doc_table", 0, off, (size_t)(p->ndocs + 1) * 4, -1};
  if (p->frag_table && uses_tables(prog, A_FRAG_TABLE) && !place(&ws, (size_t)p->frag_ints * 4, &off))
    p->items[p->nitems++] = (RtItem){"frag_table", 0, off, (size_t)p->frag_ints * 4, -1};
  int nslots = 0;
  cake_status s = CAKE_OK;
  for (int i = 0; i < prog->ntensors && !s; i++) {
    const RtTensor *t = &prog->tensors[i];
    size_t bytes = 0, span;
    if ((s = tensor_bytes(p, t, &bytes))) break;
    if (t->role == ROLE_TEMP_) {
      char shape[256];
      if (__builtin_add_overflow(bytes, (size_t)ITEM_ALIGN - 1, &span))
        s = rt_fail(CAKE_ERR_PLAN, "the workspace passes 2^64 bytes at tensor '%s' [%s] (%zu bytes)", t->name,
                    shape_text(p, t, shape, sizeof shape), bytes);
      else
        slots[nslots++] = (Slot){i, bytes, span / ITEM_ALIGN * ITEM_ALIGN, live_stages(prog, t), 0};
    } else if (t->role == ROLE_SAVE_) {
      char shape[256];
      if (place(&sv, bytes, &off))
        s = rt_fail(CAKE_ERR_PLAN, "the saved area passes 2^64 bytes at tensor '%s' [%s] (%zu bytes)", t->name,
                    shape_text(p, t, shape, sizeof shape), bytes);
      else
        p->items[p->nitems++] = (RtItem){t->name, 1, off, bytes, i};
    }
  }
  if (!s) s = place_temps(p, slots, nslots, ws, &ws);
  for (int j = 0; j < nslots && !s; j++) /* the temps' items, largest first */
    p->items[p->nitems++] = (RtItem){prog->tensors[slots[j].tensor].name, 0, slots[j].offset, slots[j].bytes, slots[j].tensor};
  rt_free(&p->al, slots);
  /* each halo's staging buffers, after the temps: what this rank sends (the
   * edge tokens of its fragments), then what every rank sent */
  if (!s && prog->nexchanges && !(p->halo_at = rt_alloc(&p->al, sizeof(size_t) * 2 * (size_t)prog->nexchanges)))
    s = CAKE_ERR_MEMORY;
  for (int i = 0; i < prog->nexchanges && !s; i++) {
    const RtExchange *x = &prog->exchanges[i];
    size_t send = rt_exchange_bytes(p, x), recv;
    if (x->op != X_HALO) continue;
    if (__builtin_mul_overflow(send, (size_t)p->nranks, &recv) || place(&ws, send, &p->halo_at[2 * i]) ||
        place(&ws, recv, &p->halo_at[2 * i + 1]))
      s = rt_fail(CAKE_ERR_PLAN, "the workspace passes 2^64 bytes at the staging buffers of halo '%s'", x->name);
  }
  if (s) return s;
  p->workspace_bytes = ws;
  p->saved_bytes = sv;
  return CAKE_OK;
}

/* A requirement's names: the plan's dims, and its parameters (set, else their defaults). */
static int require_value(void *ctx, const char *name, size_t len, cake_require_value *value) {
  const cake_plan *p = ctx;
  *value = (cake_require_value){0};
  for (int i = 0; i < p->prog->ndims; i++)
    if (strlen(p->prog->dims[i]) == len && !memcmp(p->prog->dims[i], name, len)) {
      value->i = p->dims[i];
      return 1;
    }
  for (int i = 0; i < p->prog->nparams; i++) {
    const RtParam *q = &p->prog->params[i];
    if (strlen(q->name) != len || memcmp(q->name, name, len)) continue;
    double v = p->param_set[i] ? p->params[i] : q->def;
    if (q->is_int) value->i = (int64_t)v;
    else value->is_float = 1, value->f = (double)(float)v; /* the f32 the kernels get */
    return 1;
  }
  return 0;
}

/* The spec's relations between dims (`require`), once every dim is known:
 * the first one broken names itself, where it is, and the dims it reads. */
static cake_status check_requires(const cake_plan *p) {
  for (int i = 0; i < p->prog->nrequires; i++) {
    const RtRequire *r = &p->prog->requires[i];
    char msg[512];
    int v = cake_require_eval(r->expr, require_value, (void *)p, 1, msg, sizeof msg);
    if (v == CAKE_REQUIRE_TRUE) continue;
    if (v == CAKE_REQUIRE_BAD) /* the loader checked it: only a bug gets here */
      return rt_fail(CAKE_ERR_PACKAGE, "requirement '%s' (%s) cannot be evaluated: %s", r->text, r->loc, msg);
    int params = 0, dims = 0;
    for (int j = 0; j < p->prog->nparams; j++) params |= cake_require_uses(r->expr, p->prog->params[j].name);
    for (int j = 0; j < p->prog->ndims; j++) dims |= cake_require_uses(r->expr, p->prog->dims[j]);
    return rt_fail(CAKE_ERR_PLAN, "%s break '%s' (%s): %s", cake_require_subject(dims, params), r->text, r->loc, msg);
  }
  return CAKE_OK;
}

static const char *kcp_needs_partition(const cake_program *prog) {
  static __thread char msg[512];
  snprintf(msg, sizeof msg,
           "program '%s' is context-parallel: give its plan the documents with cake_plan_set_partition (its fragment "
           "table and ranks come from the partition; cake_plan_set_docs gives neither)",
           prog->name);
  return msg;
}

cake_status cake_plan_finalize(cake_plan *p) {
  if (!p) return rt_fail(CAKE_ERR_ARGUMENT, "cake_plan_finalize: plan is required");
  const cake_program *prog = p->prog;
  unfinalize(p);
  free_layout(p);
  if (prog->ranks_dim >= 0) {
    if (!p->partitioned) return rt_fail(CAKE_ERR_PLAN, "%s", kcp_needs_partition(prog));
    const int dd[2] = {prog->ranks_dim, prog->frags_dim};
    const int64_t want[2] = {p->nranks, p->nfrags_max};
    for (int k = 0; k < 2; k++)
      if (dd[k] >= 0 && p->dims[dd[k]] != want[k])
        return rt_fail(CAKE_ERR_PLAN, "dim '%s' is %lld (cake_plan_set_dim) but the partition gives %lld",
                       prog->dims[dd[k]], (long long)p->dims[dd[k]], (long long)want[k]);
  }
  for (int i = 0; i < prog->ndims; i++) {
    if (i == prog->docs_dim || i == prog->chunks_dim) continue;
    if (!p->dim_set[i]) return rt_fail(CAKE_ERR_PLAN, "dim '%s' of program '%s' is not set", prog->dims[i], prog->name);
  }
  for (int i = 0; i < prog->nparams; i++)
    if (!p->param_set[i] && !prog->params[i].has_default)
      return rt_fail(CAKE_ERR_PLAN, "parameter '%s' has no default and is not set", prog->params[i].name);
  cake_status s = CAKE_OK;
  if (prog->tokens_dim >= 0) s = chunk_tables(p);
  if (!s) s = check_requires(p);
  if (!s) s = layout(p);
  if (s) {
    free_layout(p);
    return s;
  }
  p->finalized = 1;
  return CAKE_OK;
}

static cake_status need_final(const cake_plan *p, const char *fn) {
  if (!p) return rt_fail(CAKE_ERR_ARGUMENT, "%s: plan is required", fn);
  if (!p->finalized && p->prog->ranks_dim >= 0 && !p->partitioned)
    return rt_fail(CAKE_ERR_PLAN, "the plan is not finalized: %s", kcp_needs_partition(p->prog));
  if (!p->finalized) return rt_fail(CAKE_ERR_PLAN, "the plan is not finalized (call cake_plan_finalize after setting dims)");
  return CAKE_OK;
}

int64_t cake_plan_chunk_count(const cake_plan *p) { return p && p->finalized ? p->nchunks : -1; }

cake_status cake_plan_workspace_bytes(const cake_plan *p, size_t *bytes) {
  if (!bytes) return rt_fail(CAKE_ERR_ARGUMENT, "cake_plan_workspace_bytes: bytes is required");
  cake_status s = need_final(p, "cake_plan_workspace_bytes");
  if (!s) *bytes = p->workspace_bytes;
  return s;
}

size_t rt_exchange_bytes(const cake_plan *p, const RtExchange *x) {
  /* a halo sends its destination's bytes (F fragments' edge tokens); an
   * all_gather its source's. Every tensor's bytes fit: finalize checked them. */
  const RtTensor *t = &p->prog->tensors[x->op == X_HALO ? x->dst : x->src];
  size_t n = rt_dtype_bytes(t->dtype);
  for (int j = 0; j < t->rank; j++) n *= (size_t)rt_extent(p, t->shape[j]);
  return n;
}

cake_status cake_plan_comm_bytes(const cake_plan *p, const char *entry, uint64_t *sent, uint64_t *received) {
  if (!sent || !received || !entry)
    return rt_fail(CAKE_ERR_ARGUMENT, "cake_plan_comm_bytes: entry, sent and received are required");
  cake_status s = need_final(p, "cake_plan_comm_bytes");
  if (s) return s;
  int ei = rt_entry_index(p->prog, entry);
  if (ei < 0) return rt_fail(CAKE_ERR_ARGUMENT, "program '%s' has no entry '%s'", p->prog->name, entry);
  const RtEntry *e = &p->prog->entries[ei];
  uint64_t out = 0, in = 0;
  for (int si = 0; si < e->n; si++) {
    if (!RT_IS_EXCHANGE(e->stages[si])) continue;
    uint64_t n = rt_exchange_bytes(p, &p->prog->exchanges[RT_EXCHANGE_INDEX(e->stages[si])]);
    for (int g = 0; g < e->nrounds; g++) /* in a rounds group: once per round */
      if (si >= e->rounds[g].first && si < e->rounds[g].first + e->rounds[g].count) n *= (uint64_t)p->nrounds;
    const RtExchange *x = &p->prog->exchanges[RT_EXCHANGE_INDEX(e->stages[si])];
    int to, from;
    if (rt_send_peers(x, p->rank, p->nranks, &to, &from)) { /* one neighbour each way, none past the ends */
      out += to >= 0 ? n : 0;
      in += from >= 0 ? n : 0;
      continue;
    }
    out += n;
    in += n * (uint64_t)(p->nranks - 1);
  }
  *sent = out;
  *received = in;
  return CAKE_OK;
}

cake_status cake_plan_saved_bytes(const cake_plan *p, size_t *bytes) {
  if (!bytes) return rt_fail(CAKE_ERR_ARGUMENT, "cake_plan_saved_bytes: bytes is required");
  cake_status s = need_final(p, "cake_plan_saved_bytes");
  if (!s) *bytes = p->saved_bytes;
  return s;
}

cake_status cake_plan_item(const cake_plan *p, const char *name, size_t *offset, size_t *bytes) {
  if (!name || !offset || !bytes)
    return rt_fail(CAKE_ERR_ARGUMENT, "cake_plan_item: name, offset and bytes are required");
  cake_status s = need_final(p, "cake_plan_item");
  if (s) return s;
  for (int i = 0; i < p->nitems; i++)
    if (!strcmp(p->items[i].name, name)) {
      *offset = p->items[i].offset;
      *bytes = p->items[i].bytes;
      return CAKE_OK;
    }
  return rt_fail(CAKE_ERR_NOT_FOUND, "the plan has no workspace or saved item '%s'", name);
}

/* ---- validation ---- */

static const char *extent_name(const cake_plan *p, RtExtent e, char *buf, size_t n) {
  if (e.dim >= 0) snprintf(buf, n, "%s", p->prog->dims[e.dim]);
  else snprintf(buf, n, "%lld", (long long)e.value);
  return buf;
}

static cake_status check_tensor(const cake_plan *p, const RtTensor *t, const cake_tensor *x) {
  if (x->dtype != t->dtype)
    return rt_fail(CAKE_ERR_TENSOR, "%s must be %s, got %s", t->name, cake_dtype_name(t->dtype), cake_dtype_name(x->dtype));
  if (x->rank != t->rank) return rt_fail(CAKE_ERR_TENSOR, "%s must have rank %d, got %d", t->name, t->rank, x->rank);
  for (int i = 0; i < t->rank; i++) {
    int64_t want = rt_extent(p, t->shape[i]);
    if (x->shape[i] != want) {
      char nm[64];
      return rt_fail(CAKE_ERR_TENSOR, "%s: axis %d (%s) has extent %lld, expected %lld", t->name, i,
                     extent_name(p, t->shape[i], nm, sizeof nm), (long long)x->shape[i], (long long)want);
    }
  }
  int strided = 0;
  for (int i = 0; i < t->rank; i++) strided |= x->strides[i] != 0;
  if (strided) {
    int64_t expect = 1; /* the extents are the plan's, whose products finalize checked; still, never wrap */
    for (int i = t->rank - 1; i >= 0; i--) {
      if (x->shape[i] != 1 && x->strides[i] != expect)
        return rt_fail(CAKE_ERR_TENSOR, "%s: axis %d has stride %lld, expected %lld (tensors must be contiguous row-major)",
                       t->name, i, (long long)x->strides[i], (long long)expect);
      if (__builtin_mul_overflow(expect, x->shape[i], &expect))
        return rt_fail(CAKE_ERR_TENSOR, "%s: more than 2^63 elements", t->name);
    }
  }
  if (x->data % 16 != 0)
    return rt_fail(CAKE_ERR_TENSOR, "%s: data pointer 0x%llx is not 16-byte aligned", t->name, (unsigned long long)x->data);
  return CAKE_OK;
}

/* Which tensors an entry's stages pass as buffers. */
static void entry_buffers(const cake_program *prog, const RtEntry *e, int *used) {
  for (int s = 0; s < e->n; s++) {
    if (RT_IS_EXCHANGE(e->stages[s])) continue; /* exchanges move temps only */
    const RtStage *st = &prog->stages[e->stages[s]];
    for (int a = 0; a < st->nargs; a++)
      if (st->args[a].what == A_TENSOR) used[st->args[a].index] = 1;
  }
}

cake_status cake_validate(const cake_plan *p, const char *entry, const cake_binding *b, int n) {
  if (!entry || n < 0 || (n > 0 && !b))
    return rt_fail(CAKE_ERR_ARGUMENT, "cake_validate: an entry and n >= 0 bindings are required (n = %d)", n);
  cake_status s = need_final(p, "cake_validate");
  if (s) return s;
  const cake_program *prog = p->prog;
  int ei = rt_entry_index(prog, entry);
  if (ei < 0) return rt_fail(CAKE_ERR_NOT_FOUND, "program '%s' has no entry '%s'", prog->name, entry);
  int used[RT_MAX_TENSORS] = {0}, bound[RT_MAX_TENSORS] = {0}; /* the loader allows no more tensors */
  entry_buffers(prog, &prog->entries[ei], used);
  for (int i = 0; i < n; i++) {
    if (!b[i].name) return rt_fail(CAKE_ERR_ARGUMENT, "binding %d has no name", i);
    int ti = rt_tensor_index(prog, b[i].name);
    if (ti < 0) return rt_fail(CAKE_ERR_ARGUMENT, "program '%s' has no tensor '%s'", prog->name, b[i].name);
    const RtTensor *t = &prog->tensors[ti];
    if (t->role == ROLE_TEMP_ || t->role == ROLE_SAVE_)
      return rt_fail(CAKE_ERR_ARGUMENT, "'%s' lives in the %s area and is not bound", t->name, t->role == ROLE_TEMP_ ? "workspace" : "saved");
    if (bound[ti]++) return rt_fail(CAKE_ERR_ARGUMENT, "tensor '%s' is bound twice", t->name);
    if (!b[i].tensor.data) {
      if (!t->optional) return rt_fail(CAKE_ERR_TENSOR, "%s is required but its data pointer is 0", t->name);
      continue;
    }
    if ((s = check_tensor(p, t, &b[i].tensor))) return s;
  }
  for (int i = 0; i < prog->ntensors; i++) {
    const RtTensor *t = &prog->tensors[i];
    if (used[i] && !bound[i] && !t->optional && (t->role == ROLE_IN_ || t->role == ROLE_OUT_))
      return rt_fail(CAKE_ERR_ARGUMENT, "entry '%s' needs tensor '%s', which is not bound", entry, t->name);
  }
  return CAKE_OK;
}
