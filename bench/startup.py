"""CLI start-up and no-op figures (issue 16): wall seconds, best of --repeat.

Usage: python bench/startup.py [--repeat 5] [--model cfid]

Prints: the bare interpreter; `import pyrepro.cli`; `pyrepro --help`; `pyrepro models --json`;
`pyrepro scan examples/contribution --json` (warm cache); and `pyrepro build MODEL` when that
model's environment is already built (a cache hit: the no-op build).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def best(argv: list[str], repeat: int) -> tuple[float, int]:
    times, code = [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        code = subprocess.run(argv, capture_output=True, check=False).returncode
        times.append(time.perf_counter() - t)
    return min(times), code


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--model", default="cfid")
    a = ap.parse_args()
    exe = Path(sys.executable).parent / "pyrepro"
    cli = [str(exe)] if exe.exists() else [shutil.which("pyrepro") or "pyrepro"]
    rows = [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("import pyrepro.cli", [sys.executable, "-c", "import pyrepro.cli"]),
        ("pyrepro --help", [*cli, "--help"]),
        ("pyrepro models --json", [*cli, "models", "--json"]),
        ("pyrepro scan examples/contribution --json (warm)", [*cli, "scan", str(REPO / "examples" / "contribution"),
                                                               "--json"]),
        (f"pyrepro build {a.model} (no-op when built)", [*cli, "build", a.model]),
    ]
    for label, argv in rows:
        seconds, code = best(argv, a.repeat)
        note = "" if code == 0 else f" (exit {code})"
        print(f"{label}: {seconds:.3f} s{note}")


if __name__ == "__main__":
    main()
