"""nix/registry.nix and pyrepro.nixeval against pyrepro's Python registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyrepro import nixeval
from pyrepro.registry import load_registry
from tests.conftest import have

needs_nix = pytest.mark.skipif(not have("nix-instantiate"), reason="nix-instantiate is not installed")

MODEL = """\
schema = 1
name = "{name}"
upstream_name = "{upstream}"
aliases = ["{upstream}"]
title = "fixture model {name}"
python = "3.10"
gpu = "{gpu}"
benchmarks = ["dft_3d_exfoliation_energy"]
submitted = "2023-06-01"

[source]
repository = "https://github.com/usnistgov/jarvis_leaderboard"
commit = "{commit}"
subdir = "jarvis_leaderboard/contributions/{upstream}"
tree = "{tree}"

[entry]
command = ["python", "run.py"]

[test]
args = ["--test"]
"""


def _models(tmp_path: Path) -> Path:
    d = tmp_path / "models"
    for name, up, gpu in [("alpha", "Alpha_1", "none"), ("beta", "Beta_2", "optional")]:
        (d / name).mkdir(parents=True)
        (d / name / "model.toml").write_text(
            MODEL.format(name=name, upstream=up, gpu=gpu, commit="a" * 40, tree="b" * 40))
    (d / "not-a-model").mkdir()
    return d


@needs_nix
def test_eval_registry__fixture_models__same_set_and_attributes_as_python(tmp_path: Path, repo_root: Path) -> None:
    models = _models(tmp_path)
    py = load_registry(models)
    nix = nixeval.eval_registry(repo_root, models_dir=models)
    assert sorted(nix) == py.names() == ["alpha", "beta"]
    for spec in py:
        got = nix[spec.name]
        assert got["name"] == spec.name
        assert got["upstream_name"] == spec.upstream_name
        assert got["gpu"] == spec.gpu
        assert tuple(got["benchmarks"]) == spec.benchmarks
        assert got["source"]["tree"] == spec.source.tree
        assert tuple(got["entry"]["command"]) == spec.entry


@needs_nix
def test_eval_registry__real_models__same_names_as_python(repo_root: Path) -> None:
    models = repo_root / "models"
    if not any(models.glob("*/model.toml")):
        pytest.skip("models/ has no entries yet")
    nix = nixeval.eval_registry(repo_root)
    assert sorted(nix) == load_registry(models).names()


@needs_nix
def test_parse_check__every_nix_file__parses(repo_root: Path) -> None:
    files = [p for p in repo_root.rglob("*.nix") if ".venv" not in p.parts]
    assert files, "no .nix files found"
    assert nixeval.parse_check(files) == {}


@needs_nix
def test_parse_check__broken_file__reports_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.nix"
    bad.write_text("{ a = ; }")
    assert bad in nixeval.parse_check([bad])


@needs_nix
def test_default_nix_template__rendered__parses_and_names_model(repo_root: Path, tmp_path: Path) -> None:
    import jinja2
    text = (repo_root / "pyrepro" / "templates" / "default.nix.j2").read_text()
    out = jinja2.Template(text, keep_trailing_newline=True).render(
        name="elemnet", python_attr="python310", upstream_name="ElemNet1", model_toml="./model.toml")
    f = tmp_path / "default.nix"
    f.write_text(out)
    assert nixeval.parse_check([f]) == {}
    assert 'name = "elemnet";' in out and 'pythonAttr = "python310";' in out


@needs_nix
def test_model_nix__stub_pkgs__fetches_patches_and_wrappers_follow_model_toml(repo_root: Path) -> None:
    """nix/model.nix evaluated for every model with builtins-only stubs of nixpkgs and dream2nix."""
    import json

    from pyrepro import proc
    from pyrepro.sources import benchmark_files

    done = proc.run(["nix-instantiate", "--eval", "--strict", "--json",
                     str(repo_root / "tests" / "nixflake" / "stub-model.nix")], env=nixeval._env({}))
    got = json.loads(done.stdout)
    reg = load_registry(repo_root / "models")
    assert sorted(got) == reg.names()
    for spec in reg:
        g, parts = got[spec.name], got[spec.name]["parts"]
        up, bench = parts["upstream"], parts["benchmarksSrc"]
        assert (up["url"], up["rev"], up["sparseCheckout"], up["hash"]) == (
            spec.source.repository, spec.source.commit, [spec.source.subdir], spec.source.nar_hash)
        assert "nonConeMode" not in up and bench["nonConeMode"] is True
        assert bench["hash"] == spec.source.benchmarks_nar_hash
        assert bench["sparseCheckout"] == list(benchmark_files(parts["benchmarksSubdir"], spec.benchmarks))
        expected = sorted(p.name for p in (repo_root / "patches" / spec.name).glob("*.patch"))
        assert parts["patches"] == expected
        script = parts["src"]["script"]
        positions = [script.index(f"-{p}") for p in expected]
        assert positions == sorted(positions) and script.count("patch -p1 --batch --fuzz=0 <") == len(expected)
        assert f"/{spec.source.subdir} $out" in script
        for e in spec.extra_sources:
            if e.install == "tree":
                assert f"./{e.name}\n" in script
        pkgs_extra = [e for e in spec.extra_sources if e.install == "package"]
        penv = parts["pythonEnv"]
        if pkgs_extra:
            built = [p for p in penv["paths"] if p["stub"] == "buildPythonPackage"]
            assert [(b["pname"], b["src"]["rev"]) for b in built] == [(e.name, e.commit) for e in pkgs_extra]
            # the recorded extra-source hash is the one fetched (never lib.fakeHash: every one has a hash)
            assert [b["src"]["hash"] for b in built] == [e.hash for e in pkgs_extra]
            penv = penv["paths"][0]
        assert all(e.hash and e.hash.startswith("sha256-") for e in spec.extra_sources), spec.name
        # the generated default.nix is data only; model.nix adds pyrepro's module from its own folder
        assert penv["modules"][0].endswith(f"models/{spec.name}/default.nix")
        assert penv["modules"][1] == str(repo_root / "nix" / "model-module.nix")
        assert g["generatedKeys"] == ["pyrepro"]
        wrapper = parts["unwrapped"]["text"]
        cmd = " ".join(f"'{c}'" for c in spec.entry)
        assert f"\n{cmd} \"$@\" &\n" in wrapper and "set -- --output-dir" in wrapper and "mktemp -d" in wrapper
        assert "trap 'rm -rf \"$work\"' EXIT" in wrapper
        assert f"/{parts['benchmarksSubdir']}" in wrapper
        mod = g["module"]
        assert mod["imports"] == ["python-pdm"] and mod["name"] == f"pyrepro-model-{spec.name}"
        assert mod["lockfile"] == str(repo_root / "models" / spec.name / "pdm.lock")
        assert mod["pyproject"] == str(repo_root / "models" / spec.name / "pyproject.toml")
        assert mod["python"] == "python" + spec.python.replace(".", "")
        assert mod["options"] == ["modelToml", "name", "pythonAttr", "upstreamName"]
        # every model, gpu = "none" too, goes through the GPU wrapper (one policy with the local backend)
        assert f'PYREPRO_GPU_NEED="{spec.gpu}"' in g["text"] and "gpu-wrapper.sh" in g["text"]


@needs_nix
def test_eval_registry__real_models__same_attributes_as_python(repo_root: Path) -> None:
    nix = nixeval.eval_registry(repo_root)
    for spec in load_registry(repo_root / "models"):
        got = nix[spec.name]
        assert (got["name"], got["upstream_name"], got["python"], got["gpu"]) == (
            spec.name, spec.upstream_name, spec.python, spec.gpu)
        assert tuple(got["benchmarks"]) == spec.benchmarks and tuple(got["entry"]["command"]) == spec.entry
        assert got["source"] == {k: v for k, v in vars(spec.source).items() if v is not None}
        assert [e["commit"] for e in got.get("extra_sources", [])] == [e.commit for e in spec.extra_sources]
        assert got.get("submitted") == (spec.submitted.isoformat() if spec.submitted else None)


@needs_nix
def test_flake_outputs__stub_inputs__every_output_for_both_systems(repo_root: Path) -> None:
    """flake.nix's outputs function with stub nixpkgs/dream2nix (tests/nixflake/stubs.nix)."""
    import json

    from pyrepro import proc

    done = proc.run(["nix-instantiate", "--eval", "--strict", "--json",
                     str(repo_root / "tests" / "nixflake" / "stub-flake.nix")], env=nixeval._env({}))
    got = json.loads(done.stdout)
    names = load_registry(repo_root / "models").names()
    assert got["inputs"] == {"dream2nix": {"url": "github:nix-community/dream2nix"},
                             "nixpkgs": {"follows": "dream2nix/nixpkgs"}}
    assert got["systems"] == [["aarch64-linux", "x86_64-linux"]] * 5
    assert got["models"] == names
    # aarch64 offers only models whose pdm.lock was made for it (nix/systems.nix; kgcnn: x86_64 only)
    import tomllib
    aarch = [n for n in names if any(t["platform"].endswith("aarch64") for t in tomllib.loads(
        (repo_root / "models" / n / "pdm.lock").read_text())["metadata"].get("targets", []))]
    assert got["modelsAarch64"] == aarch and "kgcnn_cgcnn" not in aarch and "elemnet" in aarch
    assert got["packages"] == sorted([*names, "pyrepro"])
    assert sorted(got["apps"]) == sorted([*names, "exfoliation", "pyrepro"])
    assert all(a["type"] == "app" for a in got["apps"].values())
    reg = load_registry(repo_root / "models")
    from packaging.requirements import Requirement

    from pyrepro.generate import dependencies
    for n in names:
        assert got["apps"][n]["program"].endswith(f"/bin/{n}")
        imp = got["checks"][f"{n}-import"]
        assert f"test -x /nix/store/stub-script-{n}/bin/{n}\n" in imp
        assert ("/stub-pyEnv/bin/python " in imp) != ("/stub-symlinkJoin/bin/python " in imp)
        dists = [Requirement(r).name for r in dependencies(reg.get(n))]
        dists += [e.name for e in reg.get(n).extra_sources if e.install == "package"]
        assert imp.split("import-check.py ")[1].split("\n")[0].split() == dists
        test = got["checks"][f"{n}-test"]
        assert "pyrepro data fixture --out $TMPDIR/fixture" in test
        assert f"/bin/{n} --test\n" in test and "PYREPRO_DATA_KIND=fixture" in test and "*.csv.zip" in test
    assert sorted(got["checks"]) == sorted(f"{n}-{k}" for n in names for k in ("import", "test"))
    assert got["pyrepro"]["pname"] == "pyrepro" and got["pyrepro"]["pythonRemoveDeps"] == ["pdm", "hishel"]
    assert got["devShell"] == ["python311", "pdm", "buildPythonApplication", "git"]


def test_import_check_script__installed_missing_and_broken__exit_code_and_report(repo_root: Path,
                                                                                  tmp_path: Path) -> None:
    import os
    import sys

    from pyrepro import proc

    script = str(repo_root / "nix" / "import-check.py")
    ok = proc.run([sys.executable, script, "tomlkit", "Jinja2"], check=False)
    assert ok.returncode == 0, ok.stdout
    assert "0 failures" in ok.stdout and "of 2 distributions" in ok.stdout
    bad = proc.run([sys.executable, script, "tomlkit", "no-such-dist-xyz"], check=False)
    assert bad.returncode == 1
    assert "FAILED no-such-dist-xyz: not installed" in bad.stdout
    site = tmp_path / "site"
    (site / "broken_pkg-1.0.dist-info").mkdir(parents=True)
    (site / "broken_pkg-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-pkg\nVersion: 1.0\n")
    (site / "broken_pkg-1.0.dist-info" / "top_level.txt").write_text("brokenmod\n")
    (site / "brokenmod.py").write_text("raise ImportError('needs libfoo.so')\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    broken = proc.run([sys.executable, script, "broken_pkg"], check=False, env=env)
    assert broken.returncode == 1
    assert "FAILED brokenmod (broken-pkg): ImportError: needs libfoo.so" in broken.stdout


@needs_nix
def test_pdm_locks__nix_fromtoml__every_file_has_file_and_hash(repo_root: Path) -> None:
    """What dream2nix's python-pdm reads from pdm.lock: package[].files[].{file,hash} (no static URLs)."""
    import json

    from pyrepro import proc

    locks = sorted((repo_root / "models").glob("*/pdm.lock"))
    if not locks:
        pytest.skip("no pdm.lock committed yet")
    expr = """
      { lockPath }: let
        lock = builtins.fromTOML (builtins.readFile lockPath);
        bad = builtins.concatMap (p: builtins.filter (f: !(f ? file && f ? hash)) (p.files or [ ])) lock.package;
        noFiles = builtins.filter (p: (p.files or [ ]) == [ ]) lock.package;
      in { packages = builtins.length lock.package; bad = builtins.length bad; noFiles = map (p: p.name) noFiles; }
    """
    for lock in locks:
        done = proc.run(["nix-instantiate", "--eval", "--strict", "--json", "--expr", expr,
                         "--argstr", "lockPath", str(lock)], env=nixeval._env({}))
        got = json.loads(done.stdout)
        assert got["packages"] > 0 and got["bad"] == 0 and got["noFiles"] == [], (lock, got)
