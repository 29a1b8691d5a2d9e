/* jobs.c - the worker pool of jobs.h: fork per task, results through pipes.
 *
 * A child writes an 8-byte length, then the task's bytes, then exits with
 * _exit (no atexit handlers, no stdio flushes of the parent's buffers). The
 * parent polls the pipes of the running children, reads as data arrives (so
 * a child never blocks on a full pipe), and on end of file reaps that child
 * by its id. A result counts only when the length matches and the child
 * exited with status 0; a child whose task hits an internal error (cake_die)
 * exits with status 3. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

typedef struct Slot {
  pid_t pid;
  int fd, task;
  Buf data;
} Slot;

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

/* Start task i in a child; 0, or -1 when no child could be made. */
static int start(Slot *s, int i, JobTask task, void *ctx, const Slot *slots, int nslots) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    close(fds[0]);
    for (int j = 0; j < nslots; j++)
      if (slots[j].pid > 0) close(slots[j].fd);
    /* an internal error in the task ends this child (the parent reports
     * the task as stopped without a result); it must never unwind into the
     * parent's handler, which this child inherited */
    CakeDieHandler die;
    cake_die_push(&die);
    if (setjmp(die.jump)) _exit(3);
    Buf out;
    buf_init(&out);
    task(ctx, i, &out);
    cake_die_pop(&die);
    uint64_t len = out.len;
    int rc = write_all(fds[1], &len, sizeof len) || write_all(fds[1], out.data, out.len);
    _exit(rc ? 1 : 0);
  }
  close(fds[1]);
  s->pid = pid;
  s->fd = fds[0];
  s->task = i;
  buf_init(&s->data);
  return 0;
}

/* The child of slot s has closed its pipe: reap it and keep its result. */
static void finish(Slot *s, Buf *out, int *died) {
  close(s->fd);
  int st = 0;
  while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR) {
  }
  uint64_t len = 0;
  if (s->data.len >= sizeof len) memcpy(&len, s->data.data, sizeof len);
#ifdef CAKE_SANITIZE_BUILD
  /* In a sanitizer build a report aborts the process that made it: a worker
   * ended by a signal takes this process down too, so that the report is not
   * turned into an ordinary diagnostic (tests expecting an error would pass). */
  if (WIFSIGNALED(st)) {
    fprintf(stderr, "cakec: a worker process was ended by signal %d (see its report above)\n", WTERMSIG(st));
    abort();
  }
#endif
  int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && s->data.len >= sizeof len && s->data.len - sizeof len == len;
  if (ok) buf_put(&out[s->task], s->data.data + sizeof len, (size_t)len);
  else died[s->task] = 1;
  buf_free(&s->data);
  s->pid = 0;
}

void jobs_run(int jobs, int n, JobTask task, void *ctx, Buf *out, int *died) {
  for (int i = 0; i < n; i++) died[i] = 0;
  if (jobs > n) jobs = n;
  if (jobs > 64) jobs = 64;
  if (jobs <= 1) {
    for (int i = 0; i < n; i++) task(ctx, i, &out[i]);
    return;
  }
  Slot *slots = calloc((size_t)jobs, sizeof *slots);
  struct pollfd *pfd = calloc((size_t)jobs, sizeof *pfd);
  int next = 0, running = 0;
  char chunk[65536];
  while (next < n || running > 0) {
    for (int j = 0; j < jobs && next < n; j++) {
      if (slots[j].pid > 0) continue;
      if (start(&slots[j], next, task, ctx, slots, jobs) != 0) {
        task(ctx, next, &out[next]); /* no child: run it here */
      } else {
        running++;
      }
      next++;
    }
    if (!running) continue;
    int np = 0;
    int idx[64];
    for (int j = 0; j < jobs; j++)
      if (slots[j].pid > 0) {
        pfd[np].fd = slots[j].fd;
        pfd[np].events = POLLIN;
        pfd[np].revents = 0;
        idx[np++] = j;
      }
    if (poll(pfd, (nfds_t)np, -1) < 0) {
      if (errno == EINTR) continue;
      break; /* not expected with valid descriptors; the loop below drains */
    }
    for (int q = 0; q < np; q++) {
      if (!pfd[q].revents) continue;
      Slot *s = &slots[idx[q]];
      ssize_t r = read(s->fd, chunk, sizeof chunk);
      if (r > 0) buf_put(&s->data, chunk, (size_t)r);
      else if (r == 0 || errno != EINTR) {
        finish(s, out, died);
        running--;
      }
    }
  }
  for (int j = 0; j < jobs; j++) /* only after a poll failure: blocking reads */
    if (slots[j].pid > 0) {
      ssize_t r;
      while ((r = read(slots[j].fd, chunk, sizeof chunk)) > 0 || (r < 0 && errno == EINTR))
        if (r > 0) buf_put(&slots[j].data, chunk, (size_t)r);
      finish(&slots[j], out, died);
    }
  for (int i = next; i < n; i++) task(ctx, i, &out[i]);
  free(slots);
  free(pfd);
}
