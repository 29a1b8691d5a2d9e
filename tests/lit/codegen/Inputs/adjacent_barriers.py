#!/usr/bin/env python3
"""adjacent_barriers.py < MLIR: print each block barrier that a barrier
earlier in the same block already covers (only ops that a barrier does not
order lie between them: register arithmetic, read-only table loads,
asynchronous copies issued, and regions holding only those), then how many.
The rules are lowering/mlb.c's, written again from the text."""
import re
import sys

NEUTRAL = re.compile(r'^\s*(%\S+ = )?(arith\.|math\.|llvm\.mlir\.constant|llvm\.mlir\.undef|'
                     r'llvm\.mlir\.poison|llvm\.extractvalue|llvm\.insertvalue|llvm\.extractelement|'
                     r'llvm\.insertelement|llvm\.bitcast|llvm\.getelementptr|llvm\.addrspacecast|'
                     r'llvm\.inttoptr|llvm\.ptrtoint|nvvm\.read\.ptx\.sreg\.|gpu\.thread_id|gpu\.block_id|'
                     r'scf\.yield|nvvm\.cp\.async\.shared\.global|nvvm\.cp\.async\.commit\.group)')
# the runtime's tables: i32 words or rows of 4 from device memory (looser than the compiler's rule,
# which knows which loads are of the tables: a test of it, not a second definition)
TABLE_LOAD = re.compile(r'llvm\.load .*: !llvm\.ptr<1> -> (i32|vector<4xi32>)\s')
# one entry per open region: [line of the last barrier at this level or None, anything ordered seen inside]
stack = [[None, False]]
pairs = 0
for n, line in enumerate(sys.stdin, 1):
    s = line.strip()
    if not s:
        continue
    if s.startswith('}'):
        inner = stack.pop()
        if not stack:
            stack = [[None, False]]
        if inner[1]:  # something ordered (or a barrier) inside: the enclosing barrier no longer covers
            stack[-1][0] = None
            stack[-1][1] = True
        if s.endswith('{'):  # } else {
            stack.append([None, False])
        continue
    if 'gpu.barrier' in s:
        if stack[-1][0] is not None:
            print(f'barrier at line {n} is covered by the one at line {stack[-1][0]}')
            pairs += 1
        stack[-1][0] = n
        stack[-1][1] = True
        continue
    neutral = NEUTRAL.match(s) or TABLE_LOAD.search(line)
    if not neutral and not re.match(r'^(%\S+ = )?scf\.(for|if)\b', s):
        stack[-1][0] = None
        stack[-1][1] = True
    if s.endswith('{'):
        stack.append([None, False])
print(f'{pairs} redundant barriers')
