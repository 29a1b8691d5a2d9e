/* driver.c - cake_compile(): front end, code generation per kernel and
 * target, and the package (manifest.json + binaries, each pinned by sha256).
 *
 * Reproducibility: the manifest and every file name are functions of the
 * specs' text, the options and the compiler version only: programs are
 * listed by name whatever the order of the specs, files by path, and files
 * and directories get fixed modes (0644, 0755) whatever the umask. Kernel
 * names are <stage>_<digest>, the digest being the first 20 hex digits of
 * the sha256 of the kernel's CIR and arguments (not the program's name), the
 * target, the code generation options, the compiler version and the PTX
 * generated for it.
 *
 * Internal errors (cake_die: a compiler bug, or out of memory) are caught
 * here: cake_compile returns 3 with the message in its diagnostics.
 *
 * Speed: every (kernel, target) of every program is handed to codegen.c
 * first, which compiles kernels shared by several variants (or programs) once, takes
 * units from the cache when one is set, and runs the rest in parallel
 * jobs; the package is then assembled here in a fixed order, so the output
 * does not depend on the number of jobs or on the cache. */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "abi.h"
#include "backend.h"
#include "cache.h"
#include "cake.h"
#include "cir.h"
#include "codegen.h"
#include "header.h"
#include "live.h"

#define CAKE_VERSION "0.1.0"
#define CAKE_CODEGEN_OPTIONS "O3 ptx88 mma.sync.m16n8k16 threads-per-kernel"

struct cake_result {
  char *diagnostics;
  char *text;
  char *notes;
  int errors;
};

/* The result when not even a result could be allocated. */
static cake_result oom_result = {"cakec: error: out of memory\n", NULL, NULL, 1};

const char *cake_version(void) { return "cakec " CAKE_VERSION " (LLVM/MLIR 22)"; }

const char *cake_default_archs(void) { return "sm_90a,sm_100a,sm_103a,sm_107a"; }

static char target_table[2048];

static void fill_target_table(void) {
  Buf b;
  buf_init(&b);
  backend_describe_targets(&b);
  snprintf(target_table, sizeof target_table, "%s", b.data ? b.data : "");
  buf_free(&b);
}

const char *cake_target_table(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, fill_target_table);
  return target_table;
}
const char *cake_result_diagnostics(const cake_result *r) { return r->diagnostics ? r->diagnostics : ""; }
const char *cake_result_text(const cake_result *r) { return r->text ? r->text : ""; }
const char *cake_result_notes(const cake_result *r) { return r->notes ? r->notes : ""; }
int cake_result_error_count(const cake_result *r) { return r->errors; }
void cake_result_free(cake_result *r) {
  if (!r || r == &oom_result) return;
  free(r->diagnostics);
  free(r->text);
  free(r->notes);
  free(r);
}

/* 20 characters, the length of a digest in a kernel name */
#define DIGEST_PLACEHOLDER "DIGESTDIGESTDIGESTDI"

/* Replace every occurrence of `from` in s by the first strlen(from)
 * characters of `to` (in place: same length). */
static void replace_all(char *s, const char *from, const char *to) {
  if (!s) return;
  size_t n = strlen(from);
  for (char *p = strstr(s, from); p; p = strstr(p + n, from)) memcpy(p, to, n);
}

/* The same in bytes (a cubin). */
static void replace_bytes(unsigned char *s, size_t len, const char *from, const char *to) {
  size_t n = strlen(from);
  unsigned char *end = s + len;
  for (unsigned char *p = s; p && (size_t)(end - p) >= n; p += n) {
    p = memmem(p, (size_t)(end - p), from, n);
    if (!p) break;
    memcpy(p, to, n);
  }
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

typedef struct Compilation {
  Arena arena;
  Diag diag;
  const cake_options *opt;
  EmitKind emit;
  const char *archs[CAKE_MAX_TARGETS];
  int narchs;
  Buf text, notes;
  Backend *be;
  cJSON *files;    /* [{path, sha256}] */
  cJSON *programs; /* the manifest's programs */
  PtrVec progs;    /* CirProgram*: every variant of every spec */
  CirOptionSet want; /* --option values */
  const char *want_prog[CAKE_MAX_OPTIONS]; /* --option PROGRAM.NAME=V: that program only (else NULL) */
  int want_used[CAKE_MAX_OPTIONS];
  CakeDieHandler die;
  Codegen cg;
  FatbinJob *fatbins; /* made after every program's kernels, in parallel; one per distinct kernel set */
  int nfatbins, cap_fatbins;
  /* every stage (its manifest object, NULL without a manifest) and its job:
   * variants that share a stage's kernels share its job and its file */
  struct FatbinUse {
    cJSON *stage;
    int job;
  } *fatbin_uses;
  int nuses, cap_uses;
} Compilation;

static int parse_emit(const char *s, EmitKind *out) {
  static const struct { const char *name; EmitKind k; } kinds[] = {
      {"header", EMIT_HEADER}, {"ast", EMIT_AST}, {"cir", EMIT_CIR}, {"live", EMIT_LIVE}, {"mlir", EMIT_MLIR}, {"llvm", EMIT_LLVM}, {"ptx", EMIT_PTX},
      {"cubin", EMIT_CUBIN}, {"fatbin", EMIT_FATBIN}, {"package", EMIT_PACKAGE},
  };
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (!strcmp(kinds[i].name, s)) {
      *out = kinds[i].k;
      return 0;
    }
  return -1;
}

static int parse_archs(Compilation *c, const char *list) {
  char *copy = arena_strdup(&c->arena, list);
  for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
    if (!backend_ptx_target(tok)) {
      diag_plain(&c->diag, "unknown target '%s' in --arch (known: %s)", tok, cake_default_archs());
      return -1;
    }
    for (int i = 0; i < c->narchs; i++)
      if (!strcmp(c->archs[i], tok)) {
        diag_plain(&c->diag, "target '%s' is listed twice in --arch", tok);
        return -1;
      }
    if (c->narchs == CAKE_MAX_TARGETS) {
      diag_plain(&c->diag, "too many targets in --arch (at most %d)", CAKE_MAX_TARGETS);
      return -1;
    }
    c->archs[c->narchs++] = tok;
  }
  if (!c->narchs) {
    diag_plain(&c->diag, "--arch names no target");
    return -1;
  }
  return 0;
}

/* "name=value,program.name=value" */
static int parse_option_list(Compilation *c, const char *list, CirOptionSet *out) {
  char *copy = arena_strdup(&c->arena, list);
  for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
    char *eq = strchr(tok, '=');
    if (!eq || eq == tok || !eq[1]) {
      diag_plain(&c->diag, "--option expects name=value, got '%s'", tok);
      return -1;
    }
    if (out->n == CAKE_MAX_OPTIONS) {
      diag_plain(&c->diag, "too many --option values");
      return -1;
    }
    *eq = 0;
    char *dot = strchr(tok, '.');
    c->want_prog[out->n] = NULL;
    if (dot) {
      if (dot == tok || !dot[1]) {
        diag_plain(&c->diag, "--option expects name=value or program.name=value, got '%s=%s'", tok, eq + 1);
        return -1;
      }
      *dot = 0;
      c->want_prog[out->n] = tok;
      tok = dot + 1;
    }
    out->names[out->n] = tok;
    out->values[out->n++] = eq + 1;
  }
  return 0;
}

static char *read_source(Compilation *c, const char *path, size_t *len) {
  Buf b;
  buf_init(&b);
  if (buf_read_file(&b, path)) {
    diag_plain(&c->diag, "cannot read '%s': %s", path, strerror(errno));
    buf_free(&b);
    return NULL;
  }
  *len = b.len;
  char *s = arena_strndup(&c->arena, b.data ? b.data : "", b.len);
  buf_free(&b);
  return s;
}

/* An integer written with all its digits (a cJSON number is a double, which
 * would round above 2^53). */
static cJSON *json_integer(long long v) {
  char s[24];
  snprintf(s, sizeof s, "%lld", v);
  cJSON *j = cJSON_CreateRaw(s);
  if (!j) cake_die("out of memory building the manifest");
  return j;
}

/* Package modes, whatever the umask. */
enum { DIR_MODE = 0755, FILE_MODE = 0644 };

/* mkdir that gives a directory it creates DIR_MODE; 0 when it exists. */
static int make_dir(const char *path) {
  if (mkdir(path, DIR_MODE) == 0) return chmod(path, DIR_MODE);
  return errno == EEXIST ? 0 : -1;
}

static int ensure_dir(Compilation *c, const char *dir) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s", dir);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      make_dir(tmp);
      *p = '/';
    }
  if (make_dir(tmp) != 0) {
    diag_plain(&c->diag, "cannot create directory '%s': %s", dir, strerror(errno));
    return -1;
  }
  return 0;
}

/* Writes n bytes to path with FILE_MODE. 0, or -1 after a diagnostic. */
static int write_file(Compilation *c, const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  int ok = f && fchmod(fileno(f), FILE_MODE) == 0 && fwrite(data, 1, n, f) == n;
  int err = errno;
  if (f && fclose(f) != 0 && ok) ok = 0, err = errno;
  if (!ok) {
    diag_plain(&c->diag, "cannot write '%s': %s", path, strerror(err));
    return -1;
  }
  return 0;
}

/* A file is written once: its name holds the digest of its content's source
 * (variants that share a kernel share its files). */
static int written(const Compilation *c, const char *name) {
  const cJSON *e;
  cJSON_ArrayForEach(e, c->files) if (!strcmp(cJSON_GetObjectItem(e, "path")->valuestring, name)) return 1;
  return 0;
}

static int write_out(Compilation *c, const char *name, const void *data, size_t n) {
  if (written(c, name)) return 0;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", c->opt->output, name);
  if (write_file(c, path, data, n)) return -1;
  char hex[65];
  sha256_hex(data, n, hex);
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "path", name);
  cJSON_AddStringToObject(e, "sha256", hex);
  cJSON_AddItemToObject(e, "bytes", json_integer((long long)n));
  cJSON_AddItemToArray(c->files, e);
  return 0;
}

/* ---- manifest pieces ---- */

static cJSON *extent_json(const CirProgram *p, CirExtent e) {
  if (e.sym >= 0) return cJSON_CreateString(p->dims[e.sym].name);
  return json_integer(e.value);
}

static cJSON *shape_json(const CirProgram *p, const CirTensor *t) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < t->rank; i++) cJSON_AddItemToArray(a, extent_json(p, t->shape[i]));
  return a;
}

static cJSON *arg_json(const CirProgram *p, const KernelArg *a) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "kind", a->kind);
  cJSON_AddStringToObject(o, "name", a->name);
  cJSON_AddStringToObject(o, "dtype", dtype_name(a->dtype));
  if (a->what == ARG_TENSOR) {
    cJSON_AddItemToObject(o, "shape", shape_json(p, a->tensor));
  } else if (a->what == ARG_CHUNK_TABLE) {
    cJSON *s = cJSON_CreateArray();
    cJSON_AddItemToArray(s, cJSON_CreateString("nchunks"));
    cJSON_AddItemToArray(s, cJSON_CreateNumber(4));
    cJSON_AddItemToObject(o, "shape", s);
  } else if (a->what == ARG_DOC_TABLE) {
    cJSON *s = cJSON_CreateArray();
    cJSON_AddItemToArray(s, cJSON_CreateString("docs+1"));
    cJSON_AddItemToObject(o, "shape", s);
  } else if (a->what == ARG_FRAG_TABLE) {
    cJSON *s = cJSON_CreateArray();
    cJSON_AddItemToArray(s, cJSON_CreateString("6*docs+2+2*entries"));
    cJSON_AddItemToObject(o, "shape", s);
  }
  return o;
}

static cJSON *grid_json(const CirProgram *p, const CirKernel *k, const KernelAbi *abi) {
  cJSON *g = cJSON_CreateArray();
  static const char *const dims[] = {"x", "y", "z"};
  for (int d = 0; d < 3; d++) {
    int ax = abi->grid_axis_of_dim[d];
    if (ax < 0) break;
    const CirAxis *a = &k->axes[ax];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "dim", dims[d]);
    cJSON_AddStringToObject(o, "axis", a->var);
    if (a->kind == GA_CHUNKS) cJSON_AddStringToObject(o, "kind", "chunks");
    else if (a->kind == GA_DOCS) cJSON_AddStringToObject(o, "kind", "docs");
    else if (a->extent.sym >= 0) {
      cJSON_AddStringToObject(o, "kind", "dim");
      cJSON_AddStringToObject(o, "name", p->dims[a->extent.sym].name);
    } else {
      cJSON_AddStringToObject(o, "kind", "const");
      cJSON_AddItemToObject(o, "value", json_integer(a->extent.value));
    }
    cJSON_AddItemToArray(g, o);
  }
  return g;
}

/* The text a kernel's digest covers: what determines the generated code (the
 * key of a codegen unit). That is the kernel's arguments in order (`abi`:
 * the tensors it touches with their shapes in dim names, its tables, the
 * dims and params it reads) and its body, so variants whose programs differ
 * elsewhere (other dims, tensors or kernels) share the unit, its name and
 * its files. The program's name is not in it: programs that hold the same
 * kernel (a training program's forward stages and the forward program's)
 * share it as variants do. The target enters as what the lowering sees of
 * it, so targets that get the same PTX share the kernel's name too (each
 * has its own cubin file). With `view` the target enters as its view
 * (backend_view_key) instead: the text that decides which units share a
 * lowering. */
static void request_text(Buf *o, const CirProgram *p, const CirKernel *k, const KernelAbi *abi, const char *target,
                         int view) {
  buf_printf(o, "%s\ntarget ", cake_version());
  if (view) backend_view_key(target, o);
  else backend_lowering_key(target, o);
  buf_printf(o, "\noptions %s\nchunk %d\n", CAKE_CODEGEN_OPTIONS, p->chunk);
  for (int i = 0; i < abi->nargs; i++) {
    const KernelArg *a = &abi->args[i];
    buf_printf(o, "arg %d %s %s %s", (int)a->what, a->kind, a->name, dtype_name(a->dtype));
    if (a->what == ARG_DIM) buf_printf(o, " role %d", p->dims[a->dim].role);
    if (a->what == ARG_TENSOR) {
      const CirTensor *t = a->tensor;
      buf_printf(o, " %s %d", role_name(t->role), t->optional);
      for (int j = 0; j < t->rank; j++)
        if (t->shape[j].sym >= 0) buf_printf(o, " %s", p->dims[t->shape[j].sym].name);
        else buf_printf(o, " %lld", t->shape[j].value);
    }
    buf_puts(o, "\n");
  }
  for (int i = 0; i < 3; i++) buf_printf(o, "grid %d\n", abi->grid_axis_of_dim[i]);
  /* what the lowering reads of the program beyond the kernel: where a halo
   * tensor's rows come from (its exchange's widths; the shape has only their sum) */
  for (int i = 0; i < abi->nargs; i++) {
    const CirKernel *x = abi->args[i].what == ARG_TENSOR ? cir_halo_exchange(p, abi->args[i].tensor) : NULL;
    if (x) buf_printf(o, "halo %s before %d after %d\n", x->xdst->name, x->xbefore, x->xafter);
  }
  cir_dump_kernel(o, p, k);
}

static void digest_text(Buf *o, const CirProgram *p, const CirKernel *k, const KernelAbi *abi, const char *target) {
  request_text(o, p, k, abi, target, 0);
}

static cJSON *program_json(const CirProgram *p, const char *src_name) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", p->name);
  cJSON_AddStringToObject(o, "variant", p->variant);
  cJSON *opts = cJSON_AddArrayToObject(o, "options");
  for (int i = 0; i < p->noptions; i++) {
    const CirOption *op = &p->options[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", op->name);
    cJSON_AddStringToObject(j, "value", op->value);
    cJSON_AddStringToObject(j, "default", op->def);
    cJSON *vals = cJSON_AddArrayToObject(j, "values");
    for (int v = 0; v < op->nvalues; v++) cJSON_AddItemToArray(vals, cJSON_CreateString(op->values[v]));
    /* how the runtime chooses the option when the caller leaves it unset */
    if (op->nprefers) {
      cJSON *pr = cJSON_AddArrayToObject(j, "prefer");
      for (int r = 0; r < op->nprefers; r++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "value", op->prefers[r].value);
        cJSON_AddStringToObject(c, "text", op->prefers[r].text);
        cJSON_AddStringToObject(c, "expr", op->prefers[r].expr);
        cJSON_AddStringToObject(c, "loc", op->prefers[r].where);
        cJSON_AddItemToArray(pr, c);
      }
    }
    cJSON_AddItemToArray(opts, j);
  }
  cJSON_AddStringToObject(o, "source", base_name(src_name));
  char hex[65];
  sha256_hex(p->src->text, p->src->len, hex);
  cJSON_AddStringToObject(o, "source_sha256", hex);
  cJSON *dims = cJSON_AddArrayToObject(o, "dims");
  for (int i = 0; i < p->ndims; i++) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "name", p->dims[i].name);
    static const char *const roles[] = {"size", "tokens", "docs", "chunks", "ranks", "fragments"};
    cJSON_AddStringToObject(d, "role", roles[p->dims[i].role]);
    cJSON_AddItemToArray(dims, d);
  }
  cJSON_AddNumberToObject(o, "chunk", p->chunk);
  /* relations between dims the runtime checks when it finalizes a plan:
   * the text as written and where, and the form it evaluates */
  cJSON *rq = cJSON_AddArrayToObject(o, "requires");
  for (int i = 0; i < p->nrequires; i++) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "text", p->requires[i].text);
    cJSON_AddStringToObject(j, "expr", p->requires[i].expr);
    cJSON_AddStringToObject(j, "loc", p->requires[i].where);
    cJSON_AddItemToArray(rq, j);
  }
  cJSON *ts = cJSON_AddArrayToObject(o, "tensors");
  CirLiveness lv;
  cir_liveness(p, &lv);
  for (int i = 0; i < p->ntensors; i++) {
    const CirTensor *t = p->tensors[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", t->name);
    cJSON_AddStringToObject(j, "role", role_name(t->role));
    cJSON_AddStringToObject(j, "dtype", dtype_name(t->dtype));
    cJSON_AddItemToObject(j, "shape", shape_json(p, t));
    cJSON_AddBoolToObject(j, "optional", t->optional);
    if (t->role == ROLE_TEMP) {
      /* where the workspace must hold it: per entry that touches it, the
       * positions of the first and last stage that do; pinned when an entry
       * reads it before writing it (it then shares bytes with nothing) */
      cJSON *live = cJSON_AddArrayToObject(j, "live");
      for (int e = 0; e < p->nentries; e++) {
        CirLive l = cir_live_of(&lv, i, e);
        if (l.first < 0) continue;
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "entry", p->entries[e]->name);
        cJSON_AddNumberToObject(r, "first", l.first);
        cJSON_AddNumberToObject(r, "last", l.last);
        cJSON_AddItemToArray(live, r);
      }
      cJSON_AddBoolToObject(j, "pinned", lv.pinned[i]);
    }
    cJSON_AddItemToArray(ts, j);
  }
  cir_liveness_free(&lv);
  cJSON *ps = cJSON_AddArrayToObject(o, "params");
  for (int i = 0; i < p->nparams; i++) {
    const CirParam *pa = p->params[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", pa->name);
    cJSON_AddStringToObject(j, "dtype", dtype_name(pa->dtype));
    if (pa->has_default) cJSON_AddNumberToObject(j, "default", pa->def);
    cJSON_AddItemToArray(ps, j);
  }
  cJSON *es = cJSON_AddArrayToObject(o, "entries");
  for (int i = 0; i < p->nentries; i++) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", p->entries[i]->name);
    cJSON *st = cJSON_AddArrayToObject(j, "stages");
    const CirEntry *en = p->entries[i];
    for (int s = 0; s < en->nstages; s++) cJSON_AddItemToArray(st, cJSON_CreateString(en->stages[s]->name));
    /* schema 5: its rounds groups, stages [first, first + count), run once per round */
    cJSON *rs = NULL;
    for (int s = 0; s < en->nstages; s++) {
      if (!en->group[s] || (s > 0 && en->group[s - 1] == en->group[s])) continue;
      int n = 1;
      while (s + n < en->nstages && en->group[s + n] == en->group[s]) n++;
      if (!rs) rs = cJSON_AddArrayToObject(j, "rounds");
      cJSON *r = cJSON_CreateObject();
      cJSON_AddNumberToObject(r, "first", s);
      cJSON_AddNumberToObject(r, "count", n);
      cJSON_AddBoolToObject(r, "reverse", en->reverse[s] != 0);
      cJSON_AddItemToArray(rs, r);
    }
    cJSON_AddItemToArray(es, j);
  }
  /* exchange stages (schema 3, context-parallel programs): every rank's src into every rank's dst */
  if (p->ranks_dim < 0) return o;
  cJSON *xs = cJSON_AddArrayToObject(o, "exchanges");
  for (int i = 0; i < p->nexchanges; i++) {
    const CirKernel *x = p->exchanges[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", x->name);
    cJSON_AddStringToObject(j, "op", xchg_op_name(x->exchange));
    cJSON_AddStringToObject(j, "src", x->xsrc->name);
    cJSON_AddStringToObject(j, "dst", x->xdst->name);
    if (x->exchange == XCHG_HALO) { /* schema 4 */
      cJSON_AddNumberToObject(j, "before", x->xbefore);
      cJSON_AddNumberToObject(j, "after", x->xafter);
    }
    /* what one rank sends, as a function of the dims: the constant factor
     * (the element size included), then the dims; it receives R - 1 times
     * that. A halo sends the edge tokens of each fragment: F (before + after)
     * tokens, the source's other extents each. send_next and send_prev:
     * every rank but the last (first) sends that once, every rank but the
     * first (last) receives it once. */
    int from = x->exchange == XCHG_HALO ? 1 : 0;
    long long k = dtype_bytes(x->xsrc->dtype) * (from ? x->xbefore + x->xafter : 1);
    Buf f;
    buf_init(&f);
    for (int a = from; a < x->xsrc->rank; a++)
      if (x->xsrc->shape[a].sym < 0) k *= x->xsrc->shape[a].value;
    buf_printf(&f, "%lld", k);
    if (from) buf_printf(&f, "*%s", p->dims[p->frags_dim].name);
    for (int a = from; a < x->xsrc->rank; a++)
      if (x->xsrc->shape[a].sym >= 0) buf_printf(&f, "*%s", p->dims[x->xsrc->shape[a].sym].name);
    cJSON_AddStringToObject(j, "bytes", f.data);
    buf_free(&f);
    cJSON_AddItemToArray(xs, j);
  }
  return o;
}

/* The code generation requests of one program: each kernel's argument plan
 * and, per kernel and target, its codegen unit (-1: the plan failed). */
typedef struct ProgramPlan {
  KernelAbi *abis;
  int *unit; /* [kernel * narchs + target] */
} ProgramPlan;

static void plan_program(Compilation *c, const CirProgram *p, ProgramPlan *pl) {
  pl->abis = arena_alloc(&c->arena, sizeof(KernelAbi) * (size_t)(p->nkernels + 1));
  pl->unit = arena_alloc(&c->arena, sizeof(int) * (size_t)(p->nkernels * c->narchs + 1));
  for (int ki = 0; ki < p->nkernels; ki++) {
    const CirKernel *k = p->kernels[ki];
    int ok = cir_kernel_abi(p, k, &pl->abis[ki]) == 0;
    for (int ti = 0; ti < c->narchs; ti++) {
      int *u = &pl->unit[ki * c->narchs + ti];
      *u = -1;
      if (!ok) continue;
      /* generated with a placeholder name; the digest then covers the
       * generated PTX too, so a change in code generation renames the
       * kernel even when the spec is unchanged. The name is the stage's and
       * the digest: a kernel that several programs hold has one name. */
      char symbol[512];
      snprintf(symbol, sizeof symbol, "%s_%s", k->name, DIGEST_PLACEHOLDER);
      Buf t, v;
      buf_init(&t);
      buf_init(&v);
      digest_text(&t, p, k, &pl->abis[ki], c->archs[ti]);
      request_text(&v, p, k, &pl->abis[ki], c->archs[ti], 1);
      *u = codegen_add(&c->cg, t.data, v.data, p, k, &pl->abis[ki], c->archs[ti], arena_strdup(&c->arena, symbol));
      buf_free(&t);
      buf_free(&v);
    }
  }
}

/* Diagnostics that a unit or a fatbin job collected elsewhere. */
static void merge_diag(Diag *d, const char *text, int errors) {
  if (d->errors < d->max_errors && text) buf_puts(&d->out, text);
  d->errors += errors;
}

static void add_fatbin_job(Compilation *c, KernelBinary *bins, int nb, cJSON *sj) {
  int job = -1;
  for (int i = 0; i < c->nfatbins && job < 0; i++) /* the same kernels (named by digest): that job */
    if (c->fatbins[i].n == nb && !strcmp(c->fatbins[i].bins[0].symbol, bins[0].symbol)) job = i;
  if (job >= 0) {
    for (int b = 0; b < nb; b++) kernel_binary_free(&bins[b]);
  } else {
    if (c->nfatbins == c->cap_fatbins) {
      c->cap_fatbins = c->cap_fatbins ? 2 * c->cap_fatbins : 32;
      c->fatbins = realloc(c->fatbins, sizeof *c->fatbins * (size_t)c->cap_fatbins);
      if (!c->fatbins) cake_die("out of memory");
    }
    KernelBinary *own = malloc(sizeof *own * (size_t)nb);
    if (!own) cake_die("out of memory");
    memcpy(own, bins, sizeof *own * (size_t)nb);
    job = c->nfatbins++;
    c->fatbins[job] = (FatbinJob){.bins = own, .n = nb};
  }
  if (c->nuses == c->cap_uses) {
    c->cap_uses = c->cap_uses ? 2 * c->cap_uses : 32;
    c->fatbin_uses = realloc(c->fatbin_uses, sizeof *c->fatbin_uses * (size_t)c->cap_uses);
    if (!c->fatbin_uses) cake_die("out of memory");
  }
  c->fatbin_uses[c->nuses++] = (struct FatbinUse){sj, job};
}

/* Make every stage's fatbin (in parallel) and write them in order. */
static int write_fatbins(Compilation *c) {
  codegen_fatbins(&c->cg, c->fatbins, c->nfatbins);
  int rc = 0;
  for (int i = 0; i < c->nfatbins && rc != 2; i++) {
    FatbinJob *j = &c->fatbins[i];
    if (j->errors) {
      merge_diag(&c->diag, j->diag, j->errors);
      rc = 1;
      continue;
    }
    char fname[600];
    snprintf(fname, sizeof fname, "%s.fatbin", j->bins[0].symbol);
    if (write_out(c, fname, j->data, j->len)) rc = 2;
    for (int u = 0; u < c->nuses; u++)
      if (c->fatbin_uses[u].job == i && c->fatbin_uses[u].stage)
        cJSON_AddStringToObject(c->fatbin_uses[u].stage, "fatbin", fname);
  }
  return rc;
}

static void free_fatbin_jobs(Compilation *c) {
  for (int i = 0; i < c->nfatbins; i++) {
    FatbinJob *j = &c->fatbins[i];
    for (int b = 0; b < j->n; b++) kernel_binary_free((KernelBinary *)&j->bins[b]);
    free((void *)j->bins);
    free(j->data);
    free(j->diag);
  }
  free(c->fatbins);
  free(c->fatbin_uses);
}

/* Name one copy of a unit's result for this program: the digest covers what
 * determines the code (the unit's key) and the generated PTX, so variants
 * that share a kernel share its name and its files.
 * `generated`: the PTX as generated (before any change for ptxas). */
static void name_kernel(KernelBinary *kb, const char *generated, const CirProgram *p, const CirKernel *k,
                        const KernelAbi *abi, const char *target) {
  Buf dt;
  buf_init(&dt);
  digest_text(&dt, p, k, abi, target);
  buf_puts(&dt, generated);
  char hex[65];
  sha256_hex(dt.data, dt.len, hex);
  buf_free(&dt);
  char *texts[4] = {kb->symbol, kb->mlir, kb->llvm, kb->ptx};
  for (int i = 0; i < 4; i++) replace_all(texts[i], DIGEST_PLACEHOLDER, hex);
  if (kb->cubin) replace_bytes(kb->cubin, kb->cubin_len, DIGEST_PLACEHOLDER, hex);
}

/* Every kernel of one program for every target, from its codegen units. */
static int compile_program(Compilation *c, const CirProgram *p, const ProgramPlan *pl, const char *src_name,
                           cJSON *programs) {
  int rc = 0;
  cJSON *pj = c->emit == EMIT_PACKAGE ? program_json(p, src_name) : NULL;
  cJSON *stages = pj ? cJSON_AddArrayToObject(pj, "stages") : NULL;
  /* A kernel that fails to compile does not stop the others: every kernel's
   * errors are reported in one run. */
  int failed = 0;
  for (int ki = 0; ki < p->nkernels && rc != 2; ki++) {
    rc = 0;
    const CirKernel *k = p->kernels[ki];
    const KernelAbi *abi = &pl->abis[ki];
    if (pl->unit[ki * c->narchs] < 0) {
      diag_error(&c->diag, k->loc,
                 "kernel '%s' takes %d arguments (the tensors it touches, its tables, the dims and params it reads); "
                 "at most %d are supported: split it",
                 k->name, abi->nargs, CAKE_MAX_KERNEL_ARGS);
      rc = 1;
      failed = 1;
      continue;
    }
    KernelBinary bins[CAKE_MAX_TARGETS];
    int nb = 0;
    cJSON *sj = NULL, *kjs = NULL;
    if (pj) {
      sj = cJSON_CreateObject();
      cJSON_AddStringToObject(sj, "name", k->name);
      cJSON *blk = cJSON_AddArrayToObject(sj, "block");
      cJSON_AddItemToArray(blk, cJSON_CreateNumber(k->threads));
      cJSON_AddItemToArray(blk, cJSON_CreateNumber(1));
      cJSON_AddItemToArray(blk, cJSON_CreateNumber(1));
      cJSON_AddItemToObject(sj, "grid", grid_json(p, k, abi));
      cJSON *args = cJSON_AddArrayToObject(sj, "args");
      for (int i = 0; i < abi->nargs; i++) cJSON_AddItemToArray(args, arg_json(p, &abi->args[i]));
      kjs = cJSON_AddArrayToObject(sj, "kernels");
      cJSON_AddItemToArray(stages, sj);
    }
    for (int ti = 0; ti < c->narchs && rc == 0; ti++) {
      const char *target = c->archs[ti];
      int u = pl->unit[ki * c->narchs + ti];
      if (c->cg.units[u].errors) {
        /* a failed kernel has no digest: its messages name it without one */
        char *text = strdup(c->cg.units[u].diag ? c->cg.units[u].diag : "");
        size_t n = strlen("_" DIGEST_PLACEHOLDER);
        for (char *q = strstr(text, "_" DIGEST_PLACEHOLDER); q; q = strstr(q, "_" DIGEST_PLACEHOLDER))
          memmove(q, q + n, strlen(q + n) + 1);
        /* A unit that several programs share was lowered for the first of
         * them in this order, and its messages point into that program's
         * spec: the one that fails (and stops the build) first. */
        merge_diag(&c->diag, text, c->cg.units[u].errors);
        free(text);
        rc = 1;
        break;
      }
      KernelBinary *kb = &bins[nb++];
      codegen_copy(&c->cg, u, kb);
      const CodegenUnit *cu = &c->cg.units[u];
      name_kernel(kb, cu->ptx_generated ? cu->ptx_generated : cu->kb.ptx, p, k, abi, target);
      const char *symbol = kb->symbol;
      if (kb->note) buf_printf(&c->notes, "cakec: note: %s: %s\n", symbol, kb->note);
      if (c->emit == EMIT_MLIR || c->emit == EMIT_LLVM || c->emit == EMIT_PTX) {
        buf_printf(&c->text, "// ---- kernel %s (%s, stage %s of %s%s%s)\n", symbol, target, k->name, p->name,
                   p->noptions ? " " : "", p->variant);
        buf_puts(&c->text, c->emit == EMIT_MLIR ? kb->mlir : c->emit == EMIT_LLVM ? kb->llvm : kb->ptx);
        continue;
      }
      char fname[600];
      if (kb->cubin) {
        snprintf(fname, sizeof fname, "%s.%s.cubin", symbol, target);
        if (c->emit != EMIT_FATBIN && write_out(c, fname, kb->cubin, kb->cubin_len)) rc = 2;
      } else {
        snprintf(fname, sizeof fname, "%s.%s.ptx", symbol, kb->ptx_target);
        if (c->emit != EMIT_FATBIN && write_out(c, fname, kb->ptx, strlen(kb->ptx))) rc = 2;
      }
      if (kjs) {
        cJSON *kj = cJSON_CreateObject();
        cJSON_AddStringToObject(kj, "target", target);
        cJSON_AddStringToObject(kj, "name", symbol);
        cJSON_AddStringToObject(kj, "symbol", symbol);
        cJSON_AddStringToObject(kj, "format", kb->cubin ? "cubin" : "ptx");
        if (!kb->cubin) cJSON_AddStringToObject(kj, "ptx_target", kb->ptx_target);
        cJSON_AddStringToObject(kj, "path", backend_target_path(target));
        cJSON_AddStringToObject(kj, "file", fname);
        cJSON_AddNumberToObject(kj, "shared_bytes", kb->shared_bytes);
        if (kb->cubin) {
          cJSON_AddNumberToObject(kj, "registers", kb->registers);
          cJSON_AddNumberToObject(kj, "spill_bytes", kb->spill_bytes);
          cJSON_AddNumberToObject(kj, "stack_bytes", kb->stack_bytes);
        }
        if (kb->note) cJSON_AddStringToObject(kj, "note", kb->note);
        cJSON_AddItemToArray(kjs, kj);
      }
    }
    if (rc == 0 && (c->emit == EMIT_FATBIN || c->emit == EMIT_PACKAGE)) {
      add_fatbin_job(c, bins, nb, sj); /* takes the binaries */
      nb = 0;
    }
    for (int i = 0; i < nb; i++) kernel_binary_free(&bins[i]);
    if (rc == 1) failed = 1;
  }
  if (rc == 0 && failed) rc = 1;
  if (pj) {
    cJSON_AddItemToArray(programs, pj);
  }
  return rc;
}

static int cmp_path(const void *a, const void *b) {
  const cJSON *x = *(cJSON *const *)a, *y = *(cJSON *const *)b;
  return strcmp(cJSON_GetObjectItem(x, "path")->valuestring, cJSON_GetObjectItem(y, "path")->valuestring);
}

/* Writes manifest.json; c->programs becomes part of it (and is freed with it). */
static int write_manifest(Compilation *c) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "schema", "cake.package");
  /* 5 when a program is context-parallel (ranks and fragments dims,
   * exchanges and halos, rounds, the fragment table with its ends()
   * entries); 2 otherwise, so that packages stay as they were where they
   * need nothing newer. (Schema 3 was the first context-parallel one, 4
   * added halos; their fragment table had no ends() header.) */
  int schema = 2;
  for (int i = 0; i < c->progs.len; i++) {
    const CirProgram *p = c->progs.items[i];
    if (p->ranks_dim >= 0) schema = 5;
  }
  cJSON_AddNumberToObject(m, "schema_version", schema);
  cJSON_AddStringToObject(m, "compiler", cake_version());
  cJSON *ts = cJSON_AddArrayToObject(m, "targets");
  for (int i = 0; i < c->narchs; i++) cJSON_AddItemToArray(ts, cJSON_CreateString(c->archs[i]));
  cJSON_AddItemToObject(m, "programs", c->programs);
  c->programs = NULL;
  /* files sorted by path */
  int n = cJSON_GetArraySize(c->files);
  cJSON **items = cake_xcalloc((size_t)n + 1, sizeof(cJSON *));
  for (int i = 0; i < n; i++) items[i] = cJSON_DetachItemFromArray(c->files, 0);
  qsort(items, (size_t)n, sizeof *items, cmp_path);
  cJSON *files = cJSON_AddArrayToObject(m, "files");
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(files, items[i]);
  free(items);
  char *s = cJSON_Print(m);
  cJSON_Delete(m);
  if (!s) cake_die("out of memory printing the manifest");
  Buf text;
  buf_init(&text);
  buf_puts(&text, s);
  buf_puts(&text, "\n");
  cJSON_free(s);
  char path[4096];
  snprintf(path, sizeof path, "%s/manifest.json", c->opt->output);
  int rc = write_file(c, path, text.data, text.len) ? 2 : 0;
  buf_free(&text);
  return rc;
}

/* Every combination of the program's option values (those fixed with
 * --option excepted), each analysed into a CirProgram added to c->progs. */
static void expand_variants(Compilation *c, const Program *ast) {
  CirOption *decl;
  int nopt = cake_program_options(&c->arena, &c->diag, ast, &decl);
  if (nopt < 0) return;
  int idx[CAKE_MAX_OPTIONS] = {0}, fixed[CAKE_MAX_OPTIONS];
  uint64_t count = 1;
  int count_overflows = 0;
  for (int o = 0; o < nopt; o++) {
    fixed[o] = -1;
    for (int w = 0; w < c->want.n; w++)
      if (!strcmp(c->want.names[w], decl[o].name) && (!c->want_prog[w] || !strcmp(c->want_prog[w], ast->name.name))) {
        c->want_used[w] = 1;
        for (int v = 0; v < decl[o].nvalues; v++)
          if (!strcmp(decl[o].values[v], c->want.values[w])) fixed[o] = v;
        if (fixed[o] < 0) {
          diag_plain(&c->diag, "option '%s' of program '%s' has no value '%s'", decl[o].name, ast->name.name,
                     c->want.values[w]);
          fixed[o] = 0;
        }
      }
    idx[o] = fixed[o] >= 0 ? fixed[o] : 0;
    if (fixed[o] < 0 && __builtin_mul_overflow(count, (uint64_t)decl[o].nvalues, &count)) count_overflows = 1;
  }
  if (count_overflows || count > CAKE_MAX_VARIANTS) {
    char n[48];
    if (count_overflows) snprintf(n, sizeof n, "more than %llu", (unsigned long long)UINT64_MAX);
    else snprintf(n, sizeof n, "%llu", (unsigned long long)count);
    diag_error(&c->diag, ast->name.loc,
               "program '%s' asks for %s variants (every combination of its options' values); at most %d are "
               "compiled at once: fix some options with --option name=value",
               ast->name.name, n, CAKE_MAX_VARIANTS);
    return;
  }
  for (;;) {
    CirOptionSet set = {0};
    for (int o = 0; o < nopt; o++) {
      set.names[set.n] = decl[o].name;
      set.values[set.n++] = decl[o].values[idx[o]];
    }
    CirProgram *pr = cake_sema(&c->arena, &c->diag, ast, &set);
    if (!pr) break; /* the other variants would mostly repeat the same errors */
    ptrvec_push(&c->arena, &c->progs, pr);
    if (c->emit == EMIT_CIR) {
      if (pr->noptions) buf_printf(&c->text, "// variant %s\n", pr->variant);
      cir_dump(&c->text, pr);
    }
    if (c->emit == EMIT_LIVE) cir_live_dump(&c->text, pr);
    /* next combination: the last free option varies fastest */
    int o = nopt - 1;
    while (o >= 0) {
      if (fixed[o] < 0 && ++idx[o] < decl[o].nvalues) break;
      if (fixed[o] < 0) idx[o] = 0;
      o--;
    }
    if (o < 0) break;
  }
}

/* Programs by name (a stable sort: the variants of one program keep their
 * order), so that the package does not depend on the order of the specs. */
static void sort_programs(PtrVec *v) {
  for (int i = 1; i < v->len; i++) {
    CirProgram *x = v->items[i];
    int j = i;
    for (; j > 0 && strcmp(((CirProgram *)v->items[j - 1])->name, x->name) > 0; j--) v->items[j] = v->items[j - 1];
    v->items[j] = x;
  }
}

/* Everything cake_compile does, between catching internal errors. */
static int compile_all(Compilation *c, const cake_source *sources, int nsources) {
  const cake_options *opt = c->opt;
  int rc = 0;
  if (parse_emit(opt->emit ? opt->emit : "package", &c->emit)) {
    diag_plain(&c->diag, "unknown --emit kind '%s' (header, ast, cir, mlir, llvm, ptx, cubin, fatbin, package)", opt->emit);
    return 2;
  }
  if (parse_archs(c, opt->archs ? opt->archs : cake_default_archs())) return 2;
  if (c->emit >= EMIT_CUBIN && !opt->output) {
    diag_plain(&c->diag, "--emit=%s writes files: give an output directory with -o", opt->emit ? opt->emit : "package");
    return 2;
  }
  if (c->emit >= EMIT_CUBIN && strlen(opt->output) > CAKE_MAX_OUTPUT_PATH) {
    diag_plain(&c->diag, "the output directory's path has more than %d characters", CAKE_MAX_OUTPUT_PATH);
    return 2;
  }
  if (nsources <= 0) {
    diag_plain(&c->diag, "no input specs");
    return 2;
  }
  if (opt->options && parse_option_list(c, opt->options, &c->want)) return 2;
  for (int i = 0; i < nsources; i++)
    for (int j = 0; j < i; j++)
      if (sources[i].name && sources[j].name && !strcmp(sources[i].name, sources[j].name)) {
        diag_plain(&c->diag, "spec '%s' is given twice", sources[i].name);
        rc = 2;
      }
  if (rc) return rc;
  for (int i = 0; i < nsources; i++) {
    Source *src = arena_alloc(&c->arena, sizeof(Source));
    src->name = arena_strdup(&c->arena, sources[i].name ? sources[i].name : "<string>");
    if (sources[i].text) {
      src->text = arena_strdup(&c->arena, sources[i].text);
      src->len = strlen(src->text);
    } else {
      size_t len;
      src->text = read_source(c, src->name, &len);
      if (!src->text) {
        rc = 2;
        continue;
      }
      src->len = len;
    }
    Program *ast = cake_parse(&c->arena, &c->diag, src);
    if (!ast) continue;
    if (c->emit == EMIT_AST) {
      ast_dump(&c->text, ast);
      continue;
    }
    expand_variants(c, ast);
  }
  for (int w = 0; w < c->want.n; w++)
    if (!c->want_used[w] && c->want_prog[w])
      diag_plain(&c->diag, "no program '%s' with an option '%s'", c->want_prog[w], c->want.names[w]);
    else if (!c->want_used[w])
      diag_plain(&c->diag, "no program has an option '%s'", c->want.names[w]);
  CirProgram **progs = (CirProgram **)c->progs.items;
  int nprogs = c->progs.len;
  for (int i = 0; i < nprogs; i++)
    for (int j = 0; j < i; j++)
      if (!strcmp(progs[i]->name, progs[j]->name) && strcmp(progs[i]->src->name, progs[j]->src->name) != 0) {
        diag_plain(&c->diag, "two specs define program '%s' (%s and %s)", progs[i]->name, progs[j]->src->name,
                   progs[i]->src->name);
      }
  if (c->diag.errors) return rc ? rc : 1;
  /* Context-parallel programs have no typed launchers yet (their launches
   * take a communicator: cake_launch_comm, cake_launch_group). */
  for (int i = 0; i < nprogs && c->emit == EMIT_HEADER; i++)
    if (progs[i]->ranks_dim >= 0) {
      Loc at = progs[i]->dims[progs[i]->ranks_dim].loc;
      diag_error(&c->diag, at,
                 "program '%s' is context-parallel (`ranks`): typed launchers (--emit=header) do not cover "
                 "such programs yet; use the runtime's group or communicator launches",
                 progs[i]->name);
      return 1;
    }
  if (c->emit == EMIT_HEADER) {
    sort_programs(&c->progs);
    emit_headers(&c->text, (CirProgram **)c->progs.items, c->progs.len, &c->arena);
  }
  if (c->emit <= EMIT_LIVE) return rc;
  c->be = backend_create(&c->diag, opt->cuda_root);
  if (!c->be) return 2;
  if (c->emit >= EMIT_CUBIN && ensure_dir(c, opt->output)) return 2;
  sort_programs(&c->progs);
  const char *cache_dir = opt->cache_dir ? opt->cache_dir : getenv("CAKE_CACHE_DIR");
  codegen_init(&c->cg, c->be, c->emit, opt->jobs, cache_dir);
  ProgramPlan *plans = arena_alloc(&c->arena, sizeof(ProgramPlan) * (size_t)(nprogs + 1));
  for (int i = 0; i < nprogs; i++) plan_program(c, progs[i], &plans[i]);
  codegen_run(&c->cg, &c->notes);
  for (int i = 0; i < nprogs && rc == 0; i++)
    rc = compile_program(c, progs[i], &plans[i], progs[i]->src->name, c->programs);
  if (rc == 0 && c->nfatbins) rc = write_fatbins(c);
  if (opt->timing) codegen_report(&c->cg, &c->notes);
  if (rc == 0 && c->emit == EMIT_PACKAGE) {
    rc = write_manifest(c);
  }
  return rc;
}

int cake_compile(const cake_source *sources, int nsources, const cake_options *opt_in, cake_result **out) {
  static const cake_options defaults = {0};
  /* on the heap: still valid after an internal error's longjmp */
  Compilation *c = calloc(1, sizeof *c);
  if (!c) {
    *out = &oom_result;
    return 3;
  }
  arena_init(&c->arena);
  c->opt = opt_in ? opt_in : &defaults;
  diag_init(&c->diag, c->opt->max_errors);
  buf_init(&c->text);
  buf_init(&c->notes);
  int rc;
  cake_die_push(&c->die);
  if (setjmp(c->die.jump) == 0) {
    c->files = cJSON_CreateArray();
    c->programs = cJSON_CreateArray();
    if (!c->files || !c->programs) cake_die("out of memory");
    rc = compile_all(c, sources, nsources);
    cake_die_pop(&c->die);
  } else { /* cake_die: the handler is popped; what was being built may leak */
    diag_plain(&c->diag, "%s", c->die.message);
    rc = 3;
  }
  cJSON_Delete(c->programs);
  cJSON_Delete(c->files);
  free_fatbin_jobs(c);
  codegen_free(&c->cg);
  backend_destroy(c->be);
  if (rc == 0 && c->diag.errors) rc = 1;
  cake_result *r = calloc(1, sizeof *r);
  if (r) {
    r->errors = c->diag.errors;
    r->diagnostics = buf_take(&c->diag.out);
    r->text = buf_take(&c->text);
    r->notes = buf_take(&c->notes);
  } else {
    r = &oom_result;
    rc = 3;
    diag_free(&c->diag);
    buf_free(&c->text);
    buf_free(&c->notes);
  }
  arena_free(&c->arena);
  free(c);
  *out = r;
  return rc;
}
