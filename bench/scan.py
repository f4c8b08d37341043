"""Scanner throughput: files, lines, seconds and files per second for a tree.

Usage: python bench/scan.py [TREE] [--python 3.10] [--repeat 3]
Default TREE: ../shared/upstream/jarvis_leaderboard/jarvis_leaderboard/contributions.
Runs in this process (one core). Prints the best of --repeat runs, wall-clock and CPU
seconds, and (as a floor) the CPU seconds of one bare ``ast.parse`` per ``.py`` file of the
same tree: the scanner is parse-bound, so compare against that on a busy machine.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import time
from pathlib import Path

from pyrepro.scan import scan_path

DEFAULT = Path(__file__).resolve().parent.parent / ".." / "shared" / "upstream" / "jarvis_leaderboard" / \
    "jarvis_leaderboard" / "contributions"


def _parse_floor(tree: Path, repeat: int) -> float:
    """CPU seconds of one ast.parse per .py file (best of ``repeat``)."""
    files = [f for f in (tree.rglob("*.py") if tree.is_dir() else [tree]) if f.is_file()]
    data = []
    for f in files:
        try:
            data.append(f.read_bytes())
        except OSError:
            continue
    best = float("inf")
    for _ in range(repeat):
        c = time.process_time()
        for d in data:
            with contextlib.suppress(SyntaxError, ValueError):
                ast.parse(d)
        best = min(best, time.process_time() - c)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tree", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--python", default="3.10")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    scan_path(a.tree, python=a.python)  # warm imports and caches
    best = cpu = None
    for _ in range(a.repeat):
        t, c = time.perf_counter(), time.process_time()
        res = scan_path(a.tree, python=a.python)
        dt, dc = time.perf_counter() - t, time.process_time() - c
        best = dt if best is None else min(best, dt)
        cpu = dc if cpu is None else min(cpu, dc)
    assert best is not None and cpu is not None
    floor = _parse_floor(a.tree, a.repeat)
    print(f"tree {a.tree.resolve()}")
    print(f"files {res.files}")
    print(f"lines {res.lines}")
    print(f"seconds {best:.3f}")
    print(f"files_per_second {res.files / best:.0f}")
    print(f"lines_per_second {res.lines / best:.0f}")
    print(f"cpu_seconds {cpu:.3f}")
    print(f"ast_parse_only_cpu_seconds {floor:.3f} (bare ast.parse of the .py files, no notebooks)")
    print(f"distributions {len(res.distributions)} warnings {len(res.warnings)}")


if __name__ == "__main__":
    main()
