"""Scanner throughput: files, lines, seconds and files per second for a tree.

Usage: python bench/scan.py [TREE] [--python 3.10] [--repeat 3]
Default TREE: ../shared/upstream/jarvis_leaderboard/jarvis_leaderboard/contributions.
Runs in this process (one core). Prints the best of --repeat runs.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from pyrepro.scan import scan_path

DEFAULT = Path(__file__).resolve().parent.parent / ".." / "shared" / "upstream" / "jarvis_leaderboard" / \
    "jarvis_leaderboard" / "contributions"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tree", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--python", default="3.10")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    scan_path(a.tree, python=a.python)  # warm imports and caches
    best = None
    for _ in range(a.repeat):
        t = time.perf_counter()
        res = scan_path(a.tree, python=a.python)
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    assert best is not None
    print(f"tree {a.tree.resolve()}")
    print(f"files {res.files}")
    print(f"lines {res.lines}")
    print(f"seconds {best:.3f}")
    print(f"files_per_second {res.files / best:.0f}")
    print(f"lines_per_second {res.lines / best:.0f}")
    print(f"distributions {len(res.distributions)} warnings {len(res.warnings)}")


if __name__ == "__main__":
    main()
