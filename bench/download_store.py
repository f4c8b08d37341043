"""What the download store saves: one model's environment built twice from nothing but the store.

Usage: python bench/download_store.py [MODEL] [--json]

Default MODEL is ``cfid`` (30 locked packages). The model's models/ folder is copied into a
temporary project root with an empty temporary cache. Then:
1. cold: the environment from nothing (pip downloads every locked wheel into the store);
2. store: the environment removed (``gc --all`` of the envs only), built again: every wheel
   comes from the store, checked against the lock's sha256, nothing is downloaded.
Prints the seconds of each, the store's size and file count. The user cache is never touched.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from pyrepro.backends import local
from pyrepro.paths import Paths
from pyrepro.registry import load_registry

REPO = Path(__file__).resolve().parent.parent


def measure(model: str, work: Path) -> dict[str, object]:
    root = work / "root"
    (root / "models").mkdir(parents=True)
    shutil.copytree(REPO / "models" / model, root / "models" / model)
    paths = Paths(root=root, cache=work / "cache")
    spec = load_registry(paths.models).get(model)
    out: dict[str, object] = {"model": model}
    for what in ("cold", "store"):
        t0 = time.monotonic()
        env_dir, _key, _python, hit = local.build_env(spec, paths)
        out[f"{what}_seconds"] = round(time.monotonic() - t0, 1)
        assert not hit, "the environment was expected to be built, not reused"
        shutil.rmtree(env_dir)
    store = local.download_store(paths)
    files = [p for p in store.iterdir() if p.is_file()]
    out["store_files"] = len(files)
    out["store_mb"] = round(sum(p.stat().st_size for p in files) / 2**20, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?", default="cfid")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pyrepro-bench-store-") as tmp:
        res = measure(args.model, Path(tmp))
    if args.json:
        print(json.dumps(res))
    else:
        print(f"{res['model']}: cold {res['cold_seconds']} s, from the store {res['store_seconds']} s; "
              f"store {res['store_files']} files, {res['store_mb']} MB")


if __name__ == "__main__":
    sys.exit(main())
