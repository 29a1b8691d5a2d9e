"""same_files.py ONE ALL SUFFIX: every file of directory ONE whose name ends
in SUFFIX is in directory ALL with the same bytes (at least one such file)."""
import os
import sys

one, whole, suffix = sys.argv[1:4]
names = sorted(n for n in os.listdir(one) if n.endswith(suffix))
if not names:
    sys.exit(f"no {suffix} file in {one}")
for n in names:
    with open(os.path.join(one, n), "rb") as a:
        mine = a.read()
    path = os.path.join(whole, n)
    if not os.path.exists(path):
        sys.exit(f"{n} is missing from {whole}")
    with open(path, "rb") as b:
        if b.read() != mine:
            sys.exit(f"{n} differs between {one} and {whole}")
