/* test_kcp_interp.c - context-parallel programs on the interpreter: the
 * ranks, fragments and exchanges of the language (`ranks R, fragments F`,
 * continues(n), `for r, f in before(n)`, `exchange ... = all_gather(...)`),
 * run by cake_interp_run_ranks on the partitions of libcakert.
 *
 * A harness splits global tensors over the ranks as the partition says
 * (per-token tensors by fragment; per-document inputs such as h0 only on the
 * fragment that starts the document, NaN elsewhere so that reading them
 * shows; everything else whole on every rank), runs the ranks, and gathers
 * per-token outputs back, and per-document outputs (such as ht) from the
 * fragment that ends the document. Programs:
 *   tests/unit/kcp/kcp_cumsum.cake  a running sum per document; every layout,
 *       R in {1, 2, 3, 4, 8}, with and without chunk alignment, over packings
 *       with short, one-token and long documents, against a direct sum;
 *   tests/unit/kcp/kda_kcp_fwd.cake the KDA forward in summary mode against
 *       the single-rank kda_fwd.cake on the same global inputs: with exact
 *       arithmetic (no rounding) equal to 1e-9 on every layout, R in
 *       {1, 2, 3, 4}, aligned or not; with the dtypes' rounding, as close to
 *       exact arithmetic as the single-rank program (within 1.5 times its
 *       RMS error ratio);
 *   specs/kda/kda_train.cake with cp = summary, forward and backward,
 *       against cp = none on one rank: every output and gradient equal to
 *       1e-7 with exact arithmetic (double rounding; a wrong fold is off by
 *       far more), every layout, R in {1, 2, 3, 4}, aligned
 *       or not, the layer's gate with save = ckpt and the external gate with
 *       save = states.
 * Then the errors: a KCP entry without ranks, ranks that disagree on a dim. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cake_runtime.h"
#include "spec_fixture.h"

enum { MAXR = 8, MAXT = 128 }; /* ranks; tensors of a program (checked) */

static Arena g_arena;
static Diag g_diag;
static const CirProgram *g_cumsum, *g_kcp, *g_kda;

static const CirProgram *load(const char *path, const char *name, const CirOptionSet *opts) {
  Program *ast = fixture_parse_spec(&g_arena, &g_diag, path, name);
  return ast ? cake_sema(&g_arena, &g_diag, ast, opts) : NULL;
}

static int setup(void **state) {
  (void)state;
  arena_init(&g_arena);
  diag_init(&g_diag, 20);
  CirOptionSet layer = {{"gate", "qk_norm", "beta_logits", "vblock"}, {"softplus", "true", "true", "v32"}, 4};
  g_cumsum = load(CAKE_SOURCE_DIR "/tests/unit/kcp/kcp_cumsum.cake", "kcp_cumsum.cake", NULL);
  g_kcp = load(CAKE_SOURCE_DIR "/tests/unit/kcp/kda_kcp_fwd.cake", "kda_kcp_fwd.cake", NULL);
  g_kda = load(CAKE_SOURCE_DIR "/specs/kda/kda_fwd.cake", "kda_fwd.cake", &layer);
  return g_cumsum && g_kcp && g_kda ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  arena_free(&g_arena);
  diag_free(&g_diag);
  return 0;
}

static int tix(const CirProgram *p, const char *name) {
  assert_true(p->ntensors <= MAXT);
  int i = cir_tensor_index(p, name);
  assert_true(i >= 0);
  return i;
}

/* How a tensor splits over the ranks: by its first axis. A per-document
 * tensor belongs to the fragment that starts its document (h0, dh0), or, for
 * the state at the end (ht, dht), to the one that ends it. */
typedef enum { BY_TOKENS, BY_DOCS, WHOLE } Split;

static int at_end(const CirTensor *t) { return !strcmp(t->name, "ht") || !strcmp(t->name, "dht"); }
static int owns(const CirTensor *t, const cake_fragment *fr) { return at_end(t) ? !fr->continued : !fr->continues; }

static Split split_of(const CirProgram *p, const CirTensor *t) {
  if (t->rank > 0 && t->shape[0].sym == p->tokens_dim) return BY_TOKENS;
  if (t->rank > 0 && t->shape[0].sym == p->docs_dim) return BY_DOCS;
  return WHOLE;
}

/* Elements per entry of the first axis (all of them for WHOLE). */
static long long row_of(const CirProgram *p, const CirTensor *t, const long long *dims) {
  long long n = 1;
  for (int i = split_of(p, t) == WHOLE ? 0 : 1; i < t->rank; i++)
    n *= t->shape[i].sym >= 0 ? dims[t->shape[i].sym] : t->shape[i].value;
  return n;
}

typedef struct Rank {
  cake_fragment *fr;
  int32_t *lcu;
  long long *cu;
  int64_t n;
  InterpFrag *frags;
  int *pairs;
  long long ends_first, ends_count;
  long long dims[16];
  double *tensors[MAXT];
} Rank;

/* Runs KCP program p on R ranks over the partition of the global inputs
 * `g` (per tensor of p, global extents: dims `gd`, documents cu[0..nd]);
 * the outputs land in g's output tensors. */
static void run_ranks(const CirProgram *p, const char *const *entries, const long long *gd, const int32_t *cu, int nd,
                      int R, cake_layout layout, int align, int exact, double **g) {
  int64_t T = cu[nd];
  Rank rk[MAXR];
  memset(rk, 0, sizeof rk);
  int64_t F = 1;
  for (int r = 0; r < R; r++) {
    int64_t n = 0;
    assert_int_equal(cake_partition(cu, nd, T, R, r, layout, align, NULL, 0, &n, NULL), CAKE_OK);
    rk[r].n = n;
    rk[r].fr = calloc((size_t)n + 1, sizeof(cake_fragment));
    rk[r].lcu = calloc((size_t)n + 2, sizeof(int32_t));
    assert_int_equal(cake_partition(cu, nd, T, R, r, layout, align, rk[r].fr, n, &n, rk[r].lcu), CAKE_OK);
    if (n > F) F = n;
  }
  /* every document's fragments over all ranks, in document order: (rank, index) */
  int *order = calloc((size_t)(2 * (T + R + nd) + 2), sizeof(int)), *first = calloc((size_t)nd + 2, sizeof(int));
  int no = 0;
  for (int d = 0; d < nd; d++) {
    first[d] = no;
    for (int64_t start = cu[d]; start < cu[d + 1];) {
      int found = 0;
      for (int q = 0; q < R && !found; q++)
        for (int64_t h = 0; h < rk[q].n && !found; h++)
          if (rk[q].fr[h].doc == d && rk[q].fr[h].start == start) {
            order[2 * no] = q, order[2 * no + 1] = (int)h, no++;
            start = rk[q].fr[h].end;
            found = 1;
          }
      assert_true(found);
    }
  }
  first[nd] = no;
  for (int r = 0; r < R; r++) {
    Rank *a = &rk[r];
    int64_t nl = a->n ? a->n : 1; /* a rank without fragments runs one empty document */
    a->frags = calloc((size_t)nl, sizeof(InterpFrag));
    a->pairs = calloc((size_t)(2 * (no + 1) * (nl + 1) + 2 * nd), sizeof(int));
    a->cu = calloc((size_t)nl + 1, sizeof(long long));
    /* the fragments before and after each one in its document */
    int64_t np = 0;
    for (int64_t f = 0; f < a->n; f++) {
      const cake_fragment *x = &a->fr[f];
      a->cu[f + 1] = a->lcu[f + 1];
      int at = first[x->doc];
      while (!(order[2 * at] == r && order[2 * at + 1] == f)) at++;
      InterpFrag *fr = &a->frags[f];
      *fr = (InterpFrag){x->continues, x->continued, np, 0, 0, 0};
      for (int i = first[x->doc]; i < at; i++, np++, fr->before_count++)
        a->pairs[2 * np] = order[2 * i], a->pairs[2 * np + 1] = order[2 * i + 1];
      fr->after_first = np;
      for (int i = at + 1; i < first[x->doc + 1]; i++, np++, fr->after_count++)
        a->pairs[2 * np] = order[2 * i], a->pairs[2 * np + 1] = order[2 * i + 1];
      assert_int_equal(fr->before_count > 0, x->continues);
      assert_int_equal(fr->after_count > 0, x->continued);
    }
    /* then the fragment that ends each (non-empty) document, in document order: ends() */
    a->ends_first = np;
    for (int d = 0; d < nd; d++)
      if (first[d + 1] > first[d]) {
        a->pairs[2 * np] = order[2 * (first[d + 1] - 1)], a->pairs[2 * np + 1] = order[2 * (first[d + 1] - 1) + 1];
        np++;
      }
    a->ends_count = np - a->ends_first;
    int64_t Tl = a->n ? a->lcu[a->n] : 0;
    memcpy(a->dims, gd, sizeof(long long) * (size_t)p->ndims);
    a->dims[p->tokens_dim] = Tl;
    a->dims[p->ranks_dim] = R;
    a->dims[p->frags_dim] = F;
    a->dims[p->docs_dim] = nl;
    a->dims[p->chunks_dim] = cake_interp_chunk_count(p, Tl, a->cu, nl);
    for (int i = 0; i < p->ntensors; i++) {
      const CirTensor *t = p->tensors[i];
      if (t->role != ROLE_TEMP && t->role != ROLE_SAVE && !g[i]) continue; /* an absent optional tensor */
      double *x = a->tensors[i] = calloc((size_t)cake_interp_numel(p, t, a->dims) + 1, sizeof(double));
      if (t->role != ROLE_IN) continue;
      long long row = row_of(p, t, a->dims);
      for (int64_t f = 0; f < a->n; f++) {
        const cake_fragment *fr = &a->fr[f];
        if (split_of(p, t) == BY_TOKENS)
          memcpy(x + fr->local_start * row, g[i] + fr->start * row, sizeof(double) * (size_t)((fr->end - fr->start) * row));
        else if (split_of(p, t) == BY_DOCS)
          for (long long e = 0; e < row; e++) x[f * row + e] = owns(t, fr) ? g[i][fr->doc * row + e] : NAN;
      }
      if (split_of(p, t) == WHOLE) memcpy(x, g[i], sizeof(double) * (size_t)row);
    }
  }
  InterpArgs args[MAXR];
  const InterpArgs *pa[MAXR] = {0};
  for (int r = 0; r < R; r++) {
    args[r] = (InterpArgs){rk[r].dims, rk[r].cu, rk[r].n ? rk[r].n : 1, NULL, rk[r].tensors, exact, 0, rk[r].frags,
                           rk[r].pairs, rk[r].ends_first, rk[r].ends_count};
    pa[r] = &args[r];
  }
  char err[1024];
  for (int e = 0; entries[e]; e++) {
    int rc = cake_interp_run_ranks(p, entries[e], R, pa, err, sizeof err);
    if (rc) fprintf(stderr, "kcp: %s: %s\n", entries[e], err);
    assert_int_equal(rc, 0);
  }
  int64_t covered = 0;
  for (int r = 0; r < R; r++)
    for (int64_t f = 0; f < rk[r].n; f++) {
      const cake_fragment *fr = &rk[r].fr[f];
      covered += fr->end - fr->start;
      for (int i = 0; i < p->ntensors; i++) {
        const CirTensor *t = p->tensors[i];
        if (t->role != ROLE_OUT || !g[i]) continue;
        long long row = row_of(p, t, rk[r].dims);
        if (split_of(p, t) == BY_TOKENS)
          memcpy(g[i] + fr->start * row, rk[r].tensors[i] + fr->local_start * row,
                 sizeof(double) * (size_t)((fr->end - fr->start) * row));
        else if (split_of(p, t) == BY_DOCS && owns(t, fr))
          memcpy(g[i] + fr->doc * row, rk[r].tensors[i] + f * row, sizeof(double) * (size_t)row);
      }
    }
  assert_int_equal(covered, T);
  for (int i = 0; i < p->ntensors; i++) { /* outputs of the whole program: every rank writes the same */
    const CirTensor *t = p->tensors[i];
    if (t->role != ROLE_OUT || !g[i] || split_of(p, t) != WHOLE) continue;
    long long m = cake_interp_numel(p, t, rk[0].dims);
    memcpy(g[i], rk[0].tensors[i], sizeof(double) * (size_t)m);
    for (int r = 1; r < R; r++)
      if (memcmp(rk[r].tensors[i], rk[0].tensors[i], sizeof(double) * (size_t)m))
        fail_msg("%s: rank %d's differs from rank 0's", t->name, r);
  }
  for (int r = 0; r < R; r++) {
    for (int i = 0; i < p->ntensors; i++) free(rk[r].tensors[i]);
    free(rk[r].fr), free(rk[r].lcu), free(rk[r].cu), free(rk[r].frags), free(rk[r].pairs);
  }
  free(order), free(first);
}

static const char *const FWD[] = {"fwd", NULL};

/* max |a - b| / (1 + |b|) over n elements; NaN in a counts as infinite */
static double worst(const double *a, const double *b, long long n) {
  double w = 0;
  for (long long i = 0; i < n; i++) {
    double e = fabs(a[i] - b[i]) / (1 + fabs(b[i]));
    if (!(e <= w)) w = isnan(e) ? INFINITY : e;
  }
  return w;
}

/* ---- the running sum ---- */

enum { W = 8 };

static double cumsum_case(const int32_t *cu, int nd, int R, cake_layout layout, int align, uint64_t seed) {
  const CirProgram *p = g_cumsum;
  int64_t T = cu[nd];
  double *g[MAXT] = {0};
  double *x = g[tix(p, "x")] = malloc(sizeof(double) * (size_t)(T * W + 1));
  double *y0 = g[tix(p, "y0")] = malloc(sizeof(double) * (size_t)(nd * W));
  double *y = g[tix(p, "y")] = calloc((size_t)(T * W + 1), sizeof(double));
  double *z = g[tix(p, "z")] = calloc((size_t)(T * W + 1), sizeof(double));
  double *ref = malloc(sizeof(double) * (size_t)(T * W + 1)), *zref = malloc(sizeof(double) * (size_t)(T * W + 1));
  for (int64_t i = 0; i < T * W; i++) x[i] = (double)(float)fixture_nrand(&seed);
  for (int i = 0; i < nd * W; i++) y0[i] = (double)(float)fixture_nrand(&seed);
  for (int d = 0; d < nd; d++)
    for (int c = 0; c < W; c++) {
      double s = y0[d * W + c];
      for (int64_t t = cu[d]; t < cu[d + 1]; t++) ref[t * W + c] = s += x[t * W + c];
    }
  /* z: the fragments' bounds (every cut of the partition), then per token
   * x + the fold over the later fragments of its document, last first */
  char *cut = calloc((size_t)T + 2, 1);
  for (int r = 0; r < R; r++) {
    int64_t n = 0;
    cake_fragment fr[64];
    assert_int_equal(cake_partition(cu, nd, T, R, r, layout, align, fr, 64, &n, NULL), CAKE_OK);
    for (int64_t f = 0; f < n; f++) cut[fr[f].start] = cut[fr[f].end] = 1;
  }
  for (int d = 0; d < nd; d++)
    for (int c = 0; c < W; c++) {
      double D = 0, tot = 0; /* walking the document backwards: D of the fragment being walked */
      for (int64_t t = cu[d + 1] - 1; t >= cu[d]; t--) {
        zref[t * W + c] = x[t * W + c] + D;
        tot += x[t * W + c];
        if (cut[t] && t > cu[d]) D = D * 0.5 + tot, tot = 0; /* t starts a fragment */
      }
    }
  long long gd[16] = {0};
  run_ranks(p, FWD, gd, cu, nd, R, layout, align, 1, g);
  double e = worst(y, ref, T * W), ez = worst(z, zref, T * W);
  free(x), free(y0), free(y), free(z), free(ref), free(zref), free(cut);
  return e > ez ? e : ez;
}

static void test_cumsum_layouts(void **state) {
  (void)state;
  static const int32_t pk1[] = {0, 1000, 1001, 3095};              /* long, one-token, long */
  static const int32_t pk2[] = {0, 7, 70, 71, 200, 333, 334, 520}; /* short documents */
  static const int32_t pk3[] = {0, 33};                            /* one short document */
  static const struct { const int32_t *cu; int nd; } packs[] = {{pk1, 3}, {pk2, 7}, {pk3, 1}};
  static const int ranks[] = {1, 2, 3, 4, 8};
  uint64_t seed = 0x6b6370u;
  int cases = 0;
  for (size_t k = 0; k < sizeof packs / sizeof packs[0]; k++)
    for (size_t ri = 0; ri < sizeof ranks / sizeof ranks[0]; ri++)
      for (int L = 0; L < 3; L++)
        for (int align = 0; align <= 16; align += 16) {
          double e = cumsum_case(packs[k].cu, packs[k].nd, ranks[ri], (cake_layout)L, align, seed++);
          if (!(e < 1e-12))
            fail_msg("pack %zu, R = %d, %s, align %d: largest error %g", k, ranks[ri],
                     cake_layout_name((cake_layout)L), align, e);
          cases++;
        }
  assert_int_equal(cases, 3 * 5 * 3 * 2);
}

/* ---- the KDA forward, summary mode, against the single-rank program ---- */

enum { KH = 1, KK = 128, KV = 128 };

typedef struct KdaIn {
  double *q, *k, *v, *g, *beta, *A_log, *dt_bias, *h0;
} KdaIn;

static void kda_inputs(KdaIn *x, int64_t T, int nd, uint64_t seed) {
  x->q = malloc(sizeof(double) * (size_t)(T * KH * KK + 1));
  x->k = malloc(sizeof(double) * (size_t)(T * KH * KK + 1));
  x->v = malloc(sizeof(double) * (size_t)(T * KH * KV + 1));
  x->g = malloc(sizeof(double) * (size_t)(T * KH * KK + 1));
  x->beta = malloc(sizeof(double) * (size_t)(T * KH + 1));
  x->A_log = malloc(sizeof(double) * KH);
  x->dt_bias = malloc(sizeof(double) * KH * KK);
  x->h0 = malloc(sizeof(double) * (size_t)nd * KH * KK * KV);
  for (int64_t i = 0; i < T * KH * KK; i++) {
    x->q[i] = cake_round_bf16(fixture_nrand(&seed));
    x->k[i] = cake_round_bf16(fixture_nrand(&seed));
    x->g[i] = cake_round_bf16(fixture_nrand(&seed));
  }
  for (int64_t i = 0; i < T * KH * KV; i++) x->v[i] = cake_round_bf16(fixture_nrand(&seed));
  for (int64_t i = 0; i < T * KH; i++) x->beta[i] = cake_round_bf16(fixture_nrand(&seed));
  /* weak decay (exp(A_log) in [0.0025, 0.018]): the state carries across fragments */
  for (int i = 0; i < KH; i++) x->A_log[i] = (double)(float)(fixture_urand(&seed) * 2.0 - 6.0);
  for (int i = 0; i < KH * KK; i++) x->dt_bias[i] = (double)(float)(fixture_nrand(&seed) * 0.5);
  for (long long i = 0; i < (long long)nd * KH * KK * KV; i++) x->h0[i] = (double)(float)(fixture_nrand(&seed) * 0.1);
}

static void kda_free(KdaIn *x) {
  free(x->q), free(x->k), free(x->v), free(x->g), free(x->beta), free(x->A_log), free(x->dt_bias), free(x->h0);
}

/* o and ht of program p (single rank, or KCP on R ranks) on inputs x. */
static void kda_run(const CirProgram *p, const KdaIn *x, const int32_t *cu, int nd, int R, cake_layout layout,
                    int align, int exact, double *o, double *ht) {
  int64_t T = cu[nd];
  double *g[MAXT] = {0};
  g[tix(p, "q")] = x->q, g[tix(p, "k")] = x->k, g[tix(p, "v")] = x->v, g[tix(p, "g")] = x->g;
  g[tix(p, "beta")] = x->beta, g[tix(p, "A_log")] = x->A_log, g[tix(p, "dt_bias")] = x->dt_bias;
  g[tix(p, "h0")] = x->h0, g[tix(p, "o")] = o, g[tix(p, "ht")] = ht;
  long long gd[16] = {0};
  for (int i = 0; i < p->ndims; i++)
    if (!strcmp(p->dims[i].name, "H") || !strcmp(p->dims[i].name, "HV")) gd[i] = KH;
  if (p->ranks_dim >= 0) {
    run_ranks(p, FWD, gd, cu, nd, R, layout, align, exact, g);
    return;
  }
  gd[p->tokens_dim] = T;
  long long cu64[16];
  for (int d = 0; d <= nd; d++) cu64[d] = cu[d];
  InterpArgs a = {gd, cu64, nd, NULL, g, exact, 0, NULL, NULL, 0, 0};
  assert_int_equal(fixture_run(p, "fwd", &a), 0);
}

static void test_kda_summary(void **state) {
  (void)state;
  static const int32_t cu[] = {0, 150, 151, 300}; /* a long document, a one-token one, another long one */
  const int nd = 3;
  const int64_t T = cu[nd];
  KdaIn x;
  kda_inputs(&x, T, nd, 0x6b6461u);
  const long long no = T * KH * KV, nh = (long long)nd * KH * KK * KV;
  double *ro = calloc((size_t)no, sizeof(double)), *rh = calloc((size_t)nh, sizeof(double));
  double *o = calloc((size_t)no, sizeof(double)), *h = calloc((size_t)nh, sizeof(double));
  /* exact arithmetic: equal to the single-rank program on every partition */
  kda_run(g_kda, &x, cu, nd, 1, CAKE_LAYOUT_CONTIGUOUS, 0, 1, ro, rh);
  static const int ranks[] = {1, 2, 3, 4};
  for (size_t ri = 0; ri < sizeof ranks / sizeof ranks[0]; ri++)
    for (int L = 0; L < 3; L++)
      for (int align = 0; align <= 64; align += 64) {
        memset(o, 0, sizeof(double) * (size_t)no), memset(h, 0, sizeof(double) * (size_t)nh);
        kda_run(g_kcp, &x, cu, nd, ranks[ri], (cake_layout)L, align, 1, o, h);
        double eo = worst(o, ro, no), eh = worst(h, rh, nh);
        if (!(eo < 1e-9 && eh < 1e-9))
          fail_msg("exact, R = %d, %s, align %d: o %g, ht %g", ranks[ri], cake_layout_name((cake_layout)L), align,
                   eo, eh);
      }
  /* with the dtypes' rounding: against exact arithmetic, about as close as the single-rank program */
  double *so = calloc((size_t)no, sizeof(double)), *sh = calloc((size_t)nh, sizeof(double));
  kda_run(g_kda, &x, cu, nd, 1, CAKE_LAYOUT_CONTIGUOUS, 0, 0, so, sh);
  double so_e = fixture_err_ratio(so, ro, (size_t)no), sh_e = fixture_err_ratio(sh, rh, (size_t)nh);
  printf("kda, rounded, single rank: RMS error ratio against exact arithmetic o %.2e, ht %.2e\n", so_e, sh_e);
  for (int L = 0; L < 3; L++) {
    kda_run(g_kcp, &x, cu, nd, 4, (cake_layout)L, 0, 0, o, h);
    double eo = fixture_err_ratio(o, ro, (size_t)no), eh = fixture_err_ratio(h, rh, (size_t)nh);
    printf("kda summary mode, rounded, R = 4, %-19s: o %.2e, ht %.2e\n", cake_layout_name((cake_layout)L), eo, eh);
    if (!(eo < 1.5 * so_e && eh < 1.5 * sh_e))
      fail_msg("rounded, R = 4, %s: RMS error ratio o %g, ht %g (single rank: %g, %g)",
               cake_layout_name((cake_layout)L), eo, eh, so_e, sh_e);
  }
  free(so), free(sh);
  free(ro), free(rh), free(o), free(h);
  kda_free(&x);
}

/* ---- KDA training (kda_train.cake, cp = summary) against cp = none ---- */

typedef struct TrainCase {
  const char *gate, *qk_norm, *beta_logits, *save;
} TrainCase;

static const CirProgram *train_program(const TrainCase *tc, const char *cp) {
  CirOptionSet set = {{"gate", "qk_norm", "beta_logits", "save", "cp"}, {tc->gate, tc->qk_norm, tc->beta_logits, tc->save, cp}, 5};
  return load(CAKE_SOURCE_DIR "/specs/kda/kda_train.cake", "kda_train.cake", &set);
}

/* kda_train's global dims (KH heads, T tokens, nd documents) into gd and its
 * inputs, per tensor of `one`, drawn from seed */
static void train_inputs(const CirProgram *one, int64_t T, int nd, int external, uint64_t seed, long long *gd,
                         double *in[MAXT]) {
  for (int i = 0; i < one->ndims; i++)
    if (!strcmp(one->dims[i].name, "H") || !strcmp(one->dims[i].name, "HV")) gd[i] = KH;
  gd[one->tokens_dim] = T;
  gd[one->docs_dim] = nd;
  for (int i = 0; i < one->ntensors; i++) {
    const CirTensor *t = one->tensors[i];
    if (t->role != ROLE_IN) continue;
    long long n = cake_interp_numel(one, t, gd);
    double *x = in[i] = malloc(sizeof(double) * (size_t)(n + 1));
    for (long long e = 0; e < n; e++) {
      double v = fixture_nrand(&seed);
      if (!strcmp(t->name, "g") && external) v = -0.05 * log1p(exp(v)); /* a log-decay <= 0 */
      if (!strcmp(t->name, "A_log")) v = fixture_urand(&seed) * 2.0 - 6.0; /* weak decay: the state carries */
      if (!strcmp(t->name, "h0") || !strcmp(t->name, "dht")) v *= 0.1;
      x[e] = t->dtype == DT_BF16 ? cake_round_bf16(v) : (double)(float)v;
    }
  }
}

/* The single-rank program's fwd then bwd over documents cu (nd of them),
 * exact arithmetic or the dtypes' rounding; its outputs (and saved tensors)
 * into out[], allocated here. */
static void train_one_rank(const CirProgram *one, const long long *gd, const long long *cu, int nd, double *const in[MAXT],
                           int exact, double *out[MAXT]) {
  double *t1[MAXT] = {0};
  for (int i = 0; i < one->ntensors; i++) {
    const CirTensor *t = one->tensors[i];
    if (t->role == ROLE_IN) t1[i] = in[i];
    else if (t->role == ROLE_OUT || t->role == ROLE_SAVE) {
      long long dims[16];
      memcpy(dims, gd, sizeof dims);
      dims[one->chunks_dim] = cake_interp_chunk_count(one, cu[nd], cu, nd);
      t1[i] = out[i] = calloc((size_t)cake_interp_numel(one, t, dims) + 1, sizeof(double));
    }
  }
  InterpArgs a = {gd, cu, nd, NULL, t1, exact, 0, NULL, NULL, 0, 0};
  assert_int_equal(fixture_run(one, "fwd", &a), 0);
  assert_int_equal(fixture_run(one, "bwd", &a), 0);
}

/* The context-parallel variant kcp of the training program `one`, fwd then
 * bwd on R ranks over the global inputs in[] (indexed as one's tensors);
 * its outputs gathered into got[] (as one's, each (re)allocated here). */
static void train_ranks(const CirProgram *one, const CirProgram *kcp, const long long *gd, double *const in[MAXT],
                        const int32_t *cu, int nd, int R, cake_layout layout, int align, int exact, double *got[MAXT]) {
  static const char *const both[] = {"fwd", "bwd", NULL};
  double *g[MAXT] = {0};
  long long gk[16] = {0};
  for (int i = 0; i < kcp->ntensors; i++) {
    const CirTensor *t = kcp->tensors[i];
    int j = cir_tensor_index(one, t->name);
    if (t->role == ROLE_IN) g[i] = in[j];
    else if (t->role == ROLE_OUT) {
      free(got[j]);
      g[i] = got[j] = calloc((size_t)cake_interp_numel(one, one->tensors[j], gd) + 1, sizeof(double));
    }
  }
  for (int i = 0; i < kcp->ndims; i++)
    if (!strcmp(kcp->dims[i].name, "H") || !strcmp(kcp->dims[i].name, "HV")) gk[i] = KH;
  run_ranks(kcp, both, gk, cu, nd, R, layout, align, exact, g);
}

static void test_kda_train_summary(void **state) {
  (void)state;
  static const int32_t cu[] = {0, 150, 151, 300};
  const int nd = 3;
  const int64_t T = cu[nd];
  static const TrainCase cases[] = {{"softplus", "true", "true", "ckpt"}, {"external", "false", "false", "states"}};
  static const char *const outs[] = {"o", "ht", "dq", "dk", "dv", "dg", "dbeta", "dA_log", "ddt_bias", "dh0"};
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const TrainCase *tc = &cases[ci];
    const CirProgram *one = train_program(tc, "none"), *kcp = train_program(tc, "summary");
    assert_non_null(one), assert_non_null(kcp);
    assert_true(one->ntensors <= MAXT && kcp->ntensors <= MAXT);
    int external = !strcmp(tc->gate, "external");
    uint64_t seed = 0x747261u + ci;
    /* the global inputs, by tensor name (the same for both programs) */
    double *in[MAXT] = {0}, *ref[MAXT] = {0}, *got[MAXT] = {0};
    long long gd[16] = {0};
    train_inputs(one, T, nd, external, seed, gd, in);
    /* single rank: fwd then bwd, exact arithmetic */
    long long cu64[8];
    for (int d = 0; d <= nd; d++) cu64[d] = cu[d];
    train_one_rank(one, gd, cu64, nd, in, 1, ref);
    /* on ranks */
    double top[sizeof outs / sizeof outs[0]] = {0};
    static const int ranks[] = {1, 2, 3, 4};
    for (size_t ri = 0; ri < sizeof ranks / sizeof ranks[0]; ri++)
      for (int L = 0; L < 3; L++)
        for (int align = 0; align <= 64; align += 64) {
          train_ranks(one, kcp, gd, in, cu, nd, ranks[ri], (cake_layout)L, align, 1, got);
          for (size_t k = 0; k < sizeof outs / sizeof outs[0]; k++) {
            int j = cir_tensor_index(one, outs[k]);
            if (j < 0) continue; /* dA_log and ddt_bias: not with the external gate */
            long long n = cake_interp_numel(one, one->tensors[j], gd);
            double e = worst(got[j], ref[j], n);
            if (!(e <= top[k])) top[k] = e;
            if (!(e < 1e-7))
              fail_msg("%s gate, save %s, R = %d, %s, align %d: %s differs by %g", tc->gate, tc->save, ranks[ri],
                       cake_layout_name((cake_layout)L), align, outs[k], e);
          }
        }
    printf("kda_train %s gate, save %s, exact arithmetic, largest difference from one rank:", tc->gate, tc->save);
    for (size_t k = 0; k < sizeof outs / sizeof outs[0]; k++)
      if (cir_tensor_index(one, outs[k]) >= 0) printf(" %s %.1e", outs[k], top[k]);
    printf("\n");
    /* With the dtypes' rounding, many fragments per document (R = 4, each
     * document in 8 unaligned pieces): the states and their gradients pass
     * through every fragment's map, yet stay about as close to exact
     * arithmetic as on one rank (the folds keep the carried state at about
     * f32 precision: a fold in plain bf16 is about twice as far). */
    if (ci == 0) {
      double *r1[MAXT] = {0}, *rk[MAXT] = {0};
      train_one_rank(one, gd, cu64, nd, in, 0, r1);
      train_ranks(one, kcp, gd, in, cu, nd, 4, CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT, 0, 0, rk);
      static const char *const carried[] = {"ht", "dh0", "o", "dq"};
      for (int k = 0; k < 4; k++) {
        int j = cir_tensor_index(one, carried[k]);
        size_t n = (size_t)cake_interp_numel(one, one->tensors[j], gd);
        double e1 = fixture_err_ratio(r1[j], ref[j], n), ek = fixture_err_ratio(rk[j], ref[j], n);
        printf("kda_train summary mode, rounded, R = 4, zigzag_per_document, unaligned: %s %.2e (one rank %.2e)\n",
               carried[k], ek, e1);
        if (!(ek < 1.5 * e1)) fail_msg("rounded, R = 4: %s RMS error ratio %g, one rank %g", carried[k], ek, e1);
      }
      for (int i = 0; i < MAXT; i++) free(r1[i]), free(rk[i]);
    }
    for (int i = 0; i < MAXT; i++) free(in[i]), free(ref[i]), free(got[i]);
  }
}

/* ---- send_next and send_prev ---- */

static void test_send_neighbours(void **state) {
  (void)state;
  const CirProgram *p = load(CAKE_SOURCE_DIR "/tests/unit/kcp/kcp_send.cake", "kcp_send.cake", NULL);
  assert_non_null(p);
  static const int32_t cu[] = {0, 40, 41, 100, 130};
  const int nd = 4;
  const int64_t T = cu[nd];
  uint64_t seed = 0x73656e64u;
  int cases = 0;
  for (int R = 1; R <= 4; R++)
    for (int L = 0; L < 3; L++) {
      double *g[MAXT] = {0};
      double *x = g[tix(p, "x")] = malloc(sizeof(double) * (size_t)(T * W + 1));
      double *u = g[tix(p, "u")] = calloc((size_t)(T * W + 1), sizeof(double));
      for (int64_t i = 0; i < T * W; i++) x[i] = (double)(float)fixture_nrand(&seed);
      long long gd[16] = {0};
      run_ranks(p, FWD, gd, cu, nd, R, (cake_layout)L, 0, 1, g);
      /* each rank's total, then every token against its rank's neighbours' */
      double tot[8][W];
      int owner[200];
      memset(tot, 0, sizeof tot);
      for (int r = 0; r < R; r++) {
        int64_t n = 0;
        cake_fragment fr[64];
        assert_int_equal(cake_partition(cu, nd, T, R, r, (cake_layout)L, 0, fr, 64, &n, NULL), CAKE_OK);
        for (int64_t f = 0; f < n; f++)
          for (int64_t t = fr[f].start; t < fr[f].end; t++) {
            owner[t] = r;
            for (int c = 0; c < W; c++) tot[r][c] += x[t * W + c];
          }
      }
      for (int64_t t = 0; t < T; t++)
        for (int c = 0; c < W; c++) {
          int r = owner[t];
          double want = x[t * W + c] + (r > 0 ? tot[r - 1][c] : 0) + 2 * (r + 1 < R ? tot[r + 1][c] : 0);
          if (fabs(u[t * W + c] - want) > 1e-12 * (1 + fabs(want)))
            fail_msg("R = %d, %s: u[%lld, %d] = %g, want %g", R, cake_layout_name((cake_layout)L), (long long)t, c,
                     u[t * W + c], want);
        }
      free(x), free(u);
      cases++;
    }
  printf("send_next / send_prev: %d cases (R = 1-4, three layouts) as the neighbours' totals\n", cases);
}

/* ---- KDA training, cp = exact: bitwise the single rank's ---- */

static void test_kda_train_exact(void **state) {
  (void)state;
  /* documents of 150, 1 and 149 tokens, then one of 200: cuts at chunk boundaries (align 64) */
  static const int32_t cu[] = {0, 150, 151, 300, 500};
  const int nd = 4;
  const int64_t T = cu[nd];
  static const TrainCase cases[] = {{"softplus", "true", "true", "ckpt"},
                                    {"safe", "false", "true", "states"},
                                    {"external", "false", "false", "ckpt"}};
  int checked = 0;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const TrainCase *tc = &cases[ci];
    const CirProgram *one = train_program(tc, "none"), *kcp = train_program(tc, "exact");
    assert_non_null(one), assert_non_null(kcp);
    assert_true(one->ntensors <= MAXT && kcp->ntensors <= MAXT);
    int external = !strcmp(tc->gate, "external");
    uint64_t seed = 0x657861u + ci;
    double *in[MAXT] = {0}, *ref[MAXT] = {0}, *got[MAXT] = {0};
    long long gd[16] = {0};
    train_inputs(one, T, nd, external, seed, gd, in);
    /* one rank, with the dtypes' rounding */
    long long cu64[8];
    for (int d = 0; d <= nd; d++) cu64[d] = cu[d];
    train_one_rank(one, gd, cu64, nd, in, 0, ref);
    static const int ranks[] = {1, 2, 3, 4};
    for (size_t ri = 0; ri < sizeof ranks / sizeof ranks[0]; ri++)
      for (int L = 0; L < 3; L++) {
        train_ranks(one, kcp, gd, in, cu, nd, ranks[ri], (cake_layout)L, 64, 0, got);
        for (int i = 0; i < one->ntensors; i++) {
          const CirTensor *t = one->tensors[i];
          if (t->role != ROLE_OUT || !got[i]) continue;
          long long n = cake_interp_numel(one, t, gd), bad = 0, first = -1;
          for (long long e = 0; e < n; e++)
            if (memcmp(&got[i][e], &ref[i][e], sizeof(double))) bad++, first = first < 0 ? e : first;
          if (bad)
            fail_msg("%s gate, save %s, R = %d, %s: %s differs in %lld of %lld elements, first [%lld] = %.17g, one "
                     "rank %.17g", tc->gate, tc->save, ranks[ri], cake_layout_name((cake_layout)L), t->name, bad, n,
                     first, got[i][first], ref[i][first]);
          checked++;
        }
      }
    for (int i = 0; i < MAXT; i++) free(in[i]), free(ref[i]), free(got[i]);
  }
  printf("kda_train exact mode, rounded: %d outputs over R = 1-4 and three layouts bitwise the single rank's\n",
         checked);
}

/* ---- causal conv1d with halos ---- */

static int dix(const CirProgram *p, const char *name) {
  for (int i = 0; i < p->ndims; i++)
    if (!strcmp(p->dims[i].name, name)) return i;
  fail_msg("no dim %s", name);
  return -1;
}

/* conv1d.cake with cp = halo on R ranks against cp = none on one rank, the
 * same global inputs, forward and backward: y and dx bitwise equal (every
 * token computes the same taps in the same order: the halo brings the other
 * ranks' tokens), dw and dbias (the ranks' sums added in rank order) to
 * 1e-12 with exact arithmetic and 2e-5 with the dtypes' rounding (f32 sums in another order). */
static void conv_case(const int32_t *cu, int nd, int R, cake_layout layout, int align, int exact, const char *act,
                      int bias, uint64_t seed) {
  CirOptionSet one = {{"activation", "cp"}, {act, "none"}, 2}, kcp = {{"activation", "cp"}, {act, "halo"}, 2};
  const CirProgram *p1 = load(CAKE_SOURCE_DIR "/specs/conv1d/conv1d.cake", "conv1d.cake", &one);
  const CirProgram *pk = load(CAKE_SOURCE_DIR "/specs/conv1d/conv1d.cake", "conv1d.cake", &kcp);
  assert_non_null(p1);
  assert_non_null(pk);
  enum { G = 1, D = 64 * G, CW = 4 };
  int64_t T = cu[nd];
  size_t nt = (size_t)(T * D) + 1;
  static const char *const names[] = {"x", "w", "bias", "dy", "y", "dx", "dw", "dbias"};
  double *in[8], *o1[8] = {0}, *ok[8] = {0};
  in[0] = malloc(nt * 8), in[1] = malloc(D * CW * 8), in[2] = malloc(D * 8), in[3] = malloc(nt * 8);
  for (size_t i = 0; i + 1 < nt; i++) in[0][i] = cake_round_bf16(fixture_nrand(&seed)), in[3][i] = cake_round_bf16(fixture_nrand(&seed));
  for (int i = 0; i < D * CW; i++) in[1][i] = cake_round_f32(0.5 * fixture_nrand(&seed));
  for (int i = 0; i < D; i++) in[2][i] = cake_round_f32(0.3 * fixture_nrand(&seed));
  size_t sizes[8] = {0, 0, 0, 0, nt, nt, D * CW, D};
  for (int i = 4; i < 8; i++) o1[i] = calloc(sizes[i], 8), ok[i] = calloc(sizes[i], 8);
  /* one rank */
  long long dims[8] = {0}, cul[64];
  dims[p1->tokens_dim] = T, dims[dix(p1, "G")] = G;
  for (int i = 0; i <= nd; i++) cul[i] = cu[i];
  double *t1[MAXT] = {0}, *gk[MAXT] = {0};
  for (int i = 0; i < 8; i++) {
    double *v = i < 4 ? in[i] : o1[i];
    if (i == 2 && !bias) v = NULL;
    t1[tix(p1, names[i])] = v;
    gk[tix(pk, names[i])] = i < 4 ? v : ok[i];
  }
  InterpArgs a = {dims, cul, nd, NULL, t1, exact, 0, NULL, NULL, 0, 0};
  assert_int_equal(fixture_run(p1, "fwd", &a), 0);
  assert_int_equal(fixture_run(p1, "bwd", &a), 0);
  /* R ranks */
  static const char *const FB[] = {"fwd", "bwd", NULL};
  long long gd[16] = {0};
  gd[dix(pk, "G")] = G;
  run_ranks(pk, FB, gd, cu, nd, R, layout, align, exact, gk);
  for (int i = 4; i < 6; i++)
    if (memcmp(o1[i], ok[i], (nt - 1) * 8)) {
      for (size_t j = 0; j + 1 < nt; j++)
        if (o1[i][j] != ok[i][j]) {
          fail_msg("conv1d %s R = %d %s align %d %s: %s[token %zu, channel %zu] is %.17g on ranks, %.17g on one", act, R,
                   cake_layout_name(layout), align, exact ? "exact" : "rounded", names[i], j / D, j % D, ok[i][j], o1[i][j]);
          break;
        }
    }
  double ew = worst(ok[6], o1[6], D * CW), eb = worst(ok[7], o1[7], D), tol = exact ? 1e-12 : 2e-5; /* f32 sums in another order */
  if (!(ew < tol && eb < tol))
    fail_msg("conv1d %s R = %d %s align %d: dw %.2e dbias %.2e", act, R, cake_layout_name(layout), align, ew, eb);
  for (int i = 0; i < 8; i++) free(i < 4 ? in[i] : o1[i]), free(ok[i]);
}

static void test_conv1d_halo(void **state) {
  (void)state;
  static const int32_t pk1[] = {0, 1000, 1001, 2095};                  /* long, one-token, long */
  static const int32_t pk2[] = {0, 7, 9, 10, 70, 71, 200, 203, 333, 334, 520}; /* short documents */
  static const int32_t pk3[] = {0, 33};                                /* one short document */
  static const struct { const int32_t *cu; int nd; } packs[] = {{pk1, 3}, {pk2, 10}, {pk3, 1}};
  static const int Rs[] = {1, 2, 3, 4, 8};
  static const cake_layout lays[] = {CAKE_LAYOUT_CONTIGUOUS, CAKE_LAYOUT_ZIGZAG, CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT};
  int n = 0;
  for (size_t k = 0; k < sizeof packs / sizeof packs[0]; k++)
    for (size_t r = 0; r < sizeof Rs / sizeof Rs[0]; r++)
      for (int l = 0; l < 3; l++)
        for (int align = 0; align <= 64; align += 64, n++)
          conv_case(packs[k].cu, packs[k].nd, Rs[r], lays[l], align, n % 2, n % 3 ? "silu" : "none", n % 4 != 1,
                    0x5eed + (uint64_t)n);
  printf("conv1d halo: %d cases bitwise equal to one rank (y, dx)\n", n);
}

/* ---- errors ---- */

static void test_errors(void **state) {
  (void)state;
  const CirProgram *p = g_cumsum;
  long long dims[8] = {0};
  dims[p->tokens_dim] = 16, dims[p->ranks_dim] = 2, dims[p->frags_dim] = 1;
  double *t[16] = {0};
  double buf[4][16 * W + 8];
  t[tix(p, "x")] = buf[0], t[tix(p, "y")] = buf[1];
  for (int i = 0; i < p->ntensors; i++)
    if (p->tensors[i]->role == ROLE_TEMP) t[i] = calloc(64, sizeof(double));
  InterpArgs a = {dims, NULL, 0, NULL, t, 0, 0, NULL, NULL, 0, 0};
  char err[512];
  /* the entry exchanges: one rank alone cannot run it */
  assert_int_equal(cake_interp_run(p, "fwd", &a, err, sizeof err), -1);
  assert_non_null(strstr(err, "exchanges data with other ranks (stage 'gather')"));
  /* ranks that disagree on the ranks dim, or on a dim other than the sequence's */
  InterpFrag fr = {0};
  a.frags = &fr;
  long long dims2[8];
  memcpy(dims2, dims, sizeof dims);
  dims2[p->frags_dim] = 3;
  InterpArgs b = a;
  b.dims = dims2;
  const InterpArgs *pa[2] = {&a, &b};
  assert_int_equal(cake_interp_run_ranks(p, "fwd", 2, pa, err, sizeof err), -1);
  assert_non_null(strstr(err, "rank 1: dim F = 3, but rank 0 has another value"));
  assert_int_equal(cake_interp_run_ranks(p, "fwd", 3, pa, err, sizeof err), -1); /* R = 2 in the dims */
  assert_non_null(strstr(err, "rank 0: dim R = 2, but the program runs on a different number of ranks"));
  /* a program that is not context-parallel */
  assert_int_equal(cake_interp_run_ranks(g_kda, "fwd", 1, pa, err, sizeof err), -1);
  assert_non_null(strstr(err, "is not context-parallel"));
  for (int i = 0; i < p->ntensors; i++)
    if (p->tensors[i]->role == ROLE_TEMP) free(t[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cumsum_layouts),
      cmocka_unit_test(test_kda_summary),
      cmocka_unit_test(test_kda_train_summary),
      cmocka_unit_test(test_kda_train_exact),
      cmocka_unit_test(test_send_neighbours),
      cmocka_unit_test(test_conv1d_halo),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
