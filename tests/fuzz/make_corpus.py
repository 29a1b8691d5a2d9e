#!/usr/bin/env python3
"""make_corpus.py - regenerate the seed corpora of tests/fuzz.

  tests/fuzz/make_corpus.py [--cakec build/bin/cakec] [compile] [package]

compile: every .cake under specs/ and tests/, without its comment lines
         (lit's RUN and CHECK lines), into corpus/compile/.
package: manifests of small packages compiled by cakec (sm_90a and one
         package for every target), minified, into corpus/package/. Each
         listed file's sha256 and size are rewritten for the stub content
         fuzz_package writes for it ("cake fuzz stub: PATH\\n"), so that the
         seeds load in the harness without the binaries.
Files in the corpora that this script does not write (inputs kept from
past findings, named finding-*) are left alone.
"""
import argparse
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "fuzz")

# (seed name, spec, cakec arguments)
PACKAGES = [
    ("first_sm90a", "specs/first/first.cake", ["--arch=sm_90a"]),
    ("first_all_targets", "specs/first/first.cake", []),
    ("aux_sm90a", "tests/lit/package/Inputs/aux.cake", ["--arch=sm_90a"]),
    ("kda_fwd_softplus", "specs/kda/kda_fwd.cake",
     ["--arch=sm_90a", "--option", "gate=softplus", "--option", "qk_norm=true", "--option", "beta_logits=true",
      "--option", "vblock=v32"]),
    ("kda_train_safe", "specs/kda/kda_train.cake",
     ["--arch=sm_90a", "--option", "gate=safe", "--option", "qk_norm=true", "--option", "beta_logits=true",
      "--option", "save=states"]),
]


def stub(path):
    return ("cake fuzz stub: %s\n" % path).encode()


def clean_dir(d):
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if not f.startswith("finding-"):
            os.remove(os.path.join(d, f))


def compile_corpus():
    out = os.path.join(HERE, "corpus", "compile")
    clean_dir(out)
    specs = sorted(glob.glob(os.path.join(ROOT, "specs", "**", "*.cake"), recursive=True) +
                   glob.glob(os.path.join(ROOT, "tests", "**", "*.cake"), recursive=True))
    total = 0
    for s in specs:
        rel = os.path.relpath(s, ROOT)
        if rel.startswith("tests/fuzz/"):
            continue
        lines = [l.rstrip() for l in open(s, encoding="utf-8") if not l.lstrip().startswith("//")]
        text = "\n".join(l for l in lines).strip() + "\n"
        name = rel.replace("/", "_")
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            f.write(text)
        total += len(text)
    print("compile corpus: %d specs, %d bytes" % (len(specs), total))


def package_corpus(cakec):
    out = os.path.join(HERE, "corpus", "package")
    clean_dir(out)
    total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec, args in PACKAGES:
            pkg = os.path.join(tmp, name)
            cmd = [cakec, os.path.join(ROOT, spec), "--emit=package", "--cache-dir=", "-o", pkg] + args
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit("make_corpus: %s failed:\n%s" % (" ".join(cmd), r.stderr))
            m = json.load(open(os.path.join(pkg, "manifest.json")))
            for f in m["files"]:
                data = stub(f["path"])
                f["sha256"] = hashlib.sha256(data).hexdigest()
                f["bytes"] = len(data)
            text = json.dumps(m, separators=(",", ":"), ensure_ascii=False) + "\n"
            with open(os.path.join(out, name + ".json"), "w", encoding="utf-8") as f:
                f.write(text)
            total += len(text)
            shutil.rmtree(pkg)
    print("package corpus: %d manifests, %d bytes" % (len(PACKAGES), total))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cakec", default=os.path.join(ROOT, "build", "bin", "cakec"))
    ap.add_argument("what", nargs="*", default=["compile", "package"])
    a = ap.parse_args()
    if "compile" in a.what:
        compile_corpus()
    if "package" in a.what:
        package_corpus(a.cakec)


if __name__ == "__main__":
    main()
