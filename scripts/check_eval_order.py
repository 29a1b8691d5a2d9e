#!/usr/bin/env python3
"""check_eval_order.py - find unsequenced MLIR builder calls in lowering/
(and unsequenced diagnostics or CIR instructions in compiler/, with --dir compiler).

C leaves the order in which a call's arguments (and the operands of most
binary operators, and the elements of an initializer list) are evaluated
unspecified. When two of them create MLIR operations, the order of the
created operations, and with it the SSA numbering, the kernel names and the
PTX, depends on the C compiler that built Cake. This script reads clang's
AST of every lowering/*.c, computes which functions create operations
(transitively, from the MLIR C API calls that create, insert or modify
operations, blocks and regions, and from calls through function pointers),
and reports every call, operator or initializer list in which two or more
parts create operations. Each must be split into one builder call per
statement.

usage: scripts/check_eval_order.py [--clang clang-22] [--build build] [FILES...]
(FILES: report only these; every lowering/*.c is read for the call graph)
Exit status 1 when something is found.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

# MLIR C API functions with effects on the IR being built (or on its order).
SEEDS = {
    "mlirOperationCreate", "mlirBlockAppendOwnedOperation", "mlirBlockInsertOwnedOperation",
    "mlirBlockInsertOwnedOperationAfter", "mlirBlockInsertOwnedOperationBefore",
    "mlirRegionCreate", "mlirBlockCreate", "mlirRegionAppendOwnedBlock", "mlirRegionInsertOwnedBlock",
    "mlirBlockAddArgument", "mlirOperationSetDiscardableAttributeByName",
    "mlirOperationSetInherentAttributeByName", "mlirOperationSetAttributeByName",
    "mlirModuleCreateEmpty", "mlirModuleCreateParse",
    # the compiler's own ordered effects: diagnostics and CIR instructions (numbered as created)
    "diag_error", "diag_note", "diag_verror", "diag_plain", "cir_inst_new", "cir_block_push",
}
# Binary operators whose operands are sequenced (or not evaluated both).
SEQUENCED = {",", "&&", "||"}


def annotate(node, state):
    """Walk in document order, giving every source location its file and line
    (the JSON dump omits them when unchanged from the previous location)."""
    if isinstance(node, dict):
        if "offset" in node:
            if "file" in node:
                state["file"] = node["file"]
            if "line" in node:
                state["line"] = node["line"]
            node["_file"] = state["file"]
            node["_line"] = state["line"]
        for v in node.values():
            annotate(v, state)
    elif isinstance(node, list):
        for v in node:
            annotate(v, state)


def begin(node):
    r = node.get("range", {}).get("begin", {})
    if "expansionLoc" in r:
        r = r["expansionLoc"]
    return r.get("_file"), r.get("_line")


def callee_name(call):
    """The called function's name, or None for a call through a pointer."""
    inner = call.get("inner", [])
    if not inner:
        return None
    stack = [inner[0]]
    while stack:
        n = stack.pop()
        if n.get("kind") == "DeclRefExpr":
            d = n.get("referencedDecl", {})
            if d.get("kind") == "FunctionDecl":
                return d.get("name")
            return None
        if n.get("kind") in ("ImplicitCastExpr", "ParenExpr"):
            stack.extend(n.get("inner", []))
    return None


def walk(node):
    if isinstance(node, dict):
        yield node
        for v in node.get("inner", []):
            yield from walk(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clang", default=os.environ.get("CAKE_CLANG", "clang-22"))
    ap.add_argument("--build", default="build", help="a configured build (for dsl/parser.h)")
    ap.add_argument("--llvm", default="/usr/lib/llvm-22")
    ap.add_argument("--dir", default="lowering", help="the folder whose *.c are read (lowering, compiler)")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = sorted(glob.glob(os.path.join(root, a.dir, "*.c")))
    report = a.files or files  # every file is read for the call graph
    flags = ["-fsyntax-only", "-Xclang", "-ast-dump=json", "-std=gnu11",
             "-I" + os.path.join(root, "lowering"), "-I" + os.path.join(root, "compiler"),
             "-I" + os.path.join(root, "dsl"), "-I" + os.path.join(a.build, "dsl"),
             "-isystem", os.path.join(a.llvm, "include")]
    funcs = {}  # name -> (body node, file)
    for f in files:
        out = subprocess.run([a.clang] + flags + [f], capture_output=True, text=True)
        if out.returncode != 0:
            sys.stderr.write(out.stderr)
            sys.exit(2)
        ast = json.loads(out.stdout)
        annotate(ast, {"file": f, "line": 0})
        for d in ast.get("inner", []):
            if d.get("kind") != "FunctionDecl":
                continue
            body = [c for c in d.get("inner", []) if c.get("kind") == "CompoundStmt"]
            if body:
                funcs[d["name"]] = (body[0], d.get("loc", {}).get("_file"))

    callees = {}
    for name, (body, _) in funcs.items():
        cs = set()
        for n in walk(body):
            if n.get("kind") == "CallExpr":
                cs.add(callee_name(n))  # None: through a pointer
        callees[name] = cs
    creating = set(SEEDS)
    changed = True
    while changed:
        changed = False
        for name, cs in callees.items():
            if name not in creating and (cs & creating or None in cs):
                creating.add(name)
                changed = True

    def creates(n):
        for m in walk(n):
            if m.get("kind") == "CallExpr":
                c = callee_name(m)
                if c is None or c in creating:
                    return True
        return False

    found = []
    own = set(os.path.realpath(f) for f in report)
    for name, (body, fname) in funcs.items():
        if fname is None or os.path.realpath(fname) not in own:
            continue
        for n in walk(body):
            k = n.get("kind")
            parts = None
            if k == "CallExpr":
                parts = n.get("inner", [])[1:]
                what = "arguments of %s()" % (callee_name(n) or "a call through a pointer")
            elif k == "InitListExpr":
                parts = n.get("inner", [])
                what = "elements of an initializer list"
            elif k in ("BinaryOperator", "CompoundAssignOperator") and n.get("opcode") not in SEQUENCED:
                parts = n.get("inner", [])
                what = "operands of '%s'" % n.get("opcode")
            if parts and sum(1 for p in parts if creates(p)) >= 2:
                f, line = begin(n)
                found.append((os.path.relpath(os.path.realpath(f), root), line, name, what))
    for f, line, fn, what in sorted(set(found)):
        print("%s:%s: in %s(): %s create operations in an unspecified order" % (f, line, fn, what))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
