"""Module -> distribution resolution: a chain of resolvers, each answer saying how it was made.

1. ``mapping``: the reviewed mapping file shipped in the package (``data/module_map.toml``),
   with dotted-prefix rules (longest prefix wins); it also flags modules nothing installs
   (``google.colab``) and known non-PyPI code (``matformer``) as ``unresolved`` with a hint;
2. ``environment``: ``importlib.metadata`` over explicitly given site-packages folders;
3. ``identity-guess``: the module name itself as a distribution name, logged as a guess.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path

from packaging.utils import canonicalize_name


@dataclass(frozen=True)
class Resolution:
    module: str
    distribution: str | None  # canonical name; None when unresolved
    resolved_with: str  # mapping | environment | identity-guess | unresolved
    note: str = ""


@functools.cache
def _mapping() -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    raw = tomllib.loads(resources.files("pyrepro").joinpath("data", "module_map.toml").read_text(encoding="utf-8"))
    return raw.get("modules", {}), raw.get("not_installable", {}), raw.get("unresolved", {})


def _longest_prefix(module: str, table: dict[str, str]) -> str | None:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        if key in table:
            return key
    return None


def _environment_index(pyenv: Sequence[Path]) -> dict[str, str]:
    index: dict[str, str] = {}
    if not pyenv:
        return index
    for dist in metadata.distributions(path=[str(p) for p in pyenv]):
        name = dist.metadata["Name"]
        if not name:
            continue
        tops = (dist.read_text("top_level.txt") or "").split()
        if not tops:
            for f in dist.files or ():
                first = f.parts[0]
                if not first.endswith((".dist-info", ".data", ".egg-info")) and first != "..":
                    tops.append(first[:-3] if first.endswith(".py") else first)
        for t in tops:
            index.setdefault(t, canonicalize_name(name))
    return index


def module_alias(name: str) -> str | None:
    """The canonical distribution of an exact module name in the reviewed mapping
    (``sklearn`` -> ``scikit-learn``), or None. For declared names that are really imports."""
    modules = _mapping()[0]
    dist = modules.get(name)
    return canonicalize_name(dist) if dist else None


class Resolver:
    """Resolves module names with the chain above (the environment index is built once)."""

    def __init__(self, pyenv: Sequence[Path] = ()) -> None:
        self.env = _environment_index(pyenv)

    def resolve(self, module: str) -> Resolution:
        modules, not_installable, unresolved = _mapping()
        key = _longest_prefix(module, not_installable)
        if key is not None:
            return Resolution(module, None, "unresolved", not_installable[key])
        key = _longest_prefix(module, unresolved)
        if key is not None:
            return Resolution(module, None, "unresolved", unresolved[key])
        key = _longest_prefix(module, modules)
        if key is not None:
            return Resolution(module, canonicalize_name(modules[key]), "mapping")
        top = module.split(".")[0]
        if top in self.env:
            return Resolution(module, self.env[top], "environment")
        if top.startswith("_"):  # a private module ships inside some other distribution: no guess
            return Resolution(module, None, "unresolved",
                              f"{top!r} is a private module of some distribution; find which with --pyenv "
                              "SITE_PACKAGES or add it to pyrepro/data/module_map.toml")
        return Resolution(module, canonicalize_name(top), "identity-guess",
                          f"no mapping for {top!r}; guessed the distribution has the same name")
