/* test_partition.c - the context-parallel partitions of libcakert
 * (cake_partition). Every layout, R in {1, 2, 3, 4, 8}, with and without
 * alignment, over several packings; for each, all ranks are partitioned and
 * checked together: the fragments cover [0, T) once, each inside one
 * document, continues / continued / prev_rank / next_rank agree across
 * ranks, local_cu matches, aligned cuts are chunk boundaries, and each
 * token's rank equals that of a direct (slow) reading of the layout's rule.
 * Then hand-computed partitions and the error messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cake_runtime.h"

/* ---- the rule, read directly: cut points, then the block of each token ---- */

/* The nearest of s, s + C, s + 2C, ... and e to c (ties to the earlier). */
static int64_t ref_snap(int64_t s, int64_t e, int64_t c, int64_t C) {
  int64_t best = s;
  for (int64_t k = s; k < e; k += C)
    if (llabs(k - c) < llabs(best - c)) best = k;
  if (llabs(e - c) < llabs(best - c)) best = e;
  return best;
}

static int64_t ref_align(const int32_t *cu, int64_t nd, int64_t c, int64_t C) {
  if (C <= 1) return c;
  for (int64_t d = 0; d < nd; d++)
    if (cu[d] < c && c < cu[d + 1]) return ref_snap(cu[d], cu[d + 1], c, C);
  return c; /* at a document boundary */
}

/* owner[t] for every token, from the layout's rule */
static void ref_owners(const int32_t *cu, int64_t nd, int64_t T, int R, cake_layout L, int C, int32_t *owner) {
  int64_t nb = L == CAKE_LAYOUT_CONTIGUOUS ? R : 2 * R;
  int64_t *cuts = malloc(sizeof(int64_t) * (size_t)(nb + 1));
  for (int64_t d = 0; d < (L == CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT ? nd : 1); d++) {
    int64_t s = L == CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT ? cu[d] : 0;
    int64_t e = L == CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT ? cu[d + 1] : T;
    for (int64_t i = 0; i <= nb; i++) cuts[i] = ref_align(cu, nd, s + i * (e - s) / nb, C);
    for (int64_t i = 0; i < nb; i++)
      for (int64_t t = cuts[i]; t < cuts[i + 1]; t++) owner[t] = (int32_t)(i < R ? i : 2 * R - 1 - i);
  }
  free(cuts);
}

/* ---- one partition, all ranks ---- */

typedef struct Case {
  const char *name;
  const int32_t *cu;
  int64_t nd;
} Case;

static void check_partition(const Case *k, int R, cake_layout L, int C) {
  int64_t T = k->cu[k->nd];
  char what[200];
  snprintf(what, sizeof what, "%s, R = %d, %s, align %d", k->name, R, cake_layout_name(L), C);
  int32_t *owner = malloc(sizeof(int32_t) * (size_t)(T + 1)), *want = malloc(sizeof(int32_t) * (size_t)(T + 1));
  int64_t *fid = malloc(sizeof(int64_t) * (size_t)(T + 1)); /* token -> index in all[] */
  for (int64_t t = 0; t < T; t++) owner[t] = want[t] = -1;
  ref_owners(k->cu, k->nd, T, R, L, C, want);
  cake_fragment *all = NULL;
  int *all_rank = NULL;
  int64_t nall = 0;
  for (int r = 0; r < R; r++) {
    int64_t n = -1;
    if (cake_partition(k->cu, k->nd, T, R, r, L, C, NULL, 0, &n, NULL) != CAKE_OK) fail_msg("%s: %s", what, cake_last_error());
    cake_fragment *f = malloc(sizeof(cake_fragment) * (size_t)(n + 1));
    int32_t *lcu = malloc(sizeof(int32_t) * (size_t)(n + 1));
    int64_t n2 = -1;
    if (cake_partition(k->cu, k->nd, T, R, r, L, C, f, n, &n2, lcu) != CAKE_OK) fail_msg("%s: %s", what, cake_last_error());
    if (n2 != n) fail_msg("%s, rank %d: %lld fragments counted, %lld written", what, r, (long long)n, (long long)n2);
    if (lcu[0] != 0) fail_msg("%s, rank %d: local_cu[0] = %d", what, r, lcu[0]);
    for (int64_t i = 0; i < n; i++) {
      const cake_fragment *g = &f[i];
      if (g->doc < 0 || g->doc >= k->nd) fail_msg("%s, rank %d: fragment %lld: doc %d", what, r, (long long)i, g->doc);
      int64_t s = k->cu[g->doc], e = k->cu[g->doc + 1];
      if (!(s <= g->start && g->start < g->end && g->end <= e))
        fail_msg("%s, rank %d: fragment [%lld, %lld) is empty or leaves document %d [%lld, %lld)", what, r,
                 (long long)g->start, (long long)g->end, g->doc, (long long)s, (long long)e);
      if (i > 0 && f[i - 1].end > g->start) fail_msg("%s, rank %d: fragments out of order at %lld", what, r, (long long)i);
      if (g->local_start != lcu[i] || lcu[i + 1] - lcu[i] != g->end - g->start)
        fail_msg("%s, rank %d: fragment %lld: local_start %lld, local_cu %d..%d, length %lld", what, r, (long long)i,
                 (long long)g->local_start, lcu[i], lcu[i + 1], (long long)(g->end - g->start));
      if (g->continues != (g->start > s) || g->continued != (g->end < e))
        fail_msg("%s, rank %d: fragment [%lld, %lld): continues %d continued %d", what, r, (long long)g->start,
                 (long long)g->end, g->continues, g->continued);
      if (C > 0 && ((g->continues && (g->start - s) % C) || (g->continued && (g->end - s) % C)))
        fail_msg("%s, rank %d: fragment [%lld, %lld) of document [%lld, %lld) is cut off a chunk boundary", what, r,
                 (long long)g->start, (long long)g->end, (long long)s, (long long)e);
      for (int64_t t = g->start; t < g->end; t++) {
        if (owner[t] >= 0) fail_msg("%s: token %lld held by ranks %d and %d", what, (long long)t, owner[t], r);
        owner[t] = r;
        fid[t] = nall + i;
      }
    }
    all = realloc(all, sizeof(cake_fragment) * (size_t)(nall + n + 1));
    all_rank = realloc(all_rank, sizeof(int) * (size_t)(nall + n + 1));
    for (int64_t i = 0; i < n; i++) all[nall + i] = f[i], all_rank[nall + i] = r;
    nall += n;
    free(f);
    free(lcu);
  }
  for (int64_t t = 0; t < T; t++) {
    if (owner[t] < 0) fail_msg("%s: token %lld is held by no rank", what, (long long)t);
    if (owner[t] != want[t]) fail_msg("%s: token %lld is on rank %d; the rule says %d", what, (long long)t, owner[t], want[t]);
  }
  /* the links: the fragment before in the document ends where this one starts, on prev_rank, and points back */
  for (int64_t i = 0; i < nall; i++) {
    const cake_fragment *g = &all[i];
    int r = all_rank[i];
    if (g->continues) {
      const cake_fragment *p = &all[fid[g->start - 1]];
      int pr = all_rank[fid[g->start - 1]];
      if (p->doc != g->doc || p->end != g->start || !p->continued || p->next_rank != r || g->prev_rank != pr || pr == r)
        fail_msg("%s: fragment [%lld, %lld) on rank %d (prev_rank %d) after [%lld, %lld) on rank %d (next_rank %d)",
                 what, (long long)g->start, (long long)g->end, r, g->prev_rank, (long long)p->start, (long long)p->end,
                 pr, p->next_rank);
    } else if (g->prev_rank != -1)
      fail_msg("%s: a document's first fragment has prev_rank %d", what, g->prev_rank);
    if (!g->continued && g->next_rank != -1) fail_msg("%s: a document's last fragment has next_rank %d", what, g->next_rank);
  }
  if (R == 1) { /* the documents themselves */
    int64_t j = 0;
    for (int64_t d = 0; d < k->nd; d++) {
      if (k->cu[d] == k->cu[d + 1]) continue;
      if (j >= nall || all[j].doc != d || all[j].start != k->cu[d] || all[j].end != k->cu[d + 1])
        fail_msg("%s: fragment %lld is not document %lld", what, (long long)j, (long long)d);
      j++;
    }
    if (j != nall) fail_msg("%s: %lld fragments for %lld non-empty documents", what, (long long)nall, (long long)j);
  }
  free(all);
  free(all_rank);
  free(owner);
  free(want);
  free(fid);
}

/* ---- the packings ---- */

static const int32_t anchor_cu[] = {0, 15945, 37790, 65536};
/* one-token documents at the cuts of R = 2 and R = 4 (contiguous) and zigzag R = 2: 256, 512 */
static const int32_t one_token_cu[] = {0, 255, 256, 512, 513, 767, 768, 769, 1024};
/* documents shorter than 2R chunks of 64 (and an empty one) */
static const int32_t short_cu[] = {0, 100, 164, 229, 229, 529, 530, 657, 1200};
static const int32_t tiny_cu[] = {0, 1, 3};      /* T = 3 < R: ranks that hold nothing */
static const int32_t empty_cu[] = {0, 0, 0};     /* T = 0 */
static const int32_t one_doc_cu[] = {0, 1000};   /* one document */
static int32_t lcg_cu[401];

static void make_lcg(void) {
  uint32_t x = 12345;
  lcg_cu[0] = 0;
  for (int i = 1; i <= 400; i++) {
    x = x * 1664525u + 1013904223u;
    lcg_cu[i] = lcg_cu[i - 1] + 1 + (int32_t)((x >> 8) % 200); /* lengths 1..200 */
  }
}

static void all_layouts(const Case *k) {
  static const int Rs[] = {1, 2, 3, 4, 8};
  static const cake_layout Ls[] = {CAKE_LAYOUT_CONTIGUOUS, CAKE_LAYOUT_ZIGZAG, CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT};
  static const int Cs[] = {0, 64};
  for (int a = 0; a < 5; a++)
    for (int b = 0; b < 3; b++)
      for (int c = 0; c < 2; c++) check_partition(k, Rs[a], Ls[b], Cs[c]);
}

#define CASE(arr) ((Case){#arr, arr, (int64_t)(sizeof arr / sizeof arr[0]) - 1})

static void test_anchor(void **st) {
  (void)st;
  all_layouts(&CASE(anchor_cu));
  check_partition(&CASE(anchor_cu), 64, CAKE_LAYOUT_ZIGZAG, 64);
  check_partition(&CASE(anchor_cu), 5, CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT, 16);
}
static void test_short_documents(void **st) {
  (void)st;
  make_lcg();
  all_layouts(&CASE(lcg_cu));
  all_layouts(&CASE(short_cu));
  check_partition(&CASE(short_cu), 8, CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT, 1);
}
static void test_one_token_documents(void **st) {
  (void)st;
  all_layouts(&CASE(one_token_cu));
}
static void test_ranks_holding_nothing(void **st) {
  (void)st;
  all_layouts(&CASE(tiny_cu));
  all_layouts(&CASE(empty_cu));
  all_layouts(&CASE(one_doc_cu));
  check_partition(&CASE(tiny_cu), 4096, CAKE_LAYOUT_ZIGZAG, 0);
  int64_t n = -1;
  cake_fragment f[1];
  int32_t lcu[2] = {-1, -1}; /* T = 3, R = 8 contiguous: cuts 0 0 0 1 1 1 2 2 3, rank 0 holds nothing */
  assert_int_equal(cake_partition(tiny_cu, 2, 3, 8, 0, CAKE_LAYOUT_CONTIGUOUS, 0, f, 1, &n, lcu), CAKE_OK);
  assert_int_equal(n, 0);
  assert_int_equal(lcu[0], 0);
}

/* ---- hand-computed ---- */

static void expect_frag(const cake_fragment *f, int64_t s, int64_t e, int64_t ls, int doc, int cs, int cd, int pr, int nr) {
  assert_int_equal(f->start, s);
  assert_int_equal(f->end, e);
  assert_int_equal(f->local_start, ls);
  assert_int_equal(f->doc, doc);
  assert_int_equal(f->continues, cs);
  assert_int_equal(f->continued, cd);
  assert_int_equal(f->prev_rank, pr);
  assert_int_equal(f->next_rank, nr);
}

static void test_by_hand(void **st) {
  (void)st;
  cake_fragment f[8];
  int32_t lcu[9];
  int64_t n;
  /* zigzag, R = 2: cuts 16384, 32768, 49152; rank 0 holds blocks 0 and 3 */
  assert_int_equal(cake_partition(anchor_cu, 3, 65536, 2, 0, CAKE_LAYOUT_ZIGZAG, 0, f, 8, &n, lcu), CAKE_OK);
  assert_int_equal(n, 3);
  expect_frag(&f[0], 0, 15945, 0, 0, 0, 0, -1, -1);
  expect_frag(&f[1], 15945, 16384, 15945, 1, 0, 1, -1, 1);
  expect_frag(&f[2], 49152, 65536, 16384, 2, 1, 0, 1, -1);
  assert_int_equal(lcu[3], 32768);
  /* aligned to 64: 16384 -> 15945 + 7*64 = 16393 (9 away, not 55), 32768 -> 15945 + 263*64 = 32777,
   * 49152 -> 37790 + 178*64 = 49182 (30 away, not 34) */
  assert_int_equal(cake_partition(anchor_cu, 3, 65536, 2, 1, CAKE_LAYOUT_ZIGZAG, 64, f, 8, &n, lcu), CAKE_OK);
  assert_int_equal(n, 2);
  expect_frag(&f[0], 16393, 37790, 0, 1, 1, 0, 0, -1);
  expect_frag(&f[1], 37790, 49182, 21397, 2, 0, 1, -1, 0);
  /* a tie goes down: document [0, 96), contiguous R = 2, C = 32: cut 48 is 16 from 32 and from 64 -> 32 */
  static const int32_t tie[] = {0, 96};
  assert_int_equal(cake_partition(tie, 1, 96, 2, 0, CAKE_LAYOUT_CONTIGUOUS, 32, f, 8, &n, lcu), CAKE_OK);
  assert_int_equal(n, 1);
  expect_frag(&f[0], 0, 32, 0, 0, 0, 1, -1, 1);
  static const int32_t tie2[] = {0, 80};
  /* [0, 80), contiguous R = 2, C = 16: cut 40 between 32 and 48, a tie -> 32 */
  assert_int_equal(cake_partition(tie2, 1, 80, 2, 1, CAKE_LAYOUT_CONTIGUOUS, 16, f, 8, &n, lcu), CAKE_OK);
  expect_frag(&f[0], 32, 80, 0, 0, 1, 0, 0, -1);
  /* the end of the document is a chunk boundary: [0, 70), C = 64, cut 35 -> 64 (29 away) ... */
  static const int32_t endb[] = {0, 70};
  assert_int_equal(cake_partition(endb, 1, 70, 2, 0, CAKE_LAYOUT_CONTIGUOUS, 64, f, 8, &n, lcu), CAKE_OK);
  expect_frag(&f[0], 0, 64, 0, 0, 0, 1, -1, 1);
  /* ... and zigzag R = 2 on [0, 70): cuts 17 -> 0, 35 -> 64, 52 -> 64: rank 1 holds blocks 1 and 2, [0, 64);
   * rank 0 block 3, [64, 70) (block 0 is empty) */
  assert_int_equal(cake_partition(endb, 1, 70, 2, 0, CAKE_LAYOUT_ZIGZAG, 64, f, 8, &n, lcu), CAKE_OK);
  assert_int_equal(n, 1);
  expect_frag(&f[0], 64, 70, 0, 0, 1, 0, 1, -1);
  assert_int_equal(cake_partition(endb, 1, 70, 2, 1, CAKE_LAYOUT_ZIGZAG, 64, f, 8, &n, lcu), CAKE_OK);
  assert_int_equal(n, 1);
  expect_frag(&f[0], 0, 64, 0, 0, 0, 1, -1, 0);
  /* zigzag per document, R = 2, [0, 8) and [8, 9): rank 1 holds [2, 6) and nothing of the one-token document */
  static const int32_t pd[] = {0, 8, 9};
  assert_int_equal(cake_partition(pd, 2, 9, 2, 1, CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT, 0, f, 8, &n, lcu), CAKE_OK);
  assert_int_equal(n, 1);
  expect_frag(&f[0], 2, 6, 0, 0, 1, 1, 0, 0);
  assert_int_equal(lcu[1], 4);
  assert_int_equal(cake_partition(pd, 2, 9, 2, 0, CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT, 0, f, 8, &n, lcu), CAKE_OK);
  assert_int_equal(n, 3);
  expect_frag(&f[0], 0, 2, 0, 0, 0, 1, -1, 1);
  expect_frag(&f[1], 6, 8, 2, 0, 1, 0, 1, -1);
  expect_frag(&f[2], 8, 9, 4, 1, 0, 0, -1, -1);
  /* the largest problem: T = 2^31 - 1, R = 4096 (products up to 8192 * T, no overflow); the middle rank */
  static const int32_t big[] = {0, INT32_MAX};
  assert_int_equal(cake_partition(big, 1, INT32_MAX, 4096, 4095, CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT, 0, f, 8, &n, lcu),
                   CAKE_OK);
  assert_int_equal(n, 1);
  expect_frag(&f[0], 1073479679, 1074003967, 0, 0, 1, 1, 4094, 4094);
  assert_int_equal(cake_partition(big, 1, INT32_MAX, 4096, 4095, CAKE_LAYOUT_ZIGZAG, 64, f, 8, &n, lcu), CAKE_OK);
  assert_int_equal(n, 1);
  expect_frag(&f[0], 1073479680, 1074003968, 0, 0, 1, 1, 4094, 4094);
  assert_int_equal(lcu[1], 1074003968 - 1073479680);
  assert_string_equal(cake_layout_name(CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT), "zigzag_per_document");
  assert_null(cake_layout_name((cake_layout)7));
}

/* ---- errors ---- */

#define EXPECT_ERR(call, st, msg)                                                   \
  do {                                                                              \
    assert_int_equal((call), (st));                                                 \
    assert_string_equal(cake_last_error(), (msg));                                  \
  } while (0)

static void test_errors(void **st) {
  (void)st;
  cake_fragment f[4];
  int32_t lcu[5];
  int64_t n = 0;
  const int32_t *cu = anchor_cu;
  EXPECT_ERR(cake_partition(NULL, 3, 65536, 2, 0, CAKE_LAYOUT_ZIGZAG, 0, f, 4, &n, lcu), CAKE_ERR_ARGUMENT,
             "cake_partition: cu_seqlens and nfrags are required");
  EXPECT_ERR(cake_partition(cu, 3, 65536, 2, 0, CAKE_LAYOUT_ZIGZAG, 0, f, 4, NULL, lcu), CAKE_ERR_ARGUMENT,
             "cake_partition: cu_seqlens and nfrags are required");
  EXPECT_ERR(cake_partition(cu, 3, 65536, 2, 0, CAKE_LAYOUT_ZIGZAG, 0, NULL, 4, &n, lcu), CAKE_ERR_ARGUMENT,
             "cake_partition: local_cu is written only with frags (frags NULL asks for the count)");
  EXPECT_ERR(cake_partition(cu, 3, 65536, 0, 0, CAKE_LAYOUT_ZIGZAG, 0, f, 4, &n, lcu), CAKE_ERR_ARGUMENT,
             "cake_partition: R = 0 ranks is out of range [1, 4096]");
  EXPECT_ERR(cake_partition(cu, 3, 65536, 4097, 0, CAKE_LAYOUT_ZIGZAG, 0, f, 4, &n, lcu), CAKE_ERR_ARGUMENT,
             "cake_partition: R = 4097 ranks is out of range [1, 4096]");
  EXPECT_ERR(cake_partition(cu, 3, 65536, 2, 2, CAKE_LAYOUT_ZIGZAG, 0, f, 4, &n, lcu), CAKE_ERR_ARGUMENT,
             "cake_partition: rank 2 is out of range [0, 2) for R = 2");
  EXPECT_ERR(cake_partition(cu, 3, 65536, 2, -1, CAKE_LAYOUT_ZIGZAG, 0, f, 4, &n, lcu), CAKE_ERR_ARGUMENT,
             "cake_partition: rank -1 is out of range [0, 2) for R = 2");
  EXPECT_ERR(cake_partition(cu, 3, 65536, 2, 0, (cake_layout)3, 0, f, 4, &n, lcu), CAKE_ERR_ARGUMENT,
             "cake_partition: unknown layout 3 (contiguous, zigzag, zigzag_per_document)");
  EXPECT_ERR(cake_partition(cu, 3, 65536, 2, 0, CAKE_LAYOUT_ZIGZAG, -64, f, 4, &n, lcu), CAKE_ERR_ARGUMENT,
             "cake_partition: align = -64 is out of range [0, 1048576] (0: no alignment)");
  EXPECT_ERR(cake_partition(cu, 3, 65536, 2, 0, CAKE_LAYOUT_ZIGZAG, (1 << 20) + 1, f, 4, &n, lcu), CAKE_ERR_ARGUMENT,
             "cake_partition: align = 1048577 is out of range [0, 1048576] (0: no alignment)");
  EXPECT_ERR(cake_partition(cu, 3, (int64_t)1 << 31, 2, 0, CAKE_LAYOUT_ZIGZAG, 0, f, 4, &n, lcu), CAKE_ERR_ARGUMENT,
             "cake_partition: T = 2147483648 is out of range [0, 2^31)");
  EXPECT_ERR(cake_partition(cu, 3, -1, 2, 0, CAKE_LAYOUT_ZIGZAG, 0, f, 4, &n, lcu), CAKE_ERR_ARGUMENT,
             "cake_partition: T = -1 is out of range [0, 2^31)");
  EXPECT_ERR(cake_partition(cu, 3, 65536, 2, 0, CAKE_LAYOUT_ZIGZAG, 0, f, -1, &n, lcu), CAKE_ERR_ARGUMENT,
             "cake_partition: cap = -1 is negative");
  EXPECT_ERR(cake_partition(cu, 0, 65536, 2, 0, CAKE_LAYOUT_ZIGZAG, 0, f, 4, &n, lcu), CAKE_ERR_ARGUMENT,
             "ndocs = 0 is out of range [1, 2147483646]");
  static const int32_t bad0[] = {1, 5, 10}, bad_dec[] = {0, 10, 5, 20}, bad_end[] = {0, 10, 999};
  EXPECT_ERR(cake_partition(bad0, 2, 10, 2, 0, CAKE_LAYOUT_ZIGZAG, 0, f, 4, &n, lcu), CAKE_ERR_PLAN,
             "cu_seqlens[0] is 1; the offsets must start at 0");
  EXPECT_ERR(cake_partition(bad_dec, 3, 20, 2, 0, CAKE_LAYOUT_ZIGZAG, 0, f, 4, &n, lcu), CAKE_ERR_PLAN,
             "cu_seqlens[2] is 5, less than cu_seqlens[1] = 10 (the offsets must not decrease)");
  EXPECT_ERR(cake_partition(bad_end, 2, 1000, 2, 0, CAKE_LAYOUT_ZIGZAG, 0, f, 4, &n, lcu), CAKE_ERR_PLAN,
             "cu_seqlens[2] (the last offset) is 999 but T is 1000");
  /* too small: the count needed is named and left in *nfrags; nothing else is written */
  f[0].start = -7;
  lcu[0] = -7;
  n = 0;
  EXPECT_ERR(cake_partition(cu, 3, 65536, 2, 0, CAKE_LAYOUT_ZIGZAG, 0, f, 2, &n, lcu), CAKE_ERR_ARGUMENT,
             "cake_partition: rank 0 of 2 has 3 fragments; cap is 2");
  assert_int_equal(n, 3);
  assert_int_equal(f[0].start, -7);
  assert_int_equal(lcu[0], -7);
  /* the count alone, and an exact fit */
  n = 0;
  assert_int_equal(cake_partition(cu, 3, 65536, 2, 0, CAKE_LAYOUT_ZIGZAG, 0, NULL, 0, &n, NULL), CAKE_OK);
  assert_int_equal(n, 3);
  assert_int_equal(cake_partition(cu, 3, 65536, 2, 0, CAKE_LAYOUT_ZIGZAG, 0, f, 3, &n, NULL), CAKE_OK);
  assert_int_equal(f[2].end, 65536);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_anchor),
      cmocka_unit_test(test_short_documents),
      cmocka_unit_test(test_one_token_documents),
      cmocka_unit_test(test_ranks_holding_nothing),
      cmocka_unit_test(test_by_hand),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
