/* json.c - a small strict JSON reader (RFC 8259) for manifest.json. Nodes
 * live in blocks owned by a JDoc and are freed together. Stricter than the
 * RFC where the manifest needs it: an object may not repeat a key, numbers
 * must be finite, strings may not hold \u0000 or unpaired surrogates. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

typedef struct P {
  JDoc *doc;
  const char *s, *end, *start;
  char *err;
  size_t errlen;
  int depth;
} P;

static void *jalloc(P *p, size_t n) {
  JDoc *d = p->doc;
  if (d->nblocks == d->cap) {
    int cap = d->cap ? d->cap * 2 : 64;
    void **b = rt_alloc(d->al, sizeof(void *) * (size_t)cap);
    if (!b) return NULL;
    if (d->nblocks) memcpy(b, d->blocks, sizeof(void *) * (size_t)d->nblocks);
    rt_free(d->al, d->blocks);
    d->blocks = b;
    d->cap = cap;
  }
  void *m = rt_alloc(d->al, n ? n : 1);
  if (m) d->blocks[d->nblocks++] = m;
  return m;
}

void json_free(JDoc *d) {
  for (int i = 0; i < d->nblocks; i++) rt_free(d->al, d->blocks[i]);
  rt_free(d->al, d->blocks);
  d->blocks = NULL;
  d->nblocks = d->cap = 0;
}

static void *perr(P *p, const char *msg) {
  if (p->err[0]) return NULL;
  int line = 1, col = 1;
  for (const char *q = p->start; q < p->s && q < p->end; q++) {
    if (*q == '\n') line++, col = 1;
    else col++;
  }
  snprintf(p->err, p->errlen, "line %d, column %d: %s", line, col, msg);
  return NULL;
}

static void ws(P *p) {
  while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')) p->s++;
}

static JNode *value(P *p);

static int hex4(P *p, unsigned *v) {
  *v = 0;
  for (int i = 0; i < 4; i++) {
    char h = p->s < p->end ? *p->s++ : 0;
    *v <<= 4;
    if (h >= '0' && h <= '9') *v |= (unsigned)(h - '0');
    else if (h >= 'a' && h <= 'f') *v |= (unsigned)(h - 'a' + 10);
    else if (h >= 'A' && h <= 'F') *v |= (unsigned)(h - 'A' + 10);
    else return -1;
  }
  return 0;
}

static int digit(P *p, const char *q) { return q < p->end && *q >= '0' && *q <= '9'; }

/* A number as RFC 8259 writes it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int number(P *p, double *out) {
  const char *q = p->s;
  if (q < p->end && *q == '-') q++;
  if (!digit(p, q)) return -1;
  if (*q++ != '0')
    while (digit(p, q)) q++;
  if (q < p->end && *q == '.') {
    if (!digit(p, ++q)) return -1;
    while (digit(p, q)) q++;
  }
  if (q < p->end && (*q == 'e' || *q == 'E')) {
    q++;
    if (q < p->end && (*q == '+' || *q == '-')) q++;
    if (!digit(p, q)) return -1;
    while (digit(p, q)) q++;
  }
  char buf[64];
  if (q - p->s >= (ptrdiff_t)sizeof buf) return -1;
  memcpy(buf, p->s, (size_t)(q - p->s));
  buf[q - p->s] = 0;
  *out = strtod(buf, NULL);
  if (isinf(*out)) return -1;
  p->s = q;
  return 0;
}

static char *string(P *p) {
  if (p->s >= p->end || *p->s != '"') return perr(p, "expected a string");
  p->s++;
  const char *q = p->s;
  size_t n = 0;
  while (q < p->end && *q != '"') {
    if (*q == '\\') q++;
    q++;
    n++;
  }
  if (q >= p->end) return perr(p, "unterminated string");
  char *out = jalloc(p, n * 4 + 1), *o = out;
  if (!out) return perr(p, "out of memory");
  while (*p->s != '"') {
    unsigned char c = (unsigned char)*p->s++;
    if (c < 0x20) return perr(p, "control character in a string");
    if (c != '\\') {
      *o++ = (char)c;
      continue;
    }
    char e = *p->s++;
    switch (e) {
      case '"': *o++ = '"'; break;
      case '\\': *o++ = '\\'; break;
      case '/': *o++ = '/'; break;
      case 'b': *o++ = '\b'; break;
      case 'f': *o++ = '\f'; break;
      case 'n': *o++ = '\n'; break;
      case 'r': *o++ = '\r'; break;
      case 't': *o++ = '\t'; break;
      case 'u': {
        unsigned v, lo;
        if (hex4(p, &v)) return perr(p, "bad \\u escape");
        if (v >= 0xdc00 && v <= 0xdfff) return perr(p, "unpaired surrogate in a \\u escape");
        if (v >= 0xd800 && v <= 0xdbff) {
          if (p->end - p->s < 2 || p->s[0] != '\\' || p->s[1] != 'u')
            return perr(p, "unpaired surrogate in a \\u escape");
          p->s += 2;
          if (hex4(p, &lo) || lo < 0xdc00 || lo > 0xdfff) return perr(p, "unpaired surrogate in a \\u escape");
          v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
        }
        if (v == 0) return perr(p, "\\u0000 in a string"); /* strings are C strings */
        if (v < 0x80) *o++ = (char)v;
        else if (v < 0x800) *o++ = (char)(0xc0 | (v >> 6)), *o++ = (char)(0x80 | (v & 0x3f));
        else if (v < 0x10000)
          *o++ = (char)(0xe0 | (v >> 12)), *o++ = (char)(0x80 | ((v >> 6) & 0x3f)), *o++ = (char)(0x80 | (v & 0x3f));
        else
          *o++ = (char)(0xf0 | (v >> 18)), *o++ = (char)(0x80 | ((v >> 12) & 0x3f)),
          *o++ = (char)(0x80 | ((v >> 6) & 0x3f)), *o++ = (char)(0x80 | (v & 0x3f));
        break;
      }
      default: return perr(p, "bad escape in a string");
    }
  }
  p->s++;
  *o = 0;
  return out;
}

static int push(P *p, JNode *parent, JNode *child, int *cap) {
  if (parent->n == *cap) {
    *cap = *cap ? *cap * 2 : 8;
    JNode **items = jalloc(p, sizeof(JNode *) * (size_t)*cap);
    if (!items) return -1;
    if (parent->n) memcpy(items, parent->items, sizeof(JNode *) * (size_t)parent->n);
    parent->items = items;
  }
  parent->items[parent->n++] = child;
  return 0;
}

static JNode *value(P *p) {
  ws(p);
  if (p->s >= p->end) return perr(p, "unexpected end of input");
  if (++p->depth > 64) return perr(p, "nesting too deep");
  JNode *n = jalloc(p, sizeof(JNode));
  if (!n) return perr(p, "out of memory");
  char c = *p->s;
  if (c == '{' || c == '[') {
    int obj = c == '{', cap = 0;
    n->kind = obj ? J_OBJ : J_ARR;
    p->s++;
    ws(p);
    if (p->s < p->end && *p->s == (obj ? '}' : ']')) {
      p->s++;
      p->depth--;
      return n;
    }
    for (;;) {
      char *key = NULL;
      if (obj) {
        ws(p);
        const char *at = p->s;
        if (!(key = string(p))) return NULL;
        for (int i = 0; i < n->n; i++) /* the first would win here and the last elsewhere: refuse both */
          if (!strcmp(n->items[i]->key, key)) {
            char msg[160];
            p->s = at; /* the message points at the key */
            snprintf(msg, sizeof msg, "duplicate key \"%.100s\"", key);
            return perr(p, msg);
          }
        ws(p);
        if (p->s >= p->end || *p->s != ':') return perr(p, "expected ':'");
        p->s++;
      }
      JNode *v = value(p);
      if (!v) return NULL;
      v->key = key;
      if (push(p, n, v, &cap)) return perr(p, "out of memory");
      ws(p);
      if (p->s < p->end && *p->s == ',') {
        p->s++;
        continue;
      }
      if (p->s < p->end && *p->s == (obj ? '}' : ']')) {
        p->s++;
        break;
      }
      return perr(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
  } else if (c == '"') {
    n->kind = J_STR;
    if (!(n->str = string(p))) return NULL;
  } else if (c == 't' && p->end - p->s >= 4 && !strncmp(p->s, "true", 4)) {
    n->kind = J_BOOL, n->boolean = 1, p->s += 4;
  } else if (c == 'f' && p->end - p->s >= 5 && !strncmp(p->s, "false", 5)) {
    n->kind = J_BOOL, p->s += 5;
  } else if (c == 'n' && p->end - p->s >= 4 && !strncmp(p->s, "null", 4)) {
    n->kind = J_NULL, p->s += 4;
  } else if (c == '-' || (c >= '0' && c <= '9')) {
    n->kind = J_NUM;
    if (number(p, &n->num)) return perr(p, "bad number (the JSON form, at most 63 characters, finite)");
  } else {
    return perr(p, "unexpected character");
  }
  p->depth--;
  return n;
}

JNode *json_parse(JDoc *doc, const char *text, size_t len, char *err, size_t errlen) {
  P p = {doc, text, text + len, text, err, errlen, 0};
  err[0] = 0;
  JNode *v = value(&p);
  if (!v) return NULL;
  ws(&p);
  if (p.s != p.end) return perr(&p, "trailing characters after the document");
  return v;
}

const JNode *json_get(const JNode *obj, const char *key) {
  if (!obj || obj->kind != J_OBJ) return NULL;
  for (int i = 0; i < obj->n; i++)
    if (!strcmp(obj->items[i]->key, key)) return obj->items[i];
  return NULL;
}
