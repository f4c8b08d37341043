"""``pyrepro doctor``: what this machine offers pyrepro, and what to install for the rest.

Every check is a ``Check(name, status, detail, fix)`` with status ``ok``, ``warn``,
``missing`` or ``info``. Nothing here changes the machine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pyrepro import gpu, proc
from pyrepro.errors import PyreproError
from pyrepro.proc import Runner


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok | warn | missing | info
    detail: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


def _tool_version(runner: Runner, argv: list[str], pattern: str) -> str | None:
    if proc.which(argv[0]) is None:
        return None
    try:
        res = runner(argv, check=False, timeout=30)
    except PyreproError:
        return None
    m = re.search(pattern, res.stdout + res.stderr)
    return m.group(1) if m else (res.stdout + res.stderr).strip().splitlines()[0] if (res.stdout + res.stderr).strip() else "?"


def check_nix(runner: Runner) -> list[Check]:
    ver = _tool_version(runner, ["nix", "--version"], r"(\d+\.\d+[\w.]*)")
    if ver is None:
        return [Check("nix", "missing", "Nix is not installed; the local backend still works",
                      "Debian/Ubuntu: apt-get install nix-bin; elsewhere: https://nixos.org/download")]
    out = [Check("nix", "ok", f"Nix {ver}")]
    try:
        cfg = runner(["nix", "--extra-experimental-features", "nix-command", "show-config"], check=False,
                     timeout=30).stdout
    except PyreproError:
        cfg = ""
    settings = dict(re.findall(r"^(\S+) = (.*)$", cfg, flags=re.M))
    features = settings.get("experimental-features", "")
    if "flakes" in features.split():
        out.append(Check("nix flakes", "ok", "enabled"))
    else:
        out.append(Check("nix flakes", "warn", f"not enabled (experimental-features = {features or 'none'})",
                         "add 'experimental-features = nix-command flakes' to ~/.config/nix/nix.conf "
                         "(or pass --extra-experimental-features 'nix-command flakes')"))
    sandbox = settings.get("sandbox", "unknown")
    out.append(Check("nix sandbox", "ok" if sandbox == "true" else "warn", f"sandbox = {sandbox}",
                     "" if sandbox == "true" else "set 'sandbox = true' in nix.conf for pure builds"))
    subs = settings.get("substituters", "")
    out.append(Check("nix substituters", "info", subs or "(none)"))
    return out


def check_tools(runner: Runner) -> list[Check]:
    out = []
    for name, argv, pat, why in [
        ("graphviz dot", ["dot", "-V"], r"version (\S+)", "pyrepro graph renders SVG/PNG/PDF"),
        ("patch", ["patch", "--version"], r"patch (\S+)", "applies the reviewed patch series"),
        ("git", ["git", "--version"], r"version (\S+)", "reads earlier locks for graph --diff"),
        ("zip", ["zip", "-v"], r"Zip (\S+)", "some upstream scripts call zip (patched out)"),
    ]:
        ver = _tool_version(runner, argv, pat)
        if ver is None:
            out.append(Check(name, "missing", f"not found; {why}", proc.install_hint(argv[0])))
        else:
            out.append(Check(name, "ok", ver))
    return out


def check_pythons(find: Callable[[str], Path | None] | None = None) -> list[Check]:
    """CPython versions the local backend can use for model environments: every version of
    pyrepro's one release table (``interpreters.RELEASES``), found by its one search."""
    from pyrepro.interpreters import RELEASES

    versions = [v for v, _d in RELEASES]
    if find is None:
        find = _default_find
    found, missing = [], []
    for v in versions:
        p = find(v)
        (found if p else missing).append(f"{v}" + (f" ({p})" if p else ""))
    status = "ok" if found else "missing"
    detail = "found: " + (", ".join(v.split(" ")[0] for v in found) or "none")
    fix = ("missing " + ", ".join(missing) + "; install with 'pyenv install X.Y' where a model needs it") if missing else ""
    return [Check("python interpreters", status, detail, fix)]


def _default_find(version: str) -> Path | None:
    """``interpreters.find_python``, the search every stage uses (probed, so a broken pyenv folder
    is not reported as found); None when it finds none."""
    from pyrepro import interpreters

    try:
        return interpreters.find_python(version)
    except PyreproError:
        return None


def check_gpu(root: Path, runner: Runner) -> list[Check]:
    d = gpu.discover_driver(root, runner=runner)
    if d.driver is None:
        return [Check("gpu driver", "info", "no NVIDIA driver found; models run on CPU (searched "
                      + ", ".join(d.searched) + ")",
                      "for GPU runs install the NVIDIA driver (NixOS: hardware.graphics.enable and "
                      "hardware.nvidia; other distributions: the vendor driver package)")]
    status = "ok" if d.driver.complete else "warn"
    fix = "" if d.driver.complete else "install the full NVIDIA user-space driver (libnvidia-ml, ptxjitcompiler)"
    return [Check("gpu driver", status, d.driver.summary(), fix)]


CUDA_PROBE = (
    "import json\nr={}\n"
    "try:\n import torch; r['torch']=[torch.__version__, bool(torch.cuda.is_available())]\n"
    "except Exception as e: r['torch']=str(e)[:200]\n"
    "try:\n import tensorflow as tf; r['tensorflow']=[tf.__version__, len(tf.config.list_physical_devices('GPU'))>0]\n"
    "except Exception as e: r['tensorflow']=str(e)[:200]\n"
    "print(json.dumps(r))\n"
)


def check_cuda_in_env(python: Path, env: dict[str, str], runner: Runner) -> list[Check]:
    """Whether torch / TensorFlow in a model environment see a GPU."""
    try:
        res = runner([str(python), "-c", CUDA_PROBE], env=env, check=False, timeout=300)
        data = json.loads(res.stdout.strip().splitlines()[-1])
    except (PyreproError, ValueError, IndexError) as exc:
        return [Check("cuda in environment", "warn", f"probe failed: {exc}")]
    out = []
    for fw in ("torch", "tensorflow"):
        v = data.get(fw)
        if isinstance(v, list):
            out.append(Check(f"{fw} cuda", "ok" if v[1] else "info",
                             f"{fw} {v[0]}: GPU {'visible' if v[1] else 'not visible'}"))
        else:
            out.append(Check(f"{fw} cuda", "info", f"{fw} not importable in this environment"))
    return out


def _dir_summary(path: Path, budget: int = 200_000) -> str:
    if not path.exists():
        return "absent"
    total, files = 0, 0
    for dirpath, _dirs, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(dirpath, n)).st_size
            except OSError:
                continue
            files += 1
            if files >= budget:
                return f"> {total / 2**20:.0f} MiB (stopped counting at {budget} files)"
    return f"{total / 2**20:.1f} MiB in {files} files"


def check_disk_and_caches(cache: Path) -> list[Check]:
    probe = cache
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    du = shutil.disk_usage(probe)
    free_gib = du.free / 2**30
    status = "ok" if free_gib >= 20 else "warn"
    out = [Check("free disk", status, f"{free_gib:.1f} GiB free on the cache's filesystem ({probe})",
                 "" if status == "ok" else "heavy model environments (TensorFlow, torch) need 5-10 GiB each; "
                 "free space or set PYREPRO_CACHE to a larger disk")]
    out.append(Check("cache", "info", f"{cache}: {_dir_summary(cache)}"))
    if cache.is_dir():
        for sub in sorted(p for p in cache.iterdir() if p.is_dir()):
            entries = sum(1 for _ in sub.iterdir())
            out.append(Check(f"cache/{sub.name}", "info", f"{entries} entries"))
    return out


def run_doctor(cache: Path, *, runner: Runner = proc.run, gpu_root: Path = Path("/"),
               env_python: Path | None = None, env: dict[str, str] | None = None) -> list[Check]:
    checks: list[Check] = []
    checks += check_nix(runner)
    checks += check_tools(runner)
    checks += check_pythons()
    checks += check_gpu(gpu_root, runner)
    if env_python is not None:
        checks += check_cuda_in_env(env_python, env or dict(os.environ), runner)
    checks += check_disk_and_caches(cache)
    return checks
