/* spec_fixture.c - see spec_fixture.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int fixture_run(const CirProgram *p, const char *entry, const InterpArgs *args) {
  long long *dims = calloc((size_t)p->ndims + 1, sizeof(long long));
  double **tensors = calloc((size_t)p->ntensors + 1, sizeof(double *));
  if (!dims || !tensors) abort();
  memcpy(dims, args->dims, sizeof(long long) * (size_t)p->ndims);
  long long ndocs = args->cu_seqlens ? args->ndocs : 1;
  if (p->docs_dim >= 0) dims[p->docs_dim] = ndocs;
  if (p->chunks_dim >= 0)
    dims[p->chunks_dim] = cake_interp_chunk_count(p, dims[p->tokens_dim], args->cu_seqlens, ndocs);
  memcpy(tensors, args->tensors, sizeof(double *) * (size_t)p->ntensors);
  for (int i = 0; i < p->ntensors; i++)
    if (p->tensors[i]->role == ROLE_TEMP && !(tensors[i] = calloc((size_t)cake_interp_numel(p, p->tensors[i], dims), 8)))
      abort();
  InterpArgs a = *args;
  a.tensors = tensors;
  char err[512];
  int rc = cake_interp_run(p, entry, &a, err, sizeof err);
  if (rc) fprintf(stderr, "interp: %s\n", err);
  for (int i = 0; i < p->ntensors; i++)
    if (p->tensors[i]->role == ROLE_TEMP) free(tensors[i]);
  free(tensors), free(dims);
  return rc;
}
