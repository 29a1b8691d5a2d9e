/* test_comm.c - the communicators of libcakert (runtime/comm.c) without a
 * GPU: argument checks of the public API and of the exchanges (on an
 * in-process group made without events, rt_comm_init_local_nodevice), the
 * (to, from) pairing of send/recv, the messages, host allocation failures
 * (malloc is wrapped: --wrap=malloc) leaking nothing, and what the calls
 * that need a device or NCCL say here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

/* The runtime's malloc (and this file's): after `malloc_budget` successful
 * requests every request fails; -1 = no limit. */
static long malloc_budget = -1;
void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n) {
  if (malloc_budget == 0) return NULL;
  if (malloc_budget > 0) malloc_budget--;
  return __real_malloc(n);
}

#define EXPECT(call, status, text)                                                                         \
  do {                                                                                                     \
    cake_status s_ = (call);                                                                               \
    if (s_ != (status) || !strstr(cake_last_error(), (text)))                                              \
      fail_msg("%s\n  gave %s: %s\n  expected %s containing '%s'", #call, cake_status_name(s_),            \
               cake_last_error(), cake_status_name(status), (text));                                       \
  } while (0)

static void test_status_names(void **state) {
  assert_string_equal(cake_status_name(CAKE_ERR_COMM), "CAKE_ERR_COMM");
  assert_string_equal(cake_status_name(CAKE_ERR_MEMORY), "CAKE_ERR_MEMORY");
  assert_string_equal(cake_status_name((cake_status)(CAKE_ERR_COMM + 1)), "CAKE_ERR_?");
}

static void test_public_arguments(void **state) {
  uint8_t id[CAKE_COMM_ID_BYTES] = {0};
  cake_comm *c = (cake_comm *)&c, *comms[4] = {NULL};
  EXPECT(cake_comm_unique_id(NULL), CAKE_ERR_ARGUMENT, "cake_comm_unique_id: id is required");
  EXPECT(cake_comm_init_nccl(NULL, 2, 0, &c), CAKE_ERR_ARGUMENT, "cake_comm_init_nccl: id is required");
  EXPECT(cake_comm_init_nccl(id, 2, 0, NULL), CAKE_ERR_ARGUMENT, "cake_comm_init_nccl: out is required");
  EXPECT(cake_comm_init_nccl(id, 0, 0, &c), CAKE_ERR_ARGUMENT, "cake_comm_init_nccl: nranks is 0, outside [1, 4096]");
  EXPECT(cake_comm_init_nccl(id, CAKE_MAX_RANKS + 1, 0, &c), CAKE_ERR_ARGUMENT, "nranks is 4097, outside [1, 4096]");
  EXPECT(cake_comm_init_nccl(id, 2, -1, &c), CAKE_ERR_ARGUMENT, "cake_comm_init_nccl: rank is -1, outside [0, 2)");
  EXPECT(cake_comm_init_nccl(id, 2, 2, &c), CAKE_ERR_ARGUMENT, "cake_comm_init_nccl: rank is 2, outside [0, 2)");
  EXPECT(cake_comm_from_nccl(NULL, &c), CAKE_ERR_ARGUMENT, "cake_comm_from_nccl: nccl_comm is required");
  EXPECT(cake_comm_from_nccl(id, NULL), CAKE_ERR_ARGUMENT, "cake_comm_from_nccl: out is required");
  EXPECT(cake_comm_init_local(2, NULL), CAKE_ERR_ARGUMENT, "cake_comm_init_local: comms is required");
  EXPECT(cake_comm_init_local(0, comms), CAKE_ERR_ARGUMENT, "cake_comm_init_local: nranks is 0, outside [1, 4096]");
  EXPECT(cake_comm_init_local(-3, comms), CAKE_ERR_ARGUMENT, "nranks is -3");
  EXPECT(cake_comm_init_local(CAKE_MAX_RANKS + 1, comms), CAKE_ERR_ARGUMENT, "nranks is 4097");
  assert_ptr_equal(c, (cake_comm *)&c); /* nothing written on an error */
  assert_null(comms[0]);
  assert_int_equal(cake_comm_rank(NULL), -1);
  assert_int_equal(cake_comm_size(NULL), 0);
  assert_int_equal(cake_comm_is_local(NULL), 0);
  cake_comm_destroy(NULL);
}

/* No GPU here: the driver is missing (or the stub fails cuInit). */
static void test_no_device(void **state) {
  cake_comm *comms[4] = {NULL}, *c = NULL;
  uint8_t id[CAKE_COMM_ID_BYTES] = {0};
  assert_int_equal(cake_comm_init_local(4, comms), CAKE_ERR_CUDA);
  assert_true(strstr(cake_last_error(), "libcuda.so.1") || strstr(cake_last_error(), "cuInit"));
  for (int i = 0; i < 4; i++) assert_null(comms[i]);
  /* an NCCL communicator needs a current context before NCCL is even opened */
  assert_int_equal(cake_comm_init_nccl(id, 1, 0, &c), CAKE_ERR_CUDA);
  assert_null(c);
}

/* NCCL may be missing, or load and fail without a GPU, or make an id. */
static void test_unique_id(void **state) {
  uint8_t id[CAKE_COMM_ID_BYTES], zero[CAKE_COMM_ID_BYTES] = {0};
  memset(id, 0, sizeof id);
  cake_status s = cake_comm_unique_id(id);
  if (s == CAKE_OK) {
    print_message("cake_comm_unique_id: NCCL made an id\n");
    assert_memory_not_equal(id, zero, sizeof id);
    return;
  }
  print_message("cake_comm_unique_id: %s: %s\n", cake_status_name(s), cake_last_error());
  assert_int_equal(s, CAKE_ERR_COMM);
  const char *m = cake_last_error();
  assert_true(strstr(m, "libnccl.so.2") || strstr(m, "ncclGetUniqueId failed: "));
  /* a failed load is remembered and said again */
  char first[512];
  snprintf(first, sizeof first, "%s", m);
  assert_int_equal(cake_comm_unique_id(id), CAKE_ERR_COMM);
  if (strstr(first, "libnccl.so.2")) assert_string_equal(cake_last_error(), first);
}

static void test_local_group(void **state) {
  cake_comm *g[3] = {NULL};
  assert_int_equal(rt_comm_init_local_nodevice(3, g), CAKE_OK);
  for (int r = 0; r < 3; r++) {
    assert_non_null(g[r]);
    assert_int_equal(cake_comm_rank(g[r]), r);
    assert_int_equal(cake_comm_size(g[r]), 3);
    assert_int_equal(cake_comm_is_local(g[r]), 1);
  }
  /* members are destroyed in any order; the group goes with the last */
  cake_comm_destroy(g[1]);
  cake_comm_destroy(g[0]);
  cake_comm_destroy(g[2]);
  cake_comm *one;
  assert_int_equal(rt_comm_init_local_nodevice(1, &one), CAKE_OK);
  assert_int_equal(cake_comm_size(one), 1);
  cake_comm_destroy(one);
}

static void test_local_all_gather(void **state) {
  cake_comm *g[3], *h[3], *mixed[3], *rev[3];
  assert_int_equal(rt_comm_init_local_nodevice(3, g), CAKE_OK);
  assert_int_equal(rt_comm_init_local_nodevice(3, h), CAKE_OK);
  uint64_t send[3] = {0x1000, 0x2000, 0x3000}, recv[3] = {0x10000, 0x20000, 0x30000};
  void *streams[3] = {(void *)0x10, (void *)0x20, NULL};
  EXPECT(rt_comm_local_all_gather(NULL, 3, send, recv, 64, streams), CAKE_ERR_ARGUMENT,
         "rt_comm_local_all_gather: comms is required");
  EXPECT(rt_comm_local_all_gather(g, 3, send, recv, 64, NULL), CAKE_ERR_ARGUMENT, "streams is required (one per rank)");
  EXPECT(rt_comm_local_all_gather(g, 0, send, recv, 64, streams), CAKE_ERR_ARGUMENT, "n is 0, outside [1, 4096]");
  EXPECT(rt_comm_local_all_gather(g, 2, send, recv, 64, streams), CAKE_ERR_ARGUMENT,
         "2 members given, but the group has 3 ranks");
  EXPECT(rt_comm_local_all_gather(g, 3, NULL, recv, 64, streams), CAKE_ERR_ARGUMENT, "send is required");
  EXPECT(rt_comm_local_all_gather(g, 3, send, NULL, 64, streams), CAKE_ERR_ARGUMENT, "recv is required");
  mixed[0] = g[0], mixed[1] = h[1], mixed[2] = g[2];
  EXPECT(rt_comm_local_all_gather(mixed, 3, send, recv, 64, streams), CAKE_ERR_ARGUMENT,
         "comms[1] belongs to another group than comms[0]");
  rev[0] = g[0], rev[1] = g[2], rev[2] = g[1];
  EXPECT(rt_comm_local_all_gather(rev, 3, send, recv, 64, streams), CAKE_ERR_ARGUMENT,
         "comms[1] is rank 2 (the members go in rank order)");
  mixed[1] = NULL;
  EXPECT(rt_comm_local_all_gather(mixed, 3, send, recv, 64, streams), CAKE_ERR_ARGUMENT, "comms[1] is NULL");
  /* a local member given to the NCCL calls */
  EXPECT(rt_comm_all_gather(g[1], send[1], recv[1], 64, NULL), CAKE_ERR_ARGUMENT,
         "rt_comm_all_gather: rank 1's communicator is an in-process group (use the group call)");
  EXPECT(rt_comm_all_gather(NULL, send[1], recv[1], 64, NULL), CAKE_ERR_ARGUMENT, "the communicator is required");
  EXPECT(rt_comm_send_recv(g[2], send[2], 0, recv[2], 1, 64, NULL), CAKE_ERR_ARGUMENT,
         "rt_comm_send_recv: rank 2's communicator is an in-process group");
  /* buffers */
  send[1] = 0;
  EXPECT(rt_comm_local_all_gather(g, 3, send, recv, 64, streams), CAKE_ERR_ARGUMENT, "rank 1's send buffer is 0");
  send[1] = 0x2000, recv[2] = 0;
  EXPECT(rt_comm_local_all_gather(g, 3, send, recv, 64, streams), CAKE_ERR_ARGUMENT, "rank 2's receive buffer is 0");
  recv[2] = UINT64_MAX - 100;
  EXPECT(rt_comm_local_all_gather(g, 3, send, recv, 64, streams), CAKE_ERR_ARGUMENT,
         "rank 2's receive buffer 0xffffffffffffff9b + 3 * 64 bytes overflows");
  EXPECT(rt_comm_local_all_gather(g, 3, send, recv, SIZE_MAX / 2, streams), CAKE_ERR_ARGUMENT,
         "bytes from each of 3 ranks overflow");
  recv[2] = 0x30000;
  /* zero bytes: nothing to do, nothing needed of the device */
  assert_int_equal(rt_comm_local_all_gather(g, 3, send, recv, 0, streams), CAKE_OK);
  /* else the driver (absent here; on a device, a group without events) */
  EXPECT(rt_comm_local_all_gather(g, 3, send, recv, 64, streams), CAKE_ERR_CUDA, "the group has no events");
  for (int r = 0; r < 3; r++) cake_comm_destroy(g[r]), cake_comm_destroy(h[r]);
}

static void test_local_send_recv(void **state) {
  enum { N = 4 };
  cake_comm *g[N];
  assert_int_equal(rt_comm_init_local_nodevice(N, g), CAKE_OK);
  uint64_t send[N] = {0x1000, 0x2000, 0x3000, 0x4000}, recv[N] = {0x10000, 0x20000, 0x30000, 0x40000};
  void *streams[N] = {NULL};
  /* a ring, a chain with ends, self-sends, nothing at all: consistent */
  int ring_to[N] = {1, 2, 3, 0}, ring_from[N] = {3, 0, 1, 2};
  int chain_to[N] = {1, 2, 3, -1}, chain_from[N] = {-1, 0, 1, 2};
  int self[N] = {0, 1, 2, 3}, none[N] = {-1, -1, -1, -1};
  const int *ok[][2] = {{ring_to, ring_from}, {chain_to, chain_from}, {self, self}, {none, none}};
  for (int k = 0; k < 4; k++) assert_int_equal(rt_comm_local_send_recv(g, N, send, ok[k][0], recv, ok[k][1], 0, streams), CAKE_OK);
  /* nobody sends: nothing to do even with bytes */
  assert_int_equal(rt_comm_local_send_recv(g, N, send, none, recv, none, 64, streams), CAKE_OK);
  /* a rank that does not send needs no send buffer, one that does not receive no receive buffer */
  uint64_t send0[N] = {0x1000, 0x2000, 0x3000, 0}, recv0[N] = {0, 0x20000, 0x30000, 0x40000};
  EXPECT(rt_comm_local_send_recv(g, N, send0, chain_to, recv0, chain_from, 64, streams), CAKE_ERR_CUDA,
         "rt_comm_local_send_recv: the group has no events");
  EXPECT(rt_comm_local_send_recv(g, N, send0, ring_to, recv0, ring_from, 64, streams), CAKE_ERR_ARGUMENT,
         "rank 0's receive buffer is 0");
  recv0[0] = 0x10000;
  EXPECT(rt_comm_local_send_recv(g, N, send0, ring_to, recv0, ring_from, 64, streams), CAKE_ERR_ARGUMENT,
         "rank 3's send buffer is 0");
  /* the arrays */
  EXPECT(rt_comm_local_send_recv(g, N, NULL, ring_to, recv, ring_from, 64, streams), CAKE_ERR_ARGUMENT,
         "rt_comm_local_send_recv: send is required (one per rank)");
  EXPECT(rt_comm_local_send_recv(g, N, send, NULL, recv, ring_from, 64, streams), CAKE_ERR_ARGUMENT, "to is required");
  EXPECT(rt_comm_local_send_recv(g, N, send, ring_to, NULL, ring_from, 64, streams), CAKE_ERR_ARGUMENT, "recv is required");
  EXPECT(rt_comm_local_send_recv(g, N, send, ring_to, recv, NULL, 64, streams), CAKE_ERR_ARGUMENT, "from is required");
  EXPECT(rt_comm_local_send_recv(g, N, send, ring_to, recv, ring_from, 64, NULL), CAKE_ERR_ARGUMENT, "streams is required");
  EXPECT(rt_comm_local_send_recv(g, 5, send, ring_to, recv, ring_from, 64, streams), CAKE_ERR_ARGUMENT,
         "5 members given, but the group has 4 ranks");
  /* peers out of range */
  int to[N], from[N];
  memcpy(to, ring_to, sizeof to), memcpy(from, ring_from, sizeof from);
  to[2] = 4;
  EXPECT(rt_comm_local_send_recv(g, N, send, to, recv, from, 64, streams), CAKE_ERR_ARGUMENT,
         "rank 2 sends to 4, outside [-1, 4)");
  to[2] = -2;
  EXPECT(rt_comm_local_send_recv(g, N, send, to, recv, from, 64, streams), CAKE_ERR_ARGUMENT,
         "rank 2 sends to -2, outside [-1, 4)");
  to[2] = 3, from[1] = 7;
  EXPECT(rt_comm_local_send_recv(g, N, send, to, recv, from, 64, streams), CAKE_ERR_ARGUMENT,
         "rank 1 receives from 7, outside [-1, 4)");
  /* inconsistent pairings, checked even for 0 bytes, the bad rank named */
  memcpy(to, ring_to, sizeof to), memcpy(from, ring_from, sizeof from);
  to[1] = 3; /* 1 -> 3, but 3 receives from 2 */
  EXPECT(rt_comm_local_send_recv(g, N, send, to, recv, from, 0, streams), CAKE_ERR_ARGUMENT,
         "rank 1 sends to rank 3, but rank 3 receives from 2");
  memcpy(to, chain_to, sizeof to), memcpy(from, chain_from, sizeof from);
  from[0] = 3; /* 0 <- 3, but 3 sends to nobody */
  EXPECT(rt_comm_local_send_recv(g, N, send, to, recv, from, 64, streams), CAKE_ERR_ARGUMENT,
         "rank 0 receives from rank 3, but rank 3 sends to -1");
  memcpy(from, chain_from, sizeof from);
  to[3] = 0; /* 3 -> 0, but 0 receives from nobody */
  EXPECT(rt_comm_local_send_recv(g, N, send, to, recv, from, 64, streams), CAKE_ERR_ARGUMENT,
         "rank 3 sends to rank 0, but rank 0 receives from -1");
  for (int r = 0; r < N; r++) cake_comm_destroy(g[r]);
}

/* Every host allocation of a group made to fail in turn: CAKE_ERR_MEMORY,
 * nothing written, nothing leaked (the sanitizer build checks leaks). */
static void test_out_of_memory(void **state) {
  for (long budget = 0;; budget++) {
    cake_comm *g[5] = {NULL};
    malloc_budget = budget;
    cake_status s = rt_comm_init_local_nodevice(5, g);
    malloc_budget = -1;
    if (s == CAKE_OK) {
      assert_true(budget >= 2);
      for (int r = 0; r < 5; r++) cake_comm_destroy(g[r]);
      break;
    }
    assert_int_equal(s, CAKE_ERR_MEMORY);
    assert_non_null(strstr(cake_last_error(), "out of host memory"));
    for (int r = 0; r < 5; r++) assert_null(g[r]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_names),   cmocka_unit_test(test_public_arguments),
      cmocka_unit_test(test_no_device),      cmocka_unit_test(test_unique_id),
      cmocka_unit_test(test_local_group),    cmocka_unit_test(test_local_all_gather),
      cmocka_unit_test(test_local_send_recv), cmocka_unit_test(test_out_of_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
