"""Lock dependency cycles and the reviewed breaks (pyrepro/data/cycle-breaks.toml; issue 13).

A cycle in pdm.lock is a derivation cycle for dream2nix (infinite recursion at evaluation), so
the lock check names every cycle that has no reviewed break. The Nix side applies the same table
(nix/overrides.nix); tests/test_nix_dream2nix.py evaluates it against the real dream2nix.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyrepro import cycles, lock
from pyrepro.errors import InputError
from pyrepro.registry import load_registry
from tests.test_lock import _project

REPO = Path(__file__).resolve().parent.parent

CYCLIC = """\
[metadata]
groups = ["default"]
strategy = ["inherit_metadata"]
lock_version = "4.5.1"
content_hash = "sha256:{h}"

[[package]]
name = "Alpha_Pkg"
version = "1.0"
dependencies = ["beta>=1; python_version >= '3.8'"]
files = [{{file = "alpha_pkg-1.0-py3-none-any.whl", hash = "sha256:{z}"}}]

[[package]]
name = "beta"
version = "1.0"
dependencies = ["alpha.pkg[extra]==1.0", "six"]
files = [{{file = "beta-1.0-py3-none-any.whl", hash = "sha256:{z}"}}]

[[package]]
name = "six"
version = "1.16.0"
files = [{{file = "six-1.16.0-py2.py3-none-any.whl", hash = "sha256:{z}"}}]
"""


def _cyclic_project(tmp_path: Path) -> Path:
    d = _project(tmp_path, ["alpha-pkg"])
    h = lock.content_hash(lock.read_pyproject(d / "pyproject.toml")).removeprefix("sha256:")
    (d / "pdm.lock").write_text(CYCLIC.format(h=h, z="0" * 64))
    return d


def test_check_lock_dir__cycle_without_reviewed_break__named_with_the_fix(tmp_path: Path) -> None:
    d = _cyclic_project(tmp_path)
    probs = [p for p in lock.check_lock_dir(d) if "cycle" in p.message]
    assert len(probs) == 1
    assert "alpha-pkg -> beta -> alpha-pkg" in probs[0].message
    assert "cycle-breaks.toml" in probs[0].message and probs[0].path == d / "pdm.lock"


def test_unbroken_cycles__reviewed_break__cycle_gone() -> None:
    data = tomllib.loads(CYCLIC.format(h="0", z="0" * 64))
    assert cycles.unbroken_cycles(data, ()) == [["alpha-pkg", "beta", "alpha-pkg"]]
    brk = (cycles.Break("beta", "alpha-pkg", "reviewed"),)
    assert cycles.unbroken_cycles(data, brk) == []
    # a break for an edge the lock does not have changes nothing
    assert cycles.unbroken_cycles(data, (cycles.Break("six", "beta", "r"),)) != []


def test_committed_locks__every_cycle_has_a_reviewed_break() -> None:
    found = {}
    for spec in load_registry(REPO / "models"):
        data = tomllib.loads((spec.dir / "pdm.lock").read_text())
        assert cycles.unbroken_cycles(data) == [], spec.name
        found[spec.name] = cycles.unbroken_cycles(data, ())
    # the table is not dead weight: the kgcnn and torch-with-triton locks do contain cycles
    assert found["kgcnn_cgcnn"] and found["alignn"]
    used = {(b.package, b.drop) for b in cycles.load_breaks()}
    edges = set().union(*(cycles.lock_edges(tomllib.loads((s.dir / "pdm.lock").read_text()))
                          for s in load_registry(REPO / "models")))
    assert used <= edges


@pytest.mark.parametrize("text, msg", [
    ("[[break]]\npackage = 'a'\n", "needs package, drop and reason"),
    ("[[break\n", "not valid TOML"),
])
def test_load_breaks__bad_table__located_error(text: str, msg: str) -> None:
    with pytest.raises(InputError, match=msg) as e:
        cycles.load_breaks(text)
    assert "cycle-breaks.toml" in str(e.value)


names = st.from_regex(r"[a-z][a-z0-9]{0,3}", fullmatch=True)


@given(st.lists(st.tuples(names, names), max_size=12))
def test_unbroken_cycles__any_graph__every_reported_cycle_is_real_and_breaking_it_helps(
        edges: list[tuple[str, str]]) -> None:
    data = {"package": [{"name": a, "dependencies": [b for x, b in edges if x == a]} for a in {a for a, _ in edges}]}
    found = cycles.unbroken_cycles(data, (), limit=1000)
    for cyc in found:
        assert cyc[0] == cyc[-1]
        assert all((a, b) in set(edges) for a, b in zip(cyc, cyc[1:]))
    # breaking every edge leaves nothing
    every = tuple(cycles.Break(a, b, "r") for a, b in set(edges))
    assert cycles.unbroken_cycles(data, every) == []


@given(st.lists(st.tuples(names, names), max_size=15))
def test_unbroken_cycles__any_graph__found_exactly_when_networkx_finds_a_cycle(edges: list[tuple[str, str]]) -> None:
    import networkx as nx

    data = {"package": [{"name": a, "dependencies": [b for x, b in edges if x == a]} for a in {a for a, _ in edges}]}
    g = nx.DiGraph(edges)
    comps = [c for c in nx.strongly_connected_components(g) if len(c) > 1 or any(g.has_edge(n, n) for n in c)]
    found = cycles.unbroken_cycles(data, (), limit=1000)
    assert len(found) == len(comps)
    assert sorted(frozenset(c[:-1]) <= comp for c in found for comp in comps).count(True) == len(found)
