"""The flake evaluated against the REAL dream2nix modules (issue 13), offline.

Needs the fetched sources named by $PYREPRO_NIX_SOURCES (see tests/nixeval/harness.py and
docs/nix.md); skips cleanly without them, so CI (no GitHub) runs only the stub and busybox tests.
What passing proves: every model, on every system its lock was made for, instantiates (every
locked package's output path, public.pyEnv, the Python environment, the wrapped package, its app
and both checks), and so do apps.exfoliation, apps.pyrepro, the dev shell and pyrepro itself.
It does not prove that anything builds.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from pyrepro.cycles import unbroken_cycles
from tests.nixeval import harness

SRC = harness.sources_dir()
pytestmark = [
    pytest.mark.skipif(SRC is None, reason=f"${harness.SOURCES_VAR} not set: no fetched dream2nix, "
                       "pyproject.nix and nixpkgs.lib (python -m tests.nixeval.harness sources DEST)"),
    pytest.mark.skipif(shutil.which("nix") is None, reason="nix not installed"),
]
ROOT = harness.ROOT
MODELS = sorted(p.parent.name for p in (ROOT / "models").glob("*/model.toml"))
STORE_PREFIX = len("/nix/store/") + 32 + 1


def _names(paths: str) -> list[str]:
    return [p[STORE_PREFIX:] for p in paths.split()]


def _lock_systems(name: str) -> list[str]:
    lock = tomllib.loads((ROOT / "models" / name / "pdm.lock").read_text())
    plats = [t["platform"] for t in lock.get("metadata", {}).get("targets", [])]
    if not plats:
        return ["aarch64-linux", "x86_64-linux"]
    return sorted({f"{arch}-linux" for arch in ("x86_64", "aarch64") for p in plats if p.endswith(arch)})


def _applicable(model: str, system: str) -> set[str]:
    from pyrepro.graph import graph_from_lock
    from pyrepro.registry import load_registry

    spec = load_registry(ROOT / "models").get(model)
    dg = graph_from_lock(spec.dir / "pdm.lock", python=spec.python, pyproject=spec.dir / "pyproject.toml",
                         platform="linux-" + system.split("-")[0])
    import networkx as nx

    return {dg.node(n).name for n in nx.descendants(dg.graph, dg.root)}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> harness.World:
    assert SRC is not None
    assert harness.check_sources(ROOT, SRC) == []
    return harness.prepare(ROOT, SRC, tmp_path_factory.mktemp("nixeval"))


@pytest.fixture(scope="module")
def evaluated(world: harness.World) -> tuple[dict, list[harness.Result], dict]:
    systems, results, shared = harness.run(world)
    print(harness.summary(systems, results, shared))
    return systems, results, shared


def test_sources__nar_hashes__match_flake_lock() -> None:
    assert SRC is not None
    assert harness.check_sources(ROOT, SRC) == []


def test_every_model__every_locked_system__evaluates(evaluated: tuple) -> None:
    systems, results, shared = evaluated
    failed = [(r.system, r.model, str(r.detail).splitlines()[:3]) for r in results if not r.ok]
    assert failed == []
    # the flake offers each model exactly on the systems its lock was made for (kgcnn: x86_64 only)
    offered = {m: sorted(s for s, names in systems["models"].items() if m in names) for m in MODELS}
    assert offered == {m: _lock_systems(m) for m in MODELS}
    assert set(systems["packages"]) == set(systems["apps"]) == set(systems["checks"]) == set(systems["models"])
    for r in results:
        assert isinstance(r.detail, dict)
        # every locked package that applies on this system got an output path: the same set
        # pyrepro's own marker evaluation (pyrepro graph) finds
        assert set(r.detail["locked"]) == _applicable(r.model, r.system), (r.system, r.model)
        assert r.detail["package"].endswith(".drv") and r.detail["pyEnv"].endswith(".drv")
        assert sorted(r.detail["checks"]) == [f"{r.model}-import", f"{r.model}-test"]
        assert r.detail["app"].endswith(f"/bin/{r.model}")


def test_shared_outputs__every_system__evaluate(evaluated: tuple) -> None:
    _, results, shared = evaluated
    assert {s: ok for s, (ok, _) in shared.items()} == {"aarch64-linux": True, "x86_64-linux": True}
    for system, (_, val) in shared.items():
        offered = {r.model for r in results if r.system == system}
        assert sorted(val["checks"]) == sorted(f"{m}-{k}" for m in offered for k in ("import", "test"))


@pytest.mark.parametrize("model", ["alignn", "matformer", "kgcnn_cgcnn", "elemnet"])
def test_locked_packages__derivation_inputs__follow_the_overrides(world: harness.World, model: str) -> None:
    ok, pkgs = harness.evaluate(world, f"inspect.x86_64-linux.{model}")
    assert ok, pkgs
    assert isinstance(pkgs, dict)
    lock = tomllib.loads((ROOT / "models" / model / "pdm.lock").read_text())
    for name, a in pkgs.items():
        native, build = _names(a["nativeBuildInputs"]), _names(a["buildInputs"])
        # manylinux host libraries and zlib for autoPatchelf, for every package
        assert {"zlib", "glibc", "gcc-lib", "libX11", "libXext", "libXrender"} <= set(build), name
        # the driver runpath hook runs after autoPatchelf (first occurrence decides the order)
        if "autoAddDriverRunpath" in native:
            assert native.index("autoAddDriverRunpath") > native.index("autoPatchelfHook"), (name, native)
    gpu = {"torch", "triton", "tensorflow"} & set(pkgs)
    assert all("autoAddDriverRunpath" in _names(pkgs[n]["nativeBuildInputs"]) for n in gpu)
    # sdists that import torch in setup.py get the locked torch at build time
    for n in ("torch-scatter", "torch-sparse"):
        if n in pkgs:
            assert any(x.startswith("python3.10-torch-") for x in _names(pkgs[n]["nativeBuildInputs"]))
    # no package propagates a package that reaches it again (the lock cycles are cut)
    assert unbroken_cycles(lock) == []
    if "triton" in pkgs:
        assert not any("-torch-" in x for x in _names(pkgs["triton"]["propagatedBuildInputs"]))
        assert "torch" in pkgs["triton"]["pythonRemoveDeps"].split()
    if "pymatgen" in pkgs:
        prop = _names(pkgs["pymatgen"]["propagatedBuildInputs"])
        assert not any("-mp-api-" in x or "-emmet-core-" in x for x in prop)
        assert "mp-api" in pkgs["pymatgen"]["pythonRemoveDeps"].split()
        assert any("-pymatgen-" in x for x in _names(pkgs["emmet-core"]["propagatedBuildInputs"]))


def test_stand_in__lock_cycle_without_break__is_infinite_recursion(tmp_path: Path) -> None:
    """The stand-in is faithful where it matters: without the reviewed breaks the kgcnn lock
    cycle (pymatgen -> mp-api -> pymatgen) stops evaluation, as it would with nixpkgs."""
    assert SRC is not None
    w = harness.prepare(ROOT, SRC, tmp_path / "w")
    (w.project / "pyrepro" / "data" / "cycle-breaks.toml").write_text("# no reviewed breaks\n")
    ok, err = harness.evaluate(w, "models.x86_64-linux.kgcnn_cgcnn")
    assert not ok and "infinite recursion" in str(err)


@pytest.mark.integration
def test_nix_flake_check__no_build__passes(world: harness.World) -> None:
    """`nix flake check --no-build` on the real flake: every output of every system evaluates."""
    from pyrepro import proc

    cmd = ["nix", "flake", "check", "--no-build", f"path:{world.project}", *world.overrides(project=True)]
    done = proc.run(cmd, check=False, env=harness.nix_env())
    assert done.returncode == 0, done.stderr[-3000:]
