"""Python 3.6 and 3.7 targets (issue 23): pdm locks them through a stand-in interpreter (its
helpers do not run there), the local backend installs them with the last pip released for them,
and every pdm run gets a temporary directory of its own that is removed afterwards."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyrepro import buildreqs, lock, pdmrun, proc
from pyrepro.backends import local
from pyrepro.errors import ExternalToolError, MissingToolError
from pyrepro.index import Index
from pyrepro.interpreters import first_patch, lock_range
from pyrepro.paths import Paths
from pyrepro.proc import Completed
from pyrepro.registry import load_registry
from tests.fakes import FakeRunner
from tests.test_lock import GOOD_LOCK

SC = Path(__file__).parent / "scenarios" / "backend"
STAND_IN_CMD = (sys.executable, "-m", "pyrepro.pdmrun")


def _project(tmp: Path, python: str, deps: tuple[str, ...] = ("six",)) -> Path:
    d = tmp / "proj"
    d.mkdir()
    body = "".join(f'    "{x}",\n' for x in deps)
    (d / "pyproject.toml").write_text(f'[project]\nname = "p"\nversion = "0"\nrequires-python = "{lock_range(python)}"\n'
                                      f'dependencies = [\n{body}]\n\n[tool.pdm]\ndistribution = false\n')
    return d


def _writes_lock(seen: list[tuple[tuple[str, ...], dict[str, str]]],
                 also: Callable[[dict[str, str]], None] | None = None) -> Callable[..., Completed]:
    def pdm(argv: tuple[str, ...], cwd: Path | None, env: Any) -> Completed:
        seen.append((argv, dict(env)))
        if also is not None:
            also(env)
        if "--append" not in argv:
            proj = Path(argv[argv.index("-p") + 1])
            h = lock.content_hash(lock.read_pyproject(proj / "pyproject.toml"))
            (proj / "pdm.lock").write_text(GOOD_LOCK.format(h=h.removeprefix("sha256:")))
        return Completed(argv, 0, "", "")
    return pdm


# --------------------------------------------------------------------------- lock: which interpreter pdm runs

@pytest.mark.parametrize(("python", "stand_in"), [("3.6", True), ("3.7", True), ("3.8", False), ("3.10", False),
                                                   ("3.12", False)])
def test_needs_stand_in__only_pythons_pdms_helpers_do_not_run_on(python: str, stand_in: bool) -> None:
    assert pdmrun.needs_stand_in(python) is stand_in


@pytest.mark.parametrize("python", ["3.6", "3.7"])
def test_lock_request__old_target__pdm_runs_stand_in_never_the_target(tmp_path: Path, python: str) -> None:
    d = _project(tmp_path, python)
    seen: list[tuple[tuple[str, ...], dict[str, str]]] = []
    runner = FakeRunner().on(STAND_IN_CMD, _writes_lock(seen))
    stand_in = Path("/opt/py/3.8/bin/python3.8")
    out = lock.lock_request(lock.LockRequest("p", d, python), runner=runner, python_exe=stand_in)
    assert out.category == 1
    (x86, env), (arm, env2) = seen
    assert x86[:len(STAND_IN_CMD)] == STAND_IN_CMD and arm[:len(STAND_IN_CMD)] == STAND_IN_CMD
    # the lock target says which Python and platform the lock is for
    assert x86[len(STAND_IN_CMD):len(STAND_IN_CMD) + 2] == ("lock", "-v")
    i = x86.index("--python")
    # from the minor's first bug-fix release: pandas 1.0-1.3 declare python_requires>=3.6.1 / >=3.7.1
    assert x86[i:i + 6] == ("--python", lock_range(python), "--platform", "manylinux_2_28_x86_64",
                            "--implementation", "cpython")
    assert "--append" in arm and "manylinux_2_28_aarch64" in arm
    assert env[pdmrun.STAND_IN_ENV] == env["PDM_PYTHON"] == str(stand_in) == env2[pdmrun.STAND_IN_ENV]
    # nothing at all ran an interpreter of the target's version
    assert all(not any(f"python{python}" in a for a in call[0]) for call in runner.calls)
    assert any(str(stand_in) in f and python in f for f in out.fidelity)
    assert str(stand_in) in (d / "lock.toml").read_text()


def test_lock_request__3_10__pinned_pdm_with_the_targets_interpreter(tmp_path: Path) -> None:
    d = _project(tmp_path, "3.10")
    seen: list[tuple[tuple[str, ...], dict[str, str]]] = []
    runner = FakeRunner().on(lock.pdm_command(), _writes_lock(seen))
    out = lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=runner, python_exe=Path("/usr/bin/python3.10"))
    assert out.category == 1 and not any("pdm ran on" in f for f in out.fidelity)
    (x86, env), _ = seen
    assert x86[:len(lock.pdm_command())] == tuple(lock.pdm_command())
    assert env["PDM_PYTHON"] == "/usr/bin/python3.10" and pdmrun.STAND_IN_ENV not in env


def test_lock_request__old_target_without_python_exe__target_interpreter_never_searched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def find(v: str) -> Path:
        asked.append(v)
        if v == "3.9":
            return Path("/opt/py/3.9/bin/python3.9")
        raise MissingToolError(f"no Python {v}")

    monkeypatch.setattr("pyrepro.interpreters.find_python", find)
    monkeypatch.setattr(lock, "find_python", find)
    d = _project(tmp_path, "3.7")
    seen: list[tuple[tuple[str, ...], dict[str, str]]] = []
    runner = FakeRunner().on(STAND_IN_CMD, _writes_lock(seen))
    out = lock.lock_request(lock.LockRequest("p", d, "3.7"), runner=runner, aarch64=False)
    assert out.category == 1
    assert asked == ["3.8", "3.9"]  # the nearest newer one pdm runs on; never 3.7
    assert seen[0][1][pdmrun.STAND_IN_ENV] == "/opt/py/3.9/bin/python3.9"


def test_stand_in_interpreter__nearest_newer_installed__else_pyreros_own() -> None:
    have = {"3.9": Path("/p/3.9"), "3.10": Path("/p/3.10")}

    def find(v: str) -> Path:
        if v in have:
            return have[v]
        raise MissingToolError(f"no Python {v}")

    assert pdmrun.stand_in_interpreter("3.6", find) == Path("/p/3.9")
    have["3.8"] = Path("/p/3.8")
    assert pdmrun.stand_in_interpreter("3.7", find) == Path("/p/3.8")
    assert pdmrun.stand_in_interpreter("3.6", lambda v: (_ for _ in ()).throw(MissingToolError(v))) == \
        Path(sys.executable)


def test_stand_in_main__pinned_pdm_uses_the_stand_in_whatever_requires_python_says(tmp_path: Path) -> None:
    """The real pdm (offline: ``pdm info`` resolves nothing) through ``python -m pyrepro.pdmrun``,
    for a project that admits only Python 3.6: pdm's interpreter is the stand-in."""
    d = _project(tmp_path, "3.6")
    env = pdmrun._pdm_env(Path(sys.executable), stand_in=True, tmp=tmp_path)
    env["PDM_CACHE_DIR"] = str(tmp_path / "pdm-cache")
    done = subprocess.run([*STAND_IN_CMD, "info", "--python", "-p", str(d)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).resolve() == Path(sys.executable).resolve()
    # without the stand-in pdm refuses (or finds a 3.6 of its own): it never reports ours
    plain = pdmrun._pdm_env(Path(sys.executable), tmp=tmp_path)
    plain["PDM_CACHE_DIR"] = env["PDM_CACHE_DIR"]
    other = subprocess.run([*lock.pdm_command(), "info", "--python", "-p", str(d)], env=plain,
                           capture_output=True, text=True, timeout=120)
    assert other.returncode != 0 or Path(other.stdout.strip()).resolve() != Path(sys.executable).resolve()


def test_patch_pdm_for_stand_in__build_env_resolves_for_the_stand_in__metadata_files_of_either_python(
        tmp_path: Path) -> None:
    """pymatgen on 3.7 has only sdists for Linux: pdm builds their metadata in a build environment
    on the stand-in. That environment resolves its build requirements for the stand-in's Python,
    and a metadata file may be a wheel of either Python. Run in a child process: the patch changes
    pdm's classes."""
    d = _project(tmp_path, "3.7")
    script = f"""
import sys
from pyrepro import pdmrun
pdmrun.patch_pdm_for_stand_in(sys.executable)
from pdm.core import Core
from pdm.environments.python import PythonEnvironment
project = Core().create_project({str(d)!r})
project_env = PythonEnvironment(project, python=sys.executable)
build_env = PythonEnvironment(project, python=sys.executable, prefix={str(tmp_path / 'prefix')!r})
mm = f"{{sys.version_info[0]}}.{{sys.version_info[1]}}"
print(str(project_env.python_requires), "|", str(build_env.python_requires), "|", mm)
cp = "cp" + mm.replace(".", "")
for wheel in ("numpy-1.21.6-cp37-cp37m-manylinux_2_12_x86_64.whl",
              f"numpy-9.0-{{cp}}-{{cp}}-manylinux_2_17_x86_64.whl", "numpy-1.0-cp35-cp35m-manylinux1_x86_64.whl"):
    print(wheel.split("-")[2], project_env.allow_all_spec.wheel_compatibility(wheel) is not None)
"""
    env = {**os.environ, "PDM_CACHE_DIR": str(tmp_path / "pdm-cache"), "PDM_CHECK_UPDATE": "false"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    project_req, build_req, mm = (x.strip() for x in lines[0].split("|"))
    assert project_req == "<3.8,>=3.7.1" and build_req == f"=={mm}.*"
    assert lines[1:] == ["cp37 True", f"cp{mm.replace('.', '')} True", "cp35 False"]


@pytest.mark.integration
@pytest.mark.network
def test_lock__3_7__sdist_only_dependency_with_build_requirements__locks(tmp_path: Path) -> None:
    """pymatgen>=2020.7.18 on 3.7 (dev corpus: megnet-multifidelity): Linux gets only sdists,
    whose build requires numpy>=1.20.1; before the build environment resolved for the stand-in,
    pdm stopped with "No candidate is found for `numpy` that matches the environment"."""
    if not _pypi_reachable():
        pytest.skip("PyPI is not reachable")
    d = _project(tmp_path, "3.7", ("numpy>=1.19.1", "pymatgen>=2020.7.18"))
    out = lock.lock_request(lock.LockRequest("p", d, "3.7"), timeout=600, aarch64=False)
    assert out.ok, out.message
    text = (d / "pdm.lock").read_text()
    assert 'name = "pymatgen"' in text and 'requires_python = "~=3.7.1"' in text  # pdm's form of >=3.7.1,<3.8


@pytest.mark.integration
@pytest.mark.network
def test_lock__3_7__dependency_needing_the_first_bugfix_release__locks(tmp_path: Path) -> None:
    """alignn 2021 (held corpus2 half): pandas>=1.2.3 on 3.7; every pandas 1.2-1.3 declares
    python_requires>=3.7.1, so a lock for ==3.7.* stopped with "the following dependencies don't
    work on all Python versions in the range of the project's requires-python"."""
    if not _pypi_reachable():
        pytest.skip("PyPI is not reachable")
    d = _project(tmp_path, "3.7", ("pandas>=1.2.3,<1.4",))
    out = lock.lock_request(lock.LockRequest("p", d, "3.7"), timeout=600, aarch64=False)
    assert out.ok, out.message
    assert 'name = "pandas"' in (d / "pdm.lock").read_text()


@pytest.mark.parametrize(("python", "expect"), [("3.6", ">=3.6.8,<3.7"), ("3.7", ">=3.7.1,<3.8"),
                                                ("3.8", "==3.8.*"), ("3.10", "==3.10.*")])
def test_init__old_minor__pyproject_requires_python_from_its_first_bugfix_release(
        write_files: Any, tmp_path: Path, isolated_cache: Path, python: str, expect: str) -> None:
    from pyrepro.cli import main

    root = write_files({"sub/run.py": "import numpy\n", "sub/runtime.txt": f"python-{python}.9\n"})
    assert main(["init", str(root / "sub"), "--name", "sub", "--models-dir", str(tmp_path / "models"),
                 "--offline"]) == 0
    pyproject = tomllib.loads((tmp_path / "models" / "sub" / "pyproject.toml").read_text())
    assert pyproject["project"]["requires-python"] == expect


def test_patch_pdm_legacy_backend__pips_default_for_sdists_without_a_build_system() -> None:
    script = ("from pyrepro import pdmrun\nfrom pdm.builders.base import EnvBuilder\n"
              "before = list(EnvBuilder.DEFAULT_BACKEND['requires'])\npdmrun.patch_pdm_legacy_backend()\n"
              "print(before, EnvBuilder.DEFAULT_BACKEND)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("['setuptools>=61'] ")  # pdm's own, which no 2021 date bound admits
    assert "'requires': ['setuptools>=40.8.0', 'wheel']" in done.stdout
    assert "setuptools.build_meta:__legacy__" in done.stdout
    assert lock.pdm_command()[1:] == ["-m", "pyrepro.pdmrun"]  # every lock goes through it


@pytest.mark.integration
@pytest.mark.network
def test_lock__date_bound_before_setuptools_61__sdist_without_build_system__locks(tmp_path: Path) -> None:
    """matminer 0.6.5 is an sdist with a setup.py only (dev corpus: modnet-2021, notebook date
    2021-03-01): pdm's own default build requirement, setuptools>=61 (March 2022), does not exist
    under the date bound; pip's legacy default does."""
    import datetime as dt

    if not _pypi_reachable():
        pytest.skip("PyPI is not reachable")
    d = _project(tmp_path, "3.8", ("matminer==0.6.5",))
    out = lock.lock_request(lock.LockRequest("p", d, "3.8", submitted=dt.date(2021, 3, 1)), start="date-bounded",
                            timeout=600, aarch64=False)
    assert out.ok and out.strategy == "date-bounded", out.message
    assert 'name = "matminer"\nversion = "0.6.5"' in (d / "pdm.lock").read_text()


# --------------------------------------------------------------------------- pdm's temporary directory

def test_run_pdm__own_temporary_directory__pdm_build_leftovers_removed(tmp_path: Path) -> None:
    d = _project(tmp_path, "3.10")
    dirs: list[Path] = []

    def litter(env: dict[str, str]) -> None:
        t = Path(env["TMPDIR"])
        assert env["TMP"] == env["TEMP"] == str(t) and t.is_dir()
        made = Path(tempfile.mkdtemp(prefix="pdm-build-", dir=t))  # as pdm's candidates.py does
        (made / "setup.py").write_text("")
        dirs.append(t)

    seen: list[tuple[tuple[str, ...], dict[str, str]]] = []
    runner = FakeRunner().on(lock.pdm_command(), _writes_lock(seen, litter))
    out = lock.lock_request(lock.LockRequest("p", d, "3.10"), runner=runner, python_exe=Path("/usr/bin/python3"))
    assert out.category == 1 and len(dirs) == 2
    assert dirs[0] == dirs[1]  # the aarch64 run of the same attempt shares it
    assert Path(tempfile.gettempdir()) != dirs[0]
    assert not dirs[0].exists()


def test_run_pdm__timeout__temporary_directory_removed_too(tmp_path: Path) -> None:
    dirs: list[Path] = []

    def runner(cmd: Any, *, env: Any = None, **kw: Any) -> Completed:
        t = Path(env["TMPDIR"])
        (t / "pdm-build-xyz").mkdir()
        dirs.append(t)
        raise ExternalToolError(tuple(cmd), -9, "", timeout=5.0)

    work = tmp_path / "w"
    work.mkdir()
    run = pdmrun._run_pdm(work, "3.7", None, runner=runner, python_exe=Path("/opt/py/3.8"), timeout=5.0,
                          aarch64=True)
    assert not run.ok and "timed out" in run.text
    assert dirs and not dirs[0].exists()


def test_run_pdm__runner_crash__temporary_directory_removed(tmp_path: Path) -> None:
    dirs: list[Path] = []

    def runner(cmd: Any, *, env: Any = None, **kw: Any) -> Completed:
        dirs.append(Path(env["TMPDIR"]))
        raise KeyboardInterrupt

    work = tmp_path / "w"
    work.mkdir()
    with pytest.raises(KeyboardInterrupt):
        pdmrun._run_pdm(work, "3.10", None, runner=runner, python_exe=None, timeout=5.0, aarch64=False)
    assert dirs and not dirs[0].exists()


# --------------------------------------------------------------------------- build: the pip that installs

def _mini(tmp_path: Path, python: str) -> tuple[Any, Paths]:
    root = tmp_path / "root"
    shutil.copytree(SC / "models", root / "models")
    mt = root / "models" / "mini" / "model.toml"
    text = mt.read_text()
    import re

    text, n = re.subn(r'(?m)^python = "[^"]*"', f'python = "{python}"', text)
    assert n == 1
    mt.write_text(text)
    paths = Paths(root=root, cache=tmp_path / "cache")
    return load_registry(paths.models).get("mini"), paths


@pytest.mark.parametrize(("python", "pip"), [("3.6", "21.3.1"), ("3.7", "24.0")])
def test_build_env__old_python__last_pip_for_it_hash_checked_before_the_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, python: str, pip: str) -> None:
    spec, paths = _mini(tmp_path, python)
    assert spec.python == python
    monkeypatch.setattr(local, "find_python", lambda v, runner=None: Path(f"/opt/py/{v}/bin/python{v}"))
    pip_calls: list[tuple[str, ...]] = []

    def runner(cmd: Any, **kw: Any) -> Completed:
        argv = tuple(str(c) for c in cmd)
        if argv[1:3] == ("-m", "venv"):
            (Path(argv[3]) / "bin").mkdir(parents=True)
            return Completed(argv, 0, "", "")
        if argv[1:4] == ("-m", "pip", "download"):  # into the download store
            return Completed(tuple(str(c) for c in cmd), 0, "", "")
        elif argv[1:4] == ("-m", "pip", "install"):
            pip_calls.append((*argv, Path(argv[-1]).read_text()))
            return Completed(argv, 0, "", "")
        if argv[1] == "-c":
            return Completed(argv, 0, f"{python}.15\n", "")
        raise AssertionError(argv)

    env_dir, key, version, hit = local.build_env(spec, paths, runner=runner, platform="linux-x86_64")
    assert not hit and version == f"{python}.15"
    boot, install = pip_calls
    assert "--require-hashes" in boot and boot[-1] == f"pip=={pip} --hash={local.BOOTSTRAP_PIP[python][1]}\n"
    assert install[-1].startswith("six==1.17.0 ")
    assert json.loads((env_dir / local.COMPLETE).read_text())["pip"] == pip
    # the bootstrap pip is part of the key: an environment made with the venv's own pip is not reused
    assert key == local.env_key(spec, "linux-x86_64")
    monkeypatch.setitem(local.BOOTSTRAP_PIP, python, (pip, "sha256:" + "0" * 64))
    assert key != local.env_key(spec, "linux-x86_64")


def test_build_env__3_10__venvs_own_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, paths = _mini(tmp_path, "3.10")
    monkeypatch.setattr(local, "find_python", lambda v, runner=None: Path("/opt/py/3.10/bin/python3.10"))
    pip_reqs: list[str] = []

    def runner(cmd: Any, **kw: Any) -> Completed:
        argv = tuple(str(c) for c in cmd)
        if argv[1:3] == ("-m", "venv"):
            (Path(argv[3]) / "bin").mkdir(parents=True)
        elif argv[1:4] == ("-m", "pip", "download"):  # into the download store
            return Completed(tuple(str(c) for c in cmd), 0, "", "")
        elif argv[1:4] == ("-m", "pip", "install"):
            pip_reqs.append(Path(argv[-1]).read_text())
        elif argv[1] == "-c":
            return Completed(argv, 0, "3.10.13\n", "")
        return Completed(argv, 0, "", "")

    env_dir, _k, _v, _hit = local.build_env(spec, paths, runner=runner, platform="linux-x86_64")
    assert len(pip_reqs) == 1 and not pip_reqs[0].startswith("pip==")
    assert "pip" not in json.loads((env_dir / local.COMPLETE).read_text())


# --------------------------------------------------------------------------- build requirements for an old Python

def test_newest_before__release_whose_files_do_not_admit_the_python__skipped() -> None:
    def f(v: str, day: str, rp: str | None) -> dict[str, Any]:
        d: dict[str, Any] = {"filename": f"setuptools-{v}-py3-none-any.whl", "url": f"https://files/{v}",
                             "upload-time": f"{day}T00:00:00Z"}
        if rp is not None:
            d["requires-python"] = rp
        return d

    listing = {"name": "setuptools", "files": [f("59.6.0", "2021-12-01", ">=3.6"), f("65.0.0", "2022-08-01", ">=3.7"),
                                               f("67.0.0", "2023-01-20", ">=3.7"), f("68.0.0", "2023-06-01", None)]}
    idx = Index(None, lambda url: json.dumps(listing).encode() if url.rstrip("/").endswith("setuptools") else None)
    day = dt.date(2023, 3, 1)
    assert buildreqs.newest_before(idx, "setuptools", "", day) == "67.0.0"
    assert buildreqs.newest_before(idx, "setuptools", "", day, "3.7") == "67.0.0"
    assert buildreqs.newest_before(idx, "setuptools", "", day, "3.6") == "59.6.0"
    assert buildreqs.newest_before(idx, "setuptools", "", dt.date(2023, 7, 1), "3.6") == "68.0.0"  # none stated


# --------------------------------------------------------------------------- end to end (PyPI)

def _pypi_reachable() -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen("https://pypi.org/simple/six/", timeout=10):
            return True
    except OSError:
        return False


@pytest.mark.integration
@pytest.mark.network
@pytest.mark.parametrize("resolver", ["uv first", "pdm"])
@pytest.mark.parametrize("python", ["3.7", "3.6"])
def test_reproduce__old_python_from_an_empty_cache__locks_builds_imports(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, python: str, resolver: str) -> None:
    """Issue 23: a 3.6 or 3.7 submission locks, builds and imports from an empty cache, by the
    reproduction's default (a lock from uv's resolution first) and with pdm (``--pdm``), whose
    helpers do not run on these Pythons (it runs on a stand-in)."""
    from pyrepro import interpreters
    from pyrepro.reproduce import reproduce

    try:
        interpreters.find_python(python)
    except MissingToolError as exc:
        pytest.skip(f"no Python {python} here: {exc}")
    if not _pypi_reachable():
        pytest.skip("PyPI is not reachable")
    root = tmp_path / "proj"
    (root / "models").mkdir(parents=True)
    (root / "patches").mkdir()
    (root / "flake.nix").write_text("{}\n")
    cache = tmp_path / "cache"  # empty: no pdm compat libraries, no pip downloads, no environments
    monkeypatch.setenv("PYREPRO_CACHE", str(cache))
    monkeypatch.delenv("PDM_CACHE_DIR", raising=False)
    temp = tmp_path / "temp"  # the temporary directory pdm's runs are made under, observed afterwards
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", None)
    sub = tmp_path / f"py{python.replace('.', '')}sub"
    sub.mkdir()
    # termcolor 1.1.0 is a sdist only: pdm builds its metadata (in a pdm-build-* folder), pip builds it
    (sub / "run.py").write_text("import numpy\nimport termcolor\nprint(numpy.__version__)\n")
    (sub / "requirements.txt").write_text("numpy==1.19.5\ntermcolor==1.1.0\n")
    rec = reproduce(sub, paths=Paths(root=root, cache=cache), python=python, lock_timeout=600,
                    uv_first=resolver == "uv first")
    stages = {s.name: s for s in rec.stages}
    assert rec.ok, [(s.name, s.status, s.detail) for s in rec.stages]
    assert stages["imports"].status == "ok" and "numpy" in stages["imports"].detail
    assert "termcolor" in stages["imports"].detail
    model = root / "models" / sub.name
    assert lock.check_lock_dir(model) == []
    record = (model / "lock.toml").read_text()
    if resolver == "pdm":
        assert f'requires_python = "~={first_patch(python)}"' in (model / "pdm.lock").read_text()  # pdm's form
        assert "pdm ran on" in record
    else:
        assert f'requires_python = "{lock_range(python)}"' in (model / "pdm.lock").read_text()
        assert 'resolver = "uv"' in record and lock.UV_FIRST_WHY in record
    env = next((cache / "envs").glob(f"{sub.name}-*"))
    info = json.loads((env / local.COMPLETE).read_text())
    assert info["python"].startswith(python + ".") and info["pip"] == local.BOOTSTRAP_PIP[python][0]
    pip_version = proc.run([str(env / "bin" / "python"), "-m", "pip", "--version"], check=True).stdout
    assert pip_version.startswith(f"pip {info['pip']} ")
    leftovers = [*temp.rglob("pdm-build-*"), *temp.glob("pyrepro-pdm-tmp-*")]
    assert leftovers == [], leftovers
    assert not os.environ.get(pdmrun.STAND_IN_ENV)


@pytest.mark.integration
@pytest.mark.network
def test_lock__3_6__torch_of_the_last_cp36_release(tmp_path: Path) -> None:
    """LocalRetro 2021 (corpus3 dev): torch 1.7.1-1.10.2 declare python_requires>=3.6.2, so a lock
    for ==3.6.* (or >=3.6.1) stopped at torch 1.7.0, and DGL then refused to import."""
    if not _pypi_reachable():
        pytest.skip("PyPI is not reachable")
    d = _project(tmp_path, "3.6", ("torch",))
    out = lock.lock_request(lock.LockRequest("p", d, "3.6"), timeout=600, aarch64=False)
    assert out.ok, out.message
    assert lock.read_lock_versions((d / "pdm.lock").read_text())["torch"] == "1.10.2"
