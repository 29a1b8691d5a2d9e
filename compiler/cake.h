/* cake.h - the Cake compiler as a library (the public API).
 *
 * A host program compiles .cake specs, given as files or as strings, into
 * a package directory (manifest.json + cubins, PTX, fatbins) or into one of
 * the intermediate forms as text. Nothing is printed and nothing exits:
 * diagnostics and emitted text come back in the result, and an internal
 * error of the compiler (a bug, or out of memory) comes back as status 3
 * with its message in the diagnostics (some memory of the interrupted step
 * may then stay allocated). Programs are compiled on the calling thread.
 *
 *   cake_source src = {"my.cake", NULL};        // NULL text: read the file
 *   cake_options opt = {.emit = "package", .output = "out/pkg"};
 *   cake_result *r;
 *   if (cake_compile(&src, 1, &opt, &r) != 0) fputs(cake_result_diagnostics(r), stderr);
 *   cake_result_free(r);
 */
#ifndef CAKE_H
#define CAKE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cake_source {
  const char *name; /* shown in diagnostics; the file to read when text is NULL */
  const char *text; /* the spec itself, or NULL */
} cake_source;

typedef struct cake_options {
  const char *emit;      /* "package" (default), "header", "ast", "cir", "live", "mlir", "llvm", "ptx", "cubin", "fatbin" */
  const char *archs;     /* comma-separated targets; NULL: "sm_90a,sm_100a,sm_103a,sm_107a" */
  const char *output;    /* directory for package, cubin and fatbin; unused for text */
  int max_errors;        /* 0: 20 */
  const char *cuda_root; /* NULL: $CAKE_CUDA_ROOT, else /usr/local/cuda */
  const char *options;   /* "name=value,..." fixes options; the others take every value. NULL: all variants */
  int jobs;              /* kernels compiled at once, in as many worker processes; 0: the online CPUs; 1: no workers */
  const char *cache_dir; /* compiled kernels cached here (cubin, fatbin, package); NULL: $CAKE_CACHE_DIR; "": none */
  int timing;            /* add a note saying where the time went */
} cake_options;

typedef struct cake_result cake_result;

/* Returns 0 on success, 1 when the specs have errors, 2 for bad options or
 * I/O failures (including a spec given twice), 3 for an internal error.
 * *out is always set and must be freed. */
int cake_compile(const cake_source *sources, int nsources, const cake_options *opt, cake_result **out);

const char *cake_result_diagnostics(const cake_result *r); /* "" when clean */
const char *cake_result_text(const cake_result *r);        /* the emitted text, for text emits */
const char *cake_result_notes(const cake_result *r);       /* informational messages (e.g. sm_107a) */
int cake_result_error_count(const cake_result *r);
void cake_result_free(cake_result *r);

const char *cake_version(void);
/* The GNU build id (hex) of the binary the compiler is linked into, "" when
 * it has none; compiled kernels are cached under it (--cache-dir). */
const char *cake_build_id(void);
const char *cake_default_archs(void);
/* The targets --arch accepts, one line each: the PTX target, shared memory
 * per block and per multiprocessor, registers, the code-generation path its
 * kernels take and the features the compiler knows it has. Static text. */
const char *cake_target_table(void);

#ifdef __cplusplus
}
#endif

#endif
