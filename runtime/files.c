/* files.c - reading a package's files.
 *
 * The package directory is opened once; every file (manifest.json included)
 * is then opened relative to it, one path component at a time, never
 * following a symbolic link: each directory component with
 * O_DIRECTORY|O_NOFOLLOW, the last one with O_NOFOLLOW|O_NONBLOCK (so a FIFO
 * cannot block the loader). Only a regular file is read, at most `limit`
 * bytes, until end of file (the size fstat reports is a first guess, not
 * trusted). A path must be relative and normalized: no empty, "." or ".."
 * component. Messages name the offending component and the cause. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt.h"

cake_status rt_open_dir(const char *dir, int *fd) {
  *fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (*fd < 0) return rt_fail(CAKE_ERR_IO, "cannot open package directory '%s': %s", dir, strerror(errno));
  return CAKE_OK;
}

static const char *kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
  return "a special file";
}

/* Why `name` (in `dirfd`) could not be opened: a symbolic link is named as
 * such, whatever errno the open gave. */
static cake_status open_failed(int dirfd, const char *name, int err, int last) {
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
    return rt_fail(CAKE_ERR_PACKAGE, "'%s' is a symbolic link (package files must lie inside the package directory)",
                   name);
  if (!last && err == ENOTDIR) return rt_fail(CAKE_ERR_PACKAGE, "'%s' is not a directory", name);
  return rt_fail(err == ENOENT || err == EACCES || err == EPERM ? CAKE_ERR_IO : CAKE_ERR_PACKAGE, "%s", strerror(err));
}

cake_status rt_check_path(const char *path) {
  if (!path[0]) return rt_fail(CAKE_ERR_PACKAGE, "the path is empty");
  if (path[0] == '/') return rt_fail(CAKE_ERR_PACKAGE, "the path is absolute");
  for (const char *p = path;;) {
    size_t n = strcspn(p, "/");
    if (n == 0) return rt_fail(CAKE_ERR_PACKAGE, "the path has an empty component");
    if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
      return rt_fail(CAKE_ERR_PACKAGE, "the path has a '%.*s' component", (int)n, p);
    if (n > NAME_MAX) return rt_fail(CAKE_ERR_PACKAGE, "a component of the path is longer than %d bytes", NAME_MAX);
    if (!p[n]) return CAKE_OK;
    p += n + 1;
  }
}

/* The regular file `fd` (opened as `name`), read to its end. */
static cake_status read_fd(const cake_allocator *al, int fd, const char *name, size_t limit, uint8_t **data,
                           size_t *len) {
  struct stat st;
  if (fstat(fd, &st) != 0) return rt_fail(CAKE_ERR_IO, "%s", strerror(errno));
  if (!S_ISREG(st.st_mode))
    return rt_fail(CAKE_ERR_PACKAGE, "'%s' is %s, not a regular file", name, kind_of(st.st_mode));
  if (st.st_size < 0 || (uint64_t)st.st_size > limit)
    return rt_fail(CAKE_ERR_PACKAGE, "'%s' has %lld bytes; the limit is %zu", name, (long long)st.st_size, limit);
  size_t cap = (size_t)st.st_size + 1, n = 0; /* one more byte, to see the end of file */
  uint8_t *buf = rt_alloc(al, cap);
  if (!buf) return CAKE_ERR_MEMORY;
  for (;;) {
    if (n == cap) { /* the file grew since fstat */
      if (cap > limit) {
        rt_free(al, buf);
        return rt_fail(CAKE_ERR_PACKAGE, "'%s' has more than %zu bytes, the limit", name, limit);
      }
      size_t ncap = cap > limit / 2 ? limit + 1 : cap * 2;
      uint8_t *nb = rt_alloc(al, ncap);
      if (!nb) {
        rt_free(al, buf);
        return CAKE_ERR_MEMORY;
      }
      memcpy(nb, buf, n);
      rt_free(al, buf);
      buf = nb;
      cap = ncap;
    }
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int err = errno;
      rt_free(al, buf);
      return rt_fail(CAKE_ERR_IO, "%s", strerror(err));
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  *data = buf;
  *len = n;
  return CAKE_OK;
}

cake_status rt_read_file_at(const cake_allocator *al, int dirfd, const char *path, size_t limit, uint8_t **data,
                            size_t *len) {
  cake_status s = rt_check_path(path);
  if (s) return s;
  char name[NAME_MAX + 1];
  int cur = dirfd;
  for (const char *p = path;;) {
    size_t n = strcspn(p, "/");
    memcpy(name, p, n);
    name[n] = 0;
    int last = !p[n];
    int flags = last ? O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC : O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = openat(cur, name, flags);
    if (fd < 0) s = open_failed(cur, name, errno, last);
    if (cur != dirfd) close(cur);
    if (fd < 0) return s;
    if (last) {
      s = read_fd(al, fd, name, limit, data, len);
      close(fd);
      return s;
    }
    cur = fd;
    p += n + 1;
  }
}
