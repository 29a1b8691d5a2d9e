/* test_jobs.c - the worker pool (compiler/jobs.c): results by task index
 * whatever the order they finish in, workers that serve many tasks each, a
 * task that ends its worker (an exit, an internal error) costing only its
 * own result, results larger than a pipe's buffer, one job running in this
 * process, and the parent's state and SIGPIPE handling left as they were,
 * also when this process fails (out of memory) while the pool runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jobs.h"

typedef struct Ctx {
  int exit_every, die_every; /* task i ends its worker when i % every == every - 1 (0: never) */
  size_t big;                /* bytes of filler after each result */
} Ctx;

static int counter; /* changed by the tasks: the parent's copy must not be */

/* The test's realloc (linked with --wrap=realloc): in process `fail_pid`,
 * a request of `fail_from` bytes or more fails. */
void *__real_realloc(void *p, size_t n);
static pid_t fail_pid;
static size_t fail_from;
void *__wrap_realloc(void *p, size_t n) {
  if (fail_from && n >= fail_from && getpid() == fail_pid) return NULL;
  return __real_realloc(p, n);
}

/* "task <i> pid <pid>" then `big` bytes of (i & 0xff). */
static void task(void *p, int i, Buf *out) {
  const Ctx *c = p;
  counter++;
  if (c->exit_every && i % c->exit_every == c->exit_every - 1) _exit(9);
  if (c->die_every && i % c->die_every == c->die_every - 1) cake_die("task %d stops here", i);
  buf_printf(out, "task %d pid %d", i, (int)getpid());
  for (size_t k = 0; k < c->big; k++) {
    char b = (char)(i & 0xff);
    buf_put(out, &b, 1);
  }
}

/* Checks out[i] for a task that finished; returns its pid. */
static int check_result(const Buf *out, int i, size_t big) {
  char head[64];
  int n = snprintf(head, sizeof head, "task %d pid ", i);
  assert_true(out->len > (size_t)n);
  assert_memory_equal(out->data, head, (size_t)n);
  int pid = atoi(out->data + n);
  assert_true(out->len >= big);
  for (size_t k = 0; k < big; k++) assert_int_equal((unsigned char)out->data[out->len - big + k], i & 0xff);
  return pid;
}

static void run(int jobs, int n, Ctx *c, Buf **out, int **died) {
  *out = calloc((size_t)n + 1, sizeof(Buf));
  *died = calloc((size_t)n + 1, sizeof(int));
  for (int i = 0; i < n; i++) buf_init(&(*out)[i]);
  jobs_run(jobs, n, task, c, *out, *died);
}

static void release(int n, Buf *out, int *died) {
  for (int i = 0; i < n; i++) buf_free(&out[i]);
  free(out);
  free(died);
}

static void test_results_in_order(void **state) {
  (void)state;
  Ctx c = {0, 0, 0};
  Buf *out;
  int *died;
  counter = 0;
  run(3, 40, &c, &out, &died);
  int pids[40], distinct = 0;
  for (int i = 0; i < 40; i++) {
    assert_int_equal(died[i], 0);
    pids[i] = check_result(&out[i], i, 0);
    assert_int_not_equal(pids[i], (int)getpid());
    int seen = 0;
    for (int j = 0; j < i; j++) seen |= pids[j] == pids[i];
    distinct += !seen;
  }
  assert_true(distinct <= 3); /* three workers served the forty tasks */
  assert_int_equal(counter, 0);
  release(40, out, died);
}

static void test_workers_that_end(void **state) {
  (void)state;
  Ctx c = {5, 7, 0}; /* tasks 4, 9, 14, ... exit; 6, 13, 20, ... stop in cake_die */
  Buf *out;
  int *died;
  run(2, 30, &c, &out, &died);
  for (int i = 0; i < 30; i++) {
    int dies = i % 5 == 4 || i % 7 == 6;
    assert_int_equal(died[i], dies);
    if (dies) assert_int_equal(out[i].len, 0);
    else check_result(&out[i], i, 0);
  }
  release(30, out, died);
}

static void test_large_results(void **state) {
  (void)state;
  Ctx c = {0, 0, 300000}; /* several times a pipe's buffer */
  Buf *out;
  int *died;
  run(4, 9, &c, &out, &died);
  for (int i = 0; i < 9; i++) {
    assert_int_equal(died[i], 0);
    check_result(&out[i], i, c.big);
  }
  release(9, out, died);
}

static void test_one_job_here(void **state) {
  (void)state;
  Ctx c = {0, 0, 0};
  Buf *out;
  int *died;
  counter = 0;
  run(1, 5, &c, &out, &died);
  for (int i = 0; i < 5; i++) assert_int_equal(check_result(&out[i], i, 0), (int)getpid());
  assert_int_equal(counter, 5);
  release(5, out, died);
  run(4, 0, &c, &out, &died); /* no tasks */
  release(0, out, died);
}

static void test_sigpipe_restored(void **state) {
  (void)state;
  struct sigaction before, after;
  sigaction(SIGPIPE, NULL, &before);
  Ctx c = {3, 0, 0};
  Buf *out;
  int *died;
  run(2, 8, &c, &out, &died);
  release(8, out, died);
  sigaction(SIGPIPE, NULL, &after);
  assert_ptr_equal((void *)before.sa_handler, (void *)after.sa_handler);
}

/* The parent runs out of memory taking a large result: its internal error
 * reaches the caller's handler unchanged, and the workers are gone, reaped,
 * and SIGPIPE is as it was. */
static Buf *lost_out;
static int *lost_died;
static void test_parent_fails(void **state) {
  (void)state;
  struct sigaction before, after;
  sigaction(SIGPIPE, NULL, &before);
  Ctx c = {0, 0, 300000};
  CakeDieHandler h;
  volatile int caught = 0;
  cake_die_push(&h);
  if (setjmp(h.jump)) {
    caught = 1;
  } else {
    fail_pid = getpid();
    fail_from = 200000;
    run(2, 6, &c, &lost_out, &lost_died);
    cake_die_pop(&h);
  }
  fail_from = 0;
  assert_true(caught);
  assert_non_null(strstr(h.message, "out of memory growing a buffer"));
  sigaction(SIGPIPE, NULL, &after);
  assert_ptr_equal((void *)before.sa_handler, (void *)after.sa_handler);
  errno = 0;
  assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* no child left, running or not reaped */
  assert_int_equal(errno, ECHILD);
  release(6, lost_out, lost_died);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_results_in_order), cmocka_unit_test(test_workers_that_end),
      cmocka_unit_test(test_large_results),    cmocka_unit_test(test_one_job_here),
      cmocka_unit_test(test_sigpipe_restored), cmocka_unit_test(test_parent_fails),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
