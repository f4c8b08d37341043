"""The dependency DAG of a model's closure: build, analyse, render, diff.

Two sources feed one graph model (a networkx ``DiGraph`` whose edges point from a
dependent to its dependency, so the environment is the root at the top):

* ``lock``: ``models/<name>/pdm.lock``. Nodes are packages (``name version``); edges come
  from each package's ``dependencies`` (PEP 508 strings) whose markers hold on the target
  platform; the root is the model environment, with edges to the project's direct
  dependencies (``pyproject.toml``), or to every package nothing else depends on.
* ``nix``: the real closure of a built store path, from ``nix-store --query --graph``
  (edges dependency -> dependent, reversed here) and ``nix path-info -r --json``
  (NAR sizes). Nodes are store paths with name, version and NAR size.

Everything here is pure except ``graph_from_nix``/``render``/``lock_text_at_rev``, which
go through the injectable runner.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from pyrepro import proc
from pyrepro.errors import InputError, MissingToolError, NotFoundError, toml_error_line
from pyrepro.fsutil import atomic_write_text
from pyrepro.interpreters import first_patch
from pyrepro.markers import marker_holds as _marker_holds
from pyrepro.markers import target_environment as target_environment  # re-exported
from pyrepro.proc import Runner

ROOT = "<root>"
FORMATS = ("svg", "png", "pdf", "dot", "json")


@dataclass(frozen=True)
class Node:
    key: str
    name: str
    version: str
    size: int | None = None  # NAR size in bytes (nix source)
    path: str | None = None  # store path (nix source)
    marks: frozenset[str] = frozenset()  # imported | pinned | added | native (see MARKS)


@dataclass(frozen=True)
class Problem:
    """A non-fatal finding: a cycle, a dangling dependency, a bad requirement string."""

    kind: str
    message: str


@dataclass
class DepGraph:
    """A dependency graph with its root and provenance ("lock" or "nix")."""

    graph: nx.DiGraph
    root: str
    source: str
    title: str
    problems: list[Problem] = field(default_factory=list)

    def node(self, key: str) -> Node:
        n: Node = self.graph.nodes[key]["node"]
        return n


# --------------------------------------------------------------------------- lock source


def graph_from_lock(lock_path: Path, *, python: str, platform: str = "linux-x86_64",
                    pyproject: Path | None = None, title: str | None = None) -> DepGraph:
    """Build the package DAG of ``lock_path`` for CPython ``python`` on ``platform``."""
    try:
        text = lock_path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise NotFoundError(f"lock file not found: {lock_path}",
                            hint="run 'pyrepro lock NAME' first") from exc
    return graph_from_lock_text(text, python=python, platform=platform, origin=str(lock_path),
                                pyproject_text=pyproject.read_text(encoding="utf-8")
                                if pyproject is not None and pyproject.is_file() else None,
                                title=title or lock_path.parent.name)


def graph_from_lock_text(text: str, *, python: str, platform: str = "linux-x86_64",
                         origin: str = "pdm.lock", pyproject_text: str | None = None,
                         title: str = "environment") -> DepGraph:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not a valid pdm.lock: {exc}", path=origin,
                         line=toml_error_line(exc),
                         hint="regenerate it with 'pyrepro lock NAME'") from exc
    packages = data.get("package", [])
    if not isinstance(packages, list):
        raise InputError("'package' must be an array of tables", path=origin, key="package")
    env = target_environment(python, platform, first_patch(python))
    g: nx.DiGraph = nx.DiGraph()
    problems: list[Problem] = []
    deps_of: dict[str, list[tuple[str, set[str]]]] = {}
    for i, pkg in enumerate(packages):
        name, version = pkg.get("name"), pkg.get("version")
        if not isinstance(name, str) or not isinstance(version, str):
            raise InputError("package entry without name/version", path=origin, key=f"package[{i}]")
        key = canonicalize_name(name)
        if key not in g:
            files = [f.get("file", "") for f in pkg.get("files", []) if isinstance(f, dict)]
            native = any(f.endswith(".whl") and not f.endswith("-none-any.whl") for f in files)
            g.add_node(key, node=Node(key, name, version, marks=frozenset({"native"}) if native else frozenset()))
        # pdm writes one entry per extras combination; merge their dependency lists
        for dep in pkg.get("dependencies", []):
            try:
                req = Requirement(dep)
            except InvalidRequirement:
                problems.append(Problem("bad-requirement", f"{name}: cannot parse dependency {dep!r}"))
                continue
            if req.marker is not None and not _marker_holds(str(req.marker), env, pkg.get("extras", [])):
                continue
            deps_of.setdefault(key, []).append((canonicalize_name(req.name), set(req.extras)))
    for key, deps in deps_of.items():
        for dep, _extras in deps:
            if dep == key:
                continue
            if dep not in g:
                problems.append(Problem("dangling", f"{key} depends on {dep}, which is not in the lock"))
                continue
            g.add_edge(key, dep)
    g.add_node(ROOT, node=Node(ROOT, title, "env"))
    direct = _direct_dependencies(pyproject_text, env) if pyproject_text else None
    if direct is not None:
        for d in sorted(direct):
            if d in g:
                g.add_edge(ROOT, d)
            else:
                problems.append(Problem("dangling", f"direct dependency {d} is not in the lock"))
    else:
        for key in sorted(n for n in g if n != ROOT and g.in_degree(n) == 0):
            g.add_edge(ROOT, key)
    dg = DepGraph(g, ROOT, "lock", title, problems)
    dg.problems.extend(Problem("cycle", "cycle: " + " -> ".join(c)) for c in find_cycles(dg))
    return dg


def _direct_dependencies(pyproject_text: str, env: dict[str, str]) -> set[str] | None:
    try:
        data = tomllib.loads(pyproject_text)
    except tomllib.TOMLDecodeError:
        return None
    deps = data.get("project", {}).get("dependencies")
    if not isinstance(deps, list):
        return None
    out = set()
    for d in deps:
        try:
            req = Requirement(d)
        except InvalidRequirement:
            continue
        if req.marker is None or req.marker.evaluate(env):
            out.add(canonicalize_name(req.name))
    return out


# --------------------------------------------------------------------------- nix source

_STORE_NAME = re.compile(r"^/nix/store/[0-9a-z]{32}-(?P<rest>.+)$")
_DOT_EDGE = re.compile(r'^\s*"(?P<src>[^"]+)"\s*->\s*"(?P<dst>[^"]+)"')
_DOT_NODE = re.compile(r'^\s*"(?P<id>[^"]+)"\s*\[label\s*=\s*"(?P<label>[^"]*)"')


def split_store_name(rest: str) -> tuple[str, str]:
    """``python3.11-numpy-1.26.4`` -> (``python3.11-numpy``, ``1.26.4``), as Nix's
    ``builtins.parseDrvName`` does: the version starts at the first ``-`` followed by a
    non-letter."""
    m = re.search(r"-(?=[^a-zA-Z])", rest)
    if m is None:
        return rest, ""
    return rest[: m.start()], rest[m.end():]


def parse_nix_dot(dot: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Parse ``nix-store -q --graph`` output: (node id -> label, edges dependency->dependent)."""
    labels: dict[str, str] = {}
    edges: list[tuple[str, str]] = []
    for line in dot.splitlines():
        if m := _DOT_EDGE.match(line):
            edges.append((m["src"], m["dst"]))
        elif m := _DOT_NODE.match(line):
            labels[m["id"]] = m["label"]
    return labels, edges


def graph_from_nix_data(dot: str, path_info: Any, root_path: str, title: str | None = None) -> DepGraph:
    """Combine ``nix-store -q --graph`` text and ``nix path-info -r --json`` data."""
    _labels, edges = parse_nix_dot(dot)
    sizes: dict[str, int] = {}
    refs: dict[str, list[str]] = {}
    # nix 2.8 prints a list of objects with "path"; newer versions print a dict keyed by path
    items = path_info.items() if isinstance(path_info, dict) else ((p.get("path"), p) for p in path_info)
    for path, info in items:
        if isinstance(path, str) and isinstance(info, dict):
            if isinstance(info.get("narSize"), int):
                sizes[path] = info["narSize"]
            refs[path] = [r for r in info.get("references", []) if isinstance(r, str)]
    g: nx.DiGraph = nx.DiGraph()

    def key_of(node_id: str) -> str:
        # dot node ids are the store path basenames ("<hash>-<name>")
        return node_id if node_id.startswith("/nix/store/") else f"/nix/store/{node_id}"

    def add(path: str) -> None:
        if path in g:
            return
        m = _STORE_NAME.match(path)
        rest = m["rest"] if m else Path(path).name
        name, version = split_store_name(rest)
        g.add_node(path, node=Node(path, name, version, sizes.get(path), path))

    for src, dst in edges:
        s, d = key_of(src), key_of(dst)
        add(s)
        add(d)
        if s != d:
            g.add_edge(d, s)  # dependent -> dependency
    for path, rs in refs.items():
        add(path)
        for r in rs:
            if r != path:
                add(r)
                g.add_edge(path, r)
    root = key_of(root_path)
    add(root)
    node = g.nodes[root]["node"]
    dg = DepGraph(g, root, "nix", title or node.name)
    dg.problems.extend(Problem("cycle", "cycle: " + " -> ".join(c)) for c in find_cycles(dg))
    return dg


def graph_from_nix(out_path: str, *, runner: Runner = proc.run, title: str | None = None) -> DepGraph:
    """The runtime closure of a built store path."""
    dot = runner(["nix-store", "--query", "--graph", out_path]).stdout
    info = runner(["nix", "--extra-experimental-features", "nix-command", "path-info", "-r", "--json",
                   out_path]).stdout
    try:
        data = json.loads(info)
    except json.JSONDecodeError as exc:
        raise InputError(f"nix path-info printed invalid JSON: {exc}") from exc
    return graph_from_nix_data(dot, data, out_path, title)


# --------------------------------------------------------------------------- analysis


def find_cycles(dg: DepGraph, limit: int = 20) -> list[list[str]]:
    """Up to ``limit`` elementary cycles (as node-name lists). Never hangs: it works on
    strongly connected components and stops after ``limit`` cycles."""
    cycles: list[list[str]] = []
    for comp in nx.strongly_connected_components(dg.graph):
        if len(comp) < 2 and not any(dg.graph.has_edge(n, n) for n in comp):
            continue
        sub = dg.graph.subgraph(comp)
        for cyc in nx.simple_cycles(sub):
            cycles.append([dg.node(n).name for n in cyc] + [dg.node(cyc[0]).name])
            if len(cycles) >= limit:
                return cycles
    return cycles


def depths(dg: DepGraph) -> dict[str, int]:
    """Depth level of every node reachable from the root: the shortest distance, so the
    environment is level 0 and its direct dependencies level 1."""
    return dict(nx.single_source_shortest_path_length(dg.graph, dg.root))


def reduce(dg: DepGraph) -> DepGraph:
    """Transitive reduction. On a cyclic graph, each strongly connected component is kept
    intact and only edges between components are reduced."""
    g = dg.graph
    if nx.is_directed_acyclic_graph(g):
        red = nx.transitive_reduction(g)
        red.add_nodes_from(g.nodes(data=True))
    else:
        cond = nx.condensation(g)
        cred = nx.transitive_reduction(cond)
        members = cond.graph["mapping"]  # node -> component id
        red = nx.DiGraph()
        red.add_nodes_from(g.nodes(data=True))
        for u, v in g.edges:
            cu, cv = members[u], members[v]
            if cu == cv or cred.has_edge(cu, cv):
                red.add_edge(u, v)
    return DepGraph(red, dg.root, dg.source, dg.title, list(dg.problems))


def limit_depth(dg: DepGraph, depth: int) -> DepGraph:
    d = depths(dg)
    keep = [n for n, lv in d.items() if lv <= depth]
    return DepGraph(dg.graph.subgraph(keep).copy(), dg.root, dg.source, dg.title, list(dg.problems))


def find_package(dg: DepGraph, pkg: str) -> str:
    """The node key of ``pkg`` (a package name, or a store path/name for nix graphs)."""
    want = canonicalize_name(pkg)
    for key in dg.graph:
        node = dg.node(key)
        if key in (pkg, want) or canonicalize_name(node.name) == want or node.name.endswith("-" + pkg):
            return key
    raise NotFoundError(f"{pkg!r} is not in the closure of {dg.title}")


@dataclass(frozen=True)
class Highlight:
    target: str
    nodes: frozenset[str]
    edges: frozenset[tuple[str, str]]
    paths: tuple[tuple[str, ...], ...]  # example paths (names), at most ``max_paths``
    path_count: int


def highlight(dg: DepGraph, pkg: str, max_paths: int = 20) -> Highlight:
    """Every path from the root to ``pkg`` ("why is tensorflow-addons here?").

    The union of all paths is computed exactly (nodes both reachable from the root and
    reaching ``pkg``); concrete paths are enumerated up to ``max_paths``, and the total
    count is computed by dynamic programming on the DAG.
    """
    target = find_package(dg, pkg)
    g = dg.graph
    on_path = (nx.descendants(g, dg.root) | {dg.root}) & (nx.ancestors(g, target) | {target})
    sub = g.subgraph(on_path)
    edges = frozenset((u, v) for u, v in sub.edges)
    examples: list[tuple[str, ...]] = []
    for p in nx.all_simple_paths(sub, dg.root, target):
        examples.append(tuple(dg.node(n).name for n in p))
        if len(examples) >= max_paths:
            break
    if nx.is_directed_acyclic_graph(sub):
        count: dict[str, int] = {}
        for n in reversed(list(nx.topological_sort(sub))):
            count[n] = 1 if n == target else sum(count[s] for s in sub.successors(n))
        total = count.get(dg.root, 0)
    else:
        total = len(examples)
    if target == dg.root:
        total = 1
    return Highlight(target, frozenset(on_path), edges, tuple(examples), total)


def closure_sizes(dg: DepGraph) -> dict[str, int]:
    """Closure NAR size per node (sum over the node and everything it reaches), when
    sizes are known; else the number of transitive dependencies."""
    g = dg.graph
    have_sizes = any(dg.node(n).size for n in g)
    out: dict[str, int] = {}
    for n in g:
        reach = nx.descendants(g, n) | {n}
        out[n] = sum(dg.node(m).size or 0 for m in reach) if have_sizes else len(reach) - 1
    return out


def to_json(dg: DepGraph, *, top: int = 10, hl: Highlight | None = None) -> dict[str, Any]:
    """The ``--json`` contract: nodes, edges, depth, counts, largest contributors."""
    d = depths(dg)
    sizes = dg.graph.graph.get("closure_sizes") or closure_sizes(dg)  # a summary keeps the full closure's
    have_sizes = any(dg.node(n).size for n in dg.graph)
    nodes = []
    for key in sorted(dg.graph, key=lambda k: (d.get(k, 10**9), dg.node(k).name, k)):
        n = dg.node(key)
        nodes.append({"id": key, "name": n.name, "version": n.version, "depth": d.get(key),
                      "size": n.size, "closure": sizes[key]})
    edges = sorted([u, v] for u, v in dg.graph.edges)
    contributors = sorted((k for k in dg.graph if k != dg.root), key=lambda k: (-sizes[k], k))[:top]
    out: dict[str, Any] = {
        "title": dg.title,
        "source": dg.source,
        "root": dg.root,
        "nodes": nodes,
        "edges": edges,
        "counts": {"nodes": dg.graph.number_of_nodes(), "edges": dg.graph.number_of_edges(),
                   "max_depth": max(d.values()) if d else 0,
                   "unreachable": sum(1 for k in dg.graph if k not in d)},
        "largest": [{"id": k, "name": dg.node(k).name, "version": dg.node(k).version,
                     ("closure_bytes" if have_sizes else "transitive_deps"): sizes[k]}
                    for k in contributors],
        "problems": [{"kind": p.kind, "message": p.message} for p in dg.problems],
    }
    if hl is not None:
        out["highlight"] = {"target": hl.target, "path_count": hl.path_count,
                            "paths": [list(p) for p in hl.paths]}
    return out


# --------------------------------------------------------------------------- diff


@dataclass(frozen=True)
class GraphDiff:
    a: str
    b: str
    added: tuple[tuple[str, str], ...]  # (name, version) only in b
    removed: tuple[tuple[str, str], ...]  # only in a
    changed: tuple[tuple[str, str, str], ...]  # (name, version in a, version in b)

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b,
                "added": [{"name": n, "version": v} for n, v in self.added],
                "removed": [{"name": n, "version": v} for n, v in self.removed],
                "changed": [{"name": n, "from": x, "to": y} for n, x, y in self.changed]}


def _by_name(dg: DepGraph) -> dict[str, str]:
    out = {}
    for k in dg.graph:
        if k == dg.root:
            continue
        n = dg.node(k)
        out[canonicalize_name(n.name) if dg.source == "lock" else n.name] = n.version
    return out


def diff(a: DepGraph, b: DepGraph) -> GraphDiff:
    """Added, removed and version-changed nodes between two closures (matched by name)."""
    na, nb = _by_name(a), _by_name(b)
    return GraphDiff(
        a.title, b.title,
        added=tuple(sorted((n, nb[n]) for n in nb.keys() - na.keys())),
        removed=tuple(sorted((n, na[n]) for n in na.keys() - nb.keys())),
        changed=tuple(sorted((n, na[n], nb[n]) for n in na.keys() & nb.keys() if na[n] != nb[n])),
    )


DIFF_COLOURS = {"added": "#b7e4b0", "removed": "#f4b6b6", "changed": "#ffd699", "same": "#f2f2f2"}


def diff_to_dot(a: DepGraph, b: DepGraph, d: GraphDiff) -> str:
    """Both closures in one picture: B's packages plus A's removed ones, coloured added /
    removed / changed (with both versions) / same, and a legend."""
    import graphviz

    added, removed = {n for n, _ in d.added}, {n for n, _ in d.removed}
    changed = {n: (x, y) for n, x, y in d.changed}
    na, nb = _by_name(a), _by_name(b)
    dot = graphviz.Digraph(name="diff")
    dot.attr(rankdir="LR", label=f"{d.a} -> {d.b}: {len(added)} added, {len(removed)} removed, "
             f"{len(changed)} changed", labelloc="t", fontname="Helvetica", fontsize="14")
    dot.attr("node", shape="box", style="rounded,filled", fontname="Helvetica", fontsize="10")
    names = sorted(set(na) | set(nb))
    for n in names:
        kind = "added" if n in added else "removed" if n in removed else "changed" if n in changed else "same"
        version = f"{changed[n][0]} -> {changed[n][1]}" if n in changed else nb.get(n, na.get(n, ""))
        dot.node(f"p_{n}", label=f"{n}\n{version}", fillcolor=DIFF_COLOURS[kind], tooltip=kind)
    edges: set[tuple[str, str]] = set()
    for g in (a, b):
        for u, v in g.graph.edges:
            if u == g.root or v == g.root:
                continue
            un, vn = canonicalize_name(g.node(u).name), canonicalize_name(g.node(v).name)
            edges.add((un, vn))
    for u, v in sorted(edges):
        if u in names and v in names:
            dot.edge(f"p_{u}", f"p_{v}", color="#999999", arrowsize="0.5")
    with dot.subgraph(name="cluster_legend") as leg:
        leg.attr(label="legend", fontsize="11", style="rounded", color="#999999")
        for kind, colour in DIFF_COLOURS.items():
            leg.node(f"legend_{kind}", label=kind, fillcolor=colour, fontsize="9")
    return str(dot.source)


def lock_text_at_rev(repo: Path, rev: str, rel_path: str, *, runner: Runner = proc.run) -> str:
    """A lock file as committed at ``rev`` (``git show REV:path``)."""
    return runner(["git", "-C", str(repo), "show", f"{rev}:{rel_path}"]).stdout


# --------------------------------------------------------------------------- rendering

_PALETTE = ["#f2f7ff", "#e0edff", "#c7deff", "#a8cbff", "#8ab9ff", "#6aa6ff"]  # light enough for dark text (native: dark red)


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def to_dot(dg: DepGraph, hl: Highlight | None = None) -> str:
    """DOT text: ranks top to bottom by depth, labels ``name version``, fill colour by
    closure size (or transitive dependency count), highlight paths in red."""
    import graphviz

    d = depths(dg)
    sizes = dg.graph.graph.get("closure_sizes") or closure_sizes(dg)  # a summary keeps the full closure's
    have_sizes = any(dg.node(n).size for n in dg.graph)
    biggest = max((v for k, v in sizes.items() if k != dg.root), default=0) or 1
    summary = any("summary" in dg.node(k).marks for k in dg.graph)
    dot = graphviz.Digraph(name="closure", comment=f"{dg.title} ({dg.source})")
    title = f"{dg.title} — {dg.source} closure" + (" (direct dependencies; --full for every package)"
                                                   if summary else "")
    dot.attr(rankdir="LR" if summary else "TB", ranksep="0.6", nodesep="0.25", label=title,
             labelloc="t", fontname="Helvetica", fontsize="14")
    dot.attr("node", shape="box", style="rounded,filled", fontname="Helvetica", fontsize="10")
    dot.attr("edge", color="#777777", arrowsize="0.6")
    ids = {k: f"n{i}" for i, k in enumerate(sorted(dg.graph, key=lambda k: (d.get(k, 10**9), k)))}
    by_level: dict[int, list[str]] = {}
    for k in dg.graph:
        by_level.setdefault(d.get(k, max(d.values(), default=0) + 1), []).append(k)
    for level in sorted(by_level):
        with dot.subgraph(name=f"rank{level}") as sub:
            sub.attr(rank="source" if level == 0 else "same")
            for k in sorted(by_level[level]):
                n = dg.node(k)
                label = f"{n.name}\n{n.version}" if n.version else n.name
                if have_sizes and n.size:
                    label += f"\n{human_size(sizes[k])}"
                shade = _PALETTE[min(len(_PALETTE) - 1, int(len(_PALETTE) * sizes[k] / (biggest + 1)))]
                attrs = {"fillcolor": "#ffe9a8" if k == dg.root else shade}
                for m in sorted(n.marks & set(MARKS)):
                    attrs.update(MARKS[m][1])
                if "summary" in n.marks:
                    attrs.update(shape="plaintext", style="", fillcolor="")
                if hl is not None and k in hl.nodes:
                    attrs.update(color="#d62728", penwidth="2")
                sub.node(ids[k], label=label, tooltip=k, **attrs)
    for u, v in sorted(dg.graph.edges):
        attrs = {}
        if hl is not None and (u, v) in hl.edges:
            attrs = {"color": "#d62728", "penwidth": "2"}
        dot.edge(ids[u], ids[v], **attrs)
    present = sorted({m for k in dg.graph for m in dg.node(k).marks} & set(MARKS))
    with dot.subgraph(name="cluster_legend") as leg:
        leg.attr(label="legend", fontsize="11", style="rounded", color="#999999")
        leg.node("legend_fill", label="fill: darker = bigger closure", shape="box", style="rounded,filled",
                 fillcolor=_PALETTE[len(_PALETTE) // 2], fontsize="9")
        for m in present or list(MARKS):
            text, attrs = MARKS[m]
            leg.node(f"legend_{m}", label=f"{m}: {text}", shape="box", fontsize="9",
                     **{"style": "rounded", **attrs})
    return str(dot.source)


@dataclass(frozen=True)
class Rendered:
    path: Path
    format: str
    dot_path: Path | None  # where the DOT text was written (always for dot, and when dot is missing)


def render(dot_text: str, out: Path, fmt: str, *, runner: Runner = proc.run) -> Rendered:
    """Write ``out`` in ``fmt``. ``dot``/``json`` need no graphviz executable. For images,
    a missing ``dot`` raises ``MissingToolError`` after writing the DOT text next to
    ``out`` (``out`` with suffix ``.dot``), so nothing is lost."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "dot":
        atomic_write_text(out, dot_text)
        return Rendered(out, fmt, out)
    dot_path = out.with_suffix(".dot")
    if proc.which("dot") is None:
        atomic_write_text(dot_path, dot_text)
        raise MissingToolError(
            f"graphviz 'dot' is not installed, so {out} was not rendered; the DOT text is in {dot_path}",
            hint=proc.install_hint("dot"))
    tmp = out.with_name(f".{out.name}.tmp")
    runner(["dot", f"-T{fmt}", "-o", str(tmp)], input=dot_text)
    tmp.replace(out)
    return Rendered(out, fmt, None)


def synthetic_dag(n: int, fanout: int = 4, seed: int = 0) -> DepGraph:
    """A random layered DAG with ``n`` package nodes (for bench/graph.py and tests)."""
    import random

    rng = random.Random(seed)
    g: nx.DiGraph = nx.DiGraph()
    g.add_node(ROOT, node=Node(ROOT, "synthetic-env", "env"))
    keys = [f"pkg{i:05d}" for i in range(n)]
    for i, k in enumerate(keys):
        g.add_node(k, node=Node(k, k, f"{i % 7}.{i % 13}", size=rng.randint(10_000, 50_000_000)))
    for i, k in enumerate(keys):
        later = keys[i + 1:]
        for dep in rng.sample(later, min(len(later), rng.randint(0, fanout))):
            g.add_edge(k, dep)
    for k in keys:
        if g.in_degree(k) == 0:
            g.add_edge(ROOT, k)
    return DepGraph(g, ROOT, "lock", "synthetic")


def select_source(requested: str, nix_out: str | None) -> str:
    """``auto`` -> ``nix`` when a built output exists, else ``lock``."""
    if requested not in ("auto", "nix", "lock"):
        raise InputError(f"unknown graph source {requested!r}; use auto, nix or lock")
    if requested == "auto":
        return "nix" if nix_out and Path(nix_out).exists() else "lock"
    if requested == "nix" and not (nix_out and Path(nix_out).exists()):
        raise NotFoundError("no built Nix output for this model",
                            hint="build it with 'pyrepro build NAME --backend nix' (or 'nix build .#models.NAME'), "
                                 "pass --nix-out PATH, or use --source lock")
    return requested


def known_nix_output(cache: Path, name: str) -> str | None:
    """The output path recorded by the Nix backend (``<cache>/nix-outputs/<name>`` link)."""
    link = cache / "nix-outputs" / name
    try:
        return str(link.resolve(strict=True))
    except (OSError, RuntimeError):
        return None


__all__: Sequence[str] = (
    "DepGraph", "GraphDiff", "Highlight", "Node", "closure_sizes", "depths", "diff", "find_cycles",
    "graph_from_lock", "graph_from_lock_text", "graph_from_nix", "graph_from_nix_data", "highlight",
    "limit_depth", "reduce", "render", "to_dot", "to_json",
)


# --------------------------------------------------------------------------- orchestration


@dataclass(frozen=True)
class GraphRef:
    """What ``pyrepro graph`` was asked about: a model, a model at a git revision
    (``NAME@REV``), or a lock file path."""

    label: str
    model: str | None
    rev: str | None
    lock_path: Path | None


def parse_ref(ref: str) -> GraphRef:
    if ref.endswith(".lock") or "/" in ref:
        return GraphRef(ref, None, None, Path(ref))
    if "@" in ref:
        name, rev = ref.split("@", 1)
        return GraphRef(ref, name, rev, None)
    return GraphRef(ref, ref, None, None)


def load_graph(ref: str, *, root: Path | None, cache: Path, source: str = "auto", nix_out: str | None = None,
               runner: Runner = proc.run) -> DepGraph:
    """Build the graph for ``ref`` from the registry (python version, lock, pyproject) and
    the chosen source. The chosen source is recorded in ``DepGraph.source``."""
    from pyrepro.registry import load_registry

    r = parse_ref(ref)
    if r.lock_path is not None:
        return graph_from_lock(r.lock_path, python="3.11", title=r.lock_path.resolve().parent.name,
                               pyproject=r.lock_path.with_name("pyproject.toml"))
    assert r.model is not None
    if root is None:
        raise NotFoundError(f"cannot look up model {r.model!r}: not inside a pyrepro checkout",
                            hint="run inside the project, set PYREPRO_ROOT, or pass a path to a pdm.lock")
    spec = load_registry(root / "models").get(r.model)
    if r.rev is not None:
        rel = f"models/{spec.name}/pdm.lock"
        text = lock_text_at_rev(root, r.rev, rel, runner=runner)
        try:
            pyproject = lock_text_at_rev(root, r.rev, f"models/{spec.name}/pyproject.toml", runner=runner)
        except Exception:  # an old revision without pyproject: fall back to roots
            pyproject = None
        return graph_from_lock_text(text, python=spec.python, origin=f"{r.rev}:{rel}",
                                    pyproject_text=pyproject, title=r.label)
    out = nix_out or known_nix_output(cache, spec.name)
    chosen = select_source(source, out)
    if chosen == "nix":
        assert out is not None
        return graph_from_nix(out, runner=runner, title=spec.name)
    dg = mark_model(graph_from_lock(spec.dir / "pdm.lock", python=spec.python, title=spec.name,
                                    pyproject=spec.dir / "pyproject.toml"), spec)
    env = built_env_dir(spec, cache)
    return attach_sizes(dg, env_sizes(env)) if env is not None else dg


# What the node marks mean (the legend of every rendered graph).
MARKS = {
    "imported": ("the code imports it (scanned)", {"penwidth": "2.5", "color": "#1f4e9c"}),
    "pinned": ("a reviewer pinned its version (model.toml)", {"peripheries": "2"}),
    "added": ("added by review or pyrepro, not imported (dependencies.extra)", {"style": "rounded,filled,dashed"}),
    "native": ("ships compiled code (platform wheels)", {"fontcolor": "#8b0000"}),
}


def mark_model(dg: DepGraph, spec: Any) -> DepGraph:
    """Mark the nodes of a registry model's graph: imported by its code, pinned by a reviewer,
    added without an import (see ``MARKS``)."""
    from packaging.requirements import InvalidRequirement

    def names(reqs: Iterable[str]) -> set[str]:
        out: set[str] = set()
        for r in reqs:
            try:
                out.add(canonicalize_name(Requirement(r).name))
            except InvalidRequirement:
                continue
        return out

    imported = names(spec.dependencies.scanned)
    pinned = {canonicalize_name(p.name) for p in spec.dependencies.pins}
    added = names(spec.dependencies.extra) - imported
    for key in dg.graph:
        n = dg.node(key)
        marks = set(n.marks)
        marks |= {m for m, group in (("imported", imported), ("pinned", pinned), ("added", added)) if key in group}
        if marks != set(n.marks):
            dg.graph.nodes[key]["node"] = Node(n.key, n.name, n.version, n.size, n.path, frozenset(marks))
    return dg


def env_sizes(env_dir: Path) -> dict[str, int]:
    """Installed bytes per distribution of a built environment (its RECORD files' sizes)."""
    import csv

    out: dict[str, int] = {}
    for record in env_dir.glob("lib/python*/site-packages/*.dist-info/RECORD"):
        name = record.parent.name[: -len(".dist-info")].rsplit("-", 1)[0]
        total = 0
        try:
            for row in csv.reader(record.read_text(encoding="utf-8").splitlines()):
                if len(row) >= 3 and row[2].isdigit():
                    total += int(row[2])
        except (OSError, csv.Error, UnicodeDecodeError):
            continue
        out[canonicalize_name(name)] = total
    return out


def attach_sizes(dg: DepGraph, sizes: dict[str, int]) -> DepGraph:
    """Give each node the installed size of its distribution (lock graphs of a built model)."""
    for key in dg.graph:
        n = dg.node(key)
        if key in sizes and n.size is None:
            dg.graph.nodes[key]["node"] = Node(n.key, n.name, n.version, sizes[key], n.path, n.marks)
    return dg


def built_env_dir(spec: Any, cache: Path) -> Path | None:
    """The local backend's built environment of a model, when it exists in ``cache``."""
    from pyrepro.backends import local

    try:
        d = cache / "envs" / f"{spec.name}-{local.env_key(spec)}"
    except Exception:
        return None
    return d if (d / local.COMPLETE).is_file() else None


def summarize(dg: DepGraph) -> DepGraph:
    """The default view: the root, its direct dependencies, and for each one a single node
    standing for the rest of its closure ("+N packages"), so the picture fits a screen and
    answers "what is in this closure, and what is heavy"."""
    sizes = closure_sizes(dg)
    g: nx.DiGraph = nx.DiGraph()
    g.add_node(dg.root, node=dg.node(dg.root))
    for d in sorted(dg.graph.successors(dg.root)):
        g.add_node(d, node=dg.node(d))
        g.add_edge(dg.root, d)
        below = set(nx.descendants(dg.graph, d)) - {d}
        if below:
            key = f"{d} +{len(below)}"
            known = [dg.node(b).size for b in below if dg.node(b).size]
            label = f"+{len(below)} packages" + (f", {human_size(sum(known))}" if known else "")  # type: ignore[arg-type]
            g.add_node(key, node=Node(key, label, "", None, None, frozenset({"summary"})))
            g.add_edge(d, key)
    out = DepGraph(g, dg.root, dg.source, dg.title, list(dg.problems))
    out.graph.graph["closure_sizes"] = {k: sizes.get(k, 0) for k in g}
    return out


def view(dg: DepGraph, *, depth: int | None = None, reduced: bool = False) -> DepGraph:
    """Apply ``--reduce`` and ``--depth`` in that order."""
    if reduced:
        dg = reduce(dg)
    if depth is not None:
        dg = limit_depth(dg, depth)
    return dg
