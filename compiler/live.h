/* live.h - the live ranges of a program's temp tensors.
 *
 * Contract: for every temp tensor and every entry, the stages of the entry
 * (by position in its stage list) from the first that loads or stores the
 * tensor to the last that does: inclusive, so two temps that one stage
 * touches are live at once. A temp whose first touching stage of some entry
 * loads it before (in the stage's instruction order) any store to it
 * expects a value from outside the entry: it is `pinned` and shares bytes
 * with nothing. The manifest records these ranges ("live", "pinned") and the
 * runtime places temps whose ranges are disjoint in every entry at the same
 * bytes; the interpreter poisons each temp outside its ranges, so a wrong
 * range shows as a NaN in a result.
 */
#ifndef CAKE_LIVE_H
#define CAKE_LIVE_H

#include "cir.h"

typedef struct CirLive {
  int first, last; /* positions in the entry's stage list; -1, -1: the entry does not touch the tensor */
} CirLive;

typedef struct CirLiveness {
  int ntensors, nentries;
  CirLive *live; /* [tensor * nentries + entry]; meaningful for temps only (others: -1, -1) */
  int *pinned;   /* [tensor] */
} CirLiveness;

/* What one kernel does to each tensor: acc[tensor index] gets ACC_LOAD,
 * ACC_STORE, and ACC_READ_FIRST when it loads before any store (in
 * instruction order, loop bodies in place; a shifted window loads its
 * halo too). acc has the program's ntensors entries, zeroed by the caller. */
enum { ACC_LOAD = 1, ACC_STORE = 2, ACC_READ_FIRST = 4 };
void cir_access(const CirKernel *k, int *acc);

/* Computes the live ranges of every temp tensor of `p` (the caller frees
 * with cir_liveness_free). */
void cir_liveness(const CirProgram *p, CirLiveness *out);
void cir_liveness_free(CirLiveness *l);
/* The text form (cakec --emit=live): each entry's stages, then per temp
 * its range in each entry that touches it, or `pinned`. */
void cir_live_dump(Buf *out, const CirProgram *p);
/* The range of tensor t in entry e. */
static inline CirLive cir_live_of(const CirLiveness *l, int t, int e) { return l->live[t * l->nentries + e]; }

#endif
