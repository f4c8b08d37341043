"""Verification of a tree (environment or staged source) against the manifest written when it was
made and kept outside it: every file counts (compiled libraries, .pth, .pyc, RECORD), unchanged
files are not hashed again (stat index), and a content change is caught even with its mtime set
back (it changes the file's ctime, which utime cannot set back)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pyrepro import verify
from pyrepro.errors import IntegrityError


def _env(tmp_path: Path, n: int = 5) -> tuple[Path, Path]:
    env = tmp_path / "cache" / "envs" / "m-0123"
    sp = env / "lib" / "python3.11" / "site-packages"
    (sp / "pkg" / "__pycache__").mkdir(parents=True)
    (sp / "pkg-1.0.dist-info").mkdir()
    for i in range(n):
        (sp / "pkg" / f"m{i}.py").write_bytes(f"x = {i}\n".encode())
    (sp / "pkg" / "_ext.so").write_bytes(b"\x7fELF" + bytes(64))
    (sp / "pkg-1.0.dist-info" / "RECORD").write_text("pkg/m0.py,sha256=abc,6\n")
    (env / "bin").mkdir()
    (env / "bin" / "python").symlink_to("/usr/bin/python3")
    verify.write_manifest(env)
    return env, sp


@pytest.fixture
def aged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend the files were written long before the index (outside the racy window)."""
    monkeypatch.setattr(verify, "RACY", -1e9)


def test_manifest__kept_outside_the_tree(tmp_path: Path) -> None:
    env, _ = _env(tmp_path)
    where = verify.manifest_path(env)
    assert where.is_file() and env not in where.parents
    assert where == tmp_path / "cache" / "manifests" / "envs-m-0123.json"


def test_verify_env__second_time__nothing_hashed_again(tmp_path: Path, aged: None) -> None:
    env, _ = _env(tmp_path)
    first = verify.verify_env(env, rebuild_hint="rebuild")
    assert first.files == 8  # 5 modules, the .so, RECORD and the link
    second = verify.verify_env(env, rebuild_hint="rebuild")
    assert "0 hashed now, 7 unchanged" in second.scope


def test_verify_env__changed_with_mtime_set_back__still_caught(tmp_path: Path, aged: None) -> None:
    env, sp = _env(tmp_path)
    verify.verify_env(env, rebuild_hint="rebuild")
    f = sp / "pkg" / "m3.py"
    st = f.stat()
    time.sleep(0.01)
    f.write_bytes(b"x = 9\n")  # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime set back; ctime moves on
    with pytest.raises(IntegrityError, match="m3.py: changed since the environment was made"):
        verify.verify_env(env, rebuild_hint="rebuild")


def test_verify_env__recent_files__hashed_every_time(tmp_path: Path) -> None:
    env, _ = _env(tmp_path)
    assert "7 hashed now" in verify.verify_env(env, rebuild_hint="rebuild").scope
    assert "7 hashed now" in verify.verify_env(env, rebuild_hint="rebuild").scope


def test_verify_env__tampered_stat_index__files_hashed_again(tmp_path: Path, aged: None) -> None:
    env, _ = _env(tmp_path)
    verify.verify_env(env, rebuild_hint="rebuild")
    verify.manifest_path(env).with_name("envs-m-0123.stat.json").write_text("{not json")
    assert "7 hashed now" in verify.verify_env(env, rebuild_hint="rebuild").scope


@pytest.mark.parametrize("plant", ["lib/python3.11/site-packages/evil.pth",
                                   "lib/python3.11/site-packages/sitecustomize.py",
                                   "lib/python3.11/site-packages/pkg/__pycache__/m1.cpython-311.pyc"])
def test_verify_env__planted_file__refused(tmp_path: Path, aged: None, plant: str) -> None:
    env, _ = _env(tmp_path)
    (env / plant).write_bytes(b"import os\n")
    with pytest.raises(IntegrityError, match="a file that was not in the environment when it was made"):
        verify.verify_env(env, rebuild_hint="rebuild")


def test_verify_env__compiled_library_appended__refused(tmp_path: Path, aged: None) -> None:
    env, sp = _env(tmp_path)
    verify.verify_env(env, rebuild_hint="rebuild")
    with open(sp / "pkg" / "_ext.so", "ab") as f:
        f.write(b"\x90")
    with pytest.raises(IntegrityError, match="_ext.so: changed"):
        verify.verify_env(env, rebuild_hint="rebuild")


def test_verify_env__module_and_its_record_row_edited__refused(tmp_path: Path, aged: None) -> None:
    env, sp = _env(tmp_path)
    (sp / "pkg" / "m0.py").write_bytes(b"y = 0\n")
    (sp / "pkg-1.0.dist-info" / "RECORD").write_text("pkg/m0.py,sha256=new,6\n")
    with pytest.raises(IntegrityError, match="changed since the environment was made"):
        verify.verify_env(env, rebuild_hint="rebuild")


def test_verify_env__link_retargeted__refused(tmp_path: Path) -> None:
    env, _ = _env(tmp_path)
    (env / "bin" / "python").unlink()
    (env / "bin" / "python").symlink_to("/tmp/evil-python")
    with pytest.raises(IntegrityError, match="a link changed"):
        verify.verify_env(env, rebuild_hint="rebuild")


def test_verify_tree__no_manifest__refused_with_the_rebuild_hint(tmp_path: Path) -> None:
    tree = tmp_path / "cache" / "staged" / "m-1"
    tree.mkdir(parents=True)
    (tree / "a.py").write_text("x = 1\n")
    with pytest.raises(IntegrityError, match="no manifest") as err:
        verify.verify_tree(tree, rebuild_hint="pyrepro build m")
    assert err.value.hint == "pyrepro build m"


def test_verify_tree__file_removed__refused(tmp_path: Path) -> None:
    tree = tmp_path / "cache" / "staged" / "m-1"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "a.py").write_text("x = 1\n")
    verify.write_manifest(tree)
    assert verify.verify_tree(tree, rebuild_hint="").files == 1
    (tree / "src" / "a.py").unlink()
    with pytest.raises(IntegrityError, match="a.py: missing from the source"):
        verify.verify_tree(tree, rebuild_hint="")
