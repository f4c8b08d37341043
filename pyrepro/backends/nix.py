"""The Nix backend: ``nix build .#models.<name>`` through the subprocess chokepoint.

It cannot succeed on machines without nixpkgs/dream2nix access (see docs/nix.md); it says
plainly when Nix is absent, and reports the output path when the build succeeds.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from pyrepro import proc
from pyrepro.errors import BuildError, ExternalToolError, MissingToolError
from pyrepro.proc import Runner
from pyrepro.registry import ModelSpec


@dataclass(frozen=True)
class NixBuilt:
    name: str
    out_path: str

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "backend": "nix", "out_path": self.out_path}


def build(spec: ModelSpec, root: Path, *, runner: Runner = proc.run) -> NixBuilt:
    if proc.which("nix") is None:
        raise MissingToolError("the nix backend needs Nix, which is not installed",
                               hint="install Nix (https://nixos.org/download), or use '--backend local'")
    env = dict(os.environ)
    env.setdefault("NIX_CONFIG", "experimental-features = nix-command flakes")
    try:
        done = runner(["nix", "build", "--json", "--no-link", f"{root}#models.{spec.name}"], cwd=root, env=env,
                      check=True, timeout=None)
    except ExternalToolError as exc:
        raise BuildError(f"nix build of {spec.name} failed:\n{exc.stderr.strip()[-2000:]}",
                         hint="'nix build' needs nixpkgs and dream2nix from the network (github, cache.nixos.org)") from exc
    try:
        out = json.loads(done.stdout)[0]["outputs"]["out"]
    except (ValueError, LookupError, TypeError) as exc:
        raise BuildError(f"unexpected 'nix build --json' output: {done.stdout[:300]!r}") from exc
    return NixBuilt(spec.name, out)
