"""Issue 44, item 1 (SLURM): the batch as a job array and a gather job. With ``sbatch`` faked at the
subprocess chokepoint: the scripts, the submission, following the jobs, gathering when the gather
job did not run, refusing to submit twice. For real: a three-entry array through ``pyrepro batch
--engine slurm`` on a single-node SLURM (tests/slurm/start.sh starts it when none answers, and the
fixture stops it again); skipped only where ``sbatch`` is not installed."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pyrepro import batch
from pyrepro.batch import Entry, Options, Plan
from pyrepro.engines.slurm import SlurmEngine, array_script, gather_script
from pyrepro.errors import UsageError
from pyrepro.proc import Completed
from pyrepro.progress import RecordingProgress

REPO = Path(__file__).resolve().parent.parent
Write = Callable[..., Path]


def _plan(tmp_path: Path, n: int = 3, budget: float | None = 600.0) -> Plan:
    entries = tuple(Entry(f"m{i}", tmp_path / f"s{i}") for i in range(n))
    plan = Plan("run1", tmp_path / "out", entries, Options(budget=budget), tmp_path / "root", tmp_path / "cache")
    plan.write()
    return plan


def test_array_script__one_task_each__throttle_time_limit_logs_and_paths(tmp_path: Path) -> None:
    text = array_script(_plan(tmp_path, 5), throttle=2, sbatch_args=("--partition=cpu",))
    assert "#SBATCH --array=0-4%2" in text
    assert "#SBATCH --time=20" in text  # the 10-minute budget plus the 10-minute margin
    assert f"#SBATCH --output={tmp_path / 'out' / 'runs' / 'run1' / 'logs' / '%a.log'}" in text
    assert "#SBATCH --partition=cpu" in text
    assert f"export PYREPRO_ROOT={tmp_path / 'root'}" in text and f"export PYREPRO_CACHE={tmp_path / 'cache'}" in text
    assert text.rstrip().endswith('task ' + str(tmp_path / "out" / "runs" / "run1" / "plan.json")
                                  + ' "$SLURM_ARRAY_TASK_ID" --engine slurm')
    assert "--time" not in array_script(_plan(tmp_path, 1, budget=None), throttle=1)
    assert "worker gather" in gather_script(_plan(tmp_path))


class FakeSlurm:
    """``sbatch`` and ``squeue`` at the chokepoint: the array's tasks 'run' when it is submitted (each
    writes a passed result file, but the one in ``dead``), the gather job runs ``batch.gather`` unless
    ``cancel_gather``; ``squeue`` shows the jobs for ``polls`` calls, then nothing."""

    def __init__(self, plan: Plan, *, dead: tuple[int, ...] = (), cancel_gather: bool = False, polls: int = 2) -> None:
        self.plan = plan
        self.dead = dead
        self.cancel_gather = cancel_gather
        self.polls = polls
        self.calls: list[list[str]] = []

    def __call__(self, argv: Any, **kw: Any) -> Completed:
        argv = [str(a) for a in argv]
        self.calls.append(argv)
        if argv[0] == "sbatch" and argv[-1].endswith("array.sbatch"):
            for i, e in enumerate(self.plan.entries):
                if i in self.dead:
                    continue
                rec = {"ok": True, "exit_code": 0, "stages": [{"stage": "imports", "status": "ok"}]}
                r = batch.result_of(e, rec, run=self.plan.run, engine="slurm", log=self.plan.log_file(i), seconds=2,
                                    exit_code=0)
                self.plan.task_file(i).write_text(json.dumps(r))
            return Completed(tuple(argv), 0, "41\n", "")
        if argv[0] == "sbatch":
            assert "--dependency=afterany:41" in argv
            if not self.cancel_gather:
                batch.gather(self.plan)
            return Completed(tuple(argv), 0, "42;cluster\n", "")
        if argv[0] == "squeue":
            self.polls -= 1
            out = "41_2 RUNNING\n42 PENDING\n" if self.polls >= 0 else ""
            return Completed(tuple(argv), 0, out, "")
        raise AssertionError(argv)


def test_slurm_engine__submitted_and_followed__gather_job_recorded_everything(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    fake = FakeSlurm(plan, polls=5)
    progress = RecordingProgress()
    rep = SlurmEngine(jobs=2, runner=fake, sleep=lambda s: None).run(plan, record=lambda r: None, progress=progress)
    assert rep.finished and rep.jobs == ("41", "42")
    results = batch.read_results(plan.out / batch.RESULTS)[0]
    assert [(r["name"], r["status"], r["engine"]) for r in results] == [("m0", "passed", "slurm"),
                                                                        ("m1", "passed", "slurm"),
                                                                        ("m2", "passed", "slurm")]
    assert json.loads((plan.dir / "slurm.json").read_text()) == {"array": "41", "gather": "42", "tasks": 3,
                                                                 "throttle": 2}
    assert any("3 done (3 passed)" in str(d) for _k, _l, d in progress.events)


def test_slurm_engine__gather_job_cancelled_and_a_task_killed__gathered_here_crash_named(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    plan.log_file(1).write_text("12:00:01 [start] build m1 env\nslurmstepd: error: *** JOB 41 CANCELLED DUE TO TIME LIMIT ***\n")
    fake = FakeSlurm(plan, dead=(1,), cancel_gather=True, polls=1)
    progress = RecordingProgress()
    rep = SlurmEngine(jobs=2, runner=fake, sleep=lambda s: None).run(plan, record=lambda r: None, progress=progress)
    assert rep.finished and (plan.dir / "gathered.json").is_file()
    results = {r["name"]: r for r in batch.read_results(plan.out / batch.RESULTS)[0]}
    assert results["m1"]["status"] == "crashed" and "TIME LIMIT" in results["m1"]["reason"]
    assert batch.gather(plan) == []  # gathering again adds nothing


def test_slurm_engine__no_wait__returns_once_submitted(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    fake = FakeSlurm(plan, cancel_gather=True)
    rep = SlurmEngine(runner=fake, wait=False).run(plan, record=lambda r: None, progress=RecordingProgress())
    assert not rep.finished and rep.jobs == ("41", "42") and not any(c[0] == "squeue" for c in fake.calls)
    assert "#SBATCH --array=0-2%16" in (plan.dir / "array.sbatch").read_text()  # the default throttle


def test_slurm_engine__earlier_run_still_queued__refuses_to_submit_again(tmp_path: Path) -> None:
    old = _plan(tmp_path)
    (old.dir / "slurm.json").write_text(json.dumps({"array": "7", "gather": "8"}))
    new = Plan("run2", old.out, old.entries, old.options, old.root, old.cache)
    new.write()

    def runner(argv: Any, **kw: Any) -> Completed:
        assert next(iter(argv)) == "squeue", argv
        return Completed(tuple(argv), 0, "7_3 RUNNING\n", "")

    with pytest.raises(UsageError, match="still queued"):
        SlurmEngine(runner=runner).run(new, record=lambda r: None, progress=RecordingProgress())


def test_slurm_engine__more_than_an_array_holds__usage_error(tmp_path: Path) -> None:
    plan = Plan("r", tmp_path, tuple(Entry(f"m{i}", tmp_path) for i in range(1002)), Options(), tmp_path, tmp_path)
    with pytest.raises(UsageError, match="more than one SLURM array"):
        SlurmEngine(runner=lambda *a, **k: None).run(plan, record=lambda r: None, progress=RecordingProgress())


# ------------------------------------------------------------------------------------ for real

def _answers(env: dict[str, str]) -> bool:
    try:
        res = subprocess.run(["scontrol", "ping"], env=env, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return res.returncode == 0 and "UP" in res.stdout


def _free_port_pair() -> int:
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port < 65000:
            try:
                with socket.socket() as s2:
                    s2.bind(("127.0.0.1", port + 1))
                return port
            except OSError:
                continue
    raise RuntimeError("no two free ports in a row")


@pytest.fixture(scope="module")
def slurm_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A SLURM that answers: the machine's own, or a single-node one started here (and stopped after)."""
    if shutil.which("sbatch") is None:
        pytest.skip("SLURM is not installed (sbatch absent): tests/run.sh installs slurm-wlm and munge as root")
    env = dict(os.environ)
    if _answers(env):
        yield env
        return
    state = tmp_path_factory.mktemp("slurm")
    start = subprocess.run(["bash", str(REPO / "tests" / "slurm" / "start.sh"), str(state)],
                           env={**env, "PYREPRO_SLURM_PORT": str(_free_port_pair())},
                           capture_output=True, text=True, timeout=120)
    try:
        assert start.returncode == 0, f"tests/slurm/start.sh failed:\n{start.stdout}\n{start.stderr}"
        conf = start.stdout.strip().splitlines()[-1].split("=", 1)[1]
        env["SLURM_CONF"] = conf
        assert _answers(env)
        yield env
    finally:
        subprocess.run(["bash", str(REPO / "tests" / "slurm" / "stop.sh"), str(state)], timeout=120)


@pytest.mark.integration
@pytest.mark.network
def test_batch_slurm__three_entry_array_for_real__gathered_with_logs_and_report(
        slurm_env: dict[str, str], tmp_path: Path, write_files: Write) -> None:
    root = write_files({"subs/light_six/run.py": "import six\nprint(six.PY3)\n",
                        "subs/light_six/requirements.txt": "six==1.16.0\n",
                        "subs/light_attrs/run.py": "import attr\n", "subs/light_attrs/requirements.txt": "attrs==23.1.0\n",
                        "subs/no_code/README.md": "results only\n"})
    (root / "m.toml").write_text('[[submission]]\nfolder = "subs/light_six"\n\n[[submission]]\nfolder = "subs/light_attrs"\n'
                                 'name = "attrs_model"\ndate = "2023-06-01"\n\n[[submission]]\nfolder = "subs/no_code"\n')
    project = tmp_path / "proj"
    for d in ("models", "patches"):
        (project / d).mkdir(parents=True)
    (project / "flake.nix").write_text("{}\n")
    env = {**slurm_env, "PYREPRO_ROOT": str(project), "PYREPRO_CACHE": str(tmp_path / "cache")}
    out = tmp_path / "out"
    res = subprocess.run([str(Path(sys.executable).parent / "pyrepro"), "batch", str(root / "m.toml"), "--engine",
                          "slurm", "--jobs", "2", "--budget", "8", "--out", str(out), "--json"], env=env,
                         capture_output=True, text=True, timeout=900)
    doc = json.loads(res.stdout)
    assert res.returncode == 0, (res.stderr[-3000:], doc)
    r = doc["result"]
    assert r["engine"]["engine"] == "slurm" and r["engine"]["finished"] is True and len(r["engine"]["jobs"]) == 2
    rows = {x["name"]: x for x in r["results"]}
    assert (rows["light_six"]["status"], rows["attrs_model"]["status"]) == ("passed", "passed"), rows
    assert (rows["no_code"]["status"], rows["no_code"]["stage"], rows["no_code"]["exit_code"]) == ("failed", "init", 3)
    assert rows["attrs_model"]["date"] == "2023-06-01"
    lines = batch.read_results(out / batch.RESULTS)[0]
    assert sorted(x["name"] for x in lines) == ["attrs_model", "light_six", "no_code"]
    assert {x["engine"] for x in lines} == {"slurm"}
    run_dir = next((out / "runs").iterdir())
    assert "#SBATCH --array=0-2%2" in (run_dir / "array.sbatch").read_text()
    assert sorted(p.name for p in (run_dir / "logs").iterdir()) == ["0.log", "1.log", "2.log", "gather.log"]
    assert "SLURM job" in (run_dir / "logs" / "0.log").read_text()  # the worker ran as an array task
    assert "gathered 3 result(s)" in (run_dir / "logs" / "gather.log").read_text()
    assert (out / "report.html").is_file() and "attrs_model" in (out / "report.md").read_text()
    again = subprocess.run([str(Path(sys.executable).parent / "pyrepro"), "batch", str(root / "m.toml"), "--engine",
                            "slurm", "--out", str(out), "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert json.loads(again.stdout)["result"]["ran"] == []  # resumed: nothing left, nothing submitted

