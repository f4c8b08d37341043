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


def test_make_venv__the_interpreter_s_shared_libpython__linked_into_the_environment_s_lib(tmp_path: Path) -> None:
    """skip-thoughts (corpus14 held): Theano 0.7 compiles its C modules at import and links them with
    -lpython2.7, looking under sys.prefix, which in an environment is the environment: "cannot
    find -lpython2.7". The environment's lib/ gets links to the installation's shared libpython;
    an installation without one (a static build) gets none."""
    from pyrepro.backends import local
    from pyrepro.paths import Paths

    inst = tmp_path / "versions" / "3.8.18"
    (inst / "bin").mkdir(parents=True)
    (inst / "lib").mkdir()
    (inst / "bin" / "python3.8").write_text("")
    (inst / "lib" / "libpython3.8.so.1.0").write_text("elf")
    (inst / "lib" / "libpython3.8.so").symlink_to("libpython3.8.so.1.0")
    (inst / "lib" / "libpython3.9.so").write_text("another Python's")
    calls: list[list[str]] = []

    def runner(argv, **kw):  # type: ignore[no-untyped-def]
        calls.append(list(argv))
        (Path(argv[-1]) / "lib").mkdir(parents=True)
        return None

    env = tmp_path / "env"
    local.make_venv(inst / "bin" / "python3.8", "3.8", env, Paths(root=tmp_path, cache=tmp_path / "c"), runner=runner)
    assert calls[0][1:3] == ["-m", "venv"]
    assert sorted(p.name for p in (env / "lib").iterdir()) == ["libpython3.8.so", "libpython3.8.so.1.0"]
    assert (env / "lib" / "libpython3.8.so").read_text() == "elf"
    # a second call (a rebuilt environment in place) adds nothing and fails on nothing
    assert local.link_libpython(inst / "bin" / "python3.8", "3.8", env) == []
    static = tmp_path / "static"
    (static / "bin").mkdir(parents=True)
    (static / "bin" / "python3.8").write_text("")
    assert local.link_libpython(static / "bin" / "python3.8", "3.8", tmp_path / "env2") == []
