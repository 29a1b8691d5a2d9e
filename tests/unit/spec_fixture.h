/* spec_fixture.h - what the interpreter unit tests share: a shipped spec
 * parsed once, and a seeded random stream (each test keeps its own seed, so
 * its inputs do not depend on the other tests). */
#ifndef CAKE_SPEC_FIXTURE_H
#define CAKE_SPEC_FIXTURE_H

#include <stdint.h>

#include "interp.h"

/* Parse `path` (named `name` in diagnostics) into `arena`; NULL when it
 * cannot be read or has errors (reported into `diag`). */
Program *fixture_parse_spec(Arena *arena, Diag *diag, const char *path, const char *name);

/* Uniform in (0, 1) and standard normal, from the 64-bit state *s. */
double fixture_urand(uint64_t *s);
double fixture_nrand(uint64_t *s);

/* Runs `entry` on the interpreter with `args` (its tensors[] holding the
 * program's in and out tensors), the temp tensors allocated here for the
 * run's dims, documents and chunks and freed after it; an error is printed.
 * Returns cake_interp_run's result. */
int fixture_run(const CirProgram *p, const char *entry, const InterpArgs *args);

/* RMS(a - b) / RMS(b) (RMS(a - b) when b is all zeros); infinite when a has
 * a non-finite element. */
double fixture_err_ratio(const double *a, const double *b, size_t n);

#endif
