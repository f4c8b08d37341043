"""The worker of a batch: one submission's reproduction in a process of its own.

    python -m pyrepro.engines.worker task PLAN INDEX [--engine local|slurm] [--stop-file F] [--parent PID]
    python -m pyrepro.engines.worker gather PLAN [--engine slurm]

``task`` runs ``pyrepro.reproduce.reproduce`` on entry ``INDEX`` of the plan (``batch.Plan``) and
writes its result line to ``tasks/<INDEX>.json`` (atomically, with SIGTERM held off for that
moment). What it prints (each stage's start and end, with times) goes to its log. It holds the
model's cache lock (``reproduce-<name>-<root digest>``) for the whole reproduction: two workers of
one model on one cache and project take turns instead of writing ``models/<name>/`` together.

SIGTERM and SIGINT become ``KeyboardInterrupt``, as in the CLI: the reproduction records where it
was interrupted and cleans up. A local engine's worker also stops by itself when its batch asks
(``--stop-file`` appears) or is gone (its parent process changed): a killed batch leaves no worker
building behind it.

``gather`` is a SLURM array's final step (``batch.gather``): every task's result into
``results.jsonl``, then the report.

Exit codes: the reproduction's (``pyrepro.errors``: 0 passed, 3..13 the stage's error class), 130
interrupted, 70 a crash of pyrepro itself (the traceback is in the log).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, TextIO

from pyrepro import batch
from pyrepro.fsutil import atomic_write_text

INTERNAL_ERROR = 70


class LogProgress:
    """``pyrepro.progress.Progress`` as plain time-stamped lines in a worker's log: one when a step
    starts, one when it ends (with its time), counted steps, and of a step's details at most one
    every ``every`` seconds."""

    def __init__(self, stream: TextIO | None = None, every: float = 15.0) -> None:
        self.stream = stream or sys.stderr
        self.every = every
        self.started: dict[str, float] = {}
        self.printed: dict[str, float] = {}

    def _say(self, text: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {text}", file=self.stream, flush=True)

    def start(self, label: str, total: int | None = None) -> None:
        self.started[label] = self.printed[label] = time.monotonic()
        self._say(f"[start] {label}" + (f" ({total})" if total else ""))

    def advance(self, label: str, n: int = 1, detail: str = "") -> None:
        now = time.monotonic()
        if label not in self.started or n > 0 or now - self.printed.get(label, 0.0) >= self.every:
            self.printed[label] = now
            self._say(f"[....] {label} {detail}".rstrip())

    def finish(self, label: str, detail: str = "") -> None:
        t0 = self.started.pop(label, None)
        self.printed.pop(label, None)
        took = f" [{time.monotonic() - t0:.1f}s]" if t0 is not None else ""
        self._say(f"[done] {label} {detail}".rstrip() + took)


def _interrupt_on_signals() -> None:
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def _watch(stop_file: Path | None, parent: int | None, interval: float = 0.5) -> None:
    """SIGTERM to this process when the batch asks for a stop or its process is gone."""
    while True:
        if stop_file is not None and stop_file.exists():
            why = "the batch was interrupted"
            break
        if parent is not None and os.getppid() != parent:
            why = "the batch process is gone"
            break
        time.sleep(interval)
    print(f"{time.strftime('%H:%M:%S')} [stop] {why}", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)


def _saved_record(paths: Any, name: str, since: float) -> dict[str, Any] | None:
    """The record ``reproduce`` saved for ``name`` when it was interrupted (only one written by
    this worker: not older than ``since``)."""
    p = paths.cache / "reproduce" / f"{name}.json"
    try:
        if p.stat().st_mtime + 1 < since:
            return None
        d = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return d if isinstance(d, dict) else None


def run_task(plan: batch.Plan, index: int, *, engine: str, stop_file: Path | None = None,
             parent: int | None = None) -> int:
    """Reproduce entry ``index`` of ``plan``; write its result; return the exit code."""
    from pyrepro import cachelock
    from pyrepro import reproduce as rep
    from pyrepro.errors import PyreproError, exit_code_for
    from pyrepro.paths import Paths

    _interrupt_on_signals()
    if stop_file is not None or parent is not None:
        threading.Thread(target=_watch, args=(stop_file, parent), daemon=True, name="batch-watch").start()
    entry = plan.entries[index]
    opt = plan.options
    paths = Paths(root=plan.root, cache=plan.cache)
    log = LogProgress()
    started, t0 = time.time(), time.monotonic()
    record: dict[str, Any] | None = None
    interrupted, reason, code = False, "", 0
    log._say(f"[task] {index}: {entry.name} from {entry.folder} (run {plan.run}, engine {engine}, "
             f"pid {os.getpid()}{', SLURM job ' + os.environ['SLURM_JOB_ID'] if 'SLURM_JOB_ID' in os.environ else ''})")
    try:
        with cachelock.held(paths.cache, f"reproduce-{entry.name}-{batch.root_digest(plan.root)}", progress=log,
                            label=entry.name):
            result = rep.reproduce(entry.folder, paths=paths, name=entry.name, test=opt.test, online=opt.online,
                                   lock_timeout=opt.lock_timeout, progress=log, budget=opt.budget,
                                   uv_first=opt.uv_first, mirror=Path(opt.mirror) if opt.mirror else None)
        record = result.to_json()
        code = int(record.get("exit_code") or 0)
    except KeyboardInterrupt as exc:
        interrupted, code = True, 130
        record = _saved_record(paths, entry.name, started)
        where = batch.stage_reached(record) if record else "before the reproduction started"
        sched = " (in SLURM: the job's time limit, or scancel)" if "SLURM_JOB_ID" in os.environ else ""
        reason = f"interrupted ({exc or 'Ctrl-C'}){sched} at {where}"
    except PyreproError as exc:
        code, reason = exit_code_for(exc), f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # a bug in pyrepro: its traceback in the log, the batch goes on
        traceback.print_exc()
        code, reason = INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc} (traceback in the log)"
    result_line = batch.result_of(entry, record, run=plan.run, engine=engine, log=plan.log_file(index),
                                  seconds=time.monotonic() - t0, exit_code=code, interrupted=interrupted,
                                  reason=reason)
    # the result is written whole or not at all: no signal between the decision and the rename
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    try:
        atomic_write_text(plan.task_file(index), json.dumps(result_line) + "\n")
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    log._say(f"[result] {entry.name}: {batch.one_line(result_line)}")
    return code


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pyrepro.engines.worker")
    sub = ap.add_subparsers(dest="what", required=True)
    t = sub.add_parser("task", help="reproduce one entry of a batch plan")
    t.add_argument("plan", type=Path)
    t.add_argument("index", type=int)
    t.add_argument("--engine", default="slurm")
    t.add_argument("--stop-file", type=Path, default=None)
    t.add_argument("--parent", type=int, default=None)
    g = sub.add_parser("gather", help="every task's result of a plan into results.jsonl, then the report")
    g.add_argument("plan", type=Path)
    g.add_argument("--engine", default="slurm")
    a = ap.parse_args(argv)
    plan = batch.Plan.load(a.plan)
    if a.what == "task":
        if not 0 <= a.index < len(plan.entries):
            print(f"error: task {a.index}: the plan has {len(plan.entries)} entries", file=sys.stderr)
            return 2
        return run_task(plan, a.index, engine=a.engine, stop_file=a.stop_file, parent=a.parent)
    added = batch.gather(plan, engine=a.engine)
    entries = _batch_entries(plan)
    results, _bad = batch.read_results(plan.out / batch.RESULTS)
    summary = batch.summarise(entries, batch.latest(results), out=plan.out, options=plan.options)
    html, _md = batch.write_reports(plan.out, summary)
    print(f"gathered {len(added)} result(s) of run {plan.run} into {plan.out / batch.RESULTS}; report: {html}")
    return 0


def _batch_entries(plan: batch.Plan) -> list[batch.Entry]:
    """Every entry of the batch for its report: this run's, and those of earlier runs' results."""
    entries = {e.name: e for e in plan.entries}
    for r in batch.read_results(plan.out / batch.RESULTS)[0]:
        if r["name"] not in entries:
            entries[r["name"]] = batch.Entry(r["name"], Path(r["folder"]), r.get("date"), r.get("benchmark"),
                                             r.get("where") or "")
    return sorted(entries.values(), key=lambda e: e.name)


if __name__ == "__main__":
    sys.exit(main())
