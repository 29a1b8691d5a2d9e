/* fuzz_package.c - libFuzzer harness for the runtime's package loader.
 *
 * Each input is a manifest.json. It is written into a temporary package
 * directory together with the files its "files" list names, then loaded
 * with cake_package_load() (cake_runtime.h); a package that loads is used
 * the way a host would: every program (and variant) is looked up, planned
 * with a few dims, documents and parameters, finalized, and bindings built
 * from the manifest's tensors are validated; the KDA programs are planned
 * too, through their typed launchers (build/gen/kda_fwd.h, kda_train.h). Besides the sanitizers, the harness checks the contract: a failure
 * always has a message, and every planned item lies inside its area. CAKE_FUZZ_VERBOSE=1 prints each load's status.
 *
 * Files: a listed file holds "cake fuzz stub: PATH\n" (tests/fuzz/
 * make_corpus.py writes the seeds' sha256 and sizes for these contents), so
 * that inputs get past the integrity check and reach everything after it.
 *
 * The custom mutator keeps inputs mostly JSON: it parses the input (cJSON),
 * changes one node (interesting numbers and strings, null/bool/[]/{}, a
 * deleted, duplicated or swapped member, a subtree copied from elsewhere, a
 * number nudged) and prints it back; one time in four, and whenever the input
 * is not JSON, it leaves the bytes to libFuzzer's own mutations.
 * Build: cmake -DCAKE_FUZZ=ON with clang; run: scripts/fuzz.sh. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cake_runtime.h"
#include "kda_fwd.h"
#include "kda_train.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

enum { MAX_FILES = 64, MAX_PATH_LEN = 128, MAX_BIND = 64 };

static char dir[256];
static int verbose; /* CAKE_FUZZ_VERBOSE=1: each load's status on stderr */
static char written[MAX_FILES][MAX_PATH_LEN + 1];
static int nwritten;

static void remove_written(void) {
  char p[512];
  for (int i = 0; i < nwritten; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, written[i]);
    unlink(p);
  }
  nwritten = 0;
  snprintf(p, sizeof p, "%s/manifest.json", dir);
  unlink(p);
}

static void cleanup(void) {
  remove_written();
  rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *t = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/cake-fuzz-package-XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(dir)) {
    perror("fuzz_package: mkdtemp");
    abort();
  }
  atexit(cleanup);
  const char *v = getenv("CAKE_FUZZ_VERBOSE");
  verbose = v && *v && strcmp(v, "0");
  return 0;
}

static void write_file(const char *name, const void *data, size_t n) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "wb");
  if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
    fprintf(stderr, "fuzz_package: cannot write %s: %s\n", p, strerror(errno));
    abort();
  }
}

/* A plain file name: the stub is written only for these (no directories). */
static int plain_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > MAX_PATH_LEN || !strcmp(s, ".") || !strcmp(s, "..") || !strcmp(s, "manifest.json")) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
          c == '-'))
      return 0;
  }
  return 1;
}

static void write_stubs(const cJSON *m) {
  const cJSON *files = cJSON_GetObjectItemCaseSensitive(m, "files"), *f;
  cJSON_ArrayForEach(f, files) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(f, "path");
    if (!cJSON_IsString(p) || !plain_name(p->valuestring) || nwritten == MAX_FILES) continue;
    int seen = 0;
    for (int i = 0; i < nwritten; i++) seen |= !strcmp(written[i], p->valuestring);
    if (seen) continue;
    char body[MAX_PATH_LEN + 64];
    int n = snprintf(body, sizeof body, "cake fuzz stub: %s\n", p->valuestring);
    write_file(p->valuestring, body, (size_t)n);
    strcpy(written[nwritten++], p->valuestring);
  }
}

/* ---- using a loaded package ---------------------------------------------- */

static const cJSON *manifest_program(const cJSON *m, const char *name, const char *variant) {
  const cJSON *p;
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(m, "programs")) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "name"), *v = cJSON_GetObjectItemCaseSensitive(p, "variant");
    if (cJSON_IsString(n) && !strcmp(n->valuestring, name) &&
        (!variant || (cJSON_IsString(v) && !strcmp(v->valuestring, variant))))
      return p;
  }
  return NULL;
}

static cake_dtype dtype_of(const cJSON *t) {
  const cJSON *d = cJSON_GetObjectItemCaseSensitive(t, "dtype");
  const char *s = cJSON_IsString(d) ? d->valuestring : "";
  if (!strcmp(s, "f16")) return CAKE_F16;
  if (!strcmp(s, "f32")) return CAKE_F32;
  if (!strcmp(s, "i32")) return CAKE_I32;
  return CAKE_BF16;
}

static void check_item(const cake_plan *plan, const char *name, size_t off, size_t by, size_t area) {
  if (off > area || by > area - off) {
    fprintf(stderr, "fuzz_package: item '%s' at %zu, %zu bytes, outside its area of %zu bytes\n", name, off, by, area);
    abort();
  }
}

static void use_plan(cake_plan *plan, const cJSON *mp, int round) {
  static const int64_t tokens[] = {100, 4096, 1, 0};
  static const int64_t sizes[] = {2, 1, 16, 3};
  const cJSON *d;
  cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(mp, "dims")) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(d, "name"), *r = cJSON_GetObjectItemCaseSensitive(d, "role");
    if (!cJSON_IsString(n)) continue;
    const char *role = cJSON_IsString(r) ? r->valuestring : "";
    if (!strcmp(role, "tokens")) cake_plan_set_dim(plan, n->valuestring, tokens[round]);
    else if (!strcmp(role, "size")) cake_plan_set_dim(plan, n->valuestring, sizes[round]);
    else if (round == 3) cake_plan_set_dim(plan, n->valuestring, 5); /* derived dims: refused or used */
  }
  if (round == 0) {
    int32_t cu[4] = {0, 30, 31, 100};
    cake_plan_set_docs(plan, cu, 3);
  } else if (round == 2) {
    int32_t cu[3] = {0, 1, 0};
    cake_plan_set_docs(plan, cu, 2);
  }
  const cJSON *p;
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(mp, "params")) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "name");
    static const double vals[] = {0.5, -3, 1e30, 2147483648.0};
    if (cJSON_IsString(n)) cake_plan_set_param(plan, n->valuestring, vals[round]);
  }
  if (cake_plan_finalize(plan) != CAKE_OK) return;
  size_t ws = 0, sv = 0, off, by;
  cake_plan_workspace_bytes(plan, &ws);
  cake_plan_saved_bytes(plan, &sv);
  (void)cake_plan_chunk_count(plan);
  /* every item lies inside its area */
  if (cake_plan_item(plan, "chunk_table", &off, &by) == CAKE_OK) check_item(plan, "chunk_table", off, by, ws);
  if (cake_plan_item(plan, "doc_table", &off, &by) == CAKE_OK) check_item(plan, "doc_table", off, by, ws);

  /* bindings for every tensor, shaped from the plan's dims */
  cake_binding b[MAX_BIND];
  int nb = 0;
  const cJSON *t;
  cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(mp, "tensors")) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(t, "name");
    if (!cJSON_IsString(n) || nb == MAX_BIND) continue;
    if (cake_plan_item(plan, n->valuestring, &off, &by) == CAKE_OK) {
      const cJSON *r = cJSON_GetObjectItemCaseSensitive(t, "role");
      check_item(plan, n->valuestring, off, by, cJSON_IsString(r) && !strcmp(r->valuestring, "save") ? sv : ws);
    }
    cake_binding *x = &b[nb];
    memset(x, 0, sizeof *x);
    x->name = n->valuestring;
    x->tensor.data = 0x100000ull * (uint64_t)(nb + 1);
    x->tensor.dtype = dtype_of(t);
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(t, "shape")) {
      if (x->tensor.rank == CAKE_MAX_RANK) break;
      int64_t v = 1;
      if (cJSON_IsNumber(e)) v = (int64_t)(e->valuedouble > 0 && e->valuedouble < 1e9 ? e->valuedouble : 1);
      else if (cJSON_IsString(e)) cake_plan_get_dim(plan, e->valuestring, &v);
      x->tensor.shape[x->tensor.rank++] = v;
    }
    nb++;
  }
  if (round == 1 && nb > 0) b[nb - 1].tensor.shape[0] += 1; /* one wrong extent */
  if (round == 2 && nb > 1) b[0].name = b[1].name;         /* one bound twice */
  const cJSON *en;
  cJSON_ArrayForEach(en, cJSON_GetObjectItemCaseSensitive(mp, "entries")) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(en, "name");
    if (cJSON_IsString(n)) cake_validate(plan, n->valuestring, b, nb);
  }
  cake_validate(plan, "no such entry", b, nb);
}

static void use_program(const cake_package *pkg, const cake_program *prog, const cJSON *m, const char *name) {
  const char *variant = cake_program_variant(prog);
  const cJSON *mp = manifest_program(m, name, variant);
  if (!mp) mp = manifest_program(m, name, NULL);
  for (int round = 0; round < 4; round++) {
    cake_plan *plan = NULL;
    if (cake_plan_create(prog, &plan) != CAKE_OK) return;
    use_plan(plan, mp, round);
    cake_plan_free(plan);
  }
}

static void use_package(const cake_package *pkg, const cJSON *m) {
  int np = cake_package_program_count(pkg);
  for (int i = 0; i < np; i++) {
    const char *name = cake_package_program_name(pkg, i);
    const cake_program *prog = NULL;
    if (!name) abort(); /* in range: a name */
    if (cake_package_program(pkg, name, &prog) == CAKE_OK) use_program(pkg, prog, m, name);
    if (cake_package_variant(pkg, name, NULL, &prog) == CAKE_OK) use_program(pkg, prog, m, name);
    /* the variant its prefer clauses choose for a problem (dims from the manifest) */
    const cJSON *mp = manifest_program(m, name, NULL), *d;
    cake_dim_value dims[8];
    int nd = 0;
    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(mp, "dims")) {
      const cJSON *dn = cJSON_GetObjectItemCaseSensitive(d, "name"), *r = cJSON_GetObjectItemCaseSensitive(d, "role");
      const char *role = cJSON_IsString(r) ? r->valuestring : "";
      if (!cJSON_IsString(dn) || nd == 8 || !strcmp(role, "docs") || !strcmp(role, "chunks")) continue;
      dims[nd].name = dn->valuestring;
      dims[nd].value = !strcmp(role, "tokens") ? 4096 : 16;
      nd++;
    }
    for (int sms = 1; sms <= 132; sms += 131) {
      cake_device_facts facts = {.sms = sms};
      if (cake_package_choose(pkg, name, NULL, dims, nd, 2, &facts, &prog) == CAKE_OK) use_program(pkg, prog, m, name);
    }
    /* every variant the manifest lists, by its options */
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(m, "programs")) {
      const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "name"), *v = cJSON_GetObjectItemCaseSensitive(p, "variant");
      if (cJSON_IsString(n) && cJSON_IsString(v) && !strcmp(n->valuestring, name) &&
          cake_package_variant(pkg, name, v->valuestring, &prog) == CAKE_OK)
        use_program(pkg, prog, m, name);
    }
  }
  (void)cake_package_program_name(pkg, np);
  (void)cake_package_program_name(pkg, -1);
  static const kda_fwd_gate gates[] = {KDA_FWD_GATE_SAFE, KDA_FWD_GATE_SOFTPLUS, KDA_FWD_GATE_EXTERNAL};
  static const kda_train_gate train_gates[] = {KDA_TRAIN_GATE_SAFE, KDA_TRAIN_GATE_SOFTPLUS, KDA_TRAIN_GATE_EXTERNAL};
  for (int g = 0; g < 3; g++) {
    int32_t cu[3] = {0, 64, 200};
    kda_fwd_options o = {.gate = gates[g], .qk_norm = g != 1 ? KDA_FWD_QK_NORM_TRUE : KDA_FWD_QK_NORM_FALSE,
                         .beta_logits = KDA_FWD_BETA_LOGITS_TRUE};
    kda_fwd_dims d = {.T = 200, .H = 2, .HV = g == 1 ? 4 : 2, .cu_seqlens = g == 2 ? cu : NULL, .ndocs = 2};
    cake_plan *plan = NULL;
    if (kda_fwd_plan(pkg, &o, &d, NULL, &plan) == CAKE_OK) cake_plan_free(plan);
    kda_train_options to = {.gate = train_gates[g],
                            .qk_norm = g != 1 ? KDA_TRAIN_QK_NORM_TRUE : KDA_TRAIN_QK_NORM_FALSE,
                            .beta_logits = KDA_TRAIN_BETA_LOGITS_TRUE,
                            .save = g ? KDA_TRAIN_SAVE_STATES : KDA_TRAIN_SAVE_CKPT};
    kda_train_dims td = {.T = 200, .H = 2, .HV = g == 1 ? 4 : 2, .cu_seqlens = g == 1 ? cu : NULL, .ndocs = 2};
    plan = NULL;
    if (kda_train_plan(pkg, &to, &td, NULL, &plan) == CAKE_OK) cake_plan_free(plan);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  remove_written();
  write_file("manifest.json", data, size);
  cJSON *m = cJSON_ParseWithLength((const char *)data, size); /* NULL: not JSON to cJSON */
  write_stubs(m);
  cake_package *pkg = NULL;
  cake_status s = cake_package_load(dir, NULL, &pkg);
  if (verbose)
    fprintf(stderr, "fuzz_package: %s%s%s\n", cake_status_name(s), s ? ": " : "", s ? cake_last_error() : "");
  if (s == CAKE_OK) {
    if (!pkg) abort();
    use_package(pkg, m);
    cake_package_free(pkg);
  } else {
    const char *msg = cake_last_error();
    if (!msg || !msg[0] || pkg) {
      fprintf(stderr, "fuzz_package: %s with %s\n", cake_status_name(s), pkg ? "a package" : "an empty message");
      abort();
    }
  }
  cJSON_Delete(m);
  return 0;
}

/* ---- the structure-aware mutator ----------------------------------------- */

static uint64_t rng;
static unsigned rnd(unsigned n) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return n ? (unsigned)((rng >> 33) % n) : 0;
}

enum { MAX_NODES = 4096 };
static cJSON *nodes[MAX_NODES];
static int nnodes;

static void collect(cJSON *n) {
  if (nnodes == MAX_NODES) return;
  nodes[nnodes++] = n;
  for (cJSON *c = n->child; c; c = c->next) collect(c);
}

static const char *const raw_numbers[] = {
    "0", "-1", "1", "2", "15", "16", "17", "32", "64", "128", "255", "256", "257", "1024", "1025", "232448", "232449",
    "2147483647", "2147483648", "-2147483648", "-2147483649", "4294967296", "9007199254740993", "9223372036854775807",
    "18446744073709551616", "99999999999999999999", "1e308", "1e999", "-1e999", "0.5", "-0.5", "-0", "1e-320", "64.0",
    "6.4e1"};
static const char *const strings[] = {
    "", "T", "H", "N", "x", "z", "w", "main", "fwd", "first", "chunks", "nchunks", "tokens", "docs", "size", "in",
    "out", "temp", "save", "bf16", "f16", "f32", "i32", "i64", "buffer", "workspace", "parameter", "chunk_table",
    "doc_table", "dim", "const", "cubin", "ptx", "fatbin", "sm_90a", "sm_100a", "sm_107a", "sm_100f", "manifest.json",
    "../manifest.json", "/etc/passwd", "a//b", "./a", "a/../b", "cake.package", "safe", "softplus", "gate=safe",
    "true", "false", "v16", "v32"};

static cJSON *random_value(void) {
  switch (rnd(6)) {
    case 0: return cJSON_CreateRaw(raw_numbers[rnd(sizeof raw_numbers / sizeof *raw_numbers)]);
    case 1: return cJSON_CreateString(strings[rnd(sizeof strings / sizeof *strings)]);
    case 2: return rnd(2) ? cJSON_CreateNull() : cJSON_CreateBool(rnd(2));
    case 3: return rnd(2) ? cJSON_CreateArray() : cJSON_CreateObject();
    case 4: {
      char buf[600];
      unsigned n = 1 + rnd(3) * 250;
      memset(buf, 'A' + rnd(26), n);
      buf[n] = 0;
      return cJSON_CreateString(buf);
    }
    default: return cJSON_CreateRaw(rnd(2) ? "\"\\u0000\"" : "\"\\ud800\"");
  }
}

/* The parent of nodes[i] (NULL for the root). */
static cJSON *parent_of(int i) {
  for (int j = 0; j < nnodes; j++)
    for (cJSON *c = nodes[j]->child; c; c = c->next)
      if (c == nodes[i]) return nodes[j];
  return NULL;
}

static void replace(cJSON *parent, cJSON *old, cJSON *with) {
  if (with && old->string) {
    with->string = strdup(old->string);
  }
  cJSON_ReplaceItemViaPointer(parent, old, with);
}

static int mutate_tree(cJSON *root) {
  nnodes = 0;
  collect(root);
  if (nnodes < 2) return 0;
  int i = 1 + (int)rnd((unsigned)nnodes - 1);
  cJSON *n = nodes[i], *parent = parent_of(i);
  if (!parent) return 0;
  switch (rnd(8)) {
    case 0:
    case 1: replace(parent, n, random_value()); return 1;
    case 2: cJSON_DetachItemViaPointer(parent, n); cJSON_Delete(n); return 1;
    case 3: { /* duplicate: the same member twice (a duplicate key in an object) */
      cJSON *d = cJSON_Duplicate(n, 1);
      if (!d) return 0;
      if (n->string && !d->string) d->string = strdup(n->string);
      d->next = n->next;
      d->prev = n;
      if (n->next) n->next->prev = d;
      else parent->child->prev = d;
      n->next = d;
      return 1;
    }
    case 4: { /* a copy of a subtree from elsewhere in the document (an ancestor too) */
      int j = (int)rnd((unsigned)nnodes);
      if (j == i) return 0;
      cJSON *d = cJSON_Duplicate(nodes[j], 1);
      if (!d) return 0;
      if (d->string) {
        free(d->string);
        d->string = NULL;
      }
      replace(parent, n, d);
      return 1;
    }
    case 5: /* a number nudged */
      if (cJSON_IsNumber(n)) {
        static const double f[] = {1, -1, 16, -16};
        char buf[64];
        double v = n->valuedouble;
        unsigned k = rnd(6);
        if (k < 4) v += f[k];
        else if (k == 4) v *= 2;
        else v = -v;
        snprintf(buf, sizeof buf, "%.17g", v);
        replace(parent, n, cJSON_CreateRaw(buf));
        return 1;
      }
      return 0;
    case 6: /* swap with the next sibling */
      if (n->next) {
        cJSON *a = n->next;
        cJSON_DetachItemViaPointer(parent, n);
        if (a->next) {
          n->next = a->next;
          n->prev = a;
          a->next->prev = n;
          a->next = n;
        } else {
          cJSON_AddItemToArray(parent, n); /* appends, keeps n->string */
        }
        return 1;
      }
      return 0;
    default: /* a string's bytes mutated */
      if (cJSON_IsString(n) && n->valuestring) {
        char buf[256];
        size_t len = strlen(n->valuestring);
        if (len > 200) len = 200;
        memcpy(buf, n->valuestring, len);
        len = LLVMFuzzerMutate((uint8_t *)buf, len, 200);
        buf[len] = 0;
        for (size_t k = 0; k < len; k++) /* keep it a valid string literal */
          if ((unsigned char)buf[k] < 0x20 || buf[k] == '"' || buf[k] == '\\') buf[k] = '_';
        cJSON_SetValuestring(n, buf);
        return 1;
      }
      return 0;
  }
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
  rng = seed * 0x9E3779B97F4A7C15ull + 1;
  if (rnd(4) == 0) return LLVMFuzzerMutate(data, size, max_size);
  cJSON *root = cJSON_ParseWithLength((const char *)data, size);
  if (!root) return LLVMFuzzerMutate(data, size, max_size);
  int changed = 0;
  for (unsigned k = 1 + rnd(3); k; k--) changed |= mutate_tree(root);
  char *out = changed ? cJSON_PrintUnformatted(root) : NULL;
  cJSON_Delete(root);
  if (!out) return LLVMFuzzerMutate(data, size, max_size);
  size_t n = strlen(out);
  if (n > max_size) {
    free(out);
    return LLVMFuzzerMutate(data, size, max_size);
  }
  memcpy(data, out, n);
  free(out);
  return n;
}
