/* base.h - memory arenas, growable arrays, internal errors.
 *
 * Contract: every allocation of one compilation comes from one Arena and is
 * freed at once with arena_free(). Allocation failure is an internal error
 * (cake_die), never a silent NULL. cake_die() is for bugs in the compiler
 * itself; user errors go through diag.h. An internal error is caught by the
 * innermost CakeDieHandler of the thread (cake_compile installs one) and
 * otherwise aborts the process after printing its message.
 */
#ifndef CAKE_BASE_H
#define CAKE_BASE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ArenaBlock ArenaBlock;
typedef struct Arena {
  ArenaBlock *head;
  size_t used_bytes;
} Arena;

void arena_init(Arena *a);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t size);          /* zeroed, 16-byte aligned */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);

/* A growable array of pointers living in an arena. */
typedef struct PtrVec {
  void **items;
  int len, cap;
} PtrVec;
void ptrvec_push(Arena *a, PtrVec *v, void *item);

/* A growable byte buffer on the heap (for output text). */
typedef struct Buf {
  char *data;
  size_t len, cap;
} Buf;
void buf_init(Buf *b);
void buf_free(Buf *b);
void buf_put(Buf *b, const void *p, size_t n);
void buf_puts(Buf *b, const char *s);
void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vprintf(Buf *b, const char *fmt, va_list ap);
char *buf_take(Buf *b); /* NUL-terminated; caller frees */
/* Appends the bytes of the file at `path`: 0, or -1 with errno set (then
 * nothing is appended). */
int buf_read_file(Buf *b, const char *path);

/* Heap allocation for buffers that outlive an arena or are freed early:
 * never NULL (out of memory is an internal error, cake_die). */
void *cake_xmalloc(size_t size);
void *cake_xcalloc(size_t n, size_t size);
void *cake_xrealloc(void *p, size_t size);

/* Creates the directory `path` and its missing parents (mode 0755): 0 when
 * it exists afterwards, or -1 with errno set. */
int make_dirs(const char *path);

_Noreturn void cake_die_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Catching internal errors:
 *   CakeDieHandler h;
 *   cake_die_push(&h);
 *   if (setjmp(h.jump)) { ... h.message holds "internal error at file:line: ..." ... }
 *   ...
 *   cake_die_pop(&h);
 * cake_die() then longjmps to the innermost handler (popping it) instead of
 * aborting. Objects the interrupted code was building are not freed. */
typedef struct CakeDieHandler {
  jmp_buf jump;
  char message[512];
  struct CakeDieHandler *prev;
} CakeDieHandler;
void cake_die_push(CakeDieHandler *h);
void cake_die_pop(CakeDieHandler *h);
/* Passes an internal error a handler caught (after its clean-up) on to the
 * next handler, its message unchanged. */
_Noreturn void cake_die_again(const CakeDieHandler *caught);
#define cake_die(...) cake_die_at(__FILE__, __LINE__, __VA_ARGS__)
#define CAKE_ASSERT(c) \
  do { if (!(c)) cake_die("assertion failed: %s", #c); } while (0)

#endif
