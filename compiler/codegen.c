/* codegen.c - units, cache and worker processes of codegen.h.
 *
 * A unit's result travels as a record, from a worker through its pipe and
 * to and from the cache: a magic line, then host-order 64-bit integers and
 * length-prefixed byte strings (length -1: absent). Fields: errors, diagnostics, MLIR,
 * LLVM IR, PTX, the PTX as generated (when ptxas was given another), cubin, note, shared bytes, registers, spill bytes, stack
 * bytes, three timings. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache.h"
#include "cake.h"
#include "codegen.h"
#include "jobs.h"

#define RECORD_MAGIC "cake-unit 1"

/* ---- records ---- */

static void put_i64(Buf *b, int64_t v) { buf_put(b, &v, sizeof v); }

static void put_f64(Buf *b, double v) { buf_put(b, &v, sizeof v); }

static void put_blob(Buf *b, const void *p, size_t n, int present) {
  put_i64(b, present ? (int64_t)n : -1);
  if (present) buf_put(b, p, n);
}

static void put_str(Buf *b, const char *s) { put_blob(b, s, s ? strlen(s) : 0, s != NULL); }

typedef struct Reader {
  const char *p;
  size_t left;
  int bad;
} Reader;

static int64_t get_i64(Reader *r) {
  int64_t v = 0;
  if (r->left < sizeof v) {
    r->bad = 1;
    return 0;
  }
  memcpy(&v, r->p, sizeof v);
  r->p += sizeof v;
  r->left -= sizeof v;
  return v;
}

static double get_f64(Reader *r) {
  int64_t bits = get_i64(r);
  double v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

/* A malloc'd copy (NUL-terminated), or NULL for an absent field. */
static char *get_blob(Reader *r, size_t *len) {
  int64_t n = get_i64(r);
  if (r->bad || n < 0) return NULL;
  if ((uint64_t)n > r->left) {
    r->bad = 1;
    return NULL;
  }
  char *s = malloc((size_t)n + 1);
  memcpy(s, r->p, (size_t)n);
  s[n] = 0;
  r->p += n;
  r->left -= (size_t)n;
  if (len) *len = (size_t)n;
  return s;
}

static void put_unit(Buf *b, int errors, const char *diag, const KernelBinary *kb, const char *ptx_generated,
                     int with_times) {
  buf_puts(b, RECORD_MAGIC);
  put_i64(b, errors);
  put_str(b, diag);
  put_str(b, kb->mlir);
  put_str(b, kb->llvm);
  put_str(b, kb->ptx);
  put_str(b, ptx_generated);
  put_blob(b, kb->cubin, kb->cubin_len, kb->cubin != NULL);
  put_str(b, kb->note);
  put_i64(b, kb->shared_bytes);
  put_i64(b, kb->registers);
  put_i64(b, kb->spill_bytes);
  put_i64(b, kb->stack_bytes);
  for (int i = 0; i < 3; i++) put_f64(b, with_times ? kb->seconds[i] : 0.0);
}

/* Fill u from a record; -1 when it is malformed. */
static int get_unit(CodegenUnit *u, const char *data, size_t n) {
  size_t m = strlen(RECORD_MAGIC);
  if (n < m || memcmp(data, RECORD_MAGIC, m) != 0) return -1;
  Reader r = {data + m, n - m, 0};
  KernelBinary *kb = &u->kb;
  u->errors = (int)get_i64(&r);
  u->diag = get_blob(&r, NULL);
  kb->mlir = get_blob(&r, NULL);
  kb->llvm = get_blob(&r, NULL);
  kb->ptx = get_blob(&r, NULL);
  u->ptx_generated = get_blob(&r, NULL);
  kb->cubin = (unsigned char *)get_blob(&r, &kb->cubin_len);
  kb->note = get_blob(&r, NULL);
  kb->shared_bytes = (int)get_i64(&r);
  kb->registers = (int)get_i64(&r);
  kb->spill_bytes = (int)get_i64(&r);
  kb->stack_bytes = (int)get_i64(&r);
  for (int i = 0; i < 3; i++) kb->seconds[i] = get_f64(&r);
  if (r.bad || r.left || (!u->errors && !kb->ptx)) {
    free(u->diag);
    free(u->ptx_generated);
    u->diag = u->ptx_generated = NULL;
    kernel_binary_free(kb);
    return -1;
  }
  return 0;
}

/* ---- units ---- */

void codegen_init(Codegen *g, Backend *be, EmitKind emit, int jobs, const char *cache_dir) {
  memset(g, 0, sizeof *g);
  g->be = be;
  g->emit = emit;
  g->jobs = jobs > 0 ? jobs : jobs_default();
  /* the cache holds assembled units: it serves cubin, fatbin and package builds */
  g->cache_dir = cache_dir && *cache_dir && emit >= EMIT_CUBIN ? cache_dir : NULL;
}

void codegen_free(Codegen *g) {
  for (int i = 0; i < g->nunits; i++) {
    kernel_binary_free(&g->units[i].kb);
    free(g->units[i].diag);
    free(g->units[i].ptx_generated);
  }
  free(g->units);
  memset(g, 0, sizeof *g);
}

/* The request text as keys cover it: what the compilation emits, and with a
 * cache the compiler and ptxas that made it. */
static void key_text(const Codegen *g, Buf *t, const char *text) {
  buf_puts(t, text);
  buf_printf(t, "emit %s\n", g->emit >= EMIT_CUBIN ? "cubin" : g->emit == EMIT_PTX ? "ptx" : "text");
  if (g->cache_dir) buf_printf(t, "build %s\nptxas %s\n", cake_build_id(), backend_ptxas_version(g->be));
}

int codegen_add(Codegen *g, const char *text, const char *view_text, const CirProgram *p, const CirKernel *k,
                const KernelAbi *abi, const char *target, const char *symbol) {
  Buf t;
  buf_init(&t);
  /* targets of one view share the lowering (the view text); targets that
   * see the same lowering and PTX target share the generated PTX (the text
   * covers both); the key adds the chip that ptxas assembles for */
  char vkey[65], lkey[65], key[65];
  key_text(g, &t, view_text);
  sha256_hex(t.data, t.len, vkey);
  t.len = 0;
  key_text(g, &t, text);
  sha256_hex(t.data, t.len, lkey);
  buf_printf(&t, "assemble %s\n", target);
  sha256_hex(t.data, t.len, key);
  buf_free(&t);
  g->requests++;
  for (int i = 0; i < g->nunits; i++)
    if (!strcmp(g->units[i].key, key)) return i;
  if (g->nunits == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 32;
    g->units = realloc(g->units, sizeof *g->units * (size_t)g->cap);
  }
  CodegenUnit *u = &g->units[g->nunits];
  memset(u, 0, sizeof *u);
  memcpy(u->key, key, sizeof key);
  memcpy(u->lkey, lkey, sizeof lkey);
  memcpy(u->vkey, vkey, sizeof vkey);
  u->p = p;
  u->k = k;
  u->abi = abi;
  u->target = target;
  u->symbol = symbol;
  u->size = strlen(text);
  return g->nunits++;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Largest units first, so that no long one starts last (then in order). */
typedef struct SizedUnit {
  size_t size;
  int unit;
} SizedUnit;

static int by_size(const void *a, const void *b) {
  const SizedUnit *x = a, *y = b;
  if (x->size != y->size) return x->size > y->size ? -1 : 1;
  return x->unit - y->unit;
}

/* Sort units (indices) largest first, by their request text: the work of
 * lowering them. */
static void order_by_size(const Codegen *g, int *units, int n) {
  SizedUnit *order = malloc(sizeof *order * (size_t)(n + 1));
  for (int i = 0; i < n; i++) order[i] = (SizedUnit){g->units[units[i]].size, units[i]};
  qsort(order, (size_t)n, sizeof *order, by_size);
  for (int i = 0; i < n; i++) units[i] = order[i].unit;
  free(order);
}

/* One ptxas run: the PTX that unit `lowered` holds, for `target`, on behalf
 * of unit `unit` (-1: a reference assembly that no unit asked for, made for
 * its choice of occupancy only). `given`: the PTX to assemble instead (the
 * reference's, with its choice), or NULL. */
typedef struct AsmTask {
  int unit, lowered;
  const char *target;
  const char *ref; /* round 2: the reference chip */
  char *given;
} AsmTask;

/* A lowering: the units (one per PTX target) that one lowering serves. */
typedef struct Lowering {
  int first, n; /* its units: members[first .. first + n - 1] */
} Lowering;

typedef struct UnitWork {
  Codegen *g;
  const Lowering *lowerings; /* lowering: one per task */
  const int *members;        /* their units */
  const AsmTask *tasks;      /* assembly */
} UnitWork;

/* Lowering: MLIR and LLVM IR once, then the PTX of each of its units (no
 * cubin): one record per unit, each after its length. Every record carries
 * the lowering's diagnostics; a failure is every unit's. */
static void lower_task(void *ctx, int i, Buf *out) {
  UnitWork *w = ctx;
  const Lowering *l = &w->lowerings[i];
  const CodegenUnit *u = &w->g->units[w->members[l->first]];
  const char *targets[CAKE_MAX_TARGETS];
  KernelBinary kb[CAKE_MAX_TARGETS];
  CAKE_ASSERT(l->n <= CAKE_MAX_TARGETS);
  for (int j = 0; j < l->n; j++) targets[j] = w->g->units[w->members[l->first + j]].target;
  Arena arena;
  arena_init(&arena);
  Diag d;
  diag_init(&d, 1 << 30);
  EmitKind stop = w->g->emit < EMIT_PTX ? w->g->emit : EMIT_PTX;
  int rc = backend_compile(w->g->be, &arena, &d, u->p, u->k, u->abi, targets, l->n, u->symbol, stop, kb);
  int errors = rc ? (d.errors ? d.errors : 1) : 0;
  for (int j = 0; j < l->n; j++) {
    Buf rec;
    buf_init(&rec);
    put_unit(&rec, errors, d.out.data ? d.out.data : "", &kb[j], NULL, 1);
    put_blob(out, rec.data, rec.len, 1);
    buf_free(&rec);
    kernel_binary_free(&kb[j]);
  }
  diag_free(&d);
  arena_free(&arena);
}

/* Assembly: a copy of the lowered unit's PTX (or the reference's) given to
 * ptxas for the task's target. Only the unit that was lowered keeps the
 * lowering's times. */
static void assemble_task(void *ctx, int i, Buf *out) {
  UnitWork *w = ctx;
  const AsmTask *t = &w->tasks[i];
  Diag d;
  diag_init(&d, 1 << 30);
  KernelBinary kb;
  codegen_copy(w->g, t->lowered, &kb);
  kb.target = t->target;
  kb.ptx_target = backend_ptx_target(t->target);
  if (t->lowered != t->unit) kb.seconds[0] = kb.seconds[1] = 0;
  kb.seconds[2] = 0;
  /* ptxas may be given a changed PTX (see backend_assemble); the names
   * derive from the PTX as generated */
  char *generated = strdup(kb.ptx);
  if (t->given) {
    free(kb.ptx);
    kb.ptx = strdup(t->given);
  }
  int rc = backend_assemble(w->g->be, &d, &kb);
  int same = !kb.ptx || !strcmp(generated, kb.ptx);
  put_unit(out, rc ? (d.errors ? d.errors : 1) : 0, d.out.data ? d.out.data : "", &kb, same ? NULL : generated, 1);
  free(generated);
  kernel_binary_free(&kb);
  diag_free(&d);
}

/* Order tasks largest PTX first (ptxas' work; then in order), so that no
 * long one starts last. */
static void order_tasks(const Codegen *g, AsmTask *t, int n) {
  AsmTask *copy = malloc(sizeof *copy * (size_t)(n + 1));
  SizedUnit *order = malloc(sizeof *order * (size_t)(n + 1));
  for (int i = 0; i < n; i++) order[i] = (SizedUnit){strlen(g->units[t[i].lowered].kb.ptx), i};
  qsort(order, (size_t)n, sizeof *order, by_size);
  if (n) memcpy(copy, t, sizeof *copy * (size_t)n);
  for (int i = 0; i < n; i++) t[i] = copy[order[i].unit];
  free(order);
  free(copy);
}

static void note_cache_trouble(Codegen *g, Buf *notes, const char *why) {
  if (!g->cache_warned)
    buf_printf(notes, "cakec: warning: not using the cache in '%s': %s; compiling without it\n", g->cache_dir, why);
  g->cache_warned = 1;
  g->cache_dir = NULL;
}

static char *died_message(const char *what) {
  Diag d;
  diag_init(&d, 1);
  diag_plain(&d, "internal error: %s: its worker process stopped without a result", what);
  char *s = buf_take(&d.out);
  diag_free(&d);
  return s;
}

/* What a record does not carry: the unit's name and targets. */
static void label(CodegenUnit *u) {
  u->kb.symbol = strdup(u->symbol);
  u->kb.target = u->target;
  u->kb.ptx_target = backend_ptx_target(u->target);
}

/* The chip that chooses the occupancy of task t's PTX; NULL when the PTX
 * leaves no choice or no chip of its lowering can be assembled. */
static const char *reference_chip(Codegen *g, const AsmTask *t) {
  if (!backend_ptx_chooses_occupancy(g->units[t->lowered].kb.ptx)) return NULL;
  return backend_reference_chip(g->be, t->target);
}

/* Task t's reference: a unit held from the cache (*unit), else a task of
 * round 1 (*task); -1 when neither is there. */
static void find_reference(Codegen *g, const AsmTask *r1, int n1, const AsmTask *t, int *unit, int *task) {
  const char *c = t->ref;
  const char *lkey = g->units[t->lowered].lkey;
  *unit = *task = -1;
  for (int u = 0; u < g->nunits && *unit < 0; u++)
    if (g->units[u].cached && !g->units[u].errors && !strcmp(g->units[u].target, c) && !strcmp(g->units[u].lkey, lkey))
      *unit = u;
  for (int j = 0; j < n1 && *unit < 0 && *task < 0; j++)
    if (r1[j].lowered == t->lowered && !strcmp(r1[j].target, c)) *task = j;
}

/* Drop what a unit holds (its lowering's result, or a record), errors too. */
static void clear_unit(CodegenUnit *u) {
  kernel_binary_free(&u->kb);
  free(u->diag);
  free(u->ptx_generated);
  u->diag = u->ptx_generated = NULL;
  u->errors = 0;
}

/* Put a finished assembly's record in its unit. */
static void take_assembly(Codegen *g, const AsmTask *t, const Buf *out, int died) {
  CodegenUnit *u = &g->units[t->unit];
  clear_unit(u); /* a lowered unit's result: the record holds it again */
  if (died || get_unit(u, out->data, out->len) != 0) {
    char what[600];
    snprintf(what, sizeof what, "assembly of kernel '%s' for %s", u->k->name, u->target);
    u->errors = 1;
    u->diag = died_message(what);
  }
  label(u);
}

/* The PTX a finished assembly gave ptxas; NULL when it failed, and then
 * *why (when asked; malloc'd) says why. `seconds` gets its ptxas time. */
static char *assembled_ptx(const Buf *out, int died, double *seconds, char **why) {
  CodegenUnit tmp;
  memset(&tmp, 0, sizeof tmp);
  if (died || get_unit(&tmp, out->data, out->len) != 0) {
    if (why) *why = died_message("assembly for the reference chip");
    return NULL;
  }
  char *ptx = tmp.errors ? NULL : tmp.kb.ptx;
  if (seconds) *seconds += tmp.kb.seconds[2];
  if (ptx) tmp.kb.ptx = NULL;
  else if (why) *why = strdup(tmp.diag ? tmp.diag : "");
  free(tmp.diag);
  free(tmp.ptx_generated);
  kernel_binary_free(&tmp.kb);
  return ptx;
}

/* Task t's unit fails with its reference: `why` (taken) is the reference's
 * failure. The unit has no result and is not cached. */
static void fail_with_reference(Codegen *g, const AsmTask *t, char *why) {
  CodegenUnit *u = &g->units[t->unit];
  Buf b;
  buf_init(&b);
  buf_printf(&b, "cakec: error: kernel '%s' for %s takes its occupancy from its assembly for %s, which failed:\n%s",
             u->k->name, u->target, t->ref, why ? why : "");
  clear_unit(u);
  u->diag = buf_take(&b);
  u->errors = 1;
  free(why);
  label(u);
}

/* Occupancy is chosen once per lowering. PTX that asks for two blocks per
 * multiprocessor is assembled that way and, when it spills, again at one
 * (backend_assemble); that choice is made on the lowering's reference chip
 * (backend_reference_chip: sm_100a for the sm_100f family), and the other
 * chips of the lowering are given the PTX as the reference assembled it:
 * no second ptxas run for each of them, and the PTX that the driver
 * compiles for a chip this ptxas cannot assemble (sm_107a) carries the
 * choice too. The reference is a unit of this build, one held (from the
 * cache), or else assembled for the choice alone, so a chip's cubin is the
 * same whatever other chips the build has. Round 1: tasks that choose for
 * themselves, and the references; round 2: the others. */
static void assemble_units(Codegen *g, const AsmTask *tasks, int n) {
  AsmTask *r1 = malloc(sizeof *r1 * (size_t)(2 * n + 1)), *r2 = malloc(sizeof *r2 * (size_t)(n + 1));
  int n1 = 0, n2 = 0;
  for (int i = 0; i < n; i++) {
    const char *c = reference_chip(g, &tasks[i]);
    if (!c || !strcmp(c, tasks[i].target)) {
      r1[n1++] = tasks[i];
    } else {
      r2[n2] = tasks[i];
      r2[n2++].ref = c;
    }
  }
  /* a reference that is neither held nor in round 1 is added to it */
  for (int i = 0; i < n2; i++) {
    int unit, task;
    find_reference(g, r1, n1, &r2[i], &unit, &task);
    if (unit < 0 && task < 0) r1[n1++] = (AsmTask){-1, r2[i].lowered, r2[i].ref, NULL, NULL};
  }
  order_tasks(g, r1, n1);
  order_tasks(g, r2, n2);
  Buf *out1 = calloc((size_t)n1 + 1, sizeof(Buf)), *out2 = calloc((size_t)n2 + 1, sizeof(Buf));
  int *died1 = calloc((size_t)n1 + 1, sizeof(int)), *died2 = calloc((size_t)n2 + 1, sizeof(int));
  UnitWork w = {g, NULL, NULL, r1};
  jobs_run(g->jobs, n1, assemble_task, &w, out1, died1);
  /* round 2 takes its references' PTX; a task whose reference failed
   * fails with it (`given` NULL, `why` its reason) and is not run */
  AsmTask *run = malloc(sizeof *run * (size_t)(n2 + 1));
  char **why = calloc((size_t)n2 + 1, sizeof(char *));
  int nrun = 0;
  for (int i = 0; i < n2; i++) {
    int unit, task;
    find_reference(g, r1, n1, &r2[i], &unit, &task);
    r2[i].given = unit >= 0 ? strdup(g->units[unit].kb.ptx) : assembled_ptx(&out1[task], died1[task], NULL, &why[i]);
    if (r2[i].given) run[nrun++] = r2[i];
  }
  /* the units keep their lowerings until round 2 has copied them */
  w.tasks = run;
  jobs_run(g->jobs, nrun, assemble_task, &w, out2, died2);
  for (int j = 0; j < n1; j++) {
    if (r1[j].unit >= 0) take_assembly(g, &r1[j], &out1[j], died1[j]);
    else free(assembled_ptx(&out1[j], died1[j], &g->seconds[2], NULL)); /* a reference alone: count its time */
    buf_free(&out1[j]);
  }
  for (int i = 0, k = 0; i < n2; i++) {
    if (r2[i].given) {
      take_assembly(g, &r2[i], &out2[k], died2[k]);
      buf_free(&out2[k++]);
    } else {
      fail_with_reference(g, &r2[i], why[i]);
    }
    free(r2[i].given);
  }
  free(why);
  free(run);
  free(out1);
  free(out2);
  free(died1);
  free(died2);
  free(r1);
  free(r2);
}

void codegen_run(Codegen *g, Buf *notes) {
  double t0 = now_seconds();
  if (g->cache_dir && !*cake_build_id())
    note_cache_trouble(g, notes, "this compiler was linked without a build id (-Wl,--build-id), so its kernels "
                                 "cannot be told from another build's");
  int *todo = malloc(sizeof(int) * (size_t)(g->nunits + 1));
  int ntodo = 0;
  for (int i = 0; i < g->nunits; i++) {
    CodegenUnit *u = &g->units[i];
    if (g->cache_dir) {
      Buf b;
      buf_init(&b);
      int st = cache_get(g->cache_dir, u->key, &b);
      int ok = st == CACHE_HIT && get_unit(u, b.data, b.len) == 0;
      if (ok && u->errors) { /* never stored: treat as damaged */
        clear_unit(u);
        ok = 0;
      }
      if (ok) {
        label(u);
        u->cached = 1;
        g->cache_hits++;
      } else if (st != CACHE_ABSENT) {
        g->cache_corrupt++;
        buf_printf(notes, "cakec: warning: cache entry %s is damaged; compiling the kernel again\n", u->key);
      }
      buf_free(&b);
      if (u->cached) continue;
    }
    todo[ntodo++] = i;
  }
  /* one PTX per lowering key among the units to compile (`lowered`: the
   * unit that holds it), and one lowering per view key among those */
  int *lowered = malloc(sizeof(int) * (size_t)(g->nunits + 1));
  int *lower = malloc(sizeof(int) * (size_t)(ntodo + 1));
  int nlower = 0;
  for (int i = 0; i < g->nunits; i++) lowered[i] = -1;
  for (int t = 0; t < ntodo; t++) {
    int ui = todo[t];
    for (int l = 0; l < nlower && lowered[ui] < 0; l++)
      if (!strcmp(g->units[lower[l]].lkey, g->units[ui].lkey)) lowered[ui] = lower[l];
    if (lowered[ui] < 0) lowered[ui] = lower[nlower++] = ui;
  }
  g->lowerings += nlower;
  /* group them by view (each its first unit: `heads`; `group`: the head's
   * index per PTX unit), the largest lowerings first */
  int *heads = malloc(sizeof(int) * (size_t)(nlower + 1)), *group = malloc(sizeof(int) * (size_t)(nlower + 1));
  int *members = malloc(sizeof(int) * (size_t)(nlower + 1));
  int nheads = 0;
  for (int l = 0; l < nlower; l++) {
    int h = 0;
    while (h < nheads && strcmp(g->units[heads[h]].vkey, g->units[lower[l]].vkey)) h++;
    if (h == nheads) heads[nheads++] = lower[l];
    group[l] = heads[h];
  }
  order_by_size(g, heads, nheads);
  Lowering *lw = malloc(sizeof *lw * (size_t)(nheads + 1));
  int nm = 0;
  for (int h = 0; h < nheads; h++) {
    lw[h] = (Lowering){nm, 0};
    for (int l = 0; l < nlower; l++)
      if (group[l] == heads[h]) {
        members[nm++] = lower[l];
        lw[h].n++;
      }
  }
  g->views += nheads;
  /* learned here, inherited by the workers */
  if (g->emit >= EMIT_CUBIN)
    for (int i = 0; i < ntodo; i++) backend_can_assemble(g->be, g->units[todo[i]].target);
  Buf *out = calloc((size_t)ntodo + 1, sizeof(Buf));
  int *died = calloc((size_t)ntodo + 1, sizeof(int));
  UnitWork w = {g, lw, members, NULL};
  jobs_run(g->jobs, nheads, lower_task, &w, out, died);
  for (int h = 0; h < nheads; h++) {
    Reader r = {out[h].data, out[h].len, 0};
    for (int j = 0; j < lw[h].n; j++) {
      CodegenUnit *u = &g->units[members[lw[h].first + j]];
      int64_t n = died[h] ? -1 : get_i64(&r);
      int bad = r.bad || n < 0 || (uint64_t)n > r.left || get_unit(u, r.p, (size_t)n) != 0;
      if (bad) {
        char what[600];
        snprintf(what, sizeof what, "code generation of kernel '%s' for %s", u->k->name, u->target);
        clear_unit(u);
        u->errors = 1;
        u->diag = died_message(what);
        r.bad = 1;
      } else {
        r.p += n;
        r.left -= (size_t)n;
      }
      label(u);
    }
    buf_free(&out[h]);
    died[h] = 0;
  }
  free(heads);
  free(group);
  free(members);
  free(lw);
  /* the others share their lowering's result or failure */
  AsmTask *tasks = malloc(sizeof *tasks * (size_t)(ntodo + 1));
  int ntasks = 0;
  for (int t = 0; t < ntodo; t++) {
    CodegenUnit *u = &g->units[todo[t]], *l = &g->units[lowered[todo[t]]];
    if (l->errors) {
      if (u != l) {
        u->errors = l->errors;
        u->diag = strdup(l->diag ? l->diag : "");
        label(u);
      }
    } else if (g->emit >= EMIT_CUBIN) {
      tasks[ntasks++] = (AsmTask){todo[t], lowered[todo[t]], u->target, NULL, NULL};
    } else if (u != l) {
      codegen_copy(g, lowered[todo[t]], &u->kb);
      free(u->kb.symbol);
      u->kb.seconds[0] = u->kb.seconds[1] = 0;
      label(u);
    }
  }
  if (ntasks) assemble_units(g, tasks, ntasks);
  free(tasks);
  free(lower);
  free(lowered);
  for (int t = 0; t < ntodo; t++) {
    CodegenUnit *u = &g->units[todo[t]];
    for (int s = 0; s < 3; s++) g->seconds[s] += u->kb.seconds[s];
    if (g->cache_dir && !u->errors) {
      Buf rec, why;
      buf_init(&rec);
      buf_init(&why);
      put_unit(&rec, 0, NULL, &u->kb, u->ptx_generated, 0);
      if (cache_put(g->cache_dir, u->key, rec.data, rec.len, &why)) note_cache_trouble(g, notes, why.data);
      buf_free(&rec);
      buf_free(&why);
    }
  }
  free(out);
  free(died);
  free(todo);
  g->wall[0] = now_seconds() - t0;
}

void codegen_copy(const Codegen *g, int u, KernelBinary *out) {
  const KernelBinary *kb = &g->units[u].kb;
  *out = *kb;
  out->symbol = kb->symbol ? strdup(kb->symbol) : NULL;
  out->mlir = kb->mlir ? strdup(kb->mlir) : NULL;
  out->llvm = kb->llvm ? strdup(kb->llvm) : NULL;
  out->ptx = kb->ptx ? strdup(kb->ptx) : NULL;
  out->note = kb->note ? strdup(kb->note) : NULL;
  out->cubin = NULL;
  if (kb->cubin) {
    out->cubin = malloc(kb->cubin_len ? kb->cubin_len : 1);
    memcpy(out->cubin, kb->cubin, kb->cubin_len);
  }
}

/* ---- fatbins ---- */

typedef struct FatbinWork {
  Codegen *g;
  FatbinJob *jobs;
} FatbinWork;

static void fatbin_task(void *ctx, int i, Buf *out) {
  FatbinWork *w = ctx;
  const FatbinJob *j = &w->jobs[i];
  Diag d;
  diag_init(&d, 1 << 30);
  unsigned char *fb = NULL;
  size_t fl = 0;
  double t0 = backend_tool_seconds();
  int rc = backend_fatbin(w->g->be, &d, j->bins, j->n, &fb, &fl);
  put_i64(out, rc ? (d.errors ? d.errors : 1) : 0);
  put_str(out, d.out.data ? d.out.data : "");
  put_blob(out, fb, fl, rc == 0);
  put_f64(out, backend_tool_seconds() - t0);
  free(fb);
  diag_free(&d);
}

void codegen_fatbins(Codegen *g, FatbinJob *jobs, int n) {
  double t0 = now_seconds();
  Buf *out = calloc((size_t)n + 1, sizeof(Buf));
  int *died = calloc((size_t)n + 1, sizeof(int));
  FatbinWork w = {g, jobs};
  jobs_run(g->jobs, n, fatbin_task, &w, out, died);
  for (int i = 0; i < n; i++) {
    FatbinJob *j = &jobs[i];
    Reader r = {out[i].data, out[i].len, 0};
    j->errors = (int)get_i64(&r);
    j->diag = get_blob(&r, NULL);
    j->data = (unsigned char *)get_blob(&r, &j->len);
    g->seconds[3] += get_f64(&r);
    if (died[i] || r.bad || r.left || (!j->errors && !j->data)) {
      free(j->diag);
      free(j->data);
      j->data = NULL;
      j->errors = 1;
      j->diag = died_message("fatbinary");
    }
    buf_free(&out[i]);
  }
  free(out);
  free(died);
  g->wall[1] = now_seconds() - t0;
}

void codegen_report(const Codegen *g, Buf *notes) {
  buf_printf(notes,
             "cakec: time: %d kernel compilations in %d units (%d from the cache, lowered to PTX: %d in %d lowerings), "
             "%d jobs: "
             "%.2f s elapsed for the units (CPU: MLIR %.2f s, LLVM + NVPTX %.2f s, ptxas %.2f s), "
             "%.2f s for the fatbins (CPU: fatbinary %.2f s)\n",
             g->requests, g->nunits, g->cache_hits, g->lowerings, g->views, g->jobs, g->wall[0], g->seconds[0], g->seconds[1],
             g->seconds[2], g->wall[1], g->seconds[3]);
}
