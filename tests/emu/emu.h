/* emu.h - a functional emulator of the PTX the compiler generates, so that
 * the GPU tests can run the generated kernels on a CPU (tests/emu/README.md).
 *
 * It runs one kernel entry of one PTX module: the blocks shared among
 * worker threads, each block's threads one at a time up to the next
 * synchronisation point (a
 * block barrier, or a warp-collective instruction, which runs for the whole
 * warp at once). Asynchronous copies land at the latest moment their wait
 * allows. Every global access is checked against the live allocations and
 * every shared access against the block's shared memory; a fault, a
 * divergent collective or a barrier that cannot be passed stops the launch
 * with a message naming the instruction, the block and the thread. */
#ifndef CAKE_EMU_H
#define CAKE_EMU_H

#include <stddef.h>
#include <stdint.h>

typedef struct EmuKernel EmuKernel;

/* the global memory the kernel may touch: find() gives the live allocation
 * [*lo, *hi) that holds addr and returns 0, or returns -1 */
typedef struct {
  int (*find)(void *ctx, uint64_t addr, uint64_t *lo, uint64_t *hi);
  void *ctx;
} EmuMemory;

/* Parses the entry NAME of the PTX text (one module). NULL with a message
 * in err when the text has no such entry or uses what the emulator lacks. */
EmuKernel *emu_kernel_parse(const char *ptx, size_t len, const char *name, char *err, size_t errn);
void emu_kernel_free(EmuKernel *k);
int emu_kernel_nparams(const EmuKernel *k);

/* A whole file, NUL-terminated (len without the NUL); NULL if unreadable. */
char *emu_read_file(const char *path, size_t *len);
/* The module around pos in NUL-terminated PTX text, where modules follow
 * one another as `cakec --emit=ptx` writes them (each after a
 * "// ---- kernel NAME" line): *start and *n, from that line before pos
 * (or the text's start) to the next (or the end). */
void emu_ptx_module(const char *text, const char *pos, const char **start, size_t *n);

/* what a launch executed, summed over its threads (an instruction whose
 * predicate is false counts too: a GPU issues it) */
enum {
  EMU_ALL, EMU_MMA, EMU_LDMATRIX, EMU_SHFL, EMU_BAR, EMU_LD_SHARED, EMU_ST_SHARED, EMU_LD_GLOBAL, EMU_ST_GLOBAL,
  EMU_CP_ASYNC, EMU_COUNTS
};

/* Runs the kernel; 0 on success, else -1 with a message in err. counts
 * (NULL: none) receives the totals above; per_ins (NULL: none; else
 * emu_kernel_nins entries) how often each instruction ran, over all threads. */
int emu_launch(const EmuKernel *k, const unsigned grid[3], const unsigned block[3], unsigned shared_bytes,
               void **params, const EmuMemory *mem, uint64_t counts[EMU_COUNTS], uint64_t *per_ins, char *err,
               size_t errn);
/* the kernel's instructions: their number, and each one's PTX line and text */
int emu_kernel_nins(const EmuKernel *k);
int emu_kernel_ins_line(const EmuKernel *k, int i);
const char *emu_kernel_ins_text(const EmuKernel *k, int i);

#endif
