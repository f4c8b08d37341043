"""Committed run summaries: newest record per benchmark, no machine paths, report without a cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pyrepro import report, run
from pyrepro.errors import NetworkError
from pyrepro.paths import Paths
from pyrepro.registry import load_registry

SC = Path(__file__).parent / "scenarios" / "backend"


def _record(runs: Path, stamp: str, bench: str, code: int, cache: Path) -> None:
    d = runs / stamp
    d.mkdir(parents=True)
    rec = {"schema": 1, "model": "mini", "benchmark": bench, "test": True, "started": stamp, "seconds": 1.5,
           "exit_code": code, "error": None if code == 0 else f"failed, see {d}/logs/stderr.log and /tmp/pip-x/setup.py",
           "command": [f"{cache}/envs/x/bin/python", "run.py"],
           "environment": {"backend": "local", "env_key": "k", "python": "3.11.7", "env_dir": f"{cache}/envs/x"},
           "data": {"kind": "fixture", "digest": "sha256:00"},
           "verdict": {"tier": "executable" if code == 0 else "failed", "reason": "r"},
           "logs": {"stderr_tail": f"{cache}/x"}}
    (d / "record.json").write_text(json.dumps(rec))


def test_refresh_summaries__two_benchmarks__newest_each_no_paths(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(SC / "models", root / "models")
    paths = Paths(root=root, cache=tmp_path / "cache")
    runs = paths.cache / "runs" / "mini"
    _record(runs, "20260101T000000Z", "dft_3d_exfoliation_energy", 1, paths.cache)
    _record(runs, "20260102T000000Z", "dft_3d_exfoliation_energy", 0, paths.cache)
    _record(runs, "20260101T120000Z", "other_bench", 1, paths.cache)
    # a later real-data attempt that failed to get its data does not hide the fixture result
    spec = load_registry(paths.models).get("mini")
    fail = run._failure_record(spec, "dft_3d_exfoliation_energy", True, "20260103T000000Z", "jarvis", "data",
                               NetworkError("no figshare"))
    (runs / "20260103T000000Z").mkdir()
    (runs / "20260103T000000Z" / "record.json").write_text(json.dumps(fail))
    reg = load_registry(paths.models)
    assert report.refresh_summaries(reg, paths) == [root / "models" / "mini" / "last-run.json"]
    text = (root / "models" / "mini" / "last-run.json").read_text()
    assert str(tmp_path) not in text and "$PYREPRO_CACHE" in text and "/tmp/" not in text
    s = json.loads(text)
    assert list(s["runs"]) == ["dft_3d_exfoliation_energy/fixture", "dft_3d_exfoliation_energy/jarvis",
                               "other_bench/fixture"]
    assert s["runs"]["dft_3d_exfoliation_energy/fixture"]["started"] == "20260102T000000Z"
    assert s["runs"]["dft_3d_exfoliation_energy/jarvis"]["error"].startswith("data failed")
    other = s["runs"]["other_bench/fixture"]
    assert other["exit_code"] == 1 and "command" not in other and "env_dir" not in other["environment"]
    # cache gone (another machine): the summary is kept, and the report reads it
    shutil.rmtree(paths.cache)
    assert report.refresh_summaries(reg, paths) == []
    rep = report.build_report(reg, paths)
    (m,) = rep["models"]
    assert m["run"]["exit_code"] == 0 and m["run"]["verdict"]["tier"] == "executable"
    assert m["other_runs"]["other_bench/fixture"]["verdict"]["tier"] == "failed"
    assert m["other_runs"]["dft_3d_exfoliation_energy/jarvis"]["verdict"]["tier"] == "failed"
    md = report.render_markdown(rep)
    assert "| mini |" in md and "Run (fixture data, other_bench): exit 1" in md


def test_refresh_summaries__no_records__writes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(SC / "models", root / "models")
    paths = Paths(root=root, cache=tmp_path / "cache")
    assert report.refresh_summaries(load_registry(paths.models), paths) == []
    assert not (root / "models" / "mini" / "last-run.json").exists()


def test_render_markdown__build_failed__says_failed_not_built(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(SC / "models", root / "models")
    paths = Paths(root=root, cache=tmp_path / "cache")
    reg = load_registry(paths.models)
    fail = run._failure_record(reg.get("mini"), "dft_3d_exfoliation_energy", True, "20260103T000000Z", "fixture",
                               "build", NetworkError("pip could not reach PyPI"))
    d = paths.cache / "runs" / "mini" / "20260103T000000Z"
    d.mkdir(parents=True)
    (d / "record.json").write_text(json.dumps(fail))
    report.refresh_summaries(reg, paths)
    md = report.render_markdown(report.build_report(reg, paths))
    row = next(line for line in md.splitlines() if line.startswith("| mini |"))
    assert "failed (see verdict)" in row and "build failed: pip could not reach PyPI" in row


def test_short_error__pip_output__first_line_and_exception() -> None:
    text = ("build failed: installing the sdist-only locked packages (a, b) of m failed (pip exit 1):\n"
            "WARNING: Location 'file:///x' is ignored\n  × python setup.py egg_info did not run successfully.\n"
            "      ModuleNotFoundError: No module named 'pkg_resources'\n  error: metadata-generation-failed\n"
            "hint: See above for details.\n")
    assert report.short_error(text) == ("build failed: installing the sdist-only locked packages (a, b) of m failed "
                                        "(pip exit 1): … ModuleNotFoundError: No module named 'pkg_resources'")
    assert report.short_error("one line") == "one line"


def test_outcome__missing_fields__no_none_on_the_page() -> None:
    from pyrepro.report import _outcome

    assert "None" not in _outcome({"exit_code": None, "seconds": None, "verdict": None})
    assert _outcome({"exit_code": 0, "seconds": 3.9, "verdict": {"tier": "executable"}}) == \
        "exit 0 in 3.9 s; verdict executable"


def test_machine__recorded_run__platform_cpu_and_time() -> None:
    from pyrepro.report import _machine

    run = {"started": "20261203T075025473434Z",
           "environment": {"platform": "linux-x86_64", "cpu": "AMD EPYC", "cpus": 2}}
    assert _machine(run) == "linux-x86_64, AMD EPYC, 2 cores; 2026-12-03 07:50 UTC"
    assert "not recorded" in _machine({})


def test_report_cli__corrupted_lock_record__located_error_exit_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    from pyrepro.cli import main

    root = tmp_path / "proj"
    shutil.copytree(Path(__file__).resolve().parent.parent / "models" / "cfid", root / "models" / "cfid")
    (root / "flake.nix").write_text("{}\n")
    (root / "docs").mkdir()
    (root / "models" / "cfid" / "lock.toml").write_text("garbage [[ =\n")
    monkeypatch.setenv("PYREPRO_ROOT", str(root))
    assert main(["report", "--no-refresh"]) == 3
    err = capsys.readouterr().err
    assert "models/cfid/lock.toml:1" in err and "Traceback" not in err and "internal error" not in err


def test_nix_status__evaluation_record__ok_failed_stale_and_missing(tmp_path: Path) -> None:
    """The Nix line of STATUS.md comes from docs/nixeval.json (the offline dream2nix evaluation),
    says what failed, flags a lock changed since, and never claims a build."""
    import json as _json

    from pyrepro.report import NIX_EVAL, nix_status

    assert "not evaluated" in nix_status(tmp_path, "m", "abc") and "build unverified" in nix_status(tmp_path, "m", "abc")
    (tmp_path / NIX_EVAL).parent.mkdir(parents=True)
    (tmp_path / NIX_EVAL).write_text(_json.dumps({
        "evaluated": "2026-12-04 03:48 UTC", "against": {"dream2nix": "69eb01fa99", "pyproject-nix": "47bd6f2999"},
        "models": {"m": {"lock_sha256": "abc", "systems": {
            "x86_64-linux": {"ok": True, "locked_packages": 30},
            "aarch64-linux": {"ok": False, "error": "error: infinite recursion encountered"}}}}}))
    line = nix_status(tmp_path, "m", "abc")
    assert "instantiates on x86_64-linux (30 locked packages" in line
    assert "FAILS on aarch64-linux (error: infinite recursion encountered)" in line
    assert "dream2nix 69eb01fa" in line and "build unverified" in line and "STALE" not in line
    assert "STALE: pdm.lock changed since" in nix_status(tmp_path, "m", "def")
    assert "not evaluated" in nix_status(tmp_path, "other", "abc")
