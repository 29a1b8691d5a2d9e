/* cache.c - the on-disk store of cache.h.
 *
 * Entry layout: the line "cake-cache 1 <sha256 of the bytes> <length>\n",
 * then the bytes. */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "cache.h"
#include "cake.h"

#define CACHE_MAGIC "cake-cache 1"

/* The GNU build id of the executable or library this code was linked into:
 * a digest of the linked code, so a rebuilt compiler never reuses what an
 * older one put in the cache. */
static char build_id[2 * 64 + 1];

static int find_build_id(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  uintptr_t at = (uintptr_t)data;
  int mine = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && at >= lo && at - lo < ph->p_memsz) mine = 1;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
    while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
      const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
      size_t name = (n->n_namesz + 3u) & ~3u, desc = (n->n_descsz + 3u) & ~3u;
      const unsigned char *d = p + sizeof *n + name;
      if ((size_t)(end - p) < sizeof *n + name + desc) break;
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(p + sizeof *n, "GNU", 4) && n->n_descsz > 0 &&
          n->n_descsz <= 64) {
        for (unsigned k = 0; k < n->n_descsz; k++) sprintf(build_id + 2 * k, "%02x", d[k]);
        return 1;
      }
      p += sizeof *n + name + desc;
    }
  }
  return 1;
}

const char *cake_build_id(void) {
  static int done;
  if (!done) {
    done = 1;
    dl_iterate_phdr(find_build_id, (void *)&build_id);
  }
  return build_id;
}

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
