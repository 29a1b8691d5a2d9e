/* cake_require.h - the evaluator of `require` expressions, shared by the
 * compiler (sema checks what it writes to the manifest with it; the CPU
 * interpreter checks a run's dims) and the runtime (it validates the
 * manifest's "requires" with it and checks a plan's dims when it is
 * finalized). Plain C, no allocation, no dependency beyond libc.
 *
 * The text is the canonical form the compiler writes ("expr" in the
 * manifest): integers, decimal numbers (digits '.' digits, an optional
 * exponent), names (dims, and in requirements parameters), parentheses, and
 * the operators of Cake with their precedence, loosest first:
 *   ||    &&    < <= > >= == != (not chained)    + -    * / %    unary - !
 * Integers and dims are int64; `+ - * / %` on them are checked (an
 * overflow, a division or remainder by zero makes the whole requirement
 * false, with the reason in the message, never a crash); `/` truncates and
 * `%` takes the dividend's sign. Decimal numbers and float values (f32
 * parameters) are doubles: an operation with one computes in double (an
 * integer operand converted), `%` refuses them, a division by zero is a
 * fault as above, and NaN compares unequal to everything (`<`, `<=`, `>`,
 * `>=`, `==` are false, `!=` is true). Comparisons give
 * booleans; `! && ||` take booleans and `&&`, `||` short-circuit (so
 * `H > 0 && HV % H == 0` is simply false for H = 0). The whole expression
 * must be a boolean. At most CAKE_MAX_REQUIRE_TEXT characters and
 * CAKE_MAX_REQUIRE_DEPTH levels of nesting (cake_limits.h). */
#ifndef CAKE_REQUIRE_H
#define CAKE_REQUIRE_H

#include <stddef.h>
#include <stdint.h>

#include "cake_limits.h"

/* A name's value: an integer (dims, i32 parameters, device facts) or a
 * double (f32 parameters). */
typedef struct cake_require_value {
  int is_float;
  int64_t i;
  double f;
} cake_require_value;

/* The value of the name `name` (`len` characters, not NUL-terminated): 1
 * when the caller knows the name (then *value is set), 0 when it does not. */
typedef int (*cake_require_lookup)(void *ctx, const char *name, size_t len, cake_require_value *value);

/* The device facts a `prefer` condition may name besides dims: SMS, the
 * number of streaming multiprocessors of the device that will run it. */
#define CAKE_FACT_SMS "SMS"

enum { CAKE_REQUIRE_BAD = -1, CAKE_REQUIRE_FALSE = 0, CAKE_REQUIRE_TRUE = 1 };

/* Parses `expr` and, when `evaluate` is set, evaluates it with the values
 * `lookup` gives (without it the values are not used: only the form and the
 * names are checked). Returns
 *   CAKE_REQUIRE_TRUE   it holds;
 *   CAKE_REQUIRE_FALSE  it does not: `msg` lists the names it uses with
 *                       their values ("HV = 3, H = 2"), then the reason
 *                       when an operation failed ("... (a remainder by zero)");
 *   CAKE_REQUIRE_BAD    the text is malformed, names something `lookup`
 *                       does not know, or is too long or too deep: `msg`
 *                       says what.
 * `msg` may be NULL. */
int cake_require_eval(const char *expr, cake_require_lookup lookup, void *ctx, int evaluate, char *msg,
                      size_t msglen);

/* The same; *faulted (when not NULL) is set to 1 when the result is FALSE
 * because an operation failed (an overflow, a division or remainder by
 * zero) rather than because the comparison does not hold: the runtime's
 * `prefer` clauses treat that as an error. */
int cake_require_eval_fault(const char *expr, cake_require_lookup lookup, void *ctx, int evaluate, char *msg,
                            size_t msglen, int *faulted);

/* 1 when `expr` uses the name `name` (as a whole name, not inside a longer one). */
int cake_require_uses(const char *expr, const char *name);

/* What a broken requirement is said to be broken by, from whether it reads
 * parameters: "dims" (none), "the parameters" (no dims), "the dims and
 * parameters". The compiler's interpreter and the runtime word it alike:
 * "<subject> break 'TEXT' (LOC): VALUES". */
const char *cake_require_subject(int uses_dims, int uses_params);

#endif
