/* test_kcp_interp.c - context-parallel programs on the interpreter: the
 * ranks, fragments and exchanges of the language (`ranks R, fragments F`,
 * continues(n), `for r, f in before(n)`, `exchange ... = all_gather(...)`),
 * run by cake_interp_run_ranks on the partitions of libcakert.
 *
 * kcp_cumsum.cake (a running sum per document, its fragments' totals
 * gathered and folded) on every layout, R in {1, 2, 3, 4, 8}, with and
 * without chunk alignment, over packings with short, one-token and long
 * documents: each rank's outputs, mapped back to global tokens, must equal
 * the single-rank reference (a direct running sum in double). Fragments that
 * continue a document get NaN as their y0, so reading it would show. Then
 * the errors: a KCP entry without ranks, ranks that disagree on a dim. */
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

enum { W = 8, MAXR = 8 };

static Arena g_arena;
static Diag g_diag;
static const CirProgram *g_prog;

static int setup(void **state) {
  (void)state;
  arena_init(&g_arena);
  diag_init(&g_diag, 20);
  Program *ast = fixture_parse_spec(&g_arena, &g_diag, CAKE_SOURCE_DIR "/tests/unit/kcp/kcp_cumsum.cake",
                                    "kcp_cumsum.cake");
  if (!ast) return -1;
  g_prog = cake_sema(&g_arena, &g_diag, ast, NULL);
  return g_prog ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  arena_free(&g_arena);
  diag_free(&g_diag);
  return 0;
}

static int tix(const char *name) {
  int i = cir_tensor_index(g_prog, name);
  assert_true(i >= 0);
  return i;
}

/* One rank's share: its fragments, local stream and tensors. */
typedef struct Rank {
  cake_fragment *fr;
  int32_t *lcu;
  long long *cu;
  int64_t n;
  InterpFrag *frags;
  int *before;
  long long dims[8];
  double *tensors[16];
} Rank;

/* Partitions T tokens (documents cu[0..nd]) over R ranks, runs kcp_cumsum on
 * them and checks y against the running sums; returns the largest error. */
static double run_case(const int32_t *cu, int nd, int R, cake_layout layout, int align, uint64_t seed) {
  const CirProgram *p = g_prog;
  int64_t T = cu[nd];
  double *x = malloc(sizeof(double) * (size_t)(T * W + 1)), *y0 = malloc(sizeof(double) * (size_t)(nd * W));
  double *ref = malloc(sizeof(double) * (size_t)(T * W + 1));
  assert_non_null(x), assert_non_null(y0), assert_non_null(ref);
  for (int64_t i = 0; i < T * W; i++) x[i] = (double)(float)fixture_nrand(&seed);
  for (int i = 0; i < nd * W; i++) y0[i] = (double)(float)fixture_nrand(&seed);
  for (int d = 0; d < nd; d++)
    for (int c = 0; c < W; c++) {
      double s = y0[d * W + c];
      for (int64_t t = cu[d]; t < cu[d + 1]; t++) ref[t * W + c] = s += x[t * W + c];
    }
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
  /* the fragments before each one in its document: every rank's fragments of
   * that document with an earlier start, in order */
  for (int r = 0; r < R; r++) {
    Rank *a = &rk[r];
    int64_t nl = a->n ? a->n : 1; /* a rank without fragments runs one empty document */
    a->frags = calloc((size_t)nl, sizeof(InterpFrag));
    a->before = calloc((size_t)(2 * R * 2 * nl + 2), sizeof(int) * 4);
    a->cu = calloc((size_t)nl + 1, sizeof(long long));
    int64_t nb = 0;
    for (int64_t f = 0; f < a->n; f++) {
      const cake_fragment *g = &a->fr[f];
      a->cu[f + 1] = a->lcu[f + 1];
      a->frags[f] = (InterpFrag){g->continues, g->continued, nb, 0};
      for (int64_t start = cu[g->doc]; start < g->start;) { /* walk the document's fragments in order */
        int found = 0;
        for (int q = 0; q < R && !found; q++)
          for (int64_t h = 0; h < rk[q].n && !found; h++)
            if (rk[q].fr[h].doc == g->doc && rk[q].fr[h].start == start) {
              a->before[2 * nb] = q, a->before[2 * nb + 1] = (int)h, nb++;
              a->frags[f].before_count++;
              start = rk[q].fr[h].end;
              found = 1;
            }
        assert_true(found);
      }
    }
    int64_t Tl = a->n ? a->lcu[a->n] : 0;
    a->dims[p->tokens_dim] = Tl;
    a->dims[p->ranks_dim] = R;
    a->dims[p->frags_dim] = F;
    a->dims[p->docs_dim] = nl;
    a->dims[p->chunks_dim] = cake_interp_chunk_count(p, Tl, a->cu, nl);
    double *lx = calloc((size_t)(Tl * W + 1), sizeof(double)), *ly0 = calloc((size_t)(nl * W), sizeof(double));
    for (int64_t f = 0; f < a->n; f++) {
      const cake_fragment *g = &a->fr[f];
      memcpy(lx + g->local_start * W, x + g->start * W, sizeof(double) * (size_t)((g->end - g->start) * W));
      for (int c = 0; c < W; c++) ly0[f * W + c] = g->continues ? NAN : y0[g->doc * W + c];
    }
    a->tensors[tix("x")] = lx;
    a->tensors[tix("y0")] = ly0;
    a->tensors[tix("y")] = calloc((size_t)(Tl * W + 1), sizeof(double));
    for (int i = 0; i < p->ntensors; i++)
      if (p->tensors[i]->role == ROLE_TEMP)
        a->tensors[i] = calloc((size_t)cake_interp_numel(p, p->tensors[i], a->dims) + 1, sizeof(double));
  }
  InterpArgs args[MAXR];
  const InterpArgs *pa[MAXR];
  for (int r = 0; r < R; r++) {
    args[r] = (InterpArgs){rk[r].dims, rk[r].cu, rk[r].n ? rk[r].n : 1, NULL, rk[r].tensors, 1, 0, rk[r].frags,
                           rk[r].before};
    pa[r] = &args[r];
  }
  char err[1024];
  int rc = cake_interp_run_ranks(p, "fwd", R, pa, err, sizeof err);
  if (rc) fprintf(stderr, "kcp: %s\n", err);
  assert_int_equal(rc, 0);
  double worst = 0;
  int64_t covered = 0;
  for (int r = 0; r < R; r++)
    for (int64_t f = 0; f < rk[r].n; f++) {
      const cake_fragment *g = &rk[r].fr[f];
      covered += g->end - g->start;
      for (int64_t t = g->start; t < g->end; t++)
        for (int c = 0; c < W; c++) {
          double got = rk[r].tensors[tix("y")][(g->local_start + t - g->start) * W + c], want = ref[t * W + c];
          double e = fabs(got - want) / (1 + fabs(want));
          if (!(e <= worst)) worst = e; /* NaN sticks */
        }
    }
  assert_int_equal(covered, T);
  for (int r = 0; r < R; r++) {
    for (int i = 0; i < p->ntensors; i++) free(rk[r].tensors[i]);
    free(rk[r].fr), free(rk[r].lcu), free(rk[r].cu), free(rk[r].frags), free(rk[r].before);
  }
  free(x), free(y0), free(ref);
  return worst;
}

static void test_layouts(void **state) {
  (void)state;
  static const int32_t pk1[] = {0, 1000, 1001, 3095};           /* long, one-token, long */
  static const int32_t pk2[] = {0, 7, 70, 71, 200, 333, 334, 520}; /* short documents */
  static const int32_t pk3[] = {0, 33};                          /* one short document */
  static const struct { const int32_t *cu; int nd; } packs[] = {{pk1, 3}, {pk2, 7}, {pk3, 1}};
  static const int ranks[] = {1, 2, 3, 4, 8};
  uint64_t seed = 0x6b6370u;
  int cases = 0;
  for (size_t k = 0; k < sizeof packs / sizeof packs[0]; k++)
    for (size_t ri = 0; ri < sizeof ranks / sizeof ranks[0]; ri++)
      for (int L = 0; L < 3; L++)
        for (int align = 0; align <= 16; align += 16) {
          double e = run_case(packs[k].cu, packs[k].nd, ranks[ri], (cake_layout)L, align, seed++);
          if (!(e < 1e-12))
            fail_msg("pack %zu, R = %d, %s, align %d: largest error %g", k, ranks[ri],
                     cake_layout_name((cake_layout)L), align, e);
          cases++;
        }
  assert_int_equal(cases, 3 * 5 * 3 * 2);
}

static void test_errors(void **state) {
  (void)state;
  const CirProgram *p = g_prog;
  long long dims[8] = {0};
  dims[p->tokens_dim] = 16, dims[p->ranks_dim] = 2, dims[p->frags_dim] = 1;
  double *t[16] = {0};
  double buf[4][16 * W + 8];
  t[tix("x")] = buf[0], t[tix("y")] = buf[1];
  for (int i = 0; i < p->ntensors; i++)
    if (p->tensors[i]->role == ROLE_TEMP) t[i] = calloc(64, sizeof(double));
  InterpArgs a = {dims, NULL, 0, NULL, t, 0, 0, NULL, NULL};
  char err[512];
  /* the entry exchanges: one rank alone cannot run it */
  assert_int_equal(cake_interp_run(p, "fwd", &a, err, sizeof err), -1);
  assert_non_null(strstr(err, "exchanges data with other ranks (stage 'gather')"));
  /* ranks that disagree on the ranks dim, or on a dim other than the sequence's */
  InterpFrag fr = {0, 0, 0, 0};
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
  for (int i = 0; i < p->ntensors; i++)
    if (p->tensors[i]->role == ROLE_TEMP) free(t[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layouts),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
