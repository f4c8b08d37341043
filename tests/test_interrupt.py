"""Honest exits: a command interrupted (Ctrl-C, or SIGTERM from a scheduler, `timeout` or a killed
CI step) exits 130 with ``ok: false`` and leaves no half-built tree. Typer turns the
KeyboardInterrupt into a returned 130, which ``main`` once read as success (exit 0, ``ok: true``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from pyrepro.cli import main
from pyrepro.paths import Paths

SC = Path(__file__).parent / "scenarios" / "backend"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    root = tmp_path / "root"
    shutil.copytree(SC / "models", root / "models")
    shutil.copytree(SC / "patches", root / "patches")
    monkeypatch.setenv("PYREPRO_ROOT", str(root))
    monkeypatch.setenv("PYREPRO_CACHE", str(tmp_path / "cache"))
    return Paths(root=root, cache=tmp_path / "cache")


def _interrupt_during_the_install(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """The environment's install is where the signal lands (its temporary tree exists then)."""
    from pyrepro import proc
    from pyrepro.backends import local

    real = local.make_venv

    def venv_then_signal(*a, **kw):  # type: ignore[no-untyped-def]
        real(*a, **kw)
        if how == "SIGTERM":
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises before this ends
        raise KeyboardInterrupt

    monkeypatch.setattr(local, "make_venv", venv_then_signal)
    assert proc  # the real runner: nothing else is faked


@pytest.mark.parametrize("how", ["SIGTERM", "Ctrl-C"])
def test_build_cli__interrupted__exit_130_ok_false_no_half_built_env(
        world: Paths, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], how: str) -> None:
    _interrupt_during_the_install(monkeypatch, how)
    old = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        code = main(["build", "mini", "--mirror", str(SC / "mirror"), "--json"])
    finally:
        signal.signal(signal.SIGTERM, old[0])
        signal.signal(signal.SIGINT, old[1])
    doc = json.loads(capsys.readouterr().out)
    assert code == 130 and doc["ok"] is False and doc["error"]["code"] == 130
    envs = world.cache / "envs"
    assert not envs.exists() or list(envs.iterdir()) == []  # the temporary tree was removed
