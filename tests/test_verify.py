"""Environment verification with its stat index: unchanged files are not hashed again, any
content change is still caught (it changes the file's ctime, which utime cannot set back)."""

from __future__ import annotations

import base64
import hashlib
import os
import time
from pathlib import Path

import pytest

from pyrepro import verify
from pyrepro.errors import IntegrityError


def _env(tmp_path: Path, n: int = 5) -> tuple[Path, Path]:
    env = tmp_path / "env"
    sp = env / "lib" / "python3.11" / "site-packages"
    (sp / "pkg").mkdir(parents=True)
    (sp / "pkg-1.0.dist-info").mkdir()
    rows = []
    for i in range(n):
        body = f"x = {i}\n".encode()
        (sp / "pkg" / f"m{i}.py").write_bytes(body)
        h = base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()
        rows.append(f"pkg/m{i}.py,sha256={h},{len(body)}")
    rows.append("pkg-1.0.dist-info/RECORD,,")
    (sp / "pkg-1.0.dist-info" / "RECORD").write_text("\n".join(rows) + "\n")
    return env, sp


def _age(sp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend the files were written long ago (outside the racy window)."""
    monkeypatch.setattr(verify, "RACY", -1e9)


def test_verify_env__second_time__nothing_hashed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env, sp = _env(tmp_path)
    _age(sp, monkeypatch)
    first = verify.verify_env(env, rebuild_hint="rebuild")
    assert first.files == 5 and "5 hashed now" in first.scope
    second = verify.verify_env(env, rebuild_hint="rebuild")
    assert second.files == 5 and "0 hashed now, 5 unchanged" in second.scope


def test_verify_env__changed_with_mtime_set_back__still_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env, sp = _env(tmp_path)
    _age(sp, monkeypatch)
    verify.verify_env(env, rebuild_hint="rebuild")
    f = sp / "pkg" / "m3.py"
    st = f.stat()
    time.sleep(0.01)
    f.write_bytes(b"x = 9\n")  # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime set back; ctime moves on
    with pytest.raises(IntegrityError, match="m3.py: changed since it was installed"):
        verify.verify_env(env, rebuild_hint="rebuild")


def test_verify_env__recent_change__always_hashed(tmp_path: Path) -> None:
    env, sp = _env(tmp_path)
    verify.verify_env(env, rebuild_hint="rebuild")  # files just written: inside the racy window
    again = verify.verify_env(env, rebuild_hint="rebuild")
    assert "5 hashed now" in again.scope


def test_verify_env__tampered_index__files_hashed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env, sp = _env(tmp_path)
    _age(sp, monkeypatch)
    verify.verify_env(env, rebuild_hint="rebuild")
    (env / verify.STAT_INDEX).write_text("{not json")
    assert "5 hashed now" in verify.verify_env(env, rebuild_hint="rebuild").scope


def _rec(body: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()


def test_verify_env__file_two_distributions_ship__matches_the_last_installed(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen on kgcnn's environment: two wheels both ship a top-level tests/__init__.py; the second
    install overwrote the first, so one RECORD's hash no longer matches. That is how pip installs,
    not tampering: the file must match one of the RECORDs that list it, and nothing else."""
    env, sp = _env(tmp_path, 1)
    (sp / "tests").mkdir()
    first, second = b"# from a\n", b"# from b, installed later\n"
    (sp / "tests" / "__init__.py").write_bytes(second)
    for dist, body in (("a-1.0", first), ("b-2.0", second)):
        (sp / f"{dist}.dist-info").mkdir()
        (sp / f"{dist}.dist-info" / "RECORD").write_text(f"tests/__init__.py,{_rec(body)},{len(body)}\n")
    _age(sp, monkeypatch)
    ok = verify.verify_env(env, rebuild_hint="rebuild")
    assert ok.files == 2
    assert "0 hashed now" in verify.verify_env(env, rebuild_hint="rebuild").scope  # the index keeps the match
    time.sleep(0.01)
    (sp / "tests" / "__init__.py").write_bytes(b"import os  # injected\n")
    with pytest.raises(IntegrityError, match="tests/__init__.py: changed since it was installed"):
        verify.verify_env(env, rebuild_hint="rebuild")
