"""The local engine: a fixed pool of ``jobs`` workers on this machine, all on one cache.

Each task is a worker process (``batch.worker_command``) started through the subprocess chokepoint
(``pyrepro.proc``) from one of ``jobs`` threads; its output goes to its log file. The main thread
alone records results and reports progress (done, passed, running, left, and the slowest running
submission), so neither ``results.jsonl`` nor the progress display is written from two threads.

Ctrl-C or SIGTERM: tasks not started are not started, running workers are asked to stop (a stop
file their watcher sees within a second: each records where it was interrupted), their results are
recorded as interrupted, and the interruption is re-raised. The next batch runs them again.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from pyrepro import proc
from pyrepro.batch import (
    PASSED,
    EngineReport,
    Plan,
    crashed_result,
    one_line,
    progress_line,
    task_result,
    worker_command,
)
from pyrepro.errors import ExternalToolError, MissingToolError
from pyrepro.proc import Runner
from pyrepro.progress import Progress

#: Seconds a worker may run past its reproduction's budget before it is killed (start-up, waiting
#: for another process's build of the same model, writing the record)
MARGIN = 600.0


def default_jobs() -> int:
    """The number of cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class LocalEngine:
    name = "local"

    def __init__(self, *, jobs: int | None = None, runner: Runner = proc.run, tick: float = 2.0,
                 margin: float = MARGIN, clock: Callable[[], float] = time.monotonic) -> None:
        self.jobs = jobs if jobs and jobs > 0 else default_jobs()
        self.runner = runner
        self.tick = tick
        self.margin = margin
        self.clock = clock

    def run(self, plan: Plan, *, record: Callable[[dict[str, Any]], None], progress: Progress) -> EngineReport:
        n = len(plan.entries)
        stop = plan.dir / "stop"
        stop.unlink(missing_ok=True)
        budget = plan.options.budget
        limit = budget + self.margin if budget else None
        running: dict[str, float] = {}
        guard = threading.Lock()
        halt = threading.Event()

        def one(i: int) -> dict[str, Any] | None:
            entry = plan.entries[i]
            if halt.is_set():
                return None  # never started: still to do
            t0 = self.clock()
            with guard:
                running[entry.name] = t0
            try:
                argv = worker_command(plan, i, "--engine", self.name, "--stop-file", str(stop),
                                      "--parent", str(os.getpid()))
                with open(plan.log_file(i), "a", encoding="utf-8") as log:
                    done = self.runner(argv, env=plan.worker_env(), check=False, timeout=limit,
                                       stdout_file=log, stderr_file=log)
                return task_result(plan, i, self.name, self.clock() - t0, done.returncode)
            except ExternalToolError as exc:  # the chokepoint's timeout: the worker was killed
                why = (f"the worker did not end within {limit:.0f} s (the budget plus {self.margin:.0f} s) and was "
                       "killed" if exc.timeout is not None else str(exc))
                return crashed_result(plan, i, self.name, self.clock() - t0, -9, why)
            except MissingToolError as exc:
                return crashed_result(plan, i, self.name, self.clock() - t0, 7, str(exc))
            finally:
                with guard:
                    running.pop(entry.name, None)

        label = f"batch: {n} submission{'s' if n != 1 else ''}, {min(self.jobs, n)} at once"
        counts = {"done": 0, "passed": 0}

        def line() -> str:
            with guard:
                now_running = dict(running)
            return progress_line(counts["done"], counts["passed"], now_running,
                                 n - counts["done"] - len(now_running), self.clock())

        def take(res: dict[str, Any] | None) -> None:
            if res is None:
                return
            record(res)
            counts["done"] += 1
            counts["passed"] += res.get("status") == PASSED
            progress.advance(str(res["name"]), 0, one_line(res))  # a one-off line per finished submission
            progress.advance(label, 1, line())

        progress.start(label, total=n)
        with ThreadPoolExecutor(max_workers=min(self.jobs, n) or 1, thread_name_prefix="batch-worker") as pool:
            futures: set[Future[dict[str, Any] | None]] = {pool.submit(one, i) for i in range(n)}
            try:
                while futures:
                    finished, futures = wait(futures, timeout=self.tick, return_when=FIRST_COMPLETED)
                    for f in finished:
                        take(f.result())
                    if not finished:
                        progress.advance(label, 0, line())
            except BaseException:  # Ctrl-C, SIGTERM: stop, keep what finished, then re-raise
                halt.set()
                stop.touch()
                for f in futures:
                    f.cancel()
                try:
                    for f in futures:
                        if not f.cancelled():
                            take(f.result())
                finally:
                    progress.finish(label, "interrupted: " + line())
                raise
        progress.finish(label, line())
        return EngineReport(self.name, True, note=f"{n} task(s), {min(self.jobs, n)} at once")
