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
