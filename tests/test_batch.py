"""Issue 44, item 1: ``pyrepro batch``: entries from a folder or a manifest (bad input named by file
and line), results appended as whole lines, resume and --retry-failed, the local engine's pool and
progress, an interruption, the worker's signals and stop file, and the CLI. No network: workers are
faked at the subprocess chokepoint, or run for real on folders that stop before the lock."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyrepro import batch, cachelock
from pyrepro.batch import Entry, Options, Plan
from pyrepro.cli import main
from pyrepro.engines.local import LocalEngine
from pyrepro.errors import InputError, UsageError
from pyrepro.fsutil import append_line
from pyrepro.paths import Paths
from pyrepro.proc import Completed
from pyrepro.progress import RecordingProgress
from tests.fakes import json_result

Write = Callable[..., Path]


# ------------------------------------------------------------------------------------ entries

def _subs(write_files: Write, names: tuple[str, ...] = ("alpha", "beta", "gamma")) -> Path:
    return write_files({**{f"subs/{n}/run.py": f"import {n}_lib\n" for n in names}})


def test_read_manifest__relative_folders_and_defaults__entries_in_order(write_files: Write) -> None:
    root = _subs(write_files)
    (root / "m.toml").write_text('[[submission]]\nfolder = "subs/alpha"\nname = "a1"\ndate = 2023-01-15\n'
                                 'benchmark = "dft_3d_exfoliation_energy"\n\n'
                                 '[[submission]]\nfolder = "subs/beta"\n')
    entries = batch.read_manifest(root / "m.toml")
    assert [(e.name, e.folder, e.date, e.benchmark) for e in entries] == [
        ("a1", (root / "subs" / "alpha").resolve(), "2023-01-15", "dft_3d_exfoliation_energy"),
        ("beta", (root / "subs" / "beta").resolve(), None, None)]
    assert entries[1].where == "m.toml:7"


@pytest.mark.parametrize(("text", "line", "words"), [
    pytest.param('[[submission]]\nfolder = "subs/alpha"\ncolour = "red"\n', 3, "unknown key 'colour'",
                 id="unknown_key__its_line"),
    pytest.param('[[submission]]\nfolder = "subs/alpha"\n\n[[submission]]\nname = "x"\n', 4, "missing folder",
                 id="missing_folder__the_table_line"),
    pytest.param('[[submission]]\nfolder = "subs/nope"\n', 2, "folder not found", id="absent_folder__its_line"),
    pytest.param('[[submission]]\nfolder = "subs/alpha"\nname = "x"\n[[submission]]\nfolder = "subs/beta"\n'
                 'name = "x"\n', 6, "used twice (first at line 3)", id="duplicate_name__both_lines"),
    pytest.param('[[submission]]\nfolder = "subs/alpha"\ndate = "15/01/2023"\n', 3, "is not a day",
                 id="bad_date__its_line"),
    pytest.param('[[submission]]\nfolder = "subs/alpha"\nname = "Has Spaces"\n', 3, "not a model name",
                 id="bad_name__its_line"),
    pytest.param('[[submission]]\nfolder = "subs/alpha"\nname = "a\n', 3, "not valid TOML", id="toml_syntax__its_line"),
    pytest.param('title = "x"\n[[submission]]\nfolder = "subs/alpha"\n', 1, "unknown top-level key",
                 id="top_level_key__its_line"),
    pytest.param('# nothing\n', 1, "no [[submission]] table", id="empty__line_1"),
])
def test_read_manifest__bad_input__input_error_names_file_and_line(write_files: Write, text: str, line: int,
                                                                   words: str) -> None:
    root = _subs(write_files)
    (root / "m.toml").write_text(text)
    with pytest.raises(InputError) as err:
        batch.read_manifest(root / "m.toml")
    assert err.value.path == root / "m.toml" and err.value.line == line, str(err.value)
    assert words in str(err.value) and str(err.value).startswith(f"{root / 'm.toml'}:{line}")


def test_entries_from_folder__code_folders_only__names_made_unique(write_files: Write) -> None:
    root = write_files({"c/A-b/x.py": "", "c/a_b/y.ipynb": "{}", "c/docs/README.md": "", "c/.git/hooks/h.py": "",
                        "c/deep/one/two/z.py": ""})
    entries, no_code = batch.entries_from_folder(root / "c")
    assert [e.name for e in entries] == ["a_b", "a_b_2", "deep"]
    assert [p.name for p in no_code] == ["docs"]


def test_entries_from_folder__nothing_with_code__input_error(write_files: Write) -> None:
    root = write_files({"c/docs/README.md": ""})
    with pytest.raises(InputError, match="no sub-folder with Python code"):
        batch.entries_from_folder(root / "c")


@pytest.mark.parametrize("n", [1, 2, 3, 7, 10, 11])
def test_chunk__every_split__covers_each_entry_once(n: int) -> None:
    entries = [Entry(f"e{i}", Path(f"/x/{i}")) for i in range(10)]
    parts = [batch.chunk(entries, f"{i}/{n}") for i in range(n)]
    assert [e for p in parts for e in p] == entries
    assert max(map(len, parts)) - min(map(len, parts)) <= 1


@pytest.mark.parametrize("spec", ["3/3", "1", "-1/2", "a/b", "2/0"])
def test_chunk__bad_spec__usage_error(spec: str) -> None:
    with pytest.raises(UsageError, match="--chunk"):
        batch.chunk([Entry("a", Path("/a"))], spec)


# ------------------------------------------------------------------------------------ results

def _result(e: Entry, status: str, **kw: Any) -> dict[str, Any]:
    return {"name": e.name, "folder": str(e.folder), "status": status, **kw}


def test_pending__resume_rules__only_what_is_left() -> None:
    es = [Entry(n, Path(f"/s/{n}")) for n in ("done", "bad", "crash", "stopped", "new", "moved")]
    done = batch.latest([_result(es[0], "passed"), _result(es[1], "failed"), _result(es[2], "crashed"),
                         _result(es[3], "interrupted"), {**_result(es[5], "passed"), "folder": "/elsewhere"}])
    assert [e.name for e in batch.pending(es, done)] == ["stopped", "new", "moved"]
    assert [e.name for e in batch.pending(es, done, retry_failed=True)] == ["bad", "crash", "stopped", "new", "moved"]


def test_latest__same_name_twice__last_line_wins() -> None:
    e = Entry("a", Path("/a"))
    assert batch.latest([_result(e, "failed"), _result(e, "passed")])["a"]["status"] == "passed"


def test_read_results__line_cut_short__skipped_and_next_append_intact(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    append_line(path, json.dumps({"name": "a", "status": "passed"}))
    with open(path, "a") as f:
        f.write('{"name": "b", "sta')  # a crash in the middle of a write
    append_line(path, json.dumps({"name": "c", "status": "failed"}))
    results, bad = batch.read_results(path)
    assert [r["name"] for r in results] == ["a", "c"] and bad == 1


def _append_many(path: str, who: int, n: int) -> None:
    for i in range(n):
        append_line(Path(path), json.dumps({"name": f"w{who}-{i}", "status": "passed", "pad": "x" * (i * 37 % 5000)}))


def test_append_line__eight_processes_at_once__every_line_whole(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    procs = [multiprocessing.get_context("fork").Process(target=_append_many, args=(str(path), w, 150))
             for w in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    results, bad = batch.read_results(path)
    assert bad == 0 and len(results) == 8 * 150 and len({r["name"] for r in results}) == 8 * 150


def test_result_of__failed_record__stage_reason_next_step() -> None:
    rec = {"ok": False, "category": 4, "exit_code": 9, "seconds": 12.5, "stopped_at": "lock", "next_step": "pin it",
           "stages": [{"stage": "init", "status": "ok"},
                      {"stage": "lock", "status": "failed", "detail": "no lock", "next_step": "pin it"}]}
    r = batch.result_of(Entry("a", Path("/a")), rec, run="r", engine="local", log=None, seconds=13, exit_code=9)
    assert (r["status"], r["stage"], r["category"], r["reason"], r["next_step"], r["seconds"]) == \
        ("failed", "lock", 4, "no lock", "pin it", 12.5)
    ok = {"ok": True, "exit_code": 0, "stages": [{"stage": "init", "status": "ok"}, {"stage": "imports", "status": "ok"},
                                                  {"stage": "run", "status": "skipped"}]}
    assert batch.result_of(Entry("a", Path("/a")), ok, run="r", engine="local", log=None, seconds=1,
                           exit_code=0)["stage"] == "imports"


# ------------------------------------------------------------------------------------ the local engine, faked workers

class FakeWorkers:
    """The subprocess chokepoint as the local engine calls it: each worker command writes the result
    ``outcomes[name]`` says (passed, failed, crashed: no result file and exit -9, or hold: wait for the
    stop file, then write an interrupted result), after ``delay`` seconds."""

    def __init__(self, outcomes: dict[str, str], delay: float = 0.05) -> None:
        self.outcomes = outcomes
        self.delay = delay
        self.started: list[str] = []

    def __call__(self, argv: Any, **kw: Any) -> Completed:
        argv = [str(a) for a in argv]
        assert argv[1:4] == ["-m", "pyrepro.engines.worker", "task"], argv
        plan = Plan.load(Path(argv[4]))
        i = int(argv[5])
        entry = plan.entries[i]
        self.started.append(entry.name)
        assert kw["env"]["PYREPRO_ROOT"] == str(plan.root) and kw["env"]["PYREPRO_CACHE"] == str(plan.cache)
        what = self.outcomes.get(entry.name, "passed")
        time.sleep(self.delay)
        if what == "crashed":
            return Completed(tuple(argv), -9, "", "")
        interrupted = False
        if what == "hold":
            stop = Path(argv[argv.index("--stop-file") + 1])
            for _ in range(200):
                if stop.exists():
                    break
                time.sleep(0.02)
            interrupted = True
        ok = what == "passed"
        rec = {"ok": ok, "exit_code": 0 if ok else 11, "category": 2 if ok else 4, "seconds": 1.0,
               "stopped_at": None if ok else "build",
               "stages": [{"stage": "init", "status": "ok"}, {"stage": "lock", "status": "ok"},
                          {"stage": "build", "status": "ok" if ok else "failed", "detail": "boom", "next_step": "fix"}]}
        r = batch.result_of(entry, rec, run=plan.run, engine="local", log=plan.log_file(i), seconds=1.0,
                            exit_code=130 if interrupted else rec["exit_code"], interrupted=interrupted)
        plan.task_file(i).write_text(json.dumps(r))
        return Completed(tuple(argv), 130 if interrupted else int(rec["exit_code"]), "", "")


def _paths(tmp_path: Path) -> Paths:
    (tmp_path / "proj" / "models").mkdir(parents=True, exist_ok=True)
    return Paths(root=tmp_path / "proj", cache=tmp_path / "cache")


def test_run_batch__local_pool__results_appended_progress_and_report(write_files: Write, tmp_path: Path) -> None:
    root = _subs(write_files, ("alpha", "beta", "gamma", "delta"))
    entries, _ = batch.entries_from_folder(root / "subs")
    workers = FakeWorkers({"beta": "failed", "gamma": "crashed"})
    progress = RecordingProgress()
    out = batch.run_batch(entries, out=tmp_path / "out", paths=_paths(tmp_path), options=Options(),
                          engine=LocalEngine(jobs=2, runner=workers, tick=0.01), progress=progress)
    lines = batch.read_results(tmp_path / "out" / "results.jsonl")[0]
    assert sorted((r["name"], r["status"]) for r in lines) == [
        ("alpha", "passed"), ("beta", "failed"), ("delta", "passed"), ("gamma", "crashed")]
    assert out.summary["statuses"] == {"passed": 2, "failed": 1, "crashed": 1, "interrupted": 0, "pending": 0}
    crashed = next(r for r in lines if r["name"] == "gamma")
    assert "killed by signal 9" in crashed["reason"]
    details = [str(d) for kind, label, d in progress.events if kind == "advance" and label.startswith("batch")]
    assert any("running" in d and "left" in d for d in details)
    assert details[-1].startswith("4 done (2 passed), 0 running, 0 left")
    assert any(label == "beta" and "failed at build" in str(d) for _k, label, d in progress.events)
    assert (tmp_path / "out" / "report.html").is_file() and "beta" in (tmp_path / "out" / "report.md").read_text()


def test_run_batch__again__resumes_and_retry_failed_reruns_only_failures(write_files: Write, tmp_path: Path) -> None:
    root = _subs(write_files)
    entries, _ = batch.entries_from_folder(root / "subs")
    kw: dict[str, Any] = {"out": tmp_path / "out", "paths": _paths(tmp_path), "options": Options(),
                          "progress": RecordingProgress()}
    first = FakeWorkers({"beta": "failed"})
    batch.run_batch(entries, engine=LocalEngine(jobs=2, runner=first, tick=0.01), **kw)
    again = FakeWorkers({})
    out = batch.run_batch(entries, engine=LocalEngine(jobs=2, runner=again, tick=0.01), **kw)
    assert again.started == [] and out.run is None and len(out.skipped) == 3
    retry = FakeWorkers({})
    out = batch.run_batch(entries, engine=LocalEngine(jobs=2, runner=retry, tick=0.01), retry_failed=True, **kw)
    assert retry.started == ["beta"] and out.all_passed


def test_run_batch__interrupted__running_ones_recorded_interrupted_rest_left_then_reraised(
        write_files: Write, tmp_path: Path) -> None:
    root = _subs(write_files, ("alpha", "beta", "gamma", "delta"))
    entries, _ = batch.entries_from_folder(root / "subs")

    class CtrlC(RecordingProgress):
        def advance(self, label: str, n: int = 1, detail: str = "") -> None:
            super().advance(label, n, detail)
            if label.startswith("batch") and n == 0 and "2 running" in detail:
                raise KeyboardInterrupt  # Ctrl-C while both workers run

    workers = FakeWorkers({"alpha": "hold", "beta": "hold"})
    with pytest.raises(KeyboardInterrupt):
        batch.run_batch(entries, out=tmp_path / "out", paths=_paths(tmp_path), options=Options(),
                        engine=LocalEngine(jobs=2, runner=workers, tick=0.01), progress=CtrlC())
    lines = batch.read_results(tmp_path / "out" / "results.jsonl")[0]
    assert sorted((r["name"], r["status"]) for r in lines) == [("alpha", "interrupted"), ("beta", "interrupted")]
    assert sorted(workers.started) == ["alpha", "beta"]  # the others never started
    assert "pending" in (tmp_path / "out" / "report.md").read_text()
    resumed = FakeWorkers({})
    batch.run_batch(entries, out=tmp_path / "out", paths=_paths(tmp_path), options=Options(),
                    engine=LocalEngine(jobs=2, runner=resumed, tick=0.01), progress=RecordingProgress())
    assert sorted(resumed.started) == ["alpha", "beta", "delta", "gamma"]


def test_run_batch__batch_folder_busy__usage_error(write_files: Write, tmp_path: Path) -> None:
    root = _subs(write_files)
    entries, _ = batch.entries_from_folder(root / "subs")
    (tmp_path / "out").mkdir()
    with cachelock.held(tmp_path / "out", "batch"), pytest.raises(UsageError, match="another pyrepro batch"):
        batch.run_batch(entries, out=tmp_path / "out", paths=_paths(tmp_path), options=Options(),
                        engine=LocalEngine(jobs=1, runner=FakeWorkers({})), progress=RecordingProgress())


# ------------------------------------------------------------------------------------ the worker, for real

def _plan(tmp_path: Path, folder: Path, name: str = "sub") -> Plan:
    paths = _paths(tmp_path)
    (paths.root / "patches").mkdir(exist_ok=True)
    (paths.root / "flake.nix").write_text("{}\n")
    plan = Plan("r1", tmp_path / "out", (Entry(name, folder),), Options(online=False, sandbox=False),
                paths.root, paths.cache)
    plan.write()
    return plan


def _worker(plan: Plan, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pyrepro.engines.worker", "task", str(plan.path), "0",
                             "--engine", "local", *extra], env=plan.worker_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def test_worker__folder_without_code__failed_result_at_init_exit_3(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "README.md").write_text("results only\n")
    plan = _plan(tmp_path, folder)
    p = _worker(plan)
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 3, out
    r = json.loads(plan.task_file(0).read_text())
    assert (r["status"], r["stage"], r["exit_code"]) == ("failed", "init", 3) and "no Python code" in r["reason"]
    assert r["record"]["stages"][0]["status"] == "failed"


@pytest.mark.parametrize("how", ["sigterm", "stop_file"])
def test_worker__stopped_while_waiting_for_the_model__interrupted_result_exit_130(tmp_path: Path, how: str) -> None:
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "run.py").write_text("import six\n")
    plan = _plan(tmp_path, folder)
    stop = tmp_path / "stop"
    with cachelock.held(plan.cache, f"reproduce-sub-{batch.root_digest(plan.root)}"):
        p = _worker(plan, *(["--stop-file", str(stop)] if how == "stop_file" else []))
        for _ in range(200):  # until it waits for the lock this test holds
            if plan.log_file(0).parent.exists() and p.poll() is None and \
                    cachelock.lock_path(plan.cache, f"reproduce-sub-{batch.root_digest(plan.root)}").exists():
                break
            time.sleep(0.05)
        time.sleep(1.0)
        if how == "sigterm":
            p.send_signal(signal.SIGTERM)
        else:
            stop.touch()
        out, _ = p.communicate(timeout=60)
    assert p.returncode == 130, out
    r = json.loads(plan.task_file(0).read_text())
    assert r["status"] == "interrupted" and "before the reproduction started" in r["reason"]
    assert "waiting for" in out  # it said whom it waited for


# ------------------------------------------------------------------------------------ the CLI

def test_batch_cli__bad_manifest__exit_3_with_location(write_files: Write, capsys: pytest.CaptureFixture[str]) -> None:
    root = _subs(write_files)
    (root / "m.toml").write_text('[[submission]]\nfolder = "subs/alpha"\nfolder2 = "x"\n')
    code = main(["batch", str(root / "m.toml"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 3 and doc["error"]["location"] == {"path": str(root / "m.toml"), "line": 3,
                                                      "key": "submission[0].folder2"}


def test_batch_cli__report_only__report_from_results(write_files: Write, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    root = _subs(write_files)
    entries, _ = batch.entries_from_folder(root / "subs")
    out = tmp_path / "out"
    batch.record_result(out, {**_result(entries[0], "passed"), "stage": "imports", "category": 1, "seconds": 3.0})
    code = main(["batch", str(root / "subs"), "--out", str(out), "--report-only", "--json"])
    res = json_result(capsys.readouterr().out)
    assert code == 0 and res["statuses"]["passed"] == 1 and res["statuses"]["pending"] == 2
    assert res["report"]["html"] == str(out.resolve() / "report.html") and (out / "report.html").is_file()


def test_batch_cli__local_engine_end_to_end__json_shape(write_files: Write, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from pyrepro.engines import local as local_engine

    root = _subs(write_files)
    paths = _paths(tmp_path)
    (paths.root / "flake.nix").write_text("{}\n")
    monkeypatch.setenv("PYREPRO_ROOT", str(paths.root))
    monkeypatch.setattr(local_engine.LocalEngine, "__init__", _init_with(FakeWorkers({"gamma": "failed"})))
    code = main(["batch", str(root / "subs"), "--out", str(tmp_path / "out"), "-j", "2", "--json"])
    res = json_result(capsys.readouterr().out)
    assert code == 0 and res["statuses"]["passed"] == 2 and res["statuses"]["failed"] == 1
    assert res["engine"]["engine"] == "local" and res["engine"]["finished"] is True
    assert sorted(res["ran"]) == ["alpha", "beta", "gamma"]
    row = next(r for r in res["results"] if r["name"] == "gamma")
    assert set(row) >= {"status", "stage", "category", "seconds", "reason", "next_step", "exit_code", "log"}
    code = main(["batch", str(root / "subs"), "--out", str(tmp_path / "out"), "--fail-on-failure"])
    assert code == 1


def _init_with(runner: Any) -> Any:
    real = LocalEngine.__init__

    def init(self: LocalEngine, **kw: Any) -> None:
        real(self, **{**kw, "runner": runner, "tick": 0.01})

    return init


def test_worker_env__sandbox_off_and_paths__passed_to_every_worker(tmp_path: Path) -> None:
    plan = Plan("r", tmp_path, (), Options(sandbox=False), tmp_path / "root", tmp_path / "cache")
    env = plan.worker_env()
    assert env["PYREPRO_SANDBOX"] == "off" and env["PYREPRO_ROOT"] == str(tmp_path / "root")
    assert Plan("r", tmp_path, (), Options(), tmp_path, tmp_path).worker_env().get("PYREPRO_SANDBOX") == \
        os.environ.get("PYREPRO_SANDBOX")
