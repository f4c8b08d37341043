"""Where things are: the project root, the user cache, the upstream mirror.

Nothing here is global state; callers pass a ``Paths`` around (tests build their own).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pyrepro.errors import NotFoundError


def find_project_root(start: Path | None = None) -> Path:
    """The nearest ancestor of ``start`` (default: cwd, then this package) holding
    ``models/`` and ``flake.nix``. ``$PYREPRO_ROOT`` wins when set."""
    env = os.environ.get("PYREPRO_ROOT")
    if env:
        return Path(env).resolve()
    candidates = [start or Path.cwd(), Path(__file__).resolve().parent]
    for base in candidates:
        for d in [base.resolve(), *base.resolve().parents]:
            if (d / "models").is_dir() and (d / "flake.nix").is_file():
                return d
    raise NotFoundError(
        "cannot find the pyrepro project root (a folder with models/ and flake.nix)",
        hint="run pyrepro inside a pyrepro checkout, or set PYREPRO_ROOT",
    )


def cache_dir() -> Path:
    """``$PYREPRO_CACHE``, else ``$XDG_CACHE_HOME/pyrepro``, else ``~/.cache/pyrepro``."""
    env = os.environ.get("PYREPRO_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "pyrepro"


@dataclass(frozen=True)
class Paths:
    root: Path
    cache: Path

    @classmethod
    def discover(cls, root: Path | None = None) -> Paths:
        return cls(root=(root or find_project_root()).resolve(), cache=cache_dir())

    @property
    def models(self) -> Path:
        return self.root / "models"

    @property
    def patches(self) -> Path:
        return self.root / "patches"

    def model_dir(self, name: str) -> Path:
        return self.models / name

    def patch_dir(self, name: str) -> Path:
        return self.patches / name

    def default_mirror(self) -> Path:
        """``../shared/upstream`` next to the checkout, used when present (tests skip
        when it is absent)."""
        return (self.root / ".." / "shared" / "upstream").resolve()

    def mirror(self, given: Path | None = None) -> Path | None:
        """The mirror to use: ``given`` when the user named one, else the default mirror when it
        exists, else None (sources then come from the cache or a download)."""
        if given is not None:
            return given
        default = self.default_mirror()
        return default if default.is_dir() else None
