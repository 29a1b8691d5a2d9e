#!/usr/bin/env python3
"""check_layers.py DIR: the C files of DIR call each other in one direction.

Finds each file's external functions (defined at the start of a line, not
static), then which other files of DIR call them, and reports every cycle
in that file graph (a file that calls into a file that calls back). Exits
1 with the cycles listed, 0 with the layers from the bottom up. A text
scan, not a parser: a name used in a comment counts as a call."""
import glob
import os
import re
import sys

DEF = re.compile(r'^(?!static\b)[A-Za-z][\w \*]*?\b(\w+)\(([^;{]*)\)\s*\{', re.M)


def graph(folder):
    files = sorted(glob.glob(os.path.join(folder, '*.c')))
    text = {f: open(f, encoding='utf-8').read() for f in files}
    owner = {}
    for f in files:
        for m in DEF.finditer(text[f]):
            owner[m.group(1)] = f
    calls = {f: set() for f in files}
    for f in files:
        for name, g in owner.items():
            if g != f and re.search(r'\b' + name + r'\s*\(', text[f]):
                calls[f].add(g)
    return calls


def cycles(calls):
    state, stack, found = {}, [], []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(calls[u]):
            if state.get(v) == 1:
                found.append(stack[stack.index(v):] + [v])
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = 2

    for u in sorted(calls):
        if u not in state:
            visit(u)
    return found


def layers(calls):
    level = {}

    def depth(u):
        if u not in level:
            level[u] = 1 + max((depth(v) for v in calls[u]), default=-1)
        return level[u]

    for u in calls:
        depth(u)
    return level


def main():
    folder = sys.argv[1]
    calls = graph(folder)
    found = cycles(calls)
    if found:
        for c in found:
            print('cycle: ' + ' -> '.join(os.path.basename(f) for f in c))
        return 1
    level = layers(calls)
    for lv in range(max(level.values()) + 1):
        names = sorted(os.path.basename(f) for f, n in level.items() if n == lv)
        print(f'layer {lv}: ' + ' '.join(names))
    return 0


if __name__ == '__main__':
    sys.exit(main())
