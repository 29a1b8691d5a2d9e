#include "diag.h"

#include <string.h>

void diag_init(Diag *d, int max_errors) {
  memset(d, 0, sizeof *d);
  buf_init(&d->out);
  d->max_errors = max_errors > 0 ? max_errors : 20;
}

void diag_free(Diag *d) { buf_free(&d->out); }

static void render_line(Diag *d, Loc loc) {
  if (!loc.src || loc.line <= 0) return;
  const char *p = loc.src->text;
  for (int l = 1; l < loc.line && *p; p++)
    if (*p == '\n') l++;
  const char *e = p;
  while (*e && *e != '\n') e++;
  buf_put(&d->out, p, (size_t)(e - p));
  buf_puts(&d->out, "\n");
  int col = loc.col > 0 ? loc.col : 1;
  for (int i = 1; i < col; i++) buf_puts(&d->out, (i - 1 < e - p && p[i - 1] == '\t') ? "\t" : " ");
  buf_puts(&d->out, "^");
  for (int i = col + 1; i <= loc.end_col; i++) buf_puts(&d->out, "~");
  buf_puts(&d->out, "\n");
}

void diag_verror(Diag *d, Loc loc, const char *kind, const char *fmt, va_list ap) {
  int is_error = strcmp(kind, "error") == 0;
  if (is_error) {
    d->errors++;
    if (d->errors == d->max_errors + 1) {
      buf_printf(&d->out, "cakec: too many errors (%d); stopping here\n", d->max_errors);
      return;
    }
    if (d->errors > d->max_errors) return;
  } else if (d->errors > d->max_errors) {
    return;
  }
  if (loc.src)
    buf_printf(&d->out, "%s:%d:%d: %s: ", loc.src->name, loc.line, loc.col, kind);
  else
    buf_printf(&d->out, "cakec: %s: ", kind);
  buf_vprintf(&d->out, fmt, ap);
  buf_puts(&d->out, "\n");
  render_line(d, loc);
}

void diag_error(Diag *d, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(d, loc, "error", fmt, ap);
  va_end(ap);
}

void diag_note(Diag *d, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(d, loc, "note", fmt, ap);
  va_end(ap);
}

void diag_plain(Diag *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Loc none = {0};
  diag_verror(d, none, "error", fmt, ap);
  va_end(ap);
}

