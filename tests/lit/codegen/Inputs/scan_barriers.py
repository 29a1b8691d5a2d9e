#!/usr/bin/env python3
"""scan_barriers.py < MLIR: for each scan loop (an scf.for whose only
iteration value is the i32 buffer phase), print its kernel's name (without
the digest) and how many block barriers its body holds, at any depth: the
barriers each step of the scan passes."""
import re
import sys

SCAN = re.compile(r'scf\.for .* iter_args\(%\S+ = %\S+\) -> \(i32\)')
FUNC = re.compile(r'gpu\.func @(\w+?)(_[0-9a-f]{20})?\(')
depth = 0
kernel = '?'

scans = []  # [depth at which the scan's body opened, barriers]
for line in sys.stdin:
    s = line.strip()
    if not s:
        continue
    m = FUNC.search(s)
    if m:
        kernel = m.group(1)
    if 'gpu.barrier' in s:
        for sc in scans:
            sc[1] += 1
    if s.startswith('}'):
        depth -= 1
        while scans and depth < scans[-1][0]:
            print(f'{kernel}: scan step: {scans.pop()[1]} barriers')
    if s.endswith('{'):
        if SCAN.search(s):
            scans.append([depth + 1, 0])
        depth += 1
