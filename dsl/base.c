#include "base.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct ArenaBlock {
  ArenaBlock *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
};

enum { ARENA_BLOCK = 64 * 1024 };

void arena_init(Arena *a) { memset(a, 0, sizeof *a); }

void arena_free(Arena *a) {
  ArenaBlock *b = a->head;
  while (b) {
    ArenaBlock *n = b->next;
    free(b);
    b = n;
  }
  a->head = NULL;
  a->used_bytes = 0;
}

void *arena_alloc(Arena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  ArenaBlock *b = a->head;
  if (!b || b->used + size > b->size) {
    size_t cap = size > ARENA_BLOCK ? size : ARENA_BLOCK;
    b = malloc(sizeof(ArenaBlock) + cap);
    if (!b) cake_die("out of memory allocating %zu bytes", cap);
    b->size = cap;
    b->used = 0;
    b->next = a->head;
    a->head = b;
  }
  void *p = b->data + b->used;
  b->used += size;
  a->used_bytes += size;
  memset(p, 0, size);
  return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
  char *p = arena_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *arena_strdup(Arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

void ptrvec_push(Arena *a, PtrVec *v, void *item) {
  if (v->len == v->cap) {
    int cap = v->cap ? v->cap * 2 : 8;
    void **items = arena_alloc(a, sizeof(void *) * (size_t)cap);
    if (v->len) memcpy(items, v->items, sizeof(void *) * (size_t)v->len);
    v->items = items;
    v->cap = cap;
  }
  v->items[v->len++] = item;
}

void buf_init(Buf *b) { memset(b, 0, sizeof *b); }
void buf_free(Buf *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

void buf_put(Buf *b, const void *p, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) cake_die("out of memory growing a buffer to %zu bytes", cap);
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = 0;
}

void buf_puts(Buf *b, const char *s) { buf_put(b, s, strlen(s)); }

void buf_vprintf(Buf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  char small[256];
  if (n < (int)sizeof small) {
    vsnprintf(small, sizeof small, fmt, ap);
    buf_put(b, small, (size_t)n);
    return;
  }
  char *tmp = malloc((size_t)n + 1);
  if (!tmp) cake_die("out of memory");
  vsnprintf(tmp, (size_t)n + 1, fmt, ap);
  buf_put(b, tmp, (size_t)n);
  free(tmp);
}

void buf_printf(Buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  buf_vprintf(b, fmt, ap);
  va_end(ap);
}

char *buf_take(Buf *b) {
  if (!b->data) buf_put(b, "", 0);
  char *d = b->data;
  memset(b, 0, sizeof *b);
  return d;
}

int buf_read_file(Buf *b, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  size_t start = b->len, n;
  char tmp[65536];
  errno = 0;
  while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) buf_put(b, tmp, n);
  int err = ferror(f) ? (errno ? errno : EIO) : 0; /* reading a directory fails here: EISDIR */
  fclose(f);
  if (err) {
    b->len = start;
    if (b->data) b->data[start] = 0;
    errno = err;
    return -1;
  }
  return 0;
}

void *cake_xmalloc(size_t size) {
  void *p = malloc(size ? size : 1);
  if (!p) cake_die("out of memory allocating %zu bytes", size);
  return p;
}

void *cake_xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) cake_die("out of memory allocating %zu x %zu bytes", n, size);
  return p;
}

void *cake_xrealloc(void *p, size_t size) {
  void *q = realloc(p, size ? size : 1);
  if (!q) cake_die("out of memory growing a block to %zu bytes", size);
  return q;
}

static _Thread_local CakeDieHandler *die_top;

void cake_die_push(CakeDieHandler *h) {
  h->message[0] = 0;
  h->prev = die_top;
  die_top = h;
}

void cake_die_pop(CakeDieHandler *h) {
  if (die_top == h) die_top = h->prev;
}

int make_dirs(const char *path) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) {
    errno = ENAMETOOLONG;
    return -1;
  }
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      mkdir(tmp, 0755);
      *p = '/';
    }
  return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

_Noreturn void cake_die_again(const CakeDieHandler *caught) {
  CakeDieHandler *h = die_top;
  if (h) {
    die_top = h->prev;
    snprintf(h->message, sizeof h->message, "%s", caught->message);
    longjmp(h->jump, 1);
  }
  fprintf(stderr, "cake: %s\n", caught->message);
  abort();
}

_Noreturn void cake_die_at(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  CakeDieHandler *h = die_top;
  if (h) {
    die_top = h->prev;
    int n = snprintf(h->message, sizeof h->message, "internal error at %s:%d: ", file, line);
    if (n < 0 || (size_t)n >= sizeof h->message) n = 0;
    vsnprintf(h->message + n, sizeof h->message - (size_t)n, fmt, ap);
    va_end(ap);
    longjmp(h->jump, 1);
  }
  fprintf(stderr, "cake: internal error at %s:%d: ", file, line);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  abort();
}
