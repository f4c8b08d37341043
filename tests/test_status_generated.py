"""docs/STATUS.md and docs/status.json are only ever generated: the committed files are what
`pyrepro report` writes from the committed registry, locks, patches and run summaries."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyrepro.cli import main

REPO = Path(__file__).resolve().parent.parent


def test_committed_status__is_what_the_generator_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYREPRO_ROOT", str(REPO))
    monkeypatch.setenv("PYREPRO_CACHE", str(tmp_path / "cache"))  # nothing of this machine's runs
    before = (REPO / "docs" / "STATUS.md").read_bytes()
    assert main(["report", "--check"]) == 0, "regenerate: pyrepro report --no-refresh (never edit STATUS.md)"
    assert (REPO / "docs" / "STATUS.md").read_bytes() == before  # --check writes nothing
