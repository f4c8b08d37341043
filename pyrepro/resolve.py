"""Module -> distribution resolution: a chain of resolvers, each answer saying how it was made.

0. ``model-mapping``: the ``[mapping]`` table of the model's ``model.toml`` (module -> distribution
   with a reason), when a model is known;
1. ``mapping``: the reviewed name table shipped in the package (``data/module_map.toml``),
   with dotted-prefix rules (longest prefix wins); it also flags modules nothing installs
   (``google.colab``) and known non-PyPI code (``matformer``) as ``unresolved`` with a hint;
2. ``environment``: ``importlib.metadata`` over explicitly given site-packages folders;
3. ``declared`` (by the scanner, which knows the submission): a guess whose name the submission
   itself declares (requirements, metadata, ``pip install`` lines) is the declared distribution;
4. ``identity-guess``: the module name itself as a distribution name, logged as a guess and never
   written as a dependency.

The same table answers the other name questions of the project (conda names, dummy
distributions, development tools), so name knowledge lives in one file with reasons.
Namespace packages (``google``, ``google.cloud``) are never a distribution: a name under one is
resolved by its first component that is not a namespace.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Mapping, Sequence
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
def _table() -> dict[str, dict[str, object]]:
    raw = tomllib.loads(resources.files("pyrepro").joinpath("data", "module_map.toml").read_text(encoding="utf-8"))
    return raw


@functools.lru_cache(maxsize=1)
def table_digest() -> str:
    """sha256 of the reviewed name table, so caches of answers drawn from it expire with it."""
    import hashlib

    return hashlib.sha256(resources.files("pyrepro").joinpath("data", "module_map.toml").read_bytes()).hexdigest()


def _mapping() -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    raw = _table()
    return raw.get("modules", {}), raw.get("not_installable", {}), raw.get("unresolved", {})  # type: ignore[return-value]


def inside_folder(module: str) -> str | None:
    """The folder (relative to site-packages) where a distribution ships ``module`` outside its
    packages, reached through sys.path at run time (the name table's ``[inside]``), or None."""
    entry = _table().get("inside", {}).get(module.split(".")[0])
    return str(entry["folder"]) if isinstance(entry, dict) and entry.get("folder") else None


def obsolete_folder(path: str) -> str | None:
    """The reason a file at ``path`` (relative, posix) sits in a folder its authors marked as
    obsolete (the name table's ``[obsolete_folders]``: ``legacy/``, ``old_notebooks/``), or None."""
    table = _table().get("obsolete_folders", {})
    for part in path.lower().split("/")[:-1]:
        if part in table:
            return f"{part}/: {table[part]}"
    return None


def ipython_extension_module(name: str) -> str:
    """The module ``%load_ext name`` imports: IPython's own extensions (the name table's
    ``[ipython_extensions]``: ``autoreload``, ``storemagic``) live in ``IPython.extensions``; any
    other name is a module of its own (``rpy2.ipython``, ``line_profiler``)."""
    return "IPython" if name in _table().get("ipython_extensions", {}) else name


def namespaces() -> dict[str, str]:
    return _table().get("namespaces", {})  # type: ignore[return-value]


def conda_to_pypi(name: str) -> str | None:
    """The PyPI distribution of a conda package name (``py-xgboost-gpu`` -> ``xgboost``), or None."""
    entry = _table().get("conda", {}).get(name) or _table().get("conda", {}).get(name.lower())
    return str(entry["pypi"]) if isinstance(entry, dict) else None


def renamed(name: str) -> str | None:
    """The PyPI distribution a requirement name stands for when it is not one itself, from the
    one name table: a conda package (``pytorch``), a dummy (``sklearn``) or an import name written
    as a requirement (``cv2``, ``yaml``, ``PIL``); None when the name is its own."""
    key = canonicalize_name(name)
    hit = conda_to_pypi(name) or conda_to_pypi(key)
    if hit is None:
        entry = _table().get("dummies", {}).get(key)
        hit = str(entry["use"]) if isinstance(entry, dict) and entry.get("use") else None
    if hit is None:
        mods = _table().get("modules", {})
        for mod in (name, key, key.replace("-", "_")):
            if isinstance(mods.get(mod), str):
                hit = mods[mod]
                break
        else:
            for mod, dist in mods.items():
                if "." not in mod and isinstance(dist, str) and canonicalize_name(mod) == key:
                    hit = dist
                    break
    if hit is None or canonicalize_name(hit) == key:
        return None
    return canonicalize_name(hit)


def former_name(name: str) -> tuple[str, str] | None:
    """(former distribution name, reason) of a distribution that PyPI had under another name
    (the name table's ``[former_names]``), or None."""
    entry = _table().get("former_names", {}).get(canonicalize_name(name))
    if isinstance(entry, dict) and isinstance(entry.get("name"), str):
        return canonicalize_name(entry["name"]), str(entry.get("reason", ""))
    return None


def lockstep_partner(name: str) -> tuple[str, str] | None:
    """(the other distribution, reason) of a distribution released in lockstep with another (the
    name table's ``[lockstep]``, looked up from either side), or None."""
    key = canonicalize_name(name)
    for a, entry in _table().get("lockstep", {}).items():
        if not isinstance(entry, dict) or not isinstance(entry.get("with"), str):
            continue
        b = canonicalize_name(entry["with"])
        if key in (canonicalize_name(a), b):
            return (b if key == canonicalize_name(a) else canonicalize_name(a)), str(entry.get("reason", ""))
    return None


def companion_want(name: str, locked: Mapping[str, str]) -> tuple[str, str, str, str] | None:
    """(specifier the releases of ``name`` must meet, the other distribution, its locked version,
    reason) from the name table's ``[companions]``, for the locked set ``locked`` (canonical name ->
    version). None of the names it follows locked: the entry's ``absent`` specifier with the first
    name and version "" (None when it has none). None when ``name`` has no entry or no series of
    the entry covers the locked version."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    entry = _table().get("companions", {}).get(canonicalize_name(name))
    if not isinstance(entry, dict):
        return None
    follows = entry.get("follows", [])
    names = [canonicalize_name(f) for f in (follows if isinstance(follows, list) else [follows]) if isinstance(f, str)]
    other = next((n for n in names if n in locked), None)
    if other is None:
        # none of them locked: the entry's ``absent`` releases, if it says which
        if isinstance(entry.get("absent"), str) and names:
            return str(entry["absent"]), names[0], "", str(entry.get("reason", ""))
        return None
    try:
        at = Version(locked[other])
    except InvalidVersion:
        return None
    for series in entry.get("series", []):
        try:
            if not isinstance(series, dict) or at not in SpecifierSet(str(series.get("when", "")), prereleases=True):
                continue
        except InvalidSpecifier:
            continue
        want = str(series.get("want", ""))
        if want == "same-minor":
            want = f"=={at.major}.{at.minor}.*"
        return want, other, locked[other], str(entry.get("reason", ""))
    return None


def abi_ceilings() -> tuple[tuple[str, str, tuple[str, ...], str], ...]:
    """(distribution, version it stays below, messages, reason) of the name table's ``[abi]``:
    import failures that say code was compiled against an older major series."""
    out = []
    for name, entries in _table().get("abi", {}).items():
        for entry in entries if isinstance(entries, list) else [entries]:  # one entry, or one per series
            if isinstance(entry, dict) and isinstance(entry.get("below"), str):
                msgs = tuple(str(m) for m in entry.get("messages", ()) if isinstance(m, str))
                out.append((canonicalize_name(name), entry["below"], msgs, str(entry.get("reason", ""))))
    return tuple(out)


def bundled_library(library: str) -> tuple[str, str, str] | None:
    """(distribution, first release, reason) of the name table's ``[bundled]`` entry for a shared
    library (``sndfile``, ``libsndfile.so.1`` or ``libsndfile.so``), or None."""
    key = re.sub(r"\.so(?:\.[\d.]+)?$", "", library.strip())
    key = key[3:] if key.startswith("lib") else key
    entry = _table().get("bundled", {}).get(key)
    if isinstance(entry, dict) and isinstance(entry.get("distribution"), str) and isinstance(entry.get("first"), str):
        return canonicalize_name(entry["distribution"]), entry["first"], str(entry.get("reason", ""))
    return None


def build_tool(command: str) -> tuple[str, str] | None:
    """(distribution, reason) of a build's command-line tool that PyPI ships as a binary wheel (the
    name table's ``[build_tools]``, by the command's file name), or None."""
    entry = _table().get("build_tools", {}).get(command.rsplit("/", 1)[-1])
    if isinstance(entry, dict) and isinstance(entry.get("distribution"), str):
        return canonicalize_name(entry["distribution"]), str(entry.get("reason", ""))
    return None


@functools.lru_cache(maxsize=1)
def api_eras() -> dict[str, tuple[str, str, str, str]]:
    """The name table's ``[api_eras]``: dotted name -> (requirement, newest Python, reason, the day
    the API was removed)."""
    out = {}
    for name, entry in _table().get("api_eras", {}).items():
        if isinstance(entry, dict) and isinstance(entry.get("requirement"), str):
            out[str(name)] = (entry["requirement"], str(entry.get("python", "")), str(entry.get("reason", "")),
                              str(entry.get("removed", "")))
    return out


def conda_system_reason(name: str) -> str | None:
    """Why a conda package (``libgcc-ng``, ``pytorch-cuda``) is no Python distribution, or None:
    the first glob of the [conda_system] table that matches the lower-case name."""
    import fnmatch

    low = name.lower()
    table = _table().get("conda_system", {})
    if f"!{low}" in table:
        return None
    for pattern, reason in table.items():
        if not pattern.startswith("!") and fnmatch.fnmatchcase(low, pattern):
            return str(reason)
    return None


def dummy_reason(dist: str) -> str | None:
    """Why a PyPI distribution must never be installed (``sklearn``), or None."""
    entry = _table().get("dummies", {}).get(canonicalize_name(dist))
    return str(entry["reason"]) if isinstance(entry, dict) else None


def not_a_package_reason(name: str) -> str | None:
    """Why a listed name (``python``, ``cuda``, ``vasp``) is no Python distribution, or None."""
    reason = _table().get("not_packages", {}).get(canonicalize_name(name))
    return str(reason) if reason else None


def dev_tool_reason(dist: str) -> str | None:
    """Why a declared distribution is a development tool the code does not need, or None."""
    reason = _table().get("dev_tools", {}).get(canonicalize_name(dist))
    return str(reason) if reason else None


def requirement_kind(dist: str) -> str:
    """What a declared distribution is to the submission, for the pin search's weights: "harness"
    (a benchmark's harness, the [harnesses] table), "tooling" ([tooling] and [dev_tools]), else
    "model" (the model's own packages and what they need)."""
    key = canonicalize_name(dist)
    table = _table()
    if key in table.get("harnesses", {}):
        return "harness"
    if key in table.get("tooling", {}) or key in table.get("dev_tools", {}):
        return "tooling"
    return "model"


def group_key(module: str) -> str:
    """The part of a dotted module name that decides its distribution when no table entry does:
    the top-level name, or for namespace packages the first non-namespace component."""
    parts = module.split(".")
    ns = namespaces()
    n = 1
    while n < len(parts) and ".".join(parts[:n]) in ns:
        n += 1
    return ".".join(parts[:n])


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
        from pyrepro.toplevel import distribution_top_levels

        tops = distribution_top_levels(dist.read_text("top_level.txt"), [f.as_posix() for f in dist.files or ()])
        for t in sorted(tops):
            index.setdefault(t, canonicalize_name(name))
    return index


@functools.lru_cache(maxsize=4096)
def module_alias(name: str) -> str | None:
    """The canonical distribution of an exact module name in the reviewed mapping
    (``sklearn`` -> ``scikit-learn``), or None. For declared names that are really imports."""
    modules = _mapping()[0]
    dist = modules.get(name)
    return canonicalize_name(dist) if dist else None


class Resolver:
    """Resolves module names with the chain above (the environment index is built once).

    ``model_mapping`` is a model's reviewed ``[mapping]`` (module -> distribution), consulted first.
    """

    def __init__(self, pyenv: Sequence[Path] = (), model_mapping: dict[str, str] | None = None) -> None:
        self.env = _environment_index(pyenv)
        self.model_mapping = dict(model_mapping or {})
        self._keys: dict[tuple[str, tuple[str, ...]], str] = {}

    def key_of(self, module: str, names: Sequence[str] = ()) -> str:
        """See ``_key_of``; memoised (a tree imports the same names over and over)."""
        key = (module, tuple(names))
        found = self._keys.get(key)
        if found is None:
            found = self._keys[key] = self._key_of(module, names)
        return found

    def _key_of(self, module: str, names: Sequence[str] = ()) -> str:
        """The name an import is resolved and reported by: the longest table entry that matches
        ``module`` or ``module.<imported name>`` (``from google.cloud import bigquery`` ->
        ``google.cloud.bigquery``), shortened to the top-level name when that gives the same
        answer (``tensorflow.keras`` -> ``tensorflow``); else the namespace-aware group key."""
        modules, not_installable, unresolved = _mapping()
        tables = (self.model_mapping, not_installable, unresolved, modules)
        best: str | None = None
        for cand in (module, *(f"{module}.{n}" for n in names)):
            for table in tables:
                key = _longest_prefix(cand, table)
                if key is not None and (best is None or key.count(".") > best.count(".")):
                    best = key
        if best is None:
            return group_key(module)
        short = group_key(best)
        if short != best and self.resolve(short).distribution == self.resolve(best).distribution and \
                self.resolve(short).resolved_with == self.resolve(best).resolved_with:
            return short
        return best

    def resolve(self, module: str) -> Resolution:
        key = _longest_prefix(module, self.model_mapping)
        if key is not None:
            return Resolution(module, canonicalize_name(self.model_mapping[key]), "model-mapping")
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
        from pyrepro.scan.stdlib import python3_span

        span = python3_span(top)
        if span is not None:  # standard library of other Pythons (import imp on 3.12): no PyPI guess
            first, last = span
            need = f"Python {first}-{last}"
            return Resolution(module, None, "unresolved",
                              f"{top!r} is in the standard library of Python {first}-{last} only: the code needs "
                              f"{need} (give --python, or let init choose from this evidence)")
        if top.startswith("_"):  # a private module ships inside some other distribution: no guess
            return Resolution(module, None, "unresolved",
                              f"{top!r} is a private module of some distribution; find which with --pyenv "
                              "SITE_PACKAGES or add it to pyrepro/data/module_map.toml")
        key = group_key(module)
        return Resolution(module, canonicalize_name(key.replace(".", "-")), "identity-guess",
                          f"no mapping for {key!r}; a distribution of that name is only a guess (review it, then "
                          "add it to the model's [mapping] or dependencies.extra)")
