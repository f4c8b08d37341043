"""pyrepro doctor: checks built from faked tool output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyrepro import doctor, proc
from pyrepro.proc import Completed
from tests.fakes import FakeRunner

SHOW_CONFIG = "experimental-features = nix-command flakes\nsandbox = true\nsubstituters = \n"


def test_check_nix__absent__missing_with_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proc, "which", lambda p, path=None: None)
    (c,) = doctor.check_nix(FakeRunner())
    assert c.status == "missing" and "apt-get install nix-bin" in c.fix


def test_check_nix__flakes_and_sandbox__ok(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proc, "which", lambda p, path=None: f"/usr/bin/{p}")
    r = FakeRunner().on(["nix", "--version"], "nix (Nix) 2.8.0\n").on(["nix", "--extra-experimental-features"],
                                                                     SHOW_CONFIG)
    checks = {c.name: c for c in doctor.check_nix(r)}
    assert checks["nix"].detail == "Nix 2.8.0"
    assert checks["nix flakes"].status == "ok" and checks["nix sandbox"].status == "ok"


def test_check_nix__flakes_off__warn_with_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proc, "which", lambda p, path=None: f"/usr/bin/{p}")
    r = FakeRunner().on(["nix", "--version"], "nix (Nix) 2.18.1\n").on(
        ["nix", "--extra-experimental-features"], "experimental-features = nix-command\nsandbox = false\n")
    checks = {c.name: c for c in doctor.check_nix(r)}
    assert checks["nix flakes"].status == "warn" and "flakes" in checks["nix flakes"].fix
    assert checks["nix sandbox"].status == "warn"


def test_check_tools__dot_missing__says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proc, "which", lambda p, path=None: None if p == "dot" else f"/usr/bin/{p}")
    r = (FakeRunner().on(["patch"], "GNU patch 2.7.6\n").on(["git"], "git version 2.39.5\n")
         .on(["zip"], "This is Zip 3.0 (July 5th 2008)\n"))
    checks = {c.name: c for c in doctor.check_tools(r)}
    assert checks["graphviz dot"].status == "missing" and "graphviz" in checks["graphviz dot"].fix
    assert checks["git"].detail == "2.39.5"


def test_check_pythons__some_missing__fix_names_versions() -> None:
    (c,) = doctor.check_pythons(lambda v: Path(f"/py/{v}") if v in ("3.10", "3.11") else None)
    assert c.detail == "found: 3.10, 3.11"
    assert "missing 3.6, 3.7" in c.fix and "pyenv install" in c.fix
    assert "2.7" not in c.fix  # pyrepro locks for Python 3 only: 2.7 is no target


def test_check_pythons__default_search__the_one_interpreter_search(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # doctor asks pyrepro.interpreters (the search every stage uses); before, it called a function
    # that did not exist and fell back to a search of its own
    from pyrepro import interpreters
    from pyrepro.errors import MissingToolError

    asked = []

    def fake(version: str, **_kw: object) -> Path:
        asked.append(version)
        if version == "3.9":
            return Path("/pyenv/3.9.18/bin/python")
        raise MissingToolError(f"no Python {version}")

    monkeypatch.setattr(interpreters, "find_python", fake)
    (c,) = doctor.check_pythons()
    assert asked == [v for v, _d in interpreters.RELEASES]
    assert c.status == "ok" and c.detail == "found: 3.9"
    assert "missing 3.6, 3.7, 3.8, 3.10" in c.fix


def test_check_cuda_in_env__probe_output__per_framework() -> None:
    out = json.dumps({"torch": ["2.0.0", False], "tensorflow": "No module named 'tensorflow'"})
    r = FakeRunner().on(["/env/bin/python"], Completed(("x",), 0, out + "\n", ""))
    checks = {c.name: c for c in doctor.check_cuda_in_env(Path("/env/bin/python"), {}, r)}
    assert checks["torch cuda"].detail == "torch 2.0.0: GPU not visible"
    assert "not importable" in checks["tensorflow cuda"].detail


def test_check_disk_and_caches__missing_cache__reports_absent(tmp_path: Path) -> None:
    checks = doctor.check_disk_and_caches(tmp_path / "nope" / "pyrepro")
    assert checks[0].name == "free disk" and "GiB free" in checks[0].detail
    assert checks[1].detail.endswith("absent")


def test_cli_doctor__json__lists_checks() -> None:
    from typer.testing import CliRunner

    from pyrepro.cli import app

    res = CliRunner().invoke(app, ["doctor", "--json"])
    assert res.exit_code == 0, res.output
    names = [c["name"] for c in json.loads(res.stdout)["checks"]]
    assert {"nix", "graphviz dot", "gpu driver", "free disk", "python interpreters"} <= set(names)
