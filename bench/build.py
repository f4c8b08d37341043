"""Local-backend build times for one model: cold build, no-op rebuild, patch-only rebuild.

Usage: python bench/build.py [MODEL] [--mirror DIR] [--keep] [--json]

Default MODEL is ``mini``, the miniature model of tests/scenarios/backend (one pure-Python
locked wheel, downloaded from PyPI, and its own tiny mirror). Any project model name works
too (e.g. ``cfid``) when its pdm.lock and patches exist and the upstream mirror is present.

The model's models/ and patches/ folders are copied into a temporary project root with an
empty temporary cache, so the measurement is cold and never touches the user cache:
1. cold: environment + staged source + launcher from nothing (pip downloads included);
2. no-op: the same build again (must be a cache hit of both parts);
3. patch-only: the first patch's description is changed (its bytes, hence its hash), so the
   source is restaged while the environment is reused.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from pyrepro.backends import BuiltModel, local
from pyrepro.paths import Paths
from pyrepro.registry import load_registry

REPO = Path(__file__).resolve().parent.parent
MINI = REPO / "tests" / "scenarios" / "backend"


def measure(model: str, mirror: Path | None, work: Path) -> dict[str, object]:
    base = MINI if model == "mini" else REPO
    if model == "mini" and mirror is None:
        mirror = MINI / "mirror"
    root = work / "root"
    (root / "models").mkdir(parents=True)
    (root / "patches").mkdir(parents=True)
    shutil.copytree(base / "models" / model, root / "models" / model)
    if (base / "patches" / model).is_dir():
        shutil.copytree(base / "patches" / model, root / "patches" / model)
    (root / "flake.nix").write_text("{ }\n")
    paths = Paths(root=root, cache=work / "cache")
    if mirror is None and Paths.discover().default_mirror().is_dir():
        mirror = Paths.discover().default_mirror()
    spec = load_registry(paths.models).get(model)

    def timed() -> tuple[float, BuiltModel]:
        t0 = time.monotonic()
        b = local.build(spec, paths, mirror=mirror)
        return time.monotonic() - t0, b

    cold, b1 = timed()
    noop, b2 = timed()
    patch_files = sorted((root / "patches" / model).glob("*.patch"))
    if not patch_files:
        raise SystemExit(f"{model} has no patches: the patch-only rebuild cannot be measured")
    p = patch_files[0]
    text = p.read_text()
    p.write_text(text.replace("\nWhy: ", "\nWhy: (bench/build.py: description changed) ", 1))
    patched, b3 = timed()
    return {
        "model": model, "python": b1.python, "packages_env": b1.env_key,
        "cold_s": round(cold, 3), "noop_s": round(noop, 3), "patch_only_s": round(patched, 3),
        "noop_cache_hit": b2.env_cached and b2.src_cached,
        "patch_only_env_reused": b3.env_cached and not b3.src_cached,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default="mini")
    ap.add_argument("--mirror", type=Path, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the temporary root and cache")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pyrepro-bench-build-"))
    try:
        res = measure(args.model, args.mirror, work)
    finally:
        if not args.keep:
            from pyrepro import sources
            sources.make_writable(work)
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        json.dump(res, sys.stdout, indent=2)
        print()
        return
    print(f"model {res['model']} (Python {res['python']})")
    print(f"  cold build          {res['cold_s']:8.3f} s")
    print(f"  no-op rebuild       {res['noop_s']:8.3f} s  (cache hit: {res['noop_cache_hit']})")
    print(f"  patch-only rebuild  {res['patch_only_s']:8.3f} s  (env reused, source restaged: "
          f"{res['patch_only_env_reused']})")


if __name__ == "__main__":
    main()
