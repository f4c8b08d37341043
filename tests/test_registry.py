"""The model registry: the 15 committed models, lookups, and named errors for bad model.toml files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pyrepro.cli import main
from pyrepro.errors import InputError, NotFoundError
from pyrepro.registry import load_registry, parse_model
from tests.fakes import json_result

REPO = Path(__file__).resolve().parent.parent
DEMO = Path(__file__).parent / "scenarios" / "models"

UPSTREAM = {
    "alignn": "alignn_model", "cfid": "cfid", "cfid_chem": "cfid_chem", "cgcnn": "cgcnn_model",
    "elemnet": "ElemNet1", "kgcnn_cgcnn": "kgcnn_cgcnn", "kgcnn_cogn": "kgcnn_coGN", "kgcnn_congn": "kgcnn_coNGN",
    "kgcnn_dimenetpp": "kgcnn_dimenetPP", "kgcnn_megnet": "kgcnn_megnet", "kgcnn_schnet": "kgcnn_schnet",
    "matformer": "matformer", "matminer_lgbm": "matminer_lgbm", "matminer_rf": "matminer_rf",
    "matminer_xgboost": "matminer_xgboost",
}
GPU = {"matminer_xgboost": "optional", "cgcnn": "optional", "matformer": "optional",
       **{n: "optional" for n in UPSTREAM if n.startswith("kgcnn_")}}
REPORTED = {"alignn": 52.7033, "cfid": 62.1169, "cfid_chem": 63.7690, "cgcnn": 52.7033, "kgcnn_cgcnn": 45.7621,
            "kgcnn_cogn": 47.6979, "kgcnn_congn": 46.2720, "kgcnn_dimenetpp": 46.1517, "kgcnn_megnet": 68.2435,
            "kgcnn_schnet": 48.3027, "matformer": 51.6610, "matminer_lgbm": 49.5104, "matminer_rf": 42.7554,
            "matminer_xgboost": 40.8870}
COMMIT = "57afc55f94c8a6f4562f73a3173968cd4b2f83b1"


def test_load_registry__committed_models__fixed_names_pins_and_facts() -> None:
    reg = load_registry(REPO / "models")
    assert sorted(reg.names()) == sorted(UPSTREAM)
    for spec in reg:
        up = UPSTREAM[spec.name]
        assert spec.upstream_name == up and reg.get(up) is spec
        assert spec.python == "3.10"
        assert spec.gpu == GPU.get(spec.name, "none"), spec.name
        assert spec.source.repository == "https://github.com/usnistgov/jarvis_leaderboard"
        assert spec.source.commit == COMMIT
        assert spec.source.subdir == f"jarvis_leaderboard/contributions/{up}"
        assert spec.source.nar_hash and spec.source.benchmarks_nar_hash, spec.name
        assert spec.submitted is not None and spec.submitted.year == 2023
        assert spec.entry == (("ipython", "run.py", "--") if spec.name == "elemnet" else ("python", "run.py"))
        assert spec.test.args == ("--test",) and spec.test.description
        assert spec.dependencies.scanned, spec.name
        assert all(p.reason for p in spec.dependencies.pins)
        if spec.name == "elemnet":
            assert spec.benchmarks == ("ssub_formula_energy", "supercon_chem_Tc", "mag2d_chem_magnetic_moment")
            assert [p.reported_mae for p in spec.predictions] == [0.2068, 5.5901, 0.4605]
        else:
            assert spec.benchmarks == ("dft_3d_exfoliation_energy",)
            (pred,) = spec.predictions
            assert pred.file == "AI-SinglePropertyPrediction-exfoliation_energy-dft_3d-test-mae.csv.zip"
            assert pred.reported_mae == pytest.approx(REPORTED[spec.name])
            assert pred.comparable == (spec.name not in ("cgcnn", "alignn"))
    assert "ALIGNN" in reg.get("cgcnn").predictions[0].note or "alignn" in reg.get("cgcnn").predictions[0].note
    mf = reg.get("matformer").extra_sources
    assert [(e.name, e.commit, e.install, e.hash) for e in mf] == [
        ("matformer", "48f29d7e244974128f64a5a662486a8a10e2bb9f", "package",
         "sha256-gQE+DN9MLIHNC+vecvAARrJJrHU3Otz4J8Z2vML//x8=")]
    cg = reg.get("cgcnn").extra_sources
    assert [(e.name, e.commit, e.install) for e in cg] == [("cgcnn", "f42ab233c4ee0c416879d6bc2d22a264418413ad", "tree")]
    assert all((e.hash or "").startswith("sha256-") for m in ("matformer", "cgcnn") for e in reg.get(m).extra_sources)
    assert "No real Nix fetch" in reg.get("matformer").notes and "No real Nix fetch" in reg.get("cgcnn").notes


@pytest.mark.upstream
def test_load_registry__committed_models__tree_ids_and_dates_match_the_mirror(upstream: Path) -> None:
    manifest = json.loads((upstream / "jarvis_leaderboard.MANIFEST.json").read_text())
    assert manifest["commit"] == COMMIT
    for spec in load_registry(REPO / "models"):
        assert manifest["trees"][spec.source.subdir] == spec.source.tree, spec.name
        meta = json.loads((upstream / "jarvis_leaderboard" / spec.source.subdir / "metadata.json").read_text())
        m, d, y = meta["date_submitted"].split("-")
        assert spec.submitted is not None and spec.submitted.isoformat() == f"{y}-{m}-{d}", spec.name
        for p in spec.predictions:
            assert (upstream / "jarvis_leaderboard" / spec.source.subdir / p.file).is_file(), (spec.name, p.file)


def test_get__alias_any_case__same_model() -> None:
    reg = load_registry(REPO / "models")
    assert reg.get("elemnet1").name == reg.get("ElemNet1").name == "elemnet"
    assert reg.get("kgcnn_coGN").name == "kgcnn_cogn"
    assert [m.name for m in reg.select(["cfid", "alignn_model"])] == ["cfid", "alignn"]


def test_load_registry__missing_folder__not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="models folder not found"):
        load_registry(tmp_path / "nope")


def _demo_copy(tmp_path: Path, name: str = "demo") -> Path:
    d = tmp_path / "models"
    shutil.copytree(DEMO / "demo", d / name)
    return d


def test_load_registry__alias_used_twice__input_error_names_both(tmp_path: Path) -> None:
    d = _demo_copy(tmp_path)
    shutil.copytree(d / "demo", d / "demo2")
    t = (d / "demo2" / "model.toml").read_text().replace('name = "demo"', 'name = "demo2"', 1)
    (d / "demo2" / "model.toml").write_text(t)
    spec = parse_model(d / "demo" / "model.toml")
    if not spec.aliases:
        pytest.skip("the demo model has no alias")
    with pytest.raises(InputError) as e:
        load_registry(d)
    assert "also used by" in str(e.value) and "demo" in str(e.value) and "[aliases]" in str(e.value)


def test_parse_model__name_differs_from_folder__input_error_with_fix(tmp_path: Path) -> None:
    d = _demo_copy(tmp_path, "other")
    with pytest.raises(InputError) as e:
        parse_model(d / "other" / "model.toml")
    assert "[name]" in str(e.value) and "rename the folder" in str(e.value)


@pytest.mark.parametrize(("key", "value", "needle"), [
    ("nar_hash", '"sha256:abc"', "[source.nar_hash]"),
    ("benchmarks_nar_hash", "1", "[source.benchmarks_nar_hash]"),
    ("narhash", '"x"', "did you mean 'nar_hash'"),
])
def test_parse_model__bad_source_hash__names_key(tmp_path: Path, key: str, value: str, needle: str) -> None:
    d = _demo_copy(tmp_path)
    p = d / "demo" / "model.toml"
    p.write_text(p.read_text().replace("[source]\n", f"[source]\n{key} = {value}\n", 1))
    with pytest.raises(InputError) as e:
        parse_model(p)
    assert needle in str(e.value) and str(p) in str(e.value)


def test_parse_model__submitted_as_toml_date__explains_nix_limit(tmp_path: Path) -> None:
    d = _demo_copy(tmp_path)
    p = d / "demo" / "model.toml"
    text = p.read_text()
    assert 'submitted = "' in text
    import re
    p.write_text(re.sub(r'submitted = "([0-9-]+)"', r"submitted = \1", text, count=1))
    with pytest.raises(InputError, match="Nix cannot read TOML dates"):
        parse_model(p)


def test_parse_model__pin_without_reason__input_error(tmp_path: Path) -> None:
    d = _demo_copy(tmp_path)
    p = d / "demo" / "model.toml"
    text = p.read_text()
    start = text.index("[[dependencies.pins]]")
    reason_at = text.index("reason =", start)
    end = text.index("\n", reason_at)
    p.write_text(text[:reason_at] + text[end + 1:])
    with pytest.raises(InputError) as e:
        parse_model(p)
    assert "[dependencies.pins[0].reason]" in str(e.value) and "needs a reason" in str(e.value)


def test_cli_models_and_show__json__registry_data(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "--json"]) == 0
    rows = json_result(capsys.readouterr().out)
    assert len(rows) == 15 and {"name": "elemnet", "gpu": "none"}.items() <= rows[4].items()
    assert main(["show", "ElemNet1", "--json"]) == 0
    shown = json_result(capsys.readouterr().out)
    assert shown["name"] == "elemnet" and shown["entry"] == ["ipython", "run.py", "--"]
    assert "tensorflow==2.10.1" in shown["dependencies"]
    assert shown["source"]["tree"] == "fe03830a2841536196f0a97054198d22cf2b41be"


def test_cli_show__unknown_model__exit_4_with_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "matformr"]) == 4
    assert "matformer" in capsys.readouterr().err


def test_parse_model__prediction_for_unserved_benchmark__input_error(tmp_path: Path) -> None:
    d = _demo_copy(tmp_path)
    p = d / "demo" / "model.toml"
    pred = '\n[[predictions]]\nbenchmark = "{b}"\nfile = "x.csv.zip"\nreported_mae = 1.0\n'
    base = p.read_text()
    p.write_text(base + pred.format(b="dft_3d_exfoliation_energy"))
    assert parse_model(p).predictions[0].reported_mae == 1.0
    p.write_text(base + pred.format(b="dft_3d_bandgap"))
    with pytest.raises(InputError) as e:
        parse_model(p)
    assert "[predictions[0].benchmark]" in str(e.value) and "dft_3d_bandgap" in str(e.value)


def test_cli_init__outside_any_project__names_where_models_go(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Run from a folder in no project, pyrepro falls back to the checkout it is installed from:
    init says so on stderr (it once wrote there silently) and writes nothing in the user's folder."""
    import pyrepro.paths as paths_mod

    install = tmp_path / "checkout"
    (install / "models").mkdir(parents=True)
    (install / "flake.nix").write_text("{}\n")
    monkeypatch.setattr(paths_mod, "__file__", str(install / "pyrepro" / "paths.py"))
    monkeypatch.delenv("PYREPRO_ROOT", raising=False)
    monkeypatch.setenv("PYREPRO_CACHE", str(tmp_path / "cache"))
    user = tmp_path / "elsewhere"
    (user / "sub").mkdir(parents=True)
    (user / "sub" / "run.py").write_text("import numpy\n")
    monkeypatch.chdir(user)
    assert main(["init", "sub", "--name", "sub", "--offline", "--json"]) == 0
    err = capsys.readouterr().err
    assert "is in no pyrepro project" in err and str(install / "models") in err and "PYREPRO_ROOT" in err
    assert (install / "models" / "sub" / "model.toml").is_file()
    assert sorted(p.name for p in user.iterdir()) == ["sub"]
    # inside a project: no note
    monkeypatch.chdir(install)
    assert main(["init", str(user / "sub"), "--name", "sub2", "--offline", "--json"]) == 0
    assert "is in no pyrepro project" not in capsys.readouterr().err
