"""The Nix backend, with a fake runner (nix builds cannot succeed without nixpkgs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyrepro import proc
from pyrepro.backends import nix
from pyrepro.errors import BuildError, MissingToolError
from pyrepro.registry import load_registry
from tests.fakes import FakeRunner

SC = Path(__file__).parent / "scenarios" / "backend"


@pytest.fixture
def spec():  # type: ignore[no-untyped-def]
    return load_registry(SC / "models").get("mini")


def test_build__nix_absent__missing_tool_says_so(spec, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(proc, "which", lambda name, path=None: None)
    with pytest.raises(MissingToolError) as exc:
        nix.build(spec, tmp_path, runner=FakeRunner())
    assert "needs Nix, which is not installed" in str(exc.value) and "--backend local" in (exc.value.hint or "")


def test_build__nix_succeeds__out_path_from_json(spec, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(proc, "which", lambda name, path=None: "/usr/bin/nix")
    out = "/nix/store/abc-mini-0"
    r = FakeRunner().on(["nix", "build"], json.dumps([{"drvPath": "/nix/store/x.drv", "outputs": {"out": out}}]))
    built = nix.build(spec, tmp_path, runner=r)
    assert built.out_path == out and built.to_json()["backend"] == "nix"
    ((argv, cwd, env),) = r.calls
    assert argv == ("nix", "build", "--json", "--no-link", f"{tmp_path}#models.mini") and cwd == tmp_path
    assert env is not None and "nix-command flakes" in env["NIX_CONFIG"]


def test_build__nix_fails__build_error_with_stderr(spec, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(proc, "which", lambda name, path=None: "/usr/bin/nix")
    r = FakeRunner().on(["nix", "build"], "", returncode=1, stderr="error: unable to download 'https://github.com/...'")
    with pytest.raises(BuildError) as exc:
        nix.build(spec, tmp_path, runner=r)
    assert "nix build of mini failed" in str(exc.value) and "unable to download" in str(exc.value)


def test_build__garbage_json__build_error(spec, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(proc, "which", lambda name, path=None: "/usr/bin/nix")
    with pytest.raises(BuildError, match="unexpected 'nix build --json' output"):
        nix.build(spec, tmp_path, runner=FakeRunner().on(["nix", "build"], "[]"))
