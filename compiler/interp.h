/* interp.h - the CPU interpreter of CIR: the semantic reference of every op.
 *
 * Contract: cake_interp_run() executes the kernels of one entry, in order,
 * on host arrays. Every tensor is a dense row-major array of doubles; values
 * are rounded to the tensor's dtype when loaded and when stored, and to the
 * target dtype at every `as` conversion (unless args->exact: then float
 * dtypes are not rounded at all, and i32 / bool conversions still are). All
 * other arithmetic is exact double arithmetic: the interpreter says what a program means, the GPU code
 * approximates it (fp32 accumulation, bf16 tensor-core operands).
 * Temps hold values only within their live ranges (live.h), as in the
 * runtime's shared workspace: outside them the interpreter poisons them.
 * Nothing is printed; errors come back as a message.
 */
#ifndef CAKE_INTERP_H
#define CAKE_INTERP_H

#include "cir.h"

/* Where one fragment (a local document of a context-parallel program) sits
 * in its document: the values of continues(n) and continued(n), and the
 * fragments before it in its document (on other ranks), in document order,
 * as (rank, local fragment index) pairs pairs[2 * i], pairs[2 * i + 1] for i
 * in [before_first, before_first + before_count); those after it likewise
 * from after_first. */
typedef struct InterpFrag {
  int continues, continued;
  long long before_first, before_count, after_first, after_count;
} InterpFrag;

typedef struct InterpArgs {
  const long long *dims;    /* value per CirProgram dim; the entries of the docs and chunks dims
                               are not read (they come from cu_seqlens and the chunk size) */
  const long long *cu_seqlens; /* ndocs + 1 offsets, or NULL: one document of all tokens */
  long long ndocs;
  const double *params;     /* value per CirProgram param (NaN: use the default) */
  double **tensors;         /* per CirProgram tensor; NULL = absent (optional tensors only) */
  int exact;                /* nonzero: no rounding to float dtypes (bf16, f16, f32 values stay
                               doubles), for finite-difference checks of a program's gradients */
  int keep_temps;           /* 0: every temp but the pinned is poisoned outside its live ranges (live.h):
                               at the start of the entry, before the first stage of its range and after the
                               last (NaN, or INT32_MIN for i32), so that a range too short shows in the
                               results;
                               1: no poisoning; the temps keep what the entry stored (cakec run --temps) */
  const InterpFrag *frags;  /* a context-parallel program: one per local document (fragment), or NULL */
  const int *pairs;         /* the (rank, fragment) pairs the fragments' before_first and after_first index */
  long long ends_first, ends_count; /* pairs[2 * ends_first ...]: the fragment that ends each document, over
                                       every rank, in document order (`for r, f in ends()`) */
} InterpArgs;

/* 0 on success; on failure a message in err. An entry with an exchange
 * stage needs the ranks: cake_interp_run_ranks. */
int cake_interp_run(const CirProgram *p, const char *entry, const InterpArgs *args, char *err, size_t errlen);

/* A context-parallel program's entry on `nranks` ranks, args[r] rank r's
 * (its local dims, cu_seqlens, fragments and tensors; the ranks and fragments
 * dims the same everywhere): the stages in lockstep, rank by rank, and at an
 * exchange stage every rank's source copied into every rank's destination
 * (all_gather: dst[r, ...] = rank r's src). The stages of a `rounds(...)`
 * group run once per round, as many rounds as the longest document has
 * fragments; in round k a kernel of the group runs only the fragments that
 * are k-th in their document (from its end for `rounds reverse`). 0 on
 * success; on failure a message naming the rank. */
int cake_interp_run_ranks(const CirProgram *p, const char *entry, int nranks, const InterpArgs *const *args, char *err,
                          size_t errlen);

/* The number of chunks of T tokens split into documents (cu_seqlens may be NULL). */
long long cake_interp_chunk_count(const CirProgram *p, long long T, const long long *cu_seqlens, long long ndocs);

/* Number of elements of tensor t under the given dims. */
long long cake_interp_numel(const CirProgram *p, const CirTensor *t, const long long *dims);

double cake_round_bf16(double x);
double cake_round_f16(double x);
double cake_round_f32(double x);
double cake_round_dtype(DType t, double x);

#endif
