"""Issue 44, item 5: the smaller things a maintainer hits, through the CLI.

``-h`` is ``--help`` everywhere; an error is said once on stderr (the stage table, the run table
and ``--json`` keep their shape); ``pyrepro run`` says where each run left its predictions, logs
and record; a misspelt benchmark gets a suggestion; ``docs/STATUS.md`` is only ever generated
(``pyrepro report --check``).
"""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import typer.main

from pyrepro import report, run
from pyrepro.cli import app, main
from pyrepro.errors import NetworkError
from pyrepro.paths import Paths

REPO = Path(__file__).resolve().parent.parent
BACKEND = Path(__file__).parent / "scenarios" / "backend"
DNS = ("--data jarvis needs the real dataset dft_3d (jdft_3d-12-12-2022.json.zip), which is not in the cache and "
       "could not be downloaded: cannot download dataset dft_3d from ndownloader.figshare.com: <urlopen error "
       "[Errno -2] Name or service not known>")
DNS_HINT = "run with network access to figshare, or copy the file there by hand; pyrepro never falls back to fixture data"


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path]
    for name, cmd in sorted(getattr(group, "commands", {}).items()):
        out += _commands(cmd, (*path, name))
    return out


# ------------------------------------------------------------------ -h


@pytest.mark.parametrize("path", _commands(typer.main.get_command(app)), ids=lambda p: " ".join(p) or "root")
def test_cli__dash_h__the_same_help_as_dash_dash_help(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*path, "--help"]) == 0
    long = capsys.readouterr().out
    assert main([*path, "-h"]) == 0
    short = capsys.readouterr()
    assert short.out == long and "Usage:" in long and short.err == ""
    assert "-h" in long  # the help says so


# ------------------------------------------------------------------ an error is said once


def _world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, second: bool = False) -> Paths:
    """A project with the backend scenario's ``mini`` model (and a copy, ``mini2``, serving the
    same benchmark) and an empty cache of its own."""
    root = tmp_path / "root"
    shutil.copytree(BACKEND / "models", root / "models")
    shutil.copytree(BACKEND / "patches", root / "patches")
    (root / "flake.nix").write_text("{ }\n")
    if second:
        shutil.copytree(root / "models" / "mini", root / "models" / "mini2")
        toml = root / "models" / "mini2" / "model.toml"
        toml.write_text(toml.read_text().replace('name = "mini"', 'name = "mini2"'))
    monkeypatch.setenv("PYREPRO_ROOT", str(root))
    monkeypatch.setenv("PYREPRO_CACHE", str(tmp_path / "cache"))
    return Paths(root=root, cache=tmp_path / "cache")


def test_reproduce_cli__missing_folder__the_error_once_on_stderr_table_kept(
        repro_project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no-such-folder"
    assert main(["reproduce", str(missing)]) == 4
    got = capsys.readouterr()
    said = f"path not found: {missing}"
    hint = "give the contribution folder (or a single file) to scan"
    assert got.err.count(said) == 1 and got.err.count(hint) == 1
    assert f"error: {said}\nhint: {hint}\n" in got.err
    assert said not in got.out and hint not in got.out  # said once: not again in the table
    rows = [ln.split()[:2] for ln in got.out.splitlines()[2:7]]
    assert rows == [["init", "failed"], ["lock", "skipped"], ["build", "skipped"], ["imports", "skipped"],
                    ["run", "skipped"]]
    assert "(the error below)" in got.out.splitlines()[2] and "stopped at init\n" in got.out


def test_reproduce_cli__missing_folder_json__envelope_keeps_the_error_and_the_stages(
        repro_project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no-such-folder"
    assert main(["reproduce", str(missing), "--json"]) == 4
    got = capsys.readouterr()
    doc = json.loads(got.out)
    assert doc["ok"] is False and doc["error"]["message"] == f"path not found: {missing}"
    assert doc["result"]["stages"][0]["detail"] == f"path not found: {missing}"  # the record keeps its detail
    assert [s["stage"] for s in doc["result"]["stages"]] == ["init", "lock", "build", "imports", "run"]
    assert doc["result"]["next_step"] == doc["error"]["hint"]


def test_run_cli__one_model_dns_failure__said_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    _world(tmp_path, monkeypatch)

    def offline(spec: Any, paths: Paths, **kw: Any) -> Any:  # what prepare_data raises when figshare is unreachable
        raise NetworkError(DNS, hint=DNS_HINT)

    monkeypatch.setattr(run, "run_model", offline)
    assert main(["run", "mini", "--test", "--data", "jarvis"]) == 8
    got = capsys.readouterr()
    assert got.err.count("Name or service not known") == 1 and got.err.count(DNS_HINT) == 1
    assert "Name or service not known" not in got.out
    row = next(ln for ln in got.out.splitlines() if ln.startswith("mini "))
    assert "failed" in row and "(the error below)" in row


def test_run_cli__two_models_one_dns_failure__said_once_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    _world(tmp_path, monkeypatch, second=True)

    def offline(spec: Any, paths: Paths, **kw: Any) -> Any:
        raise NetworkError(f"{spec.name}: {DNS}", hint=DNS_HINT)

    monkeypatch.setattr(run, "run_model", offline)
    assert main(["run", "exfoliation", "--test", "--data", "jarvis"]) == 12
    got = capsys.readouterr()
    for name in ("mini", "mini2"):
        assert got.err.count(f"{name}: {name}: --data jarvis") == 1
        assert got.err.count(f"{name}: hint: {DNS_HINT}") == 1
    assert got.err.count("Name or service not known") == 2 and "Name or service not known" not in got.out
    assert "error: 2 of 2 runs did not pass: mini, mini2" in got.err


# ------------------------------------------------------------------ where a run left its files


def test_run_cli__a_run__says_where_its_predictions_logs_and_record_are(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A real run of the scenario model (pip answered by a fake that installs nothing, so the model
    stops at its first import): no predictions, and the logs and record where the line says."""
    from tests.test_progress import _fake_pip

    _world(tmp_path, monkeypatch)
    monkeypatch.setattr(run, "run_model", functools.partial(run.run_model, runner=_fake_pip("")))
    assert main(["run", "mini", "--test", "--mirror", str(BACKEND / "mirror")]) == 12
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("mini: record "))
    record = Path(line.split("mini: record ", 1)[1].split(";", 1)[0])
    assert record.is_file() and json.loads(record.read_text())["model"] == "mini"
    assert "; no predictions written; logs " in line
    logs = Path(line.rsplit("; logs ", 1)[1])
    assert logs == record.parent / "logs" and (logs / "stderr.log").is_file()


def test_run_cli__predictions_written__their_file_and_rows_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from pyrepro import verdict

    _world(tmp_path, monkeypatch)
    run_dir = tmp_path / "cache" / "runs" / "mini" / "20260101T000000Z"
    (run_dir / "out").mkdir(parents=True)
    name = "AI-SinglePropertyPrediction-exfoliation_energy-dft_3d-test-mae.csv.zip"
    data = {"model": "mini", "exit_code": 0, "seconds": 1.0, "data": {"kind": "fixture"},
            "predictions": {"file": name, "csv_sha256": "0" * 64, "rows": 3}}
    (run_dir / "record.json").write_text(json.dumps(data))
    v = verdict.Verdict("executable", "ran on fixture data", "dft_3d_exfoliation_energy", n_predictions=3)
    rec = run.RunRecord("mini", "dft_3d_exfoliation_energy", True, run_dir / "record.json", data, v)
    monkeypatch.setattr(run, "run_many", lambda specs, paths, **kw: [rec])
    assert main(["run", "mini", "--test"]) == 0
    out = capsys.readouterr().out
    assert (f"mini: record {run_dir / 'record.json'}; predictions {run_dir / 'out' / name} (3 rows); "
            f"logs {run_dir / 'logs'}\n") in out


# ------------------------------------------------------------------ a misspelt benchmark


def test_run_cli__misspelt_benchmark__usage_error_with_the_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "exfoliaton", "--test"]) == 2
    err = capsys.readouterr().err
    assert "error: 'exfoliaton' is neither a model nor a benchmark" in err
    assert "hint: did you mean exfoliation?" in err


def test_run_cli__misspelt_benchmark_option__usage_error_with_the_suggestion(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _world(tmp_path, monkeypatch)
    assert main(["run", "mini", "--benchmark", "dft_3d_exfoliation_enrgy", "--test"]) == 2
    err = capsys.readouterr().err
    assert err.count("does not serve benchmark 'dft_3d_exfoliation_enrgy'") == 1
    assert "hint: did you mean dft_3d_exfoliation_energy?" in err


def test_run_cli__unknown_name_near_no_benchmark__still_a_missing_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "cfd", "--test"]) == 4  # a model's misspelling: the registry's own suggestion
    assert "hint: did you mean cfid?" in capsys.readouterr().err


# ------------------------------------------------------------------ docs/STATUS.md is only generated


def test_report_cli__check__generated_file_passes_hand_edit_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    paths = _world(tmp_path, monkeypatch)
    (paths.root / "docs").mkdir()
    md = paths.root / "docs" / "STATUS.md"
    assert main(["report", "--no-refresh"]) == 0
    assert md.read_text().splitlines()[0] == report.GENERATED_HEADER
    capsys.readouterr()
    assert main(["report", "--check"]) == 0  # another minute, another stamp: still the same report
    before = md.read_bytes()
    text = md.read_text()
    md.write_text(text.replace("| mini |", "| mini (fixed by hand) |", 1))
    assert main(["report", "--check"]) == 5
    err = capsys.readouterr().err
    assert "STATUS.md:" in err and "mini (fixed by hand)" in err and "never edit it by hand" in err
    md.write_bytes(before)
    (paths.root / "docs" / "status.json").write_text("{}\n")
    assert main(["report", "--check"]) == 5
    assert "status.json differs" in capsys.readouterr().err


def test_report_cli__check__writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _world(tmp_path, monkeypatch)
    (paths.root / "docs").mkdir()
    assert main(["report", "--check"]) == 5  # nothing generated yet
    assert not (paths.root / "docs" / "STATUS.md").exists() and not (paths.root / "docs" / "status.json").exists()
