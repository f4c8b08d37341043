"""Issue 12: ``pyrepro reproduce DIR``: every stage recorded, the first failure stops the rest
with its stage, category and next step. Through the CLI and the orchestrator, in a scratch
project (PYREPRO_ROOT) with an isolated cache."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyrepro import lock, reproduce
from pyrepro.cli import main
from pyrepro.paths import Paths
from pyrepro.proc import Completed
from tests.fakes import FakeRunner, json_result

Write = Callable[..., Path]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path) -> Path:
    root = tmp_path / "proj"
    (root / "models").mkdir(parents=True)
    (root / "patches").mkdir()
    (root / "flake.nix").write_text("{}\n")
    monkeypatch.setenv("PYREPRO_ROOT", str(root))
    return root


def _json(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    out: dict[str, Any] = json_result(capsys.readouterr().out)
    return out


def test_reproduce_cli__python2_submission__stops_at_lock_with_next_step(
        project: Path, write_files: Write, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({"old_model/run.py": "import urllib2\nimport numpy\nprint 'done'\n"})
    code = main(["reproduce", str(root / "old_model"), "--json", "--offline"])
    rec = _json(capsys)
    assert code == rec["exit_code"] == 9
    assert rec["python"]["version"] == "2.7" and "run.py" in rec["python"]["reason"]
    assert [(s["stage"], s["status"]) for s in rec["stages"]] == [
        ("init", "ok"), ("lock", "failed"), ("build", "skipped"), ("imports", "skipped"), ("run", "skipped")]
    assert rec["stopped_at"] == "lock" and "port the code to Python 3" in rec["next_step"]
    assert not (project / "models" / "old_model" / "pdm.lock").exists()
    saved = json.loads((Path(str(project)).parent / "cache" / "reproduce" / "old_model.json").read_text())
    assert saved["stopped_at"] == "lock"


def test_reproduce__unresolvable__category_4_with_resolver_message(project: Path, write_files: Write,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_files({"sub/run.py": "import numpy\n", "sub/requirements.txt": "numpy==0.0.1\n"})
    monkeypatch.setattr(lock, "find_python", lambda v: Path("/usr/bin/python3"))

    def pdm(argv: tuple[str, ...], cwd: Path | None, env: Any) -> Completed:
        return Completed(argv, 1, "", "[ResolutionImpossible]: Unable to find a resolution for numpy\n"
                                      "  numpy==0.0.1 (from project)\n")

    runner = FakeRunner()
    runner.on(lock.pdm_command(), pdm)
    runner.on([lock.sys.executable, "-c"], "")
    res = reproduce.reproduce(root / "sub", paths=Paths.discover(), name="sub", python="3.11", online=False,
                              runner=runner)
    lock_stage = next(s for s in res.stages if s.name == "lock")
    assert lock_stage.status == "failed" and lock_stage.category == 4
    assert res.stopped_at is lock_stage and "numpy" in lock_stage.detail
    assert lock_stage.next_step and "model.toml" in lock_stage.next_step
    assert [s.status for s in res.stages[2:]] == ["skipped", "skipped", "skipped"]


def test_reproduce__rerun_same_folder__keeps_model_other_folder_same_name_refused(
        project: Path, write_files: Write, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({"a/m/run.py": "import urllib2\n", "b/m/run.py": "import urllib2\nimport os\n"})
    main(["reproduce", str(root / "a" / "m"), "--json", "--offline"])
    first = _json(capsys)
    main(["reproduce", str(root / "a" / "m"), "--json", "--offline"])
    again = _json(capsys)
    assert "kept" in again["stages"][0]["detail"] and first["stages"][0]["status"] == "ok"
    code = main(["reproduce", str(root / "b" / "m"), "--json", "--offline"])
    other = _json(capsys)
    assert code == 2 and other["stopped_at"] == "init" and "--force" in other["next_step"]


def test_default_name__any_folder__valid_model_name() -> None:
    from pyrepro.registry import NAME_RE

    for folder in ("10.1007s10450-018-9958-x.Lab02", "Si.tersoff", "ElemNet2_SC", "-x-"):
        assert NAME_RE.match(reproduce.default_name(Path(folder))), folder


@pytest.mark.integration
def test_reproduce_cli__light_real_submission__imports_verified(project: Path, write_files: Write,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Real pdm lock and pip install from PyPI (network)."""
    root = write_files({"light/run.py": "import six\nprint(six.PY3)\n", "light/requirements.txt": "six==1.16.0\n"})
    assert main(["reproduce", str(root / "light"), "--json"]) == 0
    rec = _json(capsys)
    assert rec["ok"] and rec["stopped_at"] is None
    assert [i["module"] for i in rec["imports"]] == ["six"] and rec["imports"][0]["status"] == "ok"
    assert main(["reproduce", str(root / "light"), "--json"]) == 0  # again: model, lock and environment reused
    again = _json(capsys)
    lock_stage = next(s for s in again["stages"] if s["stage"] == "lock")
    assert "reused" in lock_stage["detail"] and "kept" in again["stages"][0]["detail"]


def test_reproduce_cli__folder_without_code__stops_at_init_exit_3(project: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "émpty dir"
    empty.mkdir()
    (empty / "README.md").write_text("results only\n")
    code = main(["reproduce", str(empty), "--json", "--offline"])
    rec = _json(capsys)
    assert code == 3 and rec["name"] == "empty_dir" and rec["stopped_at"] == "init"
    assert "no Python code" in rec["stages"][0]["detail"]
    assert not (project / "models" / "empty_dir").exists()


def test_reproduce__interrupted_during_lock__record_saved_then_reraised(project: Path, write_files: Write,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_files({"sub/run.py": "import numpy\n"})
    monkeypatch.setattr(lock, "find_python", lambda v: Path("/usr/bin/python3"))

    def pdm(argv: tuple[str, ...], cwd: Path | None, env: Any) -> Completed:
        raise KeyboardInterrupt  # a scheduler's SIGTERM, as the CLI turns it into

    runner = FakeRunner()
    runner.on(lock.pdm_command(), pdm)
    paths = Paths.discover()
    with pytest.raises(KeyboardInterrupt):
        reproduce.reproduce(root / "sub", paths=paths, name="sub", python="3.11", online=False, runner=runner)
    saved = json.loads((paths.cache / "reproduce" / "sub.json").read_text())
    assert [(s["stage"], s["status"]) for s in saved["stages"]][:2] == [("init", "ok"), ("lock", "failed")]
    assert "interrupted" in saved["stages"][1]["detail"]
