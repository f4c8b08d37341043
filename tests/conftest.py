"""Shared fixtures: the miniature world."""

from __future__ import annotations

import os
import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
UPSTREAM = (REPO / ".." / "shared" / "upstream").resolve()
UPSTREAM_LB = UPSTREAM / "jarvis_leaderboard"


@pytest.fixture(autouse=True)
def _pip_installer_unless_real(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests with a fake runner expect pip's install commands (one for all sdists); tests that build
    for real (integration, network) keep the default installer (uv where it applies) and build jobs."""
    if not (request.node.get_closest_marker("network") or request.node.get_closest_marker("integration")):
        monkeypatch.setenv("PYREPRO_INSTALLER", "pip")
        monkeypatch.setenv("PYREPRO_BUILD_JOBS", "1")  # one pip install of the sdists (a test sets more)
        # fake runners read the commands as pyrepro writes them: without the sandbox's prefix (the
        # sandbox's own tests, and every integration test, run with it)
        monkeypatch.setenv("PYREPRO_SANDBOX", "off")


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def upstream() -> Path:
    """The ../shared/upstream mirror; skips cleanly when absent."""
    if not UPSTREAM_LB.is_dir():
        pytest.skip("../shared/upstream is not present on this machine")
    return UPSTREAM


@pytest.fixture
def write_files(tmp_path: Path) -> Callable[[dict[str, str | bytes]], Path]:
    """``write_files({"a/b.py": "import x"})`` writes dedented files under tmp_path."""

    def _write(files: dict[str, str | bytes], base: Path | None = None) -> Path:
        root = base or tmp_path
        for rel, content in files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")
        return root

    return _write


@pytest.fixture
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("PYREPRO_CACHE", str(cache))
    return cache


def have(program: str) -> bool:
    return shutil.which(program) is not None


def nix_env() -> dict[str, str]:
    """Environment for offline nix commands (flakes on, no substituters)."""
    env = dict(os.environ)
    env["NIX_CONFIG"] = "experimental-features = nix-command flakes\nsubstituters =\nsandbox = false\nbuild-users-group ="
    return env


@pytest.fixture
def repro_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path) -> Path:
    """A pyrepro project root of the test's own (``PYREPRO_ROOT``): models/, patches/, flake.nix."""
    root = tmp_path / "proj"
    (root / "models").mkdir(parents=True)
    (root / "patches").mkdir()
    (root / "flake.nix").write_text("{}\n")
    monkeypatch.setenv("PYREPRO_ROOT", str(root))
    return root
