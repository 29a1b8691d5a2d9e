/* codegen.h - code generation for many kernels and targets at once: shared
 * units, the on-disk cache, parallel jobs.
 *
 * Contract: the driver adds one request per (kernel, target) with the text
 * that determines the kernel's code (its CIR, the program's declarations,
 * the target, the code generation options, the compiler version: the digest
 * text without the variant name). Requests with the same text share one
 * unit, compiled once, under a placeholder symbol (the driver names each
 * copy afterwards, so sharing changes no byte of the output). A unit is one
 * target's; units whose request texts are equal but for the target (the
 * target enters the text as what the lowering sees of it and its PTX
 * target) share the PTX, and units whose view texts are equal (the PTX
 * target left out) share the lowering to LLVM IR. codegen_run() takes each
 * unit from the cache when one is set and holds it, lowers the others to
 * PTX in `jobs` worker processes (backend_compile, once per view, which
 * makes the PTX of each PTX target of it), then, when cubins are wanted, runs
 * ptxas on that PTX for each unit's target in the same way (a lowering's
 * occupancy is chosen on its reference chip, and the other chips are given
 * the PTX with that choice: see assemble_units), and stores the units in
 * the cache. Fatbins are
 * made in parallel the same way by codegen_fatbins(). Results are indexed
 * by unit and job, never by completion order. Cache trouble is a warning in
 * `notes`, never an error.
 */
#ifndef CAKE_CODEGEN_H
#define CAKE_CODEGEN_H

#include "backend.h"

typedef struct CodegenUnit {
  char key[65];           /* sha256 of the request text and target (+ ptxas version with a cache) */
  char lkey[65];          /* sha256 of the request text: units with the same one share the PTX */
  char vkey[65];          /* sha256 of the view text: units with the same one share the lowering */
  const CirProgram *p;    /* the first request's program and kernel */
  const CirKernel *k;
  const KernelAbi *abi;
  const char *target;
  const char *symbol;     /* the placeholder name it is compiled under */
  KernelBinary kb;        /* the result (valid when errors == 0) */
  char *ptx_generated;    /* the PTX as generated, when ptxas was given another one (NULL: kb.ptx) */
  char *diag;             /* its diagnostics (errors when errors > 0) */
  int errors;
  int cached;             /* taken from the cache */
  size_t size;            /* the length of its request text: the work it is expected to take */
} CodegenUnit;

typedef struct FatbinJob {
  const KernelBinary *bins; /* one per target, named */
  int n;
  unsigned char *data;      /* the result, malloc'd */
  size_t len;
  char *diag;
  int errors;
} FatbinJob;

typedef struct Codegen {
  Backend *be;
  EmitKind emit;          /* what the compilation emits: cubins are made for >= EMIT_CUBIN */
  int jobs;
  const char *cache_dir;  /* NULL: no cache */
  CodegenUnit *units;
  int nunits, cap, requests;
  int cache_hits, cache_corrupt, cache_warned;
  int lowerings;          /* units lowered to PTX (the others took a lowered unit's PTX) */
  int views;              /* lowerings to LLVM IR (each made the PTX of one or more of those units) */
  double seconds[4];      /* CPU time summed over the units compiled: MLIR, LLVM + NVPTX, ptxas; fatbinary */
  double wall[2];         /* elapsed: units, fatbins */
} Codegen;

void codegen_init(Codegen *g, Backend *be, EmitKind emit, int jobs, const char *cache_dir);
void codegen_free(Codegen *g);

/* The unit for this request (an existing one when `text` matches).
 * `view_text`: the same text with the target as its view (backend_view_key)
 * instead of its lowering key: units whose view texts match are lowered
 * once. The pointers must stay valid until codegen_free. */
int codegen_add(Codegen *g, const char *text, const char *view_text, const CirProgram *p, const CirKernel *k,
                const KernelAbi *abi, const char *target, const char *symbol);

/* Compile every unit; warnings about the cache go to `notes`. */
void codegen_run(Codegen *g, Buf *notes);

/* Make the fatbin of every job. */
void codegen_fatbins(Codegen *g, FatbinJob *jobs, int n);

/* A deep copy of unit u's result. */
void codegen_copy(const Codegen *g, int u, KernelBinary *out);

/* One line of where the time went (for --time). */
void codegen_report(const Codegen *g, Buf *notes);

#endif
