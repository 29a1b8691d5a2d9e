/* backend.h - what the compiler needs from code generation.
 *
 * Contract: declared here, implemented by lowering/ (dependency inversion:
 * the compiler layer never includes lowering headers). A backend turns one
 * CIR kernel into MLIR, LLVM IR, PTX and a cubin for one target, and packs
 * the cubins and PTX of one kernel into a fatbin. Errors are diagnostics.
 */
#ifndef CAKE_BACKEND_H
#define CAKE_BACKEND_H

#include "abi.h"
#include "cir.h"

typedef enum {
  EMIT_HEADER, /* typed C launchers (header.c); text, before any code generation */
  EMIT_AST,
  EMIT_CIR,
  EMIT_LIVE,   /* the temps' live ranges (live.h); text, before any code generation */
  EMIT_MLIR,
  EMIT_LLVM,
  EMIT_PTX,
  EMIT_CUBIN,
  EMIT_FATBIN,
  EMIT_PACKAGE,
} EmitKind;

typedef struct KernelBinary {
  const char *target;     /* "sm_90a", ... */
  const char *ptx_target; /* the PTX target LLVM used ("sm_100f" for sm_107a) */
  char *symbol;
  char *mlir;             /* the kernel's MLIR as built (EMIT_MLIR) */
  char *llvm;             /* optimised LLVM IR (EMIT_LLVM) */
  char *ptx;
  unsigned char *cubin;   /* NULL when this ptxas cannot target `target` */
  size_t cubin_len;
  int shared_bytes;       /* dynamic shared memory the kernel needs */
  int registers, spill_bytes, stack_bytes; /* from ptxas -v */
  char *note;             /* e.g. why there is no cubin */
  double seconds[3];      /* CPU time: building the MLIR and its passes, LLVM + NVPTX, ptxas */
} KernelBinary;

typedef struct Backend Backend;

/* cuda_root: where bin/ptxas and bin/fatbinary are. NULL on failure (diagnosed). */
Backend *backend_create(Diag *diag, const char *cuda_root);
void backend_destroy(Backend *be);

/* Lower `k` once for the n targets (all of one view: backend_view_key) and
 * make its PTX for each: out[i] for targets[i] (n of them, each its own
 * result). With stop == EMIT_MLIR or EMIT_LLVM the MLIR as built or the
 * optimised LLVM IR is kept as text too. The MLIR time is out[0]'s; on an
 * error every out[i] is to be freed and none holds PTX to use. */
int backend_compile(Backend *be, Arena *arena, Diag *diag, const CirProgram *p, const CirKernel *k,
                    const KernelAbi *abi, const char *const *targets, int n, const char *symbol, EmitKind stop,
                    KernelBinary *out);
/* ptxas: kb->ptx -> kb->cubin, or a note when this ptxas cannot target kb->target.
 * PTX that asks for two blocks per multiprocessor and spills there is
 * assembled again at one: kb->ptx is then the PTX ptxas was given. */
int backend_assemble(Backend *be, Diag *diag, KernelBinary *kb);
/* Whether kb->ptx leaves that choice to assembly (asks for two blocks per
 * multiprocessor). */
int backend_ptx_chooses_occupancy(const char *ptx);
/* The chip whose assembly makes that choice for the PTX lowered for
 * `target`: the first target (in `cakec --targets` order) of the same
 * lowering that this ptxas can assemble (sm_90a for itself, sm_100a for the
 * sm_100f family); NULL when there is none. Ask before forking workers. */
const char *backend_reference_chip(Backend *be, const char *target);

/* Text that determines what backend_compile generates for `target` (its
 * PTX target, limits and path's features): targets with the same text get
 * the same PTX. */
void backend_lowering_key(const char *target, Buf *out);
/* The same without the PTX target: targets with the same text share one
 * lowering (backend_compile). */
void backend_view_key(const char *target, Buf *out);

/* Whether this ptxas can make a cubin for `target` (asked once per backend;
 * ask before forking workers so that they inherit the answer). */
int backend_can_assemble(Backend *be, const char *target);
/* What `ptxas --version` prints (for cache keys: a different ptxas gives
 * different cubins), or "" when it cannot run. Owned by the backend. */
const char *backend_ptxas_version(Backend *be);

/* One fatbin holding every cubin of `bins` and the PTX of those without one. */
int backend_fatbin(Backend *be, Diag *diag, const KernelBinary *bins, int n, unsigned char **out, size_t *len);

void kernel_binary_free(KernelBinary *kb);

/* CPU seconds used so far by the tools (ptxas, fatbinary) this process ran. */
double backend_tool_seconds(void);

/* The targets the backend knows (lowering/target.h): the PTX target LLVM
 * uses for each, the code-generation path its kernels take (NULL for an
 * unknown target), and a table of them all. */
const char *backend_ptx_target(const char *target);
const char *backend_target_path(const char *target);
void backend_describe_targets(Buf *out);

#endif
