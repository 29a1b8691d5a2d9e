/* test_docs.c - dsl/README.md documents every operation of the op table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "ops.h"

static void every_op_is_documented(void **st) {
  Buf doc;
  buf_init(&doc);
  assert_int_equal(buf_read_file(&doc, CAKE_SOURCE_DIR "/dsl/README.md"), 0);
  const char *text = doc.data;
  int missing = 0;
  for (int i = 0; i < OP__COUNT; i++) {
    const OpInfo *o = &cake_ops[i];
    if (o->kind == OK_LEAF || o->kind == OK_CONTROL) continue; /* internal, not user syntax */
    /* a '|' inside a markdown table is written '\|' */
    char sp[32], row[128];
    size_t k = 0;
    for (const char *c = o->spelling; *c && k < sizeof sp - 2; c++) {
      if (*c == '|') sp[k++] = '\\';
      sp[k++] = *c;
    }
    sp[k] = 0;
    snprintf(row, sizeof row, "| %s |", sp);
    int found = strstr(text, row) != NULL;
    if (!found && !op_is_callable(i)) {
      /* operators share a row: "| + - * / % |" */
      snprintf(row, sizeof row, " %s ", sp);
      for (char *p = strstr(text, "\n| "); p && !found; p = strstr(p + 1, "\n| ")) {
        char *end = strstr(p + 3, " |");
        if (end && strstr(p, row) && strstr(p, row) < end + 1) found = 1;
      }
    }
    if (!found) {
      printf("op %s (%s) is not documented in dsl/README.md\n", o->id, o->spelling);
      missing++;
    }
  }
  buf_free(&doc);
  assert_int_equal(missing, 0);
}

static void callables_resolve(void **st) {
  assert_int_equal(op_by_call_name("exp"), OP_EXP);
  assert_int_equal(op_by_call_name("decay_dot"), OP_DECAY_DOT);
  assert_int_equal(op_by_call_name("tanh"), OP_TANH);
  assert_int_equal(op_by_call_name("logsigmoid"), OP_LOGSIGMOID);
  assert_int_equal(op_by_call_name("decay"), OP_DECAY);
  assert_int_equal(op_by_call_name("matmul"), -1); /* written `@` */
  assert_int_equal(op_by_call_name("nope"), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(every_op_is_documented), cmocka_unit_test(callables_resolve)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
