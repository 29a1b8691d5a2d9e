/* parse.c - the parser's driver, AST helpers and the AST dump. */
#include <stdio.h>
#include <string.h>

#include "parse_ctx.h"
#include "parser.h"
#include "lexer.h"

const char *dtype_name(DType t) {
  switch (t) {
    case DT_BF16: return "bf16";
    case DT_F16: return "f16";
    case DT_F32: return "f32";
    case DT_I32: return "i32";
    case DT_BOOL: return "bool";
    default: return "?";
  }
}

int dtype_bytes(DType t) {
  switch (t) {
    case DT_BF16: case DT_F16: return 2;
    case DT_F32: case DT_I32: return 4;
    case DT_BOOL: return 1;
    default: return 0;
  }
}

DType parse_dtype_word(const char *s) {
  static const DType all[] = {DT_BF16, DT_F16, DT_F32, DT_I32};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (strcmp(s, dtype_name(all[i])) == 0) return all[i];
  return DT_NONE;
}

const char *role_name(Role r) {
  switch (r) {
    case ROLE_IN: return "in";
    case ROLE_OUT: return "out";
    case ROLE_TEMP: return "temp";
    case ROLE_SAVE: return "save";
  }
  return "?";
}

char *parse_strdup(struct ParseCtx *pc, const char *s) { return arena_strdup(pc->arena, s); }

Loc parse_loc(struct ParseCtx *pc, const CAKE_YYLTYPE *l) {
  Loc loc = {pc->src, l->first_line, l->first_column, l->last_column};
  if (l->last_line != l->first_line || loc.end_col < loc.col) loc.end_col = loc.col;
  return loc;
}

void parse_lex_error(struct ParseCtx *pc, const CAKE_YYLTYPE *l, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(pc->diag, parse_loc(pc, l), "error", fmt, ap);
  va_end(ap);
}

Program *cake_parse(Arena *arena, Diag *diag, const Source *src) {
  struct ParseCtx pc = {0};
  pc.arena = arena;
  pc.diag = diag;
  pc.src = src;
  pc.line = 1;
  pc.col = 1;
  pc.prog = arena_alloc(arena, sizeof(Program));
  pc.prog->src = src;
  int errors_before = diag->errors;
  yyscan_t scanner;
  if (cake_yylex_init_extra(&pc, &scanner)) cake_die("cannot create the scanner");
  YY_BUFFER_STATE b = cake_yy_scan_bytes(src->text, (int)src->len, scanner);
  pc.scanner = scanner;
  int rc = cake_yyparse(scanner, &pc);
  cake_yy_delete_buffer(b, scanner);
  cake_yylex_destroy(scanner);
  if (rc != 0 || diag->errors != errors_before) return NULL;
  return pc.prog;
}

/* ---- dump ---- */

const char *ast_op_spelling(int op) {
  static char one[2];
  switch (op) {
    case LE: return "<=";
    case GE: return ">=";
    case EQ: return "==";
    case NE: return "!=";
    case ANDAND: return "&&";
    case OROR: return "||";
    default: one[0] = (char)op; one[1] = 0; return one;
  }
}

static void dump_expr(Buf *o, const Expr *e);

static void dump_list(Buf *o, const PtrVec *v) {
  for (int i = 0; i < v->len; i++) {
    if (i) buf_puts(o, ", ");
    dump_expr(o, v->items[i]);
  }
}

static void dump_expr(Buf *o, const Expr *e) {
  switch (e->kind) {
    case E_INT: case E_FLOAT: buf_puts(o, e->text); break;
    case E_NAME: buf_puts(o, e->name); break;
    case E_UNARY: buf_printf(o, "(%s", ast_op_spelling(e->op)); dump_expr(o, e->a); buf_puts(o, ")"); break;
    case E_BINARY:
      buf_puts(o, "(");
      dump_expr(o, e->a);
      buf_printf(o, " %s ", ast_op_spelling(e->op));
      dump_expr(o, e->b);
      buf_puts(o, ")");
      break;
    case E_CALL: buf_printf(o, "%s(", e->name); dump_list(o, &e->args); buf_puts(o, ")"); break;
    case E_INDEX: dump_expr(o, e->a); buf_puts(o, "["); dump_list(o, &e->args); buf_puts(o, "]"); break;
    case E_SLICE: buf_puts(o, ":"); break;
    case E_NONE: buf_puts(o, "None"); break;
    case E_TRANSPOSE: dump_expr(o, e->a); buf_puts(o, ".T"); break;
    case E_CAST: buf_puts(o, "("); dump_expr(o, e->a); buf_printf(o, " as %s)", dtype_name(e->dtype)); break;
    case E_LOAD:
      buf_printf(o, "load %s[", e->name);
      dump_list(o, &e->args);
      buf_puts(o, "]");
      if (e->b) { buf_puts(o, " or "); dump_expr(o, e->b); }
      break;
  }
}

static void dump_stmts(Buf *o, const PtrVec *body, int indent);

static void dump_stmt(Buf *o, const Stmt *s, int indent) {
  buf_printf(o, "%*s", indent, "");
  switch (s->kind) {
    case S_ASSIGN:
      buf_printf(o, "Assign %s = ", s->name);
      dump_expr(o, s->value);
      buf_printf(o, "  @%d:%d\n", s->loc.line, s->loc.col);
      break;
    case S_STORE:
      buf_puts(o, "Store ");
      dump_expr(o, s->target);
      buf_puts(o, " = ");
      dump_expr(o, s->value);
      buf_printf(o, "  @%d:%d\n", s->loc.line, s->loc.col);
      break;
    case S_FOR:
      if (s->value) {
        buf_printf(o, "For %s in range(", s->name);
        dump_expr(o, s->value);
        buf_puts(o, ") carry");
      } else if (s->before == 3) {
        buf_printf(o, "For %s, %s in %sends() carry", s->name, s->name2, s->reverse ? "reverse " : "");
      } else if (s->before) {
        buf_printf(o, "For %s, %s in %s%s(%s) carry", s->name, s->name2, s->reverse ? "reverse " : "",
                   s->before == 2 ? "after" : "before", s->doc);
      } else if (s->doc) {
        buf_printf(o, "For %s in %schunks(%s) carry", s->name, s->reverse ? "reverse " : "", s->doc);
      } else {
        buf_printf(o, "For %s in %schunks carry", s->name, s->reverse ? "reverse " : "");
      }
      for (int i = 0; i < s->carries.len; i++) buf_printf(o, " %s", ((Ident *)s->carries.items[i])->name);
      buf_printf(o, "  @%d:%d\n", s->loc.line, s->loc.col);
      dump_stmts(o, &s->body, indent + 2);
      break;
    case S_IF:
      buf_puts(o, "If ");
      dump_expr(o, s->value);
      buf_printf(o, "  @%d:%d\n", s->loc.line, s->loc.col);
      dump_stmts(o, &s->body, indent + 2);
      if (s->else_body.len) {
        buf_printf(o, "%*sElse\n", indent, "");
        dump_stmts(o, &s->else_body, indent + 2);
      }
      break;
  }
}

static void dump_stmts(Buf *o, const PtrVec *body, int indent) {
  for (int i = 0; i < body->len; i++) dump_stmt(o, body->items[i], indent);
}

static void dump_decls(Buf *o, const PtrVec *decls, int indent);

static void dump_decl(Buf *o, const Decl *d, int indent) {
  buf_printf(o, "%*s", indent, "");
  switch (d->kind) {
    case D_DIM:
      buf_puts(o, "Dim");
      for (int j = 0; j < d->names.len; j++) buf_printf(o, " %s", ((Ident *)d->names.items[j])->name);
      break;
    case D_CONST:
      buf_printf(o, "Const %s = ", d->name.name);
      dump_expr(o, d->value);
      break;
    case D_SEQUENCE:
      buf_printf(o, "Sequence tokens=%s docs=%s chunk=", d->seq_tokens.name, d->seq_docs.name ? d->seq_docs.name : "-");
      dump_expr(o, d->seq_chunk);
      break;
    case D_TENSOR:
      buf_printf(o, "Tensor %s", role_name(d->role));
      for (int j = 0; j < d->names.len; j++) buf_printf(o, " %s", ((Ident *)d->names.items[j])->name);
      buf_printf(o, " : %s[", dtype_name(d->dtype));
      dump_list(o, &d->shape);
      buf_printf(o, "]%s", d->optional ? " optional" : "");
      break;
    case D_PARAM:
      buf_printf(o, "Param %s : %s", d->name.name, dtype_name(d->dtype));
      if (d->value) {
        buf_puts(o, " = ");
        dump_expr(o, d->value);
      }
      break;
    case D_OPTION:
      buf_printf(o, "Option %s = %s in (", d->name.name, d->value->name);
      for (int j = 0; j < d->names.len; j++) buf_printf(o, "%s%s", j ? ", " : "", ((Ident *)d->names.items[j])->name);
      buf_puts(o, ")");
      for (int j = 0; j < d->prefers.len; j++) {
        const Prefer *r = d->prefers.items[j];
        buf_printf(o, " prefer %s when ", r->value.name);
        dump_expr(o, r->cond);
      }
      break;
    case D_IF:
      buf_puts(o, "If ");
      dump_expr(o, d->value);
      buf_printf(o, "  @%d:%d\n", d->loc.line, d->loc.col);
      dump_decls(o, &d->body, indent + 2);
      if (d->else_body.len) {
        buf_printf(o, "%*sElse\n", indent, "");
        dump_decls(o, &d->else_body, indent + 2);
      }
      return;
    case D_KERNEL:
      buf_printf(o, "Kernel %s over (", d->name.name);
      for (int j = 0; j < d->axes.len; j++) {
        const Axis *a = d->axes.items[j];
        if (j) buf_puts(o, ", ");
        buf_printf(o, "%s in ", a->var.name);
        if (a->kind == AX_CHUNKS) buf_puts(o, "chunks");
        else if (a->kind == AX_DOCS) buf_puts(o, "docs");
        else dump_expr(o, a->extent);
      }
      buf_puts(o, ")");
      if (d->threads) {
        buf_puts(o, " threads ");
        dump_expr(o, d->threads);
      }
      if (d->per_sm) {
        buf_puts(o, " per_sm ");
        dump_expr(o, d->per_sm);
      }
      buf_printf(o, "  @%d:%d\n", d->loc.line, d->loc.col);
      dump_stmts(o, &d->body, indent + 2);
      return;
    case D_REQUIRE:
      buf_puts(o, "Require ");
      dump_expr(o, d->value);
      break;
    case D_RANKS:
      buf_printf(o, "Ranks %s", d->name.name);
      if (d->frags.name) buf_printf(o, ", fragments %s", d->frags.name);
      break;
    case D_EXCHANGE:
      buf_printf(o, "Exchange %s = %s(%s) -> %s", d->name.name, d->xop.name, d->xsrc.name, d->xdst.name);
      break;
    case D_ENTRY:
      buf_printf(o, "Entry %s =", d->name.name);
      for (int j = 0; j < d->names.len; j++) {
        const StageRef *st = d->names.items[j];
        if (st->group) buf_printf(o, " %s[rounds %d%s]", st->id.name, st->group, st->reverse ? " reverse" : "");
        else buf_printf(o, " %s", st->id.name);
      }
      break;
  }
  buf_printf(o, "  @%d:%d\n", d->loc.line, d->loc.col);
}

static void dump_decls(Buf *o, const PtrVec *decls, int indent) {
  for (int i = 0; i < decls->len; i++) dump_decl(o, decls->items[i], indent);
}

void ast_dump(Buf *o, const Program *p) {
  buf_printf(o, "Program %s\n", p->name.name);
  dump_decls(o, &p->decls, 2);
}
