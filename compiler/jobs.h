/* jobs.h - a bounded pool of worker processes for independent tasks.
 *
 * Contract: jobs_run() runs task(ctx, i, out) for i = 0..n-1, at most `jobs`
 * at a time, and hands back each task's bytes in out[i], indexed by task, so
 * the caller assembles results in a fixed order whatever the completion
 * order. With jobs > 1 the tasks run in up to `jobs` child processes
 * (fork), each running one task after another and sending each task's bytes
 * through a pipe; the parent's state is never changed by a task, but a task
 * sees what earlier tasks of its worker left in that process (tasks must
 * not depend on it). SIGPIPE is ignored in this process while the pool
 * runs. With jobs <= 1, or when no child can be made, tasks run in this
 * process, one after the other. A child that dies before its task's result
 * is whole (a crash, a signal, an exit) leaves out[i] empty and died[i]
 * set, and a new child takes the tasks left; in a sanitizer build
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
