"""Interpreter discovery by major.minor."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pyrepro import interpreters, proc
from pyrepro.errors import MissingToolError, UsageError
from tests.fakes import FakeRunner


def _fake_pyenv(root: Path, *versions: str) -> None:
    for v in versions:
        exe = root / "versions" / v / "bin" / "python"
        exe.parent.mkdir(parents=True)
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)


def test_find_interpreter__pyenv_versions__newest_patch_that_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_pyenv(tmp_path, "3.10.9", "3.10.13", "3.10.2", "3.11.4", "3.10-dev")
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    monkeypatch.setattr(proc, "which", lambda name, path=None: None)
    r = FakeRunner()
    r.on([str(tmp_path / "versions/3.10.13/bin/python")], "", returncode=1)  # broken: skipped
    r.on([str(tmp_path / "versions/3.10.9/bin/python")], "3.10.9\n")
    found = interpreters.find_interpreter("3.10", runner=r)
    assert found == interpreters.Interpreter(tmp_path / "versions/3.10.9/bin/python", "3.10.9", "pyenv")
    assert [c[0][0] for c in r.calls] == [str(tmp_path / "versions/3.10.13/bin/python"),
                                          str(tmp_path / "versions/3.10.9/bin/python")]


def test_find_interpreter__none_matches__missing_tool_names_version_and_fix(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    monkeypatch.setattr(proc, "which", lambda name, path=None: "/usr/bin/python3" if name == "python3" else None)
    r = FakeRunner().on(["/usr/bin/python3"], "3.12.1\n")
    with pytest.raises(MissingToolError) as exc:
        interpreters.find_interpreter("3.9", runner=r)
    msg = f"{exc.value} {exc.value.hint}"
    assert "Python 3.9" in msg and "pyenv install 3.9" in msg and "/usr/bin/python3 (3.12.1)" in msg


def test_find_interpreter__bad_version__usage_error() -> None:
    with pytest.raises(UsageError):
        interpreters.find_interpreter("3")


def test_find_interpreter__this_python__real_probe(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    want = f"{sys.version_info[0]}.{sys.version_info[1]}"
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    monkeypatch.setattr(proc, "which", lambda name, path=None: sys.executable if name == f"python{want}" else None)
    found = interpreters.find_interpreter(want)
    assert found.path == Path(sys.executable) and found.version.startswith(want + ".") and os.access(found.path, os.X_OK)
