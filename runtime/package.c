/* package.c - loading a package: manifest.json, every file checked against
 * its sha256, and the programs (tensors, stages, argument plans, entries). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

static __thread char g_error[2048];

const char *cake_last_error(void) { return g_error; }

cake_status rt_fail(cake_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_error, sizeof g_error, fmt, ap);
  va_end(ap);
  return s;
}

const char *cake_status_name(cake_status s) {
  static const char *const names[] = {"CAKE_OK",    "CAKE_ERR_ARGUMENT", "CAKE_ERR_IO",   "CAKE_ERR_PACKAGE",
                                      "CAKE_ERR_NOT_FOUND", "CAKE_ERR_TENSOR", "CAKE_ERR_PLAN", "CAKE_ERR_CUDA",
                                      "CAKE_ERR_MEMORY"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "CAKE_ERR_?";
}

static void *def_alloc(void *ctx, size_t n) { return malloc(n); }
static void def_free(void *ctx, void *p) { free(p); }
static const cake_allocator default_allocator = {def_alloc, def_free, NULL};
const cake_allocator *rt_default_allocator(void) { return &default_allocator; }

void *rt_alloc(const cake_allocator *a, size_t n) {
  void *p = a->alloc(a->ctx, n ? n : 1);
  if (!p) {
    rt_fail(CAKE_ERR_MEMORY, "out of host memory allocating %zu bytes", n);
    return NULL;
  }
  memset(p, 0, n ? n : 1);
  return p;
}

void rt_free(const cake_allocator *a, void *p) {
  if (p) a->free(a->ctx, p);
}

char *rt_strdup(const cake_allocator *a, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = rt_alloc(a, n);
  if (d) memcpy(d, s, n);
  return d;
}

const char *cake_dtype_name(cake_dtype t) {
  switch (t) {
    case CAKE_BF16: return "bf16";
    case CAKE_F16: return "f16";
    case CAKE_F32: return "f32";
    case CAKE_I32: return "i32";
  }
  return "?";
}

size_t rt_dtype_bytes(cake_dtype t) { return t == CAKE_BF16 || t == CAKE_F16 ? 2 : 4; }

static int parse_dtype(const char *s, cake_dtype *out) {
  static const cake_dtype all[] = {CAKE_BF16, CAKE_F16, CAKE_F32, CAKE_I32};
  for (int i = 0; i < 4; i++)
    if (!strcmp(s, cake_dtype_name(all[i]))) {
      *out = all[i];
      return 0;
    }
  return -1;
}

int rt_tensor_index(const cake_program *p, const char *name) {
  for (int i = 0; i < p->ntensors; i++)
    if (!strcmp(p->tensors[i].name, name)) return i;
  return -1;
}

int rt_entry_index(const cake_program *p, const char *name) {
  for (int i = 0; i < p->nentries; i++)
    if (!strcmp(p->entries[i].name, name)) return i;
  return -1;
}

/* ---- reading files ---- */

static cake_status read_whole(const cake_allocator *al, const char *path, uint8_t **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return rt_fail(CAKE_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  if (fseek(f, 0, SEEK_END) != 0) {
    fclose(f);
    return rt_fail(CAKE_ERR_IO, "cannot read '%s'", path);
  }
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *d = n >= 0 ? rt_alloc(al, (size_t)n + 1) : NULL;
  if (!d) {
    fclose(f);
    return CAKE_ERR_MEMORY;
  }
  if (fread(d, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    rt_free(al, d);
    return rt_fail(CAKE_ERR_IO, "cannot read '%s'", path);
  }
  fclose(f);
  *data = d;
  *len = (size_t)n;
  return CAKE_OK;
}

/* ---- manifest -> structures ---- */

typedef struct Ld {
  cake_package *pkg;
  const char *dir;
  const char *where; /* for messages */
} Ld;

static cake_status bad(Ld *L, const char *what) {
  return rt_fail(CAKE_ERR_PACKAGE, "%s/manifest.json: %s%s%s", L->dir, L->where ? L->where : "",
                 L->where ? ": " : "", what);
}

static const char *str_of(const JNode *o, const char *key) {
  const JNode *n = json_get(o, key);
  return n && n->kind == J_STR ? n->str : NULL;
}

static int num_of(const JNode *o, const char *key, double *v) {
  const JNode *n = json_get(o, key);
  if (!n || n->kind != J_NUM) return -1;
  *v = n->num;
  return 0;
}

static const JNode *arr_of(const JNode *o, const char *key) {
  const JNode *n = json_get(o, key);
  return n && n->kind == J_ARR ? n : NULL;
}

static const RtFile *find_file(const cake_package *pkg, const char *path) {
  for (int i = 0; i < pkg->nfiles; i++)
    if (!strcmp(pkg->files[i].path, path)) return &pkg->files[i];
  return NULL;
}

static int dim_index(const cake_program *p, const char *name) {
  for (int i = 0; i < p->ndims; i++)
    if (!strcmp(p->dims[i], name)) return i;
  return -1;
}

static cake_status extent_of(Ld *L, const cake_program *p, const JNode *n, RtExtent *e) {
  if (n->kind == J_NUM) {
    e->dim = -1;
    e->value = (int64_t)n->num;
    return CAKE_OK;
  }
  if (n->kind == J_STR && (e->dim = dim_index(p, n->str)) >= 0) return CAKE_OK;
  return bad(L, "a tensor extent is neither a number nor a declared dim");
}

static cake_status load_files(Ld *L, const JNode *files) {
  cake_package *pkg = L->pkg;
  const cake_allocator *al = &pkg->al;
  pkg->files = rt_alloc(al, sizeof(RtFile) * (size_t)(files->n + 1));
  if (!pkg->files) return CAKE_ERR_MEMORY;
  pkg->nfiles = files->n;
  for (int i = 0; i < files->n; i++) {
    const JNode *f = files->items[i];
    const char *path = str_of(f, "path"), *sha = str_of(f, "sha256");
    if (!path || !sha || strlen(sha) != 64) return bad(L, "a files entry lacks its path or sha256");
    if (strstr(path, "..") || path[0] == '/') return bad(L, "a file path leaves the package directory");
    char full[4096];
    snprintf(full, sizeof full, "%s/%s", L->dir, path);
    RtFile *rf = &pkg->files[i];
    if (!(rf->path = rt_strdup(al, path))) return CAKE_ERR_MEMORY;
    cake_status s = read_whole(al, full, &rf->data, &rf->len);
    if (s) {
      if (s == CAKE_ERR_IO) return rt_fail(CAKE_ERR_PACKAGE, "package file '%s' listed in the manifest is missing or unreadable: %s", path, cake_last_error());
      return s;
    }
    char hex[65];
    rt_sha256_hex(rf->data, rf->len, hex);
    if (strcmp(hex, sha) != 0)
      return rt_fail(CAKE_ERR_PACKAGE, "package file '%s' fails its sha256 check (manifest %.16s..., file %.16s...)",
                     path, sha, hex);
  }
  return CAKE_OK;
}

static cake_status load_stage(Ld *L, cake_program *p, const JNode *sj, RtStage *st) {
  const cake_allocator *al = &L->pkg->al;
  const char *name = str_of(sj, "name");
  const JNode *block = arr_of(sj, "block"), *grid = arr_of(sj, "grid"), *args = arr_of(sj, "args"),
              *kernels = arr_of(sj, "kernels");
  if (!name || !block || block->n != 3 || !grid || grid->n > RT_MAX_AXES || !args || !kernels)
    return bad(L, "a stage lacks name, block, grid, args or kernels");
  if (!(st->name = rt_strdup(al, name))) return CAKE_ERR_MEMORY;
  st->threads = (int)block->items[0]->num;
  st->ngrid = grid->n;
  for (int i = 0; i < grid->n; i++) {
    const JNode *g = grid->items[i];
    const char *kind = str_of(g, "kind");
    RtGrid *rg = &st->grid[i];
    double v;
    if (!kind) return bad(L, "a grid axis lacks its kind");
    if (!strcmp(kind, "chunks")) rg->kind = G_CHUNKS;
    else if (!strcmp(kind, "docs")) rg->kind = G_DOCS;
    else if (!strcmp(kind, "dim")) {
      rg->kind = G_DIM;
      const char *dn = str_of(g, "name");
      if (!dn || (rg->dim = dim_index(p, dn)) < 0) return bad(L, "a grid axis names an unknown dim");
    } else if (!strcmp(kind, "const") && !num_of(g, "value", &v)) {
      rg->kind = G_CONST;
      rg->value = (int64_t)v;
    } else
      return bad(L, "unknown grid axis kind");
  }
  st->args = rt_alloc(al, sizeof(RtArg) * (size_t)(args->n + 1));
  if (!st->args) return CAKE_ERR_MEMORY;
  st->nargs = args->n;
  for (int i = 0; i < args->n; i++) {
    const JNode *a = args->items[i];
    const char *kind = str_of(a, "kind"), *an = str_of(a, "name");
    RtArg *ra = &st->args[i];
    if (!kind || !an) return bad(L, "an argument lacks its kind or name");
    if (!strcmp(kind, "buffer") || !strcmp(kind, "saved") || (!strcmp(kind, "workspace") && rt_tensor_index(p, an) >= 0)) {
      ra->what = A_TENSOR;
      if ((ra->index = rt_tensor_index(p, an)) < 0) return bad(L, "an argument names an unknown tensor");
    } else if (!strcmp(kind, "workspace") && !strcmp(an, "chunk_table")) {
      ra->what = A_CHUNK_TABLE;
    } else if (!strcmp(kind, "workspace") && !strcmp(an, "doc_table")) {
      ra->what = A_DOC_TABLE;
    } else if (!strcmp(kind, "parameter") && dim_index(p, an) >= 0) {
      ra->what = A_DIM;
      ra->index = dim_index(p, an);
    } else if (!strcmp(kind, "parameter")) {
      ra->what = A_PARAM;
      ra->index = -1;
      for (int j = 0; j < p->nparams; j++)
        if (!strcmp(p->params[j].name, an)) ra->index = j;
      if (ra->index < 0) return bad(L, "an argument names an unknown parameter");
    } else
      return bad(L, "unknown argument kind");
  }
  st->kernels = rt_alloc(al, sizeof(RtKernel) * (size_t)(kernels->n + 1));
  if (!st->kernels) return CAKE_ERR_MEMORY;
  st->nkernels = kernels->n;
  for (int i = 0; i < kernels->n; i++) {
    const JNode *k = kernels->items[i];
    const char *target = str_of(k, "target"), *sym = str_of(k, "symbol"), *fmt = str_of(k, "format"),
               *file = str_of(k, "file");
    double sh;
    if (!target || !sym || !fmt || !file || num_of(k, "shared_bytes", &sh)) return bad(L, "a kernel record is incomplete");
    const RtFile *rf = find_file(L->pkg, file);
    if (!rf) return bad(L, "a kernel's file is not among the package files");
    RtKernel *rk = &st->kernels[i];
    rk->target = rt_strdup(al, target);
    rk->symbol = rt_strdup(al, sym);
    rk->format = rt_strdup(al, fmt);
    if (!rk->target || !rk->symbol || !rk->format) return CAKE_ERR_MEMORY;
    rk->image = rf->data;
    rk->len = rf->len;
    rk->shared_bytes = (int)sh;
  }
  const char *fb = str_of(sj, "fatbin");
  if (fb) {
    const RtFile *rf = find_file(L->pkg, fb);
    if (!rf) return bad(L, "a stage's fatbin is not among the package files");
    st->fatbin = rf->data;
    st->fatbin_len = rf->len;
  }
  return CAKE_OK;
}

static cake_status load_program(Ld *L, const JNode *pj, cake_program *p) {
  const cake_allocator *al = &L->pkg->al;
  const char *name = str_of(pj, "name");
  const JNode *dims = arr_of(pj, "dims"), *tensors = arr_of(pj, "tensors"), *params = arr_of(pj, "params"),
              *stages = arr_of(pj, "stages"), *entries = arr_of(pj, "entries");
  double chunk;
  if (!name || !dims || !tensors || !params || !stages || !entries || num_of(pj, "chunk", &chunk))
    return bad(L, "a program lacks name, dims, chunk, tensors, params, stages or entries");
  p->pkg = L->pkg;
  if (!(p->name = rt_strdup(al, name))) return CAKE_ERR_MEMORY;
  p->chunk = (int)chunk;
  p->tokens_dim = p->docs_dim = p->chunks_dim = -1;
  const char *variant = str_of(pj, "variant");
  const JNode *options = arr_of(pj, "options");
  if (!(p->variant = rt_strdup(al, variant ? variant : ""))) return CAKE_ERR_MEMORY;
  int nopt = options ? options->n : 0;
  if (!(p->options = rt_alloc(al, sizeof(RtOption) * (size_t)(nopt + 1)))) return CAKE_ERR_MEMORY;
  p->noptions = nopt;
  for (int i = 0; i < p->noptions; i++) {
    const char *on = str_of(options->items[i], "name"), *ov = str_of(options->items[i], "value"),
               *od = str_of(options->items[i], "default");
    if (!on || !ov || !od) return bad(L, "an option record is incomplete");
    p->options[i].name = rt_strdup(al, on);
    p->options[i].value = rt_strdup(al, ov);
    p->options[i].def = rt_strdup(al, od);
    if (!p->options[i].name || !p->options[i].value || !p->options[i].def) return CAKE_ERR_MEMORY;
  }
  if (!(p->dims = rt_alloc(al, sizeof(char *) * (size_t)(dims->n + 1)))) return CAKE_ERR_MEMORY;
  p->ndims = dims->n;
  for (int i = 0; i < dims->n; i++) {
    const char *dn = str_of(dims->items[i], "name"), *role = str_of(dims->items[i], "role");
    if (!dn || !role) return bad(L, "a dim lacks its name or role");
    if (!(p->dims[i] = rt_strdup(al, dn))) return CAKE_ERR_MEMORY;
    if (!strcmp(role, "tokens")) p->tokens_dim = i;
    if (!strcmp(role, "docs")) p->docs_dim = i;
    if (!strcmp(role, "chunks")) p->chunks_dim = i;
  }
  if (!(p->tensors = rt_alloc(al, sizeof(RtTensor) * (size_t)(tensors->n + 1)))) return CAKE_ERR_MEMORY;
  p->ntensors = tensors->n;
  for (int i = 0; i < tensors->n; i++) {
    const JNode *t = tensors->items[i];
    const char *tn = str_of(t, "name"), *role = str_of(t, "role"), *dt = str_of(t, "dtype");
    const JNode *shape = arr_of(t, "shape"), *opt = json_get(t, "optional");
    RtTensor *rt = &p->tensors[i];
    if (!tn || !role || !dt || !shape || shape->n > CAKE_MAX_RANK || parse_dtype(dt, &rt->dtype))
      return bad(L, "a tensor record is incomplete");
    if (!(rt->name = rt_strdup(al, tn))) return CAKE_ERR_MEMORY;
    rt->role = !strcmp(role, "in") ? ROLE_IN_ : !strcmp(role, "out") ? ROLE_OUT_ : !strcmp(role, "temp") ? ROLE_TEMP_ : ROLE_SAVE_;
    rt->rank = shape->n;
    for (int j = 0; j < shape->n; j++) {
      cake_status s = extent_of(L, p, shape->items[j], &rt->shape[j]);
      if (s) return s;
    }
    rt->optional = opt && opt->kind == J_BOOL && opt->boolean;
  }
  if (!(p->params = rt_alloc(al, sizeof(RtParam) * (size_t)(params->n + 1)))) return CAKE_ERR_MEMORY;
  p->nparams = params->n;
  for (int i = 0; i < params->n; i++) {
    const JNode *pa = params->items[i];
    const char *pn = str_of(pa, "name"), *dt = str_of(pa, "dtype");
    if (!pn || !dt) return bad(L, "a parameter record is incomplete");
    if (!(p->params[i].name = rt_strdup(al, pn))) return CAKE_ERR_MEMORY;
    p->params[i].is_int = !strcmp(dt, "i32");
    p->params[i].has_default = !num_of(pa, "default", &p->params[i].def);
  }
  if (!(p->stages = rt_alloc(al, sizeof(RtStage) * (size_t)(stages->n + 1)))) return CAKE_ERR_MEMORY;
  p->nstages = stages->n;
  for (int i = 0; i < stages->n; i++) {
    cake_status s = load_stage(L, p, stages->items[i], &p->stages[i]);
    if (s) return s;
  }
  if (!(p->entries = rt_alloc(al, sizeof(RtEntry) * (size_t)(entries->n + 1)))) return CAKE_ERR_MEMORY;
  p->nentries = entries->n;
  for (int i = 0; i < entries->n; i++) {
    const JNode *e = entries->items[i];
    const char *en = str_of(e, "name");
    const JNode *st = arr_of(e, "stages");
    if (!en || !st) return bad(L, "an entry lacks its name or stages");
    RtEntry *re = &p->entries[i];
    if (!(re->name = rt_strdup(al, en))) return CAKE_ERR_MEMORY;
    if (!(re->stages = rt_alloc(al, sizeof(int) * (size_t)(st->n + 1)))) return CAKE_ERR_MEMORY;
    re->n = st->n;
    for (int j = 0; j < st->n; j++) {
      re->stages[j] = -1;
      for (int k = 0; k < p->nstages; k++)
        if (st->items[j]->kind == J_STR && !strcmp(p->stages[k].name, st->items[j]->str)) re->stages[j] = k;
      if (re->stages[j] < 0) return bad(L, "an entry names an unknown stage");
    }
  }
  return CAKE_OK;
}

cake_status cake_package_load(const char *dir, const cake_allocator *alloc, cake_package **out) {
  if (!dir || !out) return rt_fail(CAKE_ERR_ARGUMENT, "cake_package_load: dir and out are required");
  *out = NULL;
  const cake_allocator *al = alloc ? alloc : &default_allocator;
  cake_package *pkg = rt_alloc(al, sizeof *pkg);
  if (!pkg) return CAKE_ERR_MEMORY;
  pkg->al = *al;
  pthread_mutex_init(&pkg->lock, NULL);
  char path[4096];
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  uint8_t *text = NULL;
  size_t len = 0;
  cake_status s = read_whole(al, path, &text, &len);
  if (s) {
    cake_package_free(pkg);
    return s;
  }
  JDoc doc = {al, NULL, 0, 0};
  char err[256];
  JNode *root = json_parse(&doc, (const char *)text, len, err, sizeof err);
  Ld L = {pkg, dir, NULL};
  if (!root) {
    s = strstr(err, "out of memory") ? rt_fail(CAKE_ERR_MEMORY, "out of host memory reading %s", path)
                                     : rt_fail(CAKE_ERR_PACKAGE, "%s is not valid JSON: %s", path, err);
    goto out;
  }
  const char *schema = str_of(root, "schema");
  double ver;
  if (!schema || strcmp(schema, "cake.package") != 0 || num_of(root, "schema_version", &ver)) {
    s = rt_fail(CAKE_ERR_PACKAGE, "%s is not a Cake package manifest (schema \"cake.package\" expected)", path);
    goto out;
  }
  if (ver != 1) {
    s = rt_fail(CAKE_ERR_PACKAGE, "%s has schema version %g; this runtime reads version 1", path, ver);
    goto out;
  }
  const JNode *files = arr_of(root, "files"), *programs = arr_of(root, "programs");
  if (!files || !programs) {
    s = bad(&L, "missing files or programs");
    goto out;
  }
  if ((s = load_files(&L, files))) goto out;
  if (!(pkg->programs = rt_alloc(al, sizeof(cake_program) * (size_t)(programs->n + 1)))) {
    s = CAKE_ERR_MEMORY;
    goto out;
  }
  pkg->nprograms = programs->n;
  for (int i = 0; i < programs->n && !s; i++) {
    L.where = str_of(programs->items[i], "name");
    s = load_program(&L, programs->items[i], &pkg->programs[i]);
  }
out:
  json_free(&doc);
  rt_free(al, text);
  if (s) {
    cake_package_free(pkg);
    return s;
  }
  *out = pkg;
  return CAKE_OK;
}

void rt_unload_modules(cake_package *pkg);

void cake_package_free(cake_package *pkg) {
  if (!pkg) return;
  const cake_allocator *al = &pkg->al;
  rt_unload_modules(pkg);
  for (int i = 0; i < pkg->nprograms; i++) {
    cake_program *p = &pkg->programs[i];
    for (int j = 0; j < p->ndims; j++) rt_free(al, p->dims[j]);
    rt_free(al, p->dims);
    for (int j = 0; j < p->ntensors; j++) rt_free(al, p->tensors[j].name);
    rt_free(al, p->tensors);
    for (int j = 0; j < p->nparams; j++) rt_free(al, p->params[j].name);
    rt_free(al, p->params);
    for (int j = 0; j < p->nstages; j++) {
      RtStage *st = &p->stages[j];
      for (int k = 0; k < st->nkernels; k++) {
        rt_free(al, st->kernels[k].target);
        rt_free(al, st->kernels[k].symbol);
        rt_free(al, st->kernels[k].format);
      }
      rt_free(al, st->kernels);
      rt_free(al, st->args);
      rt_free(al, st->name);
    }
    rt_free(al, p->stages);
    for (int j = 0; j < p->nentries; j++) {
      rt_free(al, p->entries[j].name);
      rt_free(al, p->entries[j].stages);
    }
    rt_free(al, p->entries);
    for (int j = 0; j < p->noptions; j++) {
      rt_free(al, p->options[j].name);
      rt_free(al, p->options[j].value);
      rt_free(al, p->options[j].def);
    }
    rt_free(al, p->options);
    rt_free(al, p->variant);
    rt_free(al, p->name);
  }
  rt_free(al, pkg->programs);
  for (int i = 0; i < pkg->nfiles; i++) {
    rt_free(al, pkg->files[i].path);
    rt_free(al, pkg->files[i].data);
  }
  rt_free(al, pkg->files);
  pthread_mutex_destroy(&pkg->lock);
  cake_allocator copy = pkg->al;
  rt_free(&copy, pkg);
}

cake_status cake_package_program(const cake_package *pkg, const char *name, const cake_program **out) {
  if (!pkg || !name || !out) return rt_fail(CAKE_ERR_ARGUMENT, "cake_package_program: pkg, name and out are required");
  int found = -1, n = 0;
  for (int i = 0; i < pkg->nprograms; i++)
    if (!strcmp(pkg->programs[i].name, name)) found = found < 0 ? i : found, n++;
  if (n == 0) return rt_fail(CAKE_ERR_NOT_FOUND, "the package has no program '%s'", name);
  if (n > 1)
    return rt_fail(CAKE_ERR_ARGUMENT, "program '%s' has %d variants in the package; choose one with cake_package_variant",
                   name, n);
  *out = &pkg->programs[found];
  return CAKE_OK;
}

/* The value `opts` ("a=x,b=y") gives option `name`, or NULL. */
static const char *option_in(const char *opts, const char *name, char *buf, size_t n) {
  size_t len = strlen(name);
  for (const char *p = opts; p && *p;) {
    const char *end = strchr(p, ',');
    if (!end) end = p + strlen(p);
    if ((size_t)(end - p) > len && !strncmp(p, name, len) && p[len] == '=') {
      snprintf(buf, n, "%.*s", (int)(end - p - (ptrdiff_t)len - 1), p + len + 1);
      return buf;
    }
    p = *end ? end + 1 : end;
  }
  return NULL;
}

cake_status cake_package_variant(const cake_package *pkg, const char *name, const char *options,
                                 const cake_program **out) {
  if (!pkg || !name || !out) return rt_fail(CAKE_ERR_ARGUMENT, "cake_package_variant: pkg, name and out are required");
  int any = 0;
  for (int i = 0; i < pkg->nprograms; i++) {
    const cake_program *p = &pkg->programs[i];
    if (strcmp(p->name, name) != 0) continue;
    any = 1;
    int match = 1;
    for (int o = 0; o < p->noptions && match; o++) {
      char buf[128];
      const char *want = option_in(options, p->options[o].name, buf, sizeof buf);
      match = !strcmp(p->options[o].value, want ? want : p->options[o].def);
    }
    if (match) {
      /* every option named in `options` must be one of the program's */
      for (const char *q = options; q && *q;) {
        const char *eq = strchr(q, '='), *end = strchr(q, ',');
        if (!end) end = q + strlen(q);
        int known = 0;
        for (int o = 0; eq && eq < end && o < p->noptions; o++)
          known |= strlen(p->options[o].name) == (size_t)(eq - q) && !strncmp(q, p->options[o].name, (size_t)(eq - q));
        if (!known) {
          int len = (int)((eq && eq < end ? eq : end) - q);
          return rt_fail(CAKE_ERR_ARGUMENT, "program '%s' has no option '%.*s'", name, len, q);
        }
        q = *end ? end + 1 : end;
      }
      *out = p;
      return CAKE_OK;
    }
  }
  if (!any) return rt_fail(CAKE_ERR_NOT_FOUND, "the package has no program '%s'", name);
  return rt_fail(CAKE_ERR_NOT_FOUND, "the package has no variant of '%s' with options '%s'", name, options ? options : "");
}

const char *cake_program_variant(const cake_program *p) { return p ? p->variant : NULL; }

int cake_package_program_count(const cake_package *pkg) { return pkg ? pkg->nprograms : 0; }
const char *cake_package_program_name(const cake_package *pkg, int i) {
  return pkg && i >= 0 && i < pkg->nprograms ? pkg->programs[i].name : NULL;
}
