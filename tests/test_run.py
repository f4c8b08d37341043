"""Runs that never start (build or data failure) leave a failure record; run_many goes on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pyrepro import run
from pyrepro.errors import ExternalToolError, PyreproError
from pyrepro.paths import Paths
from pyrepro.registry import load_registry

SC = Path(__file__).parent / "scenarios" / "backend"


@pytest.fixture
def world(tmp_path: Path) -> Paths:
    root = tmp_path / "root"
    shutil.copytree(SC / "models", root / "models")
    shutil.copytree(SC / "patches", root / "patches")
    return Paths(root=root, cache=tmp_path / "cache")


def _pip_fails(cmd, **kw):  # type: ignore[no-untyped-def]
    if "pip" in cmd:
        raise ExternalToolError(list(cmd), 1, "ERROR: no matching distribution")
    from pyrepro import proc
    return proc.run(cmd, **kw)


def test_run_model__build_fails__failure_record_then_raises(world: Paths) -> None:
    spec = load_registry(world.models).get("mini")
    with pytest.raises(PyreproError):
        run.run_model(spec, world, test=True, mirror=SC / "mirror", runner=_pip_fails)
    latest = json.loads((world.cache / "runs" / "mini" / "latest.json").read_text())
    assert latest["stage"] == "build" and latest["exit_code"] is None and latest["outputs"] == {}
    assert latest["verdict"]["tier"] == "failed" and "the build failed" in latest["verdict"]["reason"]
    assert latest["error"].startswith("build failed: ") and "no matching distribution" in latest["error"]
    assert latest["lock"]["sha256"] and latest["data"]["kind"] == "fixture"
    (rec_file,) = (world.cache / "runs" / "mini").glob("*/record.json")
    assert json.loads(rec_file.read_text()) == latest


def test_run_many__one_model_fails__others_still_run(world: Paths, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_registry(world.models).get("mini")
    calls = []

    def fake_run_model(s, paths, **kw):  # type: ignore[no-untyped-def]
        calls.append(kw.get("benchmark"))
        if len(calls) == 1:
            raise ExternalToolError(["pip"], 1, "boom")
        if len(calls) == 2:
            raise KeyError("bug")
        return run.RunRecord(s.name, "b", True, Path("r"), {"model": s.name}, None, None)

    monkeypatch.setattr(run, "run_model", fake_run_model)
    recs = run.run_many([spec, spec, spec], world, benchmark=None, test=True)
    assert len(calls) == 3 and [r.error is None for r in recs] == [False, False, True]
    assert recs[1].error is not None and "internal error (KeyError" in recs[1].error


def test_run_model__gpu_required_without_driver__refused_before_any_build(
        world: Paths, monkeypatch: pytest.MonkeyPatch) -> None:
    """The local backend applies the Nix wrapper's policy: a model that requires a GPU is refused
    on a machine without a driver (exit 7, as the wrapper), before anything is built or recorded."""
    from pyrepro import gpu
    from pyrepro.errors import MissingToolError, exit_code_for

    toml = world.models / "mini" / "model.toml"
    text = toml.read_text()
    toml.write_text(text.replace('gpu = "none"', 'gpu = "required"') if 'gpu = "none"' in text
                    else text.replace("\n[source]", 'gpu = "required"\n\n[source]', 1))
    spec = load_registry(world.models).get("mini")
    assert spec.gpu == "required"
    monkeypatch.setattr(gpu, "discover_driver", lambda *a, **k: gpu.Discovery(None, ("/nowhere",), ()))
    with pytest.raises(MissingToolError, match="requires a GPU") as e:
        run.run_model(spec, world, test=True, mirror=SC / "mirror", runner=_pip_fails)
    assert exit_code_for(e.value) == 7
    assert not (world.cache / "runs").exists() and not (world.cache / "envs").exists()


def test_submitted_digests__other_models_sources_read__a_missing_file_is_never_a_twin(world: Paths) -> None:
    """What a real-data run compares against: the other models' submitted predictions, read from
    their pinned sources (here the scenario source has no predictions file: no digest, and two
    missing files are not twins)."""
    from pyrepro import verdict

    shutil.copytree(world.models / "mini", world.models / "mini2")
    toml = world.models / "mini2" / "model.toml"
    toml.write_text(toml.read_text().replace('name = "mini"', 'name = "mini2"', 1))
    spec = load_registry(world.models).get("mini")
    others = run._submitted_digests(world, spec, "dft_3d_exfoliation_energy", SC / "mirror")
    assert others == {"mini2": None}
    assert run._submitted_digests(world, spec, "other_benchmark", SC / "mirror") == {}
    assert verdict.comparability(reviewed=True, note="", digest=None, others=others) == (True, "")
