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
    return locate_project_root(start)[0]


def locate_project_root(start: Path | None = None) -> tuple[Path, str]:
    """``find_project_root`` and how the root was found: ``"env"`` ($PYREPRO_ROOT), ``"cwd"``
    (the caller's folder or one above it) or ``"package"`` (the checkout this pyrepro is installed
    from, because the caller's folder is in no project: commands that write say so)."""
    env = os.environ.get("PYREPRO_ROOT")
    if env:
        return Path(env).resolve(), "env"
    candidates = [(start or Path.cwd(), "cwd"), (Path(__file__).resolve().parent, "package")]
    for base, how in candidates:
        for d in [base.resolve(), *base.resolve().parents]:
            if (d / "models").is_dir() and (d / "flake.nix").is_file():
                return d, how
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
    found_by: str = "given"  # see locate_project_root: given, env, cwd or package

    @classmethod
    def discover(cls, root: Path | None = None) -> Paths:
        if root is not None:
            return cls(root=root.resolve(), cache=cache_dir())
        found, how = locate_project_root()
        return cls(root=found.resolve(), cache=cache_dir(), found_by=how)

    def outside_note(self) -> str | None:
        """For commands that write models: a sentence when the root is not where the user ran
        pyrepro (found from the installed package), else None."""
        if self.found_by != "package":
            return None
        return (f"your folder ({Path.cwd()}) is in no pyrepro project; models are written to {self.models} "
                "(the checkout pyrepro is installed from): set PYREPRO_ROOT, or run inside a project, to choose")

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
