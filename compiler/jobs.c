/* jobs.c - the worker pool of jobs.h: `jobs` worker processes forked once
 * per call, tasks through pipes.
 *
 * The parent writes a task's index (4 bytes) to an idle worker's task pipe;
 * the worker runs it and writes an 8-byte length, then the task's bytes, to
 * its result pipe, and waits for the next index. The parent polls the result
 * pipes, reads as data arrives (so a worker never blocks on a full pipe),
 * and gives a worker its next task once its result is whole; when no task
 * is left it closes the worker's task pipe and the worker ends with _exit
 * (no atexit handlers, no stdio flushes of the parent's buffers). At end of
 * file on a result pipe it reaps that worker by its id: a task still in
 * flight then died (a crash, or an internal error: cake_die ends the worker
 * with status 3), and a new worker takes the tasks that are left. A worker
 * lives as long as the call, so the memory its tasks free is reused rather
 * than faulted in again for each task. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jobs.h"

int jobs_default(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

typedef struct Worker {
  pid_t pid;  /* 0: none */
  int cmd;    /* write end of its task pipe (-1 once closed) */
  int res;    /* read end of its result pipe */
  int task;   /* the task in flight, or -1 */
  Buf data;   /* what it has sent of that task's result */
} Worker;

static int write_all(int fd, const void *p, size_t n) {
  const char *s = p;
  while (n) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

/* 0, or -1 at end of file or on an error. */
static int read_all(int fd, void *p, size_t n) {
  char *s = p;
  while (n) {
    ssize_t r = read(fd, s, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    s += r;
    n -= (size_t)r;
  }
  return 0;
}

/* A worker: task indices in, results out, until its task pipe ends. */
static void serve(int cmd, int res, JobTask task, void *ctx) {
  /* an internal error in a task ends this worker (the parent reports the
   * task as stopped without a result); it must never unwind into the
   * parent's handler, which this process inherited */
  CakeDieHandler die;
  cake_die_push(&die);
  if (setjmp(die.jump)) _exit(3);
  signal(SIGPIPE, SIG_DFL); /* the parent ignores it while it runs the pool */
  int32_t i;
  while (read_all(cmd, &i, sizeof i) == 0) {
    Buf out;
    buf_init(&out);
    task(ctx, i, &out);
    uint64_t len = out.len;
    if (write_all(res, &len, sizeof len) || write_all(res, out.data, out.len)) _exit(1);
    buf_free(&out);
  }
  cake_die_pop(&die);
  _exit(0);
}

/* Start worker w; 0, or -1 when no process could be made. */
static int start(Worker *w, JobTask task, void *ctx, const Worker *all, int nall) {
  int c[2], r[2];
  if (pipe2(c, O_CLOEXEC) != 0) return -1;
  if (pipe2(r, O_CLOEXEC) != 0) {
    close(c[0]);
    close(c[1]);
    return -1;
  }
  pid_t pid = fork();
  if (pid < 0) {
    close(c[0]);
    close(c[1]);
    close(r[0]);
    close(r[1]);
    return -1;
  }
  if (pid == 0) {
    close(c[1]);
    close(r[0]);
    for (int j = 0; j < nall; j++)
      if (all[j].pid > 0) {
        if (all[j].cmd >= 0) close(all[j].cmd);
        close(all[j].res);
      }
    serve(c[0], r[1], task, ctx);
  }
  close(c[0]);
  close(r[1]);
  w->pid = pid;
  w->cmd = c[1];
  w->res = r[0];
  w->task = -1;
  buf_init(&w->data);
  return 0;
}

/* Give worker w its next task, or close its task pipe when none is left. */
static void dispatch(Worker *w, int *next, int n) {
  if (*next < n) {
    int32_t i = *next;
    if (write_all(w->cmd, &i, sizeof i) == 0) {
      w->task = i;
      (*next)++;
      return;
    }
  }
  close(w->cmd);
  w->cmd = -1;
}

/* Keep the result of w's task once it has all arrived. */
static void take(Worker *w, Buf *out) {
  uint64_t len = 0;
  if (w->task < 0 || w->data.len < sizeof len) return;
  memcpy(&len, w->data.data, sizeof len);
  if (w->data.len - sizeof len < len) return;
  buf_put(&out[w->task], w->data.data + sizeof len, (size_t)len);
  w->task = -1;
  w->data.len = 0;
}

/* Worker w has closed its result pipe: reap it; a task in flight died. */
static void finish(Worker *w, int *died) {
  close(w->res);
  if (w->cmd >= 0) close(w->cmd);
  int st = 0;
  while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR) {
  }
#ifdef CAKE_SANITIZE_BUILD
  /* In a sanitizer build a report aborts the process that made it: a worker
   * ended by a signal takes this process down too, so that the report is not
   * turned into an ordinary diagnostic (tests expecting an error would pass). */
  if (WIFSIGNALED(st)) {
    fprintf(stderr, "cakec: a worker process was ended by signal %d (see its report above)\n", WTERMSIG(st));
    abort();
  }
#endif
  if (w->task >= 0) died[w->task] = 1;
  buf_free(&w->data);
  w->pid = 0;
  w->cmd = -1;
  w->task = -1;
}

void jobs_run(int jobs, int n, JobTask task, void *ctx, Buf *out, int *died) {
  for (int i = 0; i < n; i++) died[i] = 0;
  if (jobs > n) jobs = n;
  if (jobs > 64) jobs = 64;
  if (jobs <= 1) {
    for (int i = 0; i < n; i++) task(ctx, i, &out[i]);
    return;
  }
  Worker *ws = cake_xcalloc((size_t)jobs, sizeof *ws);
  struct pollfd *pfd = cake_xcalloc((size_t)jobs, sizeof *pfd);
  /* a worker that dies between tasks must not take this process with it */
  struct sigaction ign, old;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, &old);
  /* an internal error here (out of memory) ends the workers, puts SIGPIPE
   * back and frees the pool before it goes on to the caller's handler */
  CakeDieHandler guard;
  cake_die_push(&guard);
  if (setjmp(guard.jump)) {
    for (int j = 0; j < jobs; j++)
      if (ws[j].pid > 0) {
        if (ws[j].cmd >= 0) close(ws[j].cmd);
        close(ws[j].res);
        kill(ws[j].pid, SIGKILL);
        while (waitpid(ws[j].pid, NULL, 0) < 0 && errno == EINTR) {
        }
        buf_free(&ws[j].data);
      }
    sigaction(SIGPIPE, &old, NULL);
    free(ws);
    free(pfd);
    cake_die_again(&guard);
  }
  int next = 0, alive = 0, nofork = 0;
  char chunk[65536];
  for (;;) {
    /* a worker for every slot while tasks are left */
    for (int j = 0; j < jobs && next < n && !nofork; j++) {
      if (ws[j].pid > 0) continue;
      if (start(&ws[j], task, ctx, ws, jobs) != 0) {
        nofork = 1; /* what is left runs here, below */
        break;
      }
      alive++;
      dispatch(&ws[j], &next, n);
    }
    if (!alive) break;
    int np = 0, idx[64];
    for (int j = 0; j < jobs; j++)
      if (ws[j].pid > 0) {
        pfd[np].fd = ws[j].res;
        pfd[np].events = POLLIN;
        pfd[np].revents = 0;
        idx[np++] = j;
      }
    if (poll(pfd, (nfds_t)np, -1) < 0) {
      if (errno == EINTR) continue;
      break; /* not expected with valid descriptors; drained below */
    }
    for (int q = 0; q < np; q++) {
      if (!pfd[q].revents) continue;
      Worker *w = &ws[idx[q]];
      ssize_t r = read(w->res, chunk, sizeof chunk);
      if (r > 0) {
        buf_put(&w->data, chunk, (size_t)r);
        take(w, out);
        if (w->task < 0 && w->cmd >= 0) dispatch(w, &next, n);
      } else if (r == 0 || errno != EINTR) {
        finish(w, died);
        alive--;
      }
    }
  }
  for (int j = 0; j < jobs; j++) /* only after a poll failure: blocking reads */
    if (ws[j].pid > 0) {
      if (ws[j].cmd >= 0) close(ws[j].cmd);
      ws[j].cmd = -1;
      ssize_t r;
      while ((r = read(ws[j].res, chunk, sizeof chunk)) > 0 || (r < 0 && errno == EINTR))
        if (r > 0) {
          buf_put(&ws[j].data, chunk, (size_t)r);
          take(&ws[j], out);
        }
      finish(&ws[j], died);
    }
  cake_die_pop(&guard);
  sigaction(SIGPIPE, &old, NULL);
  free(ws);
  free(pfd);
  for (int i = next; i < n; i++) task(ctx, i, &out[i]);
}
