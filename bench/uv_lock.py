"""pdm's resolver vs pdm's uv mode (`PDM_USE_UV=1`) on the committed models (issue 12).

Usage: python bench/uv_lock.py [--models a,b] [--timeout 900]   (needs `pip install uv` next to pdm)

Per model: copies models/<name>/pyproject.toml to a temporary folder, locks it for the model's
Python on manylinux_2_28_x86_64 once with pdm's own resolver and once in uv mode (both with
pyrepro's pdm cache; uv keeps its own), and prints wall seconds, exit status, the number of
packages, whether the two locks pick the same (name, version) set, and whether the uv lock keeps
what the rest of pyrepro reads from a lock (per-package `marker`/`groups`, `strategy`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pyrepro.interpreters import find_python  # noqa: E402
from pyrepro.lock import pdm_cache_dir  # noqa: E402


def lock(pyproject: Path, python: str, exe: Path, uv: bool, timeout: float) -> tuple[float, int, dict]:
    d = Path(tempfile.mkdtemp(prefix="uvbench-"))
    shutil.copy(pyproject, d / "pyproject.toml")
    env = dict(os.environ, PDM_CHECK_UPDATE="false", PDM_PYTHON=str(exe), PDM_CACHE_DIR=str(pdm_cache_dir()),
               PDM_NON_INTERACTIVE="1", NO_COLOR="1", PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    if uv:
        env["PDM_USE_UV"] = "1"
    t = time.perf_counter()
    try:
        done = subprocess.run([str(Path(sys.executable).parent / "pdm"), "lock", "-p", str(d), "--python",
                               f"=={python}.*", "--platform", "manylinux_2_28_x86_64", "--implementation", "cpython"],
                              env=env, capture_output=True, text=True, timeout=timeout, check=False)
        code = done.returncode
    except subprocess.TimeoutExpired:
        code = -1
    secs = time.perf_counter() - t
    data = tomllib.loads((d / "pdm.lock").read_text()) if (d / "pdm.lock").is_file() else {}
    shutil.rmtree(d, ignore_errors=True)
    return secs, code, data


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="")
    ap.add_argument("--timeout", type=float, default=900)
    a = ap.parse_args()
    names = a.models.split(",") if a.models else sorted(p.parent.name for p in (REPO / "models").glob("*/model.toml"))
    print(f"{'model':18} {'pdm s':>7} {'uv s':>7} {'pkgs':>9}  same set  uv lock keeps markers/groups")
    tot = [0.0, 0.0]
    for n in names:
        mt = tomllib.loads((REPO / "models" / n / "model.toml").read_text())
        exe = find_python(mt["python"])
        pp = REPO / "models" / n / "pyproject.toml"
        s1, c1, l1 = lock(pp, mt["python"], exe, False, a.timeout)
        s2, c2, l2 = lock(pp, mt["python"], exe, True, a.timeout)
        tot[0] += s1
        tot[1] += s2
        p1 = {(p["name"], p["version"]) for p in l1.get("package", [])}
        p2 = {(p["name"], p["version"]) for p in l2.get("package", [])}
        keeps = any("groups" in p for p in l2.get("package", [])) and l2.get("metadata", {}).get("strategy")
        diff = "yes" if p1 == p2 else f"no (+{len(p2 - p1)} -{len(p1 - p2)})"
        print(f"{n:18} {s1:7.1f} {s2:7.1f} {len(p1):4}/{len(p2):<4}  {diff:9} {'yes' if keeps else 'no'}"
              f"{'' if c1 == 0 and c2 == 0 else f'  exit pdm {c1} uv {c2}'}", flush=True)
    print(f"{'total':18} {tot[0]:7.1f} {tot[1]:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
