"""Time the index questions a uv-first lock asks of every locked release (hashes, Requires-Python).

Usage: python bench/index_lookup.py PDM_LOCK [--cache DIR] [--rounds 3]

Reads the (name, version) pairs of PDM_LOCK, reads each project's PEP 691 listing once from the
index cache under DIR (default: pyrepro's cache; the listings are fetched on first use), then times
``file_hashes`` and two ``requires_python`` per release on a fresh ``WheelIndex``, as
``lock.lock_request`` asks them after uv's resolution. Prints packages, files listed, and seconds
per round. Measured 2026-12-07 on chemcrow's 261-package lock (corpus13): 16.2 s per round at
c2a14a4 (every question parsed every file name of its project), 1.2 s after the listings are
grouped by version once per project.
"""

from __future__ import annotations

import argparse
import sys
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pyrepro.index import WheelIndex  # noqa: E402
from pyrepro.paths import cache_dir  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lock", type=Path)
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    pkgs = [(p["name"], p["version"]) for p in tomllib.loads(a.lock.read_text(encoding="utf-8")).get("package", [])]
    cache = a.cache or cache_dir()
    files = 0
    for r in range(a.rounds):
        idx = WheelIndex(cache)
        files = sum(len((idx._project(n) or {}).get("files", [])) for n, _v in pkgs)  # listings, not timed
        t = time.perf_counter()
        for n, v in pkgs:
            idx.file_hashes(n, v)
            idx.requires_python(n, v)
            idx.requires_python(n, v)
        print(f"round {r + 1}: {len(pkgs)} packages, {files} files listed: {time.perf_counter() - t:.2f} s")


if __name__ == "__main__":
    main()
