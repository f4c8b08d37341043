"""Relock the target models today, in scratch copies, and compare with their committed locks.

Usage: python bench/relock.py [NAME ...] [--json] [--timeout MIN]

For each model (default: every model of the registry), the model's folder is copied to a
scratch folder and locked there by the same procedure `pyrepro lock` runs (the planner in
pyrepro/lockplan.py, real pdm, x86_64 only), starting at the strategy its committed record
started at. The committed pdm.lock and lock.toml are never touched. With ``--prefer`` the
relock gets the committed pdm.lock as the lock it replaces (``lock_request(prefer=...)``, as
reproduce's relocks after a repair move do: pdm --update-reuse). Prints per model: the
committed and the new category/strategy/date bound, the seconds, and how many locked versions
differ from the committed pdm.lock (a difference is a newer release that appeared on the index
since, within the same constraints: the record says which).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from pyrepro import lock
from pyrepro.registry import load_registry

ROOT = Path(__file__).resolve().parent.parent


def relock(name: str, timeout: float, prefer: bool = False) -> dict[str, object]:
    reg = load_registry(ROOT / "models")
    spec = reg.get(name)
    rec = lock.read_record(spec.dir) or {}
    first = (rec.get("attempts") or [{}])[0].get("strategy", "as-declared")
    committed = lock.read_lock_versions((spec.dir / "pdm.lock").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix=f"pyrepro-relock-{name}-") as tmp:
        work = Path(tmp) / name
        shutil.copytree(spec.dir, work)
        req = replace(lock.LockRequest.from_spec(spec), project_dir=work, model_toml=None)
        t0 = time.monotonic()
        out = lock.lock_request(req, start=first, timeout=timeout, aarch64=False,
                                prefer=(spec.dir / "pdm.lock").read_text(encoding="utf-8") if prefer else None)
        seconds = time.monotonic() - t0
        new = lock.read_lock_versions((work / "pdm.lock").read_text(encoding="utf-8")) if out.ok else {}
    changed = sorted(f"{k} {committed.get(k, '-')} -> {new.get(k, '-')}" for k in set(committed) | set(new)
                     if committed.get(k) != new.get(k)) if out.ok else []
    return {"model": name, "committed": {"category": rec.get("category"), "strategy": rec.get("strategy"),
                                         "exclude_newer": rec.get("exclude_newer")},
            "relocked": {"category": out.category, "strategy": out.strategy, "exclude_newer": out.exclude_newer,
                         "steps": [s.summary for s in out.steps]},
            "same_outcome": (out.category, out.strategy, out.exclude_newer)
            == (rec.get("category"), rec.get("strategy"), rec.get("exclude_newer")),
            "versions_changed": changed, "packages": len(new), "seconds": round(seconds, 1),
            "message": "" if out.ok else out.message[:500]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--timeout", type=float, default=20.0, help="minutes per resolver attempt")
    ap.add_argument("--prefer", action="store_true", help="prefer the committed lock's versions (a repair relock)")
    a = ap.parse_args()
    names = a.names or load_registry(ROOT / "models").names()
    rows = []
    for n in names:
        r = relock(n, a.timeout * 60, a.prefer)
        rows.append(r)
        if not a.json:
            c, new = r["committed"], r["relocked"]
            print(f"{n:18} committed {c['category']}/{c['strategy']}/{c['exclude_newer'] or '-'}  "  # type: ignore[index]
                  f"now {new['category']}/{new['strategy']}/{new['exclude_newer'] or '-'}  "  # type: ignore[index]
                  f"{'same' if r['same_outcome'] else 'DIFFERENT'}  {r['seconds']:>6} s  "
                  f"{len(r['versions_changed'])} versions changed", flush=True)  # type: ignore[arg-type]
            for v in r["versions_changed"][:10]:  # type: ignore[index]
                print(f"    {v}")
    if a.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    else:
        same = sum(1 for r in rows if r["same_outcome"])
        print(f"{same}/{len(rows)} models relock to the same category, strategy and date bound; "
              f"{sum(1 for r in rows if not r['versions_changed'] and r['relocked']['category'] != 4)} "  # type: ignore[index]
              f"with identical versions; {sum(r['seconds'] for r in rows):.0f} s in all")  # type: ignore[misc]


if __name__ == "__main__":
    main()
