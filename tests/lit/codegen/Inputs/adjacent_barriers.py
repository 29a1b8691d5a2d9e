#!/usr/bin/env python3
"""adjacent_barriers.py < MLIR: print each pair of block barriers that only
register arithmetic separates (the second one is redundant), then how many."""
import re
import sys

# ops that touch neither memory nor control flow (lowering/mlb.c's register_only)
REGISTER_ONLY = re.compile(r'^\s*(%\S+ = )?(arith\.|math\.|vector\.|llvm\.mlir\.constant|llvm\.mlir\.undef|'
                           r'llvm\.mlir\.poison|llvm\.extractvalue|llvm\.insertvalue|llvm\.extractelement|'
                           r'llvm\.insertelement|llvm\.bitcast|llvm\.getelementptr|llvm\.addrspacecast|'
                           r'llvm\.inttoptr|llvm\.ptrtoint|nvvm\.read\.ptx\.sreg\.|gpu\.thread_id|gpu\.block_id)')
last, pairs = None, 0
for n, line in enumerate(sys.stdin, 1):
    if 'gpu.barrier' in line:
        if last is not None:
            print(f'barriers at lines {last} and {n} with only register arithmetic between')
            pairs += 1
        last = n
    elif line.strip() and not REGISTER_ONLY.match(line):
        last = None
print(f'{pairs} redundant barriers')
