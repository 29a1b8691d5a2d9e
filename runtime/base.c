/* base.c - the thread's error message and host memory: what every other
 * file of the runtime uses, below all of them (it calls none). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

static __thread char g_error[2048];

const char *cake_last_error(void) { return g_error; }

/* The message is formatted into a local buffer first: an argument may be
 * cake_last_error() itself (a cause wrapped in context), and formatting a
 * buffer into itself is undefined. */
cake_status rt_fail(cake_status s, const char *fmt, ...) {
  char msg[sizeof g_error];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  memcpy(g_error, msg, sizeof msg);
  return s;
}

cake_status cake_fail(cake_status s, const char *message) {
  return rt_fail(s, "%s", message ? message : "(no message)");
}

const char *cake_status_name(cake_status s) {
  static const char *const names[] = {"CAKE_OK",    "CAKE_ERR_ARGUMENT", "CAKE_ERR_IO",   "CAKE_ERR_PACKAGE",
                                      "CAKE_ERR_NOT_FOUND", "CAKE_ERR_TENSOR", "CAKE_ERR_PLAN", "CAKE_ERR_CUDA",
                                      "CAKE_ERR_MEMORY", "CAKE_ERR_COMM"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "CAKE_ERR_?";
}

static void *def_alloc(void *ctx, size_t n) { return malloc(n); }
static void def_free(void *ctx, void *p) { free(p); }
static const cake_allocator default_allocator = {def_alloc, def_free, NULL};
const cake_allocator *rt_default_allocator(void) { return &default_allocator; }

void *rt_alloc(const cake_allocator *a, size_t n) {
  void *p = a->alloc(a->ctx, n ? n : 1);
  if (!p) {
    rt_fail(CAKE_ERR_MEMORY, "out of host memory allocating %zu bytes", n);
    return NULL;
  }
  memset(p, 0, n ? n : 1);
  return p;
}

void rt_free(const cake_allocator *a, void *p) {
  if (p) a->free(a->ctx, p);
}

char *rt_strdup(const cake_allocator *a, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = rt_alloc(a, n);
  if (d) memcpy(d, s, n);
  return d;
}
