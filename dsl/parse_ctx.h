/* parse_ctx.h - state shared by the scanner and the parser (internal). */
#ifndef CAKE_PARSE_CTX_H
#define CAKE_PARSE_CTX_H

#include "ast.h"
#include "cake_limits.h"

typedef struct CAKE_YYLTYPE {
  int first_line, first_column, last_line, last_column;
} CAKE_YYLTYPE;
#define CAKE_YYLTYPE_IS_DECLARED 1
#define CAKE_YYLTYPE_IS_TRIVIAL 1
/* flex's bison bridge names the types without the prefix */
#define YYSTYPE CAKE_YYSTYPE
#define YYLTYPE CAKE_YYLTYPE

struct ParseCtx {
  Arena *arena;
  Diag *diag;
  const Source *src;
  Program *prog;
  void *scanner;
  int line, col;
  CAKE_YYLTYPE comment_start;
  int too_deep; /* "nested too deeply" was reported */
};

char *parse_strdup(struct ParseCtx *pc, const char *s);
DType parse_dtype_word(const char *s);
void parse_lex_error(struct ParseCtx *pc, const CAKE_YYLTYPE *l, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
Loc parse_loc(struct ParseCtx *pc, const CAKE_YYLTYPE *l);

#endif
