/* emu.c - parse one PTX entry and run it on the CPU (emu.h says how).
 *
 * The parser turns the entry's statements into a flat array of decoded
 * instructions (operands are register slots, immediates or addresses);
 * labels become instruction indices. What the emulator does not know is
 * refused at parse time with the line, never guessed at run time.
 *
 * Values live in 64-bit slots per thread (16- and 32-bit values
 * zero-extended, f32 as its bits, predicates 0 or 1). Floating point
 * follows IEEE single precision with round to nearest even: add, mul, fma,
 * div, rcp and sqrt as PTX's .rn forms; the .approx functions (ex2, lg2,
 * rsqrt) are the C library's, so their last bits may differ from a GPU's;
 * mma.sync sums its products in double, then adds the accumulator once.
 * The file must be built without floating-point contraction (CMake does). */
#include "emu.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
  OP_ADD, OP_SUB, OP_MUL, OP_MAD, OP_DIV, OP_REM, OP_MIN, OP_MAX, OP_ABS, OP_NEG, OP_AND, OP_OR, OP_XOR, OP_NOT,
  OP_SHL, OP_SHR, OP_BFE, OP_SELP, OP_SETP, OP_MOV, OP_CVT, OP_FMA, OP_RCP, OP_SQRT, OP_RSQRT, OP_EX2, OP_LG2,
  OP_COPYSIGN, OP_LD, OP_ST, OP_CPASYNC, OP_COMMIT, OP_WAIT, OP_BAR, OP_SHFL, OP_LDMATRIX, OP_MMA, OP_BRA, OP_BRX,
  OP_RET
};
enum { T_NONE, T_PRED, T_B8, T_U8, T_S8, T_B16, T_U16, T_S16, T_B32, T_U32, T_S32, T_B64, T_U64, T_S64, T_F16, T_BF16,
       T_F32, T_F64, T_F16X2, T_BF16X2 };
static const char *const type_names[] = {"", "pred", "b8", "u8", "s8", "b16", "u16", "s16", "b32", "u32", "s32",
                                         "b64", "u64", "s64", "f16", "bf16", "f32", "f64", "f16x2", "bf16x2"};
enum { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_LO, CMP_LS, CMP_HI, CMP_HS, CMP_EQU, CMP_NEU, CMP_LTU,
       CMP_LEU, CMP_GTU, CMP_GEU, CMP_NUM, CMP_NAN };
static const char *const cmp_names[] = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",  "lo",  "ls",  "hi",
                                        "hs",  "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
enum { SP_NONE, SP_GLOBAL, SP_SHARED, SP_PARAM };
enum { F_FTZ = 1, F_WIDE = 2, F_HI = 4, F_NANP = 8, F_TRANS = 16, F_RZI = 32 };
enum { K_REG, K_IMM, K_VEC, K_ADDR, K_LABEL };
enum { SHFL_BFLY, SHFL_UP, SHFL_DOWN, SHFL_IDX };
/* special registers: the first slots of every thread */
enum { SR_TID, SR_NTID = 3, SR_CTAID = 6, SR_NCTAID = 9, SR_LANEID = 12, SR_WARPID, SR_SINK, SR_COUNT }; /* SR_SINK: the '_' operand */

typedef struct {
  uint8_t kind, n;
  int32_t reg;   /* K_REG, K_ADDR base (-1: none); K_VEC: first index in the pool */
  int64_t imm;   /* K_IMM value, K_ADDR offset, K_LABEL target */
} Opd;

typedef struct {
  uint8_t op, t, t2, cmp, space, vec, mode, nopd;
  uint16_t flags;
  int32_t guard; /* predicate slot, -1 none */
  uint8_t gneg;
  int line;
  Opd o[5];
} Ins;

typedef struct {
  char name[96];
  size_t size, offset;
} Param;

struct EmuKernel {
  char name[128];
  Ins *ins;
  int nins;
  int nregs;
  int32_t *pool; /* vector operands' slots */
  int npool;
  int64_t *tables; /* brx.idx targets */
  int ntables;
  struct { int32_t slot; uint64_t value; } *consts; /* immediates inside vector operands */
  int nconsts, capconsts;
  Param *params;
  int nparams;
  size_t param_bytes;
  uint8_t *slotbits; /* each slot's register width (a signed load sign-extends to it) */
  char **texts; /* each instruction's text, for messages */
};

/* ---- parsing ---- */

typedef struct {
  char name[16];
  int base, count;
} RegClass;

typedef struct {
  char name[96];
  int index; /* instruction index, or -(1 + table) for a .branchtargets label */
} Label;

typedef struct {
  EmuKernel *k;
  RegClass cls[16];
  int ncls;
  Label *labels;
  int nlabels, caplabels;
  struct { int ins, opd; char name[96]; } *fix; /* label uses to resolve */
  int nfix, capfix;
  int capins, cappool, captables;
  char shared_sym[96];
  int line;
  char *err;
  size_t errn;
} Parser;

static int perr(Parser *P, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int perr(Parser *P, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(P->err, P->errn, "%s: line %d: %s", P->k->name, P->line, msg);
  return -1;
}

static void *grow(void *p, int *cap, int need, size_t elem) {
  if (need <= *cap) return p;
  int c = *cap ? *cap : 64;
  while (c < need) c *= 2;
  void *q = realloc(p, (size_t)c * elem);
  if (!q) {
    fprintf(stderr, "emu: out of memory\n");
    abort();
  }
  *cap = c;
  return q;
}

static int type_of(const char *s) {
  for (int i = 1; i < (int)(sizeof type_names / sizeof *type_names); i++)
    if (!strcmp(s, type_names[i])) return i;
  return -1;
}

static int type_bits(int t) {
  switch (t) {
  case T_PRED: return 1;
  case T_B8: case T_U8: case T_S8: return 8;
  case T_B16: case T_U16: case T_S16: case T_F16: case T_BF16: return 16;
  case T_B64: case T_U64: case T_S64: case T_F64: return 64;
  default: return 32;
  }
}

static int reg_slot(Parser *P, const char *s, int *slot) {
  static const struct { const char *n; int slot; } sregs[] = {
      {"%tid.x", SR_TID},       {"%tid.y", SR_TID + 1},       {"%tid.z", SR_TID + 2},
      {"%ntid.x", SR_NTID},     {"%ntid.y", SR_NTID + 1},     {"%ntid.z", SR_NTID + 2},
      {"%ctaid.x", SR_CTAID},   {"%ctaid.y", SR_CTAID + 1},   {"%ctaid.z", SR_CTAID + 2},
      {"%nctaid.x", SR_NCTAID}, {"%nctaid.y", SR_NCTAID + 1}, {"%nctaid.z", SR_NCTAID + 2},
      {"%laneid", SR_LANEID},   {"%warpid", SR_WARPID}};
  if (!strcmp(s, "_")) {
    *slot = SR_SINK;
    return 0;
  }
  for (size_t i = 0; i < sizeof sregs / sizeof *sregs; i++)
    if (!strcmp(s, sregs[i].n)) {
      *slot = sregs[i].slot;
      return 0;
    }
  size_t n = strlen(s), d = n;
  while (d > 0 && s[d - 1] >= '0' && s[d - 1] <= '9') d--;
  if (d == n || d == 0) return perr(P, "unknown register '%s'", s);
  for (int c = 0; c < P->ncls; c++)
    if (strlen(P->cls[c].name) == d && !strncmp(P->cls[c].name, s, d)) {
      long i = strtol(s + d, NULL, 10);
      if (i < 0 || i >= P->cls[c].count) return perr(P, "register '%s' is not declared", s);
      *slot = P->cls[c].base + (int)i;
      return 0;
    }
  return perr(P, "register '%s' is not declared", s);
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = 0;
  return s;
}

static int parse_imm(Parser *P, const char *s, int64_t *v) {
  char *end;
  if ((s[0] == '0' && (s[1] == 'f' || s[1] == 'F')) && strlen(s) == 10) {
    *v = (int64_t)strtoull(s + 2, &end, 16);
  } else if (s[0] == '0' && (s[1] == 'd' || s[1] == 'D') && strlen(s) == 18) {
    *v = (int64_t)strtoull(s + 2, &end, 16);
  } else if (s[0] == '-') {
    *v = strtoll(s, &end, 0);
  } else {
    *v = (int64_t)strtoull(s, &end, 0);
  }
  if (*end == 'U' || *end == 'u') end++;
  if (*end) return perr(P, "cannot read the operand '%s'", s);
  return 0;
}

static int add_fix(Parser *P, int ins, int opd, const char *name) {
  P->fix = grow(P->fix, &P->capfix, P->nfix + 1, sizeof *P->fix);
  P->fix[P->nfix].ins = ins;
  P->fix[P->nfix].opd = opd;
  snprintf(P->fix[P->nfix].name, sizeof P->fix[P->nfix].name, "%s", name);
  P->nfix++;
  return 0;
}

static int param_index(EmuKernel *k, const char *name) {
  for (int i = 0; i < k->nparams; i++)
    if (!strcmp(k->params[i].name, name)) return i;
  return -1;
}

static int parse_operand(Parser *P, char *s, Opd *o, int ins, int opd) {
  EmuKernel *k = P->k;
  s = trim(s);
  memset(o, 0, sizeof *o);
  o->reg = -1;
  if (*s == '{') {
    char *e = strchr(s, '}');
    if (!e) return perr(P, "unclosed '{'");
    *e = 0;
    o->kind = K_VEC;
    o->reg = k->npool;
    for (char *tok = strtok(s + 1, ","); tok; tok = strtok(NULL, ",")) {
      int slot;
      tok = trim(tok);
      if (*tok != '%' && *tok != '_') { /* an immediate: a slot of its own, set when a block starts */
        int64_t v;
        if (parse_imm(P, tok, &v)) return -1;
        k->consts = grow(k->consts, &k->capconsts, k->nconsts + 1, sizeof *k->consts);
        k->slotbits = realloc(k->slotbits, (size_t)k->nregs + 1);
        k->slotbits[k->nregs] = 64;
        k->consts[k->nconsts].slot = k->nregs++;
        k->consts[k->nconsts++].value = (uint64_t)v;
        slot = k->nregs - 1;
      } else if (reg_slot(P, tok, &slot))
        return -1;
      k->pool = grow(k->pool, &P->cappool, k->npool + 1, sizeof *k->pool);
      k->pool[k->npool++] = slot;
      o->n++;
    }
    return 0;
  }
  if (*s == '[') {
    char *e = strchr(s, ']');
    if (!e) return perr(P, "unclosed '['");
    *e = 0;
    char *a = trim(s + 1);
    o->kind = K_ADDR;
    char *plus = strchr(a, '+');
    if (plus) {
      *plus = 0;
      if (parse_imm(P, trim(plus + 1), &o->imm)) return -1;
    }
    a = trim(a);
    if (*a == '%') {
      if (reg_slot(P, a, &o->reg)) return -1;
    } else if (*a) {
      int pi = param_index(k, a);
      if (pi >= 0) o->imm += (int64_t)k->params[pi].offset;
      else if (!strcmp(a, P->shared_sym)) { /* the dynamic shared memory starts at 0 */
      } else if ((a[0] >= '0' && a[0] <= '9') || a[0] == '-') {
        int64_t v;
        if (parse_imm(P, a, &v)) return -1;
        o->imm += v;
      } else
        return perr(P, "unknown address '%s'", a);
    }
    return 0;
  }
  if (*s == '%') {
    o->kind = K_REG;
    return reg_slot(P, s, &o->reg);
  }
  if (*s == '$' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_') {
    if (P->shared_sym[0] && !strcmp(s, P->shared_sym)) {
      o->kind = K_IMM;
      o->imm = 0;
      return 0;
    }
    o->kind = K_LABEL;
    return add_fix(P, ins, opd, s);
  }
  o->kind = K_IMM;
  return parse_imm(P, s, &o->imm);
}

/* the opcode's parts: base and modifiers */
static int decode_opcode(Parser *P, const char *opc, Ins *in) {
  char buf[160];
  snprintf(buf, sizeof buf, "%s", opc);
  char *parts[16];
  int np = 0;
  for (char *t = strtok(buf, "."); t && np < 16; t = strtok(NULL, ".")) parts[np++] = t;
  if (!np) return perr(P, "empty opcode");
  static const struct { const char *n; int op; } ops[] = {
      {"add", OP_ADD},   {"sub", OP_SUB},         {"mul", OP_MUL},     {"mad", OP_MAD},       {"div", OP_DIV},
      {"rem", OP_REM},   {"min", OP_MIN},         {"max", OP_MAX},     {"abs", OP_ABS},       {"neg", OP_NEG},
      {"and", OP_AND},   {"or", OP_OR},           {"xor", OP_XOR},     {"not", OP_NOT},       {"shl", OP_SHL},
      {"shr", OP_SHR},   {"bfe", OP_BFE},         {"selp", OP_SELP},   {"setp", OP_SETP},     {"mov", OP_MOV},
      {"cvt", OP_CVT},   {"fma", OP_FMA},         {"rcp", OP_RCP},     {"sqrt", OP_SQRT},     {"rsqrt", OP_RSQRT},
      {"ex2", OP_EX2},   {"lg2", OP_LG2},         {"copysign", OP_COPYSIGN}, {"ld", OP_LD}, {"st", OP_ST},
      {"bar", OP_BAR},   {"shfl", OP_SHFL},       {"ldmatrix", OP_LDMATRIX}, {"mma", OP_MMA}, {"bra", OP_BRA},
      {"brx", OP_BRX},   {"ret", OP_RET},         {"exit", OP_RET}};
  int op = -1;
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    if (!strcmp(parts[0], ops[i].n)) op = ops[i].op;
  if (!strcmp(parts[0], "cp") && np >= 3 && !strcmp(parts[1], "async")) {
    if (!strcmp(parts[2], "commit_group")) op = OP_COMMIT;
    else if (!strcmp(parts[2], "wait_group")) op = OP_WAIT;
    else if (!strcmp(parts[2], "wait_all")) op = OP_WAIT, in->mode = 1;
    else if (!strcmp(parts[2], "ca") || !strcmp(parts[2], "cg")) op = OP_CPASYNC;
  }
  if (!strcmp(parts[0], "barrier") && np >= 2 && !strcmp(parts[1], "sync")) op = OP_BAR;
  if (op < 0) return perr(P, "the emulator does not know the instruction '%s'", opc);
  in->op = (uint8_t)op;
  in->vec = 1;
  int nt = 0, types[4] = {0};
  for (int i = 1; i < np; i++) {
    const char *m = parts[i];
    int t = type_of(m);
    if (t > 0) {
      if (nt < 4) types[nt++] = t;
      continue;
    }
    int c = -1;
    for (int j = 0; j < (int)(sizeof cmp_names / sizeof *cmp_names); j++)
      if (!strcmp(m, cmp_names[j])) c = j;
    if (c >= 0 && (op == OP_SETP)) {
      in->cmp = (uint8_t)c;
      continue;
    }
    if (!strcmp(m, "ftz")) in->flags |= F_FTZ;
    else if (!strcmp(m, "wide")) in->flags |= F_WIDE;
    else if (!strcmp(m, "hi")) in->flags |= F_HI;
    else if (!strcmp(m, "lo")) {
    } else if (!strcmp(m, "NaN")) in->flags |= F_NANP;
    else if (!strcmp(m, "trans")) in->flags |= F_TRANS;
    else if (!strcmp(m, "rzi")) in->flags |= F_RZI;
    else if (!strcmp(m, "approx") || !strcmp(m, "rn") || !strcmp(m, "uni") || !strcmp(m, "sync") || !strcmp(m, "aligned") ||
             !strcmp(m, "nc") || (!strcmp(m, "idx") && op == OP_BRX))
      ;
    else if (!strcmp(m, "global")) in->space = SP_GLOBAL;
    else if (!strcmp(m, "shared")) in->space = SP_SHARED;
    else if (!strcmp(m, "param")) in->space = SP_PARAM;
    else if (!strcmp(m, "v2")) in->vec = 2;
    else if (!strcmp(m, "v4")) in->vec = 4;
    else if (op == OP_SHFL && !strcmp(m, "bfly")) in->mode = SHFL_BFLY;
    else if (op == OP_SHFL && !strcmp(m, "up")) in->mode = SHFL_UP;
    else if (op == OP_SHFL && !strcmp(m, "down")) in->mode = SHFL_DOWN;
    else if (op == OP_SHFL && !strcmp(m, "idx")) in->mode = SHFL_IDX;
    else if (op == OP_LDMATRIX && !strcmp(m, "m8n8")) {
    } else if (op == OP_LDMATRIX && (!strcmp(m, "x1") || !strcmp(m, "x2") || !strcmp(m, "x4")))
      in->mode = (uint8_t)(m[1] - '0');
    else if (op == OP_MMA && (!strcmp(m, "m16n8k16") || !strcmp(m, "row") || !strcmp(m, "col")))
      ;
    else if (op == OP_CPASYNC && (!strcmp(m, "async") || !strcmp(m, "ca") || !strcmp(m, "cg")))
      ;
    else if ((op == OP_COMMIT || op == OP_WAIT) &&
             (!strcmp(m, "async") || !strcmp(m, "commit_group") || !strcmp(m, "wait_group") || !strcmp(m, "wait_all")))
      ;
    else
      return perr(P, "the emulator does not know the modifier '.%s' of '%s'", m, opc);
  }
  if (op == OP_MMA) {
    /* m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32 only */
    if (nt != 4 || types[0] != T_F32 || types[3] != T_F32 || types[1] != types[2] ||
        (types[1] != T_BF16 && types[1] != T_F16) || !strstr(opc, "m16n8k16.row.col"))
      return perr(P, "the emulator knows mma.sync only as m16n8k16.row.col with f32 accumulators: '%s'", opc);
    in->t = (uint8_t)types[1];
    return 0;
  }
  if (op == OP_LDMATRIX && in->mode == 0) return perr(P, "ldmatrix without .x1/.x2/.x4");
  if (op == OP_CVT) {
    if (nt != 2) return perr(P, "cvt needs two types: '%s'", opc);
    in->t = (uint8_t)types[0];
    in->t2 = (uint8_t)types[1];
    return 0;
  }
  if (nt > 1) return perr(P, "the emulator does not know the mixed-type form '%s'", opc);
  in->t = (uint8_t)(nt ? types[0] : T_NONE);
  return 0;
}

/* splits s at commas outside {} and [] */
static int split_operands(char *s, char **out, int max) {
  int n = 0, depth = 0;
  char *start = s;
  if (!*trim(s)) return 0;
  for (char *c = s;; c++) {
    if (*c == '{' || *c == '[') depth++;
    else if (*c == '}' || *c == ']') depth--;
    else if ((*c == ',' && depth == 0) || *c == 0) {
      int end = *c == 0;
      *c = 0;
      if (n < max) out[n] = start;
      n++;
      start = c + 1;
      if (end) break;
    }
  }
  return n;
}

static int parse_statement(Parser *P, char *s, char *text) {
  EmuKernel *k = P->k;
  s = trim(s);
  /* labels */
  for (;;) {
    char *c = s;
    while (*c && (*c == '$' || *c == '_' || (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
                  (*c >= '0' && *c <= '9')))
      c++;
    if (c != s && *c == ':') {
      *c = 0;
      P->labels = grow(P->labels, &P->caplabels, P->nlabels + 1, sizeof *P->labels);
      Label *L = &P->labels[P->nlabels++];
      snprintf(L->name, sizeof L->name, "%s", s);
      L->index = k->nins;
      s = trim(c + 1);
      continue;
    }
    break;
  }
  if (!*s) return 0;
  if (*s == '.') {
    if (!strncmp(s, ".reg", 4)) {
      /* .reg .TYPE %name<N>; */
      char *pct = strchr(s, '%'), *lt = pct ? strchr(pct, '<') : NULL;
      if (!pct || !lt) return perr(P, "cannot read '%s'", s);
      if (P->ncls == 16) return perr(P, "too many register classes");
      RegClass *c = &P->cls[P->ncls++];
      snprintf(c->name, sizeof c->name, "%.*s", (int)(lt - pct), pct);
      c->count = atoi(lt + 1);
      if (c->count < 0 || c->count > (1 << 20) || k->nregs > (1 << 22)) return perr(P, "a register count out of range");
      char ty[16] = "";
      sscanf(s + 4, " .%15s", ty);
      int t = type_of(ty);
      if (t <= 0) return perr(P, "unknown register type '.%s'", ty);
      c->base = k->nregs;
      k->nregs += c->count;
      k->slotbits = realloc(k->slotbits, (size_t)k->nregs + 1);
      memset(k->slotbits + c->base, type_bits(t), (size_t)c->count);
      return 0;
    }
    if (!strncmp(s, ".branchtargets", 14)) {
      if (!P->nlabels || P->labels[P->nlabels - 1].index != k->nins) return perr(P, ".branchtargets without a label");
      char *names[256];
      int n = split_operands(s + 14, names, 256);
      if (n > 256) return perr(P, "too many branch targets");
      P->labels[P->nlabels - 1].index = -(1 + k->ntables);
      k->tables = grow(k->tables, &P->captables, k->ntables + n + 1, sizeof *k->tables);
      k->tables[k->ntables++] = n;
      for (int i = 0; i < n; i++) {
        add_fix(P, -1, k->ntables, trim(names[i]));
        k->tables[k->ntables++] = -1;
      }
      return 0;
    }
    if (!strncmp(s, ".pragma", 7) || !strncmp(s, ".loc", 4) || !strncmp(s, ".file", 5)) return 0;
    return perr(P, "the emulator does not know the directive '%s'", s);
  }
  int cap = P->capins;
  k->ins = grow(k->ins, &P->capins, k->nins + 1, sizeof *k->ins);
  if (P->capins != cap) k->texts = realloc(k->texts, (size_t)P->capins * sizeof *k->texts);
  Ins *in = &k->ins[k->nins];
  memset(in, 0, sizeof *in);
  in->guard = -1;
  in->line = P->line;
  if (*s == '@') {
    char *sp = s + 1;
    if (*sp == '!') in->gneg = 1, sp++;
    char *e = sp;
    while (*e && *e != ' ' && *e != '\t') e++;
    char save = *e;
    *e = 0;
    int slot;
    if (reg_slot(P, sp, &slot)) return -1;
    in->guard = slot;
    *e = save;
    s = trim(e);
  }
  char *e = s;
  while (*e && *e != ' ' && *e != '\t' && *e != '\n') e++;
  char opc[160];
  snprintf(opc, sizeof opc, "%.*s", (int)(e - s), s);
  if (decode_opcode(P, opc, in)) return -1;
  char *ops[6];
  int n = split_operands(e, ops, 6);
  if (n > 5) return perr(P, "too many operands");
  in->nopd = (uint8_t)n;
  for (int i = 0; i < n; i++)
    if (parse_operand(P, ops[i], &in->o[i], k->nins, i)) return -1;
  k->texts[k->nins] = strdup(text);
  k->nins++;
  return 0;
}

/* the arity and operand kinds each instruction needs */
static int check_ins(Parser *P, const Ins *in) {
  static const signed char arity[] = {
      [OP_ADD] = 3, [OP_SUB] = 3, [OP_MUL] = 3, [OP_MAD] = 4, [OP_DIV] = 3, [OP_REM] = 3, [OP_MIN] = 3,
      [OP_MAX] = 3, [OP_ABS] = 2, [OP_NEG] = 2, [OP_AND] = 3, [OP_OR] = 3, [OP_XOR] = 3, [OP_NOT] = 2,
      [OP_SHL] = 3, [OP_SHR] = 3, [OP_BFE] = 4, [OP_SELP] = 4, [OP_SETP] = 3, [OP_MOV] = 2, [OP_CVT] = -1,
      [OP_FMA] = 4, [OP_RCP] = 2, [OP_SQRT] = 2, [OP_RSQRT] = 2, [OP_EX2] = 2, [OP_LG2] = 2, [OP_COPYSIGN] = 3,
      [OP_LD] = 2, [OP_ST] = 2, [OP_CPASYNC] = -1, [OP_COMMIT] = 0, [OP_WAIT] = -1, [OP_BAR] = -1, [OP_SHFL] = 5,
      [OP_LDMATRIX] = 2, [OP_MMA] = 4, [OP_BRA] = 1, [OP_BRX] = 2, [OP_RET] = 0};
  int a = arity[in->op];
  if (in->op == OP_CVT) a = (in->t == T_BF16X2 || in->t == T_F16X2) ? 3 : 2;
  if (a >= 0 && in->nopd != a) return perr(P, "wrong operand count (%d, expected %d)", in->nopd, a);
  if (in->op == OP_CPASYNC && in->nopd != 3 && in->nopd != 4) return perr(P, "cp.async needs 3 or 4 operands");
  if (in->op == OP_BAR && (in->nopd < 1 || in->nopd > 2)) return perr(P, "bar.sync needs 1 or 2 operands");
  if (in->op == OP_WAIT && in->nopd != (in->mode ? 0 : 1)) return perr(P, "cp.async.wait_group needs its count");
  int first_dst = !(in->op == OP_ST || in->op == OP_CPASYNC || in->op == OP_BAR || in->op == OP_BRA ||
                    in->op == OP_BRX || in->op == OP_WAIT || in->op == OP_COMMIT || in->op == OP_RET);
  if (first_dst && in->nopd && in->o[0].kind != K_REG && in->o[0].kind != K_VEC)
    return perr(P, "the destination must be a register");
  for (int i = first_dst; i < in->nopd; i++) {
    int kd = in->o[i].kind;
    int want_addr = (in->op == OP_LD && i == 1) || (in->op == OP_ST && i == 0) ||
                    (in->op == OP_CPASYNC && i < 2) || (in->op == OP_LDMATRIX && i == 1);
    if (want_addr != (kd == K_ADDR)) return perr(P, "operand %d: %s", i + 1, want_addr ? "an address is needed" : "an address is not allowed here");
    if (kd == K_LABEL && !(in->op == OP_BRA || (in->op == OP_BRX && i == 1)))
      return perr(P, "operand %d: a label is not allowed here", i + 1);
  }
  if (in->op == OP_MMA && (in->o[0].n != 4 || in->o[1].n != 4 || in->o[2].n != 2 || in->o[3].n != 4))
    return perr(P, "mma.sync m16n8k16 needs {4}, {4}, {2}, {4} registers");
  if (in->op == OP_LDMATRIX && (in->o[0].kind != K_VEC ? 1 : in->o[0].n) != in->mode)
    return perr(P, "ldmatrix .x%d needs %d destination registers", in->mode, in->mode);
  if ((in->op == OP_LD || in->op == OP_ST) && in->vec > 1) {
    const Opd *v = &in->o[in->op == OP_LD ? 0 : 1];
    if (v->kind != K_VEC || v->n != in->vec) return perr(P, "a .v%d access needs %d registers", in->vec, in->vec);
  }
  if ((in->op == OP_LD || in->op == OP_ST) && in->space == SP_NONE)
    return perr(P, "the emulator knows only .global, .shared and .param accesses");
  /* the types each kind of instruction is run for (anything else refused here, not guessed at) */
  int t = in->t;
  int arith = in->op <= OP_NOT || in->op == OP_FMA || (in->op >= OP_RCP && in->op <= OP_COPYSIGN) || in->op == OP_SETP ||
              in->op == OP_SHL || in->op == OP_SHR || in->op == OP_BFE;
  if (arith && (t == T_F64 || t == T_F16X2 || t == T_BF16X2 || t == T_NONE))
    return perr(P, "the emulator does not run '.%s' for this instruction", type_names[t]);
  if ((t == T_F16 || t == T_BF16) && arith && in->op != OP_ADD && in->op != OP_SUB && in->op != OP_MUL &&
      in->op != OP_FMA && in->op != OP_NEG && in->op != OP_ABS)
    return perr(P, "the emulator does not run this instruction on '.%s'", type_names[t]);
  if (t == T_F32 && (in->op == OP_REM || in->op == OP_AND || in->op == OP_OR || in->op == OP_XOR ||
                     in->op == OP_NOT || in->op == OP_SHL || in->op == OP_SHR || in->op == OP_BFE || in->op == OP_MAD))
    return perr(P, "an integer instruction on '.f32'");
  if (in->op == OP_CVT && (t == T_F64 || in->t2 == T_F64 || in->t2 == T_F16X2 || in->t2 == T_BF16X2))
    return perr(P, "the emulator does not run this conversion");
  return 0;
}

static void kernel_free_texts(EmuKernel *k) {
  if (!k->texts) return;
  for (int i = 0; i < k->nins; i++) free(k->texts[i]);
  free(k->texts);
}

void emu_kernel_free(EmuKernel *k) {
  if (!k) return;
  kernel_free_texts(k);
  free(k->ins);
  free(k->pool);
  free(k->tables);
  free(k->params);
  free(k->consts);
  free(k->slotbits);
  free(k);
}

static int parse_params(Parser *P, char *s) {
  EmuKernel *k = P->k;
  char *items[512];
  int n = split_operands(s, items, 512);
  if (n > 512) return perr(P, "too many parameters");
  int cap = 0;
  size_t off = 0;
  for (int i = 0; i < n; i++) {
    char *it = trim(items[i]);
    if (!*it) continue;
    char *tok[16];
    int nt = 0;
    for (char *t = strtok(it, " \t\n"); t && nt < 16; t = strtok(NULL, " \t\n")) tok[nt++] = t;
    if (nt < 3 || strcmp(tok[0], ".param")) return perr(P, "cannot read the parameter '%s'", it);
    size_t size = 0, align = 0;
    const char *name = tok[nt - 1];
    for (int j = 1; j < nt - 1; j++) {
      if (!strcmp(tok[j], ".align") && j + 1 < nt - 1) align = (size_t)atoi(tok[++j]);
      else if (tok[j][0] == '.' && type_of(tok[j] + 1) > 0 && !size) size = (size_t)type_bits(type_of(tok[j] + 1)) / 8;
    }
    char nm[96];
    snprintf(nm, sizeof nm, "%s", name);
    char *br = strchr(nm, '[');
    if (br) { /* .param .align A .b8 name[N] */
      size *= (size_t)atol(br + 1);
      *br = 0;
    } else
      align = size; /* the scalar's own alignment (".align 1" of a pointer is its pointee's) */
    if (!size) return perr(P, "cannot size the parameter '%s'", name);
    if (!align) align = 1;
    off = (off + align - 1) / align * align;
    k->params = grow(k->params, &cap, k->nparams + 1, sizeof *k->params);
    Param *p = &k->params[k->nparams++];
    snprintf(p->name, sizeof p->name, "%s", nm);
    p->size = size;
    p->offset = off;
    off += size;
  }
  k->param_bytes = off;
  return 0;
}

EmuKernel *emu_kernel_parse(const char *ptx, size_t len, const char *name, char *err, size_t errn) {
  EmuKernel *k = calloc(1, sizeof *k);
  Parser P;
  memset(&P, 0, sizeof P);
  P.k = k;
  P.err = err;
  P.errn = errn;
  snprintf(k->name, sizeof k->name, "%s", name);
  k->nregs = SR_COUNT;
  k->slotbits = malloc(SR_COUNT);
  memset(k->slotbits, 32, SR_COUNT);
  k->slotbits[SR_SINK] = 64;
  char *text = malloc(len + 1);
  memcpy(text, ptx, len);
  text[len] = 0;
  /* comments out (keeping line breaks) */
  for (char *c = text; *c; c++) {
    if (c[0] == '/' && c[1] == '/')
      while (*c && *c != '\n') *c++ = ' ';
    if (!*c) break;
    if (c[0] == '/' && c[1] == '*') {
      while (*c && !(c[0] == '*' && c[1] == '/')) {
        if (*c != '\n') *c = ' ';
        c++;
      }
      if (!*c) break; /* unterminated: the rest is comment */
      c[0] = c[1] = ' ';
    }
  }
  /* the module's shared symbol: .extern .shared .align A .b8 NAME[]; */
  char *sh = strstr(text, ".extern .shared");
  if (sh) {
    char *lb = strchr(sh, '[');
    char *b = lb;
    while (b > sh && b[-1] != ' ' && b[-1] != '\t') b--;
    if (lb) snprintf(P.shared_sym, sizeof P.shared_sym, "%.*s", (int)(lb - b), b);
  }
  char pat[200];
  snprintf(pat, sizeof pat, ".entry %s(", name);
  char *ent = strstr(text, pat);
  int rc = -1;
  if (!ent) {
    snprintf(err, errn, "no entry '%s' in the PTX", name);
    goto done;
  }
  for (const char *c = text; c < ent; c++)
    if (*c == '\n') P.line++;
  P.line++;
  char *ps = ent + strlen(pat), *pe = strchr(ps, ')');
  if (!pe) {
    perr(&P, "unclosed parameter list");
    goto done;
  }
  *pe = 0;
  for (const char *c = ps; *c; c++)
    if (*c == '\n') P.line++;
  if (parse_params(&P, ps)) goto done;
  char *body = strchr(pe + 1, '{');
  if (!body) {
    perr(&P, "no body");
    goto done;
  }
  for (const char *c = pe + 1; c < body; c++)
    if (*c == '\n') P.line++;
  /* statements up to the body's closing brace */
  char *c = body + 1;
  for (;;) {
    while (*c == ' ' || *c == '\t' || *c == '\n' || *c == '\r') {
      if (*c == '\n') P.line++;
      c++;
    }
    if (!*c) {
      perr(&P, "the body does not end");
      goto done;
    }
    if (*c == '}') break;
    char *semi = c;
    int depth = 0;
    while (*semi && !(*semi == ';' && depth == 0)) {
      if (*semi == '{') depth++;
      if (*semi == '}') depth--;
      if (depth < 0) break;
      semi++;
    }
    if (*semi != ';') { /* a label alone before the closing brace */
      if (depth < 0) {
        *semi = 0;
        if (parse_statement(&P, c, c)) goto done;
        c = semi;
        *c = '}';
        continue;
      }
      perr(&P, "a statement without ';'");
      goto done;
    }
    *semi = 0;
    char *stmt_text = strdup(trim(c));
    for (char *q = stmt_text; *q; q++)
      if (*q == '\n' || *q == '\t') *q = ' ';
    int r = parse_statement(&P, c, stmt_text);
    free(stmt_text);
    if (r) goto done;
    for (char *q = c; q < semi; q++)
      if (*q == '\n') P.line++;
    c = semi + 1;
  }
  /* resolve the labels */
  for (int f = 0; f < P.nfix; f++) {
    int idx = INT32_MIN;
    for (int l = 0; l < P.nlabels; l++)
      if (!strcmp(P.labels[l].name, P.fix[f].name)) idx = P.labels[l].index;
    if (idx == INT32_MIN) {
      snprintf(err, errn, "%s: unknown label '%s'", name, P.fix[f].name);
      goto done;
    }
    if (P.fix[f].ins >= 0 && (k->ins[P.fix[f].ins].op == OP_BRX) != (idx < 0)) {
      snprintf(err, errn, "%s: '%s' is %s", name, P.fix[f].name,
               idx < 0 ? "a branch table, not an instruction to branch to" : "not a .branchtargets table");
      goto done;
    }
    if (P.fix[f].ins < 0) {
      if (idx < 0) {
        snprintf(err, errn, "%s: a branch table names a table", name);
        goto done;
      }
      k->tables[P.fix[f].opd] = idx;
    } else
      k->ins[P.fix[f].ins].o[P.fix[f].opd].imm = idx < 0 ? -idx - 1 : idx;
  }
  for (int i = 0; i < k->nins; i++) {
    P.line = k->ins[i].line;
    if (check_ins(&P, &k->ins[i])) goto done;
    const Ins *in = &k->ins[i];
    if (in->op == OP_BRA && in->o[0].kind != K_LABEL) {
      perr(&P, "bra needs a label");
      goto done;
    }
  }
  { /* falling off the end returns (and a label at the end has an instruction) */
    int cap = P.capins;
    k->ins = grow(k->ins, &P.capins, k->nins + 1, sizeof *k->ins);
    if (P.capins != cap) k->texts = realloc(k->texts, (size_t)P.capins * sizeof *k->texts);
    memset(&k->ins[k->nins], 0, sizeof *k->ins);
    k->ins[k->nins].op = OP_RET;
    k->ins[k->nins].guard = -1;
    k->texts[k->nins] = strdup("ret (end of body)");
    k->nins++;
  }
  rc = 0;
done:
  free(text);
  free(P.labels);
  free(P.fix);
  if (rc) {
    emu_kernel_free(k);
    return NULL;
  }
  return k;
}

int emu_kernel_nparams(const EmuKernel *k) { return k->nparams; }
int emu_kernel_nins(const EmuKernel *k) { return k->nins; }
int emu_kernel_ins_line(const EmuKernel *k, int i) { return i >= 0 && i < k->nins ? k->ins[i].line : 0; }
const char *emu_kernel_ins_text(const EmuKernel *k, int i) { return i >= 0 && i < k->nins ? k->texts[i] : ""; }

char *emu_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *t = NULL;
  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (t = malloc((size_t)n + 1)) != NULL && fread(t, 1, (size_t)n, f) != (size_t)n) {
    free(t);
    t = NULL;
  }
  fclose(f);
  if (t) t[n] = 0, *len = (size_t)n;
  return t;
}

void emu_ptx_module(const char *text, const char *pos, const char **start, size_t *n) {
  static const char sep[] = "// ---- kernel ";
  const char *s = pos;
  while (s > text && strncmp(s, sep, sizeof sep - 1)) s--;
  const char *e = strstr(pos, sep);
  *start = s;
  *n = e ? (size_t)(e - s) : strlen(s);
}

/* ---- numbers ---- */

static inline float f32(uint64_t v) {
  uint32_t u = (uint32_t)v;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint64_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float ftz(float f) { return fpclassify(f) == FP_SUBNORMAL ? copysignf(0.0f, f) : f; }

static inline uint16_t to_bf16(float f) {
  uint32_t u = (uint32_t)bits(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) return 0x7fff; /* the canonical NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static inline float from_bf16(uint64_t h) { return f32((uint32_t)(h & 0xffff) << 16); }

static uint16_t to_f16(float f) {
  uint32_t u = (uint32_t)bits(f), sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) return (uint16_t)(a > 0x7f800000u ? 0x7fff : (sign | 0x7c00u));
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to infinity */
  if (a < 0x38800000u) { /* a subnormal half, or zero */
    if (a < 0x33000000u) return (uint16_t)sign; /* below half the smallest subnormal */
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)(a >> 23); /* to units of 2^-24: 14 to 24 */
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return (uint16_t)(sign | q);
  }
  uint32_t r = a - 0x38000000u; /* rebias the exponent */
  uint32_t q = r >> 13, rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1))) q++;
  return (uint16_t)(sign | q);
}
static float from_f16(uint64_t hv) {
  uint32_t h = (uint32_t)(hv & 0xffff), sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0) {
    float f = ldexpf((float)m, -24);
    return sign ? -f : f;
  }
  if (e == 31) return f32(sign | 0x7f800000u | (m << 13));
  return f32(sign | ((e + 112) << 23) | (m << 13));
}

/* ---- running ---- */

enum { ST_RUN, ST_BAR, ST_COLL, ST_DONE };

typedef struct {
  uint32_t dst, n, srcn;
  uint64_t src;
  int group, ins;
  uint32_t epoch; /* the barrier interval it was issued in */
} Copy;

/* the race check's record of one 2-byte unit of shared memory: the last
 * write and the last read, each with its barrier interval (epoch), thread
 * and that thread's warp's count of collectives at the time */
typedef struct {
  uint32_t we, re, wwc, rwc; /* rwc: the largest among the interval's readers */
  uint16_t wt, rt, rwarp;    /* rt MANY_READERS: several; rwarp their warp, or NO_WARP */
} Shadow;
enum { MANY_READERS = 0xffff, NO_WARP = 0xffff };

typedef struct {
  int pc, st, bar, bar_count;
  int ncopy, capcopy, next_group;
  Copy *copies;
} Thread;

typedef struct {
  const EmuKernel *k;
  const EmuMemory *mem;
  uint64_t *regs; /* thread-major */
  Thread *th;
  int nthreads;
  unsigned char *smem;
  unsigned shared_bytes;
  unsigned char *params;
  uint64_t lo, hi; /* the last allocation found */
  unsigned block[3], grid[3], bidx[3];
  char *err;
  size_t errn;
  int failed;
  uint64_t counts[EMU_COUNTS];
  uint64_t *per_ins; /* NULL: not counted */
  Shadow *shadow; /* NULL: no race check */
  uint32_t epoch;
  uint32_t *wcoll; /* collectives per warp */
} Ctx;

static int fail(Ctx *C, int tid, int ins, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(Ctx *C, int tid, int ins, const char *fmt, ...) {
  if (C->failed) return -1;
  char msg[300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const EmuKernel *k = C->k;
  if (ins >= 0)
    snprintf(C->err, C->errn, "%s: %s, at PTX line %d (%s), block (%u, %u, %u), thread %d", k->name, msg,
             k->ins[ins].line, k->texts[ins], C->bidx[0], C->bidx[1], C->bidx[2], tid);
  else
    snprintf(C->err, C->errn, "%s: %s, block (%u, %u, %u)", k->name, msg, C->bidx[0], C->bidx[1], C->bidx[2]);
  C->failed = 1;
  return -1;
}

static inline void *gptr(Ctx *C, uint64_t a, uint64_t n, int tid, int ins) {
  if (a >= C->lo && a + n <= C->hi && a + n >= a) return (void *)(uintptr_t)a;
  uint64_t lo, hi;
  if (C->mem->find(C->mem->ctx, a, &lo, &hi) || a + n > hi) {
    fail(C, tid, ins, "global access of %llu bytes at 0x%llx outside every allocation", (unsigned long long)n,
         (unsigned long long)a);
    return NULL;
  }
  C->lo = lo;
  C->hi = hi;
  return (void *)(uintptr_t)a;
}

static inline void *sptr(Ctx *C, uint64_t a, uint64_t n, int tid, int ins) {
  a &= 0xffffffffu;
  if (a + n > C->shared_bytes) {
    fail(C, tid, ins, "shared access of %llu bytes at %llu past the block's %u bytes", (unsigned long long)n,
         (unsigned long long)a, C->shared_bytes);
    return NULL;
  }
  return C->smem + a;
}

/* Shared-memory races: two threads touch the same bytes, at least one
 * writing, with no block barrier between (the same warp's collective
 * instructions order its lanes). Checked at every shared load and store,
 * ldmatrix row and asynchronous copy's landing. */
static inline int ordered(Ctx *C, int a, uint32_t a_wc, int b) {
  return a == b || (a / 32 == b / 32 && C->wcoll[b / 32] > a_wc);
}

static int race_read(Ctx *C, int tid, uint64_t addr, uint64_t n, int ins) {
  if (!C->shadow) return 0;
  uint32_t wc = C->wcoll[tid / 32];
  for (uint64_t u = addr / 2; u < (addr + n + 1) / 2; u++) {
    Shadow *sh = &C->shadow[u];
    if (sh->we == C->epoch && !ordered(C, sh->wt, sh->wwc, tid))
      return fail(C, tid, ins, "shared memory race: reads byte %llu, which thread %d wrote since the last barrier",
                  (unsigned long long)(2 * u), sh->wt);
    if (sh->re != C->epoch) {
      sh->re = C->epoch, sh->rt = (uint16_t)tid, sh->rwc = wc, sh->rwarp = (uint16_t)(tid / 32);
    } else if (sh->rt != tid) {
      sh->rt = MANY_READERS;
      if (sh->rwarp != tid / 32) sh->rwarp = NO_WARP;
      if (wc > sh->rwc) sh->rwc = wc;
    }
  }
  return 0;
}

/* a write by tid; since: the first epoch the write may have happened in */
static int race_write(Ctx *C, int tid, uint64_t addr, uint64_t n, int ins, uint32_t since) {
  if (!C->shadow) return 0;
  uint32_t wc = C->wcoll[tid / 32];
  for (uint64_t u = addr / 2; u < (addr + n + 1) / 2; u++) {
    Shadow *sh = &C->shadow[u];
    if (sh->we >= since && !ordered(C, sh->wt, sh->wwc, tid))
      return fail(C, tid, ins, "shared memory race: writes byte %llu, which thread %d wrote since the last barrier",
                  (unsigned long long)(2 * u), sh->wt);
    int readers_ordered = sh->rt == MANY_READERS ? sh->rwarp == tid / 32 && C->wcoll[tid / 32] > sh->rwc
                                                 : ordered(C, sh->rt, sh->rwc, tid);
    if (sh->re >= since && !readers_ordered)
      return fail(C, tid, ins, "shared memory race: writes byte %llu, which %s read since the last barrier",
                  (unsigned long long)(2 * u), sh->rt == MANY_READERS ? "other threads" : "another thread");
    sh->we = C->epoch, sh->wt = (uint16_t)tid, sh->wwc = wc;
  }
  return 0;
}

static void *mem_at(Ctx *C, int space, uint64_t a, uint64_t n, int tid, int ins) {
  if (a % (n > 16 ? 16 : n)) {
    fail(C, tid, ins, "misaligned access of %llu bytes at 0x%llx", (unsigned long long)n, (unsigned long long)a);
    return NULL;
  }
  switch (space) {
  case SP_GLOBAL: return gptr(C, a, n, tid, ins);
  case SP_SHARED: return sptr(C, a, n, tid, ins);
  default:
    if (a + n > C->k->param_bytes) {
      fail(C, tid, ins, "parameter read past the parameters");
      return NULL;
    }
    return C->params + a;
  }
}

static int finish_copies(Ctx *C, int tid, int keep_groups) {
  Thread *t = &C->th[tid];
  int limit = t->next_group - keep_groups; /* groups below this complete */
  int w = 0;
  for (int i = 0; i < t->ncopy; i++) {
    Copy *cp = &t->copies[i];
    if (cp->group < limit) {
      unsigned char *d = sptr(C, cp->dst, cp->n, tid, cp->ins);
      if (!d || race_write(C, tid, cp->dst, cp->n, cp->ins, cp->epoch)) return -1;
      if (cp->srcn) {
        unsigned char *s = gptr(C, cp->src, cp->srcn, tid, cp->ins);
        if (!s) return -1;
        memcpy(d, s, cp->srcn);
      }
      memset(d + cp->srcn, 0, cp->n - cp->srcn);
    } else
      t->copies[w++] = *cp;
  }
  t->ncopy = w;
  return 0;
}

static inline uint64_t opv(const uint64_t *R, const Opd *o) { return o->kind == K_IMM ? (uint64_t)o->imm : R[o->reg]; }

static inline uint64_t mask_to(int t, uint64_t v) {
  int b = type_bits(t);
  return b >= 64 ? v : b == 1 ? (v & 1) : (v & ((1ull << b) - 1));
}

static inline int64_t sext(int t, uint64_t v) {
  int b = type_bits(t);
  if (b >= 64) return (int64_t)v;
  return (int64_t)(v << (64 - b)) >> (64 - b);
}

static inline int is_signed(int t) { return t == T_S8 || t == T_S16 || t == T_S32 || t == T_S64; }
static inline int is_float(int t) { return t == T_F32 || t == T_F64 || t == T_F16 || t == T_BF16; }

static int fcmp(int c, float a, float b) {
  int un = isnan(a) || isnan(b);
  switch (c) {
  case CMP_EQ: return !un && a == b;
  case CMP_NE: return !un && a != b;
  case CMP_LT: return !un && a < b;
  case CMP_LE: return !un && a <= b;
  case CMP_GT: return !un && a > b;
  case CMP_GE: return !un && a >= b;
  case CMP_EQU: return un || a == b;
  case CMP_NEU: return un || a != b;
  case CMP_LTU: return un || a < b;
  case CMP_LEU: return un || a <= b;
  case CMP_GTU: return un || a > b;
  case CMP_GEU: return un || a >= b;
  case CMP_NUM: return !un;
  case CMP_NAN: return un;
  default: return 0;
  }
}

static int icmp(int c, int t, uint64_t a, uint64_t b) {
  if (is_signed(t)) {
    int64_t x = sext(t, a), y = sext(t, b);
    switch (c) {
    case CMP_EQ: return x == y;
    case CMP_NE: return x != y;
    case CMP_LT: return x < y;
    case CMP_LE: return x <= y;
    case CMP_GT: return x > y;
    case CMP_GE: return x >= y;
    default: return -1;
    }
  }
  a = mask_to(t, a), b = mask_to(t, b);
  switch (c) {
  case CMP_EQ: return a == b;
  case CMP_NE: return a != b;
  case CMP_LT: case CMP_LO: return a < b;
  case CMP_LE: case CMP_LS: return a <= b;
  case CMP_GT: case CMP_HI: return a > b;
  case CMP_GE: case CMP_HS: return a >= b;
  default: return -1;
  }
}

static float fmin_nan(float a, float b, int nanp) {
  if (isnan(a) && isnan(b)) return f32(0x7fffffffu);
  if (isnan(a) || isnan(b)) return nanp ? f32(0x7fffffffu) : (isnan(a) ? b : a);
  if (a == 0 && b == 0) return signbit(a) ? a : b;
  return a < b ? a : b;
}
static float fmax_nan(float a, float b, int nanp) {
  if (isnan(a) && isnan(b)) return f32(0x7fffffffu);
  if (isnan(a) || isnan(b)) return nanp ? f32(0x7fffffffu) : (isnan(a) ? b : a);
  if (a == 0 && b == 0) return signbit(a) ? b : a;
  return a > b ? a : b;
}

static int cvt(Ctx *C, const Ins *in, uint64_t *R, int tid, int pc) {
  int dt = in->t, st = in->t2;
  uint64_t a = opv(R, &in->o[1]);
  uint64_t r;
  if (dt == T_BF16X2 || dt == T_F16X2) { /* d.hi = a, d.lo = b */
    if (st != T_F32) return fail(C, tid, pc, "unsupported conversion");
    float x = f32(a), y = f32(opv(R, &in->o[2]));
    r = dt == T_BF16X2 ? ((uint64_t)to_bf16(x) << 16 | to_bf16(y)) : ((uint64_t)to_f16(x) << 16 | to_f16(y));
  } else if (is_float(dt) || is_float(st)) {
    float x;
    if (st == T_F32) x = f32(a);
    else if (st == T_BF16) x = from_bf16(a);
    else if (st == T_F16) x = from_f16(a);
    else if (is_signed(st)) x = (float)sext(st, a);
    else if (!is_float(st)) x = (float)mask_to(st, a);
    else return fail(C, tid, pc, "unsupported conversion");
    if (in->flags & F_FTZ) x = ftz(x);
    if (dt == T_F32) r = bits(in->flags & F_RZI ? truncf(x) : x);
    else if (dt == T_BF16) r = to_bf16(x);
    else if (dt == T_F16) r = to_f16(x);
    else if (!is_float(dt)) { /* .rzi: toward zero, saturating; NaN gives 0 */
      if (!(in->flags & F_RZI)) return fail(C, tid, pc, "float to integer needs .rzi");
      double tz = isnan(x) ? 0.0 : trunc((double)x);
      int b = type_bits(dt);
      if (is_signed(dt)) { /* saturating at both ends (tz is exact: an integer-valued float) */
        if (tz >= ldexp(1.0, b - 1)) r = mask_to(dt, (1ull << (b - 1)) - 1);
        else if (tz < -ldexp(1.0, b - 1)) r = mask_to(dt, 1ull << (b - 1));
        else r = mask_to(dt, (uint64_t)(int64_t)tz);
      } else {
        if (tz >= ldexp(1.0, b)) r = mask_to(dt, ~0ull);
        else r = tz < 0 ? 0 : (uint64_t)tz;
      }
    } else
      return fail(C, tid, pc, "unsupported conversion");
  } else { /* integer to integer: sign or zero extension, or truncation */
    uint64_t v = is_signed(st) ? (uint64_t)sext(st, a) : mask_to(st, a);
    r = mask_to(dt, v);
  }
  R[in->o[0].reg] = r;
  return 0;
}

/* runs thread tid until it blocks; 0, or -1 on a fault */
static int run_thread(Ctx *C, int tid) {
  const EmuKernel *k = C->k;
  Thread *T = &C->th[tid];
  uint64_t *R = C->regs + (size_t)tid * (size_t)k->nregs;
  const int32_t *pool = k->pool;
  int pc = T->pc;
  uint64_t *cnt = C->counts;
  for (;;) {
    const Ins *in = &k->ins[pc];
    cnt[EMU_ALL]++;
    if (C->per_ins) C->per_ins[pc]++;
    if (in->guard >= 0 && ((R[in->guard] & 1) != 0) == in->gneg) {
      pc++;
      continue;
    }
    const Opd *o = in->o;
    int t = in->t;
    switch (in->op) {
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_MIN: case OP_MAX: case OP_DIV: case OP_REM:
    case OP_AND: case OP_OR: case OP_XOR: case OP_SHL: case OP_SHR: case OP_COPYSIGN: {
      uint64_t a = opv(R, &o[1]), b = opv(R, &o[2]), r = 0;
      if (t == T_F32) {
        float x = f32(a), y = f32(b), z;
        if (in->flags & F_FTZ) x = ftz(x), y = ftz(y);
        switch (in->op) {
        case OP_ADD: z = x + y; break;
        case OP_SUB: z = x - y; break;
        case OP_MUL: z = x * y; break;
        case OP_DIV: z = x / y; break;
        case OP_MIN: z = fmin_nan(x, y, in->flags & F_NANP); break;
        case OP_MAX: z = fmax_nan(x, y, in->flags & F_NANP); break;
        case OP_COPYSIGN: z = copysignf(y, x); break; /* b with a's sign */
        default: return fail(C, tid, pc, "unsupported f32 operation");
        }
        if (in->flags & F_FTZ) z = ftz(z);
        r = bits(z);
      } else if (t == T_BF16 || t == T_F16) {
        float x = t == T_BF16 ? from_bf16(a) : from_f16(a), y = t == T_BF16 ? from_bf16(b) : from_f16(b), z;
        switch (in->op) {
        case OP_ADD: z = x + y; break; /* exact in f32 for two 16-bit floats of close exponents; rounded once */
        case OP_SUB: z = x - y; break;
        case OP_MUL: z = x * y; break; /* exact in f32 */
        default: return fail(C, tid, pc, "unsupported 16-bit float operation");
        }
        r = t == T_BF16 ? to_bf16(z) : to_f16(z);
      } else if (t == T_PRED) {
        a &= 1, b &= 1;
        r = in->op == OP_AND ? (a & b) : in->op == OP_OR ? (a | b) : in->op == OP_XOR ? (a ^ b) : 0;
        if (in->op != OP_AND && in->op != OP_OR && in->op != OP_XOR) return fail(C, tid, pc, "unsupported predicate operation");
      } else {
        int w = type_bits(t);
        switch (in->op) {
        case OP_ADD: r = a + b; break;
        case OP_SUB: r = a - b; break;
        case OP_MUL:
          if (in->flags & F_WIDE) {
            if (is_signed(t)) r = (uint64_t)(sext(t, a) * sext(t, b));
            else r = mask_to(t, a) * mask_to(t, b);
            R[o[0].reg] = 2 * w >= 64 ? r : r & ((1ull << (2 * w)) - 1);
            goto next;
          }
          if (in->flags & F_HI) {
            if (w != 32) return fail(C, tid, pc, "mul.hi only for 32 bits");
            if (is_signed(t)) r = (uint64_t)((sext(t, a) * sext(t, b)) >> 32);
            else r = (mask_to(t, a) * mask_to(t, b)) >> 32;
            break;
          }
          r = a * b;
          break;
        case OP_DIV: case OP_REM:
          if (!mask_to(t, b)) { /* PTX leaves it undefined; a GPU does not stop: all ones */
            r = ~0ull;
            break;
          }
          if (is_signed(t)) {
            int64_t x = sext(t, a), y = sext(t, b);
            if (y == -1) r = in->op == OP_DIV ? (uint64_t)(-(uint64_t)x) : 0;
            else r = (uint64_t)(in->op == OP_DIV ? x / y : x % y);
          } else {
            uint64_t x = mask_to(t, a), y = mask_to(t, b);
            r = in->op == OP_DIV ? x / y : x % y;
          }
          break;
        case OP_MIN: case OP_MAX:
          if (is_signed(t)) {
            int64_t x = sext(t, a), y = sext(t, b);
            r = (uint64_t)((in->op == OP_MIN) == (x < y) ? x : y);
          } else {
            uint64_t x = mask_to(t, a), y = mask_to(t, b);
            r = (in->op == OP_MIN) == (x < y) ? x : y;
          }
          break;
        case OP_AND: r = a & b; break;
        case OP_OR: r = a | b; break;
        case OP_XOR: r = a ^ b; break;
        case OP_SHL: {
          uint64_t s = mask_to(T_U32, b);
          r = s >= (uint64_t)w ? 0 : a << s;
          break;
        }
        case OP_SHR: {
          uint64_t s = mask_to(T_U32, b);
          if (is_signed(t)) r = (uint64_t)(sext(t, a) >> (s >= (uint64_t)w ? w - 1 : (int)s));
          else r = s >= (uint64_t)w ? 0 : mask_to(t, a) >> s;
          break;
        }
        default: return fail(C, tid, pc, "unsupported integer operation");
        }
      }
      R[o[0].reg] = mask_to(t, r);
      break;
    }
    case OP_MAD: {
      uint64_t a = opv(R, &o[1]), b = opv(R, &o[2]), c = opv(R, &o[3]), r;
      if (is_float(t)) return fail(C, tid, pc, "mad on floats");
      if (in->flags & F_WIDE) r = (is_signed(t) ? (uint64_t)(sext(t, a) * sext(t, b)) : mask_to(t, a) * mask_to(t, b)) + c;
      else if (in->flags & F_HI) return fail(C, tid, pc, "mad.hi is not supported");
      else r = mask_to(t, a * b + c);
      int w = type_bits(t);
      R[o[0].reg] = (in->flags & F_WIDE) ? (2 * w >= 64 ? r : r & ((1ull << (2 * w)) - 1)) : mask_to(t, r);
      break;
    }
    case OP_FMA: {
      if (t == T_F32) {
        float x = f32(opv(R, &o[1])), y = f32(opv(R, &o[2])), z = f32(opv(R, &o[3]));
        if (in->flags & F_FTZ) x = ftz(x), y = ftz(y), z = ftz(z);
        float r = fmaf(x, y, z);
        R[o[0].reg] = bits(in->flags & F_FTZ ? ftz(r) : r);
      } else if (t == T_BF16 || t == T_F16) {
        uint64_t a = opv(R, &o[1]), b = opv(R, &o[2]), c = opv(R, &o[3]);
        float x = t == T_BF16 ? from_bf16(a) : from_f16(a), y = t == T_BF16 ? from_bf16(b) : from_f16(b);
        float z = t == T_BF16 ? from_bf16(c) : from_f16(c);
        float r = (float)((double)x * y + z); /* exact product, one rounding to 16 bits (via f32: close) */
        R[o[0].reg] = t == T_BF16 ? to_bf16(r) : to_f16(r);
      } else
        return fail(C, tid, pc, "unsupported fma type");
      break;
    }
    case OP_ABS: case OP_NEG: case OP_NOT: case OP_RCP: case OP_SQRT: case OP_RSQRT: case OP_EX2: case OP_LG2: {
      uint64_t a = opv(R, &o[1]), r;
      if (t == T_F32) {
        float x = f32(a), z;
        if (in->flags & F_FTZ) x = ftz(x);
        switch (in->op) {
        case OP_ABS: z = fabsf(x); break;
        case OP_NEG: z = -x; break;
        case OP_RCP: z = 1.0f / x; break;
        case OP_SQRT: z = sqrtf(x); break;
        case OP_RSQRT: z = (float)(1.0 / sqrt((double)x)); break;
        case OP_EX2: z = exp2f(x); break;
        case OP_LG2: z = log2f(x); break;
        default: return fail(C, tid, pc, "unsupported f32 operation");
        }
        if (in->flags & F_FTZ) z = ftz(z);
        r = bits(z);
      } else if (t == T_BF16 || t == T_F16) {
        if (in->op == OP_NEG) r = a ^ 0x8000u;
        else if (in->op == OP_ABS) r = a & 0x7fffu;
        else return fail(C, tid, pc, "unsupported 16-bit float operation");
      } else if (in->op == OP_NOT) {
        r = t == T_PRED ? !(a & 1) : ~a;
      } else if (in->op == OP_ABS && is_signed(t)) {
        int64_t x = sext(t, a);
        r = (uint64_t)(x < 0 ? -x : x);
      } else if (in->op == OP_NEG && is_signed(t)) {
        r = (uint64_t)(-sext(t, a));
      } else
        return fail(C, tid, pc, "unsupported operation");
      R[o[0].reg] = mask_to(t, r);
      break;
    }
    case OP_BFE: { /* the ISA's pseudocode: bits past msb, and past len, are the sign bit (0 unsigned) */
      uint64_t a = mask_to(t, opv(R, &o[1]));
      unsigned pos = (unsigned)(opv(R, &o[2]) & 0xff), len = (unsigned)(opv(R, &o[3]) & 0xff);
      unsigned msb = (unsigned)type_bits(t) - 1;
      uint64_t sbit = 0, r = 0;
      if (is_signed(t) && len) {
        unsigned top = pos + len - 1 < msb ? pos + len - 1 : msb;
        sbit = (a >> top) & 1;
      }
      for (unsigned i = 0; i <= msb; i++) {
        uint64_t bit = (i < len && pos + i <= msb) ? (a >> (pos + i)) & 1 : sbit;
        r |= bit << i;
      }
      R[o[0].reg] = mask_to(t, r);
      break;
    }
    case OP_SELP:
      R[o[0].reg] = mask_to(t, (opv(R, &o[3]) & 1) ? opv(R, &o[1]) : opv(R, &o[2]));
      break;
    case OP_SETP: {
      uint64_t a = opv(R, &o[1]), b = opv(R, &o[2]);
      int r;
      if (t == T_F32)
        r = in->flags & F_FTZ ? fcmp(in->cmp, ftz(f32(a)), ftz(f32(b))) : fcmp(in->cmp, f32(a), f32(b));
      else {
        r = icmp(in->cmp, t, a, b);
        if (r < 0) return fail(C, tid, pc, "unsupported integer comparison");
      }
      R[o[0].reg] = (uint64_t)r;
      break;
    }
    case OP_MOV:
      if (o[0].kind == K_VEC) { /* unpack */
        uint64_t v = opv(R, &o[1]);
        int w = type_bits(t) / o[0].n;
        for (int i = 0; i < o[0].n; i++) R[pool[o[0].reg + i]] = (v >> (w * i)) & ((1ull << w) - 1);
      } else if (o[1].kind == K_VEC) { /* pack */
        int w = type_bits(t) / o[1].n;
        uint64_t v = 0;
        for (int i = 0; i < o[1].n; i++) v |= (R[pool[o[1].reg + i]] & ((1ull << w) - 1)) << (w * i);
        R[o[0].reg] = v;
      } else
        R[o[0].reg] = mask_to(t, opv(R, &o[1]));
      break;
    case OP_CVT:
      if (cvt(C, in, R, tid, pc)) return -1;
      break;
    case OP_LD: case OP_ST: {
      const Opd *ad = &o[in->op == OP_LD ? 1 : 0], *v = &o[in->op == OP_LD ? 0 : 1];
      uint64_t addr = (ad->reg >= 0 ? R[ad->reg] : 0) + (uint64_t)ad->imm;
      if (in->space == SP_SHARED) addr &= 0xffffffffu;
      int w = type_bits(t) / 8, n = in->vec;
      unsigned char *p = mem_at(C, in->space, addr, (uint64_t)(w * n), tid, pc);
      if (!p) return -1;
      if (in->space != SP_PARAM)
        cnt[in->space == SP_SHARED ? (in->op == OP_LD ? EMU_LD_SHARED : EMU_ST_SHARED)
                                   : (in->op == OP_LD ? EMU_LD_GLOBAL : EMU_ST_GLOBAL)]++;
      if (in->space == SP_SHARED && (in->op == OP_LD ? race_read(C, tid, addr, (uint64_t)(w * n), pc)
                                                      : race_write(C, tid, addr, (uint64_t)(w * n), pc, C->epoch)))
        return -1;
      if (in->op == OP_ST && in->space == SP_PARAM) return fail(C, tid, pc, "a store to a parameter");
      for (int i = 0; i < n; i++) {
        int slot = v->kind == K_VEC ? pool[v->reg + i] : v->reg;
        if (in->op == OP_LD) {
          uint64_t x = 0;
          memcpy(&x, p + i * w, (size_t)w);
          /* a signed load sign-extends to its register's width, an unsigned one zero-extends */
          int rb = k->slotbits[slot];
          R[slot] = is_signed(t) && rb > 8 * w ? (uint64_t)sext(t, x) & (rb >= 64 ? ~0ull : (1ull << rb) - 1) : x;
        } else {
          uint64_t x = v->kind == K_IMM ? (uint64_t)v->imm : R[slot];
          memcpy(p + i * w, &x, (size_t)w);
        }
      }
      break;
    }
    case OP_CPASYNC: {
      uint64_t d = ((o[0].reg >= 0 ? R[o[0].reg] : 0) + (uint64_t)o[0].imm) & 0xffffffffu;
      uint64_t s = (o[1].reg >= 0 ? R[o[1].reg] : 0) + (uint64_t)o[1].imm;
      uint32_t n = (uint32_t)opv(R, &o[2]), sn = in->nopd == 4 ? (uint32_t)opv(R, &o[3]) : n;
      if (n != 4 && n != 8 && n != 16) return fail(C, tid, pc, "cp.async of %u bytes", n);
      if (sn > n) return fail(C, tid, pc, "cp.async source size %u above its %u bytes", sn, n);
      if (d % n || (sn && s % n)) return fail(C, tid, pc, "misaligned cp.async");
      if (!sptr(C, d, n, tid, pc) || (sn && !gptr(C, s, sn, tid, pc))) return -1;
      if (T->ncopy == T->capcopy) {
        T->capcopy = T->capcopy ? 2 * T->capcopy : 64;
        T->copies = realloc(T->copies, (size_t)T->capcopy * sizeof *T->copies);
      }
      cnt[EMU_CP_ASYNC]++;
      T->copies[T->ncopy++] = (Copy){(uint32_t)d, n, sn, s, T->next_group, pc, C->epoch};
      break;
    }
    case OP_COMMIT:
      T->next_group++;
      break;
    case OP_WAIT:
      if (finish_copies(C, tid, in->mode ? 0 : (int)opv(R, &o[0]))) return -1;
      if (in->mode) { /* wait_all: the uncommitted ones too */
        T->next_group++;
        if (finish_copies(C, tid, 0)) return -1;
      }
      break;
    case OP_BRA:
      pc = (int)o[0].imm;
      continue;
    case OP_BRX: {
      const int64_t *tab = k->tables + o[1].imm;
      uint64_t i = mask_to(T_U32, R[o[0].reg]);
      if (i >= (uint64_t)tab[0]) return fail(C, tid, pc, "brx.idx index %llu past its %lld targets", (unsigned long long)i, (long long)tab[0]);
      pc = (int)tab[1 + i];
      continue;
    }
    case OP_RET:
      T->next_group++;
      if (finish_copies(C, tid, 0)) return -1;
      T->st = ST_DONE;
      T->pc = pc;
      return 0;
    case OP_BAR:
      cnt[EMU_BAR]++;
      T->st = ST_BAR;
      T->bar = (int)opv(R, &o[0]);
      T->bar_count = in->nopd > 1 ? (int)opv(R, &o[1]) : 0;
      T->pc = pc;
      return 0;
    case OP_SHFL: case OP_LDMATRIX: case OP_MMA:
      cnt[in->op == OP_SHFL ? EMU_SHFL : in->op == OP_MMA ? EMU_MMA : EMU_LDMATRIX]++;
      T->st = ST_COLL;
      T->pc = pc;
      return 0;
    default:
      return fail(C, tid, pc, "unsupported instruction");
    }
  next:
    pc++;
  }
}

/* a warp's collective instruction, all its live lanes at pc */
static int run_collective(Ctx *C, int w0, int nl, int pc) {
  const EmuKernel *k = C->k;
  const Ins *in = &k->ins[pc];
  const int32_t *pool = k->pool;
  size_t nr = (size_t)k->nregs;
  uint64_t *RL[32];
  for (int l = 0; l < nl; l++) RL[l] = C->regs + (size_t)(w0 + l) * nr;
  if (in->op != OP_SHFL && nl != 32)
    return fail(C, w0, pc, "a .aligned warp instruction with %d live lanes of 32", nl);
  if (in->op == OP_SHFL) {
    uint32_t res[32];
    for (int l = 0; l < nl; l++) {
      uint64_t *R = RL[l];
      uint32_t b = (uint32_t)opv(R, &in->o[2]) & 31, c = (uint32_t)opv(R, &in->o[3]);
      int maxl = (int)(c & 31), segmask = (int)((c >> 8) & 31);
      int minl = l & segmask;
      maxl = minl | (maxl & ~segmask);
      int j, ok;
      switch (in->mode) {
      case SHFL_UP: j = l - (int)b, ok = j >= maxl; break;
      case SHFL_DOWN: j = l + (int)b, ok = j <= maxl; break;
      case SHFL_BFLY: j = l ^ (int)b, ok = j <= maxl; break;
      default: j = minl | ((int)b & ~segmask), ok = j <= maxl; break;
      }
      if (!ok || j >= nl) j = l;
      res[l] = (uint32_t)opv(RL[j], &in->o[1]);
    }
    for (int l = 0; l < nl; l++) RL[l][in->o[0].reg] = res[l];
    return 0;
  }
  if (in->op == OP_LDMATRIX) {
    int nm = in->mode;
    uint32_t rowaddr[32];
    for (int l = 0; l < 8 * nm; l++) {
      const Opd *a = &in->o[1];
      rowaddr[l] = (uint32_t)((a->reg >= 0 ? RL[l][a->reg] : 0) + (uint64_t)a->imm);
      if (rowaddr[l] % 16) return fail(C, w0 + l, pc, "ldmatrix row address %u not 16-byte aligned", rowaddr[l]);
      if (!sptr(C, rowaddr[l], 16, w0 + l, pc) || race_read(C, w0 + l, rowaddr[l], 16, pc)) return -1;
    }
    for (int m = 0; m < nm; m++)
      for (int l = 0; l < 32; l++) {
        uint16_t e[2];
        for (int j = 0; j < 2; j++) {
          int row, col;
          if (in->flags & F_TRANS) row = (l % 4) * 2 + j, col = l / 4;
          else row = l / 4, col = (l % 4) * 2 + j;
          memcpy(&e[j], C->smem + rowaddr[m * 8 + row] + 2 * col, 2);
        }
        int slot = in->o[0].kind == K_VEC ? pool[in->o[0].reg + m] : in->o[0].reg;
        RL[l][slot] = (uint32_t)e[0] | (uint32_t)e[1] << 16;
      }
    return 0;
  }
  /* mma.sync m16n8k16 row.col: A 16x16, B 16x8 (k x n), C and D 16x8 */
  float A[16][16], B[16][8], Cm[16][8];
  int bf = in->t == T_BF16;
  for (int l = 0; l < 32; l++) {
    int g = l >> 2, tq = l & 3;
    uint64_t *R = RL[l];
    const int32_t *a = pool + in->o[1].reg, *b = pool + in->o[2].reg, *c = pool + in->o[3].reg;
    for (int i = 0; i < 4; i++) {
      uint32_t v = (uint32_t)R[a[i]];
      int row = g + (i & 1) * 8, col = tq * 2 + (i >> 1) * 8;
      A[row][col] = bf ? from_bf16(v & 0xffff) : from_f16(v & 0xffff);
      A[row][col + 1] = bf ? from_bf16(v >> 16) : from_f16(v >> 16);
    }
    for (int i = 0; i < 2; i++) {
      uint32_t v = (uint32_t)R[b[i]];
      int kk = tq * 2 + i * 8;
      B[kk][g] = bf ? from_bf16(v & 0xffff) : from_f16(v & 0xffff);
      B[kk + 1][g] = bf ? from_bf16(v >> 16) : from_f16(v >> 16);
    }
    for (int i = 0; i < 4; i++) Cm[g + (i >> 1) * 8][tq * 2 + (i & 1)] = f32(R[c[i]]);
  }
  float D[16][8];
  for (int r = 0; r < 16; r++)
    for (int n = 0; n < 8; n++) {
      double s = 0;
      for (int kk = 0; kk < 16; kk++) s += (double)A[r][kk] * (double)B[kk][n];
      D[r][n] = (float)(s + (double)Cm[r][n]);
    }
  for (int l = 0; l < 32; l++) {
    int g = l >> 2, tq = l & 3;
    const int32_t *d = pool + in->o[0].reg;
    for (int i = 0; i < 4; i++) RL[l][d[i]] = bits(D[g + (i >> 1) * 8][tq * 2 + (i & 1)]);
  }
  return 0;
}

/* barriers whose waiting threads are all there: released; 1 if any */
static int bar_ready(Ctx *C) {
  int live = 0, waiting = 0;
  for (int i = 0; i < C->nthreads; i++) {
    if (C->th[i].st != ST_DONE) live++;
    if (C->th[i].st == ST_BAR) waiting++;
  }
  if (!waiting) return 0;
  /* one barrier at a time: id 0 with every live thread, or a counted barrier reaching its count */
  for (int id = 0; id < 16; id++) {
    int n = 0, count = 0;
    for (int i = 0; i < C->nthreads; i++)
      if (C->th[i].st == ST_BAR && C->th[i].bar == id) n++, count = C->th[i].bar_count;
    if (!n) continue;
    int need = count ? count : live;
    if (n >= need) {
      for (int i = 0; i < C->nthreads; i++)
        if (C->th[i].st == ST_BAR && C->th[i].bar == id) C->th[i].st = ST_RUN, C->th[i].pc++;
      C->epoch++; /* a new barrier interval (for every thread: counted barriers are not told apart) */
      return 1;
    }
  }
  return 0;
}

static int run_block(Ctx *C) {
  const EmuKernel *k = C->k;
  int n = C->nthreads;
  C->epoch++;
  if (C->wcoll) memset(C->wcoll, 0, (size_t)(n + 31) / 32 * sizeof *C->wcoll);
  for (int i = 0; i < n; i++) {
    Thread *t = &C->th[i];
    t->pc = 0, t->st = ST_RUN, t->ncopy = 0, t->next_group = 0;
    uint64_t *R = C->regs + (size_t)i * (size_t)k->nregs;
    R[SR_TID] = (uint64_t)i % C->block[0];
    R[SR_TID + 1] = (uint64_t)i / C->block[0] % C->block[1];
    R[SR_TID + 2] = (uint64_t)i / (C->block[0] * C->block[1]);
    for (int d = 0; d < 3; d++) {
      R[SR_NTID + d] = C->block[d];
      R[SR_CTAID + d] = C->bidx[d];
      R[SR_NCTAID + d] = C->grid[d];
    }
    for (int c = 0; c < k->nconsts; c++) R[k->consts[c].slot] = k->consts[c].value;
    R[SR_LANEID] = (uint64_t)i % 32;
    R[SR_WARPID] = (uint64_t)i / 32;
  }
  for (;;) {
    int progress = 0;
    for (int i = 0; i < n; i++)
      if (C->th[i].st == ST_RUN) {
        if (run_thread(C, i)) return -1;
        progress = 1;
      }
    for (int w0 = 0; w0 < n; w0 += 32) {
      int nl = n - w0 < 32 ? n - w0 : 32, live = 0, coll = 0, pc = -1, same = 1;
      for (int l = 0; l < nl; l++) {
        Thread *t = &C->th[w0 + l];
        if (t->st == ST_DONE) continue;
        live++;
        if (t->st == ST_COLL) {
          if (pc >= 0 && t->pc != pc) same = 0;
          pc = t->pc;
          coll++;
        }
      }
      if (!coll || coll != live) continue;
      if (!same) return fail(C, w0, pc, "the lanes of warp %d wait at different warp instructions", w0 / 32);
      int alllive = 1;
      for (int l = 0; l < nl; l++) alllive &= C->th[w0 + l].st != ST_DONE;
      if (!alllive && k->ins[pc].op != OP_SHFL)
        return fail(C, w0, pc, "a warp instruction with exited lanes in warp %d", w0 / 32);
      if (run_collective(C, w0, nl, pc)) return -1;
      if (C->wcoll) C->wcoll[w0 / 32]++;
      for (int l = 0; l < nl; l++) {
        Thread *t = &C->th[w0 + l];
        if (t->st == ST_COLL) t->st = ST_RUN, t->pc++;
      }
      progress = 1;
    }
    if (progress) continue;
    if (bar_ready(C)) continue;
    int done = 1;
    for (int i = 0; i < n; i++) done &= C->th[i].st == ST_DONE;
    if (done) return 0;
    /* nothing can move: say where the threads wait */
    int first_bar = -1, first_coll = -1;
    for (int i = 0; i < n; i++) {
      if (C->th[i].st == ST_BAR && first_bar < 0) first_bar = i;
      if (C->th[i].st == ST_COLL && first_coll < 0) first_coll = i;
    }
    int who = first_coll >= 0 ? first_coll : first_bar;
    return fail(C, who, C->th[who].pc, "deadlock: threads wait at a barrier and at a warp instruction that cannot both be passed");
  }
}

/* one worker: blocks w, w + n, ... of the grid, each in its own context */
typedef struct {
  Ctx C;
  unsigned long long first, step, nblocks;
  int *stop;
  unsigned long long failed_block; /* the first block that failed, or nblocks */
  char err[1200];
} Worker;

static void *work(void *arg) {
  Worker *W = arg;
  Ctx *C = &W->C;
  W->failed_block = W->nblocks;
  for (unsigned long long b = W->first; b < W->nblocks && !__atomic_load_n(W->stop, __ATOMIC_RELAXED); b += W->step) {
    C->bidx[0] = (unsigned)(b % C->grid[0]);
    C->bidx[1] = (unsigned)(b / C->grid[0] % C->grid[1]);
    C->bidx[2] = (unsigned)(b / ((unsigned long long)C->grid[0] * C->grid[1]));
    memset(C->smem, 0xff, C->shared_bytes); /* what a block finds there is not zero */
    if (run_block(C)) {
      W->failed_block = b;
      __atomic_store_n(W->stop, 1, __ATOMIC_RELAXED);
      break;
    }
  }
  return NULL;
}

static int worker_count(unsigned long long nblocks) {
  const char *env = getenv("CAKE_EMU_THREADS");
  long n = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > 64) n = 64;
  if ((unsigned long long)n > nblocks) n = (long)nblocks;
  return (int)n;
}

int emu_launch(const EmuKernel *k, const unsigned grid[3], const unsigned block[3], unsigned shared_bytes,
               void **params, const EmuMemory *mem, uint64_t counts[EMU_COUNTS], uint64_t *per_ins, char *err,
               size_t errn) {
  unsigned long long nt = (unsigned long long)block[0] * block[1] * block[2];
  if (!nt || nt > 1024) {
    snprintf(err, errn, "%s: a block of %llu threads", k->name, nt);
    return -1;
  }
  if (!grid[0] || !grid[1] || !grid[2]) {
    snprintf(err, errn, "%s: an empty grid", k->name);
    return -1;
  }
  unsigned long long nblocks = (unsigned long long)grid[0] * grid[1] * grid[2];
  int nw = worker_count(nblocks);
  const char *rc_env = getenv("CAKE_EMU_RACECHECK");
  int racecheck = !(rc_env && !strcmp(rc_env, "0"));
  unsigned char *pbuf = calloc(1, k->param_bytes + 1);
  Worker *W = calloc((size_t)nw, sizeof *W);
  int stop = 0;
  int rc = 0;
  if (!pbuf || !W) rc = -1;
  for (int i = 0; !rc && i < k->nparams; i++) memcpy(pbuf + k->params[i].offset, params[i], k->params[i].size);
  for (int w = 0; !rc && w < nw; w++) {
    Ctx *C = &W[w].C;
    C->k = k, C->mem = mem, C->err = W[w].err, C->errn = sizeof W[w].err, C->shared_bytes = shared_bytes;
    for (int d = 0; d < 3; d++) C->grid[d] = grid[d], C->block[d] = block[d];
    C->nthreads = (int)nt;
    C->params = pbuf;
    C->regs = calloc((size_t)nt * (size_t)k->nregs, sizeof *C->regs);
    C->th = calloc((size_t)nt, sizeof *C->th);
    C->smem = malloc(shared_bytes + 16);
    if (!C->regs || !C->th || !C->smem) rc = -1;
    if (per_ins && !(C->per_ins = calloc((size_t)k->nins, sizeof *C->per_ins))) rc = -1;
    if (racecheck) {
      C->shadow = calloc(shared_bytes / 2 + 2, sizeof *C->shadow);
      C->wcoll = calloc((size_t)(nt + 31) / 32, sizeof *C->wcoll);
      if (!C->shadow || !C->wcoll) rc = -1;
    }
    W[w].first = (unsigned long long)w, W[w].step = (unsigned long long)nw, W[w].nblocks = nblocks, W[w].stop = &stop;
  }
  if (rc) snprintf(err, errn, "%s: out of memory for a block", k->name);
  else {
    /* blocks share nothing but global memory, and a correct kernel does not
     * race on it between blocks: the split cannot change what is computed */
    pthread_t tids[64];
    int started = 0;
    for (int w = 1; w < nw; w++)
      if (pthread_create(&tids[w], NULL, work, &W[w]) == 0) started = w;
      else break;
    if (started < nw - 1) { /* fewer threads: the rest run here, in turn */
      for (int w = started + 1; w < nw; w++) work(&W[w]);
    }
    work(&W[0]);
    for (int w = 1; w <= started; w++) pthread_join(tids[w], NULL);
    unsigned long long first = nblocks;
    int fw = -1;
    for (int w = 0; w < nw; w++)
      if (W[w].failed_block < first) first = W[w].failed_block, fw = w;
    if (fw >= 0) {
      snprintf(err, errn, "%s", W[fw].err);
      rc = -1;
    }
    if (per_ins)
      for (int i = 0; i < k->nins; i++) {
        per_ins[i] = 0;
        for (int w = 0; w < nw; w++) per_ins[i] += W[w].C.per_ins[i];
      }
    if (counts)
      for (int c = 0; c < EMU_COUNTS; c++) {
        counts[c] = 0;
        for (int w = 0; w < nw; w++) counts[c] += W[w].C.counts[c];
      }
  }
  for (int w = 0; W && w < nw; w++) {
    Ctx *C = &W[w].C;
    if (C->th)
      for (int i = 0; i < (int)nt; i++) free(C->th[i].copies);
    free(C->th);
    free(C->regs);
    free(C->smem);
    free(C->shadow);
    free(C->wcoll);
    free(C->per_ins);
  }
  free(W);
  free(pbuf);
  return rc;
}
