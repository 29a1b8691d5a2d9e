/* cache.h - a content-addressed store of compiled results on disk.
 *
 * Contract: an entry is a byte string filed under a key (64 hex digits, the
 * sha256 of everything that determines the bytes; the caller computes it).
 * Entries live in DIR/<first two digits>/<key>; each carries a header with
 * the sha256 and length of its bytes, checked on every read, so a truncated,
 * partial or corrupted entry reads as corrupt, never as a result. Writes go
 * to a temporary file in the same directory, then rename() over the entry:
 * readers see the old entry, the new one, or none, even with several
 * compilers sharing the directory. Failures never stop a compilation: the
 * caller gets -1 and a reason, warns, and compiles without the cache.
 */
#ifndef CAKE_CACHE_H
#define CAKE_CACHE_H

#include <stddef.h>

#include "base.h"

/* The sha256 of n bytes as 64 lowercase hex digits. */
void sha256_hex(const void *data, size_t n, char out[65]);

enum { CACHE_ABSENT = 0, CACHE_HIT = 1, CACHE_CORRUPT = -1 };

/* Appends the entry's bytes to `out` on a hit. A corrupt entry is removed. */
int cache_get(const char *dir, const char *key, Buf *out);

/* 0, or -1 with the reason appended to `why` (nothing is left behind). */
int cache_put(const char *dir, const char *key, const void *data, size_t n, Buf *why);

#endif
