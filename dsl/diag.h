/* diag.h - source files, locations and diagnostics.
 *
 * Contract: every user-facing error is reported through diag_error() with a
 * Loc; it is rendered as
 *     file:line:col: error: message
 *     <the source line>
 *     <a caret, or ^~~~ under the range>
 * Diagnostics accumulate in a Buf that the caller reads (the compiler library
 * never prints on its own). After `max_errors` errors, one "too many errors"
 * line is added and later errors are counted but not rendered.
 */
#ifndef CAKE_DIAG_H
#define CAKE_DIAG_H

#include "base.h"

typedef struct Source {
  const char *name; /* as given by the user; appears in messages */
  const char *text; /* NUL-terminated */
  size_t len;
} Source;

typedef struct Loc {
  const Source *src;
  int line, col;   /* 1-based */
  int end_col;     /* inclusive end column on `line`; == col for a point */
} Loc;

typedef struct Diag {
  Buf out;
  int errors, warnings;
  int max_errors;
} Diag;

void diag_init(Diag *d, int max_errors);
void diag_free(Diag *d);
void diag_error(Diag *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_note(Diag *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_verror(Diag *d, Loc loc, const char *kind, const char *fmt, va_list ap);
/* An error without a source position (missing file, bad option). */
void diag_plain(Diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));


#endif
