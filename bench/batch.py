"""`pyrepro batch --jobs N` against the same submissions one at a time: wall time, and whether every
submission ends the same way.

Usage: python bench/batch.py MANIFEST [--jobs 2] [--test] [--budget MIN] [--work DIR] [--record OUT.json]
       python bench/batch.py --fixtures DIR      writes four light submissions and DIR/manifest.toml

Two modes over the manifest's entries (pyrepro's manifest format: [[submission]] folder, name, ...),
each from an empty cache and an empty scratch project of its own (so neither profits from the
other's downloads or environments):

- sequential: `pyrepro reproduce FOLDER --name NAME --json` for each entry, one after the other;
- batch: `pyrepro batch MANIFEST --jobs N --json` (the local engine: N workers on one shared cache).

Prints both wall times, their ratio, and one row per submission: status, stage reached and lock
category in each mode, and whether they agree. `--record` writes the same as JSON (names only, no
machine paths). The issue's goal: the batch at most 60% of the sequential time, the same results.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

PYREPRO = str(Path(sys.executable).parent / "pyrepro")

FIXTURES = {  # light submissions that lock and build in seconds from PyPI
    "light_six": {"run.py": "import six\nprint(six.PY3)\n", "requirements.txt": "six==1.16.0\n"},
    "light_attrs": {"train.py": "import attr\n\n@attr.s\nclass A:\n    x = attr.ib()\n", "requirements.txt":
                    "attrs==23.1.0\n"},
    "light_requests": {"predict.py": "import requests\nprint(requests.__version__)\n",
                       "requirements.txt": "requests==2.31.0\n"},
    "light_tomli": {"run.py": "import tomli\nimport packaging.version\n", "requirements.txt":
                    "tomli==2.0.1\npackaging==23.1\n"},
}


def write_fixtures(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    lines = []
    for name, files in FIXTURES.items():
        for rel, text in files.items():
            (root / name / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / name / rel).write_text(text)
        lines += ["[[submission]]", f'folder = "{name}"', f'name = "{name}"', ""]
    (root / "manifest.toml").write_text("\n".join(lines))
    return root / "manifest.toml"


def _project(base: Path) -> tuple[Path, Path]:
    root, cache = base / "project", base / "cache"
    for d in ("models", "patches"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "flake.nix").write_text("{}\n")
    return root, cache


def _row(status: str, rec: dict[str, Any] | None, seconds: float) -> dict[str, Any]:
    if rec is None:
        return {"status": status, "stage": None, "category": None, "seconds": round(seconds, 1)}
    stopped = rec.get("stopped_at")
    ok_stages = [s["stage"] for s in rec.get("stages", []) if s.get("status") == "ok"]
    return {"status": status, "stage": stopped or (ok_stages[-1] if ok_stages else None),
            "category": rec.get("category"), "seconds": round(seconds, 1)}


def sequential(entries: list[dict[str, Any]], base: Path, args: argparse.Namespace) -> tuple[float, dict[str, Any]]:
    root, cache = _project(base)
    env = {**os.environ, "PYREPRO_ROOT": str(root), "PYREPRO_CACHE": str(cache)}
    rows = {}
    t0 = time.monotonic()
    for e in entries:
        t = time.monotonic()
        argv = [PYREPRO, "reproduce", e["folder"], "--name", e["name"], "--json", "--budget", str(args.budget)]
        if args.test:
            argv.append("--test")
        res = subprocess.run(argv, env=env, capture_output=True, text=True)
        try:
            doc = json.loads(res.stdout)
        except ValueError:
            doc = {}
        rec = doc.get("result") if isinstance(doc.get("result"), dict) else None
        status = "passed" if res.returncode == 0 and rec and rec.get("ok") else ("failed" if rec else "crashed")
        rows[e["name"]] = _row(status, rec, time.monotonic() - t)
        print(f"  sequential {e['name']}: {status} ({time.monotonic() - t:.1f} s)", flush=True)
    return time.monotonic() - t0, rows


def batched(manifest: Path, base: Path, args: argparse.Namespace) -> tuple[float, dict[str, Any]]:
    root, cache = _project(base)
    env = {**os.environ, "PYREPRO_ROOT": str(root), "PYREPRO_CACHE": str(cache)}
    argv = [PYREPRO, "batch", str(manifest), "--jobs", str(args.jobs), "--out", str(base / "out"), "--json",
            "--budget", str(args.budget)]
    if args.test:
        argv.append("--test")
    t0 = time.monotonic()
    res = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    doc = json.loads(res.stdout)
    if not isinstance(doc.get("result"), dict):
        sys.exit(f"pyrepro batch failed: {doc.get('error')}\n{res.stderr[-2000:]}")
    rows = {}
    for line in (base / "out" / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        rows[r["name"]] = _row(r["status"], r.get("record"), float(r.get("seconds") or 0))
    return wall, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("manifest", type=Path, nargs="?")
    ap.add_argument("--fixtures", type=Path, default=None, help="write the light fixture submissions here and stop")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--test", action="store_true")
    ap.add_argument("--budget", type=float, default=10.0, help="minutes per submission")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temporary one, removed)")
    ap.add_argument("--record", type=Path, default=None, help="write the results as JSON here")
    a = ap.parse_args()
    if a.fixtures is not None:
        print(f"wrote {write_fixtures(a.fixtures)}")
        return
    if a.manifest is None:
        ap.error("give a manifest (or --fixtures DIR)")
    manifest = a.manifest.resolve()
    data = tomllib.loads(manifest.read_text())
    entries = [{"name": s.get("name") or Path(s["folder"]).name, "folder": str((manifest.parent / s["folder"]).resolve())}
               for s in data["submission"]]
    work = a.work or Path(tempfile.mkdtemp(prefix="pyrepro-bench-batch-"))
    try:
        print(f"{len(entries)} submissions; sequential first, then pyrepro batch --jobs {a.jobs}", flush=True)
        seq_wall, seq = sequential(entries, work / "sequential", a)
        bat_wall, bat = batched(manifest, work / "batch", a)
    finally:
        if a.work is None:
            shutil.rmtree(work, ignore_errors=True)
    same = {n: all(seq[n][k] == bat.get(n, {}).get(k) for k in ("status", "stage", "category")) for n in seq}
    print(f"\n{'submission':<22} {'sequential':<28} {'batch':<28} same")
    for n in seq:
        s, b = seq[n], bat.get(n, {})
        fmt = lambda r: f"{r.get('status')} {r.get('stage')} cat {r.get('category')} {r.get('seconds')}s"  # noqa: E731
        print(f"{n:<22} {fmt(s):<28} {fmt(b):<28} {'yes' if same[n] else 'NO'}")
    ratio = bat_wall / seq_wall if seq_wall else float("nan")
    print(f"\nwall time: sequential {seq_wall:.1f} s, batch --jobs {a.jobs} {bat_wall:.1f} s "
          f"({ratio:.0%} of sequential); same results: {sum(same.values())}/{len(same)}")
    if a.record:
        a.record.parent.mkdir(parents=True, exist_ok=True)
        a.record.write_text(json.dumps({
            "date": dt.date.today().isoformat(), "manifest": manifest.name, "submissions": len(entries),
            "jobs": a.jobs, "test": a.test, "budget_minutes": a.budget,
            "machine": {"cores": os.cpu_count(), "system": platform.system(), "python": platform.python_version()},
            "wall_seconds": {"sequential": round(seq_wall, 1), "batch": round(bat_wall, 1)},
            "batch_share_of_sequential": round(ratio, 3), "same_results": sum(same.values()),
            "rows": {n: {"sequential": seq[n], "batch": bat.get(n), "same": same[n]} for n in seq},
            "note": "both modes from an empty cache and an empty scratch project of their own",
        }, indent=2) + "\n")
        print(f"wrote {a.record}")


if __name__ == "__main__":
    main()
