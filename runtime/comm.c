/* comm.c - the communicator of context-parallel programs: NCCL (opened
 * with dlopen on first use, like the CUDA driver in cuda.c) or an
 * in-process group of ranks on one GPU (driver events and device-to-device
 * copies). */
#include <dlfcn.h>
#include <limits.h>
#include <nccl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "rt.h"

_Static_assert(CAKE_COMM_ID_BYTES == NCCL_UNIQUE_ID_BYTES, "CAKE_COMM_ID_BYTES is NCCL's unique id size");
_Static_assert(sizeof(ncclUniqueId) == CAKE_COMM_ID_BYTES, "ncclUniqueId is its bytes");

/* ---- NCCL, loaded on first use ---- */

typedef struct RtNccl {
  __typeof__(&ncclGetUniqueId) GetUniqueId;
  __typeof__(&ncclCommInitRank) CommInitRank;
  __typeof__(&ncclCommDestroy) CommDestroy;
  __typeof__(&ncclCommAbort) CommAbort;
  __typeof__(&ncclCommUserRank) CommUserRank;
  __typeof__(&ncclCommCount) CommCount;
  __typeof__(&ncclCommGetAsyncError) CommGetAsyncError;
  __typeof__(&ncclAllGather) AllGather;
  __typeof__(&ncclSend) Send;
  __typeof__(&ncclRecv) Recv;
  __typeof__(&ncclGroupStart) GroupStart;
  __typeof__(&ncclGroupEnd) GroupEnd;
  __typeof__(&ncclGetErrorString) GetErrorString;
  __typeof__(&ncclGetLastError) GetLastError; /* optional: NCCL's detail of the last error */
} RtNccl;

static RtNccl g_nccl;
static int g_nccl_state; /* 0 = not tried, 1 = ok, -1 = failed */
static char g_nccl_error[512];
static pthread_once_t g_nccl_once = PTHREAD_ONCE_INIT;

static void load_nccl(void) {
  void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h) { /* the reason given is that of libnccl.so.2, the library NCCL installs */
    snprintf(g_nccl_error, sizeof g_nccl_error, "NCCL (libnccl.so.2) could not be loaded: %s", dlerror());
    h = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
  }
  if (!h) {
    g_nccl_state = -1;
    return;
  }
#define SYM(field, name)                                                                    \
  do {                                                                                      \
    *(void **)&g_nccl.field = dlsym(h, name);                                               \
    if (!g_nccl.field) {                                                                    \
      snprintf(g_nccl_error, sizeof g_nccl_error, "NCCL (libnccl.so.2) lacks %s (too old?)", name); \
      g_nccl_state = -1;                                                                    \
      return;                                                                               \
    }                                                                                       \
  } while (0)
  SYM(GetUniqueId, "ncclGetUniqueId");
  SYM(CommInitRank, "ncclCommInitRank");
  SYM(CommDestroy, "ncclCommDestroy");
  SYM(CommAbort, "ncclCommAbort");
  SYM(CommUserRank, "ncclCommUserRank");
  SYM(CommCount, "ncclCommCount");
  SYM(CommGetAsyncError, "ncclCommGetAsyncError");
  SYM(AllGather, "ncclAllGather");
  SYM(Send, "ncclSend");
  SYM(Recv, "ncclRecv");
  SYM(GroupStart, "ncclGroupStart");
  SYM(GroupEnd, "ncclGroupEnd");
  SYM(GetErrorString, "ncclGetErrorString");
#undef SYM
  *(void **)&g_nccl.GetLastError = dlsym(h, "ncclGetLastError");
  g_nccl_state = 1;
}

static cake_status nccl_lib(const RtNccl **out) {
  pthread_once(&g_nccl_once, load_nccl);
  if (g_nccl_state != 1) return rt_fail(CAKE_ERR_COMM, "%s", g_nccl_error);
  *out = &g_nccl;
  return CAKE_OK;
}

/* A non-blocking communicator answers ncclInProgress until the call is done:
 * wait for it (a blocking one never does). */
static ncclResult_t nccl_settle(ncclComm_t comm, ncclResult_t rc) {
  while (rc == ncclInProgress && comm) {
    sched_yield();
    if (g_nccl.CommGetAsyncError(comm, &rc) != ncclSuccess) break;
  }
  return rc;
}

static cake_status nccl_check(ncclComm_t comm, ncclResult_t rc, const char *what) {
  rc = nccl_settle(comm, rc);
  if (rc == ncclSuccess) return CAKE_OK;
  const char *m = g_nccl.GetErrorString ? g_nccl.GetErrorString(rc) : NULL;
  const char *detail = g_nccl.GetLastError ? g_nccl.GetLastError(comm) : NULL;
  return rt_fail(CAKE_ERR_COMM, "%s failed: %s (NCCL error %d)%s%s", what, m ? m : "unknown error", (int)rc,
                 detail && *detail ? ": " : "", detail && *detail ? detail : "");
}

/* ---- communicators ---- */

enum { COMM_NCCL = 1, COMM_LOCAL = 2 };

typedef struct RtGroup RtGroup;

struct cake_comm {
  int kind;
  int rank, size;
  ncclComm_t nccl; /* COMM_NCCL */
  int owns;        /* COMM_NCCL: made by cake_comm_init_nccl, destroyed with the cake_comm */
  RtGroup *group;  /* COMM_LOCAL */
};

/* An in-process group: its members and two events per rank, made in the
 * context current at cake_comm_init_local. ready[r]: rank r's send buffer is
 * ready (recorded on its stream); done[r]: rank r's copies are done (recorded
 * on its stream after them). */
struct RtGroup {
  int n;
  int alive; /* members not yet destroyed */
  void **ready, **done;
  cake_comm *members;
};

static void group_free(RtGroup *g) {
  const cake_allocator *al = rt_default_allocator();
  if (g->ready)
    for (int i = 0; i < g->n; i++) rt_event_destroy(g->ready[i]);
  if (g->done)
    for (int i = 0; i < g->n; i++) rt_event_destroy(g->done[i]);
  rt_free(al, g->ready);
  rt_free(al, g->done);
  rt_free(al, g->members);
  rt_free(al, g);
}

static cake_status check_nranks(const char *fn, int nranks) {
  if (nranks < 1 || nranks > CAKE_MAX_RANKS)
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: nranks is %d, outside [1, %d]", fn, nranks, CAKE_MAX_RANKS);
  return CAKE_OK;
}

cake_status cake_comm_unique_id(uint8_t id[CAKE_COMM_ID_BYTES]) {
  if (!id) return rt_fail(CAKE_ERR_ARGUMENT, "cake_comm_unique_id: id is required");
  const RtNccl *nc;
  cake_status s = nccl_lib(&nc);
  if (s) return s;
  ncclUniqueId u;
  memset(&u, 0, sizeof u);
  if ((s = nccl_check(NULL, nc->GetUniqueId(&u), "ncclGetUniqueId"))) return s;
  memcpy(id, &u, CAKE_COMM_ID_BYTES);
  return CAKE_OK;
}

cake_status cake_comm_init_nccl(const uint8_t id[CAKE_COMM_ID_BYTES], int nranks, int rank, cake_comm **out) {
  const char *fn = "cake_comm_init_nccl";
  if (!id) return rt_fail(CAKE_ERR_ARGUMENT, "%s: id is required", fn);
  if (!out) return rt_fail(CAKE_ERR_ARGUMENT, "%s: out is required", fn);
  cake_status s = check_nranks(fn, nranks);
  if (s) return s;
  if (rank < 0 || rank >= nranks)
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: rank is %d, outside [0, %d)", fn, rank, nranks);
  char target[16];
  if ((s = rt_current_target(target, sizeof target, NULL, NULL))) return s;
  const RtNccl *nc;
  if ((s = nccl_lib(&nc))) return s;
  const cake_allocator *al = rt_default_allocator();
  cake_comm *c = rt_alloc(al, sizeof *c);
  if (!c) return CAKE_ERR_MEMORY;
  ncclUniqueId u;
  memcpy(&u, id, CAKE_COMM_ID_BYTES);
  ncclComm_t comm = NULL;
  ncclResult_t rc = nc->CommInitRank(&comm, nranks, u, rank);
  if ((s = nccl_check(comm, rc, "ncclCommInitRank"))) {
    if (comm) nc->CommAbort(comm); /* what NCCL asks of a communicator whose init failed */
    rt_free(al, c);
    return s;
  }
  c->kind = COMM_NCCL;
  c->rank = rank;
  c->size = nranks;
  c->nccl = comm;
  c->owns = 1;
  *out = c;
  return CAKE_OK;
}

cake_status cake_comm_from_nccl(void *nccl_comm, cake_comm **out) {
  const char *fn = "cake_comm_from_nccl";
  if (!nccl_comm) return rt_fail(CAKE_ERR_ARGUMENT, "%s: nccl_comm is required", fn);
  if (!out) return rt_fail(CAKE_ERR_ARGUMENT, "%s: out is required", fn);
  const RtNccl *nc;
  cake_status s = nccl_lib(&nc);
  if (s) return s;
  ncclComm_t comm = (ncclComm_t)nccl_comm;
  int rank = -1, size = 0;
  if ((s = nccl_check(comm, nc->CommUserRank(comm, &rank), "ncclCommUserRank"))) return s;
  if ((s = nccl_check(comm, nc->CommCount(comm, &size), "ncclCommCount"))) return s;
  if (size < 1 || size > CAKE_MAX_RANKS || rank < 0 || rank >= size)
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: the communicator has rank %d of %d ranks (at most %d are supported)", fn,
                   rank, size, CAKE_MAX_RANKS);
  cake_comm *c = rt_alloc(rt_default_allocator(), sizeof *c);
  if (!c) return CAKE_ERR_MEMORY;
  c->kind = COMM_NCCL;
  c->rank = rank;
  c->size = size;
  c->nccl = comm;
  *out = c;
  return CAKE_OK;
}

/* The group without its events when `events` is 0 (rt_comm_init_local_nodevice). */
static cake_status init_local(const char *fn, int nranks, cake_comm **comms, int events) {
  if (!comms) return rt_fail(CAKE_ERR_ARGUMENT, "%s: comms is required (nranks entries)", fn);
  cake_status s = check_nranks(fn, nranks);
  if (s) return s;
  if (events) {
    char target[16];
    if ((s = rt_current_target(target, sizeof target, NULL, NULL))) return s;
  }
  const cake_allocator *al = rt_default_allocator();
  RtGroup *g = rt_alloc(al, sizeof *g);
  if (!g) return CAKE_ERR_MEMORY;
  g->n = nranks;
  if (!(g->members = rt_alloc(al, sizeof(cake_comm) * (size_t)nranks))) {
    group_free(g);
    return CAKE_ERR_MEMORY;
  }
  if (events) {
    if (!(g->ready = rt_alloc(al, sizeof(void *) * (size_t)nranks)) ||
        !(g->done = rt_alloc(al, sizeof(void *) * (size_t)nranks))) {
      group_free(g);
      return CAKE_ERR_MEMORY;
    }
    for (int r = 0; r < nranks; r++)
      if ((s = rt_event_create(&g->ready[r])) || (s = rt_event_create(&g->done[r]))) {
        group_free(g);
        return s;
      }
  }
  for (int r = 0; r < nranks; r++) {
    cake_comm *c = &g->members[r];
    c->kind = COMM_LOCAL;
    c->rank = r;
    c->size = nranks;
    c->group = g;
    comms[r] = c;
  }
  g->alive = nranks;
  return CAKE_OK;
}

cake_status cake_comm_init_local(int nranks, cake_comm **comms) {
  return init_local("cake_comm_init_local", nranks, comms, 1);
}

cake_status rt_comm_init_local_nodevice(int nranks, cake_comm **comms) {
  return init_local("rt_comm_init_local_nodevice", nranks, comms, 0);
}

int cake_comm_rank(const cake_comm *c) { return c ? c->rank : -1; }
int cake_comm_size(const cake_comm *c) { return c ? c->size : 0; }
int cake_comm_is_local(const cake_comm *c) { return c && c->kind == COMM_LOCAL; }

void cake_comm_destroy(cake_comm *c) {
  if (!c) return;
  if (c->kind == COMM_LOCAL) {
    RtGroup *g = c->group;
    if (__atomic_sub_fetch(&g->alive, 1, __ATOMIC_ACQ_REL) == 0) group_free(g);
    return;
  }
  if (c->owns && g_nccl_state == 1) g_nccl.CommDestroy(c->nccl);
  rt_free(rt_default_allocator(), c);
}

/* ---- exchanges over NCCL ---- */

static cake_status check_nccl_comm(const char *fn, const cake_comm *c) {
  if (!c) return rt_fail(CAKE_ERR_ARGUMENT, "%s: the communicator is required", fn);
  if (c->kind != COMM_NCCL)
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: rank %d's communicator is an in-process group (use the group call)", fn,
                   c->rank);
  return CAKE_OK;
}

cake_status rt_comm_all_gather(cake_comm *c, uint64_t send, uint64_t recv, size_t bytes, void *stream) {
  const char *fn = "rt_comm_all_gather";
  cake_status s = check_nccl_comm(fn, c);
  if (s) return s;
  if (bytes == 0) return CAKE_OK;
  if (bytes > SIZE_MAX / (size_t)c->size)
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: %zu bytes from each of %d ranks overflow", fn, bytes, c->size);
  if (!send || !recv)
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: rank %d's %s buffer is 0", fn, c->rank, !send ? "send" : "receive");
  return nccl_check(c->nccl,
                    g_nccl.AllGather((const void *)(uintptr_t)send, (void *)(uintptr_t)recv, bytes, ncclInt8, c->nccl,
                                     (cudaStream_t)stream),
                    "ncclAllGather");
}

cake_status rt_comm_send_recv(cake_comm *c, uint64_t send, int to, uint64_t recv, int from, size_t bytes,
                              void *stream) {
  const char *fn = "rt_comm_send_recv";
  cake_status s = check_nccl_comm(fn, c);
  if (s) return s;
  if (to < -1 || to >= c->size)
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: rank %d sends to %d, outside [-1, %d)", fn, c->rank, to, c->size);
  if (from < -1 || from >= c->size)
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: rank %d receives from %d, outside [-1, %d)", fn, c->rank, from, c->size);
  if (bytes == 0 || (to < 0 && from < 0)) return CAKE_OK;
  if ((to >= 0 && !send) || (from >= 0 && !recv))
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: rank %d's %s buffer is 0", fn, c->rank, to >= 0 && !send ? "send" : "receive");
  ncclComm_t comm = c->nccl;
  cudaStream_t st = (cudaStream_t)stream;
  if ((s = nccl_check(comm, g_nccl.GroupStart(), "ncclGroupStart"))) return s;
  if (to >= 0) s = nccl_check(comm, g_nccl.Send((const void *)(uintptr_t)send, bytes, ncclInt8, to, comm, st), "ncclSend");
  if (!s && from >= 0)
    s = nccl_check(comm, g_nccl.Recv((void *)(uintptr_t)recv, bytes, ncclInt8, from, comm, st), "ncclRecv");
  /* the group is closed whatever happened inside it; the first error is the one reported */
  cake_status e = nccl_check(comm, g_nccl.GroupEnd(), "ncclGroupEnd");
  return s ? s : e;
}

/* ---- exchanges of an in-process group ---- */

static cake_status check_group(const char *fn, cake_comm *const *comms, int n, void *const *streams) {
  if (!comms) return rt_fail(CAKE_ERR_ARGUMENT, "%s: comms is required", fn);
  if (!streams) return rt_fail(CAKE_ERR_ARGUMENT, "%s: streams is required (one per rank)", fn);
  if (n < 1 || n > CAKE_MAX_RANKS)
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: n is %d, outside [1, %d]", fn, n, CAKE_MAX_RANKS);
  /* comms[0] first: its group's size bounds what is read of the arrays */
  for (int r = 0; r < n; r++) {
    const cake_comm *c = comms[r];
    if (!c) return rt_fail(CAKE_ERR_ARGUMENT, "%s: comms[%d] is NULL", fn, r);
    if (c->kind != COMM_LOCAL)
      return rt_fail(CAKE_ERR_ARGUMENT, "%s: comms[%d] is an NCCL communicator, not a member of an in-process group",
                     fn, r);
    if (r == 0 && n != c->group->n)
      return rt_fail(CAKE_ERR_ARGUMENT, "%s: %d members given, but the group has %d ranks", fn, n, c->group->n);
    if (c->group != comms[0]->group)
      return rt_fail(CAKE_ERR_ARGUMENT, "%s: comms[%d] belongs to another group than comms[0]", fn, r);
    if (c->rank != r)
      return rt_fail(CAKE_ERR_ARGUMENT, "%s: comms[%d] is rank %d (the members go in rank order)", fn, r, c->rank);
  }
  return CAKE_OK;
}

cake_status rt_comm_check_group(const char *fn, cake_comm *const *comms, int n) {
  void *const one = NULL; /* streams are not looked at */
  return check_group(fn, comms, n, (void *const *)&one);
}

static cake_status check_events(const char *fn, const RtGroup *g) {
  if (!g->ready) return rt_fail(CAKE_ERR_CUDA, "%s: the group has no events (it was made without a device)", fn);
  return CAKE_OK;
}

cake_status rt_comm_local_all_gather(cake_comm *const *comms, int n, const uint64_t *send, const uint64_t *recv,
                                     size_t bytes, void *const *streams) {
  const char *fn = "rt_comm_local_all_gather";
  cake_status s = check_group(fn, comms, n, streams);
  if (s) return s;
  if (!send || !recv) return rt_fail(CAKE_ERR_ARGUMENT, "%s: %s is required (one per rank)", fn, !send ? "send" : "recv");
  if (bytes == 0) return CAKE_OK;
  if (bytes > SIZE_MAX / (size_t)n)
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: %zu bytes from each of %d ranks overflow", fn, bytes, n);
  for (int r = 0; r < n; r++) {
    if (!send[r] || !recv[r])
      return rt_fail(CAKE_ERR_ARGUMENT, "%s: rank %d's %s buffer is 0", fn, r, !send[r] ? "send" : "receive");
    if (recv[r] > UINT64_MAX - (uint64_t)n * bytes)
      return rt_fail(CAKE_ERR_ARGUMENT, "%s: rank %d's receive buffer 0x%llx + %d * %zu bytes overflows", fn, r,
                     (unsigned long long)recv[r], n, bytes);
  }
  RtGroup *g = comms[0]->group;
  if ((s = check_events(fn, g))) return s;
  /* 1. every send buffer is ready on its rank's stream */
  for (int i = 0; i < n && n > 1; i++)
    if ((s = rt_event_record(g->ready[i], streams[i]))) return s;
  /* 2. each receiver waits for every sender, then copies on its own stream */
  for (int j = 0; j < n; j++) {
    for (int i = 0; i < n; i++)
      if (i != j && (s = rt_stream_wait_event(streams[j], g->ready[i]))) return s;
    for (int i = 0; i < n; i++) {
      uint64_t dst = recv[j] + (uint64_t)i * bytes;
      if (dst != send[i] && (s = rt_memcpy_dtod(dst, send[i], bytes, streams[j]))) return s;
    }
    if (n > 1 && (s = rt_event_record(g->done[j], streams[j]))) return s;
  }
  /* 3. no sender reuses its buffer before every copy reading it is done */
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      if (i != j && (s = rt_stream_wait_event(streams[i], g->done[j]))) return s;
  return CAKE_OK;
}

cake_status rt_comm_local_send_recv(cake_comm *const *comms, int n, const uint64_t *send, const int *to,
                                    const uint64_t *recv, const int *from, size_t bytes, void *const *streams) {
  const char *fn = "rt_comm_local_send_recv";
  cake_status s = check_group(fn, comms, n, streams);
  if (s) return s;
  if (!send || !to || !recv || !from)
    return rt_fail(CAKE_ERR_ARGUMENT, "%s: %s is required (one per rank)", fn,
                   !send ? "send" : !to ? "to" : !recv ? "recv" : "from");
  for (int r = 0; r < n; r++) {
    if (to[r] < -1 || to[r] >= n)
      return rt_fail(CAKE_ERR_ARGUMENT, "%s: rank %d sends to %d, outside [-1, %d)", fn, r, to[r], n);
    if (from[r] < -1 || from[r] >= n)
      return rt_fail(CAKE_ERR_ARGUMENT, "%s: rank %d receives from %d, outside [-1, %d)", fn, r, from[r], n);
  }
  for (int r = 0; r < n; r++) {
    if (to[r] >= 0 && from[to[r]] != r)
      return rt_fail(CAKE_ERR_ARGUMENT, "%s: rank %d sends to rank %d, but rank %d receives from %d", fn, r, to[r],
                     to[r], from[to[r]]);
    if (from[r] >= 0 && to[from[r]] != r)
      return rt_fail(CAKE_ERR_ARGUMENT, "%s: rank %d receives from rank %d, but rank %d sends to %d", fn, r, from[r],
                     from[r], to[from[r]]);
  }
  if (bytes == 0) return CAKE_OK;
  for (int r = 0; r < n; r++) {
    if (to[r] >= 0 && !send[r]) return rt_fail(CAKE_ERR_ARGUMENT, "%s: rank %d's send buffer is 0", fn, r);
    if (from[r] >= 0 && !recv[r]) return rt_fail(CAKE_ERR_ARGUMENT, "%s: rank %d's receive buffer is 0", fn, r);
  }
  RtGroup *g = comms[0]->group;
  int any = 0;
  for (int r = 0; r < n; r++) any |= to[r] >= 0;
  if (!any) return CAKE_OK;
  if ((s = check_events(fn, g))) return s;
  /* 1. the send buffers of ranks sending to another rank are ready */
  for (int a = 0; a < n; a++)
    if (to[a] >= 0 && to[a] != a && (s = rt_event_record(g->ready[a], streams[a]))) return s;
  /* 2. each receiver waits for its sender and copies on its own stream */
  for (int b = 0; b < n; b++) {
    int a = from[b];
    if (a < 0) continue;
    if (a != b && (s = rt_stream_wait_event(streams[b], g->ready[a]))) return s;
    if (recv[b] != send[a] && (s = rt_memcpy_dtod(recv[b], send[a], bytes, streams[b]))) return s;
    if (a != b && (s = rt_event_record(g->done[b], streams[b]))) return s;
  }
  /* 3. no sender reuses its buffer before the copy reading it is done */
  for (int a = 0; a < n; a++)
    if (to[a] >= 0 && to[a] != a && (s = rt_stream_wait_event(streams[a], g->done[to[a]]))) return s;
  return CAKE_OK;
}
