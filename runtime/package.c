/* package.c - names, and the loaded package: freeing it and finding its
 * programs and variants (loading is in manifest.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cake_require.h"
#include "rt.h"

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

int rt_find_name(const void *base, size_t stride, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(*(char *const *)((const char *)base + (size_t)i * stride), name)) return i;
  return -1;
}

int rt_tensor_index(const cake_program *p, const char *name) {
  return rt_find_name(p->tensors, sizeof(RtTensor), p->ntensors, name);
}

int rt_entry_index(const cake_program *p, const char *name) {
  return rt_find_name(p->entries, sizeof(RtEntry), p->nentries, name);
}

void cake_package_free(cake_package *pkg) {
  if (!pkg) return;
  const cake_allocator *al = &pkg->al;
  rt_unload_modules(pkg);
  for (int i = 0; i < pkg->nprograms; i++) {
    cake_program *p = &pkg->programs[i];
    for (int j = 0; j < p->ndims; j++) rt_free(al, p->dims[j]);
    rt_free(al, p->dims);
    for (int j = 0; j < p->ntensors; j++) {
      rt_free(al, p->tensors[j].name);
      rt_free(al, p->tensors[j].live);
    }
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
    for (int j = 0; j < p->nexchanges; j++) rt_free(al, p->exchanges[j].name);
    rt_free(al, p->exchanges);
    for (int j = 0; j < p->nentries; j++) {
      rt_free(al, p->entries[j].name);
      rt_free(al, p->entries[j].stages);
      rt_free(al, p->entries[j].rounds);
    }
    rt_free(al, p->entries);
    for (int j = 0; j < p->noptions; j++) {
      rt_free(al, p->options[j].name);
      rt_free(al, p->options[j].value);
      rt_free(al, p->options[j].def);
      for (int c = 0; c < p->options[j].nprefer; c++) {
        rt_free(al, p->options[j].prefer[c].value);
        rt_free(al, p->options[j].prefer[c].text);
        rt_free(al, p->options[j].prefer[c].expr);
        rt_free(al, p->options[j].prefer[c].loc);
      }
      rt_free(al, p->options[j].prefer);
    }
    rt_free(al, p->options);
    for (int j = 0; j < p->nrequires; j++) {
      rt_free(al, p->requires[j].text);
      rt_free(al, p->requires[j].expr);
      rt_free(al, p->requires[j].loc);
    }
    rt_free(al, p->requires);
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

/* One "name=value" element of an option string. */
typedef struct OptArg {
  const char *name, *value;
  int nlen, vlen;
} OptArg;

static int opt_index(const cake_program *p, const char *name, int len) {
  for (int i = 0; i < p->noptions; i++)
    if ((int)strlen(p->options[i].name) == len && !strncmp(p->options[i].name, name, (size_t)len)) return i;
  return -1;
}

/* Splits `opts` ("a=x,b=y"; NULL or "" for none) into its elements: each
 * must name a distinct option of `p` and give it a non-empty value, so
 * there are at most p->noptions of them. */
static cake_status parse_options(const cake_program *p, const char *opts, OptArg *out, int *n) {
  *n = 0;
  for (const char *q = opts; q && *q;) {
    size_t len = strcspn(q, ",");
    const char *eq = memchr(q, '=', len);
    if (len == 0)
      return rt_fail(CAKE_ERR_ARGUMENT, "options '%s' have an empty element (the form is name=value,name=value)", opts);
    if (!eq || eq == q)
      return rt_fail(CAKE_ERR_ARGUMENT, "option element '%.*s' in '%s' is not of the form name=value", (int)len, q,
                     opts);
    OptArg a = {q, eq + 1, (int)(eq - q), (int)(len - (size_t)(eq - q) - 1)};
    if (opt_index(p, a.name, a.nlen) < 0)
      return rt_fail(CAKE_ERR_ARGUMENT, "program '%s' has no option '%.*s'", p->name, a.nlen, a.name);
    if (!a.vlen) return rt_fail(CAKE_ERR_ARGUMENT, "option '%.*s' has an empty value", a.nlen, a.name);
    for (int i = 0; i < *n; i++)
      if (out[i].nlen == a.nlen && !strncmp(out[i].name, a.name, (size_t)a.nlen))
        return rt_fail(CAKE_ERR_ARGUMENT, "option '%.*s' is given twice in '%s'", a.nlen, a.name, opts);
    out[(*n)++] = a;
    if (!q[len]) break;
    q += len + 1;
    if (!*q)
      return rt_fail(CAKE_ERR_ARGUMENT, "options '%s' have an empty element (the form is name=value,name=value)", opts);
  }
  return CAKE_OK;
}

/* Whether `p` has the values `args` give, and its defaults for the others. */
static int variant_matches(const cake_program *p, const OptArg *args, int n) {
  for (int o = 0; o < p->noptions; o++) {
    const char *want = p->options[o].def;
    int len = (int)strlen(want);
    for (int i = 0; i < n; i++)
      if (opt_index(p, args[i].name, args[i].nlen) == o) want = args[i].value, len = args[i].vlen;
    if ((int)strlen(p->options[o].value) != len || strncmp(p->options[o].value, want, (size_t)len)) return 0;
  }
  return 1;
}

cake_status cake_package_variant(const cake_package *pkg, const char *name, const char *options,
                                 const cake_program **out) {
  if (!pkg || !name || !out) return rt_fail(CAKE_ERR_ARGUMENT, "cake_package_variant: pkg, name and out are required");
  const cake_program *first = NULL;
  for (int i = 0; i < pkg->nprograms && !first; i++)
    if (!strcmp(pkg->programs[i].name, name)) first = &pkg->programs[i];
  if (!first) return rt_fail(CAKE_ERR_NOT_FOUND, "the package has no program '%s'", name);
  OptArg args[RT_MAX_OPTIONS]; /* the variants of a program share its options (checked on load) */
  int n;
  cake_status s = parse_options(first, options, args, &n);
  if (s) return s;
  for (int i = 0; i < pkg->nprograms; i++) {
    const cake_program *p = &pkg->programs[i];
    if (!strcmp(p->name, name) && variant_matches(p, args, n)) {
      *out = p;
      return CAKE_OK;
    }
  }
  return rt_fail(CAKE_ERR_NOT_FOUND, "the package has no variant of '%s' with options '%s'", name, options ? options : "");
}

/* ---- choosing options from the problem ---- */

typedef struct ChooseCtx {
  const cake_program *p;
  const cake_dim_value *dims;
  int ndims;
  int64_t ndocs;
  const cake_device_facts *facts;
  int64_t sms;           /* 0 until first read */
  const char *missing;   /* a dim the condition reads that was not given */
  size_t missing_len;
} ChooseCtx;

int64_t rt_device_sms(const cake_device_facts *facts) {
  if (facts && facts->sms > 0) return facts->sms;
  const char *env = getenv("CAKE_DEVICE_SMS");
  if (env && *env) {
    char *end;
    long long v = strtoll(env, &end, 10);
    if (!*end && v > 0 && v < INT32_MAX) return v;
  }
  int n = 0;
  if (cake_device_sm_count(&n) == CAKE_OK && n > 0) return n;
  return CAKE_DEFAULT_SMS;
}

static int choose_lookup(void *vctx, const char *name, size_t len, cake_require_value *rv) {
  ChooseCtx *c = vctx;
  *rv = (cake_require_value){0};
  int64_t *value = &rv->i;
  if (len == strlen(CAKE_FACT_SMS) && !memcmp(name, CAKE_FACT_SMS, len)) {
    if (!c->sms) c->sms = rt_device_sms(c->facts);
    *value = c->sms;
    return 1;
  }
  for (int i = 0; i < c->ndims; i++)
    if (strlen(c->dims[i].name) == len && !memcmp(c->dims[i].name, name, len)) {
      *value = c->dims[i].value;
      return 1;
    }
  if (c->p->docs_dim >= 0 && strlen(c->p->dims[c->p->docs_dim]) == len && !memcmp(c->p->dims[c->p->docs_dim], name, len)) {
    *value = c->ndocs > 0 ? c->ndocs : 1;
    return 1;
  }
  c->missing = name;
  c->missing_len = len;
  return 0;
}

cake_status cake_package_choose(const cake_package *pkg, const char *name, const char *options,
                                const cake_dim_value *dims, int ndims, int64_t ndocs,
                                const cake_device_facts *facts, const cake_program **out) {
  if (out) *out = NULL;
  if (!pkg || !name || !out || (ndims && !dims) || ndims < 0)
    return rt_fail(CAKE_ERR_ARGUMENT, "cake_package_choose: pkg, name, out (and dims when ndims > 0) are required");
  if (ndocs < 0 || ndocs > RT_MAX_DOCS)
    return rt_fail(CAKE_ERR_ARGUMENT, "cake_package_choose: ndocs is %lld; expected 0 (one document) to %d",
                   (long long)ndocs, RT_MAX_DOCS);
  const cake_program *first = NULL;
  for (int i = 0; i < pkg->nprograms && !first; i++)
    if (!strcmp(pkg->programs[i].name, name)) first = &pkg->programs[i];
  if (!first) return rt_fail(CAKE_ERR_NOT_FOUND, "the package has no program '%s'", name);
  OptArg args[RT_MAX_OPTIONS];
  int n;
  cake_status s = parse_options(first, options, args, &n);
  if (s) return s;
  for (int i = 0; i < ndims; i++) {
    if (!dims[i].name) return rt_fail(CAKE_ERR_ARGUMENT, "cake_package_choose: dims[%d] has no name", i);
    int d = rt_find_name(first->dims, sizeof(char *), first->ndims, dims[i].name);
    if (d < 0) return rt_fail(CAKE_ERR_ARGUMENT, "program '%s' has no dim '%s'", name, dims[i].name);
    if (d == first->docs_dim)
      return rt_fail(CAKE_ERR_ARGUMENT, "dim '%s' is the number of documents: pass it as ndocs", dims[i].name);
    if (dims[i].value < 0 || dims[i].value > INT32_MAX)
      return rt_fail(CAKE_ERR_ARGUMENT, "dim '%s' is %lld; expected a value in [0, 2^31)", dims[i].name,
                     (long long)dims[i].value);
    for (int j = 0; j < i; j++)
      if (!strcmp(dims[j].name, dims[i].name)) return rt_fail(CAKE_ERR_ARGUMENT, "dim '%s' is given twice", dims[i].name);
  }
  /* the options given, then each unset one with prefer clauses: its first clause that holds */
  char chosen[RT_MAX_OPTIONS * 2 * 130 + 64] = "";
  size_t len = 0;
  ChooseCtx ctx = {first, dims, ndims, ndocs, facts, 0, NULL, 0};
  for (int o = 0; o < first->noptions; o++) {
    const RtOption *opt = &first->options[o];
    const char *value = NULL;
    int vlen = 0;
    for (int i = 0; i < n; i++)
      if (opt_index(first, args[i].name, args[i].nlen) == o) value = args[i].value, vlen = args[i].vlen;
    for (int c = 0; !value && c < opt->nprefer; c++) {
      const RtPrefer *r = &opt->prefer[c];
      char why[256];
      int faulted = 0;
      ctx.missing = NULL;
      int e = cake_require_eval_fault(r->expr, choose_lookup, &ctx, 1, why, sizeof why, &faulted);
      if (e == CAKE_REQUIRE_TRUE) value = r->value, vlen = (int)strlen(r->value);
      else if (e == CAKE_REQUIRE_BAD && ctx.missing)
        return rt_fail(CAKE_ERR_ARGUMENT, "option '%s' of '%s': 'prefer %s when %s' (%s) reads dim '%.*s', which was not given",
                       opt->name, name, r->value, r->text, r->loc, (int)ctx.missing_len, ctx.missing);
      else if (e == CAKE_REQUIRE_BAD || faulted)
        return rt_fail(CAKE_ERR_PLAN, "option '%s' of '%s': 'prefer %s when %s' (%s) cannot be evaluated: %s", opt->name,
                       name, r->value, r->text, r->loc, why);
    }
    if (!value) continue; /* its default */
    int w = snprintf(chosen + len, sizeof chosen - len, "%s%s=%.*s", len ? "," : "", opt->name, vlen, value);
    if (w < 0 || (size_t)w >= sizeof chosen - len) return rt_fail(CAKE_ERR_ARGUMENT, "cake_package_choose: options too long");
    len += (size_t)w;
  }
  s = cake_package_variant(pkg, name, chosen, out);
  if (s == CAKE_ERR_NOT_FOUND)
    return rt_fail(s, "the package has no variant of '%s' with options '%s' (chosen from '%s' and the prefer clauses)",
                   name, chosen, options ? options : "");
  return s;
}

const char *cake_program_variant(const cake_program *p) { return p ? p->variant : NULL; }

int cake_package_program_count(const cake_package *pkg) { return pkg ? pkg->nprograms : 0; }
const char *cake_package_program_name(const cake_package *pkg, int i) {
  return pkg && i >= 0 && i < pkg->nprograms ? pkg->programs[i].name : NULL;
}
