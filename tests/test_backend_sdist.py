"""Sdist-only locked packages are installed after the wheels, without build isolation."""

from __future__ import annotations

import shutil
from pathlib import Path

from pyrepro import proc
from pyrepro.backends import local
from pyrepro.paths import Paths
from pyrepro.proc import Completed
from pyrepro.registry import load_registry

SC = Path(__file__).parent / "scenarios" / "backend"

SDIST_PKG = '''
[[package]]
name = "torch-scatter"
version = "2.1.1"
requires_python = ">=3.7"
summary = ""
files = [
    {file = "torch_scatter-2.1.1.tar.gz", hash = "sha256:59b6fad2c04f58b4ea46bb56e839edfd421faaa849d5e32ab1290975b9ef1656"},
]
'''


def test_build_env__sdist_only_package__second_pip_phase_without_isolation(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(SC / "models", root / "models")
    lock = root / "models" / "mini" / "pdm.lock"
    lock.write_text(lock.read_text() + SDIST_PKG)
    paths = Paths(root=root, cache=tmp_path / "cache")
    spec = load_registry(paths.models).get("mini")
    pkgs = local.locked_packages(lock, "3.11", "linux-x86_64")
    assert [(p.name, p.sdist_only) for p in pkgs] == [("six", False), ("torch-scatter", True)]
    pip_calls: list[tuple[list[str], str]] = []

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] == ["-m", "pip", "install"]:
            pip_calls.append((argv[4:], Path(argv[-1]).read_text()))
            return Completed(tuple(argv), 0, "", "")
        return proc.run(cmd, **kw)

    env_dir, _key, _version, hit = local.build_env(spec, paths, runner=runner, platform="linux-x86_64")
    assert not hit and (env_dir / local.COMPLETE).is_file()
    (wheel_args, wheel_req), (sdist_args, sdist_req) = pip_calls
    assert "--no-build-isolation" not in wheel_args and wheel_req.startswith("six==1.17.0 ")
    # built as its authors would: PEP 517 isolation first (it worked here, so no second try)
    assert "--no-build-isolation" not in sdist_args and "--require-hashes" in sdist_args
    assert sdist_req.startswith("torch-scatter==2.1.1 --hash=sha256:59b6fad2") and "six" not in sdist_req


def test_build_env__sdist_fails_isolated__retried_without_isolation(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(SC / "models", root / "models")
    lock = root / "models" / "mini" / "pdm.lock"
    lock.write_text(lock.read_text() + SDIST_PKG)
    paths = Paths(root=root, cache=tmp_path / "cache")
    spec = load_registry(paths.models).get("mini")
    pip_calls: list[list[str]] = []

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] == ["-m", "pip", "install"]:
            pip_calls.append(argv[4:])
            sdist = argv[-1].endswith("requirements-sdist.txt")
            if sdist and "--no-build-isolation" not in argv:  # setup.py imports torch, never declared
                return Completed(tuple(argv), 1, "", "ModuleNotFoundError: No module named 'torch'\n")
            return Completed(tuple(argv), 0, "", "")
        return proc.run(cmd, **kw)

    env_dir, _key, _version, _hit = local.build_env(spec, paths, runner=runner, platform="linux-x86_64")
    assert (env_dir / local.COMPLETE).is_file()
    assert ["--no-build-isolation" in c for c in pip_calls] == [False, False, True]
