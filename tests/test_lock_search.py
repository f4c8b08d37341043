"""Issue 42 through ``reproduce``: declared pins that cannot all hold are relaxed by the pin search,
with a fake index and a resolver over it standing in for uv (tests/fakeindex.py)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pyrepro import lock, reproduce
from pyrepro.paths import Paths
from pyrepro.proc import Completed
from tests.fakeindex import FakeIndex, odd_words
from tests.fakes import FakeRunner


class _Files:
    """The index's files of a release (one pure wheel each), for the lock made from uv's resolution,
    and whether a release has a wheel for a Python (from ``idx``'s releases)."""

    def __init__(self, idx: FakeIndex | None = None) -> None:
        self.idx = idx

    def has_wheel(self, name: str, version: str, python: str) -> bool | None:
        rel = [r for r in (self.idx.releases if self.idx else []) if r.name == name and r.version == version]
        if not rel:
            return None
        return any(r.pythons is None or python in r.pythons for r in rel)

    def requires_python(self, name: str, version: str) -> str | None:
        return None

    def file_hashes(self, name: str, version: str) -> list[tuple[str, str]]:
        return [(f"{name.replace('-', '_')}-{version}-py3-none-any.whl", f"sha256:{_hash(name, version)}")]


def _hash(name: str, version: str) -> str:
    import hashlib

    return hashlib.sha256(f"{name}=={version}".encode()).hexdigest()


def _uv(idx: FakeIndex) -> Any:
    def answer(argv: tuple[str, ...], cwd: Path | None, env: Any) -> Completed:
        reqs = tuple(ln.strip() for ln in Path(argv[3]).read_text().splitlines() if ln.strip())
        full = argv[argv.index("--python-version") + 1]
        py = ".".join(full.split(".")[:2])
        bound = argv[argv.index("--exclude-newer") + 1][:10] if "--exclude-newer" in argv else None
        own = dict(argv[i + 1][:-len("T00:00:00Z")].split("=", 1) for i, a in enumerate(argv)
                   if a == "--exclude-newer-package")
        got = idx.resolve(reqs, py, bound, own)
        if got is None:
            return Completed(argv, 1, "", idx.words(sorted(r.split("=")[0] for r in reqs)))
        if "--generate-hashes" in argv:
            out = "".join(f"{n}=={v} \\\n    --hash=sha256:{_hash(n, v)}\n" for n, v in sorted(got.items()))
        else:
            out = "".join(f"{n}=={v}\n" for n, v in sorted(got.items()))
        return Completed(argv, 0, out, "")
    return answer


def _pip_index(idx: FakeIndex) -> Any:
    def answer(argv: tuple[str, ...], cwd: Path | None, env: Any) -> Completed:
        name = argv[5]
        versions = sorted({r.version for r in idx.releases if r.name == name}, key=Version, reverse=True)
        if not versions:
            return Completed(argv, 1, "", f"ERROR: No matching distribution found for {name}\n")
        return Completed(argv, 0, f"{name} ({versions[0]})\nAvailable versions: {', '.join(versions)}\n", "")
    return answer


def _reproduce(root: Path, name: str, idx: FakeIndex, monkeypatch: pytest.MonkeyPatch) -> Any:
    from pyrepro import interpreters as interp
    from pyrepro import run as run_mod
    from pyrepro.backends import BuiltModel, local
    from pyrepro.uvtool import uv_executable

    monkeypatch.setattr(reproduce, "UV_FIRST", True)
    monkeypatch.setattr(lock, "_index", lambda: _Files(idx))
    monkeypatch.setattr(lock, "find_python", lambda v: Path(f"/usr/bin/python{v}"))
    monkeypatch.setattr(interp, "find_python", lambda version, *, runner=None: Path(f"/usr/bin/python{version}"))
    monkeypatch.setattr(local, "build", lambda spec, paths, **kw: BuiltModel(
        spec.name, "local", paths.cache / "env", "k" * 20, paths.cache / "src", paths.cache / "rt", "s" * 20,
        paths.cache / "launch", f"{spec.python}.1", True, True, 0.1))
    monkeypatch.setattr(run_mod, "scanned_modules", lambda spec, built: [
        d.split("=")[0].replace("-", "_") for d in spec.dependencies.scanned])
    monkeypatch.setattr(run_mod, "check_imports", lambda spec, built, modules, **kw: [(m, "ok", "") for m in modules])
    runner = FakeRunner().on((uv_executable() or "uv", "pip", "compile"), _uv(idx)).on(
        (lock.sys.executable, "-m", "pip", "index", "versions"), _pip_index(idx)).on(
        (lock.sys.executable, "-c", lock._UPLOAD_DATE_SCRIPT), lambda argv, cwd, env: Completed(
            argv, 0, (idx.first_upload(argv[3], argv[4]) or "") + "\n", ""))
    return reproduce.reproduce(root, paths=Paths.discover(), name=name, online=False, runner=runner)


def _harness_index(**kw: Any) -> FakeIndex:
    idx = FakeIndex(**kw)
    for v in ("0.22.2", "0.23.2", "0.24.1", "1.0.1"):
        idx.add("scikit-learn", v)
    idx.add("matbench", "0.1.0", "scikit-learn==0.22.2").add("matbench", "0.2.0", "scikit-learn==0.24.1")
    idx.add("matbench", "0.3.0", "scikit-learn==0.23.2").add("matbench", "0.5.0", "scikit-learn==1.0.1")
    idx.add("modnet", "0.1.12", "scikit-learn>=0.23,<0.24").add("numpy", "1.19.5")
    return idx


def _model(project: Path, name: str) -> dict[str, Any]:
    return tomllib.loads((project / "models" / name / "model.toml").read_text())


def _record(project: Path, name: str) -> dict[str, Any]:
    return tomllib.loads((project / "models" / name / "lock.toml").read_text())


def _harness_folder(write_files: Any) -> Path:
    return write_files({"sub/run.py": "import matbench\nimport modnet\nimport numpy\n",
                        "sub/requirements.txt": "matbench==0.2.0\nmodnet==0.1.12\nnumpy==1.19.5\n"}) / "sub"


def test_reproduce__a_harness_pins_a_shared_dependency_in_every_release__the_harness_pin_widens(
        repro_project: Path, write_files: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    res = _reproduce(_harness_folder(write_files), "hb", _harness_index(), monkeypatch)
    assert [(s.name, s.status) for s in res.stages][:4] == [("init", "ok"), ("lock", "ok"), ("build", "ok"),
                                                            ("imports", "ok")], res.stages
    rec = _record(repro_project, "hb")
    assert rec["category"] == 2
    assert [(s["rule"], s["before"], s["after"]) for s in rec["steps"]] == [
        ("pin-search", "matbench==0.2.0", "matbench==0.3.0")]  # 0.* fits, and 0.3.0 is the nearest release
    assert "found by the pin search" in rec["steps"][0]["reason"] and "queries" in rec["steps"][0]["reason"]
    assert rec["pins_moved"] == ["matbench 0.2.0 -> 0.3.0: same major"]
    (search,) = rec["searches"]
    assert search["ok"] and search["queries"] <= 12
    pins = {p["name"]: p for p in _model(repro_project, "hb")["dependencies"].get("pins", [])}
    assert pins["matbench"]["spec"] == "==0.3.0" and "rule pin-search" in pins["matbench"]["reason"]
    assert pins["modnet"]["spec"] == "==0.1.12" and pins["modnet"]["reason"].startswith("declared")  # kept


def test_reproduce__the_resolvers_wording_does_not_change_the_outcome(
        repro_project: Path, write_files: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _harness_folder(write_files)
    _reproduce(folder, "plain", _harness_index(), monkeypatch)
    _reproduce(folder, "odd", _harness_index(words=odd_words), monkeypatch)
    plain, odd = _record(repro_project, "plain"), _record(repro_project, "odd")
    assert plain["category"] == odd["category"] == 2
    assert plain["requirements"] == odd["requirements"]
    assert [(s["before"], s["after"]) for s in plain["steps"]] == [(s["before"], s["after"]) for s in odd["steps"]]


def test_reproduce__two_pins_pin_a_third_differently__the_heavier_kept(
        repro_project: Path, write_files: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    idx = FakeIndex()
    for v in ("1.1.5", "1.3.1"):
        idx.add("pandas", v)
    idx.add("matminer", "0.6.2", "pandas>=1.0").add("matminer", "0.7.4", "pandas>=1.3.1")
    idx.add("matbench", "0.4.0", "matminer==0.6.2").add("matbench", "0.5.0", "matminer==0.7.4")
    folder = write_files({"m/run.py": "import pandas\nimport matbench\n",
                          "m/requirements.txt": "matbench==0.5.0\npandas==1.1.5\n"}) / "m"
    res = _reproduce(folder, "m", idx, monkeypatch)
    assert next(s for s in res.stages if s.name == "lock").status == "ok"
    rec = _record(repro_project, "m")
    # matbench 0.* takes 0.4.0, below the declared release: the nearest release that fits is pinned
    assert [(s["before"], s["after"]) for s in rec["steps"]] == [("matbench==0.5.0", "matbench==0.4.0")]
    assert "pandas==1.1.5" in rec["requirements"]


def test_reproduce__an_exact_pin_without_a_wheel_for_the_chosen_python__python_moves_to_the_era_one(
        repro_project: Path, write_files: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    idx = FakeIndex().add("tensorflow", "2.3.0", "numpy>=1.16", pythons=("3.6", "3.7", "3.8")).add(
        "tensorflow", "2.5.0", "numpy>=1.19", pythons=("3.7", "3.8", "3.9")).add("numpy", "1.18.5").add("numpy", "1.19.5")
    folder = write_files({"tf/train.py": "import tensorflow\nimport numpy\n",
                          "tf/requirements.txt": "tensorflow==2.3.0\nnumpy\n",
                          "tf/metadata.json": json.dumps({"date_submitted": "06-01-2021"})}) / "tf"
    res = _reproduce(folder, "tf", idx, monkeypatch)
    assert [(s.name, s.status) for s in res.stages][:2] == [("init", "ok"), ("lock", "ok")], res.stages
    doc = _model(repro_project, "tf")
    assert doc["python"] == "3.8", doc["python"]
    assert "rule pin-search-python" in doc["python_reason"] and "before: 3.9" in doc["python_reason"]
    rec = _record(repro_project, "tf")
    assert rec["python"] == "3.8" and rec["steps"] == [] and "tensorflow==2.3.0" in rec["requirements"]
    assert res.python == "3.8" and "pin-search-python" in res.python_reason  # what reproduce reports
    lock_stage = next(s for s in res.stages if s.name == "lock")
    assert "Python moved to 3.8" in lock_stage.detail


def test_reproduce__no_relaxation_resolves__the_stop_is_a_proof_naming_the_requirement(
        repro_project: Path, write_files: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    idx = FakeIndex().add("numpy", "1.19.5").add("oldtorch", "0.4.0", pythons=("2.7",))
    folder = write_files({"p/run.py": "import numpy\nimport oldtorch\n",
                          "p/requirements.txt": "numpy==1.19.5\noldtorch==0.4.0\n"}) / "p"
    res = _reproduce(folder, "p", idx, monkeypatch)
    stage = next(s for s in res.stages if s.name == "lock")
    assert stage.status == "failed" and res.stopped_at is stage
    rec = _record(repro_project, "p")
    (search,) = rec["searches"]
    assert not search["ok"] and search["culprits"] == ["oldtorch"]
    assert "fully relaxed" in search["proof"] and "oldtorch==0.4.0" in search["proof"]
    assert "the pin search" in rec["message"]


def test_reproduce__an_imported_requirement_first_released_after_the_date__a_bound_of_its_own(
        repro_project: Path, write_files: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """naslib (corpus20 held, studied after its measurement): the date estimated for the folder is
    older than a release the code imports (nasbench-pytorch==1.0 came out months later), so even the
    fully relaxed set does not resolve under it. The search's proof names it; it gets a bound of its
    own (uv's --exclude-newer-package), every other requirement keeps the submission's bound, and the
    set is tried again so."""
    idx = FakeIndex().add("nasbench-pytorch", "1.0", "numpy>=1.21", uploaded="2022-06-01")
    idx.add("numpy", "1.21.5", uploaded="2021-12-19").add("numpy", "1.22.0", uploaded="2021-12-31")
    idx.add("numpy", "1.23.0", uploaded="2022-06-22")
    folder = write_files({"n/search.py": "import nasbench_pytorch\nimport numpy\n",
                          "n/requirements.txt": "nasbench-pytorch==1.0\nnumpy\n",
                          "n/metadata.json": json.dumps({"date_submitted": "02-17-2022"})}) / "n"
    monkeypatch.setattr(reproduce, "UV_FIRST", True)
    res = _reproduce(folder, "n", idx, monkeypatch)
    assert next(s for s in res.stages if s.name == "lock").status == "ok", res.stages
    rec = _record(repro_project, "n")
    assert [x["ok"] for x in rec["searches"]] == [False]
    assert rec["searches"][0]["culprits"] == ["nasbench-pytorch"]
    assert any("nasbench-pytorch up to 2022-06-02" in f for f in rec["fidelity"]), rec["fidelity"]
    lock_text = (repro_project / "models" / "n" / "pdm.lock").read_text()
    assert 'version = "1.22.0"' in lock_text  # numpy: the newest before the submission's own bound
