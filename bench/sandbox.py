"""What the sandbox and the verification cost a test run (issue 43's goal: under 5% of a run).

Usage: python bench/sandbox.py [--repeat N] [--out FILE] MODEL [MODEL ...]

Per model (of the project's models/, built first with ``pyrepro build``, not timed): the test run
(``pyrepro run MODEL --test --json``) N times in the sandbox and N times with ``--no-sandbox``,
alternating; the median wall seconds of each, the overhead in percent, and the verification the
run did before it started (its record's ``verified`` seconds, warm: the stat index holds every
file). Then each model's environment verified cold (every file hashed, no stat index) and warm.
Prints a table; ``--out`` writes the numbers as JSON (bench/results/<date>-sandbox.json).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pyrepro import sandbox, verify  # noqa: E402
from pyrepro.backends import local  # noqa: E402
from pyrepro.paths import Paths  # noqa: E402
from pyrepro.registry import load_registry  # noqa: E402


def _run(model: str, sandboxed: bool) -> tuple[float, dict]:
    argv = [str(Path(sys.executable).parent / "pyrepro"), "run", model, "--test", "--json"]
    if not sandboxed:
        argv.insert(-1, "--no-sandbox")
    t0 = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    try:
        doc = json.loads(done.stdout)
    except ValueError:
        raise SystemExit(f"{model}: no JSON from {' '.join(argv)} (exit {done.returncode}): {done.stderr[-500:]}")
    if not doc["ok"]:
        raise SystemExit(f"{model}: the test run failed ({'sandbox' if sandboxed else 'no sandbox'}): {doc['error']}")
    return wall, doc["result"][0]


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    paths = Paths.discover()
    reg = load_registry(paths.models)
    rows = []
    print(f"{'model':18} {'sandbox s':>9} {'plain s':>8} {'overhead':>8} {'verify s':>8} {'env GB':>7} "
          f"{'files':>7} {'cold s':>7} {'warm s':>7}", flush=True)
    for model in args.models:
        spec = reg.get(model)
        built = local.build(spec, paths, repair=True)
        boxed, plain, verified = [], [], []
        for _ in range(args.repeat):
            for sandboxed in (True, False):
                wall, rec = _run(model, sandboxed)
                (boxed if sandboxed else plain).append(wall)
                if sandboxed:
                    assert rec["sandbox"]["kind"] == "bwrap", rec["sandbox"]
                    verified.append(sum(v["seconds"] for v in rec["verified"]))
        cold = verify.verify_env(built.env_dir, rebuild_hint="", use_index=False)
        warm = verify.verify_env(built.env_dir, rebuild_hint="")
        b, p = statistics.median(boxed), statistics.median(plain)
        row = {"model": model, "sandbox_s": round(b, 2), "plain_s": round(p, 2),
               "overhead_pct": round(100 * (b - p) / p, 1), "verify_in_run_s": round(statistics.median(verified), 3),
               "env_bytes": _size(built.env_dir), "env_files": cold.files, "verify_cold_s": round(cold.seconds, 2),
               "verify_warm_s": round(warm.seconds, 3), "runs": {"sandbox": boxed, "plain": plain}}
        rows.append(row)
        print(f"{model:18} {b:9.2f} {p:8.2f} {row['overhead_pct']:7.1f}% {row['verify_in_run_s']:8.3f} "
              f"{row['env_bytes'] / 1e9:7.2f} {cold.files:7d} {cold.seconds:7.2f} {warm.seconds:7.3f}", flush=True)
    # the sandbox's own start: bwrap with the run's mounts around /bin/true, against /bin/true
    box = sandbox.choose()
    starts = {}
    for label, argv in (("bwrap", box.wrap(["/bin/true"], sandbox.Mounts())), ("plain", ["/bin/true"])):
        t0 = time.monotonic()
        for _ in range(20):
            subprocess.run(argv, check=True)
        starts[label] = (time.monotonic() - t0) / 20
    print(f"bwrap start: {starts['bwrap'] * 1000:.1f} ms (a plain start: {starts['plain'] * 1000:.1f} ms)")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"date": dt.date.today().isoformat(), "machine": {
            "cpus": os.cpu_count(), "python": platform.python_version()}, "repeat": args.repeat,
            "start_s": starts, "load": os.getloadavg(), "models": rows},
            indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
