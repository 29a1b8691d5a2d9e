/* run.c - `cakec run` (see run.h): the arguments, the program's variant and
 * entry, dims and documents, tensors from .npy files or random, the
 * interpreter, the outputs as .npy files.
 *
 * Which tensors are inputs: the `in` tensors, and any other tensor the entry
 * reads without writing it (a backward's saved tensors). Each is read from
 * its --in file, or filled with random values (optional ones are absent
 * instead). Every other tensor starts as zeros, or as its --in file. The
 * outputs are the `out` and `save` tensors the entry writes (and its `temp`
 * tensors with --temps; the inputs too with --write-inputs, so that a
 * reference can be run on random ones). */
#include "cake_require.h"
#include "run.h"

#include <errno.h>
#include <limits.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cir.h"
#include "interp.h"
#include "npy.h"

/* SMS of prefer clauses when neither --device-sms nor $CAKE_DEVICE_SMS says:
 * the runtime's fallback without a GPU (CAKE_DEFAULT_SMS, an H100 / H200). */
enum { RUN_DEFAULT_MAX_MIB = 4096, RUN_MAX_MIB = 1 << 30, RUN_DEFAULT_SMS = 132 };

typedef struct NameArg {
  const char *name, *value, *arg; /* arg: as given, for messages */
} NameArg;

typedef struct TensorRun {
  const CirTensor *t;
  int reads, writes; /* by the entry */
  const char *file;  /* --in */
  FILE *f;
  NpyHeader h;
  int absent, random;
  int64_t shape[CIR_MAX_TENSOR_RANK];
  int64_t numel;
  double *data;
} TensorRun;

typedef struct Run {
  /* arguments */
  const char *spec, *entry_name, *out_dir, *cu_text;
  NameArg *dims_a, *options_a, *params_a, *ins_a;
  int ndims_a, noptions_a, nparams_a, nins_a;
  const char **absent_a;
  int nabsent_a;
  uint64_t seed;
  long long max_mib;
  long long device_sms; /* --device-sms; 0: $CAKE_DEVICE_SMS or RUN_DEFAULT_SMS */
  int temps, write_inputs, exact, no_random;
  /* state */
  Arena arena;
  Diag diag;
  CirProgram *p;
  const CirEntry *entry;
  long long *dims;
  const char **dim_from; /* where each dim's value came from; NULL: unbound */
  long long *cu, ndocs;
  double *params;
  TensorRun *ts;
} Run;

static void run_usage(FILE *f) {
  fprintf(f,
          "usage: cakec run SPEC.cake [options]\n"
          "Runs an entry of the program on the CPU interpreter (the language's reference semantics),\n"
          "with tensors from and to NumPy .npy files.\n"
          "  --entry NAME         the entry to run (default: the program's only entry)\n"
          "  --dim NAME=N         a dim's value (repeatable); a dim not given takes its extent from\n"
          "                       an --in file's shape\n"
          "  --cu-seqlens LIST    document offsets, e.g. 0,17,64 (default: one document of all tokens);\n"
          "                       they give the docs dim and, when not given, the token dim\n"
          "  --option NAME=VALUE  the variant (repeatable, or a comma-separated list; default: each\n"
          "                       option's default, or for an option with `prefer` clauses the\n"
          "                       first that holds for the dims, as the runtime chooses)\n"
          "  --device-sms N       the device's multiprocessor count for `prefer` clauses (SMS)\n"
          "                       (default: $CAKE_DEVICE_SMS, else %d)\n"
          "  --param NAME=VALUE   a parameter's value (repeatable; default: its default)\n"
          "  --in NAME=FILE.npy   a tensor's contents (repeatable); an input not given is random\n"
          "                       (an optional one is absent)\n"
          "  --absent NAME        leave an optional tensor out\n"
          "  --seed N             seed of the random inputs (default 0)\n"
          "  --out-dir DIR        where outputs go, as NAME.npy (default: .; created if missing)\n"
          "  --temps              also write the temp tensors the entry writes\n"
          "  --write-inputs       also write the inputs the entry reads (random or not), to check\n"
          "                       them against a reference\n"
          "  --max-memory MIB     refuse to run when the tensors need more (default %d)\n"
          "  --no-random          an input the entry reads must be given (no random inputs)\n"
          "  --exact              no rounding to bf16, f16 or f32 anywhere (inputs, stores, `as`):\n"
          "                       the program's math in double precision, float outputs written\n"
          "                       as <f8 (for finite-difference checks of gradients)\n"
          "Inputs are the in tensors and any tensor the entry reads but does not write; outputs are the\n"
          "out and save tensors it writes. Float tensors take .npy files of any float or integer type\n"
          "(rounded to the tensor's dtype), i32 tensors integer files; outputs are written as <f4\n"
          "(bf16, f32), <f2 (f16) or <i4 (i32). Random floats are normal (mean 0, deviation 1),\n"
          "random integers uniform in [0, 16); each tensor's values depend on the seed and its name.\n"
          "Exit status: 0; 1 for errors in the spec or while running it; 2 for bad arguments, files\n"
          "or shapes; 3 for an internal error.\n",
          RUN_DEFAULT_SMS, RUN_DEFAULT_MAX_MIB);
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("cakec: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputs("\n", stderr);
  va_end(ap);
  return 2;
}

static void flush_diag(Run *r) {
  if (r->diag.out.len) fwrite(r->diag.out.data, 1, r->diag.out.len, stderr);
  r->diag.out.len = 0;
}

/* ---- arguments ---- */

/* "--name=value" or "--name value": 1 when argv[*i] is that option; *v is
 * NULL when the value is missing. */
static int opt_value(int argc, char **argv, int *i, const char *name, const char **v) {
  size_t n = strlen(name);
  const char *a = argv[*i];
  if (strncmp(a, name, n)) return 0;
  if (a[n] == '=') {
    *v = a + n + 1;
    return 1;
  }
  if (a[n]) return 0;
  *v = *i + 1 < argc ? argv[++*i] : NULL;
  return 1;
}

static int parse_ll(const char *s, long long lo, long long hi, long long *out) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*end || errno || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static int split_pair(Run *r, const char *flag, const char *v, NameArg *out) {
  const char *eq = v ? strchr(v, '=') : NULL;
  if (!eq || eq == v || !eq[1]) return fail("%s expects NAME=VALUE, got '%s'", flag, v ? v : "");
  out->name = arena_strndup(&r->arena, v, (size_t)(eq - v));
  out->value = eq + 1;
  out->arg = v;
  return 0;
}

/* -1: help printed; 0: go on; 2: bad arguments. */
static int parse_args(Run *r, int argc, char **argv) {
  size_t cap = (size_t)argc + 1;
  r->dims_a = arena_alloc(&r->arena, sizeof(NameArg) * cap);
  r->params_a = arena_alloc(&r->arena, sizeof(NameArg) * cap);
  r->ins_a = arena_alloc(&r->arena, sizeof(NameArg) * cap);
  r->absent_a = arena_alloc(&r->arena, sizeof(char *) * cap);
  r->out_dir = ".";
  r->max_mib = RUN_DEFAULT_MAX_MIB;
  PtrVec options = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      run_usage(stdout);
      return -1;
    } else if (!strcmp(a, "--temps")) {
      r->temps = 1;
    } else if (!strcmp(a, "--write-inputs")) {
      r->write_inputs = 1;
    } else if (!strcmp(a, "--exact")) {
      r->exact = 1;
    } else if (!strcmp(a, "--no-random")) {
      r->no_random = 1;
    } else if (opt_value(argc, argv, &i, "--entry", &v)) {
      if (!v || !*v) return fail("--entry expects the name of an entry");
      r->entry_name = v;
    } else if (opt_value(argc, argv, &i, "--dim", &v)) {
      if (split_pair(r, "--dim", v, &r->dims_a[r->ndims_a++])) return 2;
    } else if (opt_value(argc, argv, &i, "--param", &v)) {
      if (split_pair(r, "--param", v, &r->params_a[r->nparams_a++])) return 2;
    } else if (opt_value(argc, argv, &i, "--in", &v)) {
      if (split_pair(r, "--in", v, &r->ins_a[r->nins_a++])) return 2;
    } else if (opt_value(argc, argv, &i, "--option", &v)) {
      if (!v) return fail("--option expects NAME=VALUE");
      char *copy = arena_strdup(&r->arena, v);
      for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        NameArg *o = arena_alloc(&r->arena, sizeof(NameArg));
        if (split_pair(r, "--option", tok, o)) return 2;
        ptrvec_push(&r->arena, &options, o);
      }
    } else if (opt_value(argc, argv, &i, "--absent", &v)) {
      if (!v || !*v) return fail("--absent expects the name of an optional tensor");
      r->absent_a[r->nabsent_a++] = v;
    } else if (opt_value(argc, argv, &i, "--cu-seqlens", &v)) {
      if (!v || !*v) return fail("--cu-seqlens expects a comma-separated list of offsets, e.g. 0,17,64");
      r->cu_text = v;
    } else if (opt_value(argc, argv, &i, "--seed", &v)) {
      char *end;
      errno = 0;
      unsigned long long s = v && *v && *v != '-' ? strtoull(v, &end, 10) : 0;
      if (!v || !*v || *v == '-' || *end || errno) return fail("--seed expects a non-negative integer, got '%s'", v ? v : "");
      r->seed = s;
    } else if (opt_value(argc, argv, &i, "--out-dir", &v)) {
      if (!v || !*v) return fail("--out-dir expects a directory");
      r->out_dir = v;
    } else if (opt_value(argc, argv, &i, "--device-sms", &v)) {
      if (parse_ll(v, 1, INT32_MAX, &r->device_sms))
        return fail("--device-sms expects a positive number of multiprocessors, got '%s'", v ? v : "");
    } else if (opt_value(argc, argv, &i, "--max-memory", &v)) {
      if (parse_ll(v, 1, RUN_MAX_MIB, &r->max_mib))
        return fail("--max-memory expects a number of MiB in [1, %d], got '%s'", RUN_MAX_MIB, v ? v : "");
    } else if (a[0] == '-' && a[1]) {
      fail("unknown option '%s' for cakec run", a);
      run_usage(stderr);
      return 2;
    } else if (r->spec) {
      return fail("cakec run takes one spec, got '%s' and '%s'", r->spec, a);
    } else {
      r->spec = a;
    }
  }
  if (!r->spec) {
    run_usage(stderr);
    return 2;
  }
  /* room for the options the prefer clauses choose */
  r->options_a = arena_alloc(&r->arena, sizeof(NameArg) * (size_t)(options.len + CAKE_MAX_OPTIONS + 1));
  for (int i = 0; i < options.len; i++) r->options_a[i] = *(NameArg *)options.items[i];
  r->noptions_a = options.len;
  return 0;
}

/* ---- the program ---- */

static void list_option_values(Buf *b, const CirOption *o) {
  for (int i = 0; i < o->nvalues; i++) buf_printf(b, "%s%s", i ? ", " : "", o->values[i]);
}

static int choose_variant(Run *r, const Program *ast, CirOptionSet *set) {
  CirOption *decl;
  int nopt = cake_program_options(&r->arena, &r->diag, ast, &decl);
  if (nopt < 0) return 1;
  for (int i = 0; i < r->noptions_a; i++) {
    const NameArg *a = &r->options_a[i];
    int o = 0;
    while (o < nopt && strcmp(decl[o].name, a->name)) o++;
    Buf b;
    buf_init(&b);
    if (o == nopt) {
      for (int j = 0; j < nopt; j++) buf_printf(&b, "%s%s", j ? ", " : "", decl[j].name);
      fail("program '%s' has no option '%s' (%s%s)", ast->name.name, a->name, nopt ? "its options: " : "it has none",
           b.data ? b.data : "");
      buf_free(&b);
      return 2;
    }
    int known = 0;
    for (int v = 0; v < decl[o].nvalues; v++) known |= !strcmp(decl[o].values[v], a->value);
    if (!known) {
      list_option_values(&b, &decl[o]);
      fail("option '%s' has no value '%s' (it takes %s)", a->name, a->value, b.data);
      buf_free(&b);
      return 2;
    }
    for (int j = 0; j < set->n; j++)
      if (!strcmp(set->names[j], a->name)) return fail("option '%s' is given twice", a->name);
    set->names[set->n] = a->name; /* n <= nopt <= CAKE_MAX_OPTIONS: each is a distinct declared option */
    set->values[set->n++] = a->value;
  }
  return 0;
}

static int load_program(Run *r) {
  Buf b;
  buf_init(&b);
  if (buf_read_file(&b, r->spec)) {
    int e = errno;
    buf_free(&b);
    return fail("cannot read '%s': %s", r->spec, strerror(e));
  }
  Source *src = arena_alloc(&r->arena, sizeof(Source));
  src->name = r->spec;
  src->text = arena_strndup(&r->arena, b.data ? b.data : "", b.len);
  src->len = b.len;
  buf_free(&b);
  Program *ast = cake_parse(&r->arena, &r->diag, src);
  if (!ast) return 1;
  CirOptionSet set = {0};
  int rc = choose_variant(r, ast, &set);
  if (rc) return rc;
  r->p = cake_sema(&r->arena, &r->diag, ast, &set);
  return r->p ? 0 : 1;
}

static int choose_entry(Run *r) {
  const CirProgram *p = r->p;
  Buf b;
  buf_init(&b);
  for (int i = 0; i < p->nentries; i++) {
    buf_printf(&b, "%s%s", i ? ", " : "", p->entries[i]->name);
    if (r->entry_name && !strcmp(p->entries[i]->name, r->entry_name)) r->entry = p->entries[i];
  }
  int rc = 0;
  if (p->nentries == 0) rc = fail("program '%s' has no entries", p->name);
  else if (!r->entry_name && p->nentries == 1) r->entry = p->entries[0];
  else if (!r->entry_name) rc = fail("program '%s' has several entries (%s): choose one with --entry", p->name, b.data);
  else if (!r->entry) rc = fail("program '%s' has no entry '%s' (its entries: %s)", p->name, r->entry_name, b.data);
  buf_free(&b);
  return rc;
}

static void mark_uses(Run *r, const CirBlock *b) {
  for (int i = 0; i < b->len; i++) {
    const CirInst *in = b->insts[i];
    if (in->op == OP_LOAD) r->ts[in->tensor->index].reads = 1;
    if (in->op == OP_STORE) r->ts[in->tensor->index].writes = 1;
    if (in->body) mark_uses(r, in->body);
  }
}

static int is_input(const TensorRun *x) { return x->t->role == ROLE_IN || (x->reads && !x->writes); }

static void list_tensors(Buf *b, const CirProgram *p) {
  for (int i = 0; i < p->ntensors; i++) buf_printf(b, "%s%s", i ? ", " : "", p->tensors[i]->name);
}

static TensorRun *tensor_arg(Run *r, const char *flag, const char *arg, const char *name) {
  int i = cir_tensor_index(r->p, name);
  if (i >= 0) return &r->ts[i];
  Buf b;
  buf_init(&b);
  list_tensors(&b, r->p);
  fail("%s %s: program '%s' has no tensor '%s' (its tensors: %s)", flag, arg, r->p->name, name, b.data);
  buf_free(&b);
  return NULL;
}

/* The --in and --absent arguments; each --in file's header is read here. */
static int bind_tensor_args(Run *r) {
  for (int i = 0; i < r->nins_a; i++) {
    const NameArg *a = &r->ins_a[i];
    TensorRun *x = tensor_arg(r, "--in", a->arg, a->name);
    if (!x) return 2;
    if (x->file) return fail("--in %s: tensor '%s' is given twice", a->arg, a->name);
    x->file = a->value;
    x->f = fopen(a->value, "rb");
    if (!x->f) return fail("--in %s: cannot read the file: %s", a->arg, strerror(errno));
    char err[256];
    if (npy_read_header(x->f, &x->h, err, sizeof err)) return fail("--in %s: %s", a->arg, err);
    if (x->t->dtype == DT_I32 && x->h.kind == 'f')
      return fail("--in %s: '%s' is an i32 tensor, so it takes an integer .npy file, not '%s'", a->arg, a->name,
                  x->h.descr);
  }
  for (int i = 0; i < r->nabsent_a; i++) {
    TensorRun *x = tensor_arg(r, "--absent", r->absent_a[i], r->absent_a[i]);
    if (!x) return 2;
    if (!x->t->optional) return fail("--absent %s: tensor '%s' is not optional", x->t->name, x->t->name);
    if (x->file) return fail("--absent %s: tensor '%s' is also given with --in", x->t->name, x->t->name);
    x->absent = 1;
  }
  for (int i = 0; i < r->p->ntensors; i++) {
    TensorRun *x = &r->ts[i];
    if (!x->file && x->t->optional && is_input(x)) x->absent = 1;
    x->random = !x->absent && !x->file && x->reads && is_input(x);
    if (x->random && r->no_random)
      return fail("input '%s' of entry '%s' is not given (--no-random): give --in %s=FILE.npy", x->t->name,
                  r->entry->name, x->t->name);
  }
  return 0;
}

/* ---- dims and documents ---- */

static int dim_index(const CirProgram *p, const char *name) {
  for (int i = 0; i < p->ndims; i++)
    if (!strcmp(p->dims[i].name, name)) return i;
  return -1;
}

static int bind_cu_seqlens(Run *r) {
  CirProgram *p = r->p;
  if (!r->cu_text) {
    r->ndocs = 1;
    if (p->docs_dim >= 0) r->dims[p->docs_dim] = 1, r->dim_from[p->docs_dim] = "one document (no --cu-seqlens)";
    return 0;
  }
  if (p->tokens_dim < 0) return fail("--cu-seqlens: program '%s' has no token sequence", p->name);
  size_t n = 1;
  for (const char *s = r->cu_text; *s; s++) n += *s == ',';
  r->cu = arena_alloc(&r->arena, sizeof(long long) * n);
  char *copy = arena_strdup(&r->arena, r->cu_text);
  size_t k = 0;
  for (char *tok = copy, *next; tok; tok = next) {
    next = strchr(tok, ',');
    if (next) *next++ = 0;
    if (parse_ll(tok, 0, INT32_MAX, &r->cu[k]))
      return fail("--cu-seqlens %s: '%s' is not an offset in [0, 2^31 - 1]", r->cu_text, tok);
    if (k == 0 && r->cu[0] != 0) return fail("--cu-seqlens %s: the offsets must start at 0", r->cu_text);
    if (k > 0 && r->cu[k] < r->cu[k - 1])
      return fail("--cu-seqlens %s: offset %zu (%lld) is less than offset %zu (%lld); the offsets must not decrease",
                  r->cu_text, k, r->cu[k], k - 1, r->cu[k - 1]);
    k++;
  }
  if (k < 2) return fail("--cu-seqlens %s: give at least two offsets (0 and the token count)", r->cu_text);
  r->ndocs = (long long)k - 1;
  int T = p->tokens_dim;
  if (!r->dim_from[T]) r->dims[T] = r->cu[k - 1], r->dim_from[T] = "--cu-seqlens";
  else if (r->dims[T] != r->cu[k - 1])
    return fail("--cu-seqlens %s ends at %lld, but %s is %lld (from %s)", r->cu_text, r->cu[k - 1], p->dims[T].name,
                r->dims[T], r->dim_from[T]);
  if (p->docs_dim >= 0) r->dims[p->docs_dim] = r->ndocs, r->dim_from[p->docs_dim] = "--cu-seqlens";
  return 0;
}

static int bind_dims(Run *r) {
  CirProgram *p = r->p;
  r->dims = arena_alloc(&r->arena, sizeof(long long) * (size_t)(p->ndims + 1));
  r->dim_from = arena_alloc(&r->arena, sizeof(char *) * (size_t)(p->ndims + 1));
  for (int i = 0; i < r->ndims_a; i++) {
    const NameArg *a = &r->dims_a[i];
    int d = dim_index(p, a->name);
    if (d < 0 || p->dims[d].role == DIM_CHUNKS) {
      Buf b;
      buf_init(&b);
      for (int j = 0; j < p->ndims; j++)
        if (p->dims[j].role != DIM_CHUNKS) buf_printf(&b, "%s%s", b.len ? ", " : "", p->dims[j].name);
      fail("--dim %s: program '%s' has no dim '%s' (%s%s)", a->arg, p->name, a->name, b.len ? "its dims: " : "it has none",
           b.len ? b.data : "");
      buf_free(&b);
      return 2;
    }
    if (p->dims[d].role == DIM_DOCS)
      return fail("--dim %s: '%s' is the number of documents; give --cu-seqlens instead", a->arg, a->name);
    if (r->dim_from[d]) return fail("--dim %s: dim '%s' is given twice", a->arg, a->name);
    if (parse_ll(a->value, 0, INT32_MAX, &r->dims[d]))
      return fail("--dim %s: the value must be an integer in [0, 2^31 - 1]", a->arg);
    r->dim_from[d] = "--dim";
  }
  if (bind_cu_seqlens(r)) return 2;
  /* dims not given: from the --in files' shapes, in the order given */
  for (int i = 0; i < r->nins_a; i++) {
    TensorRun *x = &r->ts[cir_tensor_index(p, r->ins_a[i].name)];
    if (x->h.rank != x->t->rank) continue; /* reported with the shapes */
    for (int ax = 0; ax < x->t->rank; ax++) {
      int d = x->t->shape[ax].sym;
      if (d < 0 || r->dim_from[d] || p->dims[d].role == DIM_CHUNKS) continue;
      if (x->h.shape[ax] > INT32_MAX)
        return fail("--in %s: axis %d (%s) of '%s' has extent %lld; a dim is at most 2^31 - 1", r->ins_a[i].arg, ax,
                    p->dims[d].name, x->file, (long long)x->h.shape[ax]);
      r->dims[d] = x->h.shape[ax];
      r->dim_from[d] = x->file;
    }
  }
  for (int d = 0; d < p->ndims; d++)
    if (!r->dim_from[d] && p->dims[d].role != DIM_CHUNKS)
      return fail("dim '%s' has no value: give --dim %s=N (or an --in file whose shape has it)", p->dims[d].name,
                  p->dims[d].name);
  if (p->chunks_dim >= 0) {
    long long T = r->dims[p->tokens_dim];
    r->dims[p->chunks_dim] = cake_interp_chunk_count(p, T, r->cu, r->cu ? r->ndocs : 1);
    r->dim_from[p->chunks_dim] = "the chunk count";
  }
  return 0;
}

/* ---- shapes, memory, parameters ---- */

static void shape_str(Buf *b, const CirProgram *p, const CirTensor *t, const int64_t *shape) {
  buf_printf(b, "%s[", dtype_name(t->dtype));
  for (int i = 0; i < t->rank; i++) {
    char e[64];
    cir_extent_str(e, sizeof e, p, t->shape[i]);
    buf_printf(b, "%s%s", i ? ", " : "", e);
  }
  buf_puts(b, "]");
  if (!shape) return;
  buf_puts(b, " = [");
  for (int i = 0; i < t->rank; i++) buf_printf(b, "%s%lld", i ? ", " : "", (long long)shape[i]);
  buf_puts(b, "]");
}

static int check_file_shape(Run *r, const TensorRun *x) {
  const CirProgram *p = r->p;
  int bad_axis = -1;
  if (x->h.rank == x->t->rank)
    for (int i = 0; i < x->t->rank && bad_axis < 0; i++)
      if (x->h.shape[i] != x->shape[i]) bad_axis = i;
  if (x->h.rank == x->t->rank && bad_axis < 0) return 0;
  Buf want, got;
  buf_init(&want);
  buf_init(&got);
  shape_str(&want, p, x->t, x->shape);
  for (int i = 0; i < x->h.rank; i++) buf_printf(&got, "%s%lld", i ? ", " : "", (long long)x->h.shape[i]);
  if (bad_axis < 0) {
    fail("tensor '%s' is %s (%d axes), but '%s' has shape [%s]", x->t->name, want.data, x->t->rank, x->file,
         got.data ? got.data : "");
  } else {
    char e[64];
    cir_extent_str(e, sizeof e, p, x->t->shape[bad_axis]);
    int d = x->t->shape[bad_axis].sym;
    fail("tensor '%s' is %s, but '%s' has shape [%s]: axis %d (%s) has extent %lld, expected %lld%s%s%s", x->t->name,
         want.data, x->file, got.data, bad_axis, e, (long long)x->h.shape[bad_axis], (long long)x->shape[bad_axis],
         d >= 0 ? " (from " : "", d >= 0 ? r->dim_from[d] : "", d >= 0 ? ")" : "");
  }
  buf_free(&want);
  buf_free(&got);
  return 2;
}

/* Every present tensor's shape and element count, their memory (and the
 * interpreter's chunk table) against the cap, and the --in files' shapes
 * against them. */
static int size_tensors(Run *r) {
  const CirProgram *p = r->p;
  long long nchunks = p->chunks_dim >= 0 ? r->dims[p->chunks_dim] : 0;
  int64_t total = (nchunks + r->ndocs + 1) * 32, cap = (int64_t)r->max_mib << 20;
  TensorRun *largest = NULL;
  int over = 0;
  for (int i = 0; i < p->ntensors; i++) {
    TensorRun *x = &r->ts[i];
    int overflow = 0;
    x->numel = 1;
    for (int a = 0; a < x->t->rank; a++) {
      CirExtent e = x->t->shape[a];
      x->shape[a] = e.sym >= 0 ? r->dims[e.sym] : e.value;
      overflow |= __builtin_mul_overflow(x->numel, x->shape[a], &x->numel);
    }
    if (x->absent) continue;
    int64_t bytes;
    if (overflow || __builtin_mul_overflow(x->numel, (int64_t)sizeof(double), &bytes) ||
        __builtin_add_overflow(total, bytes, &total)) {
      over = 1;
      x->numel = INT64_MAX;
    }
    if (!largest || x->numel > largest->numel) largest = x;
  }
  if (over || total > cap) {
    Buf b;
    buf_init(&b);
    if (largest) shape_str(&b, p, largest->t, largest->shape);
    if (over)
      fail("the tensors' sizes do not fit in 64 bits; the largest is '%s', %s", largest->t->name, b.data);
    else
      fail("the tensors need %lld MiB (8 bytes per element), more than --max-memory=%lld MiB%s%s%s%s",
           (long long)(total >> 20), r->max_mib, largest ? "; the largest is '" : "", largest ? largest->t->name : "",
           largest ? "', " : "", largest ? b.data : "");
    buf_free(&b);
    return 2;
  }
  for (int i = 0; i < p->ntensors; i++)
    if (r->ts[i].file && check_file_shape(r, &r->ts[i])) return 2;
  return 0;
}

static int bind_params(Run *r) {
  const CirProgram *p = r->p;
  r->params = arena_alloc(&r->arena, sizeof(double) * (size_t)(p->nparams + 1));
  for (int i = 0; i < p->nparams; i++) r->params[i] = NAN;
  for (int i = 0; i < r->nparams_a; i++) {
    const NameArg *a = &r->params_a[i];
    int k = 0;
    while (k < p->nparams && strcmp(p->params[k]->name, a->name)) k++;
    if (k == p->nparams) {
      Buf b;
      buf_init(&b);
      for (int j = 0; j < p->nparams; j++) buf_printf(&b, "%s%s", j ? ", " : "", p->params[j]->name);
      fail("--param %s: program '%s' has no parameter '%s' (%s%s)", a->arg, p->name, a->name,
           p->nparams ? "its parameters: " : "it has none", b.data ? b.data : "");
      buf_free(&b);
      return 2;
    }
    if (!isnan(r->params[k])) return fail("--param %s: parameter '%s' is given twice", a->arg, a->name);
    if (p->params[k]->dtype == DT_I32) {
      long long v;
      if (parse_ll(a->value, INT32_MIN, INT32_MAX, &v))
        return fail("--param %s: '%s' is i32: the value must be an integer that fits in i32", a->arg, a->name);
      r->params[k] = (double)v;
    } else {
      char *end;
      double v = strtod(a->value, &end);
      if (*end || end == a->value || !isfinite(v) || fabs(v) > FLT_MAX) /* as cake_plan_set_param */
        return fail("--param %s: '%s' is f32: the value must be a finite number within the f32 range", a->arg,
                    a->name);
      r->params[k] = v;
    }
  }
  for (int k = 0; k < p->nparams; k++)
    if (isnan(r->params[k]) && !p->params[k]->has_default)
      return fail("parameter '%s' has no default: give --param %s=VALUE", p->params[k]->name, p->params[k]->name);
  return 0;
}

/* ---- contents ---- */

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double unit(uint64_t *s) { return ((double)(splitmix(s) >> 11) + 0.5) / 9007199254740992.0; }

/* A value as tensor x holds it (no rounding of floats with --exact). */
static double hold(const Run *r, const TensorRun *x, double v) {
  return r->exact && x->t->dtype != DT_I32 && x->t->dtype != DT_BOOL ? v : cake_round_dtype(x->t->dtype, v);
}

/* Random values that depend on the seed and the tensor's name only. */
static void fill_random(const Run *r, TensorRun *x) {
  uint64_t s = r->seed;
  for (const char *c = x->t->name; *c; c++) s = (s ^ (unsigned char)*c) * 0x100000001b3ull;
  for (int64_t i = 0; i < x->numel; i++) {
    if (x->t->dtype == DT_I32) x->data[i] = (double)(splitmix(&s) % 16);
    else x->data[i] = hold(r, x, sqrt(-2 * log(unit(&s))) * cos(6.283185307179586 * unit(&s)));
  }
}

static int read_file(const Run *r, TensorRun *x) {
  char err[256];
  if (npy_read_data(x->f, &x->h, x->data, err, sizeof err)) return fail("--in %s=%s: %s", x->t->name, x->file, err);
  for (int64_t i = 0; i < x->numel; i++) {
    double v = x->data[i];
    if (x->t->dtype == DT_I32 && !(v >= INT32_MIN && v <= INT32_MAX))
      return fail("--in %s=%s: element %lld is %.17g, outside the range of i32", x->t->name, x->file, (long long)i, v);
    x->data[i] = hold(r, x, v);
  }
  return 0;
}

static int fill_tensors(Run *r) {
  Buf random;
  buf_init(&random);
  int rc = 0;
  for (int i = 0; i < r->p->ntensors && !rc; i++) {
    TensorRun *x = &r->ts[i];
    if (x->absent) continue;
    x->data = calloc((size_t)(x->numel ? x->numel : 1), sizeof(double));
    if (!x->data) {
      rc = fail("out of memory for tensor '%s' (%lld elements)", x->t->name, (long long)x->numel);
    } else if (x->file) {
      rc = read_file(r, x);
    } else if (x->random) {
      fill_random(r, x);
      buf_printf(&random, "%s%s", random.len ? ", " : "", x->t->name);
    }
  }
  if (!rc && random.len)
    fprintf(stderr, "cakec: note: random inputs (seed %llu): %s\n", (unsigned long long)r->seed, random.data);
  buf_free(&random);
  return rc;
}

static int execute(Run *r) {
  const CirProgram *p = r->p;
  double **tensors = arena_alloc(&r->arena, sizeof(double *) * (size_t)(p->ntensors + 1));
  for (int i = 0; i < p->ntensors; i++) tensors[i] = r->ts[i].data;
  /* --temps writes the temps as the entry left them; otherwise each is
   * poisoned outside its live ranges, as the runtime's workspace sharing
   * allows (a range too short then shows as NaN in an output) */
  InterpArgs args = {r->dims, r->cu, r->ndocs, r->params, tensors, r->exact, r->temps, NULL, NULL, 0, 0};
  char err[1024];
  if (cake_interp_run(p, r->entry->name, &args, err, sizeof err)) {
    fprintf(stderr, "cakec: error: entry '%s' of '%s' failed: %s\n", r->entry->name, p->name, err);
    return 1;
  }
  return 0;
}

static int write_outputs(Run *r) {
  for (int i = 0; i < r->p->ntensors; i++) {
    const TensorRun *x = &r->ts[i];
    Role role = x->t->role;
    int output = x->writes && (role != ROLE_TEMP || r->temps);
    if (x->absent || !(output || (r->write_inputs && x->reads && is_input(x)))) continue;
    const char *descr = x->t->dtype == DT_I32 ? "<i4" : r->exact ? "<f8" : x->t->dtype == DT_F16 ? "<f2" : "<f4";
    Buf path;
    buf_init(&path);
    buf_printf(&path, "%s/%s.npy", r->out_dir, x->t->name);
    FILE *f = fopen(path.data, "wb");
    char err[256] = "";
    int bad = !f || npy_write(f, descr, x->t->rank, x->shape, x->data, err, sizeof err);
    if (f && fclose(f) && !bad) bad = 1;
    if (bad) {
      fail("cannot write '%s': %s", path.data, err[0] ? err : strerror(errno));
      buf_free(&path);
      return 2;
    }
    Buf sh;
    buf_init(&sh);
    shape_str(&sh, r->p, x->t, x->shape);
    printf("%s: %s %s (as %s)\n", path.data, x->t->name, sh.data, descr);
    buf_free(&sh);
    buf_free(&path);
  }
  return 0;
}

/* ---- options chosen by their prefer clauses ---- */

static int run_lookup(void *ctx, const char *name, size_t len, cake_require_value *rv) {
  Run *r = ctx;
  *rv = (cake_require_value){0};
  int64_t *value = &rv->i;
  if (len == strlen(CAKE_FACT_SMS) && !memcmp(name, CAKE_FACT_SMS, len)) {
    *value = r->device_sms;
    return 1;
  }
  for (int d = 0; d < r->p->ndims; d++)
    if (strlen(r->p->dims[d].name) == len && !memcmp(r->p->dims[d].name, name, len) && r->dim_from[d]) {
      *value = r->dims[d];
      return 1;
    }
  return 0;
}

/* Each option not given with --option that has prefer clauses takes the
 * value of the first that holds for the run's dims (as cake_package_choose
 * does); *changed when that is not the value the program was compiled with. */
static int choose_preferred(Run *r, int *changed) {
  *changed = 0;
  if (!r->device_sms) {
    const char *env = getenv("CAKE_DEVICE_SMS");
    if (env && *env && parse_ll(env, 1, INT32_MAX, &r->device_sms))
      return fail("CAKE_DEVICE_SMS is '%s'; expected a positive number of multiprocessors", env);
    if (!r->device_sms) r->device_sms = RUN_DEFAULT_SMS;
  }
  int n0 = r->noptions_a;
  for (int o = 0; o < r->p->noptions; o++) {
    const CirOption *opt = &r->p->options[o];
    int given = 0;
    for (int i = 0; i < n0; i++) given |= !strcmp(r->options_a[i].name, opt->name);
    if (given || !opt->nprefers) continue;
    const char *value = opt->def;
    for (int c = 0; c < opt->nprefers; c++) {
      const CirPrefer *cl = &opt->prefers[c];
      char msg[256];
      int faulted = 0;
      int e = cake_require_eval_fault(cl->expr, run_lookup, r, 1, msg, sizeof msg, &faulted);
      if (e == CAKE_REQUIRE_BAD || faulted)
        return fail("option '%s': 'prefer %s when %s' (%s) cannot be evaluated: %s", opt->name, cl->value, cl->text,
                    cl->where, msg);
      if (e == CAKE_REQUIRE_TRUE) {
        value = cl->value;
        fprintf(stderr, "cakec: note: option '%s' is %s: 'prefer %s when %s' (%s) holds with %s = %lld\n", opt->name,
                value, cl->value, cl->text, cl->where, CAKE_FACT_SMS, r->device_sms);
        break;
      }
    }
    if (strcmp(value, opt->value)) *changed = 1;
    r->options_a[r->noptions_a++] = (NameArg){opt->name, value, "(prefer)"};
  }
  return 0;
}

/* The program of the chosen variant, its entry, tensors and dims. */
static int prepare(Run *r) {
  int rc = load_program(r);
  flush_diag(r);
  if (rc) return rc;
  if ((rc = choose_entry(r))) return rc;
  r->ts = arena_alloc(&r->arena, sizeof(TensorRun) * (size_t)(r->p->ntensors + 1));
  for (int i = 0; i < r->p->ntensors; i++) r->ts[i].t = r->p->tensors[i];
  for (int s = 0; s < r->entry->nstages; s++) mark_uses(r, &r->entry->stages[s]->body);
  if ((rc = bind_tensor_args(r)) || (rc = bind_dims(r))) return rc;
  return 0;
}

static int run_all(Run *r) {
  int rc = prepare(r), changed = 0;
  if (rc || (rc = choose_preferred(r, &changed))) return rc;
  if (changed) { /* another variant: analyse it instead */
    for (int i = 0; i < r->p->ntensors; i++)
      if (r->ts[i].f) fclose(r->ts[i].f);
    r->ts = NULL;
    r->cu = NULL;
    if ((rc = prepare(r))) return rc;
  }
  if ((rc = size_tensors(r)) || (rc = bind_params(r))) return rc;
  if (make_dirs(r->out_dir)) return fail("cannot create the output directory '%s': %s", r->out_dir, strerror(errno));
  if ((rc = fill_tensors(r)) || (rc = execute(r))) return rc;
  return write_outputs(r);
}

int cakec_run(int argc, char **argv) {
  Run *r = calloc(1, sizeof *r); /* on the heap: still valid after an internal error's longjmp */
  if (!r) return fail("out of memory");
  arena_init(&r->arena);
  diag_init(&r->diag, 20);
  int rc;
  CakeDieHandler die;
  cake_die_push(&die);
  if (setjmp(die.jump) == 0) {
    rc = parse_args(r, argc, argv);
    if (rc == -1) rc = 0;
    else if (rc == 0) rc = run_all(r);
    cake_die_pop(&die);
  } else {
    flush_diag(r);
    fprintf(stderr, "cakec: error: %s\n", die.message);
    rc = 3;
  }
  for (int i = 0; r->ts && i < r->p->ntensors; i++) {
    if (r->ts[i].f) fclose(r->ts[i].f);
    free(r->ts[i].data);
  }
  diag_free(&r->diag);
  arena_free(&r->arena);
  free(r);
  return rc;
}
