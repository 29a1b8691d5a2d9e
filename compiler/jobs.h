/* jobs.h - a bounded pool of worker processes for independent tasks.
 *
 * Contract: jobs_run() runs task(ctx, i, out) for i = 0..n-1, at most `jobs`
 * at a time, and hands back each task's bytes in out[i], indexed by task, so
 * the caller assembles results in a fixed order whatever the completion
 * order. With jobs > 1 each task runs in a child process (fork) that writes
 * its bytes to a pipe and exits; the parent's state is never changed by a
 * task. With jobs <= 1, or when fork fails, tasks run in this process, one
 * after the other. A child that dies without a complete result (a crash, a
 * signal) leaves out[i] empty and died[i] set; in a sanitizer build
 * (CAKE_SANITIZE) a child ended by a signal aborts the parent as well, with a
 * line on stderr. The pool waits only for the children it started (waitpid on
 * their ids); nothing else is printed.
 */
#ifndef CAKE_JOBS_H
#define CAKE_JOBS_H

#include "base.h"

/* A task writes its whole result into `out` (empty on entry). */
typedef void (*JobTask)(void *ctx, int i, Buf *out);

/* out: n initialised Bufs; died: n ints (set to 0 or 1). */
void jobs_run(int jobs, int n, JobTask task, void *ctx, Buf *out, int *died);

/* The number of online CPUs (at least 1): the default for `jobs`. */
int jobs_default(void);

#endif
