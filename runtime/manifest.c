/* manifest.c - cake_package_load: manifest.json, every file it lists (read
 * inside the package directory by files.c and checked against its sha256),
 * then the programs.
 *
 * Every value is validated before it is used, so that planning and launching
 * can trust the structures: each field has the JSON kind it should; integers
 * are integral and in range (checked on the double, before any conversion);
 * enums are known; names are unique where they name something (programs,
 * dims, tensors, params, stages, entries, options, files, kernel targets),
 * and no tensor takes the name of the plan's tables (chunk_table, doc_table,
 * frag_table); every cross reference resolves. Schema 2 to 5 are read; 3
 * adds context-parallel programs: the dim roles "ranks" and "fragments", the
 * program's "exchanges" (stages that entries may list) and the frag_table
 * argument; 4 halo exchanges; 5 the entries' "rounds" groups, the kernel
 * argument of kind "round" and the fragment table's ends() header (the
 * plan lays the table out by the package's schema). A failure is
 * CAKE_ERR_PACKAGE with a message
 * naming the program, the record and the field. */
#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cake_require.h"
#include "rt.h"

typedef struct Ld {
  cake_package *pkg;
  const char *dir;
  char prog[200]; /* "program 'p' (variant)", or empty */
  char rec[200];  /* "stage 's'", "tensor 't'", "files[3]", ... or empty */
  int version;    /* the manifest's schema_version */
} Ld;

static cake_status bad(Ld *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static cake_status bad(Ld *L, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return rt_fail(CAKE_ERR_PACKAGE, "%s/manifest.json: %s%s%s%s%s", L->dir, L->prog, L->prog[0] ? ": " : "", L->rec,
                 L->rec[0] ? ": " : "", msg);
}

static const char *kind_name(JKind k) {
  static const char *const names[] = {"null", "a boolean", "a number", "a string", "an array", "an object"};
  return names[k];
}

/* ---- fields ---- */

/* Member `key` of `o`, of kind `kind`; *out = NULL when it is absent and optional. */
static cake_status get(Ld *L, const JNode *o, const char *key, JKind kind, int required, const JNode **out) {
  const JNode *n = json_get(o, key);
  *out = NULL;
  if (!n) return required ? bad(L, "'%s' is missing", key) : CAKE_OK;
  if (n->kind != kind) return bad(L, "'%s' must be %s, not %s", key, kind_name(kind), kind_name(n->kind));
  *out = n;
  return CAKE_OK;
}

/* A required, non-empty string. */
static cake_status get_str(Ld *L, const JNode *o, const char *key, const char **out) {
  const JNode *n;
  cake_status s = get(L, o, key, J_STR, 1, &n);
  if (s) return s;
  if (!n->str[0]) return bad(L, "'%s' is empty", key);
  *out = n->str;
  return CAKE_OK;
}

/* The number `n` (called `what`) as an integer in [lo, hi]: range and
 * integrality are checked on the double, so no conversion is undefined. */
static cake_status int_value(Ld *L, const JNode *n, const char *what, int64_t lo, int64_t hi, int64_t *out) {
  if (n->kind != J_NUM) return bad(L, "'%s' must be a number, not %s", what, kind_name(n->kind));
  double v = n->num;
  if (!(v >= (double)lo && v <= (double)hi) || (double)(int64_t)v != v)
    return bad(L, "'%s' is %.15g; expected an integer in [%lld, %lld]", what, v, (long long)lo, (long long)hi);
  *out = (int64_t)v;
  return CAKE_OK;
}

static cake_status get_int(Ld *L, const JNode *o, const char *key, int64_t lo, int64_t hi, int64_t *out) {
  const JNode *n;
  cake_status s = get(L, o, key, J_NUM, 1, &n);
  return s ? s : int_value(L, n, key, lo, hi, out);
}

/* A required string that is one of `names`; *out = its index. */
static cake_status get_enum(Ld *L, const JNode *o, const char *key, const char *const *names, int n, int *out) {
  const JNode *j;
  cake_status s = get(L, o, key, J_STR, 1, &j);
  if (s) return s;
  for (int i = 0; i < n; i++)
    if (!strcmp(j->str, names[i])) {
      *out = i;
      return CAKE_OK;
    }
  char list[200] = "";
  for (int i = 0; i < n; i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? (i == n - 1 ? " or " : ", ") : "", names[i]);
  return bad(L, "'%s' is '%s'; expected %s", key, j->str, list);
}

/* Item `i` of `arr` (called `what`), which must be an object; sets the record name. */
static cake_status item(Ld *L, const JNode *arr, int i, const char *what, const JNode **out) {
  snprintf(L->rec, sizeof L->rec, "%s[%d]", what, i);
  *out = arr->items[i];
  if ((*out)->kind != J_OBJ) return bad(L, "must be an object, not %s", kind_name((*out)->kind));
  return CAKE_OK;
}

static cake_status alloc_array(Ld *L, void **out, size_t size, int n) {
  *out = rt_alloc(&L->pkg->al, size * (size_t)(n + 1));
  return *out ? CAKE_OK : CAKE_ERR_MEMORY;
}

static cake_status copy_str(Ld *L, char **out, const char *s) {
  *out = rt_strdup(&L->pkg->al, s);
  return *out ? CAKE_OK : CAKE_ERR_MEMORY;
}

static int dim_index(const cake_program *p, const char *name) {
  return rt_find_name(p->dims, sizeof(char *), p->ndims, name);
}

static int param_index(const cake_program *p, const char *name) {
  return rt_find_name(p->params, sizeof(RtParam), p->nparams, name);
}

static int stage_index(const cake_program *p, const char *name) {
  return rt_find_name(p->stages, sizeof(RtStage), p->nstages, name);
}

static const RtFile *find_file(const cake_package *pkg, const char *path) {
  int i = rt_find_name(pkg->files, sizeof(RtFile), pkg->nfiles, path);
  return i < 0 ? NULL : &pkg->files[i];
}

/* ---- files ---- */

static int is_sha256_hex(const char *s) {
  size_t n = strspn(s, "0123456789abcdef");
  return n == 64 && !s[n];
}

/* Each file is read once into host memory and hashed, and those same bytes
 * are what kernels point at and the driver gets: a file changed after the
 * check is never used. */
static cake_status load_files(Ld *L, int dirfd, const JNode *files) {
  cake_package *pkg = L->pkg;
  cake_status s = alloc_array(L, (void **)&pkg->files, sizeof(RtFile), files->n);
  for (int i = 0; i < files->n && !s; i++) {
    const JNode *f, *bytes;
    const char *path, *sha;
    if ((s = item(L, files, i, "files", &f)) || (s = get_str(L, f, "path", &path))) return s;
    snprintf(L->rec, sizeof L->rec, "file '%s'", path);
    if ((s = get_str(L, f, "sha256", &sha)) || (s = get(L, f, "bytes", J_NUM, 0, &bytes))) return s;
    if (!is_sha256_hex(sha)) return bad(L, "'sha256' is not 64 lower-case hex digits");
    if (find_file(pkg, path)) return bad(L, "listed twice");
    if (rt_check_path(path)) return bad(L, "the path must stay inside the package directory: %s", cake_last_error());
    RtFile *rf = &pkg->files[pkg->nfiles++];
    if ((s = copy_str(L, &rf->path, path))) return s;
    s = rt_read_file_at(&pkg->al, dirfd, path, RT_MAX_FILE_BYTES, &rf->data, &rf->len);
    if (s == CAKE_ERR_MEMORY) return s;
    if (s)
      return rt_fail(CAKE_ERR_PACKAGE, "package file '%s' listed in the manifest is missing or unreadable: %s", path,
                     cake_last_error());
    int64_t want;
    if (bytes && ((s = int_value(L, bytes, "bytes", 0, (int64_t)RT_MAX_FILE_BYTES, &want)))) return s;
    if (bytes && (uint64_t)want != rf->len)
      return bad(L, "the manifest gives %lld bytes, the file has %zu", (long long)want, rf->len);
    char hex[65];
    rt_sha256_hex(rf->data, rf->len, hex);
    if (strcmp(hex, sha) != 0)
      return rt_fail(CAKE_ERR_PACKAGE, "package file '%s' fails its sha256 check (manifest %.16s..., file %.16s...)",
                     path, sha, hex);
  }
  L->rec[0] = 0;
  return s;
}

/* ---- programs ---- */

static cake_status load_options(Ld *L, const JNode *options, cake_program *p) {
  int n = options ? options->n : 0;
  if (n > RT_MAX_OPTIONS) return bad(L, "%d options; at most %d are supported", n, RT_MAX_OPTIONS);
  cake_status s = alloc_array(L, (void **)&p->options, sizeof(RtOption), n);
  for (int i = 0; i < n && !s; i++) {
    const JNode *o, *values;
    const char *name, *value, *def;
    if ((s = item(L, options, i, "options", &o)) || (s = get_str(L, o, "name", &name))) return s;
    snprintf(L->rec, sizeof L->rec, "option '%s'", name);
    if ((s = get_str(L, o, "value", &value)) || (s = get_str(L, o, "default", &def)) ||
        (s = get(L, o, "values", J_ARR, 0, &values)))
      return s;
    if (rt_find_name(p->options, sizeof(RtOption), p->noptions, name) >= 0) return bad(L, "declared twice");
    int has_value = !values, has_def = !values;
    for (int v = 0; values && v < values->n; v++) {
      if (values->items[v]->kind != J_STR) return bad(L, "'values' must hold strings");
      has_value |= !strcmp(values->items[v]->str, value);
      has_def |= !strcmp(values->items[v]->str, def);
    }
    if (!has_value || !has_def) return bad(L, "'%s' is not among its values", has_value ? def : value);
    RtOption *ro = &p->options[p->noptions++];
    if ((s = copy_str(L, &ro->name, name)) || (s = copy_str(L, &ro->value, value)) || (s = copy_str(L, &ro->def, def)))
      return s;
  }
  L->rec[0] = 0;
  return s;
}

static cake_status load_dims(Ld *L, const JNode *dims, cake_program *p) {
  static const char *const roles[] = {"size", "tokens", "docs", "chunks", "ranks", "fragments"};
  int nroles = L->version >= 3 ? 6 : 4; /* ranks and fragments: schema 3 */
  cake_status s = alloc_array(L, (void **)&p->dims, sizeof(char *), dims->n);
  for (int i = 0; i < dims->n && !s; i++) {
    const JNode *d;
    const char *name;
    int role;
    if ((s = item(L, dims, i, "dims", &d)) || (s = get_str(L, d, "name", &name))) return s;
    snprintf(L->rec, sizeof L->rec, "dim '%s'", name);
    if ((s = get_enum(L, d, "role", roles, nroles, &role))) return s;
    if (dim_index(p, name) >= 0) return bad(L, "declared twice");
    int *slot = role == 1   ? &p->tokens_dim
                : role == 2 ? &p->docs_dim
                : role == 3 ? &p->chunks_dim
                : role == 4 ? &p->ranks_dim
                : role == 5 ? &p->frags_dim
                            : NULL;
    if (slot && *slot >= 0) return bad(L, "a second dim with role '%s'", roles[role]);
    if (slot) *slot = i;
    if ((s = copy_str(L, &p->dims[p->ndims++], name))) return s;
  }
  L->rec[0] = 0;
  if (!s && p->tokens_dim < 0 && (p->docs_dim >= 0 || p->chunks_dim >= 0))
    return bad(L, "a dim with role 'docs' or 'chunks' needs one with role 'tokens'");
  if (!s && p->frags_dim >= 0 && p->ranks_dim < 0) return bad(L, "a dim with role 'fragments' needs one with role 'ranks'");
  if (!s && p->ranks_dim >= 0 && p->docs_dim < 0)
    return bad(L, "a dim with role 'ranks' needs one with role 'docs' (each rank's fragments are its documents)");
  return s;
}

/* The chunk size: a multiple of 16 in [16, 256] with a token sequence, 0 without. */
static cake_status load_chunk(Ld *L, const JNode *pj, cake_program *p) {
  const JNode *n;
  cake_status s = get(L, pj, "chunk", J_NUM, 1, &n);
  if (s) return s;
  double c = n->num;
  if (p->tokens_dim < 0 && c != 0) return bad(L, "'chunk' is %.15g; a program without a token sequence has chunk 0", c);
  if (p->tokens_dim >= 0 && !(c >= RT_MIN_CHUNK && c <= RT_MAX_CHUNK && (double)(int)c == c && (int)c % 16 == 0))
    return bad(L, "'chunk' is %.15g; expected a multiple of 16 in [%d, %d]", c, RT_MIN_CHUNK, RT_MAX_CHUNK);
  p->chunk = (int)c;
  return CAKE_OK;
}

static cake_status load_tensors(Ld *L, const JNode *tensors, cake_program *p) {
  static const char *const roles[] = {"in", "out", "temp", "save"};
  static const char *const dtypes[] = {"bf16", "f16", "f32", "i32"}; /* in cake_dtype order */
  if (tensors->n > RT_MAX_TENSORS) return bad(L, "%d tensors; at most %d are supported", tensors->n, RT_MAX_TENSORS);
  cake_status s = alloc_array(L, (void **)&p->tensors, sizeof(RtTensor), tensors->n);
  for (int i = 0; i < tensors->n && !s; i++) {
    const JNode *t, *shape, *opt;
    const char *name;
    int role, dtype;
    if ((s = item(L, tensors, i, "tensors", &t)) || (s = get_str(L, t, "name", &name))) return s;
    snprintf(L->rec, sizeof L->rec, "tensor '%s'", name);
    if ((s = get_enum(L, t, "role", roles, 4, &role)) || (s = get_enum(L, t, "dtype", dtypes, 4, &dtype)) ||
        (s = get(L, t, "shape", J_ARR, 1, &shape)) || (s = get(L, t, "optional", J_BOOL, 0, &opt)))
      return s;
    if (rt_tensor_index(p, name) >= 0) return bad(L, "declared twice");
    if (!strcmp(name, "chunk_table") || !strcmp(name, "doc_table") || !strcmp(name, "frag_table")) /* the plan's own items */
      return bad(L, "the name is reserved for the runtime's table in the workspace");
    if (shape->n > CAKE_MAX_RANK) return bad(L, "'shape' has %d axes; at most %d", shape->n, CAKE_MAX_RANK);
    RtTensor *rt = &p->tensors[p->ntensors++];
    if ((s = copy_str(L, &rt->name, name))) return s;
    rt->role = (RtRole)role;
    rt->dtype = (cake_dtype)dtype;
    rt->rank = shape->n;
    rt->optional = opt && opt->boolean;
    for (int j = 0; j < shape->n; j++) {
      const JNode *e = shape->items[j];
      char what[32];
      snprintf(what, sizeof what, "shape[%d]", j);
      rt->shape[j].dim = -1;
      if (e->kind == J_STR) {
        if ((rt->shape[j].dim = dim_index(p, e->str)) < 0)
          return bad(L, "'%s' names '%s', which is not a dim", what, e->str);
      } else if ((s = int_value(L, e, what, 1, INT32_MAX, &rt->shape[j].value))) {
        return s;
      }
    }
  }
  L->rec[0] = 0;
  return s;
}

static cake_status load_params(Ld *L, const JNode *params, cake_program *p) {
  static const char *const dtypes[] = {"f32", "i32"};
  cake_status s = alloc_array(L, (void **)&p->params, sizeof(RtParam), params->n);
  for (int i = 0; i < params->n && !s; i++) {
    const JNode *pa, *def;
    const char *name;
    int dtype;
    if ((s = item(L, params, i, "params", &pa)) || (s = get_str(L, pa, "name", &name))) return s;
    snprintf(L->rec, sizeof L->rec, "param '%s'", name);
    if ((s = get_enum(L, pa, "dtype", dtypes, 2, &dtype)) || (s = get(L, pa, "default", J_NUM, 0, &def))) return s;
    if (param_index(p, name) >= 0) return bad(L, "declared twice");
    if (dim_index(p, name) >= 0) return bad(L, "a dim has the same name");
    RtParam *rp = &p->params[p->nparams++];
    if ((s = copy_str(L, &rp->name, name))) return s;
    rp->is_int = dtype == 1;
    rp->has_default = def != NULL;
    if (def && rp->is_int) {
      int64_t v;
      if ((s = int_value(L, def, "default", INT32_MIN, INT32_MAX, &v))) return s;
      rp->def = (double)v;
    } else if (def) {
      if (!(def->num >= -FLT_MAX && def->num <= FLT_MAX))
        return bad(L, "'default' %.15g is not a finite f32", def->num);
      rp->def = def->num;
    }
  }
  L->rec[0] = 0;
  return s;
}

static cake_status load_grid(Ld *L, const JNode *grid, cake_program *p, RtStage *st) {
  static const char *const kinds[] = {"chunks", "docs", "dim", "const"}; /* in RtGridKind order */
  if (grid->n > RT_MAX_AXES) return bad(L, "'grid' has %d axes; at most %d", grid->n, RT_MAX_AXES);
  st->ngrid = grid->n;
  for (int i = 0; i < grid->n; i++) {
    const JNode *g = grid->items[i];
    RtGrid *rg = &st->grid[i];
    int kind;
    cake_status s;
    if (g->kind != J_OBJ) return bad(L, "grid[%d] must be an object, not %s", i, kind_name(g->kind));
    if ((s = get_enum(L, g, "kind", kinds, 4, &kind))) return s;
    rg->kind = (RtGridKind)kind;
    if ((rg->kind == G_CHUNKS || rg->kind == G_DOCS) && p->tokens_dim < 0)
      return bad(L, "a grid over %s needs a dim with role 'tokens'", kinds[kind]);
    if (rg->kind == G_DIM) {
      const char *dn;
      if ((s = get_str(L, g, "name", &dn))) return s;
      if ((rg->dim = dim_index(p, dn)) < 0) return bad(L, "grid[%d] names '%s', which is not a dim", i, dn);
    } else if (rg->kind == G_CONST && (s = get_int(L, g, "value", 1, i == 0 ? INT32_MAX : 65535, &rg->value))) {
      return s;
    }
  }
  return CAKE_OK;
}

/* An argument repeats the dtype (and a tensor's, its shape) of what it
 * passes: when given, they must agree. */
static cake_status arg_agrees(Ld *L, const JNode *a, const cake_program *p, const RtArg *ra, const char *name) {
  const JNode *dt, *shape;
  cake_status s;
  if ((s = get(L, a, "dtype", J_STR, 0, &dt)) || (s = get(L, a, "shape", J_ARR, 0, &shape))) return s;
  const RtTensor *t = ra->what == A_TENSOR ? &p->tensors[ra->index] : NULL;
  const char *want = t                                                     ? cake_dtype_name(t->dtype)
                     : ra->what == A_PARAM && !p->params[ra->index].is_int ? "f32"
                                                                           : "i32";
  if (dt && strcmp(dt->str, want))
    return bad(L, "argument '%s' has dtype '%s'; what it passes is %s", name, dt->str, want);
  int same = !t || !shape || shape->n == t->rank;
  for (int j = 0; t && shape && same && j < shape->n; j++) {
    const JNode *e = shape->items[j];
    RtExtent x = t->shape[j];
    same = x.dim >= 0 ? e->kind == J_STR && !strcmp(e->str, p->dims[x.dim])
                      : e->kind == J_NUM && e->num == (double)x.value;
  }
  return same ? CAKE_OK : bad(L, "argument '%s' has another shape than its tensor", name);
}

static cake_status load_args(Ld *L, const JNode *args, cake_program *p, RtStage *st) {
  static const char *const kinds[] = {"buffer", "saved", "workspace", "parameter", "round"};
  if (args->n > RT_MAX_ARGS) return bad(L, "%d kernel arguments; at most %d are supported", args->n, RT_MAX_ARGS);
  cake_status s = alloc_array(L, (void **)&st->args, sizeof(RtArg), args->n);
  for (int i = 0; i < args->n && !s; i++) {
    const JNode *a = args->items[i];
    const char *name;
    int kind;
    if (a->kind != J_OBJ) return bad(L, "args[%d] must be an object, not %s", i, kind_name(a->kind));
    if ((s = get_enum(L, a, "kind", kinds, L->version >= 5 ? 5 : 4, &kind)) || (s = get_str(L, a, "name", &name)))
      return s;
    RtArg *ra = &st->args[st->nargs++];
    int t = rt_tensor_index(p, name);
    RtRole role = t >= 0 ? p->tensors[t].role : ROLE_IN_;
    ra->what = A_TENSOR;
    ra->index = t;
    if (kind == 4) { /* the round of a kernel in rounds (schema 5): one i32, beside the fragment table */
      const JNode *dt = json_get(a, "dtype");
      ra->what = A_ROUND;
      ra->index = -1;
      if (p->ranks_dim < 0) return bad(L, "a round argument needs a dim with role 'ranks'");
      if (dt && (dt->kind != J_STR || strcmp(dt->str, "i32")))
        return bad(L, "the round argument '%s' is an i32 (its 'dtype' says otherwise)", name);
      for (int j = 0; j + 1 < st->nargs; j++)
        if (st->args[j].what == A_ROUND) return bad(L, "a second round argument '%s'", name);
      int table = 0;
      for (int j = 0; j < args->n; j++) {
        const JNode *o = args->items[j], *on = o->kind == J_OBJ ? json_get(o, "name") : NULL;
        table |= on && on->kind == J_STR && !strcmp(on->str, "frag_table");
      }
      if (!table) return bad(L, "a stage with a round argument takes the 'frag_table' too (its rounds' fragments)");
      continue;
    }
    if (kind == 3) {
      ra->what = dim_index(p, name) >= 0 ? A_DIM : A_PARAM;
      ra->index = ra->what == A_DIM ? dim_index(p, name) : param_index(p, name);
      if (ra->index < 0) return bad(L, "parameter argument '%s' is neither a dim nor a param", name);
    } else if (kind == 2 && t < 0 && (!strcmp(name, "chunk_table") || !strcmp(name, "doc_table"))) {
      ra->what = name[0] == 'c' ? A_CHUNK_TABLE : A_DOC_TABLE;
      if (p->tokens_dim < 0) return bad(L, "argument '%s' needs a dim with role 'tokens'", name);
    } else if (kind == 2 && t < 0 && L->version >= 3 && !strcmp(name, "frag_table")) {
      ra->what = A_FRAG_TABLE;
      if (p->ranks_dim < 0) return bad(L, "argument 'frag_table' needs a dim with role 'ranks'");
    } else if (t < 0) {
      return bad(L, "%s argument '%s' names no tensor", kinds[kind], name);
    } else if (kind == 0   ? role != ROLE_IN_ && role != ROLE_OUT_
               : kind == 1 ? role != ROLE_SAVE_
                           : role != ROLE_TEMP_) {
      return bad(L, "%s argument '%s' is a tensor of another role", kinds[kind], name);
    }
    if ((s = arg_agrees(L, a, p, ra, name))) return s;
  }
  return s;
}

static cake_status load_kernels(Ld *L, const JNode *kernels, RtStage *st) {
  static const char *const formats[] = {"cubin", "ptx"};
  cake_status s = alloc_array(L, (void **)&st->kernels, sizeof(RtKernel), kernels->n);
  for (int i = 0; i < kernels->n && !s; i++) {
    const JNode *k = kernels->items[i];
    const char *target, *sym, *file;
    int format;
    int64_t shared;
    if (k->kind != J_OBJ) return bad(L, "kernels[%d] must be an object, not %s", i, kind_name(k->kind));
    if ((s = get_str(L, k, "target", &target)) || (s = get_str(L, k, "symbol", &sym)) ||
        (s = get_enum(L, k, "format", formats, 2, &format)) || (s = get_str(L, k, "file", &file)) ||
        (s = get_int(L, k, "shared_bytes", 0, RT_MAX_SHARED_BYTES, &shared)))
      return s;
    for (int j = 0; j < st->nkernels; j++)
      if (!strcmp(st->kernels[j].target, target)) return bad(L, "two kernels for target '%s'", target);
    const RtFile *rf = find_file(L->pkg, file);
    if (!rf) return bad(L, "kernel file '%s' is not among the package files", file);
    RtKernel *rk = &st->kernels[st->nkernels++];
    if ((s = copy_str(L, &rk->target, target)) || (s = copy_str(L, &rk->symbol, sym)) ||
        (s = copy_str(L, &rk->format, formats[format])))
      return s;
    rk->image = rf->data;
    rk->len = rf->len;
    rk->shared_bytes = (int)shared;
  }
  return s;
}

static cake_status load_stages(Ld *L, const JNode *stages, cake_program *p) {
  cake_status s = alloc_array(L, (void **)&p->stages, sizeof(RtStage), stages->n);
  for (int i = 0; i < stages->n && !s; i++) {
    const JNode *sj, *block, *grid, *args, *kernels, *fb;
    const char *name;
    int64_t threads, one;
    if ((s = item(L, stages, i, "stages", &sj)) || (s = get_str(L, sj, "name", &name))) return s;
    snprintf(L->rec, sizeof L->rec, "stage '%s'", name);
    if (stage_index(p, name) >= 0) return bad(L, "declared twice");
    RtStage *st = &p->stages[p->nstages++];
    if ((s = copy_str(L, &st->name, name))) return s;
    if ((s = get(L, sj, "block", J_ARR, 1, &block)) || (s = get(L, sj, "grid", J_ARR, 1, &grid)) ||
        (s = get(L, sj, "args", J_ARR, 1, &args)) || (s = get(L, sj, "kernels", J_ARR, 1, &kernels)) ||
        (s = get(L, sj, "fatbin", J_STR, 0, &fb)))
      return s;
    if (block->n != 3) return bad(L, "'block' must have 3 entries, has %d", block->n);
    if ((s = int_value(L, block->items[0], "block[0]", 32, 1024, &threads)) ||
        (s = int_value(L, block->items[1], "block[1]", 1, 1, &one)) ||
        (s = int_value(L, block->items[2], "block[2]", 1, 1, &one)))
      return s;
    if (threads % 32) return bad(L, "'block[0]' is %lld; expected a multiple of 32", (long long)threads);
    st->threads = (int)threads;
    if ((s = load_grid(L, grid, p, st)) || (s = load_args(L, args, p, st)) || (s = load_kernels(L, kernels, st)))
      return s;
    if (fb) {
      const RtFile *rf = find_file(L->pkg, fb->str);
      if (!rf) return bad(L, "fatbin '%s' is not among the package files", fb->str);
      st->fatbin = rf->data;
      st->fatbin_len = rf->len;
    }
  }
  L->rec[0] = 0;
  return s;
}

static int exchange_index(const cake_program *p, const char *name) {
  return rt_find_name(p->exchanges, sizeof(RtExchange), p->nexchanges, name);
}

/* "[T, H, 64]" of a tensor's declared shape. */
static const char *decl_shape(const cake_program *p, const RtTensor *t, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int j = 0; j < t->rank && k < n; j++) {
    if (t->shape[j].dim >= 0) k += (size_t)snprintf(buf + k, n - k, "%s%s", j ? ", " : "", p->dims[t->shape[j].dim]);
    else k += (size_t)snprintf(buf + k, n - k, "%s%lld", j ? ", " : "", (long long)t->shape[j].value);
  }
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}

/* One of the exchange's temps, 'src' or 'dst'. */
static cake_status exchange_temp(Ld *L, const JNode *x, const char *key, const cake_program *p, int *out) {
  const char *name;
  cake_status s = get_str(L, x, key, &name);
  if (s) return s;
  if ((*out = rt_tensor_index(p, name)) < 0) return bad(L, "'%s' names '%s', which is not a tensor", key, name);
  if (p->tensors[*out].role != ROLE_TEMP_)
    return bad(L, "'%s' names '%s', which is not a temp (exchanged tensors live in the workspace)", key, name);
  return CAKE_OK;
}

/* "exchanges" (schema 3, optional; absent in 2): all_gather stages, DST[r, ...] = rank
 * r's SRC: both temps of one dtype, DST's shape the ranks dim followed by
 * SRC's, SRC's without a tokens, docs or chunks dim (every rank sends the
 * same number of bytes). Their names are unique among stages and exchanges. */
/* A halo (schema 4): SRC a token tensor (first extent the tokens dim), DST
 * a temp [F, before + after] + SRC's other extents, one dtype; before and
 * after in [0, chunk], not both 0. */
static cake_status load_halo(Ld *L, const JNode *x, const cake_program *p, RtExchange *rx) {
  int64_t before, after;
  cake_status s;
  if (L->version < 4) return bad(L, "a halo exchange needs schema version 4");
  if ((s = get_int(L, x, "before", 0, p->chunk, &before)) || (s = get_int(L, x, "after", 0, p->chunk, &after))) return s;
  if (!before && !after) return bad(L, "a halo of no tokens before and none after");
  const RtTensor *a = &p->tensors[rx->src], *b = &p->tensors[rx->dst];
  if (a->rank < 1 || a->shape[0].dim < 0 || a->shape[0].dim != p->tokens_dim)
    return bad(L, "'src' '%s' of a halo must have the tokens dim as its first extent", a->name);
  if (b->role != ROLE_TEMP_) return bad(L, "'dst' '%s' is not a temp (exchanged tensors live in the workspace)", b->name);
  int same = a->dtype == b->dtype && b->rank == a->rank + 1 && p->frags_dim >= 0 && b->shape[0].dim == p->frags_dim &&
             b->shape[1].dim < 0 && b->shape[1].value == before + after;
  for (int j = 1; same && j < a->rank; j++)
    same = b->shape[j + 1].dim == a->shape[j].dim && (a->shape[j].dim >= 0 || b->shape[j + 1].value == a->shape[j].value);
  if (!same) {
    char sa[256], sb[256];
    return bad(L, "'dst' '%s' has shape %s; a halo of '%s' %s, %lld tokens before and %lld after, needs its dtype and "
                  "['%s', %lld] followed by its extents after the first",
               b->name, decl_shape(p, b, sb, sizeof sb), a->name, decl_shape(p, a, sa, sizeof sa), (long long)before,
               (long long)after, p->frags_dim >= 0 ? p->dims[p->frags_dim] : "F", (long long)(before + after));
  }
  rx->before = (int)before;
  rx->after = (int)after;
  return CAKE_OK;
}

static cake_status load_exchanges(Ld *L, const JNode *pj, cake_program *p) {
  static const char *const ops[] = {"all_gather", "halo", "send_next", "send_prev"};
  const JNode *xs;
  cake_status s = get(L, pj, "exchanges", J_ARR, 0, &xs); /* absent: none */
  if (s) return s;
  if (xs && L->version < 3) return bad(L, "'exchanges' needs schema version 3");
  int n = xs ? xs->n : 0;
  if ((s = alloc_array(L, (void **)&p->exchanges, sizeof(RtExchange), n))) return s;
  for (int i = 0; i < n; i++) {
    const JNode *x;
    const char *name;
    int op, src, dst;
    if ((s = item(L, xs, i, "exchanges", &x)) || (s = get_str(L, x, "name", &name))) return s;
    snprintf(L->rec, sizeof L->rec, "exchange '%s'", name);
    if (exchange_index(p, name) >= 0) return bad(L, "declared twice");
    if (stage_index(p, name) >= 0) return bad(L, "a stage has the same name");
    if ((s = get_enum(L, x, "op", ops, L->version >= 5 ? 4 : 2, &op))) return s;
    if (p->ranks_dim < 0) return bad(L, "an exchange needs a dim with role 'ranks'");
    if (op == X_HALO) {
      const char *sn;
      if ((s = get_str(L, x, "src", &sn))) return s;
      if ((src = rt_tensor_index(p, sn)) < 0) return bad(L, "'src' names '%s', which is not a tensor", sn);
      if ((s = exchange_temp(L, x, "dst", p, &dst))) return s;
      RtExchange *rx = &p->exchanges[p->nexchanges];
      *rx = (RtExchange){NULL, X_HALO, src, dst, 0, 0};
      if ((s = load_halo(L, x, p, rx)) || (s = copy_str(L, &rx->name, name))) return s;
      p->nexchanges++;
      continue;
    }
    if ((s = exchange_temp(L, x, "src", p, &src)) || (s = exchange_temp(L, x, "dst", p, &dst))) return s;
    const RtTensor *a = &p->tensors[src], *b = &p->tensors[dst];
    if (a->dtype != b->dtype)
      return bad(L, "'src' '%s' is %s but 'dst' '%s' is %s", a->name, cake_dtype_name(a->dtype), b->name,
                 cake_dtype_name(b->dtype));
    for (int j = 0; j < a->rank; j++) {
      int d = a->shape[j].dim;
      if (d >= 0 && (d == p->tokens_dim || d == p->docs_dim || d == p->chunks_dim))
        return bad(L, "'src' '%s' has extent '%s' (axis %d): an exchanged tensor has no tokens, docs or chunks extent "
                      "(per-fragment data has extent '%s')",
                   a->name, p->dims[d], j, p->frags_dim >= 0 ? p->dims[p->frags_dim] : "F");
    }
    int lead = op == X_ALL_GATHER; /* all_gather: [R] first; send_next/send_prev: the source's shape */
    int same = b->rank == a->rank + lead && (!lead || b->shape[0].dim == p->ranks_dim);
    for (int j = 0; same && j < a->rank; j++)
      same = b->shape[j + lead].dim == a->shape[j].dim &&
             (a->shape[j].dim >= 0 || b->shape[j + lead].value == a->shape[j].value);
    if (!same) {
      char sa[256], sb[256];
      if (lead)
        return bad(L, "'dst' '%s' has shape %s; an all_gather of '%s' %s needs ['%s'] followed by its shape", b->name,
                   decl_shape(p, b, sb, sizeof sb), a->name, decl_shape(p, a, sa, sizeof sa), p->dims[p->ranks_dim]);
      return bad(L, "'dst' '%s' has shape %s; a %s of '%s' needs its shape %s", b->name, decl_shape(p, b, sb, sizeof sb),
                 ops[op], a->name, decl_shape(p, a, sa, sizeof sa));
    }
    if (src == dst) return bad(L, "'src' and 'dst' are both '%s': an exchange reads one buffer and fills another", a->name);
    RtExchange *rx = &p->exchanges[p->nexchanges++];
    *rx = (RtExchange){NULL, (RtExchangeOp)op, src, dst, 0, 0};
    if ((s = copy_str(L, &rx->name, name))) return s;
  }
  L->rec[0] = 0;
  return CAKE_OK;
}

/* Does kernel stage k take the round argument? */
static int takes_round(const RtStage *st) {
  for (int a = 0; a < st->nargs; a++)
    if (st->args[a].what == A_ROUND) return 1;
  return 0;
}

/* An entry's "rounds" (schema 5): groups of its stages, in order and
 * disjoint, of a context-parallel program; a kernel stage takes the round
 * argument exactly when it is in a group (its code runs one round's
 * fragments). */
static cake_status load_rounds(Ld *L, const JNode *e, cake_program *p, RtEntry *re) {
  const JNode *rs;
  cake_status s = get(L, e, "rounds", J_ARR, 0, &rs);
  if (s) return s;
  if (rs && L->version < 5) return bad(L, "'rounds' needs schema version 5");
  if (rs && p->ranks_dim < 0) return bad(L, "'rounds' needs a dim with role 'ranks'");
  int n = rs ? rs->n : 0, next = 0;
  if (n && (s = alloc_array(L, (void **)&re->rounds, sizeof(RtRounds), n))) return s;
  for (int i = 0; i < n; i++) {
    const JNode *r = rs->items[i], *rev;
    int64_t first, count;
    if (r->kind != J_OBJ) return bad(L, "rounds[%d] must be an object, not %s", i, kind_name(r->kind));
    if ((s = get_int(L, r, "first", 0, re->n - 1, &first)) || (s = get_int(L, r, "count", 1, re->n, &count)) ||
        (s = get(L, r, "reverse", J_BOOL, 1, &rev)))
      return s;
    if (first < next || first + count > re->n)
      return bad(L, "rounds[%d] (stages %lld to %lld) overlaps another group or passes the %d stages", i,
                 (long long)first, (long long)(first + count - 1), re->n);
    re->rounds[re->nrounds++] = (RtRounds){(int)first, (int)count, rev->boolean};
    next = (int)(first + count);
  }
  for (int j = 0, g = 0; j < re->n; j++) {
    while (g < re->nrounds && re->rounds[g].first + re->rounds[g].count <= j) g++;
    int in = g < re->nrounds && re->rounds[g].first <= j;
    if (RT_IS_EXCHANGE(re->stages[j])) continue;
    const RtStage *st = &p->stages[re->stages[j]];
    if (in != takes_round(st))
      return bad(L, in ? "stage '%s' is in rounds but takes no round argument"
                       : "stage '%s' takes a round argument but is not in rounds",
                 st->name);
  }
  return CAKE_OK;
}

static cake_status load_entries(Ld *L, const JNode *entries, cake_program *p) {
  cake_status s = alloc_array(L, (void **)&p->entries, sizeof(RtEntry), entries->n);
  for (int i = 0; i < entries->n && !s; i++) {
    const JNode *e, *st;
    const char *name;
    if ((s = item(L, entries, i, "entries", &e)) || (s = get_str(L, e, "name", &name))) return s;
    snprintf(L->rec, sizeof L->rec, "entry '%s'", name);
    if ((s = get(L, e, "stages", J_ARR, 1, &st))) return s;
    if (rt_entry_index(p, name) >= 0) return bad(L, "declared twice");
    RtEntry *re = &p->entries[p->nentries++];
    if ((s = copy_str(L, &re->name, name)) || (s = alloc_array(L, (void **)&re->stages, sizeof(int), st->n))) return s;
    for (int j = 0; j < st->n; j++) {
      const JNode *sn = st->items[j];
      if (sn->kind != J_STR) return bad(L, "stages[%d] must be a string, not %s", j, kind_name(sn->kind));
      int k = stage_index(p, sn->str), x = exchange_index(p, sn->str);
      if (k < 0 && x < 0)
        return bad(L, "names an unknown stage '%s'%s", sn->str, p->nexchanges ? " (neither a kernel nor an exchange)" : "");
      re->stages[re->n++] = k >= 0 ? k : RT_EXCHANGE_REF(x);
    }
    if ((s = load_rounds(L, e, p, re))) return s;
  }
  L->rec[0] = 0;
  return s;
}

/* Each temp's "live" (per entry that touches it: the positions of its first
 * and last stage there) and "pinned"; read after the entries. Every stage
 * that takes the temp must lie within its entry's range, so that no
 * manifest can make the plan give one stage's two temps the same bytes. */
static cake_status load_live(Ld *L, const JNode *tensors, cake_program *p) {
  cake_status s = CAKE_OK;
  for (int i = 0; i < p->ntensors && !s; i++) {
    RtTensor *t = &p->tensors[i];
    const JNode *tj = tensors->items[i], *live, *pinned;
    snprintf(L->rec, sizeof L->rec, "tensor '%s'", t->name);
    if (t->role != ROLE_TEMP_) {
      if (json_get(tj, "live") || json_get(tj, "pinned"))
        return bad(L, "'live' and 'pinned' are for temp tensors only");
      continue;
    }
    if ((s = get(L, tj, "live", J_ARR, 1, &live)) || (s = get(L, tj, "pinned", J_BOOL, 1, &pinned))) return s;
    if ((s = alloc_array(L, (void **)&t->live, sizeof(RtLive), p->nentries))) return s;
    t->pinned = pinned->boolean;
    for (int e = 0; e < p->nentries; e++) t->live[e] = (RtLive){-1, -1};
    for (int j = 0; j < live->n; j++) {
      const JNode *r = live->items[j];
      const char *entry;
      int64_t first, last;
      snprintf(L->rec, sizeof L->rec, "tensor '%s' live[%d]", t->name, j);
      if (r->kind != J_OBJ) return bad(L, "must be an object, not %s", kind_name(r->kind));
      if ((s = get_str(L, r, "entry", &entry))) return s;
      int e = rt_entry_index(p, entry);
      if (e < 0) return bad(L, "names an unknown entry '%s'", entry);
      if (t->live[e].first >= 0) return bad(L, "entry '%s' has a second range", entry);
      const RtEntry *re = &p->entries[e];
      if (re->n == 0) return bad(L, "entry '%s' has no stages", entry);
      if ((s = get_int(L, r, "first", 0, re->n - 1, &first)) || (s = get_int(L, r, "last", 0, re->n - 1, &last)))
        return s;
      if (first > last) return bad(L, "'first' is %lld, after 'last' (%lld)", (long long)first, (long long)last);
      t->live[e] = (RtLive){(int)first, (int)last};
    }
    snprintf(L->rec, sizeof L->rec, "tensor '%s'", t->name);
    for (int e = 0; e < p->nentries; e++) {
      const RtEntry *re = &p->entries[e];
      for (int k = 0; k < re->n; k++) {
        int takes = 0;
        const char *sname;
        if (RT_IS_EXCHANGE(re->stages[k])) { /* it reads src and writes dst */
          const RtExchange *x = &p->exchanges[RT_EXCHANGE_INDEX(re->stages[k])];
          takes = x->src == i || x->dst == i;
          sname = x->name;
        } else {
          const RtStage *st = &p->stages[re->stages[k]];
          for (int a = 0; a < st->nargs; a++) takes |= st->args[a].what == A_TENSOR && st->args[a].index == i;
          sname = st->name;
        }
        if (takes && !(t->live[e].first >= 0 && k >= t->live[e].first && k <= t->live[e].last))
          return bad(L, "stage '%s' (position %d of entry '%s') takes the tensor outside its live range", sname, k,
                     re->name);
      }
    }
  }
  L->rec[0] = 0;
  return s;
}

static int prefer_name(void *ctx, const char *name, size_t len, cake_require_value *value);

static int is_dim_name(const cake_program *p, const char *name, size_t len) {
  for (int i = 0; i < p->ndims; i++)
    if (strlen(p->dims[i]) == len && !memcmp(p->dims[i], name, len)) return 1;
  return 0;
}

/* A requirement names dims and parameters (their values are not needed to check its form). */
static int require_name(void *ctx, const char *name, size_t len, cake_require_value *value) {
  const cake_program *p = ctx;
  *value = (cake_require_value){0};
  if (is_dim_name(p, name, len)) return 1;
  for (int i = 0; i < p->nparams; i++)
    if (strlen(p->params[i].name) == len && !memcmp(p->params[i].name, name, len)) {
      value->is_float = !p->params[i].is_int;
      return 1;
    }
  return 0;
}

/* A string of printable ASCII, at most `max` characters. */
static cake_status get_text(Ld *L, const JNode *o, const char *key, size_t max, const char **out) {
  cake_status s = get_str(L, o, key, out);
  if (s) return s;
  size_t n = strlen(*out);
  if (n > max) return bad(L, "'%s' has %zu characters; at most %zu", key, n, max);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)(*out)[i] < 0x20 || (unsigned char)(*out)[i] >= 0x7f)
      return bad(L, "'%s' holds a character that is not printable ASCII", key);
  return CAKE_OK;
}

/* "requires" (optional): each a text and a location for messages, and an
 * expression over the program's dims and parameters that the shared evaluator accepts. */
static cake_status load_requires(Ld *L, const JNode *requires, cake_program *p) {
  int n = requires ? requires->n : 0;
  if (n > RT_MAX_REQUIRES) return bad(L, "%d requirements; at most %d are supported", n, RT_MAX_REQUIRES);
  cake_status s = alloc_array(L, (void **)&p->requires, sizeof(RtRequire), n);
  for (int i = 0; i < n && !s; i++) {
    const JNode *r;
    const char *text, *expr, *loc;
    if ((s = item(L, requires, i, "requires", &r)) || (s = get_text(L, r, "text", RT_MAX_REQUIRE_TEXT, &text)) ||
        (s = get_text(L, r, "expr", RT_MAX_REQUIRE_TEXT, &expr)) || (s = get_text(L, r, "loc", RT_MAX_REQUIRE_LOC, &loc)))
      return s;
    char why[256];
    if (cake_require_eval(expr, require_name, p, 0, why, sizeof why) != CAKE_REQUIRE_TRUE)
      return bad(L, "'expr' is not a requirement over the program's dims and parameters: %s", why);
    RtRequire *rr = &p->requires[p->nrequires++];
    if ((s = copy_str(L, &rr->text, text)) || (s = copy_str(L, &rr->expr, expr)) || (s = copy_str(L, &rr->loc, loc)))
      return s;
  }
  L->rec[0] = 0;
  return s;
}

/* A name of a prefer condition: a dim of the program or a device fact. */
/* A prefer clause names dims and device facts. */
static int prefer_name(void *ctx, const char *name, size_t len, cake_require_value *value) {
  *value = (cake_require_value){0};
  if (len == strlen(CAKE_FACT_SMS) && !memcmp(name, CAKE_FACT_SMS, len)) return 1;
  return is_dim_name(ctx, name, len);
}

/* Each option's "prefer" (optional): clauses with a value among the
 * option's values, a text and location for messages, and a condition over
 * the program's dims and the device facts that the shared evaluator accepts.
 * Read after the dims (the options come first in a program record). */
static cake_status load_prefers(Ld *L, const JNode *options, cake_program *p) {
  cake_status s = CAKE_OK;
  for (int i = 0; options && i < options->n && !s; i++) {
    const JNode *o = options->items[i], *prefer, *values;
    RtOption *ro = &p->options[i];
    snprintf(L->rec, sizeof L->rec, "option '%s'", ro->name);
    if ((s = get(L, o, "prefer", J_ARR, 0, &prefer)) || !prefer) continue;
    if ((s = get(L, o, "values", J_ARR, 0, &values))) return s;
    if (!values) return bad(L, "'prefer' needs the option's 'values'");
    if (prefer->n > RT_MAX_PREFERS) return bad(L, "%d prefer clauses; at most %d are supported", prefer->n, RT_MAX_PREFERS);
    if ((s = alloc_array(L, (void **)&ro->prefer, sizeof(RtPrefer), prefer->n))) return s;
    for (int c = 0; c < prefer->n; c++) {
      const JNode *r = prefer->items[c];
      const char *value, *text, *expr, *loc;
      snprintf(L->rec, sizeof L->rec, "option '%s' prefer[%d]", ro->name, c);
      if (r->kind != J_OBJ) return bad(L, "must be an object, not %s", kind_name(r->kind));
      if ((s = get_str(L, r, "value", &value)) || (s = get_text(L, r, "text", RT_MAX_REQUIRE_TEXT, &text)) ||
          (s = get_text(L, r, "expr", RT_MAX_REQUIRE_TEXT, &expr)) ||
          (s = get_text(L, r, "loc", RT_MAX_REQUIRE_LOC, &loc)))
        return s;
      int known = 0;
      for (int v = 0; v < values->n; v++) known |= !strcmp(values->items[v]->str, value);
      if (!known) return bad(L, "'value' is '%s', which is not among the option's values", value);
      char why[256];
      if (cake_require_eval(expr, prefer_name, p, 0, why, sizeof why) != CAKE_REQUIRE_TRUE)
        return bad(L, "'expr' is not a condition over the program's dims and the device facts: %s", why);
      RtPrefer *rp = &ro->prefer[ro->nprefer++];
      if ((s = copy_str(L, &rp->value, value)) || (s = copy_str(L, &rp->text, text)) ||
          (s = copy_str(L, &rp->expr, expr)) || (s = copy_str(L, &rp->loc, loc)))
        return s;
    }
  }
  L->rec[0] = 0;
  return s;
}

/* Programs of one name are variants: they must declare the same options
 * (names, in order, with the same prefer clauses) and differ in at least
 * one value. */
static cake_status check_variants(Ld *L, const cake_program *p) {
  for (const cake_program *q = L->pkg->programs; q < p; q++) {
    if (strcmp(q->name, p->name) != 0) continue;
    int same = q->noptions == p->noptions, values = 1;
    for (int o = 0; same && o < p->noptions; o++) {
      same = !strcmp(q->options[o].name, p->options[o].name);
      values &= !strcmp(q->options[o].value, p->options[o].value);
    }
    if (!same) return bad(L, "declares other options than an earlier variant of '%s'", p->name);
    for (int o = 0; o < p->noptions; o++) {
      const RtOption *a = &q->options[o], *b = &p->options[o];
      int eq = a->nprefer == b->nprefer;
      for (int c = 0; eq && c < a->nprefer; c++)
        eq = !strcmp(a->prefer[c].value, b->prefer[c].value) && !strcmp(a->prefer[c].expr, b->prefer[c].expr);
      if (!eq)
        return bad(L, "option '%s' has other prefer clauses than in an earlier variant of '%s'", b->name, p->name);
    }
    if (values) return bad(L, "appears twice with the same option values");
  }
  return CAKE_OK;
}

static cake_status load_program(Ld *L, const JNode *pj, cake_program *p) {
  const JNode *variant, *options, *dims, *tensors, *params, *stages, *entries, *requires;
  const char *name;
  cake_status s = get_str(L, pj, "name", &name);
  if (!s) s = get(L, pj, "variant", J_STR, 0, &variant);
  if (s) return s;
  const char *v = variant ? variant->str : "";
  snprintf(L->prog, sizeof L->prog, v[0] ? "program '%s' (%s)" : "program '%s'", name, v);
  L->rec[0] = 0;
  p->pkg = L->pkg;
  p->tokens_dim = p->docs_dim = p->chunks_dim = p->ranks_dim = p->frags_dim = -1;
  p->frag_header = L->version >= 5 ? 2 : 0;
  if ((s = copy_str(L, &p->name, name)) || (s = copy_str(L, &p->variant, v))) return s;
  if ((s = get(L, pj, "options", J_ARR, 0, &options)) || (s = get(L, pj, "dims", J_ARR, 1, &dims)) ||
      (s = get(L, pj, "tensors", J_ARR, 1, &tensors)) || (s = get(L, pj, "params", J_ARR, 1, &params)) ||
      (s = get(L, pj, "stages", J_ARR, 1, &stages)) || (s = get(L, pj, "entries", J_ARR, 1, &entries)) ||
      (s = get(L, pj, "requires", J_ARR, 0, &requires)))
    return s;
  if ((s = load_options(L, options, p)) || (s = load_dims(L, dims, p)) || (s = load_prefers(L, options, p)) ||
      (s = check_variants(L, p)) || (s = load_chunk(L, pj, p)) || (s = load_tensors(L, tensors, p)) ||
      (s = load_params(L, params, p)) || (s = load_requires(L, requires, p)) || /* requirements name params */
      (s = load_stages(L, stages, p)) || (s = load_exchanges(L, pj, p)) || (s = load_entries(L, entries, p)) ||
      (s = load_live(L, tensors, p)))
    return s;
  return CAKE_OK;
}

static cake_status load_manifest(Ld *L, int dirfd, const JNode *root) {
  const JNode *schema, *ver, *files, *programs;
  cake_status s;
  if (root->kind != J_OBJ) return bad(L, "the manifest must be an object, not %s", kind_name(root->kind));
  if ((s = get(L, root, "schema", J_STR, 0, &schema)) || !schema || strcmp(schema->str, "cake.package") != 0)
    return rt_fail(CAKE_ERR_PACKAGE,
                   "%s/manifest.json is not a Cake package manifest (schema \"cake.package\" expected)", L->dir);
  if ((s = get(L, root, "schema_version", J_NUM, 1, &ver))) return s;
  if (!(ver->num >= RT_MIN_SCHEMA_VERSION && ver->num <= RT_SCHEMA_VERSION && ver->num == (int)ver->num))
    return rt_fail(CAKE_ERR_PACKAGE,
                   "%s/manifest.json has schema version %.15g; this runtime reads versions %d to %d (rebuild the "
                   "package with the cakec of this release)",
                   L->dir, ver->num, RT_MIN_SCHEMA_VERSION, RT_SCHEMA_VERSION);
  L->version = (int)ver->num;
  if ((s = get(L, root, "files", J_ARR, 1, &files)) || (s = get(L, root, "programs", J_ARR, 1, &programs))) return s;
  if ((s = load_files(L, dirfd, files))) return s;
  cake_package *pkg = L->pkg;
  if ((s = alloc_array(L, (void **)&pkg->programs, sizeof(cake_program), programs->n))) return s;
  for (int i = 0; i < programs->n; i++) {
    const JNode *pj;
    L->prog[0] = 0;
    if ((s = item(L, programs, i, "programs", &pj))) return s;
    pkg->nprograms++;
    if ((s = load_program(L, pj, &pkg->programs[i]))) return s;
  }
  return CAKE_OK;
}

cake_status cake_package_load(const char *dir, const cake_allocator *alloc, cake_package **out) {
  if (out) *out = NULL;
  if (!dir || !out) return rt_fail(CAKE_ERR_ARGUMENT, "cake_package_load: dir and out are required");
  if (alloc && (!alloc->alloc || !alloc->free))
    return rt_fail(CAKE_ERR_ARGUMENT, "cake_package_load: the allocator needs both alloc and free");
  const cake_allocator *al = alloc ? alloc : rt_default_allocator();
  int dirfd;
  cake_status s = rt_open_dir(dir, &dirfd);
  if (s) return s;
  cake_package *pkg = rt_alloc(al, sizeof *pkg);
  if (!pkg) {
    close(dirfd);
    return CAKE_ERR_MEMORY;
  }
  pkg->al = *al;
  pthread_mutex_init(&pkg->lock, NULL);
  uint8_t *text = NULL;
  size_t len = 0;
  JDoc doc = {al, NULL, 0, 0};
  s = rt_read_file_at(al, dirfd, "manifest.json", RT_MAX_MANIFEST_BYTES, &text, &len);
  if (s && s != CAKE_ERR_MEMORY) s = rt_fail(s, "cannot read %s/manifest.json: %s", dir, cake_last_error());
  if (!s) {
    char err[256];
    JNode *root = json_parse(&doc, (const char *)text, len, err, sizeof err);
    Ld L = {pkg, dir, "", "", 0};
    if (!root)
      s = strstr(err, "out of memory") ? rt_fail(CAKE_ERR_MEMORY, "out of host memory reading %s/manifest.json", dir)
                                       : rt_fail(CAKE_ERR_PACKAGE, "%s/manifest.json is not valid JSON: %s", dir, err);
    else
      s = load_manifest(&L, dirfd, root);
  }
  json_free(&doc);
  rt_free(al, text);
  close(dirfd);
  if (s) {
    cake_package_free(pkg);
    return s;
  }
  *out = pkg;
  return CAKE_OK;
}
