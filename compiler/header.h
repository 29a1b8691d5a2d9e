/* header.h - typed C launchers (cakec --emit=header).
 *
 * Contract: emit_headers() writes, for each program among `progs` (every
 * analysed variant, possibly of several programs), one header-only C file:
 * enums for its options, structs of its dims, params and bindable tensors,
 * and static inline plan / validate / launch functions over the generic
 * runtime API of cake_runtime.h. Deterministic: the same programs give the
 * same text.
 */
#ifndef CAKE_HEADER_H
#define CAKE_HEADER_H

#include "cir.h"

void emit_headers(Buf *out, CirProgram **progs, int n, Arena *arena);

#endif
