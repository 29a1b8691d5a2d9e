/* cake_limits.h - the limits of the language and of the compiler, in one place.
 *
 * Contract: every fixed capacity that user input can reach is named here and
 * is enforced where the input is read, with a located diagnostic (or is
 * sized from the input). dsl/README.md states each limit; the runtime
 * (runtime/) applies the same figures to the packages it loads.
 */
#ifndef CAKE_LIMITS_H
#define CAKE_LIMITS_H

enum {
  CAKE_MAX_OPTIONS = 16,       /* option declarations per program */
  CAKE_MAX_VARIANTS = 256,     /* variants (combinations of option values) compiled per program */
  CAKE_MAX_TENSORS = 256,      /* tensors per program */
  CAKE_MAX_KERNEL_ARGS = 64,   /* arguments per kernel (tensors, tables, dims, params) */
  CAKE_MAX_CARRIES = 16,       /* values carried by one scan */
  CAKE_MAX_TARGETS = 8,        /* targets per compilation (--arch) */
  CAKE_MAX_EXPR_DEPTH = 1000,  /* operators nested in one expression, and operations in a chain of values */
  CAKE_MAX_EXTENT = 2147483647, /* a constant tensor extent or grid extent: 2^31 - 1 */
  CAKE_MAX_TILE_ELEMS = 1 << 20, /* elements of one tile value */
  CAKE_MAX_NAME = 128,         /* characters of a name (kernel symbols and file names are built from them) */
  CAKE_MAX_OUTPUT_PATH = 2048, /* characters of the output directory's path */
  CAKE_MAX_REQUIRES = 64,      /* `require` declarations that apply to one variant of a program */
  CAKE_MAX_REQUIRE_TEXT = 1024, /* characters of one requirement's text (as the manifest records it) */
  CAKE_MAX_REQUIRE_DEPTH = 64,
  CAKE_MAX_PREFERS = 16,       /* `prefer` clauses of one option */ /* nesting of one requirement's expression (parentheses, unary operators) */
};

/* The product of a tensor's constant extents (its dims excluded): 2^40.
 * With it, element and byte offsets of any window fit in 64 bits. */
#define CAKE_MAX_TENSOR_CONST_ELEMS (1LL << 40)

#endif
