"""The SLURM engine: a batch as one job array, and a final job that gathers the results.

pyrepro writes two job scripts into the run's folder and submits them with ``sbatch``; SLURM
schedules everything (no scheduler of pyrepro's own):

- ``array.sbatch``: ``--array=0-(N-1)%K``, one task per submission (a worker, ``python -m
  pyrepro.engines.worker task PLAN $SLURM_ARRAY_TASK_ID``), at most K at once (``throttle``), each
  with the time limit ``--time`` = the reproduction's budget plus a margin, its own log
  (``logs/<index>.log``), and the project root and the cache (``PYREPRO_ROOT``, ``PYREPRO_CACHE``)
  of the submitting process: on a cluster both must be on a filesystem every node mounts, as must
  the Python that runs pyrepro (the scripts name it by its path);
- ``gather.sbatch``: ``--dependency=afterany:<array>``, ``python -m pyrepro.engines.worker gather
  PLAN``: every task's result into ``results.jsonl`` (a task that left none, because the
  scheduler ended it, is recorded as crashed with its log's tail) and the report.

``wait``: after submitting, follow the jobs (``squeue``, and the tasks' result files) with the
progress display until the gather job has written ``gathered.json``; if the jobs left the queue
without it (the gather job was cancelled), gather here. Without ``wait`` the command returns once
both jobs are submitted; ``pyrepro batch`` with the same ``--out`` later shows the results (and
refuses to start while an array of that folder is still queued).
"""

from __future__ import annotations

import json
import math
import shlex
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pyrepro import proc
from pyrepro.batch import EngineReport, Plan, gather, progress_line
from pyrepro.errors import UsageError
from pyrepro.fsutil import atomic_write_text
from pyrepro.proc import Runner
from pyrepro.progress import Progress

#: Minutes a task may run past its reproduction's budget (start-up on a busy node, waiting for the
#: cache lock of the same model, writing the result) before SLURM's time limit ends it
MARGIN_MINUTES = 10
#: SLURM's default MaxArraySize is 1001: indices 0..1000
MAX_ARRAY = 1001
DEFAULT_THROTTLE = 16


def _q(s: object) -> str:
    return shlex.quote(str(s))


def array_script(plan: Plan, *, throttle: int, sbatch_args: Sequence[str] = (), margin: int = MARGIN_MINUTES,
                 job_name: str = "pyrepro-batch") -> str:
    """The job array's script: one task per entry of ``plan``."""
    n = len(plan.entries)
    lines = ["#!/bin/bash", f"# pyrepro batch, run {plan.run}: {n} submission(s), one array task each.",
             "# Written by pyrepro (pyrepro/engines/slurm.py); submitted with sbatch.",
             f"#SBATCH --job-name={job_name}",
             f"#SBATCH --array=0-{n - 1}%{max(1, throttle)}",
             f"#SBATCH --output={plan.dir / 'logs' / '%a.log'}",
             f"#SBATCH --chdir={plan.dir}",
             "#SBATCH --cpus-per-task=1"]
    if plan.options.budget:
        lines.append(f"#SBATCH --time={math.ceil(plan.options.budget / 60) + margin}")
    lines += [f"#SBATCH {a}" for a in sbatch_args]
    env = {k: v for k, v in plan.worker_env().items() if k.startswith("PYREPRO_") or k == "PYTHONUNBUFFERED"}
    lines += ["set -euo pipefail"] + [f"export {k}={_q(v)}" for k, v in sorted(env.items())]
    lines.append(f"exec {_q(plan.python)} -m pyrepro.engines.worker task {_q(plan.path)} "
                 '"$SLURM_ARRAY_TASK_ID" --engine slurm')
    return "\n".join(lines) + "\n"


def gather_script(plan: Plan, *, sbatch_args: Sequence[str] = (), job_name: str = "pyrepro-gather") -> str:
    """The final step's script: the results of every task, then the report."""
    lines = ["#!/bin/bash", f"# pyrepro batch, run {plan.run}: gathers the array's results (after it, however it ended).",
             f"#SBATCH --job-name={job_name}",
             f"#SBATCH --output={plan.dir / 'logs' / 'gather.log'}",
             f"#SBATCH --chdir={plan.dir}",
             "#SBATCH --cpus-per-task=1",
             "#SBATCH --time=15"]
    lines += [f"#SBATCH {a}" for a in sbatch_args]
    env = {k: v for k, v in plan.worker_env().items() if k.startswith("PYREPRO_")}
    lines += ["set -euo pipefail"] + [f"export {k}={_q(v)}" for k, v in sorted(env.items())]
    lines.append(f"exec {_q(plan.python)} -m pyrepro.engines.worker gather {_q(plan.path)} --engine slurm")
    return "\n".join(lines) + "\n"


def _job_id(stdout: str) -> str:
    """``sbatch --parsable`` prints ``<id>`` or ``<id>;<cluster>``."""
    return stdout.strip().splitlines()[-1].split(";")[0].strip() if stdout.strip() else ""


class SlurmEngine:
    name = "slurm"

    def __init__(self, *, jobs: int | None = None, wait: bool = True, sbatch_args: Sequence[str] = (),
                 runner: Runner = proc.run, poll: float = 5.0, margin: int = MARGIN_MINUTES,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        self.throttle = jobs if jobs and jobs > 0 else DEFAULT_THROTTLE
        self.wait = wait
        self.sbatch_args = tuple(sbatch_args)
        self.runner = runner
        self.poll = poll
        self.margin = margin
        self.sleep = sleep
        self.clock = clock

    def run(self, plan: Plan, *, record: Callable[[dict[str, Any]], None], progress: Progress) -> EngineReport:
        n = len(plan.entries)
        if n > MAX_ARRAY:
            raise UsageError(f"{n} submissions are more than one SLURM array holds by default ({MAX_ARRAY})",
                             hint="split the manifest, or raise MaxArraySize in slurm.conf and the limit here")
        self._refuse_if_queued(plan)
        array = plan.dir / "array.sbatch"
        gatherer = plan.dir / "gather.sbatch"
        atomic_write_text(array, array_script(plan, throttle=self.throttle, sbatch_args=self.sbatch_args,
                                              margin=self.margin))
        atomic_write_text(gatherer, gather_script(plan, sbatch_args=self.sbatch_args))
        env = plan.worker_env()
        array_id = _job_id(self.runner(["sbatch", "--parsable", str(array)], env=env, check=True, timeout=120).stdout)
        gather_id = _job_id(self.runner(["sbatch", "--parsable", f"--dependency=afterany:{array_id}", str(gatherer)],
                                        env=env, check=True, timeout=120).stdout)
        atomic_write_text(plan.dir / "slurm.json", json.dumps({"array": array_id, "gather": gather_id,
                                                               "tasks": n, "throttle": self.throttle}) + "\n")
        jobs = (array_id, gather_id)
        files = (str(array), str(gatherer))
        progress.advance(f"sbatch {array.name}", 0, f"array job {array_id} ({n} tasks, at most {self.throttle} "
                                                    f"at once), gather job {gather_id} after it")
        if not self.wait:
            return EngineReport(self.name, False, jobs, files,
                                note=f"submitted; the gather job {gather_id} writes the results and the report")
        self._follow(plan, jobs, progress)
        if not (plan.dir / "gathered.json").exists():  # the gather job did not run (cancelled, failed)
            gather(plan, engine=self.name)  # appends to results.jsonl itself, as the gather job does
        return EngineReport(self.name, True, jobs, files, note=f"array job {array_id}, gather job {gather_id}")

    def _refuse_if_queued(self, plan: Plan) -> None:
        """An earlier run of this batch folder whose jobs are still queued: the same submissions
        would be submitted twice; refuse (its results land in ``results.jsonl`` when it ends)."""
        for meta in sorted(plan.out.glob("runs/*/slurm.json")):
            if meta.parent == plan.dir or (meta.parent / "gathered.json").exists():
                continue
            try:
                ids = json.loads(meta.read_text(encoding="utf-8"))
                jobs = [str(ids["array"]), str(ids["gather"])]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if self.queued(jobs):
                raise UsageError(f"the SLURM jobs of an earlier run of {plan.out} (run {meta.parent.name}: array "
                                 f"{jobs[0]}, gather {jobs[1]}) are still queued",
                                 hint="wait for them (their results land in results.jsonl), or scancel them, "
                                      "then run the batch again")

    def queued(self, jobs: Sequence[str]) -> dict[str, str] | None:
        """job or task id -> state for what of ``jobs`` is still in the queue; None when squeue
        cannot say (the ids are too old for it: then they are not queued either)."""
        res = self.runner(["squeue", "--noheader", "--array", "--format=%i %T", f"--jobs={','.join(jobs)}"],
                          check=False, timeout=60)
        if res.returncode != 0:
            return {} if "Invalid job id" in (res.stderr + res.stdout) else None
        out = {}
        for ln in res.stdout.splitlines():
            parts = ln.split()
            if len(parts) >= 2:
                out[parts[0]] = parts[1]
        return out

    def _follow(self, plan: Plan, jobs: Sequence[str], progress: Progress) -> None:
        n = len(plan.entries)
        label = f"slurm array {jobs[0]}: {n} submission{'s' if n != 1 else ''}"
        progress.start(label, total=n)
        started: dict[str, float] = {}
        shown = 0
        misses = 0
        while True:
            finished = sum(1 for i in range(n) if plan.task_file(i).exists())
            passed = sum(1 for i in range(n) if plan.task_file(i).exists() and _passed(plan.task_file(i)))
            states = self.queued(jobs)
            if states is None:  # squeue did not answer: try again, a few times
                misses += 1
                if misses > 3:
                    break
                self.sleep(self.poll)
                continue
            misses = 0
            now = self.clock()
            running = {}
            for job, state in states.items():
                if state == "RUNNING" and job.startswith(f"{jobs[0]}_"):
                    idx = job.split("_", 1)[1]
                    name = plan.entries[int(idx)].name if idx.isdigit() and int(idx) < n else job
                    running[name] = started.setdefault(name, now)
            progress.advance(label, finished - shown, progress_line(finished, passed, running,
                                                                   n - finished - len(running), now))
            shown = finished
            if (plan.dir / "gathered.json").exists():
                break
            if not states:  # nothing of ours queued any more
                break
            self.sleep(self.poll)
        progress.finish(label, f"{shown} of {n} tasks left a result")


def _passed(path: Path) -> bool:
    try:
        return bool(json.loads(path.read_text(encoding="utf-8")).get("status") == "passed")
    except (OSError, ValueError):
        return False
