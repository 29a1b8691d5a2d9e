/* header.c - typed C launchers for a program (cakec --emit=header).
 *
 * One header-only C file per program: its options as enums, its dims,
 * params and tensors as structs with a field each, and static inline
 * functions that plan a variant and validate or launch each entry through
 * the generic runtime (cake_runtime.h). The structs are the union over the
 * program's variants: a tensor that only some variants have says when it
 * exists, and a binding whose data pointer is 0 is left out, so one struct
 * serves every variant. Nothing here knows any particular program.
 */
#include <ctype.h>
#include <string.h>

#include "header.h"

/* C and C++ keywords: a spec name that is one gets a trailing '_' as a field */
static int c_reserved(const char *s) {
  static const char *const words[] = {
      "auto",      "break",   "case",     "char",    "const",     "continue", "default",   "do",
      "double",    "else",    "enum",     "extern",  "float",     "for",      "goto",      "if",
      "inline",    "int",     "long",     "register", "restrict", "return",   "short",     "signed",
      "sizeof",    "static",  "struct",   "switch",  "typedef",   "union",    "unsigned",  "void",
      "volatile",  "while",   "bool",     "true",    "false",     "class",    "new",       "delete",
      "this",      "template", "operator", "private", "public",   "protected", "namespace", "using",
      "virtual",   "friend",  "try",      "catch",   "throw",     "explicit", "mutable",   "typename",
      "nullptr",   "and",     "or",       "not",     "xor",       "asm",      "export",    "noexcept",
  };
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (!strcmp(words[i], s)) return 1;
  return 0;
}

/* a field name for a spec name: the name itself, or with a trailing '_' */
static void put_field(Buf *b, const char *name) { buf_printf(b, "%s%s", name, c_reserved(name) ? "_" : ""); }

static void put_upper(Buf *b, const char *s) {
  for (; *s; s++) buf_printf(b, "%c", toupper((unsigned char)*s));
}

/* The variants of one program, as the driver analysed them. */
typedef struct Group {
  CirProgram **v;
  int n;
} Group;

static const CirTensor *find_tensor(const CirProgram *p, const char *name) {
  for (int i = 0; i < p->ntensors; i++)
    if (!strcmp(p->tensors[i]->name, name)) return p->tensors[i];
  return NULL;
}

static const char *option_value(const CirProgram *p, const char *name) {
  for (int i = 0; i < p->noptions; i++)
    if (!strcmp(p->options[i].name, name)) return p->options[i].value;
  return NULL;
}

static int bindable(const CirTensor *t) { return t->role == ROLE_IN || t->role == ROLE_OUT; }

static void put_shape(Buf *b, const CirProgram *p, const CirTensor *t) {
  buf_printf(b, "%s[", dtype_name(t->dtype));
  for (int a = 0; a < t->rank; a++) {
    if (a) buf_puts(b, ", ");
    if (t->shape[a].sym >= 0) buf_puts(b, p->dims[t->shape[a].sym].name);
    else buf_printf(b, "%lld", t->shape[a].value);
  }
  buf_puts(b, "]");
}

/* Where flag[i] (per variant) is 1 on exactly the variants with some
 * values of one option, write "OPTION is A or B" and return 1; else 0. */
static int put_condition(Buf *b, const Group *g, const int *flag) {
  const CirProgram *p0 = g->v[0];
  for (int o = 0; o < p0->noptions; o++) {
    const CirOption *opt = &p0->options[o];
    int explains = 1, any = 0;
    for (int v = 0; v < opt->nvalues && explains; v++) {
      int with = 0, without = 0;
      for (int i = 0; i < g->n; i++) {
        const char *val = option_value(g->v[i], opt->name);
        if (!val || strcmp(val, opt->values[v])) continue;
        if (flag[i]) with++;
        else without++;
      }
      if (with && without) explains = 0;
      any |= with > 0;
    }
    if (!explains || !any) continue;
    buf_printf(b, "%s is ", opt->name);
    int first = 1;
    for (int v = 0; v < opt->nvalues; v++) {
      int with = 0;
      for (int i = 0; i < g->n; i++) {
        const char *val = option_value(g->v[i], opt->name);
        with |= val && !strcmp(val, opt->values[v]) && flag[i];
      }
      if (!with) continue;
      buf_printf(b, "%s%s", first ? "" : " or ", opt->values[v]);
      first = 0;
    }
    return 1;
  }
  return 0;
}

/* When a tensor exists in some variants only, say when. */
static void put_presence(Buf *b, const Group *g, const char *name, int *flag) {
  int have = 0;
  for (int i = 0; i < g->n; i++) have += flag[i] = find_tensor(g->v[i], name) != NULL;
  if (have == g->n) return;
  buf_puts(b, "; only when ");
  if (!put_condition(b, g, flag)) buf_puts(b, "the variant has it");
}

/* the tensor names of the group's variants, bindable ones, first seen first */
static int tensor_names(const Group *g, const char **names, int cap) {
  int n = 0;
  for (int i = 0; i < g->n; i++)
    for (int t = 0; t < g->v[i]->ntensors; t++) {
      const CirTensor *x = g->v[i]->tensors[t];
      if (!bindable(x)) continue;
      int seen = 0;
      for (int k = 0; k < n && !seen; k++) seen = !strcmp(names[k], x->name);
      if (!seen && n < cap) names[n++] = x->name;
    }
  return n;
}

static void emit_options(Buf *b, const char *pn, const CirProgram *p) {
  for (int o = 0; o < p->noptions; o++) {
    const CirOption *opt = &p->options[o];
    if (!opt->nprefers) buf_printf(b, "/* option %s (default %s) */\n", opt->name, opt->def);
    else {
      /* DEFAULT leaves the choice to the runtime (cake_package_choose) */
      buf_printf(b, "/* option %s: DEFAULT is chosen by %s_plan from the dims and the device:\n", opt->name, pn);
      for (int r = 0; r < opt->nprefers; r++)
        buf_printf(b, " *   prefer %s when %s  (%s)\n", opt->prefers[r].value, opt->prefers[r].text, opt->prefers[r].where);
      buf_printf(b, " * else %s */\n", opt->def);
    }
    buf_printf(b, "typedef enum %s_%s {\n  ", pn, opt->name);
    put_upper(b, pn);
    buf_puts(b, "_");
    put_upper(b, opt->name);
    buf_puts(b, "_DEFAULT = 0,\n");
    for (int v = 0; v < opt->nvalues; v++) {
      buf_puts(b, "  ");
      put_upper(b, pn);
      buf_puts(b, "_");
      put_upper(b, opt->name);
      buf_puts(b, "_");
      put_upper(b, opt->values[v]);
      buf_printf(b, " = %d,\n", v + 1);
    }
    buf_printf(b, "} %s_%s;\n\n", pn, opt->name);
  }
  buf_printf(b, "/* The variant: every field 0 (the default value) or one of its enum's values. */\n"
                "typedef struct %s_options {\n", pn);
  if (!p->noptions) buf_puts(b, "  int unused; /* the program has no options */\n");
  for (int o = 0; o < p->noptions; o++) {
    buf_printf(b, "  %s_%s ", pn, p->options[o].name);
    put_field(b, p->options[o].name);
    buf_puts(b, ";\n");
  }
  buf_printf(b, "} %s_options;\n\n", pn);
}

static void emit_dims(Buf *b, const char *pn, const Group *g) {
  const CirProgram *p = g->v[0];
  buf_puts(b, "/* The problem's dims (every one is required).");
  /* the spec's relations between them (those of every variant, once each) */
  int any = 0;
  for (int v = 0; v < g->n; v++)
    for (int r = 0; r < g->v[v]->nrequires; r++) {
      const CirRequire *q = &g->v[v]->requires[r];
      int seen = 0;
      for (int w = 0; w < v && !seen; w++)
        for (int x = 0; x < g->v[w]->nrequires && !seen; x++) seen = !strcmp(g->v[w]->requires[x].expr, q->expr);
      for (int x = 0; x < r && !seen; x++) seen = !strcmp(g->v[v]->requires[x].expr, q->expr);
      if (seen) continue;
      /* the text is dims, numbers and operators: nothing that could end a comment */
      buf_printf(b, "%s *   require %s  (%s)",
                 any ? "\n" : "\n * The plan checks the spec's requirements (over dims and params):\n", q->text,
                 q->where);
      any = 1;
    }
  buf_printf(b, "%s*/\ntypedef struct %s_dims {\n", any ? "\n " : " ", pn);
  for (int d = 0; d < p->ndims; d++) {
    const CirDim *dim = &p->dims[d];
    if (dim->role == DIM_DOCS || dim->role == DIM_CHUNKS) continue;
    buf_puts(b, "  int64_t ");
    put_field(b, dim->name);
    buf_printf(b, ";%s\n", dim->role == DIM_TOKENS ? " /* tokens of the packed sequence */" : "");
  }
  if (p->docs_dim >= 0)
    buf_printf(b, "  const int32_t *cu_seqlens; /* host: ndocs + 1 token offsets (0 .. %s); NULL: one document */\n"
                  "  int64_t ndocs;             /* documents (dim %s) */\n",
               p->tokens_dim >= 0 ? p->dims[p->tokens_dim].name : "T", p->dims[p->docs_dim].name);
  if (p->ndims == 0) buf_puts(b, "  int unused; /* the program has no dims */\n");
  buf_printf(b, "} %s_dims;\n\n", pn);
}

static void emit_params(Buf *b, const char *pn, const CirProgram *p) {
  buf_printf(b, "/* Runtime parameters: set = 0 keeps the spec's default. */\ntypedef struct %s_params {\n", pn);
  if (!p->nparams) buf_puts(b, "  int unused; /* the program has no params */\n");
  for (int i = 0; i < p->nparams; i++) {
    const CirParam *x = p->params[i];
    buf_puts(b, "  struct { int set; double value; } ");
    put_field(b, x->name);
    if (x->has_default) buf_printf(b, "; /* %s, default %.9g */\n", dtype_name(x->dtype), x->def);
    else buf_printf(b, "; /* %s, required */\n", dtype_name(x->dtype));
  }
  buf_printf(b, "} %s_params;\n\n", pn);
}

static void emit_tensors(Buf *b, const char *pn, const Group *g, const char **names, int nnames) {
  buf_printf(b,
             "/* The tensors callers bind, by field. A field whose data is 0 is not\n"
             " * bound (absent optional tensors, tensors of other variants). */\n"
             "typedef struct %s_tensors {\n",
             pn);
  if (!nnames) buf_puts(b, "  cake_tensor unused; /* the program binds no tensors */\n");
  int flag[CAKE_MAX_VARIANTS];
  for (int i = 0; i < nnames; i++) {
    for (int v = 0; v < g->n; v++) flag[v] = 0;
    const CirProgram *p = g->v[0];
    const CirTensor *t = NULL;
    for (int v = 0; v < g->n && !t; v++) {
      p = g->v[v];
      t = find_tensor(p, names[i]);
    }
    buf_puts(b, "  cake_tensor ");
    put_field(b, names[i]);
    buf_printf(b, "; /* %s%s ", role_name(t->role), t->optional ? " optional" : "");
    put_shape(b, p, t);
    /* the dtype or shape may differ between variants: say when */
    Buf first, other;
    buf_init(&first);
    buf_init(&other);
    put_shape(&first, p, t);
    for (int v = 0; v < g->n; v++) {
      const CirTensor *u = find_tensor(g->v[v], names[i]);
      if (!u) continue;
      Buf x;
      buf_init(&x);
      put_shape(&x, g->v[v], u);
      if (strcmp(x.data, first.data) && !other.len) buf_puts(&other, x.data);
      flag[v] = other.len && !strcmp(x.data, other.data);
      buf_free(&x);
    }
    if (other.len) {
      buf_printf(b, ", %s when ", other.data);
      if (!put_condition(b, g, flag)) buf_puts(b, "the variant says so");
    }
    buf_free(&first);
    buf_free(&other);
    put_presence(b, g, names[i], flag);
    buf_puts(b, " */\n");
  }
  buf_printf(b, "} %s_tensors;\n\n", pn);
}

static void emit_plan(Buf *b, const char *pn, const Group *g) {
  const CirProgram *p = g->v[0];
  /* the variant string */
  buf_printf(b,
             "/* The options as cake_package_choose takes them (\"gate=safe,...\"); an option\n"
             " * left at DEFAULT that has prefer clauses is left out (chosen by them). */\n"
             "static inline cake_status %s_variant_name(const %s_options *o, char *buf, size_t n) {\n"
             "  size_t len = 0;\n"
             "  if (!buf || n == 0) return cake_fail(CAKE_ERR_ARGUMENT, \"%s_variant_name: no buffer\");\n"
             "  buf[0] = 0;\n",
             pn, pn, pn);
  if (p->noptions) buf_puts(b, "  int w;\n");
  else buf_puts(b, "  (void)o;\n  (void)len;\n");
  for (int i = 0; i < p->noptions; i++) {
    const CirOption *opt = &p->options[i];
    buf_printf(b, "  {\n    static const char *const values[] = {\"%s\"", opt->def);
    for (int v = 0; v < opt->nvalues; v++) buf_printf(b, ", \"%s\"", opt->values[v]);
    buf_printf(b, "};\n    int k = o ? (int)o->");
    put_field(b, opt->name);
    buf_printf(b,
               " : 0;\n"
               "    if (k < 0 || k > %d) return cake_fail(CAKE_ERR_ARGUMENT, \"%s: option %s is not one of its enum's values\");\n",
               opt->nvalues, pn, opt->name);
    if (opt->nprefers) buf_puts(b, "    if (k) { /* DEFAULT: left to the prefer clauses */\n");
    else buf_puts(b, "    {\n");
    buf_printf(b,
               "      w = snprintf(buf + len, n - len, \"%%s%s=%%s\", len ? \",\" : \"\", values[k]);\n"
               "      if (w < 0 || (size_t)w >= n - len) return cake_fail(CAKE_ERR_ARGUMENT, \"%s_variant_name: the buffer is too small\");\n"
               "      len += (size_t)w;\n"
               "    }\n"
               "  }\n",
               opt->name, pn);
  }
  buf_puts(b, "  return CAKE_OK;\n}\n\n");

  buf_printf(b,
             "/* Plan the variant of `o` (NULL: defaults) for dims `d`, with params `p`\n"
             " * (NULL: defaults). The plan is finalized; free it with cake_plan_free. */\n"
             "static inline cake_status %s_plan(const cake_package *pkg, const %s_options *o, const %s_dims *d,\n"
             "                                  const %s_params *p, cake_plan **out) {\n"
             "  char variant[1024];\n"
             "  const cake_program *prog;\n"
             "  cake_plan *plan;\n"
             "  cake_status s;\n"
             "  if (out) *out = NULL;\n"
             "  if (!pkg || !d || !out) return cake_fail(CAKE_ERR_ARGUMENT, \"%s_plan: pkg, d and out are required\");\n"
             "  if ((s = %s_variant_name(o, variant, sizeof variant))) return s;\n",
             pn, pn, pn, pn, pn, pn);
  /* the variant: options given, the others by their prefer clauses (from the dims, the
   * documents and the device) or their defaults */
  int nd = 0;
  for (int i = 0; i < p->ndims; i++) nd += p->dims[i].role != DIM_DOCS && p->dims[i].role != DIM_CHUNKS;
  if (nd) {
    buf_puts(b, "  const cake_dim_value dims[] = {");
    for (int i = 0, k = 0; i < p->ndims; i++) {
      const CirDim *dim = &p->dims[i];
      if (dim->role == DIM_DOCS || dim->role == DIM_CHUNKS) continue;
      buf_printf(b, "%s{\"%s\", d->", k++ ? ", " : "", dim->name);
      put_field(b, dim->name);
      buf_puts(b, "}");
    }
    buf_puts(b, "};\n");
  }
  buf_printf(b,
             "  if ((s = cake_package_choose(pkg, \"%s\", variant, %s, %d, %s, NULL, &prog))) return s;\n"
             "  if ((s = cake_plan_create(prog, &plan))) return s;\n",
             p->name, nd ? "dims" : "NULL", nd, p->docs_dim >= 0 ? "d->cu_seqlens ? d->ndocs : 0" : "0");
  if (!p->nparams) buf_puts(b, "  (void)p;\n");
  for (int i = 0; i < p->ndims; i++) {
    const CirDim *dim = &p->dims[i];
    if (dim->role == DIM_DOCS || dim->role == DIM_CHUNKS) continue;
    buf_printf(b, "  if (!s) s = cake_plan_set_dim(plan, \"%s\", d->", dim->name);
    put_field(b, dim->name);
    buf_puts(b, ");\n");
  }
  if (p->docs_dim >= 0) buf_puts(b, "  if (!s && d->cu_seqlens) s = cake_plan_set_docs(plan, d->cu_seqlens, d->ndocs);\n");
  for (int i = 0; i < p->nparams; i++) {
    buf_puts(b, "  if (!s && p && p->");
    put_field(b, p->params[i]->name);
    buf_printf(b, ".set) s = cake_plan_set_param(plan, \"%s\", p->", p->params[i]->name);
    put_field(b, p->params[i]->name);
    buf_puts(b, ".value);\n");
  }
  buf_puts(b,
           "  if (!s) s = cake_plan_finalize(plan);\n"
           "  if (s) {\n"
           "    cake_plan_free(plan);\n"
           "    return s;\n"
           "  }\n"
           "  *out = plan;\n"
           "  return CAKE_OK;\n"
           "}\n\n");
}

static void emit_entries(Buf *b, const char *pn, const Group *g, const char **names, int nnames) {
  buf_printf(b, "static inline int %s_bindings_(const %s_tensors *t, cake_binding *b) {\n  int n = 0;\n", pn, pn);
  if (!nnames) buf_puts(b, "  (void)t;\n  (void)b;\n");
  for (int i = 0; i < nnames; i++) {
    buf_puts(b, "  if (t->");
    put_field(b, names[i]);
    buf_printf(b, ".data) {\n    b[n].name = \"%s\";\n    b[n].tensor = t->", names[i]);
    put_field(b, names[i]);
    buf_puts(b, ";\n    n++;\n  }\n");
  }
  buf_puts(b, "  return n;\n}\n\n");
  /* entries: the union over variants, first seen first */
  const char *entries[256];
  int ne = 0;
  for (int v = 0; v < g->n; v++)
    for (int e = 0; e < g->v[v]->nentries; e++) {
      const char *en = g->v[v]->entries[e]->name;
      int seen = 0;
      for (int k = 0; k < ne && !seen; k++) seen = !strcmp(entries[k], en);
      if (!seen && ne < 256) entries[ne++] = en;
    }
  int cap = nnames ? nnames : 1;
  for (int e = 0; e < ne; e++) {
    buf_printf(b, "/* entry %s:", entries[e]);
    const CirEntry *ce = NULL;
    for (int v = 0; v < g->n && !ce; v++)
      for (int k = 0; k < g->v[v]->nentries; k++)
        if (!strcmp(g->v[v]->entries[k]->name, entries[e])) ce = g->v[v]->entries[k];
    for (int s = 0; s < ce->nstages; s++) buf_printf(b, " %s", ce->stages[s]->name);
    buf_printf(b,
               " */\n"
               "static inline cake_status %s_validate_%s(const cake_plan *plan, const %s_tensors *t) {\n"
               "  cake_binding b[%d];\n"
               "  if (!plan || !t) return cake_fail(CAKE_ERR_ARGUMENT, \"%s_validate_%s: plan and t are required\");\n"
               "  return cake_validate(plan, \"%s\", b, %s_bindings_(t, b));\n"
               "}\n\n"
               "static inline cake_status %s_launch_%s(cake_plan *plan, const %s_tensors *t, uint64_t workspace,\n"
               "                                       size_t workspace_bytes, uint64_t saved, size_t saved_bytes,\n"
               "                                       void *stream) {\n"
               "  cake_binding b[%d];\n"
               "  if (!plan || !t) return cake_fail(CAKE_ERR_ARGUMENT, \"%s_launch_%s: plan and t are required\");\n"
               "  return cake_launch(plan, \"%s\", b, %s_bindings_(t, b), workspace, workspace_bytes, saved,\n"
               "                     saved_bytes, stream);\n"
               "}\n\n",
               pn, entries[e], pn, cap, pn, entries[e], entries[e], pn, pn, entries[e], pn, cap, pn, entries[e],
               entries[e], pn);
  }
}

static void emit_program(Buf *b, const Group *g) {
  const CirProgram *p = g->v[0];
  const char *pn = p->name;
  const char *names[512];
  int nnames = tensor_names(g, names, 512);
  buf_printf(b, "/* %s.h - typed launchers for the Cake program %s.\n", pn, pn);
  buf_printf(b, " * Generated by cakec --emit=header from %s; do not edit.\n", p->src->name);
  buf_printf(b,
             " *\n"
             " *   %s_options o = {0};                 (every option at its default)\n"
             " *   %s_dims d = {...};  cake_plan *plan;\n"
             " *   %s_plan(pkg, &o, &d, NULL, &plan);\n"
             " *   cake_plan_workspace_bytes(plan, &ws);  cake_plan_saved_bytes(plan, &sb);\n"
             " *   %s_tensors t = {...};                (device tensors by field)\n"
             " *   %s_launch_<entry>(plan, &t, workspace, ws, saved, sb, stream);\n"
             " * Every function returns the runtime's status; cake_last_error() says why.\n"
             " */\n",
             pn, pn, pn, pn, pn);
  Buf guard;
  buf_init(&guard);
  buf_puts(&guard, "CAKE_GEN_");
  put_upper(&guard, pn);
  buf_printf(b, "#ifndef %s_H\n#define %s_H\n\n#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n\n"
                "#include \"cake_runtime.h\"\n\n",
             guard.data, guard.data);
  emit_options(b, pn, p);
  emit_dims(b, pn, g);
  emit_params(b, pn, p);
  emit_tensors(b, pn, g, names, nnames);
  emit_plan(b, pn, g);
  emit_entries(b, pn, g, names, nnames);
  buf_printf(b, "#endif /* %s_H */\n", guard.data);
  buf_free(&guard);
}

void emit_headers(Buf *out, CirProgram **progs, int n, Arena *arena) {
  int *done = arena_alloc(arena, sizeof(int) * (size_t)(n + 1));
  CirProgram **v = arena_alloc(arena, sizeof(CirProgram *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) done[i] = 0;
  int first = 1;
  for (int i = 0; i < n; i++) {
    if (done[i]) continue;
    Group g = {v, 0};
    for (int j = i; j < n; j++)
      if (!done[j] && !strcmp(progs[j]->name, progs[i]->name)) {
        done[j] = 1;
        v[g.n++] = progs[j];
      }
    if (!first) buf_puts(out, "\n");
    first = 0;
    emit_program(out, &g);
  }
}
