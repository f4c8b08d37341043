"""How long the local backend takes to install a lock's wheels: pip (download store) against uv.

Usage: python bench/install.py MODEL_DIR [MODEL_DIR ...]   (a folder with model.toml and pdm.lock)

Per model and installer: builds the environment from an empty PYREPRO_CACHE and an empty pip
cache (cold: every wheel is fetched), then removes only the environment and builds it again (warm:
the download store, or uv's cache, holds every file). Prints wall seconds and the size of what the
installer keeps in the cache. Network: PyPI. Disk: a torch lock needs several GB per run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pyrepro.backends import local  # noqa: E402
from pyrepro.paths import Paths  # noqa: E402
from pyrepro.registry import load_registry  # noqa: E402


def _du(path: Path) -> int:
    if not path.exists():
        return 0
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=False).stdout.split()
    return int(out[0]) if out else 0


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    print(f"{'model':28} {'installer':9} {'packages':>8} {'cold s':>8} {'warm s':>8} {'cache MB':>9}")
    for d in map(Path, argv):
        for installer in ("pip", "uv"):
            with tempfile.TemporaryDirectory(prefix="pyrepro-bench-install-") as tmp:
                root = Path(tmp) / "root"
                (root / "models").mkdir(parents=True)
                shutil.copytree(d, root / "models" / d.name, ignore=shutil.ignore_patterns(".*"))
                paths = Paths(root=root, cache=Path(tmp) / "cache")
                os.environ["PIP_CACHE_DIR"] = str(Path(tmp) / "pip-cache")
                os.environ["PYREPRO_INSTALLER"] = installer
                spec = load_registry(paths.models).get(d.name)
                times = []
                for _ in range(2):
                    t0 = time.monotonic()
                    env_dir, _key, _py, _hit = local.build_env(spec, paths)
                    times.append(time.monotonic() - t0)
                    shutil.rmtree(env_dir)
                kept = _du(local.uv_cache(paths)) + _du(local.download_store(paths))
                n = len(local.locked_packages(spec.dir / "pdm.lock", spec.python, local.host_platform()))
                print(f"{d.name:28} {installer:9} {n:8d} {times[0]:8.1f} {times[1]:8.1f} {kept / 1e6:9.0f}",
                      flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
