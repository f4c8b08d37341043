"""Import check of a model environment (the `checks.<system>.<name>-import` derivations).

Usage: python import-check.py DIST [DIST ...]
Imports every top-level module of the named distributions (from their installed metadata:
top_level.txt, else the RECORD file list) and exits 1 listing each failure. Runs inside the
model's Python environment (3.8+), so it uses the standard library only.
"""

import importlib
import importlib.metadata as md
import re
import sys


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def top_modules(dist):
    tops = (dist.read_text("top_level.txt") or "").split()
    if not tops:
        for f in dist.files or ():
            first = f.parts[0]
            if first.endswith((".dist-info", ".data")) or first in ("..", "bin"):
                continue
            name = first[:-3] if first.endswith(".py") else first
            if name.isidentifier() and name not in tops and (len(f.parts) > 1 or first.endswith(".py")):
                tops.append(name)
    return sorted(m for m in tops if m.isidentifier() and not m.startswith("_"))


def main(argv):
    wanted = {norm(a) for a in argv}
    found = {}
    for dist in md.distributions():
        key = norm(dist.metadata["Name"] or "")
        if key in wanted:
            found.setdefault(key, top_modules(dist))
    failures = [f"{d}: not installed" for d in sorted(wanted - set(found))]
    count = 0
    for d in sorted(found):
        for mod in found[d]:
            count += 1
            try:
                importlib.import_module(mod)
            except BaseException as exc:  # report every failure, keep going
                failures.append(f"{mod} ({d}): {type(exc).__name__}: {str(exc)[:300]}")
    for f in failures:
        print("import-check: FAILED " + f)
    print(f"import-check: {count} modules of {len(wanted)} distributions, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
