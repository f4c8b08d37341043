"""Registry, generated files (golden), generate --check, init, malformed model.toml."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pyrepro import generate
from pyrepro.cli import main
from pyrepro.errors import InputError, IntegrityError, NotFoundError
from pyrepro.init import init_model
from pyrepro.registry import load_registry, parse_model

DEMO = Path(__file__).parent / "scenarios" / "models"
GOLDEN = Path(__file__).parent / "golden" / "generate"
REPO = Path(__file__).resolve().parent.parent


def test_dependencies__scanned_extra_remove_pins__combined() -> None:
    spec = load_registry(DEMO).get("demo")
    # kgcnn removed, gitonly is an extra source (not PyPI), numpy pinned, pandas extra
    assert generate.dependencies(spec) == ["numpy<2", "pandas>=1", "scikit-learn"]


@pytest.mark.parametrize("kind", ["pyproject.toml", "default.nix"])
def test_render__demo__matches_golden(kind: str) -> None:
    spec = load_registry(DEMO).get("demo")
    text = generate.render_pyproject(spec) if kind == "pyproject.toml" else generate.render_nix(spec)
    assert text == (GOLDEN / f"demo.{kind}").read_text()


def test_generate__check_after_hand_edit__fails_listing_file(tmp_path: Path) -> None:
    models = tmp_path / "models"
    shutil.copytree(DEMO, models)
    specs = list(load_registry(models))
    generate.generate(specs)
    assert {r.status for r in generate.generate(specs, check=True)} == {"unchanged"}
    py = models / "demo" / "pyproject.toml"
    py.write_text(py.read_text() + "# hand edit\n")
    with pytest.raises(IntegrityError, match=r"pyproject\.toml"):
        generate.generate(specs, check=True)
    assert py.read_text().endswith("# hand edit\n")  # check mode writes nothing


def test_generate__committed_models__up_to_date() -> None:
    generate.generate(list(load_registry(REPO / "models")), check=True)


def test_registry__fifteen_models_with_pins_and_aliases() -> None:
    reg = load_registry(REPO / "models")
    assert len(reg) == 15
    assert reg.get("ElemNet1").name == "elemnet"
    assert reg.get("alignn_model").name == "alignn"
    assert reg.get("elemnet").entry == ("ipython", "run.py", "--")  # ipython reads flags before "--" itself
    assert sorted(reg.get("elemnet").benchmarks) == ["mag2d_chem_magnetic_moment", "ssub_formula_energy", "supercon_chem_Tc"]
    assert len(reg.for_benchmark("dft_3d_exfoliation_energy")) == 14
    assert all(p.reason for s in reg for p in s.dependencies.pins)


def test_registry__unknown_model__not_found_with_suggestion() -> None:
    with pytest.raises(NotFoundError) as e:
        load_registry(REPO / "models").get("cfdi")
    assert "cfid" in (e.value.hint or "")


@pytest.mark.parametrize(("edit", "needle"), [
    (("gpu = \"optional\"", "gpu = \"sometimes\""), "[gpu]"),
    (("python = \"3.10\"", "python = 3.10"), "[python]"),
    (("commit = \"57afc55f94c8a6f4562f73a3173968cd4b2f83b1\"", "commit = \"57afc55\""), "[source.commit]"),
    (("[entry]", "[entry]\ncmd = 1"), "[entry.cmd]"),
    (("spec = \"<2\"", "spec = \"<2\"\nreasn = \"x\""), "reasn"),
    (("schema = 1", "schema = 1\n[broken"), "model.toml:"),
])
def test_parse_model__malformed__names_file_key_and_fix(tmp_path: Path, edit: tuple[str, str], needle: str) -> None:
    d = tmp_path / "demo"
    d.mkdir()
    text = (DEMO / "demo" / "model.toml").read_text().replace(*edit, 1)
    (d / "model.toml").write_text(text)
    with pytest.raises(InputError) as e:
        parse_model(d / "model.toml")
    assert needle in str(e.value) and "model.toml" in str(e.value)


def test_init__example_contribution__draft_parses_and_generates(tmp_path: Path) -> None:
    res = init_model(REPO / "examples" / "contribution", name="example", models_dir=tmp_path, online=False)
    spec = parse_model(tmp_path / "example" / "model.toml")
    assert spec.dependencies.scanned == ("jarvis-tools", "lightgbm", "matminer", "matplotlib", "numpy", "scikit-learn")
    # torch: an optional import that metadata.json names; scipy is named there too but never imported, and
    # the free-text "software_used" line only confirms imports, it never adds a dependency
    assert spec.dependencies.extra == ("torch",)
    assert spec.submitted is not None and spec.submitted.isoformat() == "2023-01-14"
    assert {p.name for p in res.written} == {"model.toml", "pyproject.toml", "default.nix"}
    assert any("draft" in w for w in res.warnings)
    with pytest.raises(Exception, match="already exists"):
        init_model(REPO / "examples" / "contribution", name="example", models_dir=tmp_path, online=False)


def test_init_cli__bad_name__usage_error(tmp_path: Path) -> None:
    assert main(["init", str(REPO / "examples" / "contribution"), "--name", "Bad Name", "--models-dir", str(tmp_path), "--offline"]) == 2


@pytest.mark.upstream
def test_init__upstream_folder__real_pin(upstream: Path, tmp_path: Path) -> None:
    folder = upstream / "jarvis_leaderboard" / "jarvis_leaderboard" / "contributions" / "kgcnn_megnet"
    init_model(folder, name="megnet2", models_dir=tmp_path, online=False, mirror=upstream)
    spec = parse_model(tmp_path / "megnet2" / "model.toml")
    ref = load_registry(REPO / "models").get("kgcnn_megnet").source
    assert spec.source.tree == ref.tree
    assert (spec.source.nar_hash, spec.source.benchmarks_nar_hash) == (ref.nar_hash, ref.benchmarks_nar_hash)
    assert spec.source.commit.startswith("57afc55f")


def test_init__matbench_style_folder__marked_draft_pin_and_declared_pins(tmp_path: Path) -> None:
    folder = Path(__file__).parent / "scenarios" / "scan" / "matbench_info" / "input"
    res = init_model(folder, name="mb", models_dir=tmp_path, online=False)
    spec = parse_model(tmp_path / "mb" / "model.toml")
    assert spec.source.repository == "" and spec.source.commit == "0" * 40  # marked draft, not invented
    from pyrepro.sources import git_tree_id
    assert spec.source.tree == git_tree_id(folder)
    assert "scikit-learn" in spec.dependencies.scanned
    assert any("not in a pinned mirror" in w for w in res.warnings)
    assert (tmp_path / "mb" / "model.toml").read_text().startswith("# Draft written by 'pyrepro init'")
    generate.generate([spec], check=True)  # the generated files are consistent with the draft


def test_init__existing_model__refused_then_force_overwrites(tmp_path: Path) -> None:
    folder = REPO / "examples" / "contribution"
    init_model(folder, name="example", models_dir=tmp_path, online=False)
    marker = tmp_path / "example" / "hand-edit.txt"
    marker.write_text("x")
    assert main(["init", str(folder), "--name", "example", "--models-dir", str(tmp_path), "--offline"]) == 2
    assert marker.exists()
    init_model(folder, name="example", models_dir=tmp_path, online=False, force=True)
    assert not marker.exists() and (tmp_path / "example" / "model.toml").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp leftovers


def test_generate_cli__check_with_drift__exit_5_lists_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "proj"
    (root / "models").mkdir(parents=True)
    shutil.copytree(DEMO / "demo", root / "models" / "demo")
    monkeypatch.setenv("PYREPRO_ROOT", str(root))
    assert main(["generate"]) == 0
    assert main(["generate", "--check"]) == 0
    nix = root / "models" / "demo" / "default.nix"
    nix.write_text(nix.read_text().replace("python310", "python311"))
    (root / "models" / "demo" / "pyproject.toml").unlink()
    capsys.readouterr()
    assert main(["generate", "--check"]) == 5
    err = capsys.readouterr().err
    assert "default.nix" in err and "pyproject.toml" in err
    assert not (root / "models" / "demo" / "pyproject.toml").exists()
