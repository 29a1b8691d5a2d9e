/* npy.c - NumPy .npy files (see npy.h for the contract).
 *
 * The format (numpy/lib/format.py): "\x93NUMPY", a major and a minor
 * version byte, the header length (2 bytes little-endian in version 1.0, 4
 * in 2.0 and 3.0), then the header: a Python dict literal padded with
 * spaces and ended by '\n', then the elements in the header's order. */
#include "npy.h"

#include <stdarg.h>
#include <string.h>

static const char NPY_MAGIC[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static int npy_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int npy_fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (errlen) vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

/* ---- the header dictionary ---- */

typedef struct Scan {
  const char *p, *end;
} Scan;

static void skip_ws(Scan *s) {
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')) s->p++;
}

static int accept(Scan *s, char c) {
  skip_ws(s);
  if (s->p < s->end && *s->p == c) {
    s->p++;
    return 1;
  }
  return 0;
}

static int accept_word(Scan *s, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(s->end - s->p) >= n && !memcmp(s->p, w, n)) {
    s->p += n;
    return 1;
  }
  return 0;
}

/* A Python string literal of printable ASCII without escapes, 'x' or "x"
 * (so that what is quoted in a message is plain text). */
static int string_lit(Scan *s, char *out, size_t cap) {
  skip_ws(s);
  if (s->p >= s->end || (*s->p != '\'' && *s->p != '"')) return -1;
  char q = *s->p++;
  size_t n = 0;
  while (s->p < s->end && *s->p != q) {
    if (*s->p == '\\' || *s->p < 0x20 || *s->p > 0x7e || n + 1 >= cap) return -1;
    out[n++] = *s->p++;
  }
  if (s->p >= s->end) return -1;
  s->p++;
  out[n] = 0;
  return 0;
}

/* A tuple of non-negative integers: (), (3,), (2, 3), (2, 3,). */
static int shape_tuple(Scan *s, NpyHeader *h, char *err, size_t errlen) {
  if (!accept(s, '(')) return npy_fail(err, errlen, "'shape' is not a tuple");
  h->rank = 0;
  int commas = 0;
  for (;;) {
    if (accept(s, ')')) break;
    skip_ws(s);
    if (s->p >= s->end || *s->p < '0' || *s->p > '9') return npy_fail(err, errlen, "'shape' is not a tuple of non-negative integers");
    int64_t v = 0;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *s->p - '0', &v))
        return npy_fail(err, errlen, "an extent in 'shape' does not fit in 63 bits");
      s->p++;
    }
    if (s->p < s->end && *s->p == 'L') s->p++; /* Python 2 long */
    if (h->rank == NPY_MAX_RANK) return npy_fail(err, errlen, "'shape' has more than %d axes", NPY_MAX_RANK);
    h->shape[h->rank++] = v;
    if (accept(s, ',')) {
      commas++;
      continue;
    }
    if (accept(s, ')')) break;
    return npy_fail(err, errlen, "'shape' is not a tuple of non-negative integers");
  }
  if (h->rank == 1 && commas == 0) return npy_fail(err, errlen, "'shape' is not a tuple: write (n,) for one axis");
  return 0;
}

static int parse_descr(const char *d, NpyHeader *h, char *err, size_t errlen) {
  size_t n = strlen(d);
  if (n != 3 || (d[2] != '1' && d[2] != '2' && d[2] != '4' && d[2] != '8'))
    return npy_fail(err, errlen, "unsupported element type '%s'", d);
  h->kind = d[1];
  h->size = d[2] - '0';
  int ok = (h->kind == 'f' && h->size >= 2) || h->kind == 'i' || h->kind == 'u' || (h->kind == 'b' && h->size == 1);
  if (!ok) return npy_fail(err, errlen, "unsupported element type '%s' (supported: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1)", d);
  if (d[0] == '|' ? h->size != 1 : d[0] != '<' && d[0] != '>')
    return npy_fail(err, errlen, "element type '%s' has no byte order ('<' or '>'; '|' for one byte)", d);
  h->big_endian = d[0] == '>';
  snprintf(h->descr, sizeof h->descr, "%s", d);
  return 0;
}

int npy_parse_header(const char *text, size_t len, NpyHeader *h, char *err, size_t errlen) {
  memset(h, 0, sizeof *h);
  Scan s = {text, text + len};
  int seen_descr = 0, seen_order = 0, seen_shape = 0, fortran = 0;
  if (!accept(&s, '{')) return npy_fail(err, errlen, "the header is not a dictionary");
  for (;;) {
    if (accept(&s, '}')) break;
    char key[32];
    if (string_lit(&s, key, sizeof key)) return npy_fail(err, errlen, "the header's keys must be 'descr', 'fortran_order' and 'shape'");
    if (!accept(&s, ':')) return npy_fail(err, errlen, "expected ':' after '%s' in the header", key);
    int *seen = !strcmp(key, "descr") ? &seen_descr : !strcmp(key, "fortran_order") ? &seen_order
              : !strcmp(key, "shape") ? &seen_shape : NULL;
    if (!seen) return npy_fail(err, errlen, "unexpected key '%s' in the header", key);
    if (*seen) return npy_fail(err, errlen, "key '%s' appears twice in the header", key);
    *seen = 1;
    if (seen == &seen_descr) {
      char d[16];
      skip_ws(&s);
      if (s.p < s.end && *s.p == '[') return npy_fail(err, errlen, "structured arrays are not supported");
      if (string_lit(&s, d, sizeof d)) return npy_fail(err, errlen, "'descr' is not a simple type string like '<f4'");
      if (parse_descr(d, h, err, errlen)) return -1;
    } else if (seen == &seen_order) {
      skip_ws(&s);
      if (accept_word(&s, "True")) fortran = 1;
      else if (!accept_word(&s, "False")) return npy_fail(err, errlen, "'fortran_order' is neither True nor False");
    } else if (shape_tuple(&s, h, err, errlen)) {
      return -1;
    }
    if (accept(&s, ',')) continue;
    if (accept(&s, '}')) break;
    return npy_fail(err, errlen, "expected ',' or '}' in the header");
  }
  skip_ws(&s);
  if (s.p != s.end) return npy_fail(err, errlen, "unexpected text after the header's dictionary");
  if (!seen_descr || !seen_order || !seen_shape)
    return npy_fail(err, errlen, "the header lacks '%s'", !seen_descr ? "descr" : !seen_order ? "fortran_order" : "shape");
  h->count = 1;
  int long_axes = 0;
  for (int i = 0; i < h->rank; i++) {
    if (__builtin_mul_overflow(h->count, h->shape[i], &h->count))
      return npy_fail(err, errlen, "the shape's element count does not fit in 63 bits");
    long_axes += h->shape[i] > 1;
  }
  int64_t bytes;
  if (__builtin_mul_overflow(h->count, (int64_t)h->size, &bytes))
    return npy_fail(err, errlen, "the array's byte size does not fit in 63 bits");
  if (fortran && long_axes > 1 && h->count > 0)
    return npy_fail(err, errlen, "the array is in Fortran order; save a C-ordered one (np.ascontiguousarray)");
  return 0;
}

int npy_read_header(FILE *f, NpyHeader *h, char *err, size_t errlen) {
  unsigned char pre[12];
  if (fread(pre, 1, 8, f) != 8 || memcmp(pre, NPY_MAGIC, 6))
    return npy_fail(err, errlen, "not a .npy file (no \\x93NUMPY magic)");
  int major = pre[6], minor = pre[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return npy_fail(err, errlen, "unsupported .npy format version %d.%d (1.0, 2.0 and 3.0 are read)", major, minor);
  size_t nlen = major == 1 ? 2 : 4;
  if (fread(pre + 8, 1, nlen, f) != nlen) return npy_fail(err, errlen, "truncated header");
  uint32_t hlen = pre[8] | (uint32_t)pre[9] << 8;
  if (nlen == 4) hlen |= (uint32_t)pre[10] << 16 | (uint32_t)pre[11] << 24;
  if (hlen > NPY_MAX_HEADER)
    return npy_fail(err, errlen, "the header has %u bytes; at most %d are read", hlen, NPY_MAX_HEADER);
  char text[NPY_MAX_HEADER];
  if (fread(text, 1, hlen, f) != hlen) return npy_fail(err, errlen, "truncated header");
  if (memchr(text, 0, hlen)) return npy_fail(err, errlen, "the header contains a NUL byte");
  return npy_parse_header(text, hlen, h, err, errlen);
}

/* ---- elements ---- */

static double half_to_double(uint16_t b) {
  _Float16 x;
  memcpy(&x, &b, 2);
  return (double)x;
}

static double element(const NpyHeader *h, const unsigned char *src) {
  unsigned char b[8];
  for (int i = 0; i < h->size; i++) b[i] = h->big_endian ? src[h->size - 1 - i] : src[i];
  switch (h->kind) {
    case 'b': return b[0] != 0;
    case 'f':
      if (h->size == 2) {
        uint16_t u;
        memcpy(&u, b, 2);
        return half_to_double(u);
      }
      if (h->size == 4) {
        float x;
        memcpy(&x, b, 4);
        return x;
      }
      double d;
      memcpy(&d, b, 8);
      return d;
    case 'i':
      switch (h->size) {
        case 1: return (int8_t)b[0];
        case 2: { int16_t x; memcpy(&x, b, 2); return x; }
        case 4: { int32_t x; memcpy(&x, b, 4); return x; }
        default: { int64_t x; memcpy(&x, b, 8); return (double)x; }
      }
    default:
      switch (h->size) {
        case 1: return b[0];
        case 2: { uint16_t x; memcpy(&x, b, 2); return x; }
        case 4: { uint32_t x; memcpy(&x, b, 4); return x; }
        default: { uint64_t x; memcpy(&x, b, 8); return (double)x; }
      }
  }
}

int npy_read_data(FILE *f, const NpyHeader *h, double *out, char *err, size_t errlen) {
  unsigned char buf[1 << 16];
  int64_t per = (int64_t)sizeof buf / h->size, done = 0;
  while (done < h->count) {
    int64_t n = h->count - done < per ? h->count - done : per;
    size_t got = fread(buf, (size_t)h->size, (size_t)n, f);
    for (size_t i = 0; i < got; i++) out[done + (int64_t)i] = element(h, buf + i * (size_t)h->size);
    done += (int64_t)got;
    if ((int64_t)got < n)
      return npy_fail(err, errlen, "truncated data: the shape holds %lld elements, the file %lld",
                      (long long)h->count, (long long)done);
  }
  if (fgetc(f) != EOF)
    return npy_fail(err, errlen, "the file has more data than its shape holds (%lld elements)", (long long)h->count);
  return 0;
}

/* ---- writing ---- */

static int put_element(const char *descr, double v, unsigned char *dst) {
  if (!strcmp(descr, "<f8")) {
    memcpy(dst, &v, 8);
  } else if (!strcmp(descr, "<f4")) {
    float x = (float)v;
    memcpy(dst, &x, 4);
  } else if (!strcmp(descr, "<f2")) {
    _Float16 x = (_Float16)v;
    memcpy(dst, &x, 2);
  } else {
    if (!(v >= INT32_MIN && v <= INT32_MAX) || v != (double)(int32_t)v) return -1;
    int32_t x = (int32_t)v;
    memcpy(dst, &x, 4);
  }
  return 0;
}

int npy_write(FILE *f, const char *descr, int rank, const int64_t *shape, const double *data, char *err,
              size_t errlen) {
  int size = !strcmp(descr, "<f8") ? 8 : !strcmp(descr, "<f4") || !strcmp(descr, "<i4") ? 4 : !strcmp(descr, "<f2") ? 2 : 0;
  if (!size) return npy_fail(err, errlen, "cannot write element type '%s'", descr);
  if (rank < 0 || rank > NPY_MAX_RANK) return npy_fail(err, errlen, "cannot write %d axes", rank);
  char dict[NPY_MAX_HEADER];
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  int64_t count = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0 || __builtin_mul_overflow(count, shape[i], &count))
      return npy_fail(err, errlen, "bad shape for writing");
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%lld", i ? ", " : "", (long long)shape[i]);
  }
  n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", rank == 1 ? "," : "");
  /* magic, version 1.0, length, the dict, spaces, '\n': a multiple of 64 bytes
   * (NPY_MAX_RANK axes of 19 digits keep the header far below 2^16 bytes) */
  int total = (10 + n + 1 + 63) / 64 * 64;
  int hlen = total - 10;
  unsigned char head[10];
  memcpy(head, NPY_MAGIC, 6);
  head[6] = 1;
  head[7] = 0;
  head[8] = (unsigned char)(hlen & 0xff);
  head[9] = (unsigned char)(hlen >> 8);
  memset(dict + n, ' ', (size_t)(hlen - n - 1));
  dict[hlen - 1] = '\n';
  if (fwrite(head, 1, 10, f) != 10 || fwrite(dict, 1, (size_t)hlen, f) != (size_t)hlen)
    return npy_fail(err, errlen, "write failed");
  unsigned char buf[1 << 16];
  int64_t per = (int64_t)sizeof buf / size;
  for (int64_t done = 0; done < count;) {
    int64_t m = count - done < per ? count - done : per;
    for (int64_t i = 0; i < m; i++)
      if (put_element(descr, data[done + i], buf + i * size))
        return npy_fail(err, errlen, "element %lld (%g) is not an integer in the range of '%s'",
                        (long long)(done + i), data[done + i], descr);
    if (fwrite(buf, (size_t)size, (size_t)m, f) != (size_t)m) return npy_fail(err, errlen, "write failed");
    done += m;
  }
  return 0;
}
