/* rt.h - internals of libcakert shared by its modules. */
#ifndef CAKE_RT_H
#define CAKE_RT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "cake_runtime.h"

/* The device facts of a choice: facts->sms when positive, else the
 * environment's CAKE_DEVICE_SMS, else the current device's, else
 * CAKE_DEFAULT_SMS. */
int64_t rt_device_sms(const cake_device_facts *facts);

/* ---- base.c: errors and memory ---- */
/* Sets the thread's message; an argument may be cake_last_error() itself. */
cake_status rt_fail(cake_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void *rt_alloc(const cake_allocator *a, size_t n); /* zeroed; NULL sets CAKE_ERR_MEMORY */
void rt_free(const cake_allocator *a, void *p);
char *rt_strdup(const cake_allocator *a, const char *s);
const cake_allocator *rt_default_allocator(void);
/* partition.c: a packed sequence's document count and offsets (see cake_plan_set_docs) */
cake_status rt_check_offsets(const int32_t *cu, int64_t ndocs);

/* ---- files.c: package files, opened inside the package directory only ---- */
cake_status rt_open_dir(const char *dir, int *fd);
/* Whether `path` is relative and normalized (no empty, "." or ".." component). */
cake_status rt_check_path(const char *path);
/* The regular file `path` under `dirfd`, read whole into host memory (at most
 * `limit` bytes). No symbolic link is followed, in any component. The
 * message says why, without the path (the caller names it). */
cake_status rt_read_file_at(const cake_allocator *al, int dirfd, const char *path, size_t limit, uint8_t **data,
                            size_t *len);

/* ---- sha256.c ---- */
void rt_sha256(const void *data, size_t n, uint8_t out[32]);
void rt_sha256_hex(const void *data, size_t n, char out[65]);

/* ---- json.c: a strict reader for the manifest ---- */
typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } JKind;
typedef struct JNode JNode;
struct JNode {
  JKind kind;
  double num;
  int boolean;
  char *str;      /* J_STR; also the key of an object member */
  char *key;
  JNode **items;  /* J_ARR elements, J_OBJ members (each with key) */
  int n;
};
typedef struct JDoc {
  const cake_allocator *al;
  void **blocks;
  int nblocks, cap;
} JDoc;
/* NULL on a syntax error, with a message (line:col) in err. */
JNode *json_parse(JDoc *doc, const char *text, size_t len, char *err, size_t errlen);
void json_free(JDoc *doc);
const JNode *json_get(const JNode *obj, const char *key);

/* ---- the loaded package ---- */
/* Limits the loader checks, so that nothing later can exceed them. */
enum {
  RT_MAX_AXES = 3,
  RT_MAX_CTX = 8,
  RT_MAX_TENSORS = 256,            /* tensors per program */
  RT_MAX_ARGS = 64,                /* kernel arguments (the compiler's CAKE_MAX_KERNEL_ARGS) */
  RT_MAX_OPTIONS = 16,             /* options per program (the compiler's limit) */
  RT_MAX_SHARED_BYTES = 232448,    /* dynamic shared memory of one block (sm_90, sm_100) */
  RT_MIN_CHUNK = 16,               /* chunk sizes: multiples of 16 in [16, 256] */
  RT_MAX_CHUNK = 256,
  RT_MAX_DOCS = INT32_MAX - 1,     /* documents of a plan: ndocs + 1 offsets fit in int32 */
  RT_MAX_REQUIRES = 64,            /* requirements per program (the compiler's CAKE_MAX_REQUIRES) */
  RT_MAX_REQUIRE_TEXT = 1024,      /* characters of a requirement's text or expr (CAKE_MAX_REQUIRE_TEXT) */
  RT_MAX_REQUIRE_LOC = 512,        /* characters of its location */
  RT_MAX_PREFERS = 16,             /* prefer clauses per option (the compiler's CAKE_MAX_PREFERS) */
  RT_SCHEMA_VERSION = 5,           /* the newest manifest schema this runtime reads (3: context parallelism,
                                      4: halo exchanges, 5: rounds and the fragment table's ends() header) */
  RT_MIN_SCHEMA_VERSION = 2,       /* the oldest (2: temps' live ranges) */
};
#define RT_MAX_FILE_BYTES ((size_t)1 << 30)     /* one package file: 1 GiB */
#define RT_MAX_MANIFEST_BYTES ((size_t)64 << 20) /* manifest.json: 64 MiB */

typedef struct RtExtent {
  int dim;       /* index into program dims, or -1 */
  int64_t value; /* when dim < 0 */
} RtExtent;

typedef enum { ROLE_IN_, ROLE_OUT_, ROLE_TEMP_, ROLE_SAVE_ } RtRole;

/* Where an entry needs a temp's bytes: its stages at positions first..last
 * (inclusive); first = -1 when the entry does not touch the temp. */
typedef struct RtLive {
  int first, last;
} RtLive;

typedef struct RtTensor {
  char *name;
  RtRole role;
  cake_dtype dtype;
  int rank;
  RtExtent shape[CAKE_MAX_RANK];
  int optional;
  /* temps only: the live range per entry ([nentries]) and whether it is
   * pinned (an entry reads it before writing it: it shares no bytes) */
  RtLive *live;
  int pinned;
} RtTensor;

typedef struct RtParam {
  char *name;
  int is_int;
  int has_default;
  double def;
} RtParam;

typedef enum { A_TENSOR, A_CHUNK_TABLE, A_DOC_TABLE, A_DIM, A_PARAM, A_FRAG_TABLE, A_ROUND } RtArgWhat;
typedef struct RtArg {
  RtArgWhat what;
  int index; /* tensor, dim or param index */
} RtArg;

typedef enum { G_CHUNKS, G_DOCS, G_DIM, G_CONST } RtGridKind;
typedef struct RtGrid {
  RtGridKind kind;
  int dim;
  int64_t value;
} RtGrid;

typedef struct RtKernel {
  char *target, *symbol, *format;
  const uint8_t *image; /* points into the package's file bytes */
  size_t len;
  int shared_bytes;
} RtKernel;

typedef struct RtLoaded {
  void *ctx;  /* CUcontext */
  void *module, *function;
  char target[16];
} RtLoaded;

typedef struct RtStage {
  char *name;
  int threads;
  RtGrid grid[RT_MAX_AXES];
  int ngrid;
  RtArg *args;
  int nargs;
  RtKernel *kernels;
  int nkernels;
  const uint8_t *fatbin;
  size_t fatbin_len;
  RtLoaded loaded[RT_MAX_CTX];
  int nloaded;
} RtStage;

/* An exchange stage of a context-parallel program: DST[r, ...] = rank r's SRC
 * (both temps; the loader checked their dtypes and shapes). */
typedef enum { X_ALL_GATHER, X_HALO, X_SEND_NEXT, X_SEND_PREV } RtExchangeOp;
typedef struct RtExchange {
  char *name;
  RtExchangeOp op;
  int src, dst; /* tensor indices */
  int before, after; /* halo: the tokens before and after each fragment (schema 4) */
} RtExchange;

/* An entry's stages in order: stages[k] >= 0 is a kernel stage (an index
 * into the program's stages), stages[k] < 0 the exchange -1 - stages[k]
 * (rt_entry_exchange). */
/* A `rounds(...)` group of an entry (schema 5): stages [first, first +
 * count) run once per round, as many rounds as the longest document has
 * fragments; a kernel among them runs, in round k, the fragments k-th in
 * their document (from its end when reverse). */
typedef struct RtRounds {
  int first, count, reverse;
} RtRounds;

typedef struct RtEntry {
  char *name;
  int *stages;
  int n;
  RtRounds *rounds; /* in stage order, disjoint */
  int nrounds;
} RtEntry;
#define RT_EXCHANGE_REF(i) (-1 - (i))
#define RT_IS_EXCHANGE(ref) ((ref) < 0)
#define RT_EXCHANGE_INDEX(ref) (-1 - (ref))

/* `prefer VALUE when EXPR` of an option: chosen by cake_package_choose. */
typedef struct RtPrefer {
  char *value; /* one of the option's values */
  char *text;  /* as written, for messages */
  char *expr;  /* what is evaluated: dims and device facts (SMS) by name */
  char *loc;   /* "file.cake:line:col" */
} RtPrefer;

typedef struct RtOption {
  char *name, *value, *def;
  RtPrefer *prefer;
  int nprefer;
} RtOption;

/* `require EXPR` of the spec: checked when a plan is finalized. */
typedef struct RtRequire {
  char *text; /* as written, for the message */
  char *expr; /* what is evaluated (dsl/cake_require.h) */
  char *loc;  /* "file.cake:line:col" */
} RtRequire;

struct cake_program {
  cake_package *pkg;
  char *name;
  char *variant; /* "gate=safe,qk_norm=true", "" without options */
  RtOption *options;
  int noptions;
  char **dims;
  int ndims, tokens_dim, docs_dim, chunks_dim;
  int ranks_dim, frags_dim; /* context-parallel programs (schema 3); -1 otherwise */
  int frag_header;          /* ints between the fragment table's rows and its pairs: 2 (the ends() entries'
                               first and count) from schema 5, 0 before */
  int chunk;
  RtTensor *tensors;
  int ntensors;
  RtParam *params;
  int nparams;
  RtStage *stages;
  int nstages;
  RtExchange *exchanges;
  int nexchanges;
  RtEntry *entries;
  int nentries;
  RtRequire *requires;
  int nrequires;
};

typedef struct RtFile {
  char *path;
  uint8_t *data;
  size_t len;
} RtFile;

struct cake_package {
  cake_allocator al;
  cake_program *programs;
  int nprograms;
  RtFile *files;
  int nfiles;
  pthread_mutex_t lock; /* guards module loading */
};

/* The index of the record named `name` among `n` records of `stride` bytes
 * whose first member is their name (a char *), or -1. */
int rt_find_name(const void *base, size_t stride, int n, const char *name);
int rt_tensor_index(const cake_program *p, const char *name);
int rt_entry_index(const cake_program *p, const char *name);
size_t rt_dtype_bytes(cake_dtype t);

/* ---- the plan ---- */
typedef struct RtItem {
  const char *name;
  int area;      /* 0 = workspace, 1 = saved */
  size_t offset, bytes;
  int tensor;    /* tensor index, or -1 for the tables */
} RtItem;

struct cake_plan {
  cake_allocator al; /* a copy of the package's */
  const cake_program *prog;
  int64_t *dims;
  int *dim_set;
  double *params;
  int *param_set;
  int32_t *cu;        /* ndocs + 1 offsets, NULL = one document */
  int64_t ndocs;
  int finalized;
  int32_t *chunk_table; /* [nchunks][4] */
  int32_t *doc_table;   /* [ndocs + 1] */
  int64_t nchunks;
  RtItem *items;
  int nitems;
  size_t workspace_bytes, saved_bytes;
  uint64_t tables_uploaded_to; /* workspace address of the last upload */
  void *tables_ctx;
  /* context-parallel programs: the partition given by cake_plan_set_partition */
  int partitioned;          /* 1 while the plan's documents are a partition's */
  int32_t rank, nranks;     /* this plan's rank of the partition's R */
  int64_t nfrags_max;       /* F: the most fragments any rank holds */
  int64_t nrounds;          /* the most fragments any document has: the rounds of a `rounds(...)` group */
  int32_t *frag_table;      /* [frag_ints]: see cake_plan_set_partition */
  int64_t frag_ints;
  int64_t *part_first;      /* [R + 1]: rank q's fragments are part_len[part_first[q] ...] */
  int32_t *part_len;        /* the tokens of every rank's fragments (halo exchanges) */
  size_t *halo_at;          /* [2 nexchanges]: a halo's staging buffers in the workspace (send, receive) */
  uint64_t partition_id;    /* a hash of the global partition's inputs (cu, T, R, layout, align) */
  /* stage timing (cake_plan_set_timing): per entry, two events per stage
   * (before, after) of its last launch, made in `timing_ctx` on first use */
  int timing;
  void ***stage_events; /* [nentries] -> [2 * stages], NULL until launched timed */
  int *stage_timed;     /* [nentries]: 1 once a timed launch of the entry went through */
  void *timing_ctx;
};
/* The plan's timing events (destroyed) and their arrays (freed). */
void rt_plan_timing_free(cake_plan *plan);

int64_t rt_extent(const cake_plan *plan, RtExtent e);
/* What one rank sends in exchange `x`: its source's bytes under a finalized plan. */
size_t rt_exchange_bytes(const cake_plan *plan, const RtExchange *x);
/* A point-to-point exchange (send_next, send_prev): whom rank `rank` of R
 * sends to and receives from, -1 past the first or the last rank; 0 for
 * another op (then *to and *from are untouched). */
static inline int rt_send_peers(const RtExchange *x, int rank, int R, int *to, int *from) {
  if (x->op != X_SEND_NEXT && x->op != X_SEND_PREV) return 0;
  int step = x->op == X_SEND_NEXT ? 1 : -1;
  *to = rank + step >= 0 && rank + step < R ? rank + step : -1;
  *from = rank - step >= 0 && rank - step < R ? rank - step : -1;
  return 1;
}
/* The grid of stage `st` under the plan: each axis within CUDA's range
 * ([0, 2^31) on x, [0, 65535] on y and z), else CAKE_ERR_PLAN. */
cake_status rt_grid_of(const cake_plan *plan, const RtStage *st, unsigned grid[3]);

/* ---- cuda.c: the driver, loaded on first use ---- */
typedef struct RtCuda RtCuda;
cake_status rt_cuda(const RtCuda **out);
cake_status rt_cuda_check(int rc, const char *what);
cake_status rt_current_target(char *buf, size_t n, void **ctx_out, int *device_out);
cake_status rt_check_device_pointer(uint64_t ptr, int device, const char *name);
void rt_unload_modules(cake_package *pkg);
cake_status rt_load_stage(cake_package *pkg, RtStage *st, void *ctx, const char *target, void **function);
cake_status rt_launch_kernel(void *function, const unsigned grid[3], unsigned threads, unsigned shared,
                             void *stream, void **params);
cake_status rt_memcpy_htod(uint64_t dst, const void *src, size_t n, void *stream);
cake_status rt_memcpy_dtod(uint64_t dst, uint64_t src, size_t n, void *stream); /* cuMemcpyDtoDAsync */
cake_status rt_memset_zero(uint64_t dst, size_t n, void *stream);                 /* cuMemsetD8Async */
/* Events (CUevent) without timing, in the current context; destroying NULL
 * (or any event when the driver never loaded) does nothing. */
cake_status rt_event_create(void **event);
cake_status rt_event_create_timed(void **event); /* with timing (cake_plan_set_timing) */
/* The milliseconds from `start` to `end` (waits for `end`). */
cake_status rt_event_elapsed(float *ms, void *start, void *end);
void rt_event_destroy(void *event);
cake_status rt_event_record(void *event, void *stream);
cake_status rt_stream_wait_event(void *stream, void *event);

/* ---- comm.c: exchanges of context-parallel programs (stream order, no host synchronisation) ----
 * Over an NCCL communicator (cake_comm_init_nccl, cake_comm_from_nccl), each
 * rank calls for itself:
 *   all-gather: rank r's `bytes` at `send` land at recv + r * bytes on every
 *     rank (recv holds size * bytes); send may be recv + rank * bytes (in place);
 *   send/recv: send `bytes` from `send` to rank `to` and receive `bytes` into
 *     `recv` from rank `from` (-1: none), as one NCCL group.
 * bytes = 0 does nothing. A buffer that is used must not be 0. An in-process
 * group's member, a NULL comm or a peer outside [-1, size) is
 * CAKE_ERR_ARGUMENT; an NCCL failure is CAKE_ERR_COMM. */
cake_status rt_comm_all_gather(cake_comm *c, uint64_t send, uint64_t recv, size_t bytes, void *stream);
cake_status rt_comm_send_recv(cake_comm *c, uint64_t send, int to, uint64_t recv, int from, size_t bytes,
                              void *stream);
/* Over an in-process group (cake_comm_init_local), one call does every
 * rank's part: comms are all n members in rank order, and send, recv, to,
 * from and streams hold one entry per rank (rank r's work goes on
 * streams[r]; streams may repeat, 0 is the default stream). The same
 * meaning as above; for send/recv, rank a sends to b exactly when b
 * receives from a (a may be b), else CAKE_ERR_ARGUMENT naming the rank.
 * Ordering: each receiver's stream waits for its senders' streams (an
 * event recorded at the call), then copies; each sender's stream then
 * waits until the copies reading its buffer are done: work enqueued later on
 * a receiver's stream sees the data, and work enqueued later on a sender's
 * stream may overwrite its send buffer. The
 * group's events are reused: a group's exchanges must not run from two
 * threads at once. On a CUDA error part of the exchange may be enqueued. */
cake_status rt_comm_local_all_gather(cake_comm *const *comms, int n, const uint64_t *send, const uint64_t *recv,
                                     size_t bytes, void *const *streams);
cake_status rt_comm_local_send_recv(cake_comm *const *comms, int n, const uint64_t *send, const int *to,
                                    const uint64_t *recv, const int *from, size_t bytes, void *const *streams);
/* For tests without a device: an in-process group like cake_comm_init_local's
 * but without events (no driver call). Its exchanges check their arguments,
 * do nothing for bytes = 0 and fail with CAKE_ERR_CUDA otherwise. */
cake_status rt_comm_init_local_nodevice(int nranks, cake_comm **comms);
/* The checks rt_comm_local_all_gather makes of its group before any driver
 * call: comms[0..n-1] the n members of one in-process group in rank order. */
cake_status rt_comm_check_group(const char *fn, cake_comm *const *comms, int n);

#endif
