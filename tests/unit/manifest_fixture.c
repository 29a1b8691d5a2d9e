/* manifest_fixture.c - see manifest_fixture.h. */
#include "manifest_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *fixture_q(const char *text) {
  char *s = strdup(text);
  assert_non_null(s);
  for (char *p = s; *p; p++)
    if (*p == '\'') *p = '"';
  return s;
}

char *fixture_replaced(const char *text, const char *old, const char *new_) {
  char *t = fixture_q(text), *o = fixture_q(old), *n = fixture_q(new_);
  char *at = strstr(t, o);
  if (!at) fail_msg("'%s' is not in the manifest", old);
  char *r = malloc(strlen(t) + strlen(n) + 1);
  assert_non_null(r);
  sprintf(r, "%.*s%s%s", (int)(at - t), t, n, at + strlen(o));
  free(t), free(o), free(n);
  return r;
}

void fixture_write_file(const char *dir, const char *name, const char *text) {
  char path[1200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

void fixture_package_dir(const char *dir, const char *manifest) {
  char bin[1100];
  snprintf(bin, sizeof bin, "%s/bin", dir);
  assert_int_equal(mkdir(bin, 0755), 0);
  fixture_write_file(bin, "k.bin", "abc");
  fixture_write_file(dir, "manifest.json", manifest);
}
