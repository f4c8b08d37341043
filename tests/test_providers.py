"""pyrepro.providers: an undeclared import's distribution, accepted only on its wheel's evidence."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from pyrepro import providers
from pyrepro.index import WheelIndex
from tests.test_buildreqs import _targz


@pytest.fixture(autouse=True)
def _pdm_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """These scenarios fake pdm's words: their reproductions lock with pdm first, as ``--pdm`` does
    (the uv-first lock has its own tests in tests/test_reproduce.py)."""
    from pyrepro import reproduce as _rep

    monkeypatch.setattr(_rep, "UV_FIRST", False)


class FakeIndex:
    """releases_by / top_levels of a few made-up projects."""

    def __init__(self, projects: dict[str, list[tuple[str, str, set[str] | None]]]) -> None:
        self.projects = projects  # name -> [(version, upload day, top-level modules of its wheel or None)]
        self.asked: list[tuple[str, str]] = []
        self.up = True  # False: the index answers no release list (it could not be asked)
        self.names: list[str] | None = None  # the index's project names, when it can list them

    def project_names(self) -> list[str] | None:
        return self.names if self.up else None

    def has_wheel(self, name: str, version: str, python: str) -> bool | None:
        return None  # these made-up releases say nothing about Pythons

    def releases_by(self, name: str, day: dt.date | None = None) -> list[tuple[str, str]]:
        if not self.up:
            return []
        rel = [(v, d) for v, d, _t in self.projects.get(name, []) if day is None or d <= day.isoformat()]
        return sorted(rel, key=lambda r: tuple(int(x) for x in r[0].split(".")), reverse=True)

    def uploaded(self, name: str, version: str) -> str | None:
        return next((d for v, d, _t in self.projects.get(name, []) if v == version), None)

    def first_upload(self, name: str) -> str | None:
        return min((d for _v, d, _t in self.projects.get(name, [])), default=None)

    def top_levels(self, name: str, version: str | None = None) -> tuple[frozenset[str], str] | None:
        self.asked.append((name, version or ""))
        for v, _d, tops in self.projects.get(name, []):
            if v == version and tops is not None:
                return frozenset(tops), f"{name.replace('-', '_')}-{v}-py3-none-any.whl"
        return None


def test_candidates__table_identity_and_common_spellings() -> None:
    assert providers.candidates("sklearn.linear_model")[0] == "scikit-learn"
    # hyperopt 0.0.2 imports bson "-- comes with pymongo" (eeg-grasp-lift, corpus13 dev): the table's
    # pymongo comes before PyPI's unrelated bson
    assert providers.candidates("bson.objectid")[:2] == ("pymongo", "bson")
    c = providers.candidates("mystery_mod")
    assert c[:2] == ("mystery-mod", "python-mystery-mod") and "pymystery-mod" in c and "mystery-mod-python" in c


def test_find_provider__wheel_of_the_submission_time_must_ship_the_module() -> None:
    idx = FakeIndex({
        "mystery-mod": [("1.0", "2019-03-01", {"other"})],  # the name, but another project's code
        "python-mystery-mod": [("3.0", "2025-01-01", {"mystery_mod"}), ("1.6", "2020-06-01", None),
                               ("1.5", "2020-02-01", {"mystery_mod"})],
    })
    p = providers.find_provider("mystery_mod.sub", idx, dt.date(2021, 1, 1))
    assert p is not None and (p.distribution, p.version) == ("python-mystery-mod", "1.5")
    assert "python_mystery_mod-1.5-py3-none-any.whl" in p.reason and "uploaded 2020-02-01" in p.reason
    assert "by the submission's date 2021-01-01" in p.reason
    assert ("python-mystery-mod", "3.0") not in idx.asked  # released after the date: never looked at
    assert providers.find_provider("mystery_mod", FakeIndex({"mystery-mod": [("1.0", "2019-03-01", {"x"})]}),
                                   None) is None


def test_known_absent__name_table_reasons() -> None:
    assert "not on PyPI" in providers.known_absent("ocpmodels.models")
    assert providers.known_absent("loguru") == ""


def test_index_releases_by__final_releases_by_day_newest_first() -> None:
    listing = {"files": [
        {"filename": "x-1.0.tar.gz", "upload-time": "2019-01-02T00:00:00Z"},
        {"filename": "x-1.0-py3-none-any.whl", "upload-time": "2019-01-01T00:00:00Z"},
        {"filename": "x-2.0rc1-py3-none-any.whl", "upload-time": "2020-01-01T00:00:00Z"},
        {"filename": "x-1.10-py3-none-any.whl", "upload-time": "2020-05-01T00:00:00Z"},
        {"filename": "x-1.9-py3-none-any.whl", "upload-time": "2020-04-01T00:00:00Z", "yanked": True},
        {"filename": "x-3.0-py3-none-any.whl", "upload-time": "2024-01-01T00:00:00Z"}]}
    idx = WheelIndex(None, fetch=lambda url: json.dumps(listing).encode())
    assert idx.releases_by("x", dt.date(2021, 1, 1)) == [("1.10", "2020-05-01"), ("1.0", "2019-01-01")]
    assert idx.releases_by("x")[0] == ("3.0", "2024-01-01")
    # a project that never had a final release: its pre-releases (pydensecrf 1.0rc2, 1.0rc3)
    pre = {"files": [{"filename": "p-1.0rc2.tar.gz", "upload-time": "2017-07-01T00:00:00Z"},
                     {"filename": "p-1.0rc3.tar.gz", "upload-time": "2018-04-01T00:00:00Z"}]}
    only_pre = WheelIndex(None, fetch=lambda url: json.dumps(pre).encode())
    assert only_pre.releases_by("p") == [("1.0rc3", "2018-04-01"), ("1.0rc2", "2017-07-01")]
    assert only_pre.releases_by("p", dt.date(2018, 1, 1)) == [("1.0rc2", "2017-07-01")]


def test_find_provider__the_tables_pyshp() -> None:
    """downscaling-gan (corpus13 dev): `shapefile` is pyshp's module; no provider was found."""
    idx = FakeIndex({"pyshp": [("2.1.3", "2021-01-01", {"shapefile"})]})
    s = providers.find_provider("shapefile", idx, dt.date(2021, 6, 1))
    assert s is not None and s.distribution == "pyshp"


@pytest.mark.parametrize("module,wants,python,said", [
    ("loguru", "loguru", "3.9", "No module named 'loguru'"),
    # installed code (gensim's smart_open) imports dataclasses on 3.6, where it is no standard
    # library yet and the distribution never declared the backport (mol2vec, corpus6 held)
    ("gensim", "dataclasses", "3.6", "No module named 'dataclasses'"),
    # a package that looks for its companion and says so in words of its own (alphafold, corpus7 dev)
    ("jax", "jaxlib", "3.8", "jax requires jaxlib to be installed. See https://github.com/google/jax#installation"),
])
def test_reproduce__undeclared_import__provider_by_wheel_evidence__relocked_rebuilt_imports_pass(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path, write_files: Any,
        module: str, wants: str, python: str, said: str) -> None:
    """`import loguru` with nothing declared, and the index could not be asked while init drafted
    (so no provider then): the environment lacks it; the wheel of loguru's newest release by the
    submission's date ships loguru, so the import check's repair records it in model.toml with
    that evidence, then relock, rebuild, and the import check passes. Likewise a standard-library
    module of newer CPythons that installed code imports on an older one: its backport."""
    import tomllib

    from pyrepro import index as index_mod
    from pyrepro import lock, reproduce
    from pyrepro import run as run_mod
    from pyrepro.backends import BuiltModel, local
    from pyrepro.paths import Paths

    proj = tmp_path / "proj"
    (proj / "models").mkdir(parents=True)
    (proj / "patches").mkdir()
    (proj / "flake.nix").write_text("{}\n")
    monkeypatch.setenv("PYREPRO_ROOT", str(proj))
    fake = FakeIndex({wants: [("0.7.2", "2023-09-11", {wants}), ("0.5.3", "2020-09-20", {wants})]})
    fake.up = False  # while init drafts
    monkeypatch.setattr(index_mod, "WheelIndex", lambda cache: fake)
    locks: list[str] = []
    preferred: list[str | None] = []

    def fake_lock(spec, paths, start="as-declared", **kw):  # type: ignore[no-untyped-def]
        deps = (spec.dir / "pyproject.toml").read_text()
        locks.append(deps)
        preferred.append(kw.get("prefer"))
        fake.up = True
        (spec.dir / "lock.toml").write_text('schema = 1\ncategory = 2\nstrategy = "date-bounded"\npython = "3.9"\n')
        (spec.dir / "pdm.lock").write_text("# lock\n")
        return lock.LockOutcome(spec.name, 2, "date-bounded", (), (), (), (), (), (), 1.0, spec.python, ("x",), 1,
                                "sha256:0", None, spec.dir / "pdm.lock", spec.dir / "lock.toml", "ok")

    def fake_build(spec, paths, **kw):  # type: ignore[no-untyped-def]
        return BuiltModel(spec.name, "local", paths.cache / "env", "k" * 20, paths.cache / "src", paths.cache / "rt",
                          "s" * 20, paths.cache / "launch", "3.9.18", True, True, 0.1)

    def fake_imports(spec, built, **kw):  # type: ignore[no-untyped-def]
        has = f'"{wants}"' in (spec.dir / "pyproject.toml").read_text()
        return [("numpy", "ok", ""), (module, "ok", "") if has else
                (module, "error", f"ModuleNotFoundError: {said}")]

    monkeypatch.setattr(lock, "lock_model", fake_lock)
    monkeypatch.setattr(local, "build", fake_build)
    monkeypatch.setattr(run_mod, "scanned_modules", lambda spec, built: ["numpy", module])
    monkeypatch.setattr(run_mod, "check_imports", fake_imports)
    declared = "numpy==1.19.5\n" + ("" if module == wants else f"{module}\n")
    root = write_files({"sub/run.py": f"import numpy\nimport {module}\n", "sub/requirements.txt": declared,
                        "sub/metadata.json": json.dumps({"date_submitted": "03-01-2021"})})
    res = reproduce.reproduce(root / "sub", paths=Paths.discover(), name="sub", python=python, online=True)
    assert res.ok, res.stages
    assert len(locks) == 2 and f'"{wants}"' not in locks[0] and f'"{wants}"' in locks[1]
    assert preferred == [None, "# lock\n"]  # the relock prefers the versions of the lock it replaces
    doc = tomllib.loads((proj / "models" / "sub" / "model.toml").read_text())
    entry = doc["mapping"][wants]
    assert entry["distribution"] == wants and f"{wants}-0.5.3-py3-none-any.whl" in entry["reason"]
    assert "uploaded 2020-09-20" in entry["reason"] and wants in doc["dependencies"]["extra"]
    lock_row = next(s for s in res.stages if s.name == "lock")
    assert f"after adding {wants} (ships {wants})" in lock_row.detail
    assert any(r.startswith(f"{wants} provided by {wants}==0.5.3") for r in res.relaxed)



def test_reproduce__undeclared_import__provider_found_at_init__one_lock_imports_pass(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path, write_files: Any) -> None:
    """The same submission with the index answering from the start: init drafts loguru (the wheel
    of its newest release by the submission's date ships loguru) with that evidence, so the first
    lock has it: no relock, no rebuild."""
    import tomllib

    from pyrepro import index as index_mod
    from pyrepro import lock, reproduce
    from pyrepro import run as run_mod
    from pyrepro.backends import BuiltModel, local
    from pyrepro.paths import Paths

    proj = tmp_path / "proj"
    (proj / "models").mkdir(parents=True)
    (proj / "patches").mkdir()
    (proj / "flake.nix").write_text("{}\n")
    monkeypatch.setenv("PYREPRO_ROOT", str(proj))
    fake = FakeIndex({"loguru": [("0.7.2", "2023-09-11", {"loguru"}), ("0.5.3", "2020-09-20", {"loguru"})]})
    monkeypatch.setattr(index_mod, "WheelIndex", lambda cache: fake)
    locks: list[str] = []

    def fake_lock(spec, paths, start="as-declared", **kw):  # type: ignore[no-untyped-def]
        deps = (spec.dir / "pyproject.toml").read_text()
        locks.append(deps)
        (spec.dir / "lock.toml").write_text('schema = 1\ncategory = 2\nstrategy = "date-bounded"\npython = "3.9"\n')
        (spec.dir / "pdm.lock").write_text("# lock\n")
        return lock.LockOutcome(spec.name, 2, "date-bounded", (), (), (), (), (), (), 1.0, spec.python, ("x",), 1,
                                "sha256:0", None, spec.dir / "pdm.lock", spec.dir / "lock.toml", "ok")

    def fake_build(spec, paths, **kw):  # type: ignore[no-untyped-def]
        return BuiltModel(spec.name, "local", paths.cache / "env", "k" * 20, paths.cache / "src", paths.cache / "rt",
                          "s" * 20, paths.cache / "launch", "3.9.18", True, True, 0.1)

    def fake_imports(spec, built, **kw):  # type: ignore[no-untyped-def]
        has = "loguru" in (spec.dir / "pyproject.toml").read_text()
        return [("numpy", "ok", ""), ("loguru", "ok", "") if has else
                ("loguru", "error", "ModuleNotFoundError: No module named 'loguru'")]

    monkeypatch.setattr(lock, "lock_model", fake_lock)
    monkeypatch.setattr(local, "build", fake_build)
    monkeypatch.setattr(run_mod, "scanned_modules", lambda spec, built: ["numpy", "loguru"])
    monkeypatch.setattr(run_mod, "check_imports", fake_imports)
    root = write_files({"sub/run.py": "import numpy\nimport loguru\n", "sub/requirements.txt": "numpy==1.19.5\n",
                        "sub/metadata.json": json.dumps({"date_submitted": "03-01-2021"})})
    res = reproduce.reproduce(root / "sub", paths=Paths.discover(), name="sub", python="3.9", online=True)
    assert res.ok, res.stages
    assert len(locks) == 1 and "loguru" in locks[0]
    doc = tomllib.loads((proj / "models" / "sub" / "model.toml").read_text())
    entry = doc["mapping"]["loguru"]
    assert entry["distribution"] == "loguru" and "loguru-0.5.3-py3-none-any.whl" in entry["reason"]
    assert "uploaded 2020-09-20" in entry["reason"]
    assert "loguru" in doc["dependencies"]["scanned"] and not res.relaxed


def test_find_provider__nothing_by_the_date__first_release_after_it_that_ships_it() -> None:
    # the submission lives in the repository of its own package, published on PyPI months later
    idx = FakeIndex({"bench-kit": [("0.1.0", "2023-02-10", {"bench_kit"}), ("0.2.0", "2023-06-01", {"bench_kit"}),
                                   ("1.0.0", "2024-09-06", {"bench_kit"})]})
    p = providers.find_provider("bench_kit.metrics", idx, dt.date(2022, 11, 17))
    assert p is not None and (p.distribution, p.version) == ("bench-kit", "0.1.0")
    assert "85 days after the submission's date 2022-11-17" in p.reason and "first after it" in p.reason
    # a release by the date wins over any later one
    idx.projects["bench-kit"].append(("0.0.9", "2022-10-01", {"bench_kit"}))
    p = providers.find_provider("bench_kit", idx, dt.date(2022, 11, 17))
    assert p is not None and p.version == "0.0.9" and "by the submission's date" in p.reason
    # without a date there is no "after": the newest release decides, as before
    p = providers.find_provider("bench_kit", idx, None)
    assert p is not None and p.version == "1.0.0"
    # a later release that does not ship the module is no evidence either
    assert providers.find_provider("other_mod", FakeIndex({"other-mod": [("2.0", "2024-01-01", {"x"})]}),
                                   dt.date(2022, 1, 1)) is None


def test_wheel_index_top_levels__release_without_a_wheel__its_sdist_members(tmp_path: Path) -> None:
    sdist = _targz({"vizkit-0.5.1/setup.py": "", "vizkit-0.5.1/versioneer.py": "",
                    "vizkit-0.5.1/vizkit/__init__.py": "", "vizkit-0.5.1/vizkit/sub/__init__.py": "",
                    "vizkit-0.5.1/tests/__init__.py": "", "vizkit-0.5.1/src/vizhelp.py": "",
                    "vizkit-0.5.1/docs/conf.py": "", "vizkit-0.5.1/README.md": ""})
    listing = {"files": [
        {"filename": "vizkit-0.5.1.tar.gz", "url": "https://files/vizkit-0.5.1.tar.gz", "size": len(sdist),
         "upload-time": "2022-10-08T00:00:00Z"},
        {"filename": "vizkit-0.9.0-py3-none-any.whl", "url": "https://files/w", "upload-time": "2024-01-01T00:00:00Z"}]}
    asked: list[str] = []

    def fetch(url: str) -> bytes | None:
        asked.append(url)
        return sdist if url.endswith(".tar.gz") else json.dumps(listing).encode()

    idx = WheelIndex(tmp_path, fetch=fetch, range_fetch=lambda *a: None)
    got = idx.top_levels("vizkit", "0.5.1")
    assert got == (frozenset({"vizkit", "vizhelp"}), "vizkit-0.5.1.tar.gz")
    p = providers.find_provider("vizkit.plots", idx, dt.date(2022, 11, 17))
    assert p is not None and (p.version, p.wheel) == ("0.5.1", "vizkit-0.5.1.tar.gz")
    assert "the sdist vizkit-0.5.1.tar.gz" in p.reason
    # cached per file: a second index asks the listing, never the sdist again
    asked.clear()
    assert WheelIndex(tmp_path, fetch=fetch, range_fetch=lambda *a: None).top_levels("vizkit", "0.5.1") == got
    assert not [u for u in asked if u.endswith(".tar.gz")]
    # an unreadable sdist is no evidence, and no crash
    sdist = b"not a tarball"
    assert WheelIndex(tmp_path / "other", fetch=fetch, range_fetch=lambda *a: None).top_levels("vizkit", "0.5.1") is None


def test_wheel_index_top_levels__sdist_s_own_top_level_txt_and_root_pyx__the_extension_module(
        tmp_path: Path) -> None:
    """sparsesvd 0.2.2 (histwords, corpus15 held) is one Cython extension module, sparsesvd.pyx,
    beside a bundled Pyrex package and ez_setup.py: its file names alone said Pyrex and ez_setup,
    so no provider was found. Its own egg-info's top_level.txt says sparsesvd; a root .pyx is a
    module too; a vendored project's egg-info deeper down is not the sdist's own."""
    sdist = _targz({"sparsesvd-0.2.2/setup.py": "", "sparsesvd-0.2.2/ez_setup.py": "",
                    "sparsesvd-0.2.2/Pyrex/__init__.py": "", "sparsesvd-0.2.2/sparsesvd.pyx": "",
                    "sparsesvd-0.2.2/sparsesvd.egg-info/top_level.txt": "sparsesvd\n",
                    "sparsesvd-0.2.2/SVDLIBC/old.egg-info/top_level.txt": "svdlibc\n"})
    listing = {"files": [{"filename": "sparsesvd-0.2.2.tar.gz", "url": "https://files/sparsesvd-0.2.2.tar.gz",
                          "size": len(sdist), "upload-time": "2013-12-26T00:00:00Z"}]}

    def fetch(url: str) -> bytes | None:
        return sdist if url.endswith(".tar.gz") else json.dumps(listing).encode()

    idx = WheelIndex(tmp_path, fetch=fetch, range_fetch=lambda *a: None)
    assert idx.top_levels("sparsesvd", "0.2.2") == (frozenset({"sparsesvd"}), "sparsesvd-0.2.2.tar.gz")
    p = providers.find_provider("sparsesvd", idx, dt.date(2017, 1, 1))
    assert p is not None and (p.distribution, p.version) == ("sparsesvd", "0.2.2")
    from pyrepro.toplevel import sdist_top_levels

    # without the egg-info: the root .pyx is read as a module beside the rest
    assert sdist_top_levels(["s-1/s.pyx", "s-1/ez_setup.py", "s-1/setup.py"]) == {"s", "ez_setup"}


def test_sdist_top_levels__packages_and_root_modules_only() -> None:
    from pyrepro.toplevel import sdist_top_levels

    assert sdist_top_levels(["p-1/p/__init__.py", "p-1/p/a/__init__.py", "p-1/setup.py", "p-1/conftest.py",
                             "p-1/single.py", "p-1/ext.cpython-38-x86_64-linux-gnu.so", "p-1/data/x.py",
                             "p-1/src/q/__init__.py", "p-1/tests/__init__.py", "p-1"]) == {"p", "single", "q"}


def test_reproduce__provider_release_fails_inside_itself__next_release_pinned_relocked_imports_pass(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path, write_files: Any) -> None:
    """mbd-bowsr (dev corpus): init gives `import bench_kit` the first release after the
    submission's date (none before ships it); that release fails inside itself at import. The
    repair pins its next release that ships the module, with the reason, relocks, rebuilds, and
    the import check passes."""
    import tomllib

    from pyrepro import index as index_mod
    from pyrepro import lock, reproduce
    from pyrepro import run as run_mod
    from pyrepro.backends import BuiltModel, local
    from pyrepro.paths import Paths

    proj = tmp_path / "proj"
    (proj / "models").mkdir(parents=True)
    (proj / "patches").mkdir()
    (proj / "flake.nix").write_text("{}\n")
    monkeypatch.setenv("PYREPRO_ROOT", str(proj))
    fake = FakeIndex({"bench-kit": [("0.1.0", "2023-02-10", {"bench_kit"}), ("0.1.1", "2023-02-21", {"bench_kit"}),
                                    ("1.0.0", "2024-09-06", {"bench_kit"})]})
    monkeypatch.setattr(index_mod, "WheelIndex", lambda cache: fake)
    locks: list[str] = []

    def fake_lock(spec, paths, start="as-declared", **kw):  # type: ignore[no-untyped-def]
        deps = (spec.dir / "pyproject.toml").read_text()
        locks.append(deps)
        version = "0.1.1" if "bench-kit==0.1.1" in deps else "0.1.0"
        (spec.dir / "lock.toml").write_text('schema = 1\ncategory = 2\nstrategy = "date-bounded"\npython = "3.9"\n')
        (spec.dir / "pdm.lock").write_text(f'[[package]]\nname = "bench-kit"\nversion = "{version}"\n\n'
                                           '[[package]]\nname = "numpy"\nversion = "1.19.5"\n')
        return lock.LockOutcome(spec.name, 2, "date-bounded", (), (), (), (), (), (), 1.0, spec.python, ("x",), 2,
                                "sha256:0", None, spec.dir / "pdm.lock", spec.dir / "lock.toml", "ok")

    def fake_build(spec, paths, **kw):  # type: ignore[no-untyped-def]
        return BuiltModel(spec.name, "local", paths.cache / "env", "k" * 20, paths.cache / "src", paths.cache / "rt",
                          "s" * 20, paths.cache / "launch", "3.9.18", True, True, 0.1)

    def fake_imports(spec, built, **kw):  # type: ignore[no-untyped-def]
        fixed = 'version = "0.1.1"' in (spec.dir / "pdm.lock").read_text()
        return [("numpy", "ok", ""), ("bench_kit", "ok", "") if fixed else
                ("bench_kit", "error", "FileNotFoundError: [Errno 2] No such file or directory: "
                                       "'/env/lib/python3.9/site-packages/site/package.json'")]

    monkeypatch.setattr(lock, "lock_model", fake_lock)
    monkeypatch.setattr(local, "build", fake_build)
    monkeypatch.setattr(run_mod, "scanned_modules", lambda spec, built: ["numpy", "bench_kit"])
    monkeypatch.setattr(run_mod, "check_imports", fake_imports)
    root = write_files({"sub/run.py": "import numpy\nimport bench_kit\n", "sub/requirements.txt": "numpy==1.19.5\n",
                        "sub/metadata.json": json.dumps({"date_submitted": "11-17-2022"})})
    res = reproduce.reproduce(root / "sub", paths=Paths.discover(), name="sub", python="3.9", online=True)
    assert res.ok, res.stages
    assert len(locks) == 2 and "bench-kit==0.1.1" in locks[1]
    doc = tomllib.loads((proj / "models" / "sub" / "model.toml").read_text())
    assert "85 days after" in doc["mapping"]["bench_kit"]["reason"]
    pin = next(p for p in doc["dependencies"]["pins"] if p["name"] == "bench-kit")
    assert pin["spec"] == "==0.1.1" and "rule provider-next-release" in pin["reason"]
    assert any(r.startswith("bench-kit 0.1.0 -> 0.1.1: bench_kit fails to import inside bench-kit 0.1.0")
               for r in res.relaxed)
    assert "after moving bench-kit 0.1.0 -> 0.1.1" in next(s for s in res.stages if s.name == "lock").detail


def test_next_release__first_later_release_that_ships_the_module() -> None:
    idx = FakeIndex({"bench-kit": [("0.1.0", "2023-02-10", {"bench_kit"}), ("0.1.1", "2023-02-21", {"other"}),
                                   ("0.2.0", "2023-06-01", {"bench_kit"}), ("0.0.9", "2022-01-01", {"bench_kit"})]})
    got = providers.next_release("bench_kit", "bench-kit", "0.1.0", idx)
    assert got is not None and got[0] == "0.2.0" and "next release that ships bench_kit" in got[1]
    assert providers.next_release("bench_kit", "bench-kit", "0.2.0", idx) is None
    assert providers.next_release("bench_kit", "bench-kit", "not a version", idx) is None


def test_match_by_wheels__optional_import__no_provider_looked_up(tmp_path: Path, write_files: Any) -> None:
    """An import only a Sphinx conf.py or a try/except ImportError makes is optional: it is never
    installed unless declared, so init looks up no provider for it (a docs theme became a model
    requirement of molecular-transformer, corpus4 dev)."""
    from pyrepro import init as init_mod
    from pyrepro.scan import scan_path

    root = write_files({"sub/run.py": "import loguru\ntry:\n    import tqdm\nexcept ImportError:\n    tqdm = None\n",
                        "sub/docs/conf.py": "import sphinx_rtd_theme\n"})
    fake = FakeIndex({n: [("1.0", "2020-01-01", {m})] for n, m in
                      (("loguru", "loguru"), ("tqdm", "tqdm"), ("sphinx-rtd-theme", "sphinx_rtd_theme"))})
    got = init_mod.match_by_wheels(scan_path(root / "sub"), fake)
    assert [(m.module, m.distribution) for m in got] == [("loguru", "loguru")]


def test_find_provider__releases_without_a_wheel_for_the_python__passed_over() -> None:
    """keras-molecules (corpus4 held, after the measurement): dated 2016-10, on CPython 3.6, keras
    1.1.1 needs tensorflow. TensorFlow's first releases after that date had no cp36 wheel, and the
    one found did not lock; the first release with a cp36 wheel is the provider."""
    class Idx(FakeIndex):
        def has_wheel(self, name: str, version: str, python: str) -> bool | None:
            return {"0.12.0": python == "3.5", "0.12.1": python == "3.5", "1.2.0": True}.get(version)

    idx = Idx({"tensorflow": [("0.12.0", "2016-11-29", {"tensorflow"}), ("0.12.1", "2016-12-24", {"tensorflow"}),
                              ("1.2.0", "2017-06-16", {"tensorflow"})]})
    p = providers.find_provider("tensorflow", idx, dt.date(2016, 10, 31), "3.6")
    assert p is not None and p.version == "1.2.0" and "after the submission's date" in p.reason
    assert providers.find_provider("tensorflow", idx, dt.date(2016, 10, 31), "3.5").version == "0.12.0"
    assert providers.find_provider("tensorflow", idx, dt.date(2016, 10, 31)).version == "0.12.0"  # no Python: as before


def test_find_provider__releases_whose_requires_python_excludes_the_python__passed_over() -> None:
    """A release whose Requires-Python rules the model's Python out never installs there, whatever
    its wheel's tags (py3-none-any fits every Python 3): the next older release is the provider."""
    class Idx(FakeIndex):
        def requires_python(self, name: str, version: str) -> str | None:
            return {"2.0": ">=3.9"}.get(version)

    idx = Idx({"mystery-mod": [("2.0", "2024-01-01", {"mystery_mod"}), ("1.0", "2020-01-01", {"mystery_mod"})]})
    assert providers.find_provider("mystery_mod", idx, None, "3.7").version == "1.0"
    assert providers.find_provider("mystery_mod", idx, None, "3.11").version == "2.0"


def test_persist__provider_first_released_after_the_date__pinned_to_that_release(tmp_path: Path,
                                                                                   write_files: Any) -> None:
    """keras-molecules (corpus4 held, after the measurement): tensorflow was added unpinned, the
    relock took today's (keras 1.1.1 then failed on tf.placeholder) and the date-bounded relock could
    not see it. A provider first released after the date is pinned to that release; one released by
    the date stays unpinned (the date bound chooses)."""
    import tomllib

    from pyrepro.init import init_model

    root = write_files({"sub/run.py": "import numpy\n"})
    res = init_model(root / "sub", name="sub", models_dir=tmp_path / "models", online=False, cache=tmp_path / "c")
    mt = tmp_path / "models" / "sub" / "model.toml"
    late = providers.Provider("tensorflow", "tensorflow", "0.12.1", "w", "2016-12-28",
                              f"... (uploaded 2016-12-28, 58 days {providers.AFTER_DATE} 2016-10-31: ...)")
    early = providers.Provider("loguru", "loguru", "0.5.3", "w", "2020-09-20", "... (uploaded 2020-09-20, by ...)")
    providers.persist(mt, [late, early])
    doc = tomllib.loads(mt.read_text())
    assert {"tensorflow==0.12.1", "loguru"} <= set(doc["dependencies"]["extra"]) and res is not None
    assert "tensorflow==0.12.1" in (mt.parent / "pyproject.toml").read_text()


def test_persist__a_pinned_provider_already_required__its_release_pinned_all_the_same(tmp_path: Path,
                                                                                        write_files: Any) -> None:
    """catkit (corpus8 dev): setuptools is scanned (the code imports setuptools too), and its newest
    release no longer ships pkg_resources; the provider 80.9.0 was found but not written, so the
    relock took 82.0.1 again. The pin goes into [[dependencies.pins]] with the provider's reason."""
    import tomllib

    from pyrepro.init import init_model

    root = write_files({"sub/run.py": "import setuptools\nimport pkg_resources\n"})
    init_model(root / "sub", name="sub", models_dir=tmp_path / "models", online=False, cache=tmp_path / "c")
    mt = tmp_path / "models" / "sub" / "model.toml"
    assert "setuptools" in tomllib.loads(mt.read_text())["dependencies"]["scanned"]
    ships = providers.Provider("pkg_resources", "setuptools", "80.9.0", "w", "2025-05-27",
                               "... setuptools 82.0.1, a newer release, no longer ships it ...", pinned=True)
    providers.persist(mt, [ships])
    doc = tomllib.loads(mt.read_text())
    assert [(p["name"], p["spec"]) for p in doc["dependencies"]["pins"] if p["name"] == "setuptools"] == [
        ("setuptools", "==80.9.0")]
    assert "setuptools==80.9.0" in (mt.parent / "pyproject.toml").read_text()
    assert doc["mapping"]["pkg_resources"]["distribution"] == "setuptools"
    from pyrepro import lock
    from pyrepro.registry import parse_model

    req = lock.LockRequest.from_spec(parse_model(mt))
    assert req.overrides == () and "setuptools==80.9.0" in req.carried  # automatic, never a reviewed override


def test_index__a_release_s_files__hashes_requires_python_upload_day() -> None:
    """What a lock from uv's resolution reads of the index (PEP 691): file names with their sha256,
    the release's Requires-Python (uv reads only its lower bound), the first upload day."""
    from pyrepro.index import Index

    listing = {"files": [
        {"filename": "dataclasses-0.8-py3-none-any.whl", "hashes": {"sha256": "a" * 64},
         "requires-python": ">=3.6, <3.7", "upload-time": "2020-11-13T19:40:12Z"},
        {"filename": "dataclasses-0.8.tar.gz", "hashes": {"sha256": "b" * 64}, "upload-time": "2020-11-13T19:40:14Z"},
        {"filename": "dataclasses-0.6-py3-none-any.whl", "hashes": {}, "upload-time": "2018-05-17T00:00:00Z"},
    ]}
    idx = Index(None, fetch=lambda url: json.dumps(listing).encode())
    assert idx.file_hashes("dataclasses", "0.8") == [("dataclasses-0.8-py3-none-any.whl", "sha256:" + "a" * 64),
                                                     ("dataclasses-0.8.tar.gz", "sha256:" + "b" * 64)]
    assert idx.file_hashes("dataclasses", "0.6") == []  # listed without a sha256: no file to lock
    assert idx.requires_python("dataclasses", "0.8") == ">=3.6, <3.7" and idx.requires_python("dataclasses", "0.6") is None
    assert idx.uploaded("dataclasses", "0.8") == "2020-11-13" and idx.file_hashes("dataclasses", "not-a-version") == []


def test_find_provider__module_renamed_in_later_releases__older_release_that_ships_it_pinned() -> None:
    """pinns (corpus6 held, undated): `import pyDOE`; PyPI's pydoe ships `pydoe` in its releases of
    2026 and `pyDOE` in 0.3.8 of 2015. The newest release not shipping it is no reason to give the
    candidate up: one release a year further back is read, and the one that ships it is pinned."""
    idx = FakeIndex({"pydoe": [("1.6.0", "2026-10-21", {"pydoe"}), ("1.5.0", "2026-08-20", {"pydoe"}),
                               ("0.4.0", "2026-02-08", {"pydoe"}), ("0.3.8", "2015-07-13", {"pyDOE"}),
                               ("0.3.7", "2014-12-09", {"pyDOE"})]})
    p = providers.find_provider("pyDOE", idx, None)
    assert p is not None and (p.distribution, p.version, p.pinned, p.spec()) == ("pydoe", "0.3.8", True, "==0.3.8")
    assert "pydoe 1.6.0, a newer release, no longer ships it" in p.reason
    assert idx.asked == [("pydoe", "1.6.0"), ("pydoe", "0.3.8")]  # the other 2026 releases: not read
    # the newest release ships it: nothing pinned
    q = providers.find_provider("pydoe", idx, None)
    assert q is not None and (q.version, q.pinned, q.spec()) == ("1.6.0", False, "")
    # a project whose releases of several years never ship it is given up after MAX_YEARS reads
    other = FakeIndex({"pydoe": [(f"{y - 2000}.0", f"{y}-01-01", {"else"}) for y in range(2025, 2015, -1)]})
    assert providers.find_provider("pyDOE", other, None) is None
    assert len([a for a in other.asked if a[0] == "pydoe"]) == providers.MAX_YEARS


def test_init__undeclared_import_of_a_renamed_module__provider_pinned_in_model_toml(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write_files: Any) -> None:
    """Through init: the provider release found behind the rename is written with its evidence to
    [mapping] and pinned in [[dependencies.pins]], so the lock cannot take a release without it."""
    import tomllib

    from pyrepro import index as index_mod
    from pyrepro.init import init_model

    idx = FakeIndex({"pydoe": [("1.6.0", "2026-10-21", {"pydoe"}), ("0.3.8", "2015-07-13", {"pyDOE"})]})
    monkeypatch.setattr(index_mod, "WheelIndex", lambda cache: idx)
    root = write_files({"sub/train.py": "import numpy\nfrom pyDOE import lhs\n", "sub/requirements.txt": "numpy\n"})
    init_model(root / "sub", name="sub", models_dir=tmp_path / "models", python="3.9", cache=tmp_path / "c")
    doc = tomllib.loads((tmp_path / "models" / "sub" / "model.toml").read_text())
    assert doc["mapping"]["pyDOE"]["distribution"] == "pydoe"
    pin = next(p for p in doc["dependencies"]["pins"] if p["name"] == "pydoe")
    assert pin["spec"] == "==0.3.8" and "no longer ships it" in pin["reason"]
    assert "pydoe==0.3.8" in (tmp_path / "models" / "sub" / "pyproject.toml").read_text().replace(" ", "")


def test_abbreviated_by__words_begun_word_for_word__shortest_first_capped() -> None:
    names = ["bayes-opt-x", "bayes-optim", "bayesian-optimization", "bayes", "opt-bayes", "bayesopt",
             "bayes-optimiser-tools"]
    assert providers.abbreviated_by("bayes_opt.util", names) == ("bayes-optim", "bayesian-optimization")
    assert providers.abbreviated_by("umap", ["umap-learn", "umapper"]) == ()  # one word: no search
    many = [f"ab-cd{i:02d}" for i in range(30)]
    assert len(providers.abbreviated_by("ab_cd", many)) == providers.MAX_SEARCHED
    assert "ab-cd" not in providers.abbreviated_by("ab_cd", ["ab-cd", "abc-cde"])  # its own spelling: a candidate


def test_index_project_names__json_or_html_root__read_once_then_cached(tmp_path: Path) -> None:
    from pyrepro.index import Index, parse_project_names

    html = b'<!DOCTYPE html><html><body>\n<a href="bayesian-optimization/">bayesian-optimization</a>\n' \
           b'<a href="00smalinux/">00SMALINUX</a>\n<a href="Foo_Bar/">Foo_Bar</a></body></html>'
    assert parse_project_names(html) == ["00smalinux", "bayesian-optimization", "foo-bar"]
    js = json.dumps({"meta": {"api-version": "1.1"}, "projects": [{"name": "Bayes_Opt"}, {"name": "x"}]}).encode()
    assert parse_project_names(js) == ["bayes-opt", "x"]
    assert parse_project_names(b"not an index") == []
    asked: list[str] = []

    def fetch(url: str) -> bytes | None:
        asked.append(url)
        return html

    assert Index(tmp_path, fetch).project_names() == ["00smalinux", "bayesian-optimization", "foo-bar"]
    assert Index(tmp_path, lambda url: None).project_names() == ["00smalinux", "bayesian-optimization", "foo-bar"]
    assert len(asked) == 1 and (tmp_path / "index" / "project-names.txt").is_file()
    assert Index(tmp_path / "empty", lambda url: None).project_names() is None  # unreachable, nothing kept


def test_reproduce__import_whose_distribution_has_other_words__found_by_the_name_search(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path, write_files: Any) -> None:
    """lagrangian-nns (corpus8 held, 2020): `import bayes_opt` with nothing declared; no spelling of
    the module is a project whose wheel ships it (bayes-opt is someone else's). The index's project
    names that bayes_opt's words begin are read, shortest first: bayes-optim ships bayes_optim,
    bayesian-optimization ships bayes_opt, so model.toml maps it with that evidence and says how it
    was found; the relock and the import check pass."""
    import tomllib

    from pyrepro import index as index_mod
    from pyrepro import lock, reproduce
    from pyrepro import run as run_mod
    from pyrepro.backends import BuiltModel, local
    from pyrepro.paths import Paths

    proj = tmp_path / "proj"
    (proj / "models").mkdir(parents=True)
    (proj / "patches").mkdir()
    (proj / "flake.nix").write_text("{}\n")
    monkeypatch.setenv("PYREPRO_ROOT", str(proj))
    fake = FakeIndex({"bayes-opt": [("0.1", "2019-01-01", {"bayesopt_other"})],
                      "bayes-optim": [("0.2.5", "2019-06-01", {"bayes_optim"})],
                      "bayesian-optimization": [("1.2.0", "2020-05-16", {"bayes_opt"}),
                                                ("1.0.1", "2019-01-02", {"bayes_opt"})]})
    fake.names = ["bayes", "bayes-opt", "bayes-optim", "bayesian-optimization", "numpy"]
    monkeypatch.setattr(index_mod, "WheelIndex", lambda cache: fake)

    def fake_lock(spec, paths, start="as-declared", **kw):  # type: ignore[no-untyped-def]
        (spec.dir / "lock.toml").write_text('schema = 1\ncategory = 2\nstrategy = "date-bounded"\n')
        (spec.dir / "pdm.lock").write_text("# lock\n")
        return lock.LockOutcome(spec.name, 2, "date-bounded", (), (), (), (), (), (), 1.0, spec.python, ("x",), 1,
                                "sha256:0", None, spec.dir / "pdm.lock", spec.dir / "lock.toml", "ok")

    def fake_imports(spec, built, **kw):  # type: ignore[no-untyped-def]
        has = '"bayesian-optimization"' in (spec.dir / "pyproject.toml").read_text()
        return [("numpy", "ok", ""), ("bayes_opt", "ok", "") if has else
                ("bayes_opt", "error", "ModuleNotFoundError: No module named 'bayes_opt'")]

    monkeypatch.setattr(lock, "lock_model", fake_lock)
    monkeypatch.setattr(local, "build", lambda spec, paths, **kw: BuiltModel(
        spec.name, "local", paths.cache / "env", "k" * 20, paths.cache / "src", paths.cache / "rt", "s" * 20,
        paths.cache / "launch", "3.8.18", True, True, 0.1))
    monkeypatch.setattr(run_mod, "scanned_modules", lambda spec, built: ["numpy", "bayes_opt"])
    monkeypatch.setattr(run_mod, "check_imports", fake_imports)
    root = write_files({"sub/run.py": "import numpy\nfrom bayes_opt import BayesianOptimization\n",
                        "sub/requirements.txt": "numpy==1.18.1\n",
                        "sub/metadata.json": json.dumps({"date_submitted": "03-01-2020"})})
    res = reproduce.reproduce(root / "sub", paths=Paths.discover(), name="sub", python="3.8", online=True)
    assert res.ok, res.stages
    doc = tomllib.loads((proj / "models" / "sub" / "model.toml").read_text())
    entry = doc["mapping"]["bayes_opt"]
    assert entry["distribution"] == "bayesian-optimization" and "bayesian_optimization-1.0.1" in entry["reason"]
    assert "found by a search of the index's project names" in entry["reason"]
    assert ("bayes-optim", "0.2.5") in fake.asked  # read, and passed over: it ships another module


def test_init__conda_export_pins__date_from_the_newest_of_all_exact_pins(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write_files: Any) -> None:
    """delinker (corpus8, 2019): a conda export pins pandas=0.23.4=py36..., matplotlib=3.0.2=... and
    has one pip pin, planarity==0.4.1 (2016). The submission's date is the newest upload among all
    its exact pins, conda's spelling included (matplotlib 3.0.2, 2018-11-10), not the pip pin's."""
    import tomllib

    from pyrepro import index as index_mod
    from pyrepro.init import init_model

    idx = FakeIndex({"pandas": [("0.23.4", "2018-08-04", {"pandas"})],
                     "matplotlib": [("3.0.2", "2018-11-10", {"matplotlib"})],
                     "planarity": [("0.4.1", "2016-06-18", {"planarity"})]})
    monkeypatch.setattr(index_mod, "WheelIndex", lambda cache: idx)
    env = ("name: dl\nchannels:\n  - defaults\ndependencies:\n  - matplotlib=3.0.2=py36h5429711_0\n"
           "  - pandas=0.23.4=py36h04863e7_0\n  - python=3.6.7=h0371630_0\n  - pip:\n    - planarity==0.4.1\n")
    root = write_files({"sub/run.py": "import pandas\nimport matplotlib\nimport planarity\n", "sub/env.yml": env})
    init_model(root / "sub", name="sub", models_dir=tmp_path / "models", cache=tmp_path / "c")
    doc = tomllib.loads((tmp_path / "models" / "sub" / "model.toml").read_text())
    assert doc["submitted"] == "2018-11-10", doc["submitted_reason"]
    assert "3 exact pins: matplotlib 3.0.2 (2018-11-10)" in doc["submitted_reason"]


def test_init__date_from_pins_older_than_an_import_s_first_release__moves_to_that_release(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write_files: Any) -> None:
    """skip-thoughts (corpus14 held): theano==0.7 (2015-03-26) is its only exact pin, and its
    eval_sick.py imports keras, whose first release is of 2015-10-11. The code is no older than what
    it imports: the date moves to that day, and says why. A stated date is never moved."""
    import tomllib

    from pyrepro import index as index_mod
    from pyrepro.init import init_model

    idx = FakeIndex({"theano": [("0.7", "2015-03-26", {"theano"})],
                     "keras": [("0.2.0", "2015-10-11", {"keras"}), ("2.0.5", "2017-06-20", {"keras"})],
                     "numpy": [("1.9.2", "2015-03-01", {"numpy"})]})
    monkeypatch.setattr(index_mod, "WheelIndex", lambda cache: idx)
    root = write_files({"sub/skip.py": "import theano\nimport numpy\n",
                        "sub/eval_sick.py": "import numpy\nfrom keras.models import Sequential\n",
                        "sub/requirements.txt": "theano==0.7\nnumpy\nkeras\n"})
    init_model(root / "sub", name="sub", models_dir=tmp_path / "models", cache=tmp_path / "c")
    doc = tomllib.loads((tmp_path / "models" / "sub" / "model.toml").read_text())
    assert doc["submitted"] == "2015-10-11", doc["submitted_reason"]
    assert doc["submitted_reason"].startswith("no date stated; the newest upload among its 1 exact pins: theano 0.7")
    assert "moved to 2015-10-11: the code imports keras (eval_sick.py:2)" in doc["submitted_reason"]

    # an import only under a run-time if, or one first published years later (a later packaging
    # of old code), does not move it
    idx.projects["tvm"] = [("0.1", "2026-01-01", {"tvm"})]
    idx.projects["lasagne"] = [("0.1", "2015-08-13", {"lasagne"})]
    root3 = write_files({"far/run.py": "import theano\nimport tvm\nif use_lasagne:\n    import lasagne\n",
                         "far/requirements.txt": "theano==0.7\ntvm\nlasagne\n"})
    init_model(root3 / "far", name="far", models_dir=tmp_path / "models", cache=tmp_path / "c")
    doc3 = tomllib.loads((tmp_path / "models" / "far" / "model.toml").read_text())
    assert doc3["submitted"] == "2015-03-26", doc3["submitted_reason"]

    # a stated date stays, whatever the code imports
    root2 = write_files({"st/eval_sick.py": "from keras.models import Sequential\nimport theano\n",
                         "st/requirements.txt": "theano==0.7\n",
                         "st/metadata.json": json.dumps({"date_submitted": "06-01-2015"})})
    init_model(root2 / "st", name="st", models_dir=tmp_path / "models", cache=tmp_path / "c")
    doc2 = tomllib.loads((tmp_path / "models" / "st" / "model.toml").read_text())
    assert doc2["submitted"] == "2015-06-01"


def test_find_provider__pure_python_wheel_for_another_python_beside_an_sdist__still_a_provider() -> None:
    """gryffin (corpus9 dev, 2021 on 3.7): edward 1.3.5's only wheel is tagged py2-none-any, beside
    an sdist that installs on 3.7; a release whose wheels are compiled for other Pythons and has no
    sdist (TensorFlow) is still passed over."""

    class Idx(FakeIndex):
        files = {("edward", "1.3.5"): ["edward-1.3.5-py2-none-any.whl", "edward-1.3.5.tar.gz"],
                 ("tfx", "1.0"): ["tfx-1.0-cp35-cp35m-manylinux1_x86_64.whl"]}

        def has_wheel(self, name: str, version: str, python: str) -> bool | None:
            return False

        def release_files(self, name: str, version: str) -> list[str] | None:
            return self.files.get((name, version))

    idx = Idx({"edward": [("1.3.5", "2018-01-22", {"edward"})], "tfx": [("1.0", "2017-01-01", {"tfx"})]})
    p = providers.find_provider("edward", idx, dt.date(2021, 6, 1), "3.7")
    assert p is not None and (p.distribution, p.version) == ("edward", "1.3.5")
    assert providers.find_provider("tfx", idx, dt.date(2021, 6, 1), "3.7") is None


def test_known_absent__mantaflows_scene_module__never_pypis_unrelated_manta() -> None:
    """tempogan (corpus12 held): `import manta` took PyPI's manta (Joyent's storage SDK), which
    imports, so the check passed on the wrong project. mantaflow's module exists only inside its
    executable: the name table says so, and no provider is looked for."""
    from pyrepro import providers

    assert "mantaflow" in providers.known_absent("manta")
    assert "mantaflow" in providers.known_absent("manta.something")


def _dist_info(site: Path, name: str, version: str, tops: str) -> None:
    d = site / f"{name.replace('-', '_')}-{version}.dist-info"
    d.mkdir(parents=True)
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")
    (d / "top_level.txt").write_text(tops + "\n")


def test_reproduce__two_installed_distributions_ship_the_imported_module__the_scans_choice_is_dropped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path, write_files: Any) -> None:
    """rt-covid (corpus13 dev): the code imports theano and pymc3; the scan chose Theano for
    `import theano`, pymc3 3.11 requires Theano-PyMC, and both ship `theano`, so pymc3 failed with
    "'TheanoConfigParser' object has no attribute 'gcc__cxxflags'". The environment's dist-info
    folders say who ships the module; the scan's choice is dropped (rule module-clash), the model
    relocks, and the import check passes. A clash of two distributions the code both imports by
    name is left alone."""
    import tomllib
    from dataclasses import replace

    from pyrepro import lock, repair, reproduce
    from pyrepro import run as run_mod
    from pyrepro.backends import BuiltModel, local
    from pyrepro.paths import Paths

    proj = tmp_path / "proj"
    (proj / "models").mkdir(parents=True)
    (proj / "patches").mkdir()
    (proj / "flake.nix").write_text("{}\n")
    monkeypatch.setenv("PYREPRO_ROOT", str(proj))
    monkeypatch.setattr("pyrepro.index._urllib_fetch", lambda url: None)
    env = tmp_path / "env"
    site = env / "lib" / "python3.7" / "site-packages"

    def fake_lock(spec, paths, start="as-declared", **kw):  # type: ignore[no-untyped-def]
        (spec.dir / "lock.toml").write_text('schema = 1\ncategory = 1\nstrategy = "as-declared"\n')
        (spec.dir / "pdm.lock").write_text("# lock\n")
        return lock.LockOutcome(spec.name, 1, "as-declared", (), (), (), (), (), (), 1.0, spec.python, ("x",), 1,
                                "sha256:0", None, spec.dir / "pdm.lock", spec.dir / "lock.toml", "ok")

    def fake_build(spec, paths, **kw):  # type: ignore[no-untyped-def]
        import shutil

        shutil.rmtree(env, ignore_errors=True)
        _dist_info(site, "pymc3", "3.11.5", "pymc3")
        _dist_info(site, "Theano-PyMC", "1.1.2", "theano")
        if '"theano"' in (spec.dir / "pyproject.toml").read_text().lower():
            _dist_info(site, "Theano", "1.0.5", "theano\nbin")
        return BuiltModel(spec.name, "local", env, "k" * 20, paths.cache / "src", paths.cache / "rt", "s" * 20,
                          paths.cache / "launch", "3.7.17", True, True, 0.1)

    def fake_imports(spec, built, **kw):  # type: ignore[no-untyped-def]
        clash = (site / "Theano-1.0.5.dist-info").is_dir()
        return [("theano", "ok", ""), ("pymc3", "error", "AttributeError: 'TheanoConfigParser' object has no "
                                                         "attribute 'gcc__cxxflags'") if clash else ("pymc3", "ok", "")]

    monkeypatch.setattr(lock, "lock_model", fake_lock)
    monkeypatch.setattr(local, "build", fake_build)
    monkeypatch.setattr(run_mod, "scanned_modules", lambda spec, built: ["theano", "pymc3"])
    monkeypatch.setattr(run_mod, "check_imports", fake_imports)
    root = write_files({"sub/run.py": "import theano\nimport pymc3\n",
                        "sub/requirements.txt": "pymc3>=3.9.2\ntheano\n"})
    res = reproduce.reproduce(root / "sub", paths=Paths.discover(), name="sub", python="3.7", online=True)
    assert res.ok, res.stages
    doc = tomllib.loads((proj / "models" / "sub" / "model.toml").read_text())
    assert "theano" in doc["dependencies"]["dropped"]
    assert '"theano"' not in (proj / "models" / "sub" / "pyproject.toml").read_text().lower()
    assert any("rule module-clash" in r and "theano" in r for r in res.relaxed)
    # the planner: both imported by name, or no failure: nothing
    s = repair.Situation(python="3.7", python_stated=True, python_reason="", strategy="as-declared", dated=False,
                         imports=(("pymc3", "error", "AttributeError: x"),),
                         imported=frozenset({"theano", "theano-pymc", "pymc3"}),
                         clashes={"theano": ("theano", "theano-pymc")})
    assert repair._module_clash(s, list(s.imports)) is None
    assert repair._module_clash(replace(s, imported=frozenset({"theano", "pymc3"})), []) is None
    s2 = repair.Situation(python="3.7", python_stated=True, python_reason="", strategy="as-declared", dated=False,
                          imports=(("theano.tensor", "error", "AttributeError: x"),),
                          imported=frozenset({"theano", "pymc3"}), clashes={"theano": ("theano", "theano-pymc")})
    move = repair._module_clash(s2, list(s2.imports))
    assert isinstance(move, repair.DropClash) and move.distribution == "theano" and move.module == "theano"
    done = replace(s2, moves=(repair.Moved("clash", "imports", modules=("theano",)),))
    assert repair._module_clash(done, list(done.imports)) is None  # once per module
    # a failure that does not name the clashing module is not the clash's (chemcrow, corpus13 held:
    # molbloom's Python 3.10 syntax beside rdkit and rdkit-pypi)
    s3 = repair.Situation(python="3.9", python_stated=False, python_reason="", strategy="as-declared", dated=True,
                          imports=(("rdkit", "ok", ""), ("molbloom", "error", "TypeError: unsupported operand "
                                                         "type(s) for |: 'type' and 'NoneType'")),
                          imported=frozenset({"rdkit", "molbloom"}), clashes={"rdkit": ("rdkit", "rdkit-pypi")})
    assert repair._module_clash(s3, [s3.imports[1]]) is None
    assert isinstance(repair.next_move(s3), repair.RelockByDate)
    said = replace(s3, imports=(("molbloom", "error", "ImportError: cannot import name 'X' from 'rdkit.Chem'"),))
    assert isinstance(repair._module_clash(said, list(said.imports)), repair.DropClash)


@pytest.mark.parametrize(("code", "py"), [
    ("import tensorflow as tf\nimport concurrent.futures\nprint('x')\n", "2.7"),
    # code only Python 3 parses: the Python 2 backports are leftovers, a Python 3 is kept
    ("import tensorflow as tf\nname = 'x'\nprint(f'{name}')\n", "3.6"),
])
def test_init__exact_pins_only_python2_installs__python_2_7_unless_the_code_is_python3(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write_files: Any, code: str, py: str) -> None:
    """graphsage (corpus16 dev): requirements.txt pins tensorflow==1.8.0 beside futures==3.2.0 and
    enum34==1.1.6, the backports a Python 2 `pip freeze` lists; no Python 3 of the 2018 date has a
    wheel of futures 3.2.0, so the lock failed on 3.6. 2.7 has them all: 2.7 is taken, unless
    the code parses only as Python 3."""
    import tomllib

    from pyrepro import index as index_mod
    from pyrepro.init import init_model

    class Idx(FakeIndex):
        def has_wheel(self, name: str, version: str, python: str) -> bool | None:
            return python == "2.7" if name in ("futures", "enum34") else True

    idx = Idx({"tensorflow": [("1.8.0", "2018-04-27", {"tensorflow"})], "futures": [("3.2.0", "2017-11-30", set())],
               "enum34": [("1.1.6", "2016-05-16", set())]})
    monkeypatch.setattr(index_mod, "WheelIndex", lambda cache: idx)
    root = write_files({"m/train.py": code, "m/requirements.txt": "tensorflow==1.8.0\nfutures==3.2.0\nenum34==1.1.6\n"})
    init_model(root / "m", name="m", models_dir=tmp_path / "models", cache=tmp_path / "c")
    doc = tomllib.loads((tmp_path / "models" / "m" / "model.toml").read_text())
    assert doc["python"] == py, doc["python_reason"]
    if py == "2.7":
        assert "the pins are a Python 2 environment's" in doc["python_reason"]


def test_match_by_wheels__branch_only_import__no_provider_from_after_the_date(tmp_path: Path, write_files: Any) -> None:
    """rlkit-sac (corpus18 held, studied after its measurement): ``import d4rl`` sits in one branch
    of make_env, and d4rl's first release (2022) came three years after the 2019 submission; pinned
    as a provider, it bound the lock to Python 3.7 and the lock failed. A branch-only import gets no
    provider from after the date (a note says which and why); an unconditional one still does, and
    so does a branch-only one with a release by the date."""
    import datetime as dt

    from pyrepro import init as init_mod
    from pyrepro.scan import scan_path

    root = write_files({"sub/run.py": "import sys\nimport loguru\nif sys.argv[1] == 'd4rl':\n    import d4rl\n"
                                      "if sys.argv[1] == 'x':\n    import benchkitx\n"})
    fake = FakeIndex({"d4rl": [("1.1", "2022-09-25", {"d4rl"})], "loguru": [("1.0", "2022-09-25", {"loguru"})],
                      "benchkitx": [("4.0", "2018-01-01", {"benchkitx"})]})
    got = {m.module: m for m in init_mod.match_by_wheels(scan_path(root / "sub"), fake, dt.date(2019, 5, 22))}
    assert got["loguru"].declared and got["benchkitx"].declared
    assert not got["d4rl"].declared and "imported only at run.py:4" in got["d4rl"].reason
    assert "not added" in got["d4rl"].reason
