/* spec_fixture.c - see spec_fixture.h. */
#include <math.h>

#include "spec_fixture.h"

Program *fixture_parse_spec(Arena *arena, Diag *diag, const char *path, const char *name) {
  Buf text;
  buf_init(&text);
  if (buf_read_file(&text, path)) {
    buf_free(&text);
    return NULL;
  }
  Source *src = arena_alloc(arena, sizeof(Source));
  *src = (Source){name, arena_strndup(arena, text.data, text.len), text.len};
  buf_free(&text);
  return cake_parse(arena, diag, src);
}

double fixture_urand(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return ((double)(*s >> 11) + 0.5) / 9007199254740992.0;
}

double fixture_nrand(uint64_t *s) {
  double u = fixture_urand(s);
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * fixture_urand(s));
}

double fixture_err_ratio(const double *a, const double *b, size_t n) {
  double se = 0, sr = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(a[i])) return INFINITY;
    se += (a[i] - b[i]) * (a[i] - b[i]);
    sr += b[i] * b[i];
  }
  return sr > 0 ? sqrt(se / sr) : sqrt(se);
}
