/* test_comm.c - the communicators of libcakert on one GPU.
 *
 * In-process groups of R = 1, 2, 4, 8 ranks, each rank on its own
 * non-blocking stream: all-gather (separate buffers and in place), a ring
 * send/recv (r -> r+1 mod R) and a chain with ends (r -> r+1; rank 0
 * receives nothing, rank R-1 sends nothing). Each case runs several rounds
 * with no host synchronisation between them, reusing the buffers; per round
 * and rank, on that rank's stream:
 *   spin (a different time per rank, the order reversed every other round)
 *   -> poison the receive buffer -> write the round's pattern into the send
 *   buffer -> exchange -> snapshot the receive buffer (a copy on the same
 *   stream) -> overwrite the send buffer at once.
 * A receiver that does not wait for its senders copies a stale buffer; a
 * sender that does not wait for the copies reading its buffer overwrites it
 * under them. Every byte of every snapshot is checked at the end.
 * Then NCCL with one rank (when libnccl.so.2 loads; said clearly when it
 * does not): all-gather, a send/recv with no peer (nothing happens), a
 * caller's ncclComm_t wrapped with cake_comm_from_nccl, and the wrong kind
 * of communicator for each call.
 *
 * usage: test_comm [PACKAGE_DIR] [--quick]   (the package is not used) */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#include "gpu_util.h"
#include "rt.h"

enum { MAX_R = 8, POISON = 0xEE, GARBAGE = 0x5A };

/* A spin of `ns` nanoseconds on the stream (the driver compiles the PTX). */
static const char spin_ptx[] =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry spin(.param .u64 ns)\n{\n"
    "  .reg .u64 %t0, %t1, %d, %ns;\n  .reg .pred %p;\n"
    "  ld.param.u64 %ns, [ns];\n  mov.u64 %t0, %globaltimer;\n"
    "LOOP:\n  mov.u64 %t1, %globaltimer;\n  sub.u64 %d, %t1, %t0;\n"
    "  setp.lt.u64 %p, %d, %ns;\n  @%p bra LOOP;\n  ret;\n}\n";
static CUfunction g_spin;

static void spin(CUstream s, unsigned long long ns) {
  void *params[] = {&ns};
  CK(cuLaunchKernel(g_spin, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
}

static uint8_t pattern(int round, int rank, size_t k) {
  return (uint8_t)(k * 31 + (k >> 8) * 13 + (size_t)rank * 101 + (size_t)round * 57 + 1);
}

typedef enum { GATHER, GATHER_IN_PLACE, RING, CHAIN } Kind;
static const char *const kind_name[] = {"all-gather", "all-gather in place", "ring send/recv", "chain send/recv"};

/* One case: R ranks, `rounds` rounds of `bytes` per rank. Returns 1 on success. */
static int run_case(Kind kind, int R, size_t bytes, int rounds) {
  cake_comm *comms[MAX_R];
  RT(cake_comm_init_local(R, comms));
  int gather = kind == GATHER || kind == GATHER_IN_PLACE;
  size_t rbytes = gather ? (size_t)R * bytes : bytes;
  void *streams[MAX_R]; /* CUstream */
  CUdeviceptr sendb[MAX_R], recvb[MAX_R], snap[MAX_R];
  uint64_t send[MAX_R], recv[MAX_R];
  int to[MAX_R], from[MAX_R];
  /* the patterns of every round and rank, in pinned memory (uploads are async) */
  uint8_t *host;
  CK(cuMemAllocHost((void **)&host, (size_t)rounds * R * bytes));
  for (int t = 0; t < rounds; t++)
    for (int r = 0; r < R; r++)
      for (size_t k = 0; k < bytes; k++) host[((size_t)t * R + r) * bytes + k] = pattern(t, r, k);
  for (int r = 0; r < R; r++) {
    CK(cuStreamCreate((CUstream *)&streams[r], CU_STREAM_NON_BLOCKING));
    recvb[r] = gpu_alloc(rbytes);
    sendb[r] = kind == GATHER_IN_PLACE ? 0 : gpu_alloc(bytes);
    send[r] = kind == GATHER_IN_PLACE ? recvb[r] + (size_t)r * bytes : sendb[r];
    recv[r] = recvb[r];
    snap[r] = gpu_alloc((size_t)rounds * rbytes);
    CK(cuMemsetD8(recvb[r], POISON, rbytes));
    to[r] = kind == RING ? (r + 1) % R : kind == CHAIN ? (r + 1 < R ? r + 1 : -1) : -1;
    from[r] = kind == RING ? (r + R - 1) % R : kind == CHAIN ? r - 1 : -1;
  }
  CK(cuCtxSynchronize());
  for (int t = 0; t < rounds; t++) {
    for (int r = 0; r < R; r++) {
      CUstream s = (CUstream)streams[r];
      spin(s, 20000ull * (unsigned long long)(t % 2 ? R - r : r + 1));
      CK(cuMemsetD8Async(recvb[r], POISON, rbytes, s));
      CK(cuMemcpyHtoDAsync(send[r], host + ((size_t)t * R + r) * bytes, bytes, s));
    }
    if (gather)
      RT(rt_comm_local_all_gather(comms, R, send, recv, bytes, streams));
    else
      RT(rt_comm_local_send_recv(comms, R, send, to, recv, from, bytes, streams));
    for (int r = 0; r < R; r++) {
      CK(cuMemcpyDtoDAsync(snap[r] + (size_t)t * rbytes, recvb[r], rbytes, (CUstream)streams[r]));
      if (kind != GATHER_IN_PLACE) CK(cuMemsetD8Async(send[r], GARBAGE, bytes, (CUstream)streams[r]));
    }
  }
  CK(cuCtxSynchronize());
  long long bad = 0;
  char first[256] = "";
  uint8_t *got = malloc((size_t)rounds * rbytes);
  for (int r = 0; r < R; r++) {
    CK(cuMemcpyDtoH(got, snap[r], (size_t)rounds * rbytes));
    for (int t = 0; t < rounds; t++)
      for (size_t k = 0; k < rbytes; k++) {
        int src = gather ? (int)(k / bytes) : from[r];
        size_t off = gather ? k % bytes : k;
        uint8_t want = src < 0 ? POISON : pattern(t, src, off);
        uint8_t g = got[(size_t)t * rbytes + k];
        if (g != want && !bad++)
          snprintf(first, sizeof first, "first: round %d, rank %d, byte %zu: 0x%02x, expected 0x%02x (%s)", t, r, k, g,
                   want, src < 0 ? "untouched" : "from its sender");
      }
  }
  free(got);
  printf("%-22s R=%d bytes=%-8zu rounds=%d  bad bytes %lld  %s%s%s\n", kind_name[kind], R, bytes, rounds, bad,
         bad ? "FAIL" : "PASS", bad ? "\n    " : "", first);
  for (int r = 0; r < R; r++) {
    gpu_free(sendb[r]), gpu_free(recvb[r]), gpu_free(snap[r]);
    CK(cuStreamDestroy((CUstream)streams[r]));
    cake_comm_destroy(comms[r]);
  }
  CK(cuMemFreeHost(host));
  return bad == 0;
}

/* The calls that refuse a group's member, or an NCCL communicator. */
static int check_refusals(cake_comm *nccl) {
  cake_comm *g[2];
  RT(cake_comm_init_local(2, g));
  CUdeviceptr b = gpu_alloc(1024);
  uint64_t send[2] = {b, b + 256}, recv[2] = {b + 512, b + 768};
  void *streams[2] = {NULL, NULL};
  int to[2] = {1, -1}, from[2] = {-1, 0}, bad_from[2] = {-1, -1}, ok = 1;
  struct {
    const char *what;
    cake_status s;
  } cases[4] = {
      {"rt_comm_all_gather(local member)", rt_comm_all_gather(g[0], b, b + 512, 16, NULL)},
      {"rt_comm_send_recv(local member)", rt_comm_send_recv(g[1], b, -1, b + 512, 0, 16, NULL)},
      {"rt_comm_local_send_recv(inconsistent)", rt_comm_local_send_recv(g, 2, send, to, recv, bad_from, 16, streams)},
  };
  int n = 3;
  if (nccl) cases[n++] = (__typeof__(cases[0])){"rt_comm_local_all_gather(nccl member)",
                                                 rt_comm_local_all_gather(&nccl, 1, send, recv, 16, streams)};
  for (int i = 0; i < n; i++) {
    int pass = cases[i].s == CAKE_ERR_ARGUMENT;
    printf("refused: %-40s %s  %s: %s\n", cases[i].what, pass ? "PASS" : "FAIL", cake_status_name(cases[i].s),
           pass ? "" : "expected CAKE_ERR_ARGUMENT");
    ok &= pass;
  }
  /* the consistent form of the same call works */
  RT(rt_comm_local_send_recv(g, 2, send, to, recv, from, 16, streams));
  CK(cuCtxSynchronize());
  gpu_free(b);
  cake_comm_destroy(g[1]);
  cake_comm_destroy(g[0]);
  return ok;
}

/* NCCL with one rank: 1 = pass, 0 = fail, -1 = NCCL unavailable or not
 * asked for (said). */
static int run_nccl(int skip) {
  if (skip) {
    printf("nccl: NOT TESTED: --no-nccl\n");
    return -1;
  }
  uint8_t id[CAKE_COMM_ID_BYTES];
  cake_status s = cake_comm_unique_id(id);
  if (s != CAKE_OK) {
    printf("nccl: NOT TESTED: cake_comm_unique_id: %s: %s\n", cake_status_name(s), cake_last_error());
    return -1;
  }
  cake_comm *c;
  RT(cake_comm_init_nccl(id, 1, 0, &c));
  int ok = cake_comm_rank(c) == 0 && cake_comm_size(c) == 1 && !cake_comm_is_local(c);
  CUstream st;
  CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  size_t bytes = 65537;
  CUdeviceptr a = gpu_alloc(bytes), b = gpu_alloc(bytes);
  uint8_t *h = malloc(bytes), *g = malloc(bytes);
  for (size_t k = 0; k < bytes; k++) h[k] = pattern(0, 0, k);
  CK(cuMemcpyHtoD(a, h, bytes));
  CK(cuMemsetD8(b, POISON, bytes));
  RT(rt_comm_all_gather(c, a, b, bytes, st));
  CK(cuStreamSynchronize(st));
  CK(cuMemcpyDtoH(g, b, bytes));
  int gathered = memcmp(g, h, bytes) == 0;
  /* no peer: nothing moves */
  CK(cuMemsetD8(b, POISON, bytes));
  RT(rt_comm_send_recv(c, a, -1, b, -1, bytes, st));
  CK(cuStreamSynchronize(st));
  CK(cuMemcpyDtoH(g, b, bytes));
  int untouched = 1;
  for (size_t k = 0; k < bytes; k++) untouched &= g[k] == POISON;
  int refused = rt_comm_send_recv(c, a, 1, b, -1, bytes, st) == CAKE_ERR_ARGUMENT &&
                rt_comm_send_recv(c, a, -1, b, -2, bytes, st) == CAKE_ERR_ARGUMENT;
  printf("nccl R=1: rank/size %s, all-gather %s, send/recv without peers %s, peers out of range refused %s\n",
         ok ? "PASS" : "FAIL", gathered ? "PASS" : "FAIL", untouched ? "PASS" : "FAIL", refused ? "PASS" : "FAIL");
  ok &= check_refusals(c);
  ok &= gathered && untouched && refused;
  cake_comm_destroy(c);

  /* a caller's communicator: wrapped, used, and left alone by cake_comm_destroy */
  void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
  __typeof__(&ncclCommInitRank) init = NULL;
  __typeof__(&ncclCommDestroy) destroy = NULL;
  if (lib) {
    *(void **)&init = dlsym(lib, "ncclCommInitRank");
    *(void **)&destroy = dlsym(lib, "ncclCommDestroy");
  }
  ncclComm_t raw = NULL;
  ncclUniqueId uid;
  RT(cake_comm_unique_id((uint8_t *)&uid));
  int wrapped = 1;
  char why[256] = "";
  ncclResult_t irc = ncclSuccess;
  if (!init || !destroy)
    wrapped = 0, snprintf(why, sizeof why, "ncclCommInitRank/ncclCommDestroy not found");
  else if ((irc = init(&raw, 1, uid, 0)) != ncclSuccess)
    wrapped = 0, snprintf(why, sizeof why, "ncclCommInitRank returned %d", (int)irc);
  for (int pass = 0; wrapped && pass < 2; pass++) { /* twice: the first destroy must leave `raw` usable */
    cake_comm *w;
    cake_status ws = cake_comm_from_nccl(raw, &w);
    if (ws != CAKE_OK) {
      snprintf(why, sizeof why, "pass %d: cake_comm_from_nccl: %s: %s", pass, cake_status_name(ws), cake_last_error());
      wrapped = 0;
      break;
    }
    if (cake_comm_rank(w) != 0 || cake_comm_size(w) != 1 || cake_comm_is_local(w))
      wrapped = 0, snprintf(why, sizeof why, "pass %d: rank %d size %d local %d", pass, cake_comm_rank(w),
                            cake_comm_size(w), cake_comm_is_local(w));
    CK(cuMemsetD8(b, POISON, bytes));
    ws = rt_comm_all_gather(w, a, b, bytes, st);
    if (ws != CAKE_OK && wrapped)
      wrapped = 0, snprintf(why, sizeof why, "pass %d: rt_comm_all_gather: %s: %s", pass, cake_status_name(ws),
                            cake_last_error());
    CK(cuStreamSynchronize(st));
    CK(cuMemcpyDtoH(g, b, bytes));
    if (memcmp(g, h, bytes) != 0 && wrapped) wrapped = 0, snprintf(why, sizeof why, "pass %d: gathered bytes differ", pass);
    cake_comm_destroy(w);
  }
  if (raw) destroy(raw);
  printf("nccl R=1: cake_comm_from_nccl (all-gather twice, the caller's communicator kept) %s%s%s\n",
         wrapped ? "PASS" : "FAIL", why[0] ? ": " : "", why);
  ok &= wrapped;
  gpu_free(a), gpu_free(b);
  free(h), free(g);
  CK(cuStreamDestroy(st));
  return ok;
}

int main(int argc, char **argv) {
  /* --no-nccl: the local groups only (memcheck reports the API errors of
   * NCCL's own start-up, which probes kernel images with cudaFuncGetAttributes) */
  int quick = 0, no_nccl = 0;
  for (int i = 1; i < argc; i++) quick |= !strcmp(argv[i], "--quick"), no_nccl |= !strcmp(argv[i], "--no-nccl");
  gpu_init();
  CUmodule mod;
  CK(cuModuleLoadData(&mod, spin_ptx));
  CK(cuModuleGetFunction(&g_spin, mod, "spin"));
  int fails = 0;
  static const int ranks[] = {1, 2, 4, 8};
  size_t sizes[] = {4099, (size_t)1 << 20};
  int nsizes = quick ? 1 : 2, rounds = quick ? 3 : 5;
  for (int k = GATHER; k <= CHAIN; k++)
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < nsizes; j++) fails += !run_case((Kind)k, ranks[i], sizes[j], rounds);
  fails += !check_refusals(NULL);
  int nccl = run_nccl(no_nccl);
  fails += nccl == 0;
  CK(cuModuleUnload(mod));
  printf("test_comm: %s (%d failing case%s; NCCL %s)\n", fails ? "FAIL" : "PASS", fails, fails == 1 ? "" : "s",
         nccl < 0 ? (no_nccl ? "not asked for" : "NOT TESTED: libnccl unavailable") : "tested");
  return fails ? 1 : 0;
}
