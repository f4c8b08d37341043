"""Lock times per model, from the lock.toml records that `pyrepro lock` writes.

Usage: python bench/lock.py [MODELS_DIR] [--json]
Default MODELS_DIR: the project's models/. Reads records only (no network, no resolver run);
each record's seconds are wall-clock times measured by `pyrepro lock` on the machine that
wrote it (see locked_at). Prints per model: category, winning strategy, packages, total
seconds, and every attempt's strategy/date bound/seconds/outcome.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pyrepro.lock import read_record

DEFAULT = Path(__file__).resolve().parent.parent / "models"


def rows(models_dir: Path) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for d in sorted(p for p in models_dir.iterdir() if p.is_dir()):
        rec = read_record(d)
        if rec is None:
            out.append({"model": d.name, "category": None, "strategy": None, "packages": 0,
                        "seconds": None, "attempts": []})
            continue
        out.append({
            "model": d.name, "category": rec.get("category"), "strategy": rec.get("strategy"),
            "packages": rec.get("packages", 0), "seconds": rec.get("seconds"),
            "locked_at": rec.get("locked_at"),
            "attempts": [{"strategy": a.get("strategy"), "exclude_newer": a.get("exclude_newer"),
                          "seconds": a.get("seconds"), "ok": a.get("ok")} for a in rec.get("attempts", [])],
        })
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("models_dir", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if not a.models_dir.is_dir():
        sys.exit(f"error: {a.models_dir} is not a folder")
    data = rows(a.models_dir)
    if a.json:
        print(json.dumps(data, indent=2))
        return
    print(f"{'model':<17} {'cat':>3} {'strategy':<12} {'pkgs':>4} {'seconds':>8}  attempts")
    total = 0.0
    for r in data:
        if r["category"] is None:
            print(f"{r['model']:<17} {'-':>3} {'(no lock.toml)':<12}")
            continue
        secs = float(r["seconds"] or 0.0)  # type: ignore[arg-type]
        total += secs
        tries = ", ".join(
            f"{t['strategy']}{'<' + str(t['exclude_newer']) if t['exclude_newer'] else ''} "
            f"{float(t['seconds'] or 0):.0f}s {'ok' if t['ok'] else 'fail'}"
            for t in r["attempts"])  # type: ignore[attr-defined]
        print(f"{r['model']:<17} {r['category']:>3} {r['strategy']!s:<12} {r['packages']:>4} {secs:>8.1f}  {tries}")
    print(f"{'total':<17} {'':>3} {'':<12} {'':>4} {total:>8.1f}")


if __name__ == "__main__":
    main()
