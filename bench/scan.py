"""Scanner speed against FawltyDeps on the same tree, in the same run.

Usage: python bench/scan.py [TREE] [--fawltydeps PATH] [--repeat 3] [--jobs N]

TREE defaults to $PYREPRO_BENCH_TREE, else the jarvis_leaderboard contributions folder of
``../shared/upstream``. For the whole-leaderboard figure, materialise the contributions of a
fetched jarvis_leaderboard mirror (see docs/scan.md) and pass that folder.

Prints, best of --repeat (wall seconds):
  fawltydeps      `fawltydeps --list-imports --code TREE` (a subprocess; its start-up included)
  pyrepro_cold    `pyrepro scan TREE --json` with an empty per-file cache (a subprocess, same footing)
  pyrepro_warm    the same with the cache the cold run filled
  pyrepro_thorough cold, with every file parsed in full (--thorough)
  pyrepro_warm_in_process  the warm re-scan as a library call (no interpreter start-up)
and the ratios fawltydeps / pyrepro. Both tools read the same .py and .ipynb files; pyrepro also
reads shell scripts and requirement files. FawltyDeps is found on PATH or via --fawltydeps
(`pip install fawltydeps` into any venv).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT = Path(__file__).resolve().parent.parent / ".." / "shared" / "upstream" / "jarvis_leaderboard" / \
    "jarvis_leaderboard" / "contributions"


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    t = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    dt = time.perf_counter() - t
    if done.returncode not in (0, 3):  # fawltydeps exits 3 when it has findings
        raise SystemExit(f"{argv[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return dt, done.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tree", nargs="?", type=Path, default=Path(os.environ.get("PYREPRO_BENCH_TREE", DEFAULT)))
    ap.add_argument("--fawltydeps", default=shutil.which("fawltydeps"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=None)
    a = ap.parse_args()
    tree = a.tree.resolve()
    if not tree.is_dir():
        raise SystemExit(f"{tree}: not a folder (give a contributions tree)")
    exe = Path(sys.executable).parent / "pyrepro"
    pyrepro = [str(exe)] if exe.exists() else [shutil.which("pyrepro") or "pyrepro"]
    env = dict(os.environ)
    if a.jobs:
        env["PYREPRO_SCAN_JOBS"] = str(a.jobs)
    code = [p for p in tree.rglob("*") if p.suffix in (".py", ".ipynb") and p.is_file()]
    files = len(code)
    unique = len({hashlib.sha256(p.read_bytes()).hexdigest() for p in code})
    lines = sum(p.read_bytes().count(b"\n") for p in tree.rglob("*.py") if p.is_file())
    print(f"tree {tree}")
    print(f"py_and_ipynb_files {files} (distinct contents {unique}: pyrepro reads each content once)")
    print(f"py_lines {lines}")
    print(f"cpus {os.cpu_count()}")
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("fawltydeps", "pyrepro_cold", "pyrepro_warm", "pyrepro_thorough"):
            best = float("inf")
            for i in range(a.repeat):
                cache = Path(tmp) / f"cache-{name}-{i}"
                if name == "fawltydeps":
                    if not a.fawltydeps:
                        break
                    argv = [a.fawltydeps, "--list-imports", "--code", str(tree)]
                else:
                    argv = [*pyrepro, "scan", str(tree), "--json"] + (["--thorough"] if name == "pyrepro_thorough" else [])
                    if name == "pyrepro_warm":
                        cache = Path(tmp) / "cache-warm"
                        if i == 0:  # fill it once
                            _timed(argv, {**env, "PYREPRO_CACHE": str(cache)})
                dt, out = _timed(argv, {**env, "PYREPRO_CACHE": str(cache)})
                best = min(best, dt)
                if name == "pyrepro_cold" and i == 0:
                    res = json.loads(out)
                    print(f"pyrepro_required {len(res['required'])} imports {len(res['imports'])} "
                          f"warnings {len(res['warnings'])}")
            if best < float("inf"):
                results[name] = best
                print(f"{name}_seconds {best:.3f}")
    # the same warm re-scan as a library call (what `init`/`reproduce` do): no interpreter start-up
    from pyrepro.scan import scan_path

    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        scan_path(tree, cache=cache)
        time.sleep(2.1)  # past the index's racy window for files the fill run just wrote nowhere near the tree
        best = float("inf")
        for _ in range(a.repeat):
            t = time.perf_counter()
            scan_path(tree, cache=cache)
            best = min(best, time.perf_counter() - t)
    results["pyrepro_warm_in_process"] = best
    print(f"pyrepro_warm_in_process_seconds {best:.3f}")
    fd = results.get("fawltydeps")
    if fd is None:
        print("fawltydeps not found: ratios not measured (pip install fawltydeps; pass --fawltydeps PATH)")
        return
    for name in ("pyrepro_cold", "pyrepro_warm", "pyrepro_warm_in_process", "pyrepro_thorough"):
        print(f"ratio_fawltydeps_over_{name[8:]} {fd / results[name]:.1f}x")


if __name__ == "__main__":
    main()
