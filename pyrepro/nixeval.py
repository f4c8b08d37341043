"""Python <-> Nix boundary for evaluation (no builds; see pyrepro/backends/nix.py).

Data crosses as JSON only: the registry is evaluated with
``nix-instantiate --eval --strict --json nix/registry.nix`` and the models folder is
passed through the ``PYREPRO_MODELS_DIR`` environment variable, never spliced into code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyrepro import proc
from pyrepro.errors import ExternalToolError, InputError
from pyrepro.proc import Runner


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("NIX_CONFIG", "experimental-features = nix-command flakes")
    env.update(extra)
    return env


def eval_registry(root: Path, runner: Runner = proc.run, *,
                  models_dir: Path | None = None) -> dict[str, Any]:
    """Evaluate ``<root>/nix/registry.nix`` on ``models_dir`` (default ``<root>/models``)
    and return ``{name: model.toml data}``."""
    registry = root / "nix" / "registry.nix"
    if not registry.is_file():
        raise InputError(f"{registry} not found", hint="run from a pyrepro checkout (the Nix files live in its nix/)")
    models = (models_dir if models_dir is not None else root / "models").resolve()
    done = runner(["nix-instantiate", "--eval", "--strict", "--json", str(registry)],
                  env=_env({"PYREPRO_MODELS_DIR": str(models)}))
    try:
        data = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise ExternalToolError(list(done.args), 0,
                                f"registry.nix did not print JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ExternalToolError(["nix-instantiate"], 0, "registry.nix did not evaluate to a set")
    return data


def parse_check(paths: Sequence[Path], runner: Runner = proc.run) -> dict[Path, str]:
    """Parse every file with ``nix-instantiate --parse``; return {path: error} for failures."""
    bad: dict[Path, str] = {}
    for p in paths:
        done = runner(["nix-instantiate", "--parse", str(p)], check=False, env=_env({}))
        if done.returncode != 0:
            bad[p] = done.stderr.strip()
    return bad
