/* cache.c - the on-disk store of cache.h.
 *
 * Entry layout: the line "cake-cache 1 <sha256 of the bytes> <length>\n",
 * then the bytes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "cache.h"

#define CACHE_MAGIC "cake-cache 1"

void sha256_hex(const void *data, size_t n, char out[65]) {
  unsigned char md[32];
  unsigned int len = 0;
  EVP_Digest(data, n, md, &len, EVP_sha256(), NULL);
  for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", md[i]);
  out[64] = 0;
}

static void entry_path(char *out, size_t n, const char *dir, const char *key, int with_file) {
  if (with_file) snprintf(out, n, "%s/%.2s/%s", dir, key, key);
  else snprintf(out, n, "%s/%.2s", dir, key);
}

int cache_get(const char *dir, const char *key, Buf *out) {
  char path[4096];
  entry_path(path, sizeof path, dir, key, 1);
  Buf b;
  buf_init(&b);
  if (buf_read_file(&b, path)) {
    buf_free(&b);
    return CACHE_ABSENT;
  }
  char sha[65], want[65];
  unsigned long long len = 0;
  int hdr = 0;
  const char *nl = b.data ? memchr(b.data, '\n', b.len) : NULL;
  int ok = nl && sscanf(b.data, CACHE_MAGIC " %64[0-9a-f] %llu%n", want, &len, &hdr) == 2 && b.data + hdr == nl &&
           strlen(want) == 64;
  if (ok) {
    size_t start = (size_t)(nl + 1 - b.data);
    ok = b.len - start == len;
    if (ok) {
      sha256_hex(b.data + start, (size_t)len, sha);
      ok = !strcmp(sha, want);
    }
    if (ok) buf_put(out, b.data + start, (size_t)len);
  }
  buf_free(&b);
  if (!ok) {
    unlink(path); /* rewritten by the caller after it compiles */
    return CACHE_CORRUPT;
  }
  return CACHE_HIT;
}

static int make_dir(const char *path, Buf *why) {
  if (make_dirs(path) == 0) return 0;
  buf_printf(why, "cannot create '%s': %s", path, strerror(errno));
  return -1;
}

int cache_put(const char *dir, const char *key, const void *data, size_t n, Buf *why) {
  char sub[4096], path[4200], tmp[4300];
  entry_path(sub, sizeof sub, dir, key, 0); /* with the cache directory and its parents */
  if (make_dir(sub, why)) return -1;
  entry_path(path, sizeof path, dir, key, 1);
  static unsigned serial;
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), serial++);
  char sha[65];
  sha256_hex(data, n, sha);
  FILE *f = fopen(tmp, "wb");
  int ok = f && fprintf(f, CACHE_MAGIC " %s %llu\n", sha, (unsigned long long)n) > 0 && fwrite(data, 1, n, f) == n;
  int err = errno;
  if (f && fclose(f) != 0 && ok) {
    ok = 0;
    err = errno;
  }
  if (ok && rename(tmp, path) != 0) {
    ok = 0;
    err = errno;
  }
  if (!ok) {
    unlink(tmp);
    buf_printf(why, "cannot write '%s': %s", path, strerror(err));
    return -1;
  }
  return 0;
}
