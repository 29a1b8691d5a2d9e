/* cake_runtime.h - libcakert, the Cake runtime: load a package, plan a
 * problem, validate tensors, launch compiled programs. C, CUDA driver API.
 *
 * Contract
 * - Nothing here prints or exits. Every function returns a cake_status;
 *   on failure cake_last_error() (per thread) says what went wrong, naming
 *   the tensor, axis, file or kernel involved.
 * - Host memory comes from the caller's cake_allocator (or malloc/free).
 *   Device memory is the caller's: tensors, the workspace and the saved area
 *   are passed in; the runtime never allocates on the device.
 * - The runtime links no CUDA library at build time: it loads the driver
 *   (libcuda.so.1) when a launch first needs it, so packages can be loaded,
 *   plans made and tensors validated on a machine without a GPU.
 * - Every pointer argument is checked: NULL where something is required, or
 *   a count out of range, is CAKE_ERR_ARGUMENT (never a crash). What cannot
 *   be checked is said at the function (the length of cu_seqlens).
 * - Lifetimes: a cake_program and a cake_plan borrow from their package; use
 *   them only while it is loaded (cake_plan_free alone may come after
 *   cake_package_free). A package may be shared by threads (module loading is
 *   locked); a plan may not be launched from two threads at once (the launch
 *   records where it uploaded the chunk tables).
 * - A package is untrusted input: the manifest is validated whole before
 *   anything uses it (see cake_package_load).
 *
 * Use
 *   cake_package *pkg;  cake_package_load("build/package", NULL, &pkg);
 *   const cake_program *prog;  cake_package_program(pkg, "first", &prog);
 *   cake_plan *plan;  cake_plan_create(prog, &plan);
 *   cake_plan_set_dim(plan, "T", 8192);  cake_plan_set_dim(plan, "H", 16);
 *   cake_plan_set_docs(plan, cu_seqlens_host, n_docs);   // optional
 *   cake_plan_finalize(plan);
 *   size_t ws;  cake_plan_workspace_bytes(plan, &ws);    // before allocating
 *   cake_binding b[] = {{"x", x}, {"y", y}, {"w", w}, {"z", z}};
 *   cake_launch(plan, "fwd", b, 4, workspace, ws, 0, 0, stream);
 *
 * Typed launchers: `cakec SPEC --emit=header -o PROG.h` writes, per program,
 * a header-only C file over this API (its options as enums, its dims, params
 * and tensors as structs, PROG_plan, PROG_validate_ENTRY, PROG_launch_ENTRY).
 * The runtime itself knows no particular program.
 */
#ifndef CAKE_RUNTIME_H
#define CAKE_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cake_status {
  CAKE_OK = 0,
  CAKE_ERR_ARGUMENT,    /* a bad argument: unknown name, wrong count, missing value */
  CAKE_ERR_IO,          /* a file could not be read */
  CAKE_ERR_PACKAGE,     /* the manifest is malformed or a file fails its sha256 */
  CAKE_ERR_NOT_FOUND,   /* no such program, entry, or no kernel for this GPU */
  CAKE_ERR_TENSOR,      /* a tensor fails validation */
  CAKE_ERR_PLAN,        /* the problem cannot be planned (dims, cu_seqlens, grid limits) */
  CAKE_ERR_CUDA,        /* the CUDA driver reported an error or is missing */
  CAKE_ERR_MEMORY,      /* host allocation failed */
  CAKE_ERR_COMM,        /* NCCL reported an error or is missing */
} cake_status;

/* The message of the last failed call on this thread. */
const char *cake_last_error(void);
const char *cake_status_name(cake_status s);
/* Record `message` as this thread's last error and return `s`: for layers
 * over the runtime (generated launchers, bindings) that check arguments
 * themselves. A NULL message records "(no message)". */
cake_status cake_fail(cake_status s, const char *message);

typedef struct cake_allocator {
  void *(*alloc)(void *ctx, size_t bytes);
  void (*free)(void *ctx, void *p);
  void *ctx;
} cake_allocator;

typedef enum cake_dtype { CAKE_BF16, CAKE_F16, CAKE_F32, CAKE_I32 } cake_dtype;
const char *cake_dtype_name(cake_dtype t);

enum { CAKE_MAX_RANK = 6 };

typedef struct cake_tensor {
  uint64_t data;                   /* device pointer (CUdeviceptr); 0 = absent (optional tensors only) */
  cake_dtype dtype;
  int rank;
  int64_t shape[CAKE_MAX_RANK];
  int64_t strides[CAKE_MAX_RANK];  /* in elements; all zero means contiguous row-major */
} cake_tensor;

typedef struct cake_binding {
  const char *name;
  cake_tensor tensor;
} cake_binding;

typedef struct cake_package cake_package;
typedef struct cake_program cake_program;
typedef struct cake_plan cake_plan;

/* Load `dir`/manifest.json and every file it lists; each file is checked
 * against its sha256. The binaries are kept in host memory: each file is
 * read once, hashed, and those same bytes go to the driver.
 * Files are opened inside `dir` only: a listed path must be relative and
 * normalized (no empty, "." or ".." component), may be listed once, and
 * must name a regular file (manifest.json too) reached without following a
 * symbolic link in any component; FIFOs, devices and directories are
 * refused. Limits: 1 GiB per file, 64 MiB for manifest.json. Every value of
 * the manifest is checked (integers integral and in range, chunk a multiple
 * of 16 in [16, 256], extents in [1, 2^31), block threads a multiple of 32
 * in [32, 1024], shared memory at most 232448 bytes, known enums, unique
 * names, no tensor named chunk_table or doc_table, no duplicate JSON keys,
 * requirements that read as comparisons over the program's dims, at most 64
 * of 1024 characters each; options' prefer clauses with a value among the
 * option's, a condition over the dims and the device facts, at most 16 per
 * option, the same in every variant of a program): a violation is
 * CAKE_ERR_PACKAGE naming the program, the record and the field.
 * Version 3 adds context-parallel
 * programs: dims with roles "ranks" and "fragments" (at most one each;
 * fragments needs ranks, and ranks needs a docs dim), the program's
 * "exchanges" (optional; each {name, op "all_gather",
 * src, dst}: two temps of one dtype, dst's shape the ranks dim followed by
 * src's, src's without a tokens, docs or chunks dim; names unique among
 * stages and exchanges) which entries list among their stages, and the
 * kernel argument {"kind": "workspace", "name": "frag_table"} (a program
 * with a ranks dim; no tensor may take that name). Version 4 adds halo
 * exchanges (op "halo", before, after: src a token tensor, dst [F, before
 * + after] + src's other extents). Version 5 adds send_next and send_prev
 * (dst of src's shape), an entry's "rounds" ([{first, count, reverse}]:
 * groups of its stages, in order and disjoint), the kernel argument of kind
 * "round" (exactly the kernels in rounds take it, with the frag_table), and
 * the fragment table's ends() header (see cake_plan_set_partition); an
 * exchange's src and dst are two different tensors. Versions 2 to 5 are
 * read. */
cake_status cake_package_load(const char *dir, const cake_allocator *alloc, cake_package **out);
void cake_package_free(cake_package *pkg);
/* The program `name`; an error when the package holds several variants of it. */
cake_status cake_package_program(const cake_package *pkg, const char *name, const cake_program **out);
/* The variant of `name` whose options are those in `options` ("gate=safe,qk_norm=true";
 * NULL or "" for all defaults); options not named take their default. Each
 * element is name=value with a known name given once and a non-empty value;
 * an empty element (",", a trailing comma) is CAKE_ERR_ARGUMENT. */
cake_status cake_package_variant(const cake_package *pkg, const char *name, const char *options,
                                 const cake_program **out);
/* Options chosen from the problem. An option may carry `prefer VALUE when
 * EXPR` clauses in its spec (the manifest's "prefer"): a condition over the
 * program's dims and device facts, SMS being the number of multiprocessors.
 * cake_package_choose picks the variant of `name` whose options are
 *   - those given in `options` (as for cake_package_variant): given wins;
 *   - for an option left out that has prefer clauses, the value of its first
 *     clause that holds for the problem;
 *   - for the others (and when no clause holds), the default.
 * The problem: `dims` (ndims name/value pairs, each a dim of the program, at
 * most once, in [0, 2^31); only the dims the evaluated clauses read are
 * needed) and `ndocs`, the number of documents (the docs dim: 0 or 1 for one
 * document, i.e. a plan without cu_seqlens; naming the docs dim in `dims` is
 * CAKE_ERR_ARGUMENT). The device facts: `facts->sms` when `facts` is given
 * with sms > 0; else the environment variable CAKE_DEVICE_SMS (a positive
 * integer; for tests and for planning on another machine); else the current
 * device's (cake_device_sm_count, read only when a clause needs it); else
 * CAKE_DEFAULT_SMS (132, an H100 / H200), so that it works without a GPU.
 * Errors name the option and the clause: a clause reading a dim that was
 * not given is CAKE_ERR_ARGUMENT ("option 'block' of 'attn': 'prefer b16
 * when N * HV <= 2 * SMS' (attn.cake:12:20) reads dim 'HV', which was not
 * given"), one whose arithmetic fails (an overflow, a division
 * by zero) CAKE_ERR_PLAN; a chosen combination missing from the package is
 * CAKE_ERR_NOT_FOUND naming it. cake_program_variant(*out) says what was
 * chosen. The dims are not kept: set them on the plan as usual. */
typedef struct cake_dim_value {
  const char *name;
  int64_t value;
} cake_dim_value;
typedef struct cake_device_facts {
  int64_t sms; /* streaming multiprocessors; 0: from the environment, the device, or CAKE_DEFAULT_SMS */
} cake_device_facts;
enum { CAKE_DEFAULT_SMS = 132 };
cake_status cake_package_choose(const cake_package *pkg, const char *name, const char *options,
                                const cake_dim_value *dims, int ndims, int64_t ndocs,
                                const cake_device_facts *facts, const cake_program **out);
const char *cake_program_variant(const cake_program *prog);            /* NULL for NULL */
int cake_package_program_count(const cake_package *pkg);               /* 0 for NULL */
const char *cake_package_program_name(const cake_package *pkg, int i); /* NULL out of range */

/* Plans: the problem's dims and documents, its chunk table and the byte-exact
 * workspace and saved-tensor layout. No device is needed. */
cake_status cake_plan_create(const cake_program *prog, cake_plan **out);
void cake_plan_free(cake_plan *plan);
/* A dim's value lies in [0, 2^31). */
cake_status cake_plan_set_dim(cake_plan *plan, const char *name, int64_t value);
/* Packed documents: cu_seqlens (host memory, ndocs + 1 nondecreasing offsets
 * from 0 to T; 1 <= ndocs < 2^31 - 1). Sets the program's docs dim. Without
 * it, all T tokens form one document. No device synchronisation is involved.
 * The array is read at indices 0..ndocs, i.e. ndocs + 1 entries: a shorter
 * array cannot be detected. A bad offset is CAKE_ERR_PLAN naming its index
 * and value; the last offset is compared with T by cake_plan_finalize. */
cake_status cake_plan_set_docs(cake_plan *plan, const int32_t *cu_seqlens, int64_t ndocs);
/* The value must fit the parameter's type: an integer in [-2^31, 2^31) for
 * i32, a finite f32 value for f32. Like set_dim and set_docs, it leaves the
 * plan unfinalized: the spec's requirements over parameters are checked by
 * the next cake_plan_finalize. */
cake_status cake_plan_set_param(cake_plan *plan, const char *name, double value);
/* Computes the chunk tables and the layout, every size with overflow
 * checks (CAKE_ERR_PLAN naming the tensor and its dims). First it checks
 * the spec's requirements (`require` in the spec, "requires" in the
 * manifest) over the dims, with the documents counted, and the parameters
 * (set, else their defaults; f32 ones as f32): the first one broken is
 * CAKE_ERR_PLAN, "dims break 'HV % H == 0' (attn.cake:9:9): HV = 3,
 * H = 2" or "the parameters break 'lower_bound < 0' (kda_fwd.cake:58:11):
 * lower_bound = 0.5" (a division or remainder by zero in it makes it false:
 * "..., H = 0 (a remainder by zero)"). Finalizing again also makes the next
 * launch write the chunk tables again (see cake_launch). A context-parallel
 * program's plan needs cake_plan_set_partition (see there). */
cake_status cake_plan_finalize(cake_plan *plan);
cake_status cake_plan_get_dim(const cake_plan *plan, const char *name, int64_t *value);
int64_t cake_plan_chunk_count(const cake_plan *plan); /* -1 unless finalized */
cake_status cake_plan_workspace_bytes(const cake_plan *plan, size_t *bytes);
cake_status cake_plan_saved_bytes(const cake_plan *plan, size_t *bytes);
/* What one rank of a context-parallel plan (finalized) sends and receives
 * in the exchanges of `entry`, in bytes: an all_gather (or a halo) sends
 * its part once and receives the other R - 1 ranks'; send_next and
 * send_prev send it once unless the rank is the last (first) and receive
 * it once unless it is the first (last) (the manifest's "bytes" of each
 * exchange gives the part as a formula of the dims; an exchange in a
 * `rounds(...)` group counts once per round). 0 and 0 for an entry
 * without exchanges; CAKE_ERR_ARGUMENT for an unknown entry or a NULL
 * result pointer. */
cake_status cake_plan_comm_bytes(const cake_plan *plan, const char *entry, uint64_t *sent, uint64_t *received);
/* Stage timing, for benchmarks and profiling. With timing on, every launch
 * of an entry through this plan (cake_launch, cake_launch_comm,
 * cake_launch_group) records a driver event before and after each of its
 * stages, kernels and exchanges, on the plan's stream; off (the default),
 * launches record nothing. cake_plan_stage_times then gives the entry's
 * stages in order of its last launch: n (the entry's stage count), and up
 * to cap of their names (stage or exchange names; valid while the package
 * is) and times in milliseconds. It waits for the last stage's event. An
 * exchange's time includes its wait for the other ranks. In a group whose
 * ranks share one stream the ranks' kernels run one after another, so each
 * rank's stage times are its own, except in a `rounds(...)` group: a stage
 * of a group is timed from its start in the first round to its end in the
 * last, so its time spans the group's other stages (and, on a shared
 * stream, the other ranks' work) in between; a group of no rounds records
 * 0. Errors: CAKE_ERR_ARGUMENT for an unknown
 * entry or one not launched with timing on since the plan was made. The
 * events are made in the launching context on first use and freed with the
 * plan. */
cake_status cake_plan_set_timing(cake_plan *plan, int on);
cake_status cake_plan_stage_times(const cake_plan *plan, const char *entry, const char **names, float *ms, int cap,
                                  int *n);
/* Where one workspace item (a temp tensor, "chunk_table", "doc_table", "frag_table") or
 * saved tensor lives: its byte offset and size inside its area. */
cake_status cake_plan_item(const cake_plan *plan, const char *name, size_t *offset, size_t *bytes);

/* Check the bindings of `entry` against the plan: every required tensor
 * bound once, each with the declared dtype, rank, extents (per axis),
 * contiguity and 16-byte alignment. Pure host check; no device needed. */
cake_status cake_validate(const cake_plan *plan, const char *entry, const cake_binding *b, int n);

/* Launch the stages of `entry` in order on `stream` (a CUstream; 0 = the
 * default stream) in the current CUDA context. Validates first, including
 * that every pointer is device memory of the current device. The workspace
 * must hold cake_plan_workspace_bytes() bytes and be 256-byte aligned (the
 * same for `saved`; cuMemAlloc's pointers are).
 * The runtime writes its chunk tables into the workspace with a stream-
 * ordered copy before the first stage of the first launch of the plan on
 * that workspace address; later launches on the same address reuse them
 * (so that launches can be captured in a CUDA graph). If that memory is
 * used for anything else between launches (an allocator that hands the
 * same address out again, a shared scratch arena), call cake_plan_finalize
 * before the next launch: it makes the launch write the tables again.
 * An entry with an exchange stage is CAKE_ERR_ARGUMENT ("entry 'fwd'
 * exchanges data with other ranks (stage 'gather_m'): launch it with
 * cake_launch_comm or cake_launch_group"), before anything else. */
cake_status cake_launch(cake_plan *plan, const char *entry, const cake_binding *b, int n, uint64_t workspace,
                        size_t workspace_bytes, uint64_t saved, size_t saved_bytes, void *stream);

/* Context-parallel partitions (the first piece of KCP: the host side only)
 *
 * One packed sequence of T tokens, its documents given by cu_seqlens
 * (ndocs + 1 offsets from 0 to T), is split across R ranks. Each rank holds
 * some runs of tokens; cake_partition lists the runs of one rank as
 * fragments. A fragment is a maximal run of consecutive tokens of one
 * document that one rank holds, so the fragment before it in the same
 * document, when there is one, is always on another rank.
 *
 * Layouts (blocks are half-open token ranges; divisions round down and
 * are computed in int64 without overflow):
 *   CAKE_LAYOUT_CONTIGUOUS: the stream in R blocks, cut at i*T/R; rank r
 *     holds block r.
 *   CAKE_LAYOUT_ZIGZAG: the stream in 2R blocks, cut at i*T/(2R); rank r
 *     holds blocks r and 2R-1-r (rank R-1 the two middle ones, as one run).
 *   CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT: each document [s, e) in 2R blocks,
 *     cut at s + i*(e-s)/(2R); rank r holds blocks r and 2R-1-r of every
 *     document.
 * align (0 or a chunk size C in [1, 2^20]): every cut strictly inside a
 * document [s, e) moves to the nearest chunk boundary of that document,
 * s + k*C or e itself (the end of its last, partial chunk); a tie goes to
 * the earlier one. Cuts at document boundaries stay. Then each fragment
 * starts at s + k*C and ends at s + k'*C or at e: its chunks, counted from
 * its start, are exactly chunks of the single-rank program (the exact mode
 * of KCP, where the fp32 state passes rank to rank). Blocks may be empty
 * (short documents, T < 2R, alignment); empty runs are dropped, and a rank
 * may hold nothing at all (*nfrags = 0, local_cu = {0}).
 *
 * A rank's local stream is its fragments concatenated in increasing global
 * order; each fragment is one local document. local_cu (nfrags + 1 offsets)
 * is the cu_seqlens of that stream: give it to cake_plan_set_docs with the
 * local token count local_cu[nfrags] as the plan's token dim, and the plan's
 * chunk table is the rank's local chunk table. Local token i of fragment f
 * is global token f.start + (i - f.local_start).
 *
 * Arguments: cu_seqlens (host memory, read at indices 0..ndocs; validated
 * as cake_plan_set_docs does: 1 <= ndocs < 2^31 - 1, cu_seqlens[0] = 0,
 * non-decreasing, cu_seqlens[ndocs] = T, the first bad index named,
 * CAKE_ERR_PLAN), T in [0, 2^31), 1 <= R <= CAKE_MAX_RANKS, 0 <= rank < R,
 * a known layout, align in [0, 2^20] (CAKE_ERR_ARGUMENT otherwise).
 * frags NULL asks for the count only: *nfrags is written, nothing else
 * (local_cu must then be NULL too). Otherwise frags holds cap entries and
 * local_cu, when not NULL, cap + 1; fewer than needed is CAKE_ERR_ARGUMENT
 * naming the count, which is also left in *nfrags. On any other error
 * nothing is written. No memory is allocated. */
enum { CAKE_MAX_RANKS = 4096, CAKE_MAX_ALIGN = 1 << 20 };
typedef enum cake_layout {
  CAKE_LAYOUT_CONTIGUOUS,
  CAKE_LAYOUT_ZIGZAG,
  CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT,
} cake_layout;
const char *cake_layout_name(cake_layout l); /* "contiguous", "zigzag", "zigzag_per_document"; NULL if unknown */
typedef struct cake_fragment {
  int64_t start, end;   /* global tokens [start, end), inside document `doc` */
  int64_t local_start;  /* its first token in the rank's local stream (= local_cu[f]) */
  int32_t doc;          /* the global document index (an empty document holds no fragment) */
  int32_t continues;    /* 1: tokens of the document come before it: it needs an incoming state */
  int32_t continued;    /* 1: tokens of the document come after it: its final state is needed later */
  int32_t prev_rank;    /* the rank holding the fragment just before it in the document, or -1 */
  int32_t next_rank;    /* the rank holding the fragment just after it in the document, or -1 */
} cake_fragment;
cake_status cake_partition(const int32_t *cu_seqlens, int64_t ndocs, int64_t T, int32_t R, int32_t rank,
                           cake_layout layout, int32_t align, cake_fragment *frags, int64_t cap,
                           int64_t *nfrags, int32_t *local_cu);

/* Communicators of context-parallel programs
 *
 * A KCP program's entries exchange data between its R ranks (an all-gather
 * of a per-rank buffer, a send to one rank with a receive from another)
 * through a cake_comm, one per rank. Two kinds:
 *   NCCL: one rank per process (or per thread), each on its own GPU. NCCL
 *     is opened with dlopen (libnccl.so.2) on first use, so programs that
 *     never make an NCCL communicator need no NCCL: when it is missing, or
 *     lacks a function, the call fails with CAKE_ERR_COMM naming the
 *     library and the loader's reason. NCCL's errors are CAKE_ERR_COMM with
 *     ncclGetErrorString's text (and NCCL's last message).
 *   In-process (local): R ranks of one process on one GPU, each launched on
 *     its own stream by one host thread that drives all ranks stage by stage;
 *     its exchanges are stream-ordered device-to-device copies, synchronised
 *     with driver events (no host synchronisation).
 * Communicators come from the default allocator (malloc), not a package's.
 * A bad argument (NULL where something is required, nranks outside
 * [1, CAKE_MAX_RANKS], rank outside [0, nranks)) is CAKE_ERR_ARGUMENT
 * naming it; on any error nothing is allocated and *out / comms are left
 * alone. */
enum { CAKE_COMM_ID_BYTES = 128 }; /* NCCL_UNIQUE_ID_BYTES */
typedef struct cake_comm cake_comm;
/* A new NCCL unique id (ncclGetUniqueId), made on one rank and given to all
 * (by the caller's own means) for cake_comm_init_nccl. */
cake_status cake_comm_unique_id(uint8_t id[CAKE_COMM_ID_BYTES]);
/* Rank `rank` of an NCCL communicator of `nranks` ranks (ncclCommInitRank,
 * which blocks until all ranks have joined) on the current device: a CUDA
 * context must be current (CAKE_ERR_CUDA otherwise). The NCCL communicator
 * is destroyed with the cake_comm. */
cake_status cake_comm_init_nccl(const uint8_t id[CAKE_COMM_ID_BYTES], int nranks, int rank, cake_comm **out);
/* Wraps the caller's ncclComm_t `nccl_comm` (its rank and size from
 * ncclCommUserRank and ncclCommCount; at most CAKE_MAX_RANKS ranks). The
 * caller keeps ownership: it must outlive the cake_comm, and
 * cake_comm_destroy leaves it alone. */
cake_status cake_comm_from_nccl(void *nccl_comm, cake_comm **out);
/* An in-process group of `nranks` ranks on the current device (a CUDA
 * context must be current; CAKE_ERR_CUDA otherwise, or without a driver):
 * comms[0..nranks-1], rank r in comms[r]. Each member is destroyed with
 * cake_comm_destroy; the group (its events) is freed with the last one,
 * which must come while its context is alive. */
cake_status cake_comm_init_local(int nranks, cake_comm **comms);
int cake_comm_rank(const cake_comm *c);     /* -1 for NULL */
int cake_comm_size(const cake_comm *c);     /* 0 for NULL */
int cake_comm_is_local(const cake_comm *c); /* 1 for a member of an in-process group; 0 for NCCL or NULL */
void cake_comm_destroy(cake_comm *c);       /* NULL does nothing */

/* Context-parallel plans (KCP; a program with a dim of role "ranks", schema 3 to 5)
 *
 * cake_plan_set_partition gives the plan of rank `rank` of R its documents:
 * the global packed sequence (cu_seqlens, ndocs, T) split by `layout` and
 * `align` exactly as cake_partition does (the same arguments, checked the
 * same way, with the same errors), every rank partitioned to know the
 * fragments before each of this rank's. It sets
 *   - the tokens dim: the rank's local token count;
 *   - the documents: the local cu_seqlens, one document per fragment (a rank
 *     holding nothing gets one empty document: local cu {0, 0});
 *   - the ranks dim: R; the fragments dim (when the program has one): F, the
 *     most fragments any rank holds (at least 1);
 *   - the fragment table (the kernel argument frag_table, "frag_table" of
 *     cake_plan_item), int32: for each local fragment n in [0, N), at 6n,
 *     [continues, continued, before_first, before_count, after_first,
 *     after_count]; at 6N (schema 5) the first and count of the ends()
 *     entries; from P = 6N + 2 on (6N for a schema 3 or 4 package), (rank,
 *     index among that rank's fragments) pairs, entry i at P + 2i: fragment
 *     n's before entries (the fragments before it in its document, in
 *     document order) are before_first .. before_first + before_count - 1,
 *     its after entries (those after it, in document order) after_first ..
 *     after_first + after_count - 1; the entries go fragment by fragment,
 *     each one's before list then its after list, and last (schema 5) the
 *     fragment that ends each non-empty document, in document order. P + 2E
 *     int32 in all (E entries); a rank without fragments has one row of
 *     zeros. It counts in the workspace like the chunk table and goes to
 *     the device with it (see cake_launch);
 *   - the rounds of the entries' `rounds(...)` groups: the most fragments
 *     any document has (the same on every rank). A launch runs a group's
 *     stages as a block once per round, its kernels given the round.
 * The ranks and fragments dims come from the partition; cake_plan_set_dim
 * may set them too, as a check: a value set by hand must equal the
 * partition's (CAKE_ERR_PLAN from cake_plan_set_partition when set before
 * it, from cake_plan_finalize when set after). Do not set the tokens dim by
 * hand afterwards (finalize then finds it disagrees with the documents).
 * Errors: a program without a ranks dim is CAKE_ERR_PLAN naming it. A KCP
 * plan given its documents by cake_plan_set_docs (which drops a partition)
 * or none has no fragment table: cake_plan_finalize, and so every launch,
 * refuse it with CAKE_ERR_PLAN saying to use cake_plan_set_partition.
 * Allocates host memory for all ranks' fragments while it runs (from the
 * package's allocator); on any error the plan is left as it was. */
cake_status cake_plan_set_partition(cake_plan *plan, const int32_t *cu_seqlens, int64_t ndocs, int64_t T, int32_t R,
                                    int32_t rank, cake_layout layout, int32_t align);

/* Launches of context-parallel entries. Each rank runs the entry's stages
 * in order (a rounds group's stages as a block once per round); a kernel
 * stage as cake_launch does (the same checks, tables and launch), an
 * exchange stage as an all-gather of its src temp into its dst temp (both
 * in the rank's workspace; dst[r] = rank r's src), a halo's all-gather of
 * the fragments' edge tokens staged in the workspace, or for send_next
 * (send_prev) a send of src to rank r + 1 (r - 1) and a receive into dst
 * from r - 1 (r + 1), the first (last) rank's dst zeroed. Every rank's
 * plan must come from the same partition (cake_plan_set_partition with the
 * same cu_seqlens, T, R, layout and align) and have the same dims apart
 * from its tokens and documents: the exchanged sizes are the same.
 *
 * cake_launch_comm: rank `plan`'s rank of an NCCL communicator (each
 * process or thread launches its own rank); the exchanges are NCCL
 * all-gathers, or sends and receives, on `stream` (stream order, no host
 * synchronisation). The
 * communicator's size must be the plan's R and its rank the plan's rank; a
 * member of an in-process group, or a program without a ranks dim, is
 * CAKE_ERR_ARGUMENT. Other ranks' plans cannot be checked from here: they
 * are the caller's to keep consistent (a mismatch shows in NCCL).
 *
 * cake_launch_group: an in-process group (cake_comm_init_local) of n ranks
 * on the current device, driven from this thread. plans[r], b[r] (nb[r]
 * bindings; b[r] may be NULL when nb[r] is 0), workspace[r],
 * workspace_bytes[r], saved[r], saved_bytes[r] and streams[r] are rank r's
 * (saved and saved_bytes NULL: no saved areas; streams NULL: every rank on
 * the default stream), comms the group's n members in rank order. It runs
 * the entry stage by stage across the ranks in lockstep: every rank's
 * kernel of a stage (rank r's on streams[r]), then at an exchange one
 * all-gather, or the sends, over all ranks (rt's stream-ordered copies; see the
 * communicators). Everything is checked before anything is launched: the
 * same program (and variant, of the same package) on every rank, a ranks
 * dim, every plan finalized, plans[r] partitioned as rank r of R = n, all
 * from the same partition, the same dims except tokens, docs and chunks,
 * the group's members in rank order, each rank's bindings and areas as
 * cake_launch checks them (messages start "rank r: "), and workspaces (and
 * saved areas) of different ranks that do not overlap. A failure after that
 * (a CUDA error) may leave part of the work enqueued. Temporary host memory
 * comes from plans[0]'s allocator. */
cake_status cake_launch_comm(cake_plan *plan, const char *entry, const cake_binding *b, int n, uint64_t workspace,
                             size_t workspace_bytes, uint64_t saved, size_t saved_bytes, cake_comm *comm,
                             void *stream);
cake_status cake_launch_group(cake_plan *const *plans, int n, const char *entry, const cake_binding *const *b,
                              const int *nb, const uint64_t *workspace, const size_t *workspace_bytes,
                              const uint64_t *saved, const size_t *saved_bytes, cake_comm *const *comms,
                              void *const *streams);

/* The multiprocessor count of the current device; leaves *n alone without one.
 * Without a driver, the message names libcuda.so.1 and the loader's reason. */
cake_status cake_device_sm_count(int *n);

/* The target the current device runs ("sm_90a", ...), for messages and tests;
 * `buf` must hold it with its terminating NUL (16 bytes suffice). */
cake_status cake_device_target(char *buf, size_t n);

#ifdef __cplusplus
}
#endif

#endif
