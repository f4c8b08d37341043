"""The flake evaluated against the REAL dream2nix modules (issue 13), offline.

Needs the fetched sources: $PYREPRO_NIX_SOURCES, else ../shared/nix-sources beside the checkout
(CI's read-only offline copy; see tests/nixeval/harness.py and docs/nix.md). Skips, with the
reason, only when neither is there; a $PYREPRO_NIX_SOURCES that names an incomplete folder fails.
What passing proves: every model, on every system its lock was made for, instantiates (every
locked package's output path, public.pyEnv, the Python environment, the wrapped package, its app
and both checks), and so do apps.exfoliation, apps.pyrepro, the dev shell and pyrepro itself.
It does not prove that anything builds.
"""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from pathlib import Path

import pytest

from pyrepro.cycles import unbroken_cycles
from tests.nixeval import harness

SRC, WHY = harness.find_sources()
NAMED = bool(os.environ.get(harness.SOURCES_VAR))  # named by the user: never skipped
pytestmark = [
    pytest.mark.skipif(SRC is None and not NAMED, reason=WHY),
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


def _tree_state(root: Path) -> list[tuple[str, int, int, int]]:
    """Every file and folder under ``root`` with its size, mode and modification time."""
    out = []
    for d, dirs, files in os.walk(root):
        for n in sorted(dirs) + sorted(files):
            st = os.lstat(os.path.join(d, n))
            out.append((os.path.relpath(os.path.join(d, n), root), st.st_size, st.st_mode, st.st_mtime_ns))
    return sorted(out)


@pytest.fixture(scope="module")
def sources_before() -> list[tuple[str, int, int, int]]:
    assert SRC is not None, WHY
    return _tree_state(SRC)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, sources_before: list) -> harness.World:
    assert SRC is not None, WHY
    return harness.prepare(ROOT, SRC, tmp_path_factory.mktemp("nixeval"))  # checks the NAR hashes


@pytest.fixture(scope="module")
def evaluated(world: harness.World) -> tuple[dict, list[harness.Result], dict]:
    systems, results, shared = harness.run(world)
    print(harness.summary(systems, results, shared))
    return systems, results, shared


def test_sources__nar_hashes__match_flake_lock(world: harness.World) -> None:
    """The evaluated copy hashes exactly as flake.lock pins (symbolic links a copy wrote out as
    text files restored, and said; nothing else may differ)."""
    assert SRC is not None, WHY
    assert harness.check_sources(ROOT, world.src) == []
    for note in world.notes:
        assert "symbolic links stored as text files" in note and "equals flake.lock's" in note, note
    print("\n".join(world.notes))


def test_sources__one_byte_changed__refused_loudly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The check is real: a copy of the sources with one file changed is refused, by name."""
    assert SRC is not None, WHY
    copy = tmp_path / "src"
    for n in harness.SOURCE_FOLDERS:
        harness._copy_writable(SRC / n, copy / n)
    readme = copy / "pyproject.nix" / "README.md"
    readme.write_text(readme.read_text() + " ")
    _, problems, _ = harness.stage_sources(ROOT, copy, tmp_path / "staged")
    assert len(problems) == 1 and problems[0].startswith(f"{copy / 'pyproject.nix'}: NAR hash sha256-"), problems
    with pytest.raises(harness.SourcesMismatch, match=r"pyproject\.nix: NAR hash"):
        harness.prepare(ROOT, copy, tmp_path / "w")
    monkeypatch.setenv(harness.SOURCES_VAR, str(copy))
    assert harness.main(["run", "--work", str(tmp_path / "w2")]) == 2
    assert "the sources are not the ones flake.lock pins" in capsys.readouterr().err


def _flattened_case(tmp_path: Path, *, decoy: bool) -> tuple[Path, Path]:
    """A root with a flake.lock pinning trees that hold a symbolic link, and a copy of the trees
    with the link written out as a text file (what CI's copy of ../shared does); ``decoy``: the
    trees also hold a real file whose content looks like a link."""
    orig, flat = tmp_path / "orig", tmp_path / "flat"
    for base in (orig, flat):
        for n in harness.SOURCE_FOLDERS:
            (base / n / "docs").mkdir(parents=True)
            (base / n / "README.md").write_text(f"# {n}\n")
            if decoy:
                (base / n / "docs" / "plain.txt").write_text("../README.md")
        for n in harness.SOURCE_FOLDERS:
            if base == orig:
                (base / n / "docs" / "index.md").symlink_to("../README.md")
            else:
                (base / n / "docs" / "index.md").write_text("../README.md")
    lock = {"nodes": {node: {"locked": {"narHash": harness.nar_hash(orig / folder), "rev": "r" * 40}}
                      for node, (folder, _) in harness.LOCKED.items()}}
    root = tmp_path / "root"
    root.mkdir()
    (root / "flake.lock").write_text(json.dumps(lock))
    assert len(harness.check_sources(root, flat)) == 2  # as copied, neither hashes as locked
    return root, flat


def test_stage_sources__flattened_symlink__restored_because_the_hash_then_matches(tmp_path: Path) -> None:
    root, flat = _flattened_case(tmp_path, decoy=False)
    staged, problems, notes = harness.stage_sources(root, flat, tmp_path / "staged")
    assert problems == [] and len(notes) == 2 and "docs/index.md" in notes[0]
    assert harness.check_sources(root, staged) == []
    assert (staged / "dream2nix" / "docs" / "index.md").is_symlink()
    assert not (flat / "dream2nix" / "docs" / "index.md").is_symlink()  # the sources are only read


def test_stage_sources__restoring_does_not_give_the_locked_hash__refused(tmp_path: Path) -> None:
    root, flat = _flattened_case(tmp_path, decoy=True)
    _, problems, notes = harness.stage_sources(root, flat, tmp_path / "staged")
    assert notes == [] and len(problems) == 2
    assert "with 2 text files restored as symbolic links" in problems[0]


def test_find_sources__env_wins__else_shared_beside_checkout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(harness.SOURCES_VAR, str(tmp_path))
    got, why = harness.find_sources()
    assert got is None and "has no dream2nix/, pyproject.nix/, nixpkgs.lib/" in why
    for n in harness.SOURCE_FOLDERS:
        (tmp_path / n).mkdir()
    assert harness.find_sources() == (tmp_path.resolve(), f"${harness.SOURCES_VAR}")
    monkeypatch.delenv(harness.SOURCES_VAR)
    default = harness.default_sources()
    assert default == (ROOT.parent / "shared" / "nix-sources").resolve()
    assert harness.find_sources()[0] == (default if default.is_dir() else None)


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
    assert SRC is not None, WHY
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


def test_sources__left_unchanged_by_the_evaluation(evaluated: tuple, sources_before: list) -> None:
    """The harness only reads the sources (CI's copy is read-only; root could write anyway)."""
    assert SRC is not None, WHY
    assert _tree_state(SRC) == sources_before
