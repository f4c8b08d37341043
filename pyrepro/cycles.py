"""Dependency cycles in a pdm.lock and the reviewed breaks that make it evaluable with Nix.

dream2nix's python-pdm gives every package its lock closure as propagatedBuildInputs, so a cycle
in the lock (torch -> triton -> torch) is a derivation cycle: evaluation stops with "infinite
recursion". ``pyrepro/data/cycle-breaks.toml`` holds the reviewed breaks (package, drop, reason);
nix/overrides.nix applies them, and ``unbroken_cycles`` finds the cycles they leave, on the same
graph the Nix side uses: every dependency edge of the lock, markers ignored.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from packaging.utils import canonicalize_name

from pyrepro.errors import InputError

BREAKS_FILE = "cycle-breaks.toml"
_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass(frozen=True)
class Break:
    package: str
    drop: str
    reason: str


def load_breaks(text: str | None = None) -> tuple[Break, ...]:
    """The reviewed breaks (``text``: a cycle-breaks.toml; default: the packaged table)."""
    where = f"pyrepro/data/{BREAKS_FILE}"
    if text is None:
        text = resources.files("pyrepro").joinpath("data", BREAKS_FILE).read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{where}: not valid TOML: {exc}") from exc
    out = []
    for i, b in enumerate(data.get("break", [])):
        if not all(isinstance(b.get(k), str) and b.get(k) for k in ("package", "drop", "reason")):
            raise InputError(f"{where}: break #{i + 1} needs package, drop and reason (strings)")
        out.append(Break(canonicalize_name(b["package"]), canonicalize_name(b["drop"]), b["reason"]))
    return tuple(out)


def lock_edges(lock: dict[str, Any]) -> set[tuple[str, str]]:
    """Every dependency edge of a parsed pdm.lock (normalised names; markers ignored, as in Nix)."""
    edges = set()
    for pkg in lock.get("package", []):
        src = canonicalize_name(str(pkg.get("name", "")))
        for dep in pkg.get("dependencies", []) or []:
            m = _NAME.match(str(dep))
            if m:
                edges.add((src, canonicalize_name(m.group(1))))
    return edges


def unbroken_cycles(lock: dict[str, Any], breaks: tuple[Break, ...] | None = None,
                    limit: int = 10) -> list[list[str]]:
    """Cycles left in the lock graph once the reviewed breaks are removed (each as a name list
    ending where it started); empty when Nix can evaluate every package of the lock."""
    import networkx as nx

    cut = {(b.package, b.drop) for b in (load_breaks() if breaks is None else breaks)}
    g = nx.DiGraph()
    g.add_edges_from(e for e in lock_edges(lock) if e not in cut)
    found: list[list[str]] = []
    for comp in nx.strongly_connected_components(g):
        if len(comp) < 2 and not any(g.has_edge(n, n) for n in comp):
            continue
        for cyc in nx.simple_cycles(g.subgraph(comp)):
            i = cyc.index(min(cyc))
            cyc = cyc[i:] + cyc[:i]
            found.append([*cyc, cyc[0]])
            if len(found) >= limit:
                return sorted(found)
    return sorted(found)
