"""atomic_write_text: all or nothing, and the mode an ordinary write would give."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pyrepro.fsutil import atomic_write_text


def test_atomic_write_text__new_file__umask_mode_not_0600(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "page.html", "<p>x</p>")
    finally:
        os.umask(old)
    assert (tmp_path / "page.html").stat().st_mode & 0o777 == 0o644


def test_atomic_write_text__existing_file__keeps_mode_and_replaces_content(tmp_path: Path) -> None:
    p = tmp_path / "run.sh"
    p.write_text("old")
    p.chmod(0o750)
    atomic_write_text(p, "new")
    assert p.read_text() == "new" and p.stat().st_mode & 0o777 == 0o750


def test_atomic_write_text__write_fails__old_content_and_no_temporary_left(tmp_path: Path) -> None:
    p = tmp_path / "f.txt"
    p.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        atomic_write_text(p, "\udcff")
    assert p.read_text() == "old" and [x.name for x in tmp_path.iterdir()] == ["f.txt"]
