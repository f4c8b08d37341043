"""The import graph of pyrepro's own modules, function-level imports included (issue 24:
``backends/local.py`` and ``graph.py`` imported each other; the marker environment they share now
lives in the neutral ``pyrepro.markers``)."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

import pyrepro
from pyrepro import graph, markers

PKG = Path(pyrepro.__file__).resolve().parent


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> nx.DiGraph:
    """``a -> b`` when module ``a`` imports ``b`` anywhere in its body (a ``from pyrepro.x import
    y`` counts as importing ``pyrepro.x.y`` when that is a module, else ``pyrepro.x``)."""
    mods = {_module_name(p): p for p in PKG.rglob("*.py")}
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods else node.module
                           for a in node.names]
            for t in targets:
                if t in mods and t != name:
                    g.add_edge(name, t)
    return g


def test_import_graph__sees_function_level_imports() -> None:
    g = import_graph()
    # graph.built_env_dir imports the local backend inside the function
    assert g.has_edge("pyrepro.graph", "pyrepro.backends.local")
    assert g.has_edge("pyrepro.backends.local", "pyrepro.markers")


def test_local_backend_and_graph__no_import_cycle() -> None:
    g = import_graph()
    assert not nx.has_path(g, "pyrepro.backends.local", "pyrepro.graph"), \
        nx.shortest_path(g, "pyrepro.backends.local", "pyrepro.graph")


def test_markers__imports_no_pyrepro_module() -> None:
    assert list(import_graph().successors("pyrepro.markers")) == []


def test_graph__reexports_the_marker_environment() -> None:
    assert graph.target_environment is markers.target_environment
    env = markers.target_environment("3.10", "linux-aarch64")
    assert (env["python_version"], env["platform_machine"], env["sys_platform"]) == ("3.10", "aarch64", "linux")
    assert markers.marker_holds('platform_machine == "aarch64"', env)
    assert not markers.marker_holds('python_version < "3.8"', env)
    assert markers.marker_holds('extra == "gpu"', env, ["cpu", "gpu"])
    assert not markers.marker_holds('extra == "gpu"', env)
    assert markers.marker_holds("not a marker ((", env)  # kept; the caller reports it
