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


def _sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components (iterative Tarjan; no networkx: this runs on every build)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(comp)
    return out


def _cycle_in(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """One elementary cycle through the smallest node of a strongly connected component
    (breadth-first, so the shortest), ending where it starts."""
    start = min(comp)
    if start in graph.get(start, ()):
        return [start, start]
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph.get(v, ())):
                if w not in comp:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [*reversed(path), start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start, start]  # unreachable for a real component


def unbroken_cycles(lock: dict[str, Any], breaks: tuple[Break, ...] | None = None,
                    limit: int = 10) -> list[list[str]]:
    """Cycles left in the lock graph once the reviewed breaks are removed: one (the shortest
    through its smallest name) per strongly connected component, as a name list ending where it
    started; empty when Nix can evaluate every package of the lock."""
    cut = {(b.package, b.drop) for b in (load_breaks() if breaks is None else breaks)}
    graph: dict[str, set[str]] = {}
    for a, b in lock_edges(lock):
        if (a, b) not in cut:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set())
    found = []
    for comp in _sccs(graph):
        c = set(comp)
        if len(c) > 1 or any(n in graph.get(n, ()) for n in c):
            found.append(_cycle_in(graph, c))
    return sorted(found)[:limit]
