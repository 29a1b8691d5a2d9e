/* parser.y - the grammar of the Cake language (see dsl/README.md).
 *
 * A pure (reentrant) bison parser with locations. It builds the AST of
 * ast.h in the caller's arena; it checks syntax only. Several syntax errors
 * are reported per run: a broken declaration or statement is skipped and
 * parsing resumes at the next one. */
%define api.pure full
%define api.prefix {cake_yy}
%define parse.error detailed
%locations
%param {void *scanner}
%parse-param {struct ParseCtx *pc}

%code requires {
#include "parse_ctx.h"
}

%code {
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int cake_yylex(CAKE_YYSTYPE *yylval, CAKE_YYLTYPE *yylloc, void *scanner);
static void cake_yyerror(CAKE_YYLTYPE *l, void *scanner, struct ParseCtx *pc, const char *msg);

#define L(x) parse_loc(pc, &(x))
#define NEW(T) ((T *)arena_alloc(pc->arena, sizeof(T)))

static Expr *mk_expr(struct ParseCtx *pc, ExprKind k, Loc loc) {
  Expr *e = NEW(Expr);
  e->kind = k;
  e->loc = loc;
  return e;
}

/* A literal: integers are int64 (a literal that does not fit is an error),
 * decimals are doubles (one too large for a double is an error). */
static Expr *mk_number(struct ParseCtx *pc, ExprKind k, const char *text, Loc loc) {
  Expr *e = mk_expr(pc, k, loc);
  e->text = text;
  errno = 0;
  if (k == E_INT) {
    e->ival = strtoll(text, NULL, 10);
    if (errno == ERANGE) diag_error(pc->diag, loc, "integer literal %s does not fit in 64 bits (at most 9223372036854775807)", text);
  } else {
    e->fval = strtod(text, NULL);
    if (errno == ERANGE && isinf(e->fval)) diag_error(pc->diag, loc, "number %s is too large for a double", text);
  }
  return e;
}

/* Sets e->depth from its operands, once they are in place. Past
 * CAKE_MAX_EXPR_DEPTH levels the expression is an error (reported once per
 * file), so no later pass recurses deeper than that. */
static Expr *nested(struct ParseCtx *pc, Expr *e) {
  int d = 0;
  if (e->a && e->a->depth > d) d = e->a->depth;
  if (e->b && e->b->depth > d) d = e->b->depth;
  for (int i = 0; i < e->args.len; i++)
    if (((Expr *)e->args.items[i])->depth > d) d = ((Expr *)e->args.items[i])->depth;
  e->depth = d + 1;
  if (e->depth > CAKE_MAX_EXPR_DEPTH && !pc->too_deep) {
    pc->too_deep = 1;
    diag_error(pc->diag, e->loc, "expression nested too deeply (more than %d levels); split it into named steps",
               CAKE_MAX_EXPR_DEPTH);
  }
  return e;
}

/* The same for blocks: an `if` (with its `else if` chain) or a `for` is one
 * level deeper than the deepest block in its bodies. */
static int block_depth(const PtrVec *v, int stmts) {
  int d = 0;
  for (int i = 0; i < v->len; i++) {
    int x = stmts ? ((const Stmt *)v->items[i])->depth : ((const Decl *)v->items[i])->depth;
    if (x > d) d = x;
  }
  return d;
}

static int nested_block(struct ParseCtx *pc, const PtrVec *body, const PtrVec *else_body, int stmts, Loc loc) {
  int a = block_depth(body, stmts), b = else_body ? block_depth(else_body, stmts) : 0;
  int d = (a > b ? a : b) + 1;
  if (d > CAKE_MAX_EXPR_DEPTH && !pc->too_deep) {
    pc->too_deep = 1;
    diag_error(pc->diag, loc, "blocks nested too deeply (more than %d levels, `else if` included)", CAKE_MAX_EXPR_DEPTH);
  }
  return d;
}

static Expr *mk_binary(struct ParseCtx *pc, int op, Expr *a, Expr *b, Loc oploc) {
  Expr *e = mk_expr(pc, E_BINARY, oploc);
  e->op = op;
  e->a = a;
  e->b = b;
  return nested(pc, e);
}

static Ident *mk_ident(struct ParseCtx *pc, const char *name, Loc loc) {
  Ident *id = NEW(Ident);
  id->name = name;
  id->loc = loc;
  return id;
}

static StageRef *mk_stage(struct ParseCtx *pc, const char *name, Loc loc, int group, int reverse) {
  StageRef *st = NEW(StageRef);
  st->id = (Ident){name, loc};
  st->group = group;
  st->reverse = reverse;
  return st;
}

static PtrVec one(struct ParseCtx *pc, void *p) {
  PtrVec v = {0};
  ptrvec_push(pc->arena, &v, p);
  return v;
}
}

%union {
  const char *text;
  DType dtype;
  Expr *expr;
  Stmt *stmt;
  Decl *decl;
  Axis *axis;
  Ident *ident;
  PtrVec vec;
  int ival;
}

%token PROGRAM "program" DIM "dim" CONST "const" SEQUENCE "sequence" DOCS "docs"
%token CHUNK "chunk" CHUNKS "chunks" IN "in" OUT "out" TEMP "temp" SAVE "save"
%token OPTIONAL "optional" PARAM "param" KERNEL "kernel" OVER "over"
%token THREADS "threads" PER_SM "per_sm" ENTRY "entry" LOAD "load" STORE "store" OR "or" FOR "for"
%token REVERSE "reverse" CARRY "carry" AS "as" NONE "None" OPTION "option" IF "if" ELSE "else"
%token REQUIRE "require" PREFER "prefer" WHEN "when" RANKS "ranks" EXCHANGE "exchange" ARROW "->"
%token LE "<=" GE ">=" EQ "==" NE "!=" ANDAND "&&" OROR "||"
%token <text> IDENT "name" INT "integer" FLOAT "number"
%token <dtype> DTYPE "dtype"

%type <expr> expr postfix primary index_item opt_default opt_threads opt_per_sm shape_item
%type <vec> decls ident_list stage_list stage_group expr_list index_list const_list axis_list stmts opt_carry args
%type <vec> else_decls else_stmts shape_list prefer_list xchg_args
%type <decl> decl const_item
%type <stmt> stmt if_stmt
%type <decl> if_decl
%type <axis> axis
%type <ival> role opt_optional opt_reverse
%type <text> option_name

%left OR
%left OROR
%left ANDAND
%nonassoc '<' '>' LE GE EQ NE
%left '+' '-'
%left '*' '/' '@' '%'
%left AS
%right UMINUS '!'

%%

/* program := "program" name decl* */
program
  : PROGRAM IDENT decls {
      pc->prog->name.name = $2;
      pc->prog->name.loc = L(@2);
      pc->prog->decls = $3;
    }
  ;

decls
  : %empty          { memset(&$$, 0, sizeof $$); }
  | decls decl      { $$ = $1; if ($2) ptrvec_push(pc->arena, &$$, $2); }
  | decls CONST const_list {
      /* `const a = 1, b = 2` declares each constant in turn */
      $$ = $1;
      for (int i = 0; i < $3.len; i++) ptrvec_push(pc->arena, &$$, $3.items[i]);
    }
  | decls error     { $$ = $1; }
  ;

/* decl := "dim" names | "const" name "=" expr ("," ...)* | "sequence" ...
 *       | role names ":" dtype "[" exprs "]" ["optional"]
 *       | "param" name ":" dtype ["=" expr]
 *       | "kernel" name "over" "(" axes ")" ["threads" expr] ["per_sm" expr] "{" stmt* "}"
 *       | "entry" name "=" names
 *       | "ranks" name ["," "fragments" name]  (a context-parallel program)
 *       | "exchange" name "=" name "(" name ("," expr)* ")" "->" name
 *       | "require" expr                       (a relation between dims) */
decl
  : DIM ident_list {
      $$ = NEW(Decl); $$->kind = D_DIM; $$->loc = L(@1); $$->names = $2;
    }
  | SEQUENCE IDENT ',' DOCS IDENT ',' CHUNK expr {
      $$ = NEW(Decl); $$->kind = D_SEQUENCE; $$->loc = L(@1);
      $$->seq_tokens = (Ident){$2, L(@2)};
      $$->seq_docs = (Ident){$5, L(@5)};
      $$->seq_chunk = $8;
    }
  | SEQUENCE IDENT ',' CHUNK expr {
      $$ = NEW(Decl); $$->kind = D_SEQUENCE; $$->loc = L(@1);
      $$->seq_tokens = (Ident){$2, L(@2)};
      $$->seq_chunk = $5;
    }
  | role ident_list ':' DTYPE '[' shape_list ']' opt_optional {
      $$ = NEW(Decl); $$->kind = D_TENSOR; $$->loc = L(@1);
      $$->role = (Role)$1; $$->names = $2; $$->dtype = $4; $$->dtype_loc = L(@4);
      $$->shape = $6; $$->optional = $8;
    }
  | PARAM IDENT ':' DTYPE opt_default {
      $$ = NEW(Decl); $$->kind = D_PARAM; $$->loc = L(@1);
      $$->name = (Ident){$2, L(@2)}; $$->dtype = $4; $$->dtype_loc = L(@4); $$->value = $5;
    }
  | KERNEL IDENT OVER '(' axis_list ')' opt_threads opt_per_sm '{' stmts '}' {
      $$ = NEW(Decl); $$->kind = D_KERNEL; $$->loc = L(@1);
      $$->name = (Ident){$2, L(@2)}; $$->axes = $5; $$->threads = $7; $$->per_sm = $8; $$->body = $10;
    }
  | ENTRY IDENT '=' stage_list {
      $$ = NEW(Decl); $$->kind = D_ENTRY; $$->loc = L(@1);
      $$->name = (Ident){$2, L(@2)}; $$->names = $4;
    }
  | RANKS IDENT {
      $$ = NEW(Decl); $$->kind = D_RANKS; $$->loc = L(@1);
      $$->name = (Ident){$2, L(@2)};
    }
  | RANKS IDENT ',' IDENT IDENT {
      /* `fragments` is a name only here, not a keyword */
      if (strcmp($4, "fragments") != 0)
        diag_error(pc->diag, L(@4), "expected `fragments NAME` after the ranks' dim, got '%s'", $4);
      $$ = NEW(Decl); $$->kind = D_RANKS; $$->loc = L(@1);
      $$->name = (Ident){$2, L(@2)};
      $$->frags = (Ident){$5, L(@5)};
    }
  | EXCHANGE IDENT '=' IDENT '(' IDENT xchg_args ')' ARROW IDENT {
      $$ = NEW(Decl); $$->kind = D_EXCHANGE; $$->loc = L(@1);
      $$->name = (Ident){$2, L(@2)};
      $$->xop = (Ident){$4, L(@4)};
      $$->xsrc = (Ident){$6, L(@6)};
      $$->xargs = $7;
      $$->xdst = (Ident){$10, L(@10)};
    }
  | OPTION option_name '=' IDENT IN '(' ident_list ')' prefer_list {
      $$ = NEW(Decl); $$->kind = D_OPTION; $$->loc = L(@1);
      $$->name = (Ident){$2, L(@2)};
      $$->value = mk_expr(pc, E_NAME, L(@4)); $$->value->name = $4;
      $$->names = $7;
      $$->prefers = $9;
    }
  | REQUIRE expr {
      $$ = NEW(Decl); $$->kind = D_REQUIRE; $$->loc = L(@1);
      $$->value = $2; $$->value_loc = L(@2);
    }
  | if_decl { $$ = $1; }
  ;

/* xchg_args := ("," expr)*: an exchange's numbers after its source (halo's widths) */
xchg_args
  : %empty { memset(&$$, 0, sizeof $$); }
  | xchg_args ',' expr { $$ = $1; ptrvec_push(pc->arena, &$$, $3); }
  ;

/* prefer_list := ("prefer" NAME "when" expr)*: how the runtime chooses the
 * option when the caller leaves it unset (first true clause wins) */
prefer_list
  : %empty { memset(&$$, 0, sizeof $$); }
  | prefer_list PREFER IDENT WHEN expr {
      Prefer *r = NEW(Prefer);
      r->value = (Ident){$3, L(@3)}; r->cond = $5; r->cond_loc = L(@5); r->loc = L(@2);
      $$ = $1; ptrvec_push(pc->arena, &$$, r);
    }
  ;

/* option_name := name | "save" (a role keyword that also names the usual
 * option choosing what a forward keeps for its backward) */
option_name
  : IDENT  { $$ = $1; }
  | SAVE   { $$ = "save"; }
  ;

/* if_decl := "if" expr "{" decl* "}" ["else" (if_decl | "{" decl* "}")] */
if_decl
  : IF expr '{' decls '}' else_decls {
      $$ = NEW(Decl); $$->kind = D_IF; $$->loc = L(@1);
      $$->value = $2; $$->body = $4; $$->else_body = $6;
      $$->depth = nested_block(pc, &$$->body, &$$->else_body, 0, $$->loc);
    }
  ;

else_decls
  : %empty                 { memset(&$$, 0, sizeof $$); }
  | ELSE '{' decls '}'     { $$ = $3; }
  | ELSE if_decl           { $$ = one(pc, $2); }
  ;

role
  : IN   { $$ = ROLE_IN; }
  | OUT  { $$ = ROLE_OUT; }
  | TEMP { $$ = ROLE_TEMP; }
  | SAVE { $$ = ROLE_SAVE; }
  ;

opt_optional
  : %empty    { $$ = 0; }
  | OPTIONAL  { $$ = 1; }
  ;

opt_default
  : %empty    { $$ = NULL; }
  | '=' expr  { $$ = $2; }
  ;

opt_threads
  : %empty        { $$ = NULL; }
  | THREADS expr  { $$ = $2; }
  ;

/* the blocks of the kernel one multiprocessor is planned to hold */
opt_per_sm
  : %empty       { $$ = NULL; }
  | PER_SM expr  { $$ = $2; }
  ;

const_list
  : const_item                 { $$ = one(pc, $1); }
  | const_list ',' const_item  { $$ = $1; ptrvec_push(pc->arena, &$$, $3); }
  ;

const_item
  : IDENT '=' expr {
      $$ = NEW(Decl); $$->kind = D_CONST; $$->loc = L(@1);
      $$->name = (Ident){$1, L(@1)}; $$->value = $3;
    }
  ;

ident_list
  : IDENT                 { $$ = one(pc, mk_ident(pc, $1, L(@1))); }
  | ident_list ',' IDENT  { $$ = $1; ptrvec_push(pc->arena, &$$, mk_ident(pc, $3, L(@3))); }
  ;

/* An entry's stages: names, and groups `rounds(a, b)` / `rounds reverse(a, b)`
 * (`rounds` is a name only here, not a keyword): each stage of a group
 * carries the group's number (from 1, in the entry's order). */
stage_list
  : stage_group                 { $$ = $1; }
  | stage_list ',' stage_group  {
      $$ = $1;
      int g = 0;
      for (int i = 0; i < $$.len; i++)
        if (((StageRef *)$$.items[i])->group > g) g = ((StageRef *)$$.items[i])->group;
      for (int i = 0; i < $3.len; i++) {
        StageRef *st = $3.items[i];
        if (st->group) st->group = g + 1;
        ptrvec_push(pc->arena, &$$, st);
      }
    }
  ;

stage_group
  : IDENT  { $$ = one(pc, mk_stage(pc, $1, L(@1), 0, 0)); }
  | IDENT opt_reverse '(' ident_list ')' {
      if (strcmp($1, "rounds") != 0)
        diag_error(pc->diag, L(@1), "expected a stage name or `rounds(...)` in the entry, got '%s(...)'", $1);
      $$ = (PtrVec){0};
      for (int i = 0; i < $4.len; i++) {
        const Ident *id = $4.items[i];
        ptrvec_push(pc->arena, &$$, mk_stage(pc, id->name, id->loc, 1, $2));
      }
    }
  ;

/* axis := name "in" ("chunks" | "docs" | expr) */
axis_list
  : axis                { $$ = one(pc, $1); }
  | axis_list ',' axis  { $$ = $1; ptrvec_push(pc->arena, &$$, $3); }
  ;

axis
  : IDENT IN CHUNKS  { $$ = NEW(Axis); $$->kind = AX_CHUNKS; $$->var = (Ident){$1, L(@1)}; $$->loc = L(@3); }
  | IDENT IN DOCS    { $$ = NEW(Axis); $$->kind = AX_DOCS; $$->var = (Ident){$1, L(@1)}; $$->loc = L(@3); }
  | IDENT IN expr    { $$ = NEW(Axis); $$->kind = AX_RANGE; $$->var = (Ident){$1, L(@1)}; $$->extent = $3; $$->loc = $3->loc; }
  ;

stmts
  : %empty       { memset(&$$, 0, sizeof $$); }
  | stmts stmt   { $$ = $1; ptrvec_push(pc->arena, &$$, $2); }
  | stmts error  { $$ = $1; }
  ;

/* stmt := name "=" expr
 *       | "store" name "[" indices "]" "=" expr
 *       | "for" name "in" ["reverse"] "chunks" ["(" name ")"] ["carry" names] "{" stmt* "}"
 *       | "for" name "in" "range" "(" expr ")" ["carry" names] "{" stmt* "}" */
stmt
  : IDENT '=' expr {
      $$ = NEW(Stmt); $$->kind = S_ASSIGN; $$->loc = L(@1);
      $$->name = $1; $$->name_loc = L(@1); $$->value = $3;
    }
  | STORE IDENT '[' index_list ']' '=' expr {
      $$ = NEW(Stmt); $$->kind = S_STORE; $$->loc = L(@1);
      Expr *t = mk_expr(pc, E_INDEX, L(@2));
      t->name = $2; t->args = $4;
      t->a = mk_expr(pc, E_NAME, L(@2)); t->a->name = $2;
      $$->target = t; $$->value = $7;
    }
  | FOR IDENT IN opt_reverse CHUNKS '(' IDENT ')' opt_carry '{' stmts '}' {
      $$ = NEW(Stmt); $$->kind = S_FOR; $$->loc = L(@1);
      $$->name = $2; $$->name_loc = L(@2); $$->reverse = $4;
      $$->doc = $7; $$->doc_loc = L(@7); $$->carries = $9; $$->body = $11;
      $$->depth = nested_block(pc, &$$->body, NULL, 1, $$->loc);
    }
  | FOR IDENT IN opt_reverse CHUNKS opt_carry '{' stmts '}' {
      /* every chunk of every document, in order */
      $$ = NEW(Stmt); $$->kind = S_FOR; $$->loc = L(@1);
      $$->name = $2; $$->name_loc = L(@2); $$->reverse = $4;
      $$->doc = NULL; $$->doc_loc = L(@5); $$->carries = $6; $$->body = $8;
      $$->depth = nested_block(pc, &$$->body, NULL, 1, $$->loc);
    }
  | FOR IDENT IN IDENT '(' expr ')' opt_carry '{' stmts '}' {
      /* a counted loop: `range` is a name only here, not a keyword */
      if (strcmp($4, "range") != 0)
        diag_error(pc->diag, L(@4), "expected `chunks` or `range(N)` after 'in', got '%s'", $4);
      $$ = NEW(Stmt); $$->kind = S_FOR; $$->loc = L(@1);
      $$->name = $2; $$->name_loc = L(@2);
      $$->value = $6; $$->doc_loc = L(@4); $$->carries = $8; $$->body = $10;
      $$->depth = nested_block(pc, &$$->body, NULL, 1, $$->loc);
    }
  | FOR IDENT ',' IDENT IN opt_reverse IDENT '(' IDENT ')' opt_carry '{' stmts '}' {
      /* `for r, f in [reverse] before(n)` / `after(n)`: the fragments before
       * (after) fragment n in its document, on other ranks (a
       * context-parallel program), in document order or reversed */
      int which = !strcmp($7, "before") ? 1 : !strcmp($7, "after") ? 2 : 0;
      if (!which)
        diag_error(pc->diag, L(@7), "expected `before(n)` or `after(n)` after 'in' for a loop over two names, got '%s'", $7);
      $$ = NEW(Stmt); $$->kind = S_FOR; $$->loc = L(@1);
      $$->name = $2; $$->name_loc = L(@2);
      $$->name2 = $4; $$->name2_loc = L(@4); $$->reverse = $6;
      $$->doc = $9; $$->doc_loc = L(@9); $$->before = which ? which : 1;
      $$->carries = $11; $$->body = $13;
      $$->depth = nested_block(pc, &$$->body, NULL, 1, $$->loc);
    }
  | FOR IDENT ',' IDENT IN opt_reverse IDENT '(' ')' opt_carry '{' stmts '}' {
      /* `for r, f in [reverse] ends()`: the fragment that ends each
       * document, over every rank, in document order (a context-parallel
       * program) */
      if (strcmp($7, "ends") != 0)
        diag_error(pc->diag, L(@7), "expected `ends()` after 'in' for a loop over two names without a fragment, got "
                   "'%s()'", $7);
      $$ = NEW(Stmt); $$->kind = S_FOR; $$->loc = L(@1);
      $$->name = $2; $$->name_loc = L(@2);
      $$->name2 = $4; $$->name2_loc = L(@4); $$->reverse = $6;
      $$->doc_loc = L(@7); $$->before = 3;
      $$->carries = $10; $$->body = $12;
      $$->depth = nested_block(pc, &$$->body, NULL, 1, $$->loc);
    }
  | if_stmt { $$ = $1; }
  ;

/* if_stmt := "if" expr "{" stmt* "}" ["else" (if_stmt | "{" stmt* "}")] */
if_stmt
  : IF expr '{' stmts '}' else_stmts {
      $$ = NEW(Stmt); $$->kind = S_IF; $$->loc = L(@1);
      $$->value = $2; $$->body = $4; $$->else_body = $6;
      $$->depth = nested_block(pc, &$$->body, &$$->else_body, 1, $$->loc);
    }
  ;

else_stmts
  : %empty                 { memset(&$$, 0, sizeof $$); }
  | ELSE '{' stmts '}'     { $$ = $3; }
  | ELSE if_stmt           { $$ = one(pc, $2); }
  ;

opt_reverse
  : %empty   { $$ = 0; }
  | REVERSE  { $$ = 1; }
  ;

opt_carry
  : %empty            { memset(&$$, 0, sizeof $$); }
  | CARRY ident_list  { $$ = $2; }
  ;

expr
  : expr '+' expr   { $$ = mk_binary(pc, '+', $1, $3, L(@2)); }
  | expr '-' expr   { $$ = mk_binary(pc, '-', $1, $3, L(@2)); }
  | expr '*' expr   { $$ = mk_binary(pc, '*', $1, $3, L(@2)); }
  | expr '/' expr   { $$ = mk_binary(pc, '/', $1, $3, L(@2)); }
  | expr '%' expr   { $$ = mk_binary(pc, '%', $1, $3, L(@2)); }
  | expr '@' expr   { $$ = mk_binary(pc, '@', $1, $3, L(@2)); }
  | expr '<' expr   { $$ = mk_binary(pc, '<', $1, $3, L(@2)); }
  | expr '>' expr   { $$ = mk_binary(pc, '>', $1, $3, L(@2)); }
  | expr LE expr    { $$ = mk_binary(pc, LE, $1, $3, L(@2)); }
  | expr GE expr    { $$ = mk_binary(pc, GE, $1, $3, L(@2)); }
  | expr EQ expr    { $$ = mk_binary(pc, EQ, $1, $3, L(@2)); }
  | expr NE expr    { $$ = mk_binary(pc, NE, $1, $3, L(@2)); }
  | expr ANDAND expr { $$ = mk_binary(pc, ANDAND, $1, $3, L(@2)); }
  | expr OROR expr  { $$ = mk_binary(pc, OROR, $1, $3, L(@2)); }
  | expr OR expr {
      /* `load x[...] or default`: the default of an optional tensor;
       * anything else is left for semantic analysis to report */
      if ($1->kind == E_LOAD && !$1->b) {
        $1->b = $3;
        $$ = nested(pc, $1);
      } else {
        $$ = mk_binary(pc, OR, $1, $3, L(@2));
      }
    }
  | '-' expr %prec UMINUS { $$ = mk_expr(pc, E_UNARY, L(@1)); $$->op = '-'; $$->a = $2; $$ = nested(pc, $$); }
  | '!' expr              { $$ = mk_expr(pc, E_UNARY, L(@1)); $$->op = '!'; $$->a = $2; $$ = nested(pc, $$); }
  | expr AS DTYPE         { $$ = mk_expr(pc, E_CAST, L(@2)); $$->a = $1; $$->dtype = $3; $$ = nested(pc, $$); }
  | postfix               { $$ = $1; }
  ;

postfix
  : primary                          { $$ = $1; }
  | postfix '[' index_list ']'       { $$ = mk_expr(pc, E_INDEX, L(@2)); $$->a = $1; $$->args = $3; $$ = nested(pc, $$); }
  | postfix '.' IDENT {
      if (strcmp($3, "T") != 0)
        diag_error(pc->diag, L(@3), "unknown tile attribute '.%s' (only '.T', the transpose, exists)", $3);
      $$ = mk_expr(pc, E_TRANSPOSE, L(@3)); $$->a = $1; $$ = nested(pc, $$);
    }
  | IDENT '(' args ')'               { $$ = mk_expr(pc, E_CALL, L(@1)); $$->name = $1; $$->args = $3; $$ = nested(pc, $$); }
  ;

primary
  : INT    { $$ = mk_number(pc, E_INT, $1, L(@1)); }
  | FLOAT  { $$ = mk_number(pc, E_FLOAT, $1, L(@1)); }
  | IDENT  { $$ = mk_expr(pc, E_NAME, L(@1)); $$->name = $1; }
  | SAVE   { $$ = mk_expr(pc, E_NAME, L(@1)); $$->name = "save"; } /* the option `save` in a condition */
  | '(' expr ')'  { $$ = $2; }
  | LOAD IDENT '[' index_list ']' {
      $$ = mk_expr(pc, E_LOAD, L(@2)); $$->name = $2; $$->args = $4;
      $$->loc.col = @1.first_column; /* underline from 'load' to the name */
      $$ = nested(pc, $$);
    }
  ;

args
  : %empty     { memset(&$$, 0, sizeof $$); }
  | expr_list  { $$ = $1; }
  ;

expr_list
  : expr                { $$ = one(pc, $1); }
  | expr_list ',' expr  { $$ = $1; ptrvec_push(pc->arena, &$$, $3); }
  ;

/* extents: expressions, or `chunks` (one entry per chunk of the sequence) */
shape_list
  : shape_item                 { $$ = one(pc, $1); }
  | shape_list ',' shape_item  { $$ = $1; ptrvec_push(pc->arena, &$$, $3); }
  ;

shape_item
  : expr    { $$ = $1; }
  | CHUNKS  { $$ = mk_expr(pc, E_NAME, L(@1)); $$->name = "chunks"; }
  ;

index_list
  : index_item                 { $$ = one(pc, $1); }
  | index_list ',' index_item  { $$ = $1; ptrvec_push(pc->arena, &$$, $3); }
  ;

index_item
  : expr  { $$ = $1; }
  | ':'   { $$ = mk_expr(pc, E_SLICE, L(@1)); }
  | NONE  { $$ = mk_expr(pc, E_NONE, L(@1)); }
  ;

%%

static void cake_yyerror(CAKE_YYLTYPE *l, void *scanner, struct ParseCtx *pc, const char *msg) {
  (void)scanner;
  /* the parser's stack is full: only deep nesting (parentheses, unary operators, blocks) gets there */
  if (!strcmp(msg, "memory exhausted"))
    diag_error(pc->diag, parse_loc(pc, l), "expression or block nested too deeply (the parser's stack holds %d levels)", YYMAXDEPTH);
  else
    diag_error(pc->diag, parse_loc(pc, l), "%s", msg);
}
