"""Sdists are built with their declared build requirements bounded by the submission's date
(issue 12): reading [build-system] from an sdist, the newest release before a date, and the
constraints the local backend hands to pip's isolated build, with a fake index."""

from __future__ import annotations

import datetime as dt
import io
import json
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from pyrepro import buildreqs, proc
from pyrepro.backends import local
from pyrepro.index import Index
from pyrepro.paths import Paths
from pyrepro.proc import Completed
from pyrepro.registry import load_registry

SC = Path(__file__).parent / "scenarios" / "backend"


def _targz(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_read_build_requires__declared__legacy_default__zip__unreadable() -> None:
    decl = _targz({"tinycalc-0.3.0/pyproject.toml": '[build-system]\nrequires = ["setuptools>=40", "cython<3"]\n',
                   "tinycalc-0.3.0/sub/pyproject.toml": '[build-system]\nrequires = ["other"]\n'})
    assert buildreqs.read_build_requires(decl, "tinycalc-0.3.0.tar.gz") == ["setuptools>=40", "cython<3"]
    bare = _targz({"old-1.0/setup.py": "from setuptools import setup\n"})
    assert buildreqs.read_build_requires(bare, "old-1.0.tar.gz") == list(buildreqs.LEGACY)
    no_table = _targz({"x-1.0/pyproject.toml": "[tool.black]\nline-length = 100\n"})
    assert buildreqs.read_build_requires(no_table, "x-1.0.tar.gz") == list(buildreqs.LEGACY)
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as z:
        z.writestr("z-2.0/pyproject.toml", '[build-system]\nrequires = ["flit_core>=3.2,<4"]\n')
    assert buildreqs.read_build_requires(zbuf.getvalue(), "z-2.0.zip") == ["flit_core>=3.2,<4"]
    assert buildreqs.read_build_requires(b"not an archive", "y-1.0.tar.gz") is None


def _listing(name: str, releases: dict[str, str], sdist: str | None = None) -> dict:  # type: ignore[type-arg]
    files = [{"filename": f"{name}-{v}-py3-none-any.whl", "url": f"https://files/{name}-{v}.whl",
              "upload-time": f"{day}T10:00:00.000000Z"} for v, day in releases.items()]
    if sdist:
        files.append({"filename": sdist, "url": f"https://files/{sdist}", "upload-time": "2020-01-01T00:00:00Z",
                      "size": 100})
    return {"name": name, "files": files}


def _index(tmp: Path | None) -> tuple[Index, list[str]]:
    asked: list[str] = []
    listings = {
        "tinycalc": _listing("tinycalc", {}, "tinycalc-0.3.0.tar.gz"),
        "setuptools": _listing("setuptools", {"44.0.0": "2019-12-29", "50.3.2": "2020-10-20", "69.0.0": "2023-11-20",
                                              "80.0.0rc1": "2020-01-02"}),
        "cython": _listing("cython", {"0.29.21": "2020-07-09", "3.0.0": "2023-07-17"}),
        "wheel": _listing("wheel", {"0.36.2": "2020-12-13", "0.37.0": "2021-08-09"}),
    }
    sdist = _targz({"tinycalc-0.3.0/pyproject.toml":
                    '[build-system]\nrequires = ["setuptools>=40", "cython<3", "winonly; sys_platform == \'win32\'"]\n'})

    def fetch(url: str) -> bytes | None:
        asked.append(url)
        if url.startswith("https://files/tinycalc-0.3.0.tar.gz"):
            return sdist
        name = url.rstrip("/").rsplit("/", 1)[-1]
        return json.dumps(listings[name]).encode() if name in listings else None

    return Index(tmp, fetch), asked


def test_newest_before__final_releases_uploaded_before_the_day_that_satisfy_the_spec() -> None:
    idx, _ = _index(None)
    assert buildreqs.newest_before(idx, "setuptools", ">=40", dt.date(2021, 1, 15)) == "50.3.2"
    assert buildreqs.newest_before(idx, "setuptools", "<50", dt.date(2021, 1, 15)) == "44.0.0"
    assert buildreqs.newest_before(idx, "setuptools", "", dt.date(2019, 1, 1)) is None
    assert buildreqs.newest_before(idx, "nosuch", "", dt.date(2021, 1, 1)) is None


def test_oldest_after__a_requirement_newer_than_the_era__its_nearest_release_not_todays() -> None:
    # phoenics-2018: a 2017 legacy sdist under pip's setuptools>=40.8.0 (2019-02)
    idx, _ = _index(None)
    assert buildreqs.oldest_after(idx, "setuptools", ">=40", dt.date(2018, 1, 23)) == "44.0.0"
    assert buildreqs.oldest_after(idx, "setuptools", ">=45", dt.date(2018, 1, 23)) == "50.3.2"
    assert buildreqs.oldest_after(idx, "setuptools", ">=90", dt.date(2018, 1, 23)) is None
    b = buildreqs.constraints(idx, [("tinycalc", "0.3.0")], dt.date(2018, 1, 23), "3.8", exclude=["tinycalc"])
    assert b.constraints == ("cython==0.29.21", "setuptools==44.0.0")
    assert len(b.notes) == 2 and all("no release before 2018-01-23 satisfies it" in n for n in b.notes)


def test_constraints__declared_build_requirements_pinned_to_the_era__cached(tmp_path: Path) -> None:
    idx, asked = _index(tmp_path)
    b = buildreqs.constraints(idx, [("tinycalc", "0.3.0")], dt.date(2021, 1, 15), "3.8", exclude=["tinycalc"])
    assert b.constraints == ("cython==0.29.21", "setuptools==50.3.2")  # winonly: its marker is false here
    assert b.notes == ()
    idx2, asked2 = _index(tmp_path)  # a second build: the sdist is not downloaded again
    assert buildreqs.constraints(idx2, [("tinycalc", "0.3.0")], dt.date(2021, 1, 15), "3.8").constraints == \
        b.constraints
    assert not any("files/tinycalc" in u for u in asked2) and any("files/tinycalc" in u for u in asked)


def test_constraints__index_unreachable__unbounded_and_said() -> None:
    b = buildreqs.constraints(Index(None, lambda url: None), [("tinycalc", "0.3.0")], dt.date(2021, 1, 15), "3.8")
    assert b.constraints == () and "build requirements unknown" in b.notes[0]


SDIST_PKG = '''
[[package]]
name = "tinycalc"
version = "0.3.0"
requires_python = ">=3.7"
summary = ""
files = [
    {file = "tinycalc-0.3.0.tar.gz", hash = "sha256:59b6fad2c04f58b4ea46bb56e839edfd421faaa849d5e32ab1290975b9ef1656"},
]
'''


@pytest.fixture
def _no_python_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    """The miniature model is for CPython 3.11 (out 2022-10-24); these tests are about the era
    bound of 2019-2021 alone, so the floor of the Python's own release is moved out of the way."""
    monkeypatch.setattr(local, "PYTHON_SETTLED", dt.timedelta(days=-36500))


def test_build_bound__never_before_the_python_was_out_a_while(tmp_path: Path) -> None:
    """ramanspy-figs (corpus9 dev): notebooks of CPython 3.11 and a pysptools sdist of 2018; the
    setuptools of 2018 does not run on 3.11, and today's builds it. The bound is at least 90 days
    after the model's Python came out; a later bound stays."""
    paths, spec = _dated_mini(tmp_path, "2019-03-01")
    assert spec.python == "3.11" and local.build_bound(spec) == dt.date(2023, 1, 22)
    later = _dated_mini(tmp_path / "b", "2024-05-01")[1]
    assert local.build_bound(later) == dt.date(2024, 5, 2)


def _dated_mini(tmp_path: Path, submitted: str):  # type: ignore[no-untyped-def]
    """The miniature model, submitted on ``submitted``, with tinycalc's sdist locked: (paths, spec)."""
    root = tmp_path / "root"
    shutil.copytree(SC / "models", root / "models")
    mt = root / "models" / "mini" / "model.toml"
    mt.write_text(mt.read_text().replace('gpu = "none"\n', f'gpu = "none"\nsubmitted = "{submitted}"\n'))
    lock = root / "models" / "mini" / "pdm.lock"
    lock.write_text(lock.read_text() + SDIST_PKG)
    paths = Paths(root=root, cache=tmp_path / "cache")
    return paths, load_registry(paths.models).get("mini")


@pytest.mark.usefixtures("_no_python_floor")
def test_build_env__dated_model__isolated_sdist_build_gets_the_era_constraints(tmp_path: Path) -> None:
    paths, spec = _dated_mini(tmp_path, "2021-01-14")
    assert local.build_bound(spec) == dt.date(2021, 1, 15)
    calls: list[tuple[list[str], str, str]] = []

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] == ["-m", "pip", "download"]:  # into the download store
            return Completed(tuple(str(c) for c in cmd), 0, "", "")
        elif argv[1:4] == ["-m", "pip", "install"]:
            env = kw.get("env") or {}
            cons = env.get("PIP_CONSTRAINT", "")
            calls.append((argv, cons, Path(cons).read_text() if cons and Path(cons).is_file() else ""))
            if argv[-1].endswith("requirements-sdist.txt") and "--no-build-isolation" not in argv:
                return Completed(tuple(argv), 1, "", "error: Cython 3 is not supported\n")
            return Completed(tuple(argv), 0, "", "")
        return proc.run(cmd, **kw)

    idx, _ = _index(paths.cache)
    env_dir, _k, _v, _hit = local.build_env(spec, paths, runner=runner, platform="linux-x86_64", index=idx)
    (_w, w_cons, _), (iso, _i, i_text), (tools, _t, _), (noiso, n_cons, _) = calls
    assert "--no-build-isolation" not in iso and "--no-build-isolation" in noiso
    # the build without isolation happens in the venv: the same era's tools go there first, and
    # wheel (not declared) too, bounded the same way
    assert tools[3:] == ["install", "--progress-bar=off", "cython==0.29.21", "setuptools==50.3.2", "wheel==0.36.2"]
    assert w_cons == "/dev/null" and n_cons == "/dev/null"  # the lock decides everything else
    assert i_text == "cython==0.29.21\nsetuptools==50.3.2\n"
    info = json.loads((env_dir / local.COMPLETE).read_text())
    assert info["build_requirements"]["bound"] == "2021-01-15"
    assert info["build_requirements"]["constraints"] == ["cython==0.29.21", "setuptools==50.3.2"]
    assert info["no_isolation_build_tools"] == {"tools": ["cython==0.29.21", "setuptools==50.3.2", "wheel==0.36.2"],
                                                "ok": True}


@pytest.mark.usefixtures("_no_python_floor")
def test_build_env__undated_model__sdist_build_bounded_by_the_sdists_own_upload_day(tmp_path: Path) -> None:
    """perovskite-ordering (corpus4 dev), undated: torch-scatter 2.1.1's setup.py imports
    pkg_resources, and today's setuptools no longer ships it, so the isolated build failed. With no
    date, the newest upload day of the locked sdists bounds their build requirements."""
    from tests.test_backend_sdist import sdist_model

    _root, paths, spec = sdist_model(tmp_path, SDIST_PKG)
    assert spec.submitted is None and local.build_bound(spec) is None
    seen: list[str] = []

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        argv = [str(c) for c in cmd]
        if argv[1:4] in (["-m", "pip", "download"], ["-m", "pip", "install"]):
            cons = (kw.get("env") or {}).get("PIP_CONSTRAINT", "")
            if argv[-1].endswith("requirements-sdist.txt") and cons and Path(cons).is_file():
                seen.append(Path(cons).read_text())
            return Completed(tuple(argv), 0, "", "")
        return proc.run(cmd, **kw)

    idx, _ = _index(paths.cache)
    env_dir, _k, _v, _hit = local.build_env(spec, paths, runner=runner, platform="linux-x86_64", index=idx)
    info = json.loads((env_dir / local.COMPLETE).read_text())
    assert info["build_requirements"]["bound"] == "2020-01-02"  # tinycalc 0.3.0's sdist: 2020-01-01
    # cython<3: nothing released by then, so its oldest release that satisfies it, and said so
    assert seen == ["cython==0.29.21\nsetuptools==44.0.0\n"]
    assert any("cython" in n and "its oldest that does, 0.29.21" in n for n in info["build_requirements"]["notes"])


@pytest.mark.usefixtures("_no_python_floor")
def test_build_bound__sdist_newer_than_the_submission__its_own_day_not_the_older_one(tmp_path: Path) -> None:
    """solubility-posts (corpus5 dev): an as-declared lock (no date bound) held useful-rdkit-utils'
    2024 sdist, and the model's 2021 date gave it the setuptools of 2021, which could not build it.
    The bound is the later of the submission's day and the sdists' own newest upload day."""
    paths, spec = _dated_mini(tmp_path, "2019-03-01")
    lock = paths.models / "mini" / "pdm.lock"
    idx, _ = _index(paths.cache)
    sdists = [p for p in local.locked_packages(lock, "3.11", "linux-x86_64") if p.sdist_only]
    assert local.build_bound(spec, sdists, idx) == dt.date(2020, 1, 2)  # tinycalc 0.3.0: 2020-01-01
    assert local.build_bound(spec) == dt.date(2019, 3, 2)  # no sdists known: the submission's day


@pytest.mark.integration
@pytest.mark.network
def test_constraints__real_pypi__torch_scatter_built_with_setuptools_and_wheel_of_its_era(tmp_path: Path) -> None:
    """torch-scatter 2.1.1 is an sdist without [build-system]: pip's legacy default, bounded."""
    b = buildreqs.constraints(Index(tmp_path), [("torch-scatter", "2.1.1")], dt.date(2023, 5, 23), "3.10",
                              exclude=["torch-scatter"])
    pins = dict(c.split("==") for c in b.constraints)
    assert set(pins) == {"setuptools", "wheel"}, b
    from packaging.version import Version

    assert Version("67") <= Version(pins["setuptools"]) < Version("68")  # setuptools 67.x was current in May 2023
