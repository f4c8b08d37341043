"""Sdist-only locked packages are installed after the wheels, without build isolation."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

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


def sdist_model(tmp_path: Path, sdist: str = SDIST_PKG) -> tuple[Path, Paths, Any]:
    """The backend scenario's ``mini`` model, copied under ``tmp_path``, with ``sdist`` (a locked
    sdist-only package) added to its pdm.lock: (project root, paths, its spec)."""
    root = tmp_path / "root"
    shutil.copytree(SC / "models", root / "models")
    lock = root / "models" / "mini" / "pdm.lock"
    lock.write_text(lock.read_text() + sdist)
    paths = Paths(root=root, cache=tmp_path / "cache")
    return root, paths, load_registry(paths.models).get("mini")


@pytest.fixture(autouse=True)
def _index_offline(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """These builds are recorded, not real: the package index is not asked (an undated model's
    sdists would otherwise ask it for their upload day), except in network-marked tests."""
    if not request.node.get_closest_marker("network"):
        monkeypatch.setattr("pyrepro.index._urllib_fetch", lambda url: None)


def test_build_env__sdist_only_package__second_pip_phase_without_isolation(tmp_path: Path) -> None:
    root, paths, spec = sdist_model(tmp_path)
    lock = root / "models" / "mini" / "pdm.lock"
    pkgs = local.locked_packages(lock, "3.11", "linux-x86_64")
    assert [(p.name, p.sdist_only) for p in pkgs] == [("six", False), ("torch-scatter", True)]
    pip_calls: list[tuple[list[str], str]] = []

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] == ["-m", "pip", "download"]:  # into the download store
            return Completed(tuple(str(c) for c in cmd), 0, "", "")
        elif argv[1:4] == ["-m", "pip", "install"]:
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


SDIST_PKG_2 = SDIST_PKG.replace('"torch-scatter"', '"torch-cluster"').replace("2.1.1", "1.6.1").replace(
    "torch_scatter-2.1.1", "torch_cluster-1.6.1").replace("59b6fad2", "0a0a0a0a")


def test_build_env__two_sdists__built_side_by_side_then_their_wheels_installed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """torsional-diffusion (corpus4 held) spent 504 s compiling torch-scatter and torch-cluster one
    after the other (their setup.py turns ninja off, so each compiles on one core). With two build
    jobs each sdist is built into a wheel by its own hash-checked `pip wheel`, at the same time;
    the wheels are then installed from the folder they were built into."""
    import threading
    import time

    monkeypatch.setenv("PYREPRO_BUILD_JOBS", "2")
    paths, spec = _mini(tmp_path, sdist=SDIST_PKG + SDIST_PKG_2)
    running, most = [0], [0]
    guard = threading.Lock()
    builds: list[tuple[str, list[str]]] = []
    installs: list[list[str]] = []

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] == ["-m", "pip", "download"]:
            return Completed(tuple(argv), 0, "", "")
        if argv[1:4] == ["-m", "pip", "wheel"]:
            with guard:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.2)
            req = Path(argv[-1]).read_text()
            builds.append((req, argv))
            name, version = req.split()[0].split("==")
            out = Path(argv[argv.index("-w") + 1])
            (out / f"{name.replace('-', '_')}-{version}-cp311-cp311-linux_x86_64.whl").write_bytes(b"")
            with guard:
                running[0] -= 1
            return Completed(tuple(argv), 0, f"Successfully built {name}\n", "")
        if argv[1:4] == ["-m", "pip", "install"]:
            installs.append(argv[4:])
            return Completed(tuple(argv), 0, "", "")
        return proc.run(cmd, **kw)

    env_dir, _key, _version, _hit = local.build_env(spec, paths, runner=runner, platform="linux-x86_64")
    assert (env_dir / local.COMPLETE).is_file() and most[0] == 2  # both built at once
    assert sorted(r.split()[0] for r, _ in builds) == ["torch-cluster==1.6.1", "torch-scatter==2.1.1"]
    assert all("--require-hashes" in a and "--no-deps" in a and "--hash=sha256:" in r for r, a in builds)
    wheels_install = installs[-1]
    assert "--no-index" in wheels_install and sorted(Path(w).name.split("-")[0] for w in wheels_install
                                                     if w.endswith(".whl")) == ["torch_cluster", "torch_scatter"]


def test_build_env__an_sdist_built_before__its_wheel_reused_not_built_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kaggle-diabetic-retinopathy (corpus19 dev): after a repair moved some 2015 sdists to wheels
    and relocked, the next environment built the sdists it kept (matplotlib 1.4.3) again, and the
    budget ran out. A wheel built from a hash-checked sdist is kept by that sdist, interpreter and
    flags; the next environment that locks the same sdist installs it without building."""
    monkeypatch.setenv("PYREPRO_BUILD_JOBS", "2")
    paths, spec = _mini(tmp_path, sdist=SDIST_PKG + SDIST_PKG_2)
    built: list[str] = []
    installed: list[list[str]] = []

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] == ["-m", "pip", "wheel"]:
            name, version = Path(argv[-1]).read_text().split()[0].split("==")
            built.append(name)
            (Path(argv[argv.index("-w") + 1]) / f"{name.replace('-', '_')}-{version}-cp311-cp311-linux_x86_64.whl"
             ).write_bytes(name.encode())
            return Completed(tuple(argv), 0, "", "")
        if argv[1:4] == ["-m", "pip", "install"]:
            installed.append([Path(a).name for a in argv if a.endswith(".whl")])
            return Completed(tuple(argv), 0, "", "")
        if argv[1:4] == ["-m", "pip", "download"]:
            return Completed(tuple(argv), 0, "", "")
        return proc.run(cmd, **kw)

    local.build_env(spec, paths, runner=runner, platform="linux-x86_64")
    assert sorted(built) == ["torch-cluster", "torch-scatter"]
    kept = sorted(p.name for p in (paths.cache / "built-wheels").iterdir())
    assert len(kept) == 2 and all(k.startswith(("torch-cluster-1.6.1-", "torch-scatter-2.1.1-")) for k in kept)
    # another environment with the same sdists (the lock changed elsewhere): nothing is built
    for d in (paths.cache / "envs").iterdir():
        shutil.rmtree(d)
    local.build_env(spec, paths, runner=runner, platform="linux-x86_64")
    assert sorted(built) == ["torch-cluster", "torch-scatter"]
    assert sorted(installed[-1]) == ["torch_cluster-1.6.1-cp311-cp311-linux_x86_64.whl",
                                     "torch_scatter-2.1.1-cp311-cp311-linux_x86_64.whl"]


def test_build_env__parallel_sdist_build_fails__pip_names_it_and_no_isolation_follows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYREPRO_BUILD_JOBS", "2")
    paths, spec = _mini(tmp_path, sdist=SDIST_PKG + SDIST_PKG_2)
    wheel_flags: list[list[str]] = []

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] == ["-m", "pip", "wheel"]:
            wheel_flags.append(argv)
            if "torch-cluster" in Path(argv[-1]).read_text():
                return Completed(tuple(argv), 1, "", "error: subprocess-exited-with-error\n"
                                 "  ModuleNotFoundError: No module named 'torch'\nFailed to build torch-cluster\n")
            out = Path(argv[argv.index("-w") + 1])
            (out / "torch_scatter-2.1.1-cp311-cp311-linux_x86_64.whl").write_bytes(b"")
            return Completed(tuple(argv), 0, "", "")
        if argv[1:4] in (["-m", "pip", "install"], ["-m", "pip", "download"]):
            return Completed(tuple(argv), 0, "", "")
        return proc.run(cmd, **kw)

    with pytest.raises(local.SdistBuildError) as e:
        local.build_env(spec, paths, runner=runner, platform="linux-x86_64")
    assert e.value.packages == (("torch-cluster", "1.6.1"),)
    # the isolated pair first, then both again without isolation
    assert [("--no-build-isolation" in a) for a in wheel_flags] == [False, False, True, True]


def test_build_env__sdist_fails_isolated__retried_without_isolation(tmp_path: Path) -> None:
    _root, paths, spec = sdist_model(tmp_path)
    pip_calls: list[list[str]] = []

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] == ["-m", "pip", "download"]:  # into the download store
            return Completed(tuple(str(c) for c in cmd), 0, "", "")
        elif argv[1:4] == ["-m", "pip", "install"]:
            pip_calls.append(argv[4:])
            sdist = argv[-1].endswith("requirements-sdist.txt")
            if sdist and "--no-build-isolation" not in argv:  # setup.py imports torch, never declared
                return Completed(tuple(argv), 1, "", "ModuleNotFoundError: No module named 'torch'\n")
            return Completed(tuple(argv), 0, "", "")
        return proc.run(cmd, **kw)

    from pyrepro.index import Index

    offline = Index(paths.cache, lambda url: None)  # no upload day of the sdist either
    env_dir, _key, _version, _hit = local.build_env(spec, paths, runner=runner, platform="linux-x86_64",
                                                    index=offline)
    assert (env_dir / local.COMPLETE).is_file()
    assert ["--no-build-isolation" in c for c in pip_calls] == [False, False, False, True]
    # no date bound: the venv gets today's setuptools and wheel before the build without isolation
    # (a 3.12+ venv has no setuptools, none has wheel: "invalid command 'bdist_wheel'")
    assert pip_calls[2][-2:] == ["setuptools", "wheel"] and "--require-hashes" not in pip_calls[2]


def test_build_env__sdist_runs_a_tool_pypi_ships__its_wheel_installed_on_path_before_the_retry(
        tmp_path: Path) -> None:
    """ebo (corpus9 dev, Python 2): box2d 2.3.2's setup.py runs swig ("error: command 'swig'
    failed"). swig is in the name table's [build_tools]: before the build without isolation, its
    binary wheel goes into the environment (never an sdist of it), whose bin/ is first on PATH for
    the build; the record says so. A tool that is not in the table (gfortran) installs nothing."""
    _root, paths, spec = sdist_model(tmp_path)
    pip_calls: list[list[str]] = []
    paths_seen: list[str] = []

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] == ["-m", "pip", "download"]:
            return Completed(tuple(argv), 0, "", "")
        if argv[1:4] == ["-m", "pip", "install"]:
            pip_calls.append(argv[4:])
            if argv[-1].endswith("requirements-sdist.txt"):
                paths_seen.append(kw["env"]["PATH"])
                if "--no-build-isolation" not in argv:
                    return Completed(tuple(argv), 1, "", "swigging Box2D/Box2D.i to Box2D/Box2D_wrap.cpp\n"
                                                         "error: command 'swig' failed with exit status 1\n")
            return Completed(tuple(argv), 0, "", "")
        return proc.run(cmd, **kw)

    from pyrepro.index import Index

    env_dir, _key, _version, _hit = local.build_env(spec, paths, runner=runner, platform="linux-x86_64",
                                                    index=Index(paths.cache, lambda url: None))
    assert (env_dir / local.COMPLETE).is_file()
    swig = next(c for c in pip_calls if c[-1] == "swig")
    assert swig[-3:-1] == ["--only-binary", ":all:"]
    assert pip_calls.index(swig) < len(pip_calls) - 1  # before the build without isolation
    # into a Python 3 environment of its own (the swig wheel's launcher is Python 3 code), first on PATH
    tools_bin = str(paths.cache / "tools" / "build-tools" / "newest" / "bin")  # no date bound: today's
    assert paths_seen[-1].split(":")[0] == tools_bin and tools_bin not in paths_seen[0]
    info = json.loads((env_dir / local.COMPLETE).read_text())
    assert info["no_isolation_build_tools"]["commands"] == ["swig"]
    assert local.build_tools_named("error: command 'gfortran' failed with exit status 1") == ()
    assert local.build_tools_named("unable to execute 'swig': No such file", "cmake: command not found") == \
        ("swig", "cmake")


def _built(lock_toml: Path) -> dict | None:  # type: ignore[type-arg]
    import tomllib

    return tomllib.loads(lock_toml.read_text()).get("built")


def test_build__records_in_lock_toml_whether_the_lock_installs(tmp_path: Path) -> None:
    """A lock's category counts once an environment built from it: the local build writes
    lock.toml [built] (ok, or the error), only for the record of this very lock."""
    import tomlkit

    from pyrepro import lock as lock_mod
    from pyrepro.errors import BuildError

    root = tmp_path / "root"
    shutil.copytree(SC / "models", root / "models")
    shutil.copytree(SC / "patches", root / "patches")
    mdir = root / "models" / "mini"
    lock_text = (mdir / "pdm.lock").read_text()
    h = tomllib_loads(lock_text)["metadata"]["content_hash"]
    (mdir / "lock.toml").write_text(f'schema = 1\nmodel = "mini"\ncategory = 2\ncategory_label = "x"\n'
                                    f'content_hash = "{h}"\n')
    paths = Paths(root=root, cache=tmp_path / "cache")
    spec = load_registry(paths.models).get("mini")
    rec = lock_mod.read_record(mdir)
    assert rec is not None and lock_mod.confirmed_category(rec)[0] is None
    assert "unconfirmed" in lock_mod.confirmed_category(rec)[1]

    def failing(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] == ["-m", "pip", "download"]:  # into the download store
            return Completed(tuple(str(c) for c in cmd), 0, "", "")
        elif argv[1:4] == ["-m", "pip", "install"]:
            return Completed(tuple(argv), 1, "", "ERROR: six-1.17.0-py2.py3-none-any.whl is not a supported wheel")
        return proc.run(cmd, **kw)

    try:
        local.build(spec, paths, runner=failing, mirror=SC / "mirror")
        raise AssertionError("the build should fail")
    except BuildError:
        pass
    built = _built(mdir / "lock.toml")
    assert built is not None and built["ok"] is False and "pip exit 1" in built["error"]
    assert lock_mod.confirmed_category(lock_mod.read_record(mdir) or {})[0] == 4

    local.build(spec, paths, runner=_ok_pip(), mirror=SC / "mirror")
    built = _built(mdir / "lock.toml")
    assert built is not None and built["ok"] is True and built["python"].startswith("3.") and "error" not in built
    assert lock_mod.confirmed_category(lock_mod.read_record(mdir) or {}) == (2, "automatically relaxed")

    # record_build directly: a record of another lock is never touched; the same outcome is not rewritten
    doc = tomlkit.parse((mdir / "lock.toml").read_text())
    doc["content_hash"] = "sha256:other"
    (mdir / "lock.toml").write_text(tomlkit.dumps(doc))
    before = (mdir / "lock.toml").read_text()
    assert lock_mod.record_build(mdir, env_key="k", python="3.11.9") is False
    assert (mdir / "lock.toml").read_text() == before
    doc["content_hash"] = h
    (mdir / "lock.toml").write_text(tomlkit.dumps(doc))
    assert lock_mod.record_build(mdir, env_key="k", python="3.11.9") is True
    assert lock_mod.record_build(mdir, env_key="k", python="3.11.9") is False
    assert lock_mod.confirmed_category(lock_mod.read_record(mdir) or {})[0] == 2


def _ok_pip():  # type: ignore[no-untyped-def]
    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] == ["-m", "pip", "download"]:  # into the download store
            return Completed(tuple(str(c) for c in cmd), 0, "", "")
        elif argv[1:4] == ["-m", "pip", "install"]:
            return Completed(tuple(argv), 0, "", "")
        return proc.run(cmd, **kw)
    return runner


def tomllib_loads(text: str) -> dict:  # type: ignore[type-arg]
    import tomllib

    return tomllib.loads(text)


def _mini(tmp_path: Path, *, sdist: bool | str = True):  # type: ignore[no-untyped-def]
    """The miniature model in a project root of its own (with a sdist-only package locked, or the
    lock entries ``sdist`` gives): (paths, spec)."""
    root = tmp_path / "root"
    shutil.copytree(SC / "models", root / "models")
    if sdist:
        lock = root / "models" / "mini" / "pdm.lock"
        lock.write_text(lock.read_text() + (sdist if isinstance(sdist, str) else SDIST_PKG))
    paths = Paths(root=root, cache=tmp_path / "cache")
    return paths, load_registry(paths.models).get("mini")


def _build_recording(tmp_path: Path, download_rc: int) -> tuple[Paths, list[list[str]]]:
    paths, spec = _mini(tmp_path)
    calls: list[list[str]] = []

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] in (["-m", "pip", "download"], ["-m", "pip", "install"]):
            calls.append(argv[3:])
            return Completed(tuple(argv), download_rc if argv[3] == "download" else 0, "", "")
        return proc.run(cmd, **kw)

    local.build_env(spec, paths, runner=runner, platform="linux-x86_64")
    return paths, calls


def test_build_env__wheels_downloaded_once_into_the_store__install_reads_only_the_store(tmp_path: Path) -> None:
    paths, calls = _build_recording(tmp_path, 0)
    store = str(local.download_store(paths))
    assert store.startswith(str(paths.cache))
    (download, wheels, sdists) = calls
    assert download[0] == "download" and "--require-hashes" in download and download[download.index("-d") + 1] == store
    assert download[-1].endswith("requirements.txt")
    # the wheels' install reads the store only: what is there was checked against the lock's hashes
    assert wheels[wheels.index("--find-links") + 1] == store and "--no-index" in wheels and "--require-hashes" in wheels
    # sdist-only packages are not downloaded first (pip download would build them)
    assert sdists[-1].endswith("requirements-sdist.txt") and "--no-index" not in sdists


def test_build_env__download_into_store_fails__install_goes_to_the_index(tmp_path: Path) -> None:
    _paths, calls = _build_recording(tmp_path, 1)
    download, wheels, _sdists = calls
    assert download[0] == "download"
    assert "--no-index" not in wheels and "--find-links" not in wheels and "--require-hashes" in wheels


def test_build_env__sdist_needs_a_system_library__error_names_it(tmp_path: Path) -> None:
    # cgnn (corpus2): mysqlclient has no Linux wheel, and its setup.py needs the MySQL client's
    # mysql_config and headers, which pip cannot install
    import pytest

    from pyrepro.errors import SdistBuildError

    paths, spec = _mini(tmp_path)
    said = ("Collecting torch-scatter==2.1.1\n  /bin/sh: 1: mysql_config: not found\n"
            "  src/x.c:29:10: fatal error: mysql.h: No such file or directory\n"
            "ERROR: Failed building wheel for torch-scatter\n")

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] == ["-m", "pip", "download"]:
            return Completed(tuple(argv), 0, "", "")
        if argv[1:4] == ["-m", "pip", "install"]:
            sdist = argv[-1].endswith("requirements-sdist.txt")
            return Completed(tuple(argv), 1 if sdist else 0, said if sdist else "", "")
        return proc.run(cmd, **kw)

    with pytest.raises(SdistBuildError) as err:
        local.build_env(spec, paths, runner=runner, platform="linux-x86_64")
    assert "needs from the system: mysql_config, mysql.h" in str(err.value)
    assert "system's package manager" in (err.value.hint or "")
    assert err.value.packages == (("torch-scatter", "2.1.1"),)
    assert not list((paths.cache / "envs").glob("mini-*"))  # nothing half-written


def test_build_env__store_holds_every_wheel__installed_without_a_download_else_downloaded(tmp_path: Path) -> None:
    paths, spec = _mini(tmp_path, sdist=False)
    store = local.download_store(paths)
    store.mkdir(parents=True)
    (store / "six-1.17.0-py2.py3-none-any.whl").write_bytes(b"x")
    calls: list[list[str]] = []
    rc = {"install": 0}

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] in (["-m", "pip", "download"], ["-m", "pip", "install"]):
            calls.append(argv[3:])
            return Completed(tuple(argv), rc["install"] if argv[3] == "install" and not calls[1:] else 0, "", "")
        return proc.run(cmd, **kw)

    local.build_env(spec, paths, runner=runner, platform="linux-x86_64")
    assert [c[0] for c in calls] == ["install"] and "--no-index" in calls[0]  # no index asked at all
    # the store's file does not fit (pip says so): downloaded, then installed from the store
    shutil.rmtree(paths.cache / "envs")
    calls.clear()
    rc["install"] = 1
    local.build_env(spec, paths, runner=runner, platform="linux-x86_64")
    assert [c[0] for c in calls] == ["install", "download", "install"]


def _build_with_uv(tmp_path: Path, monkeypatch: Any, uv_rc: int) -> tuple[Paths, list[list[str]], dict[str, Any]]:
    """The mini model built with a recorded uv (exit ``uv_rc``) and a recorded pip."""
    paths, spec = _mini(tmp_path)
    monkeypatch.setenv("PYREPRO_INSTALLER", "")
    monkeypatch.setenv("PYREPRO_UV", "/opt/fake/uv")
    calls: list[list[str]] = []
    envs: dict[str, Any] = {}

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[0] == "/opt/fake/uv":
            calls.append(argv)
            envs["uv"] = kw.get("env") or {}
            return Completed(tuple(argv), uv_rc, "", "error: no wheel fits" if uv_rc else "")
        if argv[1:4] in (["-m", "pip", "download"], ["-m", "pip", "install"]):
            calls.append(argv[3:])
            return Completed(tuple(argv), 0, "", "")
        return proc.run(cmd, **kw)

    env_dir, _key, _py, _hit = local.build_env(spec, paths, runner=runner, platform="linux-x86_64")
    info = json.loads((env_dir / local.COMPLETE).read_text())
    return paths, calls, {**envs, "info": info}


def test_build_env__uv_installs_the_wheels__pip_only_the_sdists(tmp_path: Path, monkeypatch: Any) -> None:
    paths, calls, seen = _build_with_uv(tmp_path, monkeypatch, 0)
    uv, sdists = calls
    assert uv[1:3] == ["pip", "install"] and uv[uv.index("--python") + 1].endswith("/bin/python")
    assert {"--require-hashes", "--no-deps", "--no-build"} <= set(uv) and uv[-1].endswith("requirements.txt")
    assert seen["uv"]["UV_CACHE_DIR"] == str(local.uv_cache(paths))  # under pyrepro's cache, emptied by gc --all
    assert sdists[0] == "install" and sdists[-1].endswith("requirements-sdist.txt")  # sdists: pip, as before
    assert seen["info"]["installer"] == "uv"


def test_build_env__uv_fails__pip_installs_the_wheels_and_it_is_recorded(tmp_path: Path, monkeypatch: Any) -> None:
    _paths, calls, seen = _build_with_uv(tmp_path, monkeypatch, 2)
    assert calls[0][0] == "/opt/fake/uv" and calls[1][0] == "download" and calls[2][0] == "install"
    assert seen["info"]["installer"] == "pip" and "no wheel fits" in seen["info"]["uv_failed"]


def test_build_env__python_before_uv_oldest__pip_alone__37_goes_to_uv(tmp_path: Path, monkeypatch: Any) -> None:
    import dataclasses

    paths, spec = _mini(tmp_path, sdist=False)
    monkeypatch.setenv("PYREPRO_INSTALLER", "")
    monkeypatch.setenv("PYREPRO_UV", "/opt/fake/uv")
    calls: list[list[str]] = []

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[0] == "/opt/fake/uv" or argv[1:4] in (["-m", "pip", "download"], ["-m", "pip", "install"]):
            calls.append(argv)
            return Completed(tuple(argv), 0, "", "")
        return proc.run(cmd, **kw)

    local.build_env(dataclasses.replace(spec, python="3.7"), paths, runner=runner, platform="linux-x86_64")
    assert any(c[0] == "/opt/fake/uv" for c in calls)  # uv installs the wheels into 3.7 venvs
    calls.clear()
    monkeypatch.setattr(local, "UV_OLDEST", "3.8")  # a Python older than the oldest uv serves
    paths, spec = _mini(tmp_path / "older", sdist=False)
    local.build_env(dataclasses.replace(spec, python="3.7"), paths, runner=runner, platform="linux-x86_64")
    assert calls and not any(c[0] == "/opt/fake/uv" for c in calls)
    monkeypatch.setenv("PYREPRO_INSTALLER", "pip")
    assert local.uv_binary() is None


def test_gc__all__empties_uv_cache_plain_gc_keeps_it(tmp_path: Path) -> None:
    paths, spec = _mini(tmp_path)
    entry = local.uv_cache(paths) / "wheels-v5" / "x.whl"
    entry.parent.mkdir(parents=True)
    entry.write_text("x")
    local.gc(paths, [spec])
    assert entry.is_file()
    local.gc(paths, [spec], everything=True)
    assert not local.uv_cache(paths).exists() or not any(local.uv_cache(paths).iterdir())


def test_bound_uv_cache__over_the_bound_emptied__within_kept(tmp_path: Path, monkeypatch: Any) -> None:
    paths, _spec = _mini(tmp_path)
    f = local.uv_cache(paths) / "archive-v0" / "x" / "torch.so"
    f.parent.mkdir(parents=True)
    f.write_bytes(b"x" * 3 * 1024 * 1024)
    assert local.bound_uv_cache(paths, limit_mb=4) == 0 and f.is_file()
    monkeypatch.setenv("PYREPRO_UV_CACHE_MB", "2")
    assert local.bound_uv_cache(paths) == 3 * 1024 * 1024 and not local.uv_cache(paths).exists()
    assert local.bound_uv_cache(paths) == 0  # nothing there: nothing to do


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_build_env__sdist_build_past_its_time__stopped_named_and_not_retried_without_isolation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> None:
    """chemprop, litmatter (corpus6 held): torch-scatter's compile ran until the reproduction's
    10 minutes were gone, leaving no time to move it. A sdist's build gets ``sdist_seconds``; one
    still running then is stopped and named (the one pip had started and not finished), and it is
    not built again without isolation, which would take as long."""
    from pyrepro.errors import ExternalToolError

    monkeypatch.setenv("PYREPRO_BUILD_JOBS", jobs)
    paths, spec = _mini(tmp_path, sdist=SDIST_PKG + SDIST_PKG_2)
    timeouts: list[float] = []
    builds: list[list[str]] = []

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] in (["-m", "pip", "wheel"], ["-m", "pip", "install"]) and "-r" in argv \
                and "torch-" in Path(argv[-1]).read_text():
            builds.append(argv)
            timeouts.append(kw["timeout"])
            if "torch-scatter" in Path(argv[-1]).read_text():
                raise ExternalToolError(argv, -1, "", "  Building wheel for torch-cluster (setup.py): finished\n"
                                        "  Created wheel for torch-cluster: filename=x.whl\n"
                                        "  Building wheel for torch-scatter (setup.py): started\n", timeout=30)
            out = Path(argv[argv.index("-w") + 1]) if "-w" in argv else None
            if out is not None:
                (out / "torch_cluster-1.6.1-cp311-cp311-linux_x86_64.whl").write_bytes(b"")
            return Completed(tuple(argv), 0, "", "")
        if argv[1:4] in (["-m", "pip", "install"], ["-m", "pip", "download"]):
            return Completed(tuple(argv), 0, "", "")
        return proc.run(cmd, **kw)

    with pytest.raises(local.SdistBuildError) as e:
        local.build_env(spec, paths, runner=runner, platform="linux-x86_64", sdist_seconds=30)
    assert e.value.packages == (("torch-scatter", "2.1.1"),)
    assert "did not end within 30 s" in str(e.value) and "PYREPRO_SDIST_SECONDS" in (e.value.hint or "")
    assert e.value.slow  # stopped for its time: no date relock (repair.sdists_slow)
    assert all(0 < t <= 30 for t in timeouts) and not any("--no-build-isolation" in a for a in builds)
    assert not list((paths.cache / "envs").glob("mini-*"))  # nothing half-built is left as an environment


def test_build_env__sdists_built_side_by_side__share_one_time_cap__one_not_started_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kaggle-diabetic-retinopathy (corpus19 dev): eleven 2015 sdists for CPython 2.7, each under
    the cap, ran the reproduction's whole budget out before any repair could move one. Built side
    by side, the sdists share the cap as one pip install of them does: each is given what is left,
    and one not started in time is named as not built for its time (so the repair moves it to a
    release with a wheel)."""
    monkeypatch.setenv("PYREPRO_BUILD_JOBS", "2")
    third = SDIST_PKG.replace('"torch-scatter"', '"torch-spline-conv"').replace("2.1.1", "1.2.2").replace(
        "torch_scatter-2.1.1", "torch_spline_conv-1.2.2").replace("59b6fad2", "0b0b0b0b")
    paths, spec = _mini(tmp_path, sdist=SDIST_PKG + SDIST_PKG_2 + third)
    clock = [1000.0]
    monkeypatch.setattr(local.time, "monotonic", lambda: clock[0])
    given: list[float] = []

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] == ["-m", "pip", "wheel"]:
            given.append(kw["timeout"])
            clock[0] += 20  # each build takes 20 of the 30 s
            name = Path(argv[-1]).read_text().split("==")[0]
            (Path(argv[argv.index("-w") + 1]) / f"{name.replace('-', '_')}-1-cp311-cp311-linux_x86_64.whl").write_bytes(b"")
            return Completed(tuple(argv), 0, "", "")
        if argv[1:4] in (["-m", "pip", "install"], ["-m", "pip", "download"]):
            return Completed(tuple(argv), 0, "", "")
        return proc.run(cmd, **kw)

    with pytest.raises(local.SdistBuildError) as e:
        local.build_env(spec, paths, runner=runner, platform="linux-x86_64", sdist_seconds=30)
    assert len(given) == 2 and all(0 < t <= 30 for t in given)  # the third never started
    assert len(e.value.packages) == 1 and e.value.slow
    assert "did not end within 30 s" in str(e.value)


OTHER_PYTHONS_PKG = '''
[[package]]
name = "netcdf4"
version = "1.6.2"
summary = ""
files = [
    {file = "netCDF4-1.6.2-cp37-cp37m-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", hash = "sha256:e152a2af9ea1ed7c75d9683fc2c814002612cb60e3691a8b2c33e78ad026ce5b"},
    {file = "netCDF4-1.6.2-cp38-cp38-macosx_10_9_x86_64.whl", hash = "sha256:5ffb5ea48d01cb50607828010ea497bed0c6e7a414a0648572f0b3a4e96c8c1b"},
    {file = "netCDF4-1.6.2.tar.gz", hash = "sha256:0382b02ff6a288419f6ffec85dec40f451f41b8755547154c575ddd9f0f4ae53"},
]
'''


def test_locked_packages__wheels_for_other_pythons_and_an_sdist__built_as_an_sdist(tmp_path: Path) -> None:
    """galaxy-zoo-bcnn (corpus13 dev): netCDF4 1.6.2 locked for 3.6 has wheels from cp37 and an
    sdist. It went with the wheels, pip built the sdist there ("did not find HDF5 headers"), and
    that failure was no sdist failure, so nothing moved it to a release with a cp36 wheel. Here it
    is sdist-only; for 3.7 it is not."""
    root, paths, spec = sdist_model(tmp_path, OTHER_PYTHONS_PKG)
    lock = root / "models" / "mini" / "pdm.lock"
    on36 = {p.name: p.sdist_only for p in local.locked_packages(lock, "3.6", "linux-x86_64")}
    on37 = {p.name: p.sdist_only for p in local.locked_packages(lock, "3.7", "linux-x86_64")}
    assert on36["netcdf4"] and not on37["netcdf4"]
    assert not on36["six"]  # a py2.py3 wheel fits every Python


def test_build_env__wheels_for_other_pythons_only__the_failure_is_an_sdist_failure(tmp_path: Path) -> None:
    """Through build_env: the build of that sdist fails, and the error names it as an sdist that did
    not build (SdistBuildError with the package), which the repair planner moves."""
    err = _netcdf4_build_fails(tmp_path, "Building wheel for netCDF4 (setup.py): started\n"
                                         "ValueError: did not find HDF5 headers\n"
                                         "ERROR: Failed building wheel for netCDF4\n")
    assert ("netcdf4", "1.6.2") in err.packages


def _netcdf4_build_fails(tmp_path: Path, pip_says: str) -> Any:
    """build_env on the netCDF4 1.6.2 lock for 3.6, its sdist's build failing with ``pip_says``:
    the SdistBuildError raised."""
    from pyrepro.errors import SdistBuildError

    root, paths, spec = sdist_model(tmp_path, OTHER_PYTHONS_PKG)
    spec = dataclasses.replace(spec, python="3.6")

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] == ["-m", "pip", "download"]:
            return Completed(tuple(argv), 0, "", "")
        if argv[1:4] in (["-m", "pip", "install"], ["-m", "pip", "wheel"]):
            req = Path(argv[-1]).read_text() if argv[-1].endswith(".txt") else ""
            if "netcdf4" in req:
                return Completed(tuple(argv), 1, "", pip_says)
            return Completed(tuple(argv), 0, "", "")
        return proc.run(cmd, **kw)

    with pytest.raises(SdistBuildError) as err:
        local.build_env(spec, paths, runner=runner, platform="linux-x86_64")
    return err.value


def test_build_env__an_sdist_that_needs_r__the_error_carries_the_need(tmp_path: Path) -> None:
    """spykesml-encoding (corpus18 dev): rpy2's build stops on "Unable to determine R home". The
    error names R as what the system lacks (``needs``), for the hint and for the repair planner,
    which then relocks by no date (a date does not install R)."""
    err = _netcdf4_build_fails(tmp_path, "Getting requirements to build wheel: started\n"
                                         "Unable to determine R home: [Errno 2] No such file or directory: 'R'\n"
                                         "ERROR: Failed building wheel for netCDF4\n")
    assert err.needs == ("R",)
    assert "needs from the system: R" in str(err) and "R from the system" in (err.hint or "")


def test_system_needs__a_compiler_that_ran_and_failed_is_no_system_need() -> None:
    """crowdflower-relevance (corpus14 dev): regex 2022.1.18's Python 3 C code on Python 2 made gcc
    stop on ``Py_UCS1``. "error: command 'gcc' failed with exit status 1" is a compiler that ran; it
    was reported as "needs from the system: gcc", which sent the user to install a gcc they had.
    A compiler that is missing is still named."""
    ran = ("regex_3/_regex.c:755:15: error: 'Py_UCS1' undeclared (first use in this function)\n"
           "error: command 'gcc' failed with exit status 1\n")
    assert local.system_needs(ran) == ()
    assert local.system_needs("error: command '/usr/bin/gcc' failed with exit code 1") == ()
    assert local.system_needs("error: command 'gcc' failed: No such file or directory") == ("gcc",)
    assert local.system_needs("unable to execute 'x86_64-linux-gnu-gcc': No such file or directory") == \
        ("x86_64-linux-gnu-gcc",)
    # a missing header is named, the compiler's failure after it is not
    assert local.system_needs("x.c:1:10: fatal error: gdal.h: No such file or directory\n"
                              "error: command 'gcc' failed with exit status 1") == ("gdal.h",)
