"""Build backends: ``local`` (content-addressed venvs from pdm.lock) and ``nix`` (``nix build``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BuiltModel:
    """A built model: its environment, its staged (patched, read-only) source and a launcher."""

    name: str
    backend: str
    env_dir: Path
    env_key: str
    src_dir: Path  # the staged contribution folder (read-only)
    runtime_dir: Path  # pyrepro's runtime helpers (PYTHONPATH)
    src_key: str
    launcher: Path
    python: str  # full interpreter version, e.g. 3.10.13
    env_cached: bool
    src_cached: bool
    seconds: float

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "backend": self.backend, "env_key": self.env_key, "env_dir": str(self.env_dir),
                "src_key": self.src_key, "src_dir": str(self.src_dir), "launcher": str(self.launcher),
                "python": self.python, "env_cached": self.env_cached, "src_cached": self.src_cached,
                "seconds": round(self.seconds, 3)}
