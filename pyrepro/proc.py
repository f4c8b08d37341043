"""The one subprocess chokepoint.

Every external program (pdm, nix, pip, patch, dot, git, a model's entry) is started
through a ``Runner``. Library functions take ``runner: Runner = run`` so tests can pass a
fake that records argv and returns canned output (see ``tests/fakes.py``).

The default runner logs ``$ <cmd>`` at debug level, captures output (or streams it to
files for long runs), and raises ``ExternalToolError`` on a non-zero exit when
``check=True``. A missing program raises ``MissingToolError`` naming it.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from pyrepro.errors import ExternalToolError, MissingToolError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Completed:
    """Result of one external command."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration: float = 0.0


class Runner(Protocol):
    """What every stage calls to run a program."""

    def __call__(
        self,
        cmd: Sequence[str],
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        timeout: float | None = None,
        stdout_file: IO[str] | None = None,
        stderr_file: IO[str] | None = None,
        input: str | None = None,
    ) -> Completed: ...


def run(
    cmd: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    timeout: float | None = None,
    stdout_file: IO[str] | None = None,
    stderr_file: IO[str] | None = None,
    input: str | None = None,
) -> Completed:
    """Run ``cmd``. ``env`` replaces the environment entirely when given.

    When ``stdout_file``/``stderr_file`` are given, output goes there (for long runs with
    logs) and the returned ``stdout``/``stderr`` are empty strings.
    """
    import time

    argv = [str(c) for c in cmd]
    if not argv:
        raise ValueError("empty command")
    exe = argv[0]
    search_path = (env or os.environ).get("PATH", os.defpath)
    if os.sep not in exe and shutil.which(exe, path=search_path) is None:
        raise MissingToolError(f"program '{exe}' is not installed or not on PATH",
                               hint=install_hint(exe))
    log.debug("$ %s", shlex.join(argv))
    start = time.monotonic()
    try:
        proc = subprocess.run(
            argv,
            cwd=str(cwd) if cwd is not None else None,
            env=dict(env) if env is not None else None,
            stdout=stdout_file if stdout_file is not None else subprocess.PIPE,
            stderr=stderr_file if stderr_file is not None else subprocess.PIPE,
            text=True,
            errors="replace",
            timeout=timeout,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError as exc:
        raise MissingToolError(f"program '{exe}' could not be started: {exc}",
                               hint=install_hint(exe)) from exc
    except subprocess.TimeoutExpired as exc:
        raise ExternalToolError(argv, -1, f"timed out after {timeout} s") from exc
    done = Completed(tuple(argv), proc.returncode, proc.stdout or "", proc.stderr or "",
                     time.monotonic() - start)
    if check and proc.returncode != 0:
        raise ExternalToolError(argv, proc.returncode, done.stderr, done.stdout)
    return done


_HINTS = {
    "nix": "install Nix (Debian: 'apt-get install nix-bin'; elsewhere: https://nixos.org/download)",
    "nix-build": "install Nix (Debian: 'apt-get install nix-bin')",
    "nix-instantiate": "install Nix (Debian: 'apt-get install nix-bin')",
    "nix-store": "install Nix (Debian: 'apt-get install nix-bin')",
    "nix-hash": "install Nix (Debian: 'apt-get install nix-bin')",
    "dot": "install graphviz (Debian: 'apt-get install graphviz'; macOS: 'brew install graphviz')",
    "patch": "install GNU patch (Debian: 'apt-get install patch')",
    "git": "install git (Debian: 'apt-get install git')",
    "pdm": "reinstall pyrepro with its dependencies ('pip install -e .'), which pins pdm",
    "zip": "install zip (Debian: 'apt-get install zip')",
}


def install_hint(program: str) -> str:
    """How to install ``program``, for error messages."""
    return _HINTS.get(program, f"install '{program}' and make sure it is on PATH")


def which(program: str, path: str | None = None) -> str | None:
    """``shutil.which`` through the chokepoint module, so tests can monkeypatch one place."""
    return shutil.which(program, path=path)
