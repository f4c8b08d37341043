"""Tests for pyrepro.graph: lock and Nix sources, analysis, rendering, diff, CLI."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyrepro import graph as g
from pyrepro import proc
from pyrepro.errors import InputError, MissingToolError, NotFoundError
from tests.conftest import have, nix_env
from tests.fakes import json_result

DATA = Path(__file__).parent / "data" / "graph"
GOLDEN = Path(__file__).parent / "golden" / "graph"
SMALL = DATA / "small"


def small(python: str = "3.11", platform: str = "linux-x86_64") -> g.DepGraph:
    return g.graph_from_lock(SMALL / "pdm.lock", python=python, platform=platform,
                             pyproject=SMALL / "pyproject.toml", title="small")


def lock_text(pkgs: dict[str, list[str]]) -> str:
    out = ['[metadata]\nlock_version = "4.5.0"\n']
    for name, deps in pkgs.items():
        out.append(f'[[package]]\nname = "{name}"\nversion = "1.0"\n'
                   f"dependencies = {json.dumps(deps)}\nfiles = []\n")
    return "\n".join(out)


def test_graph_from_lock__small_lock__edges_follow_dependencies_and_markers() -> None:
    dg = small()
    edges = set(dg.graph.edges)
    assert (g.ROOT, "tensorflow") in edges and (g.ROOT, "tensorflow-addons") in edges
    assert ("tensorflow", "keras") in edges  # "Keras" is canonicalised
    assert ("tensorflow", "tensorflow-io-gcs-filesystem") in edges  # marker true on linux
    assert not any(v == "tensorflow-intel" for _, v in edges)  # Windows-only
    assert ("typeguard", "typing-extensions") not in edges  # python_version < 3.10
    assert dg.problems == []
    assert dg.node("keras").version == "2.12.0"


def test_graph_from_lock__python39__marker_edge_appears() -> None:
    dg = small(python="3.9")
    assert ("typeguard", "typing-extensions") in dg.graph.edges


def test_graph_from_lock__windows__missing_package_reported_as_dangling() -> None:
    dg = small(platform="windows-AMD64")
    kinds = [p.kind for p in dg.problems]
    assert "dangling" in kinds
    assert any("tensorflow-intel" in p.message for p in dg.problems)


def test_graph_from_lock__no_pyproject__roots_are_unrequired_packages(tmp_path: Path) -> None:
    shutil.copy(SMALL / "pdm.lock", tmp_path / "pdm.lock")
    dg = g.graph_from_lock(tmp_path / "pdm.lock", python="3.11")
    assert set(dg.graph.successors(g.ROOT)) == {"tensorflow", "tensorflow-addons"}


def test_graph_from_lock__missing_file__not_found_with_hint(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="lock file not found"):
        g.graph_from_lock(tmp_path / "pdm.lock", python="3.11")


def test_graph_from_lock_text__broken_toml__input_error_with_line() -> None:
    with pytest.raises(InputError) as err:
        g.graph_from_lock_text("[metadata]\nx = = 1\n", python="3.11", origin="m/pdm.lock")
    assert "m/pdm.lock:2" in str(err.value)


def test_to_json__small_lock__matches_golden() -> None:
    got = g.to_json(small())
    golden = GOLDEN / "small.json"
    if os.environ.get("PYREPRO_UPDATE_GOLDEN"):
        golden.write_text(json.dumps(got, indent=2) + "\n")
    assert got == json.loads(golden.read_text())


def test_depths__small_lock__root_is_level_zero() -> None:
    d = g.depths(small())
    assert d[g.ROOT] == 0 and d["tensorflow"] == 1 and d["numpy"] == 2


def test_find_cycles__cyclic_lock__reported_and_no_hang() -> None:
    text = lock_text({"a": ["b"], "b": ["c"], "c": ["a"], "d": []})
    dg = g.graph_from_lock_text(text, python="3.11")
    cycles = [p for p in dg.problems if p.kind == "cycle"]
    assert len(cycles) == 1 and "a" in cycles[0].message
    red = g.reduce(dg)  # must not raise on a cyclic graph
    assert set(red.graph.nodes) == set(dg.graph.nodes)


def test_reduce__redundant_edge__removed() -> None:
    text = lock_text({"top": ["mid", "low"], "mid": ["low"], "low": []})
    dg = g.graph_from_lock_text(text, python="3.11")
    assert dg.graph.has_edge("top", "low")
    red = g.reduce(dg)
    assert not red.graph.has_edge("top", "low") and red.graph.has_edge("mid", "low")
    assert red.node("low").version == "1.0"  # node data survives


def test_limit_depth__depth_one__only_direct_dependencies() -> None:
    dg = g.limit_depth(small(), 1)
    assert set(dg.graph.nodes) == {g.ROOT, "tensorflow", "tensorflow-addons"}


def test_highlight__diamond__all_paths_counted() -> None:
    text = lock_text({"app": ["x", "y"], "x": ["z"], "y": ["z"], "z": []})
    dg = g.graph_from_lock_text(text, python="3.11")
    h = g.highlight(dg, "z")
    assert h.path_count == 2
    assert sorted(h.paths) == [("environment", "app", "x", "z"), ("environment", "app", "y", "z")]
    assert ("x", "z") in h.edges and ("y", "z") in h.edges


def test_highlight__unknown_package__not_found() -> None:
    with pytest.raises(NotFoundError, match="not in the closure"):
        g.highlight(small(), "torch")


def test_diff__two_locks__added_removed_changed() -> None:
    a = g.graph_from_lock_text(lock_text({"p": ["q"], "q": [], "old": []}), python="3.11", title="a")
    text_b = lock_text({"p": ["q"], "q": [], "new": []}).replace(
        'name = "q"\nversion = "1.0"', 'name = "q"\nversion = "2.0"')
    b = g.graph_from_lock_text(text_b, python="3.11", title="b")
    d = g.diff(a, b)
    assert d.added == (("new", "1.0"),)
    assert d.removed == (("old", "1.0"),)
    assert d.changed == (("q", "1.0", "2.0"),)


def test_to_dot__highlight__red_path_and_labels() -> None:
    dg = small()
    text = g.to_dot(dg, g.highlight(dg, "typeguard"))
    assert "rankdir=TB" in text
    assert 'label="typeguard\n2.13.3"' in text
    assert text.count("#d62728") >= 3  # root, tensorflow-addons, typeguard (+ edges)


@pytest.mark.skipif(not have("dot"), reason="graphviz 'dot' not installed")
def test_render__svg__file_has_svg_structure(tmp_path: Path) -> None:
    dg = small()
    out = g.render(g.to_dot(dg), tmp_path / "small.svg", "svg")
    svg = out.path.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert svg.count('class="node"') - svg.count('<title>legend_') == dg.graph.number_of_nodes()  # + the legend
    assert svg.count('class="edge"') == dg.graph.number_of_edges()
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.skipif(not have("dot"), reason="graphviz 'dot' not installed")
def test_render__png__png_magic(tmp_path: Path) -> None:
    out = g.render(g.to_dot(small()), tmp_path / "small.png", "png")
    assert out.path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_render__dot_missing__dot_text_written_and_install_hint(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proc, "which", lambda _p, path=None: None)
    with pytest.raises(MissingToolError) as err:
        g.render(g.to_dot(small()), tmp_path / "small.svg", "svg")
    assert "apt-get install graphviz" in (err.value.hint or "")
    assert (tmp_path / "small.dot").read_text().startswith("// small")
    assert not (tmp_path / "small.svg").exists()


NIX_DOT = textwrap.dedent('''\
    digraph G {
    "3w1c2sfc6y0vrh4ydpg0cbqzw6l8ix6m-dep-data" [label = "dep-data", shape = box, style = filled, fillcolor = "#ffffff"];
    "3w1c2sfc6y0vrh4ydpg0cbqzw6l8ix6m-dep-data" -> "9mkypzx8sw9yzwxdb8yx2f6q4gfbfrlm-model-x-1.0" [color = "black"];
    "9mkypzx8sw9yzwxdb8yx2f6q4gfbfrlm-model-x-1.0" [label = "model-x-1.0", shape = box, style = filled, fillcolor = "#ff0000"];
    "d3wbg3k4m4jy2l1s4lrg3cs0g0sx4z5c-busybox-static" -> "9mkypzx8sw9yzwxdb8yx2f6q4gfbfrlm-model-x-1.0" [color = "red"];
    "d3wbg3k4m4jy2l1s4lrg3cs0g0sx4z5c-busybox-static" [label = "busybox-static", shape = box, style = filled, fillcolor = "#ff0000"];
    }
    ''')


def test_graph_from_nix_data__recorded_output__edges_reversed_and_versions_split() -> None:
    info = [{"path": "/nix/store/9mkypzx8sw9yzwxdb8yx2f6q4gfbfrlm-model-x-1.0", "narSize": 880,
             "references": ["/nix/store/3w1c2sfc6y0vrh4ydpg0cbqzw6l8ix6m-dep-data"]}]
    dg = g.graph_from_nix_data(NIX_DOT, info, "/nix/store/9mkypzx8sw9yzwxdb8yx2f6q4gfbfrlm-model-x-1.0")
    root = dg.root
    assert dg.node(root).name == "model-x" and dg.node(root).version == "1.0"
    succ = {dg.node(n).name for n in dg.graph.successors(root)}
    assert succ == {"dep-data", "busybox-static"}
    assert dg.node(root).size == 880


@pytest.mark.parametrize(("rest", "expected"), [
    ("python3.11-numpy-1.26.4", ("python3.11-numpy", "1.26.4")),
    ("busybox-static", ("busybox-static", "")),
    ("glibc-2.39-52", ("glibc", "2.39-52")),
])
def test_split_store_name__examples__like_parseDrvName(rest: str, expected: tuple[str, str]) -> None:
    assert g.split_store_name(rest) == expected


@pytest.mark.integration
@pytest.mark.skipif(not (have("nix-build") and Path("/bin/busybox").exists()),
                    reason="needs nix-build and /bin/busybox (Debian nix-bin, busybox-static)")
def test_graph_from_nix__real_offline_closure__known_edges(tmp_path: Path) -> None:
    bbdir = tmp_path / "bbdir" / "bin"
    bbdir.mkdir(parents=True)
    shutil.copy("/bin/busybox", bbdir / "busybox")
    (tmp_path / "b.nix").write_text(textwrap.dedent('''\
        let
          bb = "${builtins.path { path = ./bbdir; name = "busybox-static"; }}/bin/busybox";
          dep = builtins.derivation { name = "dep-data-1.0"; system = builtins.currentSystem; builder = bb;
            args = [ "sh" "-c" "echo data > $out" ]; };
        in builtins.derivation { name = "model-x-0.1"; system = builtins.currentSystem; builder = bb;
          args = [ "sh" "-c" "$bb mkdir -p $out/bin; echo \\"#!$bb sh\\" > $out/bin/run; echo ${dep} >> $out/bin/run" ];
          inherit bb; }
        '''))
    env = nix_env()
    out = proc.run(["nix-build", "--no-out-link", str(tmp_path / "b.nix")], env=env).stdout.strip()

    def runner(cmd, **kw):  # type: ignore[no-untyped-def]
        return proc.run(cmd, env=env, **kw)

    dg = g.graph_from_nix(out, runner=runner)
    names = {dg.node(n).name: n for n in dg.graph}
    assert {"model-x", "dep-data", "busybox-static"} <= set(names)
    assert dg.graph.has_edge(names["model-x"], names["dep-data"])
    assert dg.graph.has_edge(names["model-x"], names["busybox-static"])
    assert all(dg.node(n).size for n in dg.graph)
    j = g.to_json(dg)
    assert j["source"] == "nix" and j["largest"][0]["closure_bytes"] > 0


def test_select_source__auto_without_output__lock(tmp_path: Path) -> None:
    assert g.select_source("auto", None) == "lock"
    assert g.select_source("auto", str(tmp_path)) == "nix"
    with pytest.raises(NotFoundError):
        g.select_source("nix", str(tmp_path / "absent"))


@st.composite
def dags(draw: st.DrawFn) -> dict[str, list[str]]:
    n = draw(st.integers(1, 12))
    names = [f"p{i}" for i in range(n)]
    return {name: sorted(draw(st.sets(st.sampled_from(names[i + 1:]))) if i + 1 < n else set())
            for i, name in enumerate(names)}


@settings(max_examples=60, deadline=None)
@given(dags())
def test_highlight__random_dags__count_equals_enumeration(pkgs: dict[str, list[str]]) -> None:
    dg = g.graph_from_lock_text(lock_text(pkgs), python="3.11")
    target = sorted(pkgs)[-1]
    h = g.highlight(dg, target, max_paths=10**6)
    assert h.path_count == len(h.paths) == len(list(nx.all_simple_paths(dg.graph, dg.root, target)))
    j = g.to_json(g.reduce(dg))
    assert j["counts"]["nodes"] == len(pkgs) + 1


def test_cli_graph__lock_path_json__prints_contract(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from pyrepro.cli import app

    res = CliRunner().invoke(app, ["graph", str(SMALL / "pdm.lock"), "--json", "--highlight", "typeguard"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert set(data) >= {"nodes", "edges", "counts", "largest", "highlight"}
    assert data["highlight"]["path_count"] == 1


def test_cli_graph__elemnet_lock__svg_with_tensorflow(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The done-when of the graph issue: ElemNet1's environment from its committed lock, offline."""
    from pyrepro.cli import main

    out = tmp_path / "elemnet.svg"
    assert main(["graph", "elemnet", "--source", "lock", "-o", str(out)]) == 0
    svg = out.read_text()
    assert svg.lstrip().startswith(("<?xml", "<svg")) and "tensorflow" in svg and "elemnet" in svg
    capsys.readouterr()
    assert main(["graph", "elemnet", "--highlight", "keras", "--json"]) == 0
    j = json_result(capsys.readouterr().out)
    assert ["elemnet", "tensorflow", "keras"] in j["highlight"]["paths"]


def test_cli_graph__two_target_models__diff_and_highlight(capsys: pytest.CaptureFixture[str]) -> None:
    from pyrepro.cli import main

    assert main(["graph", "--diff", "elemnet", "alignn", "--json"]) == 0
    d = json_result(capsys.readouterr().out)
    added = {row[0] if isinstance(row, list) else row["name"] for row in d["added"]}
    removed = {row[0] if isinstance(row, list) else row["name"] for row in d["removed"]}
    assert {"torch", "dgl", "alignn"} <= added and "tensorflow" in removed
    assert main(["graph", "alignn", "--highlight", "torch", "--format", "json"]) == 0
    j = json.loads(capsys.readouterr().out)  # a graph format, not the --json envelope
    assert j["highlight"]["paths"] and all(p[0] == "alignn" and p[-1] == "torch" for p in j["highlight"]["paths"])


def test_cli_graph__default_picture__direct_deps_with_marks_and_legend(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from pyrepro import graph as gmod
    from pyrepro.cli import main
    from pyrepro.registry import load_registry

    REPO = Path(__file__).resolve().parent.parent

    out = tmp_path / "e.dot"
    assert main(["graph", "elemnet", "-f", "dot", "-o", str(out)]) == 0
    text = out.read_text()
    full = gmod.load_graph("elemnet", root=REPO, cache=tmp_path)
    direct = set(full.graph.successors(full.root))
    shown = capsys.readouterr().out
    # the root, each direct dependency, and one "+N packages" node per dependency that has a closure
    assert f"{1 + len(direct) + sum(1 for d in direct if list(full.graph.successors(d)))} nodes" in shown
    closure = len(nx.descendants(full.graph, "tensorflow"))  # of the committed lock
    assert "cluster_legend" in text and f"+{closure} packages" in text  # tensorflow's closure, in one node
    spec = load_registry(REPO / "models").get("elemnet")
    marked = gmod.mark_model(full, spec)
    assert "imported" in marked.node("tensorflow").marks and "pinned" in marked.node("tensorflow").marks
    assert "native" in marked.node("numpy").marks and "native" not in marked.node("tqdm").marks
    assert main(["graph", "elemnet", "-f", "dot", "-o", str(tmp_path / "full.dot"), "--full"]) == 0
    assert f"{full.graph.number_of_nodes()} nodes" in capsys.readouterr().out


def test_cli_graph__diff_with_output__coloured_picture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pyrepro import graph as gmod
    from pyrepro.cli import main

    out = tmp_path / "d.dot"
    assert main(["graph", "--diff", "cfid", "matminer_rf", "-f", "dot", "-o", str(out)]) == 0
    text = out.read_text()
    assert "removed" in capsys.readouterr().out
    assert gmod.DIFF_COLOURS["removed"] in text and "lightgbm" in text  # cfid's lightgbm is gone
    assert gmod.DIFF_COLOURS["added"] in text and "pymatgen" in text and "cluster_legend" in text


def test_graph_cli__output_suffix__decides_the_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`-o closure.png` writes a PNG (it wrote an SVG under a .png name); a suffix that
    contradicts --format is a usage error."""
    import shutil as _sh

    from pyrepro.cli import main

    if _sh.which("dot") is None:
        pytest.skip("graphviz dot not installed")
    lock = Path(__file__).resolve().parent.parent / "models" / "cfid" / "pdm.lock"
    assert main(["graph", str(lock), "-o", str(tmp_path / "c.png")]) == 0
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["graph", str(lock), "-o", str(tmp_path / "c.svg")]) == 0
    assert b"<svg" in (tmp_path / "c.svg").read_bytes()[:400]
    assert main(["graph", str(lock), "-o", str(tmp_path / "d.png"), "--format", "svg"]) == 2
    assert "another format" in capsys.readouterr().err and not (tmp_path / "d.png").exists()
