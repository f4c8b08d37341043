"""The real patch series of the light models, checked against the pinned upstream folders.

Static only (no model environment): every series applies with no fuzz and no offset, the
patched entry compiles, defines the uniform flags, keeps no run-time fetch, and the
per-model decisions recorded in the patch headers are there.
"""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

import pytest

from pyrepro import patches, sources
from pyrepro.cli import main
from pyrepro.registry import load_registry
from tests.fakes import json_result

REPO = Path(__file__).resolve().parent.parent
LIGHT = ("cfid", "cfid_chem", "matminer_lgbm", "matminer_rf", "matminer_xgboost", "elemnet", "cgcnn")


_CACHE: dict[str, Path] = {}


def _code(path: Path) -> str:
    """The source without its comments (our patches explain themselves in comments)."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            lines[row - 1] = lines[row - 1][:col]
    return "\n".join(lines)


@pytest.fixture
def patched(upstream: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The seven patched trees, built once per test session (``upstream`` skips when absent)."""
    if _CACHE:
        return _CACHE
    reg = load_registry(REPO / "models")
    tmp = tmp_path_factory.mktemp("light")
    out = {}
    for name in LIGHT:
        spec = reg.get(name)
        pristine = sources.obtain_source(spec.source, mirror=upstream, cache=tmp / "cache").path
        out[name] = patches.apply_series(patches.load_series(REPO / "patches" / name), pristine, tmp / name)
    _CACHE.update(out)
    return out


@pytest.mark.upstream
@pytest.mark.parametrize("name", LIGHT)
def test_apply_series__light_model__entry_compiles_uniform_no_fetch(patched: dict[str, Path], name: str) -> None:
    spec = load_registry(REPO / "models").get(name)
    script = patches.entry_script(spec.entry)
    tree = patched[name]
    compile((tree / script).read_text(encoding="utf-8"), str(tree / script), "exec")
    check = patches.static_check(tree, script)
    assert check.uniform and check.leftovers == (), check
    series = patches.load_series(REPO / "patches" / name)
    assert "test-mode" in {p.category for p in series}
    text = _code(tree / script)
    assert "../../dataset" not in text and "../../benchmarks/AI/SinglePropertyPrediction/" not in text
    assert "write_predictions(args.output_dir, args.benchmark" in text


@pytest.mark.upstream
def test_load_series__elemnet__adam_fix_is_its_own_api_drift_patch(patched: dict[str, Path]) -> None:
    series = patches.load_series(REPO / "patches" / "elemnet")
    drift = [p for p in series if p.category == "api-drift"]
    assert len(drift) == 1 and drift[0].files == ("run.py",) and len(drift[0].hunks) == 3
    assert drift[0].effect.startswith("changes: restores the intended learning rate (TF>=2.11 ignores lr)")
    text = (patched["elemnet"] / "run.py").read_text()
    assert "Adam(lr=" not in text and text.count("Adam(learning_rate=0.0001)") == 3
    assert text.count("get_ipython().run_cell_magic('time'") == 4  # the ipython cells are kept
    assert text.count("test_scale(3000, 2, args.test)") == 3


@pytest.mark.upstream
def test_apply_series__cgcnn__pinned_source_instead_of_clone(patched: dict[str, Path]) -> None:
    text = _code(patched["cgcnn"] / "run.py")
    assert "git clone" not in text and "wget" not in text and "os.system" not in text
    assert "PYREPRO_SRC_CGCNN" in text and "sys.executable" in text
    assert 'os.path.join(os.path.dirname(os.path.abspath(__file__)), "cgcnn")' in text


@pytest.mark.upstream
def test_apply_series__matminer_xgboost__cpu_unless_gpu_requested(patched: dict[str, Path]) -> None:
    text = (patched["matminer_xgboost"] / "run.py").read_text()
    assert "tree_method = 'gpu_hist' if use_gpu else 'hist'" in text
    assert "os.environ.get('PYREPRO_GPU', 'none')" in text
    for name in ("matminer_rf", "matminer_xgboost"):
        t = _code(patched[name] / "run.py")
        assert "../../../../X_" not in t and "Benchmark already done, skipping" not in t


@pytest.mark.upstream
def test_patch_check__cli_all_json__every_series_ok(upstream: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PYREPRO_CACHE", str(tmp_path / "cache"))
    code = main(["patch", "check", "--all", "--strict", "--mirror", str(upstream), "--json"])
    out = json_result(capsys.readouterr().out)
    assert code == 0
    by_name = {r["model"]: r for r in out}
    assert set(LIGHT) <= set(by_name)
    assert all(r["ok"] and r["leftovers"] == [] for r in out)
