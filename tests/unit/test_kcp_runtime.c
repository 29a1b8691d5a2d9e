/* test_kcp_runtime.c - context-parallel (KCP) programs in libcakert without a
 * GPU: the loader's schema 3 (ranks and fragments dims, exchanges, the
 * frag_table argument) on hand-written manifests, cake_plan_set_partition
 * (dims, local documents, the fragment table against a direct computation,
 * the workspace) and the refusals of cake_launch, cake_launch_comm and
 * cake_launch_group up to the first driver call. Every path is run with a
 * counting allocator: nothing leaks, on success or failure. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "manifest_fixture.h"
#include "rt.h"

static char g_tmp[500];
static int g_seq;

static int make_tmp(void **st) {
  const char *t = getenv("TMPDIR");
  snprintf(g_tmp, sizeof g_tmp, "%s/cake-kcprt-XXXXXX", t && *t ? t : "/tmp");
  return mkdtemp(g_tmp) ? 0 : -1;
}

static int remove_tmp(void **st) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  return system(cmd) == 0 ? 0 : -1;
}

/* ---- manifests (written with ' for ", as in test_runtime.c) ---- */

/* A running sum over documents split across ranks (kcp_cumsum's shape):
 * each rank's fragments' totals (tot: f32[F, H]) are gathered (gtot:
 * f32[R, F, H]) and folded. Entry fwd: total, gather, fold; entry local:
 * total alone (no exchange). */
#define KCP_FILE \
  "{'path': 'bin/k.bin', 'sha256': 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', 'bytes': 3}"
#define KCP_KERNEL " 'kernels': [{'target': 'sm_90a', 'symbol': 's', 'format': 'cubin', 'file': 'bin/k.bin', 'shared_bytes': 0}]}"
#define KCP_PROGRAM                                                                                                    \
  "{'name': 'cum', 'dims': [{'name': 'T', 'role': 'tokens'}, {'name': 'N', 'role': 'docs'},"                          \
  " {'name': 'chunks', 'role': 'chunks'}, {'name': 'H', 'role': 'size'}, {'name': 'R', 'role': 'ranks'},"             \
  " {'name': 'F', 'role': 'fragments'}], 'chunk': 64,"                                                                 \
  " 'tensors': [{'name': 'x', 'role': 'in', 'dtype': 'bf16', 'shape': ['T', 'H']},"                                   \
  " {'name': 'y', 'role': 'out', 'dtype': 'f32', 'shape': ['T', 'H']},"                                                \
  " {'name': 'tot', 'role': 'temp', 'dtype': 'f32', 'shape': ['F', 'H'],"                                              \
  " 'live': [{'entry': 'fwd', 'first': 0, 'last': 1}, {'entry': 'local', 'first': 0, 'last': 0}], 'pinned': false},"  \
  " {'name': 'gtot', 'role': 'temp', 'dtype': 'f32', 'shape': ['R', 'F', 'H'],"                                        \
  " 'live': [{'entry': 'fwd', 'first': 1, 'last': 2}], 'pinned': false}],"                                             \
  " 'params': [],"                                                                                                     \
  " 'stages': [{'name': 'total', 'block': [128, 1, 1], 'grid': [{'kind': 'docs'}, {'kind': 'dim', 'name': 'H'}],"     \
  " 'args': [{'kind': 'buffer', 'name': 'x'}, {'kind': 'workspace', 'name': 'tot'},"                                   \
  " {'kind': 'workspace', 'name': 'chunk_table'}, {'kind': 'workspace', 'name': 'doc_table'},"                         \
  " {'kind': 'workspace', 'name': 'frag_table', 'dtype': 'i32'}, {'kind': 'parameter', 'name': 'H'}],"                 \
  KCP_KERNEL ","                                                                                                       \
  " {'name': 'fold', 'block': [128, 1, 1], 'grid': [{'kind': 'docs'}],"                                                \
  " 'args': [{'kind': 'workspace', 'name': 'gtot'}, {'kind': 'buffer', 'name': 'y'},"                                  \
  " {'kind': 'workspace', 'name': 'frag_table'}, {'kind': 'workspace', 'name': 'doc_table'}],"                         \
  KCP_KERNEL "],"                                                                                                      \
  " 'exchanges': [{'name': 'gather', 'op': 'all_gather', 'src': 'tot', 'dst': 'gtot'}],"                               \
  " 'entries': [{'name': 'fwd', 'stages': ['total', 'gather', 'fold']}, {'name': 'local', 'stages': ['total']}]}"
/* A single-rank program of schema 3 (no ranks dim, no exchanges). */
#define PLAIN_PROGRAM                                                                                                  \
  "{'name': 'plain', 'dims': [{'name': 'T', 'role': 'tokens'}, {'name': 'H', 'role': 'size'}], 'chunk': 64,"           \
  " 'tensors': [{'name': 'x', 'role': 'in', 'dtype': 'bf16', 'shape': ['T', 'H']}], 'params': [],"                    \
  " 'stages': [{'name': 'k', 'block': [128, 1, 1], 'grid': [{'kind': 'chunks'}],"                                     \
  " 'args': [{'kind': 'buffer', 'name': 'x'}, {'kind': 'workspace', 'name': 'chunk_table'}]," KCP_KERNEL "],"          \
  " 'exchanges': [], 'entries': [{'name': 'fwd', 'stages': ['k']}]}"
#define KCP_HEAD "{'schema': 'cake.package', 'schema_version': 3, 'files': [" KCP_FILE "], 'programs': ["
static const char KCP[] = KCP_HEAD KCP_PROGRAM ", " PLAIN_PROGRAM "]}";

/* A package directory holding `manifest` (JSON) and bin/k.bin. */
static void synth_dir(char *dir, size_t n, const char *manifest) {
  snprintf(dir, n, "%s/p%d", g_tmp, g_seq++);
  assert_int_equal(mkdir(dir, 0755), 0);
  fixture_package_dir(dir, manifest);
}

/* A counting allocator that fails from its fail_at-th allocation on. */
typedef struct Count {
  long calls, fail_at, live;
} Count;

static void *count_alloc(void *ctx, size_t n) {
  Count *c = ctx;
  if (c->fail_at >= 0 && c->calls >= c->fail_at) return NULL;
  c->calls++;
  c->live++;
  return malloc(n);
}

static void count_free(void *ctx, void *p) {
  Count *c = ctx;
  c->live--;
  free(p);
}

static Count g_count;
static const cake_allocator g_al = {count_alloc, count_free, &g_count};

/* Loads the ' form `text` with the counting allocator. */
static cake_status load_json(const char *json, cake_package **pkg) {
  char dir[700];
  synth_dir(dir, sizeof dir, json);
  g_count = (Count){0, -1, 0};
  return cake_package_load(dir, &g_al, pkg);
}

static cake_status load_q(const char *text, cake_package **pkg) {
  char *m = fixture_q(text);
  cake_status s = load_json(m, pkg);
  free(m);
  return s;
}

/* Loads the manifest `text` (' form) with `old` replaced by `new_`. */
static cake_status load_replaced(const char *text, const char *old, const char *new_, cake_package **pkg) {
  char *m = fixture_replaced(text, old, new_);
  cake_status s = load_json(m, pkg);
  free(m);
  return s;
}

static void kcp_package_loads(void **st) {
  cake_package *pkg;
  assert_int_equal(load_q(KCP, &pkg), CAKE_OK);
  const cake_program *p;
  assert_int_equal(cake_package_program(pkg, "cum", &p), CAKE_OK);
  assert_int_equal(p->ranks_dim, 4);
  assert_int_equal(p->frags_dim, 5);
  assert_int_equal(p->nexchanges, 1);
  assert_string_equal(p->exchanges[0].name, "gather");
  assert_int_equal(p->exchanges[0].src, 2);
  assert_int_equal(p->exchanges[0].dst, 3);
  assert_int_equal(p->entries[0].n, 3);
  assert_int_equal(p->entries[0].stages[0], 0);
  assert_true(RT_IS_EXCHANGE(p->entries[0].stages[1]));
  assert_int_equal(RT_EXCHANGE_INDEX(p->entries[0].stages[1]), 0);
  assert_int_equal(p->entries[0].stages[2], 1);
  assert_int_equal(p->stages[0].args[4].what, A_FRAG_TABLE);
  assert_int_equal(cake_package_program(pkg, "plain", &p), CAKE_OK);
  assert_int_equal(p->ranks_dim, -1);
  assert_int_equal(p->nexchanges, 0);
  cake_package_free(pkg);
  assert_int_equal(g_count.live, 0);
  /* 'exchanges' is optional (cakec writes it for context-parallel programs only) */
  assert_int_equal(load_replaced(KCP, "'exchanges': [], ", "", &pkg), CAKE_OK);
  assert_int_equal(cake_package_program(pkg, "plain", &p), CAKE_OK);
  assert_int_equal(p->nexchanges, 0);
  cake_package_free(pkg);
  assert_int_equal(g_count.live, 0);
  /* a program may declare ranks without fragments */
  assert_int_equal(load_replaced(KCP, "{'name': 'F', 'role': 'fragments'}", "{'name': 'F', 'role': 'size'}", &pkg),
                   CAKE_OK);
  assert_int_equal(cake_package_program(pkg, "cum", &p), CAKE_OK);
  assert_int_equal(p->frags_dim, -1);
  cake_package_free(pkg);
  assert_int_equal(g_count.live, 0);
}

/* One edit of a manifest, and what the loader must say of it. */
typedef struct Refusal {
  const char *old, *new_, *msg;
} Refusal;

/* Each edit of `text` is refused with its message, allocating nothing that stays. */
static void expect_refusals(const char *text, const Refusal *bad, size_t n) {
  for (size_t i = 0; i < n; i++) {
    cake_package *pkg = (cake_package *)&g_seq;
    cake_status s = load_replaced(text, bad[i].old, bad[i].new_, &pkg);
    if (s != CAKE_ERR_PACKAGE || !strstr(cake_last_error(), bad[i].msg))
      fail_msg("case %zu (%s): %s: %s\n  expected: %s", i, bad[i].new_, cake_status_name(s), cake_last_error(),
               bad[i].msg);
    assert_null(pkg);
    assert_int_equal(g_count.live, 0);
  }
}

/* One edit of KCP each, and what the loader must say. */
static const Refusal bad_kcp[] = {
    {"'schema_version': 3", "'schema_version': 6", "has schema version 6; this runtime reads versions 2 to 5 (rebuild"},
    {"'op': 'all_gather'", "'op': 'halo', 'before': 3, 'after': 0", "exchange 'gather': a halo exchange needs schema version 4"},
    {"'stages': ['total', 'gather', 'fold']}", "'stages': ['total', 'gather', 'fold'], 'rounds': [{'first': 1, 'count': 1, 'reverse': false}]}",
     "entry 'fwd': 'rounds' needs schema version 5"},
    {"'schema_version': 3", "'schema_version': 2", "program 'cum': dim 'R': 'role' is 'ranks'; expected size, tokens, docs or chunks"},
    /* dims */
    {"{'name': 'H', 'role': 'size'}", "{'name': 'H', 'role': 'ranks'}", "dim 'R': a second dim with role 'ranks'"},
    {"{'name': 'H', 'role': 'size'}", "{'name': 'H', 'role': 'fragments'}", "dim 'F': a second dim with role 'fragments'"},
    {"{'name': 'H', 'role': 'size'}", "{'name': 'H', 'role': 'rank'}",
     "dim 'H': 'role' is 'rank'; expected size, tokens, docs, chunks, ranks or fragments"},
    {"{'name': 'R', 'role': 'ranks'}", "{'name': 'R', 'role': 'size'}",
     "program 'cum': a dim with role 'fragments' needs one with role 'ranks'"},
    {"{'name': 'N', 'role': 'docs'}", "{'name': 'N', 'role': 'size'}",
     "program 'cum': a dim with role 'ranks' needs one with role 'docs'"},
    /* the frag_table argument */
    {"'name': 'frag_table', 'dtype': 'i32'", "'name': 'frag_table', 'dtype': 'f32'",
     "stage 'total': argument 'frag_table' has dtype 'f32'; what it passes is i32"},
    {"{'name': 'x', 'role': 'in'", "{'name': 'frag_table', 'role': 'in'",
     "tensor 'frag_table': the name is reserved for the runtime's table in the workspace"},
    {"{'kind': 'buffer', 'name': 'x'}, {'kind': 'workspace', 'name': 'chunk_table'}",
     "{'kind': 'buffer', 'name': 'x'}, {'kind': 'workspace', 'name': 'frag_table'}",
     "program 'plain': stage 'k': argument 'frag_table' needs a dim with role 'ranks'"},
    /* exchanges */
    {"'exchanges': [{", "'exchanges': 3, 'x': [{", "program 'cum': 'exchanges' must be an array, not a number"},
    {"'op': 'all_gather'", "'op': 'all_reduce'", "exchange 'gather': 'op' is 'all_reduce'; expected all_gather"},
    {"'src': 'tot'", "'src': 'x'", "exchange 'gather': 'src' names 'x', which is not a temp"},
    {"'dst': 'gtot'", "'dst': 'y'", "exchange 'gather': 'dst' names 'y', which is not a temp"},
    {"'dst': 'gtot'", "'dst': 'nope'", "exchange 'gather': 'dst' names 'nope', which is not a tensor"},
    {"'src': 'tot', ", "", "exchange 'gather': 'src' is missing"},
    {"'name': 'gather', 'op'", "'name': 'fold', 'op'", "exchange 'fold': a stage has the same name"},
    {"'exchanges': [{'name': 'gather', 'op': 'all_gather', 'src': 'tot', 'dst': 'gtot'}",
     "'exchanges': [{'name': 'gather', 'op': 'all_gather', 'src': 'tot', 'dst': 'gtot'},"
     " {'name': 'gather', 'op': 'all_gather', 'src': 'tot', 'dst': 'gtot'}",
     "exchange 'gather': declared twice"},
    {"'dtype': 'f32', 'shape': ['R', 'F', 'H']", "'dtype': 'bf16', 'shape': ['R', 'F', 'H']",
     "exchange 'gather': 'src' 'tot' is f32 but 'dst' 'gtot' is bf16"},
    {"'shape': ['R', 'F', 'H']", "'shape': ['F', 'R', 'H']",
     "exchange 'gather': 'dst' 'gtot' has shape [F, R, H]; an all_gather of 'tot' [F, H] needs ['R'] followed by its shape"},
    {"'shape': ['R', 'F', 'H']", "'shape': ['R', 'F', 'H', 1]", "'dst' 'gtot' has shape [R, F, H, 1]"},
    {"'shape': ['R', 'F', 'H']", "'shape': ['R', 'F', 4]", "'dst' 'gtot' has shape [R, F, 4]"},
    {"'shape': ['F', 'H']", "'shape': ['N', 'H']",
     "exchange 'gather': 'src' 'tot' has extent 'N' (axis 0): an exchanged tensor has no tokens, docs or chunks extent"},
    /* entries and live ranges */
    {"'stages': ['total', 'gather', 'fold']", "'stages': ['total', 'gathr', 'fold']",
     "entry 'fwd': names an unknown stage 'gathr' (neither a kernel nor an exchange)"},
    {"'live': [{'entry': 'fwd', 'first': 1, 'last': 2}]", "'live': [{'entry': 'fwd', 'first': 2, 'last': 2}]",
     "tensor 'gtot': stage 'gather' (position 1 of entry 'fwd') takes the tensor outside its live range"},
    {"'live': [{'entry': 'fwd', 'first': 0, 'last': 1}", "'live': [{'entry': 'fwd', 'first': 0, 'last': 0}",
     "tensor 'tot': stage 'gather' (position 1 of entry 'fwd') takes the tensor outside its live range"},
};

/* KCP at schema 4 with a halo exchange of x (3 tokens before each
 * fragment) into xh: bf16[F, 3, H], run by entry 'halo'. */
static const char HALO[] =
    "{'schema': 'cake.package', 'schema_version': 4, 'files': [" KCP_FILE "], 'programs': [" KCP_PROGRAM "]}";
static const char HALO_TENSOR[] =
    "'pinned': false}, {'name': 'xh', 'role': 'temp', 'dtype': 'bf16', 'shape': ['F', 3, 'H'],"
    " 'live': [{'entry': 'halo', 'first': 0, 'last': 0}], 'pinned': false}],";
static const char HALO_EXCHANGE_AT[] =
    "'exchanges': [{'name': 'hx', 'op': 'halo', 'src': 'x', 'dst': 'xh', 'before': 3, 'after': 0}, ";

/* HALO with the halo added, then `old` replaced by `new_` (none when NULL) */
/* The KCP manifest with a halo exchange (its text: the caller frees it). */
static char *halo_text(void) {
  char *a = fixture_replaced(HALO, "'pinned': false}],", HALO_TENSOR);
  char *b = fixture_replaced(a, "'exchanges': [", HALO_EXCHANGE_AT);
  char *c = fixture_replaced(b, "{'name': 'local', 'stages': ['total']}]",
                             "{'name': 'local', 'stages': ['total']}, {'name': 'halo', 'stages': ['hx']}]");
  free(a), free(b);
  return c;
}

static const Refusal bad_halo[] = {
    {"'before': 3, 'after': 0", "'before': 0, 'after': 0", "exchange 'hx': a halo of no tokens before and none after"},
    {"'before': 3, 'after': 0", "'before': 65, 'after': 0", "exchange 'hx': 'before' is 65; expected an integer in [0, 64]"},
    {"'before': 3, 'after': 0", "'before': 2, 'after': 0",
     "'dst' 'xh' has shape [F, 3, H]; a halo of 'x' [T, H], 2 tokens before and 0 after, needs its dtype and ['F', 2]"},
    {"'src': 'x', 'dst': 'xh'", "'src': 'tot', 'dst': 'xh'", "'src' 'tot' of a halo must have the tokens dim as its first extent"},
    {"'src': 'x', 'dst': 'xh'", "'src': 'x', 'dst': 'y'", "'dst' names 'y', which is not a temp"},
    {"'dtype': 'bf16', 'shape': ['F', 3, 'H']", "'dtype': 'f32', 'shape': ['F', 3, 'H']", "'dst' 'xh' has shape [F, 3, H]"},
};

static void halo_manifests_are_validated(void **st) {
  (void)st;
  cake_package *pkg = NULL;
  char *text = halo_text();
  cake_status s = load_json(text, &pkg);
  if (s) fail_msg("the halo manifest: %s", cake_last_error());
  cake_package_free(pkg);
  expect_refusals(text, bad_halo, sizeof bad_halo / sizeof bad_halo[0]);
  free(text);
  assert_int_equal(g_count.live, 0);
}

/* Schema 5: a rounds group (total, nx) and a send_next exchange; per rank
 * the fragment table's ends() header, the rounds and the comm bytes. */
#define P5_PROGRAM                                                                                                     \
  "{'name': 'cum', 'dims': [{'name': 'T', 'role': 'tokens'}, {'name': 'N', 'role': 'docs'},"                          \
  " {'name': 'chunks', 'role': 'chunks'}, {'name': 'H', 'role': 'size'}, {'name': 'R', 'role': 'ranks'},"             \
  " {'name': 'F', 'role': 'fragments'}], 'chunk': 64,"                                                                 \
  " 'tensors': [{'name': 'x', 'role': 'in', 'dtype': 'bf16', 'shape': ['T', 'H']},"                                   \
  " {'name': 'y', 'role': 'out', 'dtype': 'f32', 'shape': ['T', 'H']},"                                                \
  " {'name': 'tot', 'role': 'temp', 'dtype': 'f32', 'shape': ['F', 'H'],"                                              \
  " 'live': [{'entry': 'fwd', 'first': 0, 'last': 2}], 'pinned': false},"                                              \
  " {'name': 'tot2', 'role': 'temp', 'dtype': 'f32', 'shape': ['F', 'H'],"                                             \
  " 'live': [{'entry': 'fwd', 'first': 0, 'last': 2}], 'pinned': false}],"                                             \
  " 'params': [],"                                                                                                     \
  " 'stages': [{'name': 'total', 'block': [128, 1, 1], 'grid': [{'kind': 'docs'}, {'kind': 'dim', 'name': 'H'}],"     \
  " 'args': [{'kind': 'buffer', 'name': 'x'}, {'kind': 'workspace', 'name': 'tot'}, {'kind': 'workspace', 'name': 'tot2'}," \
  " {'kind': 'workspace', 'name': 'frag_table', 'dtype': 'i32'}, {'kind': 'round', 'name': 'round', 'dtype': 'i32'}]," \
  KCP_KERNEL ","                                                                                                       \
  " {'name': 'fold', 'block': [128, 1, 1], 'grid': [{'kind': 'docs'}],"                                                \
  " 'args': [{'kind': 'workspace', 'name': 'tot2'}, {'kind': 'buffer', 'name': 'y'},"                                  \
  " {'kind': 'workspace', 'name': 'frag_table'}, {'kind': 'workspace', 'name': 'doc_table'}],"                         \
  KCP_KERNEL "],"                                                                                                      \
  " 'exchanges': [{'name': 'nx', 'op': 'send_next', 'src': 'tot', 'dst': 'tot2'}],"                                    \
  " 'entries': [{'name': 'fwd', 'stages': ['total', 'nx', 'fold'], 'rounds': [{'first': 0, 'count': 2, 'reverse': false}]}]}"
static const char P5[] = "{'schema': 'cake.package', 'schema_version': 5, 'files': [" KCP_FILE "], 'programs': [" P5_PROGRAM "]}";

static void schema5_rounds_and_sends(void **st) {
  (void)st;
  cake_package *pkg;
  assert_int_equal(load_q(P5, &pkg), CAKE_OK);
  const cake_program *prog;
  assert_int_equal(cake_package_program(pkg, "cum", &prog), CAKE_OK);
  assert_int_equal(prog->frag_header, 2);
  assert_int_equal(prog->entries[0].nrounds, 1);
  static const int32_t cu[] = {0, 300, 1000, 1100};
  for (int R = 1; R <= 3; R++)
    for (int rank = 0; rank < R; rank++) {
      cake_plan *plan;
      assert_int_equal(cake_plan_create(prog, &plan), CAKE_OK);
      assert_int_equal(cake_plan_set_dim(plan, "H", 4), CAKE_OK);
      assert_int_equal(cake_plan_set_partition(plan, cu, 3, 1100, R, rank, CAKE_LAYOUT_ZIGZAG, 64), CAKE_OK);
      assert_int_equal(cake_plan_finalize(plan), CAKE_OK);
      /* the rounds: the most fragments of a document over every rank */
      int64_t most = 0, count[3] = {0}, F = 0;
      for (int q = 0; q < R; q++) {
        cake_fragment fr[16];
        int64_t n;
        assert_int_equal(cake_partition(cu, 3, 1100, R, q, CAKE_LAYOUT_ZIGZAG, 64, fr, 16, &n, NULL), CAKE_OK);
        if (n > F) F = n;
        for (int64_t f = 0; f < n; f++)
          if (++count[fr[f].doc] > most) most = count[fr[f].doc];
      }
      assert_int_equal(plan->nrounds, most);
      /* at 6 N: the ends() entries, one per document, after the others; each names its document's last fragment */
      int64_t N = plan->ndocs, first = plan->frag_table[6 * N], nends = plan->frag_table[6 * N + 1];
      assert_int_equal(nends, 3);
      assert_int_equal(plan->frag_ints, 6 * N + 2 + 2 * (first + nends));
      for (int d = 0; d < 3; d++) {
        int q = plan->frag_table[6 * N + 2 + 2 * (first + d)], g = plan->frag_table[6 * N + 2 + 2 * (first + d) + 1];
        cake_fragment fr[16];
        int64_t n;
        assert_int_equal(cake_partition(cu, 3, 1100, R, q, CAKE_LAYOUT_ZIGZAG, 64, fr, 16, &n, NULL), CAKE_OK);
        assert_true(g < n && fr[g].doc == d && !fr[g].continued);
      }
      /* send_next in the group: once per round, to the next rank, from the previous */
      uint64_t sent, recv, one = (uint64_t)F * 4 * 4 * (uint64_t)most;
      assert_int_equal(cake_plan_comm_bytes(plan, "fwd", &sent, &recv), CAKE_OK);
      assert_int_equal(sent, rank + 1 < R ? one : 0);
      assert_int_equal(recv, rank > 0 ? one : 0);
      cake_plan_free(plan);
    }
  cake_package_free(pkg);
  assert_int_equal(g_count.live, 0);
  /* what the loader refuses in schema 5 */
  static const Refusal bad[] = {
      {"'dst': 'tot2'", "'dst': 'tot'", "'src' and 'dst' are both 'tot'"},
      {"'name': 'round', 'dtype': 'i32'", "'name': 'round', 'dtype': 'f64'", "the round argument 'round' is an i32"},
      {"{'kind': 'workspace', 'name': 'frag_table', 'dtype': 'i32'}, ", "", "takes the 'frag_table' too"},
      {"'count': 2", "'count': 4", "'count' is 4; expected an integer in [1, 3]"},
      {"'first': 0, 'count': 2", "'first': 2, 'count': 2", "overlaps another group or passes the 3 stages"},
      {"'first': 0, 'count': 2", "'first': 0, 'count': 3", "stage 'fold' is in rounds but takes no round argument"},
      {"'first': 0, 'count': 2", "'first': 1, 'count': 1", "stage 'total' takes a round argument but is not in rounds"},
      {"'schema_version': 5", "'schema_version': 4", "'round'"},
  };
  expect_refusals(P5, bad, sizeof bad / sizeof bad[0]);
}

static void kcp_manifests_are_validated(void **st) {
  expect_refusals(KCP, bad_kcp, sizeof bad_kcp / sizeof bad_kcp[0]);
}

/* ---- partitions ---- */

/* The fragment table of `rank`, computed directly: every rank's fragments;
 * each document's fragments in order, found by walking it from its start
 * (the fragment starting where the last one ended); for each of this rank's
 * fragments, its row of 6 and its before and after entries. *N: the local
 * documents; returns the table (6N + 2E int32, *ints of them; caller frees). */
static int32_t *direct_table(const int32_t *cu, int64_t nd, int64_t T, int R, int rank, cake_layout layout, int align,
                             int64_t *N, int64_t *ints, int64_t *F) {
  cake_fragment *fr[64];
  int64_t n[64];
  *F = 1;
  for (int r = 0; r < R; r++) {
    assert_int_equal(cake_partition(cu, nd, T, R, r, layout, align, NULL, 0, &n[r], NULL), CAKE_OK);
    fr[r] = calloc((size_t)n[r] + 1, sizeof(cake_fragment));
    assert_int_equal(cake_partition(cu, nd, T, R, r, layout, align, fr[r], n[r], &n[r], NULL), CAKE_OK);
    if (n[r] > *F) *F = n[r];
  }
  *N = n[rank] ? n[rank] : 1;
  int32_t *t = calloc((size_t)(6 * *N + 2 * 64 * 64 * (*N)), sizeof(int32_t));
  int32_t order[2 * 512];
  int64_t e = 0;
  for (int64_t f = 0; f < n[rank]; f++) {
    const cake_fragment *x = &fr[rank][f];
    int no = 0, at = -1;
    for (int64_t start = cu[x->doc]; start < cu[x->doc + 1];) {
      int found = 0;
      for (int r = 0; r < R && !found; r++)
        for (int64_t h = 0; h < n[r] && !found; h++)
          if (fr[r][h].doc == x->doc && fr[r][h].start == start) {
            if (r == rank && h == f) at = no;
            order[2 * no] = r, order[2 * no + 1] = (int32_t)h, no++;
            start = fr[r][h].end;
            found = 1;
          }
      assert_true(found);
    }
    assert_true(at >= 0);
    int32_t *row = t + 6 * f;
    row[0] = x->continues, row[1] = x->continued, row[2] = (int32_t)e, row[3] = at;
    row[4] = (int32_t)e + at, row[5] = no - at - 1;
    for (int i = 0; i < no; i++)
      if (i != at) t[6 * *N + 2 * e] = order[2 * i], t[6 * *N + 2 * e + 1] = order[2 * i + 1], e++;
    assert_int_equal(row[3] > 0, x->continues);
    assert_int_equal(row[5] > 0, x->continued);
  }
  *ints = 6 * *N + 2 * e;
  for (int r = 0; r < R; r++) free(fr[r]);
  return t;
}

static size_t up256(size_t n) { return (n + 255) / 256 * 256; }

/* The plan of rank `rank` (H = 3) against the direct computation. */
static void check_partition(const cake_program *prog, const int32_t *cu, int64_t nd, int R, int rank, cake_layout layout,
                            int align) {
  int64_t T = cu[nd], N, ints, F;
  int32_t *want = direct_table(cu, nd, T, R, rank, layout, align, &N, &ints, &F);
  cake_plan *plan;
  assert_int_equal(cake_plan_create(prog, &plan), CAKE_OK);
  assert_int_equal(cake_plan_set_dim(plan, "H", 3), CAKE_OK);
  assert_int_equal(cake_plan_set_partition(plan, cu, nd, T, R, rank, layout, align), CAKE_OK);
  assert_int_equal(cake_plan_finalize(plan), CAKE_OK);
  int64_t v;
  cake_fragment fr[64];
  int32_t lcu[65];
  int64_t n;
  assert_int_equal(cake_partition(cu, nd, T, R, rank, layout, align, fr, 64, &n, lcu), CAKE_OK);
  assert_int_equal(cake_plan_get_dim(plan, "T", &v), CAKE_OK);
  assert_int_equal(v, lcu[n]);
  assert_int_equal(cake_plan_get_dim(plan, "N", &v), CAKE_OK);
  assert_int_equal(v, N);
  assert_int_equal(cake_plan_get_dim(plan, "R", &v), CAKE_OK);
  assert_int_equal(v, R);
  assert_int_equal(cake_plan_get_dim(plan, "F", &v), CAKE_OK);
  assert_int_equal(v, F);
  if (n) assert_memory_equal(plan->cu, lcu, sizeof(int32_t) * (size_t)(n + 1));
  else assert_true(plan->cu[0] == 0 && plan->cu[1] == 0 && plan->ndocs == 1);
  assert_int_equal(plan->frag_ints, ints);
  assert_memory_equal(plan->frag_table, want, sizeof(int32_t) * (size_t)ints);
  /* the workspace: chunk table, doc table, frag table, then tot [F, H] and gtot [R, F, H] (live together) */
  size_t ws, off, bytes, ct = up256((size_t)plan->nchunks * 16), dt = up256((size_t)(N + 1) * 4);
  assert_int_equal(cake_plan_item(plan, "frag_table", &off, &bytes), CAKE_OK);
  assert_int_equal(bytes, (size_t)ints * 4);
  assert_int_equal(off, ct + dt);
  assert_int_equal(cake_plan_workspace_bytes(plan, &ws), CAKE_OK);
  assert_int_equal(ws, ct + dt + up256(bytes) + up256((size_t)F * 3 * 4) + up256((size_t)R * F * 3 * 4));
  assert_int_equal(cake_plan_item(plan, "gtot", &off, &bytes), CAKE_OK);
  assert_int_equal(bytes, (size_t)R * F * 3 * 4);
  /* the exchanges' bytes: fwd gathers tot [F, H] f32 once; local has none */
  uint64_t sent, recv;
  assert_int_equal(cake_plan_comm_bytes(plan, "fwd", &sent, &recv), CAKE_OK);
  assert_int_equal(sent, (uint64_t)F * 3 * 4);
  assert_int_equal(recv, (uint64_t)(R - 1) * F * 3 * 4);
  assert_int_equal(cake_plan_comm_bytes(plan, "local", &sent, &recv), CAKE_OK);
  assert_true(sent == 0 && recv == 0);
  assert_int_equal(cake_plan_comm_bytes(plan, "bwd", &sent, &recv), CAKE_ERR_ARGUMENT);
  assert_non_null(strstr(cake_last_error(), "program 'cum' has no entry 'bwd'"));
  assert_int_equal(cake_plan_comm_bytes(plan, "fwd", NULL, &recv), CAKE_ERR_ARGUMENT);
  cake_plan_free(plan);
  free(want);
}

static void partitions_set_dims_and_tables(void **st) {
  cake_package *pkg;
  assert_int_equal(load_q(KCP, &pkg), CAKE_OK);
  const cake_program *prog;
  assert_int_equal(cake_package_program(pkg, "cum", &prog), CAKE_OK);
  static const int32_t cu1[] = {0, 1000, 1300, 1300, 3000, 3001, 4000};
  static const int32_t cu2[] = {0, 3}; /* short: ranks without fragments */
  static const int32_t cu3[] = {0, 200, 400, 600, 800};
  static const int32_t cu4[] = {0, 5000};
  const struct {
    const int32_t *cu;
    int nd;
  } seqs[] = {{cu1, 6}, {cu2, 1}, {cu3, 4}, {cu4, 1}};
  for (size_t k = 0; k < sizeof seqs / sizeof seqs[0]; k++)
    for (int R = 1; R <= 4; R++)
      for (int layout = 0; layout < 3; layout++)
        for (int align = 0; align <= 64; align += 64)
          for (int rank = 0; rank < R; rank++)
            check_partition(prog, seqs[k].cu, seqs[k].nd, R, rank, (cake_layout)layout, align);
  /* a rank without fragments: one empty document, a row of zeros */
  cake_plan *plan;
  assert_int_equal(cake_plan_create(prog, &plan), CAKE_OK);
  assert_int_equal(cake_plan_set_dim(plan, "H", 1), CAKE_OK);
  assert_int_equal(cake_plan_set_partition(plan, cu2, 1, 3, 4, 0, CAKE_LAYOUT_CONTIGUOUS, 0), CAKE_OK);
  assert_int_equal(cake_plan_finalize(plan), CAKE_OK);
  assert_int_equal(plan->ndocs, 1);
  assert_int_equal(plan->frag_ints, 6);
  for (int i = 0; i < 6; i++) assert_int_equal(plan->frag_table[i], 0);
  assert_int_equal(cake_plan_chunk_count(plan), 0);
  /* zigzag over one document, R = 2: rank 1 holds the middle, rank 0 both ends */
  assert_int_equal(cake_plan_set_partition(plan, cu4, 1, 5000, 2, 0, CAKE_LAYOUT_ZIGZAG, 64), CAKE_OK);
  assert_int_equal(cake_plan_finalize(plan), CAKE_OK);
  const int32_t want[] = {0, 1, 0, 0, 0, 2, /* [0, 1280): after it (1, 0), (0, 1) */
                          1, 0, 2, 2, 4, 0, /* [3776, 5000): before it (0, 0), (1, 0) */
                          1, 0, 0, 1,       0, 0, 1, 0};
  assert_int_equal(plan->frag_ints, 20);
  assert_memory_equal(plan->frag_table, want, sizeof want);
  cake_plan_free(plan);
  cake_package_free(pkg);
  assert_int_equal(g_count.live, 0);
}

static void partition_refusals(void **st) {
  cake_package *pkg;
  assert_int_equal(load_q(KCP, &pkg), CAKE_OK);
  const cake_program *prog, *plain;
  assert_int_equal(cake_package_program(pkg, "cum", &prog), CAKE_OK);
  assert_int_equal(cake_package_program(pkg, "plain", &plain), CAKE_OK);
  static const int32_t cu[] = {0, 100, 300};
  cake_plan *plan;
  /* a program without ranks */
  assert_int_equal(cake_plan_create(plain, &plan), CAKE_OK);
  assert_int_equal(cake_plan_set_partition(plan, cu, 2, 300, 2, 0, CAKE_LAYOUT_ZIGZAG, 0), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "program 'plain' is not context-parallel (it has no dim with role 'ranks'): "
                                         "give its documents with cake_plan_set_docs");
  cake_plan_free(plan);
  assert_int_equal(cake_plan_set_partition(NULL, cu, 2, 300, 2, 0, CAKE_LAYOUT_ZIGZAG, 0), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_create(prog, &plan), CAKE_OK);
  assert_int_equal(cake_plan_set_dim(plan, "H", 2), CAKE_OK);
  /* cake_partition's argument errors, the plan left alone */
  const struct {
    const int32_t *cu;
    int64_t nd, T;
    int32_t R, rank;
    int layout, align;
    cake_status s;
    const char *msg;
  } bad[] = {
      {NULL, 2, 300, 2, 0, 1, 0, CAKE_ERR_ARGUMENT, "cake_partition: cu_seqlens and nfrags are required"},
      {cu, 2, 300, 0, 0, 1, 0, CAKE_ERR_ARGUMENT, "cake_partition: R = 0 ranks is out of range [1, 4096]"},
      {cu, 2, 300, 2, 2, 1, 0, CAKE_ERR_ARGUMENT, "cake_partition: rank 2 is out of range [0, 2) for R = 2"},
      {cu, 2, 300, 2, -1, 1, 0, CAKE_ERR_ARGUMENT, "cake_partition: rank -1 is out of range [0, 2) for R = 2"},
      {cu, 2, 300, 2, 0, 7, 0, CAKE_ERR_ARGUMENT, "cake_partition: unknown layout 7"},
      {cu, 2, 300, 2, 0, 1, -1, CAKE_ERR_ARGUMENT, "cake_partition: align = -1 is out of range"},
      {cu, 2, 301, 2, 0, 1, 0, CAKE_ERR_PLAN, "cu_seqlens[2] (the last offset) is 300 but T is 301"},
      {cu, 0, 300, 2, 0, 1, 0, CAKE_ERR_ARGUMENT, "ndocs = 0 is out of range"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(cake_plan_set_partition(plan, bad[i].cu, bad[i].nd, bad[i].T, bad[i].R, bad[i].rank,
                                             (cake_layout)bad[i].layout, bad[i].align),
                     bad[i].s);
    if (!strstr(cake_last_error(), bad[i].msg)) fail_msg("case %zu: %s", i, cake_last_error());
    assert_int_equal(plan->partitioned, 0);
  }
  assert_int_equal(cake_plan_finalize(plan), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "program 'cum' is context-parallel: give its plan the documents with "
                                         "cake_plan_set_partition (its fragment table and ranks come from the "
                                         "partition; cake_plan_set_docs gives neither)");
  /* R and F by hand: checked against the partition */
  assert_int_equal(cake_plan_set_dim(plan, "R", 3), CAKE_OK);
  assert_int_equal(cake_plan_set_partition(plan, cu, 2, 300, 2, 0, CAKE_LAYOUT_ZIGZAG, 0), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "dim 'R' is 3 (cake_plan_set_dim) but the partition has R = 2 ranks");
  assert_int_equal(cake_plan_set_dim(plan, "R", 2), CAKE_OK);
  assert_int_equal(cake_plan_set_dim(plan, "F", 1), CAKE_OK);
  assert_int_equal(cake_plan_set_partition(plan, cu, 2, 300, 2, 0, CAKE_LAYOUT_ZIGZAG, 0), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "dim 'F' is 1 (cake_plan_set_dim) but the partition's ranks hold at most 2 fragments");
  assert_int_equal(cake_plan_set_dim(plan, "F", 2), CAKE_OK);
  assert_int_equal(cake_plan_set_partition(plan, cu, 2, 300, 2, 0, CAKE_LAYOUT_ZIGZAG, 0), CAKE_OK);
  assert_int_equal(cake_plan_finalize(plan), CAKE_OK);
  assert_int_equal(cake_plan_set_dim(plan, "R", 4), CAKE_OK);
  assert_int_equal(cake_plan_finalize(plan), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "dim 'R' is 4 (cake_plan_set_dim) but the partition gives 2");
  assert_int_equal(cake_plan_set_dim(plan, "R", 2), CAKE_OK);
  assert_int_equal(cake_plan_finalize(plan), CAKE_OK);
  /* documents without a partition: no fragment table */
  assert_int_equal(cake_plan_set_docs(plan, cu, 2), CAKE_OK);
  assert_int_equal(cake_plan_set_dim(plan, "T", 300), CAKE_OK);
  assert_null(plan->frag_table);
  assert_int_equal(cake_plan_finalize(plan), CAKE_ERR_PLAN);
  assert_non_null(strstr(cake_last_error(), "cake_plan_set_partition"));
  size_t ws;
  assert_int_equal(cake_plan_workspace_bytes(plan, &ws), CAKE_ERR_PLAN);
  assert_non_null(strstr(cake_last_error(), "the plan is not finalized: program 'cum' is context-parallel"));
  cake_binding b[2] = {{"x", {0x1000, CAKE_BF16, 2, {300, 2}, {0}}}, {"y", {0x2000, CAKE_F32, 2, {300, 2}, {0}}}};
  assert_int_equal(cake_launch(plan, "local", b, 1, 0x10000, 1 << 20, 0, 0, NULL), CAKE_ERR_PLAN);
  assert_non_null(strstr(cake_last_error(), "cake_plan_set_partition"));
  cake_plan_free(plan);
  cake_package_free(pkg);
  assert_int_equal(g_count.live, 0);
}

/* Every allocation of set_partition (and of finalizing after it) failing in
 * turn: CAKE_ERR_MEMORY, the plan as it was, nothing leaked. */
static void partition_out_of_memory(void **st) {
  cake_package *pkg;
  assert_int_equal(load_q(KCP, &pkg), CAKE_OK);
  const cake_program *prog;
  assert_int_equal(cake_package_program(pkg, "cum", &prog), CAKE_OK);
  static const int32_t cu[] = {0, 1000, 1300, 1300, 3000};
  long base = g_count.live;
  int done = 0;
  for (long k = 0; k < 200 && !done; k++) {
    cake_plan *plan;
    g_count.fail_at = -1;
    assert_int_equal(cake_plan_create(prog, &plan), CAKE_OK);
    cake_plan_set_dim(plan, "H", 2);
    g_count.fail_at = g_count.calls + k;
    cake_status s = cake_plan_set_partition(plan, cu, 4, 3000, 3, 1, CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT, 64);
    if (s == CAKE_OK) s = cake_plan_finalize(plan);
    if (s == CAKE_OK) done = 1;
    else {
      assert_int_equal(s, CAKE_ERR_MEMORY);
      if (!plan->partitioned) assert_null(plan->frag_table);
    }
    g_count.fail_at = -1;
    cake_plan_free(plan);
    assert_int_equal(g_count.live, base);
  }
  assert_true(done);
  cake_package_free(pkg);
  assert_int_equal(g_count.live, 0);
}

/* ---- launches: refused before any driver call ---- */

typedef struct Group {
  cake_plan *plans[4];
  cake_binding b[4][2];
  const cake_binding *bp[4];
  int nb[4];
  uint64_t ws[4];
  size_t wsb[4];
} Group;

/* Rank plans of `prog` over cu (H = 2), finalized, with bindings and workspaces. */
static void make_group(Group *g, const cake_program *prog, int R, const int32_t *cu, int nd, cake_layout layout) {
  memset(g, 0, sizeof *g);
  for (int r = 0; r < R; r++) {
    assert_int_equal(cake_plan_create(prog, &g->plans[r]), CAKE_OK);
    cake_plan_set_dim(g->plans[r], "H", 2);
    assert_int_equal(cake_plan_set_partition(g->plans[r], cu, nd, cu[nd], R, r, layout, 0), CAKE_OK);
    assert_int_equal(cake_plan_finalize(g->plans[r]), CAKE_OK);
    int64_t T;
    cake_plan_get_dim(g->plans[r], "T", &T);
    g->b[r][0] = (cake_binding){"x", {0x100000 * (uint64_t)(r + 1), CAKE_BF16, 2, {T, 2}, {0}}};
    g->b[r][1] = (cake_binding){"y", {0x100000 * (uint64_t)(r + 1) + 0x80000, CAKE_F32, 2, {T, 2}, {0}}};
    g->bp[r] = g->b[r];
    g->nb[r] = 2;
    g->ws[r] = 0x10000000 * (uint64_t)(r + 1);
    cake_plan_workspace_bytes(g->plans[r], &g->wsb[r]);
  }
}

static void free_group(Group *g) {
  for (int r = 0; r < 4; r++) cake_plan_free(g->plans[r]);
}

static cake_status group_launch(Group *g, int n, const char *entry, cake_comm **comms) {
  return cake_launch_group(g->plans, n, entry, g->bp, g->nb, g->ws, g->wsb, NULL, NULL, comms, NULL);
}

static void launches_are_refused(void **st) {
  cake_package *pkg;
  assert_int_equal(load_q(KCP, &pkg), CAKE_OK);
  const cake_program *prog, *plain;
  assert_int_equal(cake_package_program(pkg, "cum", &prog), CAKE_OK);
  assert_int_equal(cake_package_program(pkg, "plain", &plain), CAKE_OK);
  static const int32_t cu[] = {0, 1000, 1300, 1300, 3000};
  Group g;
  make_group(&g, prog, 2, cu, 4, CAKE_LAYOUT_ZIGZAG);
  /* cake_launch: an entry with an exchange, before anything else */
  assert_int_equal(cake_launch(g.plans[0], "fwd", g.b[0], 2, g.ws[0], g.wsb[0], 0, 0, NULL), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "entry 'fwd' exchanges data with other ranks (stage 'gather'): launch it with "
                                         "cake_launch_comm or cake_launch_group");
  assert_int_equal(cake_launch(g.plans[0], "fwd", NULL, 0, 0, 0, 0, 0, NULL), CAKE_ERR_ARGUMENT);
  assert_non_null(strstr(cake_last_error(), "exchanges data with other ranks"));
  /* an entry without exchanges passes every host check and reaches the driver */
  cake_status s = cake_launch(g.plans[0], "local", g.b[0], 1, g.ws[0], g.wsb[0], 0, 0, NULL);
  assert_int_equal(s, CAKE_ERR_CUDA);
  /* cake_launch_comm */
  cake_comm *comms[4] = {0}, *other[2] = {0};
  assert_int_equal(rt_comm_init_local_nodevice(2, comms), CAKE_OK);
  assert_int_equal(rt_comm_init_local_nodevice(2, other), CAKE_OK);
  assert_int_equal(cake_launch_comm(g.plans[0], "fwd", g.b[0], 2, g.ws[0], g.wsb[0], 0, 0, NULL, NULL), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "cake_launch_comm: plan and comm are required");
  assert_int_equal(cake_launch_comm(g.plans[0], "fwd", g.b[0], 2, g.ws[0], g.wsb[0], 0, 0, comms[0], NULL),
                   CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "cake_launch_comm: the communicator is a member of an in-process group: "
                                         "launch with cake_launch_group");
  assert_int_equal(cake_launch_comm(g.plans[0], "fwd", g.b[0], 1, g.ws[0], g.wsb[0], 0, 0, comms[0], NULL),
                   CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "entry 'fwd' needs tensor 'y', which is not bound");
  cake_plan *pp;
  assert_int_equal(cake_plan_create(plain, &pp), CAKE_OK);
  assert_int_equal(cake_launch_comm(pp, "fwd", NULL, 0, 0, 0, 0, 0, comms[0], NULL), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "cake_launch_comm: program 'plain' is not context-parallel (no dim with role "
                                         "'ranks'): launch it with cake_launch");
  /* cake_launch_group: every check before the driver */
  assert_int_equal(group_launch(&g, 2, "fwd", NULL), CAKE_ERR_ARGUMENT);
  assert_int_equal(group_launch(&g, 0, "fwd", comms), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "cake_launch_group: n is 0, outside [1, 4096]");
  cake_plan *keep = g.plans[1];
  g.plans[1] = NULL;
  assert_int_equal(group_launch(&g, 2, "fwd", comms), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "cake_launch_group: plans[1] is NULL");
  g.plans[1] = pp; /* another program */
  assert_int_equal(group_launch(&g, 2, "fwd", comms), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "cake_launch_group: plans[1] is of program 'plain', plans[0] of 'cum': every "
                                         "rank runs the same program");
  g.plans[1] = g.plans[0]; /* rank 0's plan twice */
  assert_int_equal(group_launch(&g, 2, "fwd", comms), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "cake_launch_group: plans[1] is rank 0's plan; plans[r] must be rank r's");
  g.plans[1] = g.plans[0], g.plans[0] = keep; /* swapped order */
  assert_int_equal(group_launch(&g, 2, "fwd", comms), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "cake_launch_group: plans[0] is rank 1's plan; plans[r] must be rank r's");
  g.plans[0] = g.plans[1], g.plans[1] = keep;
  free_group(&g);
  make_group(&g, prog, 2, cu, 4, CAKE_LAYOUT_ZIGZAG);
  assert_int_equal(group_launch(&g, 1, "fwd", comms), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "cake_launch_group: plans[0]'s partition has R = 2 ranks; the group has 1");
  /* another partition on rank 1 */
  cake_plan_set_partition(g.plans[1], cu, 4, 3000, 2, 1, CAKE_LAYOUT_CONTIGUOUS, 0);
  assert_int_equal(group_launch(&g, 2, "fwd", comms), CAKE_ERR_PLAN);
  assert_string_equal(cake_last_error(), "cake_launch_group: plans[1] is not finalized (call cake_plan_finalize after setting dims)");
  cake_plan_finalize(g.plans[1]);
  assert_int_equal(group_launch(&g, 2, "fwd", comms), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "cake_launch_group: plans[1] was partitioned from other documents (or another "
                                         "T, layout or alignment) than plans[0]");
  cake_plan_set_partition(g.plans[1], cu, 4, 3000, 2, 1, CAKE_LAYOUT_ZIGZAG, 0);
  cake_plan_set_dim(g.plans[1], "H", 3);
  cake_plan_finalize(g.plans[1]);
  assert_int_equal(group_launch(&g, 2, "fwd", comms), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "cake_launch_group: plans[1] has dim H = 3, plans[0] 2 (ranks differ only in "
                                         "their tokens and documents)");
  free_group(&g);
  make_group(&g, prog, 2, cu, 4, CAKE_LAYOUT_ZIGZAG);
  /* the communicators */
  cake_comm *mixed[2] = {comms[0], other[1]}, *swapped[2] = {comms[1], comms[0]};
  assert_int_equal(group_launch(&g, 2, "fwd", mixed), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "cake_launch_group: comms[1] belongs to another group than comms[0]");
  assert_int_equal(group_launch(&g, 2, "fwd", swapped), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "cake_launch_group: comms[0] is rank 1 (the members go in rank order)");
  /* each rank's bindings and areas */
  g.b[1][1].tensor.shape[0]++;
  assert_int_equal(group_launch(&g, 2, "fwd", comms), CAKE_ERR_TENSOR);
  assert_non_null(strstr(cake_last_error(), "cake_launch_group: rank 1: y: axis 0 (T) has extent"));
  g.b[1][1].tensor.shape[0]--;
  g.wsb[0]--;
  assert_int_equal(group_launch(&g, 2, "fwd", comms), CAKE_ERR_ARGUMENT);
  assert_non_null(strstr(cake_last_error(), "cake_launch_group: rank 0: the workspace has"));
  g.wsb[0]++;
  assert_int_equal(group_launch(&g, 2, "nope", comms), CAKE_ERR_NOT_FOUND);
  assert_string_equal(cake_last_error(), "cake_launch_group: rank 0: program 'cum' has no entry 'nope'");
  g.ws[1] = g.ws[0] + 256;
  assert_int_equal(group_launch(&g, 2, "fwd", comms), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "cake_launch_group: the workspaces of ranks 0 and 1 overlap");
  g.ws[1] = g.ws[0] + g.wsb[0];
  /* all checks pass: the first driver call fails here (no GPU) */
  assert_int_equal(group_launch(&g, 2, "fwd", comms), CAKE_ERR_CUDA);
  assert_non_null(strstr(cake_last_error(), "cake_launch_group: rank 0: "));
  /* out of memory: nothing leaks */
  g_count.fail_at = g_count.calls;
  assert_int_equal(group_launch(&g, 2, "fwd", comms), CAKE_ERR_MEMORY);
  g_count.fail_at = -1;
  free_group(&g);
  cake_plan_free(pp);
  for (int r = 0; r < 2; r++) cake_comm_destroy(comms[r]), cake_comm_destroy(other[r]);
  cake_package_free(pkg);
  assert_int_equal(g_count.live, 0);
}

/* Stage timing without a device: the switch, and the refusals of a query
 * before any timed launch (nothing recorded, nothing leaked). */
static void stage_timing_refusals(void **st) {
  (void)st;
  cake_package *pkg;
  assert_int_equal(load_q(KCP, &pkg), CAKE_OK);
  const cake_program *prog;
  assert_int_equal(cake_package_program(pkg, "cum", &prog), CAKE_OK);
  cake_plan *plan;
  assert_int_equal(cake_plan_create(prog, &plan), CAKE_OK);
  assert_int_equal(cake_plan_set_timing(NULL, 1), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_set_timing(plan, 1), CAKE_OK);
  const char *names[4];
  float ms[4];
  int n = -1;
  assert_int_equal(cake_plan_stage_times(plan, "fwd", names, ms, 4, &n), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(),
                      "cake_plan_stage_times: entry 'fwd' has not been launched with timing on (cake_plan_set_timing)");
  assert_int_equal(n, -1);
  assert_int_equal(cake_plan_stage_times(plan, "nope", names, ms, 4, &n), CAKE_ERR_ARGUMENT);
  assert_string_equal(cake_last_error(), "cake_plan_stage_times: program 'cum' has no entry 'nope'");
  assert_int_equal(cake_plan_stage_times(plan, "fwd", names, ms, 4, NULL), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_stage_times(plan, "fwd", NULL, NULL, 4, &n), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_stage_times(plan, "fwd", names, ms, -1, &n), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_stage_times(NULL, "fwd", names, ms, 4, &n), CAKE_ERR_ARGUMENT);
  assert_int_equal(cake_plan_set_timing(plan, 0), CAKE_OK);
  cake_plan_free(plan);
  cake_package_free(pkg);
  assert_int_equal(g_count.live, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(stage_timing_refusals),
      cmocka_unit_test(kcp_package_loads),          cmocka_unit_test(kcp_manifests_are_validated),
      cmocka_unit_test(halo_manifests_are_validated), cmocka_unit_test(schema5_rounds_and_sends),
      cmocka_unit_test(partitions_set_dims_and_tables), cmocka_unit_test(partition_refusals),
      cmocka_unit_test(partition_out_of_memory),    cmocka_unit_test(launches_are_refused),
  };
  return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}
