/* test_frontend.c - lexer, parser, semantic analysis: values and messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "cir.h"

typedef struct Fx {
  Arena arena;
  Diag diag;
  Source src;
  Program *ast;
  CirProgram *cir;
} Fx;

static Fx *front(const char *text) {
  static Fx fx;
  arena_free(&fx.arena);
  diag_free(&fx.diag);
  memset(&fx, 0, sizeof fx);
  arena_init(&fx.arena);
  diag_init(&fx.diag, 20);
  fx.src = (Source){"t.cake", text, strlen(text)};
  fx.ast = cake_parse(&fx.arena, &fx.diag, &fx.src);
  if (fx.ast) fx.cir = cake_sema(&fx.arena, &fx.diag, fx.ast, NULL);
  return &fx;
}

static const char *diags(Fx *f) { return f->diag.out.data ? f->diag.out.data : ""; }

/* Each text and a diagnostic it must produce (all of them shown when not). */
typedef struct DiagCase {
  const char *text, *msg;
} DiagCase;

static void expect_diags(const DiagCase *cases, int n) {
  for (int i = 0; i < n; i++) {
    const char *out = diags(front(cases[i].text));
    if (!strstr(out, cases[i].msg)) print_error("case %d: expected \"%s\" in:\n%s", i, cases[i].msg, out);
    assert_non_null(strstr(out, cases[i].msg));
  }
}

#define HEADER                 \
  "program t\n"                \
  "dim T, H, N\n"              \
  "const C = 64, K = 128\n"    \
  "sequence T, docs N, chunk C\n" \
  "in q : bf16[T, H, K]\n"     \
  "in g : f32[T, H, K]\n"      \
  "in h0 : f32[N, H, K, 64] optional\n" \
  "out o : f32[T, H, K]\n"

static void parses_and_types(void **st) {
  Fx *f = front(HEADER
                "kernel k over (c in chunks, h in H) {\n"
                "  a = load q[c, h, :]\n"
                "  s = cumsum(load g[c, h, :], 0)\n"
                "  p = a @ a.T\n"
                "  store o[c, h, :] = s * 2\n"
                "}\nentry fwd = k\n");
  assert_string_equal(diags(f), "");
  assert_non_null(f->cir);
  CirKernel *k = f->cir->kernels[0];
  assert_int_equal(k->naxes, 2);
  assert_int_equal(k->axes[0].kind, GA_CHUNKS);
  assert_int_equal(f->cir->chunk, 64);
  /* find the matmul and check its type */
  int seen = 0;
  for (int i = 0; i < k->body.len; i++) {
    CirInst *in = k->body.insts[i];
    if (in->op == OP_MATMUL) {
      assert_int_equal(in->ty.dt, DT_F32);
      assert_int_equal(in->ty.shape[0], 64);
      assert_int_equal(in->ty.shape[1], 64);
      seen++;
    }
    if (in->op == OP_LOAD && in->tensor->name[0] == 'q') {
      assert_int_equal(in->ty.dt, DT_BF16);
      assert_int_equal(in->index[0].kind, IX_CHUNK);
      assert_int_equal(in->index[1].kind, IX_SCALAR);
      assert_int_equal(in->index[2].kind, IX_FULL);
    }
  }
  assert_int_equal(seen, 1);
  assert_int_equal(f->cir->nentries, 1);
  assert_string_equal(f->cir->entries[0]->stages[0]->name, "k");
}

static void const_list_and_expressions(void **st) {
  Fx *f = front("program t\ndim T\nconst A = 6, B = A * 2 + 1, S = rsqrt(16)\n"
                "param scale : f32 = S\nsequence T, chunk 16\nout o : f32[T, B]\n"
                "kernel k over (c in chunks) { store o[c, :] = scale }\n");
  assert_string_equal(diags(f), "");
  assert_int_equal((int)f->cir->tensors[0]->shape[1].value, 13);
  assert_true(f->cir->params[0]->has_default);
  assert_true(f->cir->params[0]->def == 0.25);
}

static void syntax_error_location(void **st) {
  Fx *f = front("program t\ndim T\nkernel k over (c in chunks) {\n  a = (1 +\n}\n");
  assert_null(f->ast);
  assert_true(strstr(diags(f), "t.cake:5:1: error: syntax error") != NULL);
  /* the source line and a caret follow */
  assert_true(strstr(diags(f), "\n}\n^\n") != NULL);
}

static void several_errors_reported(void **st) {
  Fx *f = front(HEADER "kernel k over (c in chunks, h in H) {\n"
                       "  a = nope1\n"
                       "  b = nope2 + 1\n"
                       "  store q[c, h, :] = a\n"
                       "}\n");
  assert_null(f->cir);
  assert_true(strstr(diags(f), "t.cake:10:7: error: unknown name 'nope1'") != NULL);
  assert_true(strstr(diags(f), "t.cake:11:7: error: unknown name 'nope2'") != NULL);
  assert_true(strstr(diags(f), "cannot store to 'q', an input") != NULL);
  assert_int_equal(f->diag.errors, 3);
}

static void error_cap(void **st) {
  char text[8192] = HEADER "kernel k over (c in chunks, h in H) {\n";
  for (int i = 0; i < 30; i++) strcat(text, "  a = zz\n");
  strcat(text, "}\n");
  Fx *f = front(text);
  assert_int_equal(f->diag.errors, 30);
  assert_true(strstr(diags(f), "too many errors (20)") != NULL);
}

static void dtype_and_shape_errors(void **st) {
  static const DiagCase cases[] = {
      {HEADER "kernel k over (c in chunks, h in H) {\n"
              "  a = load g[c, h, :]\n"
              "  p = a @ a.T\n"
              "}\n",
       "'@' operands must both be bf16 or both f16"},
      {HEADER "kernel k over (c in chunks, h in H) {\n"
              "  a = load g[c, h, :]\n"
              "  b = sum(a, 1)\n"
              "  x = a + b\n"
              "}\n",
       "shape mismatch in '+': f32[64, 128] and f32[64] have different ranks"},
      {HEADER "kernel k over (c in chunks, h in H) {\n"
              "  store o[c, h, :] = load q[c, h, :]\n"
              "}\n",
       "dtype mismatch: 'o' holds f32, the stored value is bf16"},
  };
  expect_diags(cases, (int)(sizeof cases / sizeof cases[0]));
}

static void window_errors(void **st) {
  static const DiagCase cases[] = {
      {HEADER "kernel k over (c in chunks, h in H) {\n  a = load q[0, c, :]\n}\n",
       "chunk index used on axis 1 of 'q'"},
      {HEADER "kernel k over (c in chunks, h in H) {\n  a = load q[c, :]\n}\n",
       "'q' has 3 axes, but the window gives 2 indices"},
      {HEADER "kernel k over (n in docs, h in H) {\n  a = load h0[n, h, :, :]\n}\n",
       "'h0' is optional and may be absent"},
      {HEADER "kernel k over (n in docs, h in H) {\n  a = load q[n, h, :] or 0\n}\n",
       "index 'n' runs over N, but axis 0 of 'q' has extent T"},
  };
  expect_diags(cases, (int)(sizeof cases / sizeof cases[0]));
}

static void scan_carry_rules(void **st) {
  const char *ok = HEADER "kernel k over (n in docs, h in H) {\n"
                          "  S = load h0[n, h, :, :] or 0\n"
                          "  for c in chunks(n) carry S {\n"
                          "    S = S * 0.5\n"
                          "  }\n"
                          "}\n";
  Fx *f = front(ok);
  assert_string_equal(diags(f), "");
  static const DiagCase cases[] = {
      {HEADER "kernel k over (n in docs, h in H) {\n"
              "  S = load h0[n, h, :, :] or 0\n"
              "  x = 1.0\n"
              "  for c in chunks(n) carry S {\n"
              "    x = 2.0\n"
              "    S = S * x\n"
              "  }\n"
              "}\n",
       "'x' is defined outside the scan; only its carried values may be reassigned"},
      {HEADER "kernel k over (n in docs, h in H) {\n"
              "  S = load h0[n, h, :, :] or 0\n"
              "  for c in chunks(n) carry S {\n"
              "    S = sum(S, 0)\n"
              "  }\n"
              "}\n",
       "carried value 'S' is f32[128, 64], but this assigns f32[64]"},
      {HEADER "kernel k over (c in chunks, h in H) {\n"
              "  S = 0.0\n"
              "  for t in chunks(c) carry S {\n    S = S + 1.0\n  }\n"
              "}\n",
       "'c' is not a grid index over docs"},
      {HEADER "kernel k over (n in docs, h in H) {\n"
              "  for c in chunks(n) carry S {\n    S = 1.0\n  }\n"
              "}\n",
       "carried value 'S' must be given its initial value before the scan"},
      {HEADER "kernel k over (n in docs, h in H) {\n"
              "  S = 0.0\n"
              "  for c in chunks(n) carry S {\n    y = 1.0\n  }\n"
              "}\n",
       "carried value 'S' is never assigned in the scan body"},
  };
  expect_diags(cases, (int)(sizeof cases / sizeof cases[0]));
}

static void option_count_limit(void **st) {
  char text[4096] = "program t\ndim T\n";
  for (int i = 0; i < CAKE_MAX_OPTIONS + 1; i++) sprintf(text + strlen(text), "option o%d = a in (a, b)\n", i);
  strcat(text, "kernel k over (i in T) { }\n");
  Fx *f = front(text);
  CirOption *opts;
  assert_int_equal(cake_program_options(&f->arena, &f->diag, f->ast, &opts), -1);
  assert_true(strstr(diags(f), "t.cake:19:8: error: a program may declare at most 16 options") != NULL);
  /* sixteen are fine */
  strcpy(text, "program t\ndim T\n");
  for (int i = 0; i < CAKE_MAX_OPTIONS; i++) sprintf(text + strlen(text), "option o%d = a in (a, b)\n", i);
  f = front(text);
  assert_int_equal(cake_program_options(&f->arena, &f->diag, f->ast, &opts), CAKE_MAX_OPTIONS);
}

/* A 100000-term chain is an error at the 1001st level, without recursing
 * through it (no stack overflow in any pass). */
static void deep_chains(void **st) {
  enum { N = 100000 };
  Buf b;
  buf_init(&b);
  buf_puts(&b, "program t\nconst C = 1");
  for (int i = 0; i < N; i++) buf_puts(&b, " + 1");
  buf_puts(&b, "\ndim T\nsequence T, chunk 16\nin x : f32[T, 16]\nout y : f32[T, 16]\n"
               "kernel k over (c in chunks) {\n  a = load x[c, :]\n  store y[c, :] = a");
  for (int i = 0; i < N; i++) buf_puts(&b, " * a");
  buf_puts(&b, "\n}\n");
  Fx *f = front(b.data);
  assert_null(f->ast);
  assert_true(strstr(diags(f), "t.cake:2:4013: error: expression nested too deeply (more than 1000 levels)") != NULL);
  assert_int_equal(f->diag.errors, 1); /* reported once */
  buf_free(&b);
}

/* cake_die() longjmps to the innermost handler with its message; without
 * one it would abort. */
static void internal_errors_are_caught(void **st) {
  static CakeDieHandler outer, inner;
  cake_die_push(&outer);
  if (setjmp(outer.jump) == 0) {
    cake_die_push(&inner);
    if (setjmp(inner.jump) == 0) cake_die("first %d", 1);
    assert_non_null(strstr(inner.message, "internal error at "));
    assert_non_null(strstr(inner.message, ": first 1"));
    cake_die("second"); /* inner was popped: the outer handler catches this one */
  }
  assert_non_null(strstr(outer.message, ": second"));
}

static void redefinition_and_notes(void **st) {
  Fx *f = front("program t\ndim T\nconst T = 3\nkernel k over (i in 4) { }\n");
  assert_true(strstr(diags(f), "t.cake:3:7: error: redefinition of 'T'") != NULL);
  assert_true(strstr(diags(f), "t.cake:2:5: note: 'T' was first defined here as a dimension") != NULL);
}

static void ast_dump_shape(void **st) {
  Fx *f = front("program t\ndim T\nkernel k over (i in T) { a = -1 + 2 * 3 }\n");
  Buf b;
  buf_init(&b);
  ast_dump(&b, f->ast);
  assert_true(strstr(b.data, "Assign a = ((-1) + (2 * 3))") != NULL);
  buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(parses_and_types),       cmocka_unit_test(const_list_and_expressions),
      cmocka_unit_test(syntax_error_location),  cmocka_unit_test(several_errors_reported),
      cmocka_unit_test(error_cap),              cmocka_unit_test(dtype_and_shape_errors),
      cmocka_unit_test(window_errors),          cmocka_unit_test(scan_carry_rules),
      cmocka_unit_test(option_count_limit), cmocka_unit_test(redefinition_and_notes), cmocka_unit_test(ast_dump_shape),
      cmocka_unit_test(deep_chains),            cmocka_unit_test(internal_errors_are_caught),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
