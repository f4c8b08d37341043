"""One light model end to end, as CI runs it: lock -> build -> patched run on fixture data -> verdict.

cfid (CFID descriptors + LightGBM) is the lightest of the 15: its environment is about 30
locked packages (no TensorFlow or torch). It needs ../shared/upstream (the pinned source) and
PyPI (the locked wheels); it skips cleanly without the mirror.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pyrepro import data, verdict
from pyrepro.cli import main
from pyrepro.lock import check_lock
from pyrepro.registry import load_registry
from tests.fakes import json_result

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.integration
@pytest.mark.upstream
def test_cfid__test_mode_on_fixture_data__executable(upstream: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PYREPRO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PYREPRO_ROOT", str(REPO))
    spec = load_registry(REPO / "models").get("cfid")
    assert check_lock(spec) == []
    assert main(["patch", "check", "cfid", "--mirror", str(upstream)]) == 0
    capsys.readouterr()
    code = main(["run", "exfoliation", "--test", "--only", "cfid", "--mirror", str(upstream), "--json"])
    records = json_result(capsys.readouterr().out)
    assert code == 0, records
    (rec,) = records
    assert rec["model"] == "cfid" and rec["exit_code"] == 0
    fx = data.write_fixture(tmp_path / "fx")
    n_test = len(verdict.read_targets(fx.benchmarks_dir / "dft_3d_exfoliation_energy.json.zip",
                                      "dft_3d_exfoliation_energy"))
    assert rec["verdict"]["tier"] == "executable" and rec["verdict"]["n_predictions"] == n_test > 0
    assert rec["data"]["digest"] == fx.digest
    assert rec["data"]["kind"] == "fixture"
    assert rec["source"]["tree"] == spec.source.tree
    assert [p["file"] for p in rec["patches"]] == sorted(p.name for p in (REPO / "patches" / "cfid").glob("*.patch"))
    # nothing of the run leaked into the checkout or the pinned source
    assert not list(REPO.glob("AI-SinglePropertyPrediction*"))
    # a second build is a cache hit
    assert main(["build", "cfid", "--mirror", str(upstream), "--json"]) == 0
    (b,) = json_result(capsys.readouterr().out)
    assert b["env_cached"] and b["src_cached"] and b["seconds"] < 2
