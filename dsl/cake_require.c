/* cake_require.c - the evaluator of `require` expressions (see cake_require.h).
 * A recursive-descent parser that evaluates as it goes; the right operand of
 * a short-circuited `&&` / `||` is parsed (checked) but not evaluated. */
#include "cake_require.h"

#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_NAMES = 16 };

typedef struct RVal {
  int is_bool, is_float;
  int64_t v;   /* integers and booleans */
  double f;    /* is_float */
} RVal;

typedef struct RParser {
  const char *s;
  size_t pos, len;
  cake_require_lookup lookup;
  void *ctx;
  int depth;
  int bad;                 /* malformed: msg holds why */
  const char *fault;       /* an operation failed during evaluation: why */
  char *msg;
  size_t msglen;
  /* the names met, in order, once each (for the message) */
  const char *names[MAX_NAMES];
  size_t name_len[MAX_NAMES];
  cake_require_value values[MAX_NAMES];
  int nnames, more_names;
} RParser;

static void bad(RParser *P, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(RParser *P, const char *fmt, ...) {
  if (P->bad) return;
  P->bad = 1;
  if (!P->msg || !P->msglen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(P->msg, P->msglen, fmt, ap);
  va_end(ap);
}

static void skip_space(RParser *P) {
  while (P->pos < P->len && (P->s[P->pos] == ' ' || P->s[P->pos] == '\t')) P->pos++;
}

/* Is the operator `op` next? Consumes it when it is (and is not the start of a longer one). */
static int accept(RParser *P, const char *op) {
  skip_space(P);
  size_t n = strlen(op);
  if (P->len - P->pos < n || memcmp(P->s + P->pos, op, n) != 0) return 0;
  char next = P->pos + n < P->len ? P->s[P->pos + n] : 0;
  /* '<' is not '<=', '!' is not '!=', '=' alone is no operator */
  if (n == 1 && (op[0] == '<' || op[0] == '>' || op[0] == '!') && next == '=') return 0;
  if (n == 1 && (op[0] == '&' || op[0] == '|')) return 0;
  P->pos += n;
  return 1;
}

static const char *describe_here(RParser *P) {
  skip_space(P);
  return P->pos < P->len ? P->s + P->pos : "the end";
}

static RVal expr_or(RParser *P, int ev);

static int want_int(RParser *P, RVal x, const char *op) {
  if (!x.is_bool) return 1;
  bad(P, "'%s' takes numbers, not a comparison's result", op);
  return 0;
}

static double as_double(RVal x) { return x.is_float ? x.f : (double)x.v; }

static int want_bool(RParser *P, RVal x, const char *op) {
  if (x.is_bool) return 1;
  bad(P, "'%s' takes comparisons (booleans), not numbers", op);
  return 0;
}

static void note_name(RParser *P, const char *name, size_t n, cake_require_value v) {
  for (int i = 0; i < P->nnames; i++)
    if (P->name_len[i] == n && !memcmp(P->names[i], name, n)) return;
  if (P->nnames == MAX_NAMES) {
    P->more_names = 1;
    return;
  }
  P->names[P->nnames] = name;
  P->name_len[P->nnames] = n;
  P->values[P->nnames++] = v;
}

static RVal primary(RParser *P, int ev) {
  RVal r = {0};
  skip_space(P);
  if (P->pos >= P->len) {
    bad(P, "an operand is missing at the end");
    return r;
  }
  char c = P->s[P->pos];
  if (c == '(') {
    P->pos++;
    if (++P->depth > CAKE_MAX_REQUIRE_DEPTH) {
      bad(P, "nested more than %d levels deep", CAKE_MAX_REQUIRE_DEPTH);
      return r;
    }
    r = expr_or(P, ev);
    P->depth--;
    if (!P->bad && !accept(P, ")")) bad(P, "expected ')' at '%.20s'", describe_here(P));
    return r;
  }
  if (c >= '0' && c <= '9') {
    size_t start = P->pos, end = P->pos;
    while (end < P->len && P->s[end] >= '0' && P->s[end] <= '9') end++;
    if (end < P->len && P->s[end] == '.') { /* a decimal number: digits '.' digits [e [+-] digits] */
      size_t e = end + 1, frac = e;
      while (e < P->len && P->s[e] >= '0' && P->s[e] <= '9') e++;
      if (e == frac) {
        bad(P, "a decimal point needs digits after it");
        return r;
      }
      if (e < P->len && (P->s[e] | 32) == 'e') {
        size_t x = e + 1;
        if (x < P->len && (P->s[x] == '+' || P->s[x] == '-')) x++;
        size_t dig = x;
        while (x < P->len && P->s[x] >= '0' && P->s[x] <= '9') x++;
        if (x == dig) {
          bad(P, "an exponent needs digits");
          return r;
        }
        e = x;
      }
      if (e < P->len && (P->s[e] == '_' || ((P->s[e] | 32) >= 'a' && (P->s[e] | 32) <= 'z'))) {
        bad(P, "a name cannot start with a digit");
        return r;
      }
      char num[64];
      if (e - start >= sizeof num) {
        bad(P, "a decimal number longer than %zu characters", sizeof num - 1);
        return r;
      }
      memcpy(num, P->s + start, e - start);
      num[e - start] = 0;
      /* strtod reads the locale's decimal point: the host process's locale must not change the value */
      const char *dp = localeconv()->decimal_point;
      if (dp && dp[0] && dp[0] != '.' && !dp[1])
        for (char *q = num; *q; q++)
          if (*q == '.') *q = dp[0];
      char *stop = NULL;
      r.is_float = 1;
      r.f = strtod(num, &stop);
      if (!stop || *stop) {
        bad(P, "the decimal number %.*s cannot be read in this locale", (int)(e - start), P->s + start);
        return r;
      }
      if (!isfinite(r.f)) {
        bad(P, "the decimal number %s does not fit in a double", num);
        return r;
      }
      P->pos = e;
      return r;
    }
    int64_t v = 0;
    while (P->pos < P->len && P->s[P->pos] >= '0' && P->s[P->pos] <= '9') {
      int d = P->s[P->pos++] - '0';
      if (v > (INT64_MAX - d) / 10) {
        bad(P, "an integer does not fit in 64 bits");
        return r;
      }
      v = v * 10 + d;
    }
    if (P->pos < P->len && (P->s[P->pos] == '_' || ((P->s[P->pos] | 32) >= 'a' && (P->s[P->pos] | 32) <= 'z'))) {
      bad(P, "a name cannot start with a digit");
      return r;
    }
    r.v = v;
    return r;
  }
  if (c == '_' || ((c | 32) >= 'a' && (c | 32) <= 'z')) {
    size_t start = P->pos;
    while (P->pos < P->len) {
      char d = P->s[P->pos];
      if (d == '_' || ((d | 32) >= 'a' && (d | 32) <= 'z') || (d >= '0' && d <= '9')) P->pos++;
      else break;
    }
    size_t n = P->pos - start;
    if (n > CAKE_MAX_NAME) {
      bad(P, "a name is longer than %d characters", CAKE_MAX_NAME);
      return r;
    }
    cake_require_value v = {0};
    if (!P->lookup || !P->lookup(P->ctx, P->s + start, n, &v)) {
      bad(P, "unknown name '%.*s'", (int)n, P->s + start);
      return r;
    }
    note_name(P, P->s + start, n, v);
    r.is_float = v.is_float != 0;
    r.v = ev && !v.is_float ? v.i : 0;
    r.f = ev && v.is_float ? v.f : 0;
    return r;
  }
  bad(P, "unexpected '%c'", c);
  return r;
}

static RVal unary(RParser *P, int ev) {
  RVal r = {0};
  int neg = accept(P, "-"), not_ = !neg && accept(P, "!");
  if (!neg && !not_) return primary(P, ev);
  if (++P->depth > CAKE_MAX_REQUIRE_DEPTH) {
    bad(P, "nested more than %d levels deep", CAKE_MAX_REQUIRE_DEPTH);
    return r;
  }
  RVal x = unary(P, ev);
  P->depth--;
  if (P->bad) return r;
  if (neg) {
    if (!want_int(P, x, "-")) return r;
    if (x.is_float) {
      r.is_float = 1;
      r.f = -x.f;
      return r;
    }
    if (ev && !P->fault && x.v == INT64_MIN) P->fault = "an integer overflow in '-'";
    r.v = ev && !P->fault ? -x.v : 0;
    return r;
  }
  if (!want_bool(P, x, "!")) return r;
  r.is_bool = 1;
  r.v = !x.v;
  return r;
}

static int64_t arith(RParser *P, int ev, char op, int64_t a, int64_t b) {
  int64_t out = 0;
  if (!ev || P->fault) return 0;
  switch (op) {
    case '+': if (__builtin_add_overflow(a, b, &out)) P->fault = "an integer overflow in '+'"; break;
    case '-': if (__builtin_sub_overflow(a, b, &out)) P->fault = "an integer overflow in '-'"; break;
    case '*': if (__builtin_mul_overflow(a, b, &out)) P->fault = "an integer overflow in '*'"; break;
    default:
      if (b == 0) P->fault = op == '/' ? "a division by zero" : "a remainder by zero";
      else if (a == INT64_MIN && b == -1) P->fault = op == '/' ? "an integer overflow in '/'" : "an integer overflow in '%'";
      else out = op == '/' ? a / b : a % b;
  }
  return P->fault ? 0 : out;
}

static RVal binary_level(RParser *P, int ev, int level);

/* level 0: * / %   level 1: + - */
static RVal binary_level(RParser *P, int ev, int level) {
  static const char *const ops[2][3] = {{"*", "/", "%"}, {"+", "-", NULL}};
  RVal a = level == 0 ? unary(P, ev) : binary_level(P, ev, 0);
  for (;;) {
    if (P->bad) return a;
    const char *op = NULL;
    for (int i = 0; i < 3 && ops[level][i] && !op; i++)
      if (accept(P, ops[level][i])) op = ops[level][i];
    if (!op) return a;
    RVal b = level == 0 ? unary(P, ev) : binary_level(P, ev, 0);
    if (P->bad || !want_int(P, a, op) || !want_int(P, b, op)) return a;
    if (a.is_float || b.is_float) {
      if (op[0] == '%') {
        bad(P, "'%%' takes integers, not decimal numbers or float parameters");
        return a;
      }
      double x = as_double(a), y = as_double(b), out = 0;
      if (ev && !P->fault) {
        if (op[0] == '/' && y == 0) P->fault = "a division by zero";
        else out = op[0] == '+' ? x + y : op[0] == '-' ? x - y : op[0] == '*' ? x * y : x / y;
      }
      a.is_float = 1;
      a.f = P->fault ? 0 : out;
      continue;
    }
    a.v = arith(P, ev, op[0], a.v, b.v);
  }
}

static RVal compare(RParser *P, int ev) {
  static const char *const ops[] = {"<=", ">=", "==", "!=", "<", ">"};
  RVal a = binary_level(P, ev, 1);
  if (P->bad) return a;
  const char *op = NULL;
  for (int i = 0; i < 6 && !op; i++)
    if (accept(P, ops[i])) op = ops[i];
  if (!op) return a;
  RVal b = binary_level(P, ev, 1);
  if (P->bad || !want_int(P, a, op) || !want_int(P, b, op)) return a;
  RVal r = {.is_bool = 1};
  int kind = op[0] == '<' ? (op[1] ? 1 : 0) : op[0] == '>' ? (op[1] ? 3 : 2) : op[0] == '=' ? 4 : 5;
  if (a.is_float || b.is_float) { /* in double; NaN compares false (and != true) */
    double x = as_double(a), y = as_double(b);
    r.v = kind == 0 ? x < y : kind == 1 ? x <= y : kind == 2 ? x > y : kind == 3 ? x >= y : kind == 4 ? x == y : x != y;
  } else {
    r.v = kind == 0 ? a.v < b.v : kind == 1 ? a.v <= b.v : kind == 2 ? a.v > b.v : kind == 3 ? a.v >= b.v
          : kind == 4 ? a.v == b.v : a.v != b.v;
  }
  for (int i = 0; i < 6; i++) {
    size_t at = P->pos;
    if (accept(P, ops[i])) {
      P->pos = at;
      bad(P, "comparisons do not chain; combine them with && or ||");
      return r;
    }
  }
  return r;
}

static RVal expr_and(RParser *P, int ev) {
  RVal a = compare(P, ev);
  while (!P->bad && accept(P, "&&")) {
    if (!want_bool(P, a, "&&")) return a;
    int short_circuit = ev && !a.v;
    RVal b = compare(P, ev && !short_circuit);
    if (P->bad || !want_bool(P, b, "&&")) return a;
    a.v = a.v && b.v;
  }
  return a;
}

static RVal expr_or(RParser *P, int ev) {
  RVal a = expr_and(P, ev);
  while (!P->bad && accept(P, "||")) {
    if (!want_bool(P, a, "||")) return a;
    int short_circuit = ev && a.v;
    RVal b = expr_and(P, ev && !short_circuit);
    if (P->bad || !want_bool(P, b, "||")) return a;
    a.v = a.v || b.v;
  }
  return a;
}

int cake_require_eval(const char *expr, cake_require_lookup lookup, void *ctx, int evaluate, char *msg,
                      size_t msglen) {
  return cake_require_eval_fault(expr, lookup, ctx, evaluate, msg, msglen, NULL);
}

int cake_require_eval_fault(const char *expr, cake_require_lookup lookup, void *ctx, int evaluate, char *msg,
                            size_t msglen, int *faulted) {
  RParser P = {0};
  if (faulted) *faulted = 0;
  P.msg = msg;
  P.msglen = msglen;
  if (msg && msglen) msg[0] = 0;
  if (!expr) {
    bad(&P, "no expression");
    return CAKE_REQUIRE_BAD;
  }
  P.len = strnlen(expr, (size_t)CAKE_MAX_REQUIRE_TEXT + 1);
  if (P.len > CAKE_MAX_REQUIRE_TEXT) {
    bad(&P, "longer than %d characters", CAKE_MAX_REQUIRE_TEXT);
    return CAKE_REQUIRE_BAD;
  }
  for (size_t i = 0; i < P.len; i++)
    if ((unsigned char)expr[i] < 0x20 || (unsigned char)expr[i] >= 0x7f) {
      bad(&P, "a character that is not printable ASCII at offset %zu", i);
      return CAKE_REQUIRE_BAD;
    }
  P.s = expr;
  P.lookup = lookup;
  P.ctx = ctx;
  RVal r = expr_or(&P, evaluate);
  if (!P.bad) {
    skip_space(&P);
    if (P.pos < P.len) bad(&P, "unexpected '%.20s' after the expression", P.s + P.pos);
    else if (!r.is_bool) bad(&P, "the expression is a number; a requirement is a comparison (e.g. H %% 2 == 0)");
  }
  if (P.bad) return CAKE_REQUIRE_BAD;
  if (!evaluate) return CAKE_REQUIRE_TRUE;
  if (r.v && !P.fault) return CAKE_REQUIRE_TRUE;
  if (faulted) *faulted = P.fault != NULL;
  if (msg && msglen) {
    size_t at = 0;
    for (int i = 0; i < P.nnames && at < msglen; i++) {
      const cake_require_value *v = &P.values[i];
      if (v->is_float)
        at += (size_t)snprintf(msg + at, msglen - at, "%s%.*s = %.9g", i ? ", " : "", (int)P.name_len[i], P.names[i],
                               v->f);
      else
        at += (size_t)snprintf(msg + at, msglen - at, "%s%.*s = %lld", i ? ", " : "", (int)P.name_len[i], P.names[i],
                               (long long)v->i);
    }
    if (P.more_names && at < msglen) at += (size_t)snprintf(msg + at, msglen - at, ", ...");
    if (P.fault && at < msglen) snprintf(msg + at, msglen - at, "%s(%s)", at ? " " : "", P.fault);
  }
  return CAKE_REQUIRE_FALSE;
}

const char *cake_require_subject(int uses_dims, int uses_params) {
  return !uses_params ? "dims" : uses_dims ? "the dims and parameters" : "the parameters";
}

int cake_require_uses(const char *expr, const char *name) {
  size_t n = strlen(name);
  if (!expr || !n) return 0;
  for (const char *c = expr; (c = strstr(c, name)) != NULL; c++) {
    char before = c == expr ? ' ' : c[-1], after = c[n];
    int word_before = before == '_' || ((before | 32) >= 'a' && (before | 32) <= 'z') || (before >= '0' && before <= '9');
    int word_after = after == '_' || ((after | 32) >= 'a' && (after | 32) <= 'z') || (after >= '0' && after <= '9');
    if (!word_before && !word_after) return 1;
  }
  return 0;
}
