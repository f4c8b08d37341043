"""``pyrepro batch``: many submissions in one command, each through ``pyrepro.reproduce.reproduce``.

Input: a folder of contribution folders (each sub-folder with Python code is one submission), or a
manifest file (TOML, one ``[[submission]]`` table each: ``folder``, ``name``, optional ``date`` and
``benchmark``; ``read_manifest``). Output, in the batch folder (``--out``):

- ``results.jsonl``: one JSON line per finished submission, appended as each one finishes
  (``fsutil.append_line``: whole lines, under a file lock, fsynced). The last line of a name wins.
  A batch run again resumes: a submission with a result is not run again, one that was interrupted
  is, and with ``retry_failed`` so are the failures (``pending``).
- ``runs/<run>/``: what one run needs and leaves: ``plan.json`` (the entries still to do, the
  options, the project root and the cache), ``tasks/<i>.json`` (each worker's result),
  ``logs/<i>.log`` (each worker's output), and for SLURM the job scripts.
- ``report.html`` and ``report.md`` (``pyrepro.batch_report``), rewritten when a run ends.

Each submission runs in a worker process of its own (``python -m pyrepro.engines.worker``), so a
crash, a leak or a signal in one never takes the others along; the engines (``pyrepro.engines``:
a local process pool, a SLURM job array) only decide where and when workers run. All workers share
one cache; what they must not make twice at once they take turns on (``pyrepro.cachelock``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import sys
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pyrepro.errors import InputError, NotFoundError, PyreproError, UsageError, toml_error_line
from pyrepro.fsutil import append_line, atomic_write_text
from pyrepro.paths import Paths
from pyrepro.progress import Progress

SCHEMA = 1
RESULTS = "results.jsonl"
MANIFEST_KEYS = ("folder", "name", "date", "benchmark")

# A result's status: passed (every stage asked for is ok), failed (a stage failed: the record says
# which and why), crashed (the worker ended without a record: killed, out of memory, a pyrepro bug),
# interrupted (Ctrl-C, SIGTERM, a scheduler's time limit: run again by the next batch).
PASSED, FAILED, CRASHED, INTERRUPTED, PENDING = "passed", "failed", "crashed", "interrupted", "pending"


class BatchFailures(PyreproError):
    """``--fail-on-failure``: the batch ran, and some submissions did not pass (exit 1)."""


# ------------------------------------------------------------------------------------ the entries

@dataclass(frozen=True)
class Entry:
    """One submission of a batch. ``date`` and ``benchmark`` are what the platform states; they are
    carried into the results and the report (the reproduction itself reads the submission's own
    evidence: ``pyrepro.reproduce`` takes neither)."""

    name: str
    folder: Path
    date: str | None = None
    benchmark: str | None = None
    where: str = ""  # where it was declared: "manifest.toml:12", or the folder it was found in

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "folder": str(self.folder), "date": self.date, "benchmark": self.benchmark,
                "where": self.where}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Entry:
        return cls(str(d["name"]), Path(str(d["folder"])), d.get("date"), d.get("benchmark"), str(d.get("where", "")))


def _name_ok(name: str) -> bool:
    from pyrepro.registry import NAME_RE

    return bool(NAME_RE.match(name))


def _lines_of_tables(text: str, table: str) -> list[tuple[int, int]]:
    """(first line, last line) of each ``[[table]]`` of a TOML text, 1-based, in order."""
    lines = text.splitlines()
    header = re.compile(r"^\s*\[\[\s*" + re.escape(table) + r"\s*\]\]\s*(#.*)?$")
    other = re.compile(r"^\s*\[")
    starts = [i for i, ln in enumerate(lines) if header.match(ln)]
    spans = []
    for n, s in enumerate(starts):
        end = len(lines)
        for j in range(s + 1, starts[n + 1] if n + 1 < len(starts) else len(lines)):
            if other.match(lines[j]):
                end = j
                break
        else:
            end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        spans.append((s + 1, end))
    return spans


def _key_line(text: str, span: tuple[int, int] | None, key: str) -> int | None:
    if span is None:
        return None
    lines = text.splitlines()
    pat = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
    for i in range(span[0], min(span[1], len(lines))):
        if pat.match(lines[i]):
            return i + 1
    return span[0]


def read_manifest(path: Path) -> list[Entry]:
    """The entries of a manifest file: TOML with one ``[[submission]]`` table per submission::

        [[submission]]
        folder = "contributions/alignn_model"   # relative to the manifest's folder
        name = "alignn"                          # optional: from the folder's name
        date = "2023-01-15"                      # optional: the day the platform received it
        benchmark = "dft_3d_exfoliation_energy"  # optional

    Anything else (a syntax error, an unknown key, a folder that does not exist, a name used twice,
    a date that is not a day) is an ``InputError`` naming the file and the line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise NotFoundError(f"manifest not found: {path}", hint="give a manifest file or a folder of "
                                                                  "contribution folders") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", path=path, line=toml_error_line(exc),
                         hint="a manifest is TOML: one [[submission]] table per submission") from exc
    extra = sorted(set(data) - {"submission"})
    if extra:
        raise InputError(f"unknown top-level key {extra[0]!r}", path=path, line=_top_key_line(text, extra[0]),
                         key=extra[0], hint="a manifest holds [[submission]] tables only")
    subs = data.get("submission")
    if not isinstance(subs, list) or not subs:
        raise InputError("no [[submission]] table", path=path, line=1,
                         hint='add one per submission: [[submission]] folder = "..." name = "..."')
    spans = _lines_of_tables(text, "submission")
    base = path.resolve().parent
    out: list[Entry] = []
    seen: dict[str, int | None] = {}
    for i, sub in enumerate(subs):
        span = spans[i] if i < len(spans) else None
        line = span[0] if span else None

        def bad(msg: str, key: str | None = None, hint: str | None = None, *, _span: Any = span,
                _line: int | None = line, _i: int = i) -> InputError:
            return InputError(msg, path=path, line=_key_line(text, _span, key) if key else _line,
                              key=f"submission[{_i}]" + (f".{key}" if key else ""), hint=hint)

        if not isinstance(sub, dict):
            raise bad("a submission must be a table")
        unknown = sorted(set(sub) - set(MANIFEST_KEYS))
        if unknown:
            raise bad(f"unknown key {unknown[0]!r}", unknown[0], f"the keys are {', '.join(MANIFEST_KEYS)}")
        raw = sub.get("folder")
        if not isinstance(raw, str) or not raw.strip():
            raise bad("missing folder", None, 'each submission names its folder: folder = "path/to/it"')
        folder = Path(raw).expanduser()
        folder = (folder if folder.is_absolute() else base / folder).resolve()
        if not folder.is_dir():
            raise bad(f"folder not found: {folder}", "folder", "paths are relative to the manifest's folder")
        name = sub.get("name")
        if name is None:
            from pyrepro.reproduce import default_name

            name = default_name(folder)
        if not isinstance(name, str) or not _name_ok(name):
            raise bad(f"name {name!r} is not a model name", "name",
                      "use a lower-case name of letters, digits, _ and -, starting with a letter")
        if name in seen:
            raise bad(f"name {name!r} is used twice (first at line {seen[name]})", "name",
                      "each submission needs a name of its own: its models/<name>/ folder")
        seen[name] = _key_line(text, span, "name") if "name" in sub else line
        date = sub.get("date")
        if isinstance(date, dt.datetime):
            date = date.date()
        if isinstance(date, dt.date):
            date = date.isoformat()
        elif date is not None:
            try:
                date = dt.date.fromisoformat(str(date)).isoformat()
            except ValueError:
                raise bad(f"date {date!r} is not a day", "date", "write it as YYYY-MM-DD") from None
        bench = sub.get("benchmark")
        if bench is not None and (not isinstance(bench, str) or not bench.strip()):
            raise bad(f"benchmark {bench!r} is not a name", "benchmark")
        out.append(Entry(name, folder, date, bench, f"{path.name}:{line}" if line else path.name))
    return out


def _top_key_line(text: str, key: str) -> int | None:
    pat = re.compile(r"^\s*(\[+\s*)?" + re.escape(key) + r"\b")
    for i, ln in enumerate(text.splitlines()):
        if pat.match(ln):
            return i + 1
    return None


def _has_code(folder: Path) -> bool:
    for _dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
        if any(f.endswith((".py", ".ipynb")) for f in filenames):
            return True
    return False


def entries_from_folder(folder: Path) -> tuple[list[Entry], list[Path]]:
    """Each sub-folder of ``folder`` with Python code (``.py`` or ``.ipynb`` anywhere in it) is one
    submission, named from its folder name (``reproduce.default_name``; a name two folders would
    share gets ``_2``, ``_3`` in sorted order). Returns (entries, sub-folders without code)."""
    from pyrepro.reproduce import default_name

    folder = Path(folder)
    if not folder.is_dir():
        raise NotFoundError(f"not a folder or manifest: {folder}",
                            hint="give a folder of contribution folders or a manifest file (TOML)")
    entries: list[Entry] = []
    no_code: list[Path] = []
    used: set[str] = set()
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")
                      and p.name != "__pycache__"):
        if not _has_code(sub):
            no_code.append(sub)
            continue
        name = base = default_name(sub)
        n = 2
        while name in used:
            name, n = f"{base}_{n}", n + 1
        used.add(name)
        entries.append(Entry(name, sub.resolve(), where=str(folder)))
    if not entries:
        raise InputError("no sub-folder with Python code (.py or .ipynb): nothing to reproduce", path=folder,
                         hint="give the folder that holds one folder per submission, or a manifest")
    return entries, no_code


def load_entries(source: Path) -> tuple[list[Entry], list[Path]]:
    """A manifest file's entries, or a folder's (``entries_from_folder``); and the sub-folders
    without code (a manifest has none)."""
    source = Path(source)
    if source.is_file():
        return read_manifest(source), []
    return entries_from_folder(source)


def chunk(entries: Sequence[Entry], spec: str) -> list[Entry]:
    """Chunk ``I/N`` of ``entries`` (0 <= I < N): the ``I``-th of ``N`` contiguous slices whose sizes
    differ by at most one, so ``N`` machines that each take their own chunk of the same list cover it
    once (the back-catalogue workflow's matrix jobs)."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", spec or "")
    if not m or not 0 <= int(m.group(1)) < int(m.group(2)):
        raise UsageError(f"--chunk {spec!r}: write I/N with 0 <= I < N, e.g. 3/256")
    i, n = int(m.group(1)), int(m.group(2))
    total = len(entries)
    return list(entries[i * total // n:(i + 1) * total // n])


# ------------------------------------------------------------------------------------ options, plan

@dataclass(frozen=True)
class Options:
    """What every reproduction of a batch is asked (``pyrepro reproduce``'s options)."""

    test: bool = False
    budget: float | None = 10 * 60.0  # seconds per submission; None: no limit
    online: bool = True
    lock_timeout: float = 15 * 60.0
    sandbox: bool = True
    uv_first: bool = True
    mirror: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"test": self.test, "budget": self.budget, "online": self.online, "lock_timeout": self.lock_timeout,
                "sandbox": self.sandbox, "uv_first": self.uv_first, "mirror": self.mirror}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Options:
        return cls(**{k: d[k] for k in cls().to_json() if k in d})


@dataclass(frozen=True)
class Plan:
    """One run of a batch: the entries still to do (a worker's task index is its position), with
    everything a worker on another machine needs to run one (``plan.json``)."""

    run: str
    out: Path
    entries: tuple[Entry, ...]
    options: Options
    root: Path
    cache: Path
    python: str = sys.executable

    @property
    def dir(self) -> Path:
        return self.out / "runs" / self.run

    @property
    def path(self) -> Path:
        return self.dir / "plan.json"

    def task_file(self, index: int) -> Path:
        return self.dir / "tasks" / f"{index}.json"

    def log_file(self, index: int) -> Path:
        return self.dir / "logs" / f"{index}.log"

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "run": self.run, "out": str(self.out), "root": str(self.root),
                "cache": str(self.cache), "python": self.python, "options": self.options.to_json(),
                "entries": [e.to_json() for e in self.entries]}

    @classmethod
    def load(cls, path: Path) -> Plan:
        try:
            d = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read the batch plan: {exc}", path=path) from exc
        return cls(str(d["run"]), Path(d["out"]), tuple(Entry.from_json(e) for e in d["entries"]),
                   Options.from_json(d.get("options", {})), Path(d["root"]), Path(d["cache"]),
                   str(d.get("python") or sys.executable))

    def write(self) -> None:
        for sub in ("tasks", "logs"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps(self.to_json(), indent=2) + "\n")

    def worker_env(self) -> dict[str, str]:
        """The environment of a worker: this project and this cache, whoever starts it."""
        env = {**os.environ, "PYREPRO_ROOT": str(self.root), "PYREPRO_CACHE": str(self.cache),
               "PYTHONUNBUFFERED": "1"}
        if not self.options.sandbox:
            env["PYREPRO_SANDBOX"] = "off"
        return env


def new_run_id(clock: Callable[[], float] = time.time) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(clock()))
    return f"{stamp}-{os.getpid()}"


def root_digest(root: Path) -> str:
    """A short digest of a project root: two projects on one cache keep their models apart."""
    return hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:12]


# ------------------------------------------------------------------------------------ results

def stage_reached(record: Mapping[str, Any]) -> str:
    """The stage a reproduction record got to: the failed one, else the last that was ok."""
    if record.get("stopped_at"):
        return str(record["stopped_at"])
    ok = [s.get("stage") for s in record.get("stages", []) if s.get("status") == "ok"]
    return str(ok[-1]) if ok else "init"


def _failed_stage(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next((s for s in record.get("stages", []) if s.get("status") == "failed"), None)


def result_of(entry: Entry, record: Mapping[str, Any] | None, *, run: str, engine: str, log: Path | None,
              seconds: float, exit_code: int, interrupted: bool = False, reason: str = "") -> dict[str, Any]:
    """The result line of one submission: from its reproduction record (``Reproduction.to_json``),
    or without one (the worker crashed: ``reason`` says what is known)."""
    base: dict[str, Any] = {"schema": SCHEMA, **entry.to_json(), "run": run, "engine": engine,
                            "log": str(log) if log else None,
                            "finished": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    if record is None:
        status = INTERRUPTED if interrupted else CRASHED
        return {**base, "status": status, "stage": None, "category": None, "seconds": round(seconds, 2),
                "reason": reason or "the worker ended without a record", "next_step":
                    "run the batch again (it resumes here)" if interrupted else
                    "read the log; rerun with --retry-failed", "exit_code": exit_code, "record": None}
    failed = _failed_stage(record)
    if interrupted:
        status = INTERRUPTED
    elif record.get("ok") and exit_code == 0:
        status = PASSED
    else:
        status = FAILED
    reason = reason or (str(failed.get("detail", "")) if failed else "")
    return {**base, "status": status, "stage": stage_reached(record), "category": record.get("category"),
            "seconds": round(float(record.get("seconds") or seconds), 2), "reason": reason,
            "next_step": (failed.get("next_step") if failed else None) or record.get("next_step"),
            "exit_code": exit_code, "record": dict(record)}


def read_results(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The result lines of ``results.jsonl`` in order, and how many lines were skipped (a line cut
    short by a crash, a line that is not a result)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return [], 0
    out, bad = [], 0
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            d = json.loads(raw)
        except ValueError:
            bad += 1
            continue
        if isinstance(d, dict) and "name" in d and "status" in d:
            out.append(d)
        else:
            bad += 1
    return out, bad


def latest(results: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The last result of each name."""
    out: dict[str, dict[str, Any]] = {}
    for r in results:
        out[str(r["name"])] = dict(r)
    return out


def pending(entries: Sequence[Entry], done: Mapping[str, Mapping[str, Any]], *,
            retry_failed: bool = False) -> list[Entry]:
    """The entries a run still has to do: no result yet (or one for another folder), interrupted,
    and with ``retry_failed`` failed or crashed ones."""
    todo = []
    for e in entries:
        r = done.get(e.name)
        status = r.get("status") if r is not None else None
        if r is None or r.get("folder") != str(e.folder) or status in (INTERRUPTED, PENDING) or \
                (retry_failed and status in (FAILED, CRASHED)):
            todo.append(e)
    return todo


def record_result(out: Path, result: Mapping[str, Any]) -> None:
    """Append one result to the batch's ``results.jsonl`` (whole lines, under a lock)."""
    append_line(Path(out) / RESULTS, json.dumps(result, sort_keys=False, default=str))


# ------------------------------------------------------------------------------------ the engines' contract

@dataclass(frozen=True)
class EngineReport:
    """What an engine says when its ``run`` returns: whether every task of the plan has a result
    in ``results.jsonl`` now (a SLURM array submitted without waiting has not), and what it made
    (job ids, scripts)."""

    engine: str
    finished: bool
    jobs: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "finished": self.finished, "jobs": list(self.jobs), "files": list(self.files),
                "note": self.note or None}


class Engine(Protocol):
    """Runs a plan's tasks somewhere. ``record`` takes each result (and appends it); an engine whose
    results are gathered elsewhere (a SLURM gather job) calls it only when it gathers itself.
    ``progress`` hears what runs, what finished and what is left."""

    name: str

    def run(self, plan: Plan, *, record: Callable[[dict[str, Any]], None], progress: Progress) -> EngineReport: ...


def worker_command(plan: Plan, index: int, *extra: str) -> list[str]:
    """The command line of the worker for task ``index`` of ``plan``."""
    return [plan.python, "-m", "pyrepro.engines.worker", "task", str(plan.path), str(index), *extra]


def crashed_result(plan: Plan, index: int, engine: str, seconds: float, exit_code: int, why: str) -> dict[str, Any]:
    """The result of a task that left no result file: the tail of its log says what is known."""
    log = plan.log_file(index)
    tail = ""
    with contextlib.suppress(OSError):
        tail = " | ".join(ln.strip() for ln in log.read_text(encoding="utf-8", errors="replace").splitlines()[-3:]
                          if ln.strip())
    return result_of(plan.entries[index], None, run=plan.run, engine=engine, log=log, seconds=seconds,
                     exit_code=exit_code, reason=why + (f"; the log ends: {tail[:400]}" if tail else ""))


def task_result(plan: Plan, index: int, engine: str, seconds: float, exit_code: int) -> dict[str, Any]:
    """Task ``index``'s result as its worker wrote it, or a crashed result when it wrote none."""
    try:
        d = json.loads(plan.task_file(index).read_text(encoding="utf-8"))
        if isinstance(d, dict) and d.get("name") == plan.entries[index].name:
            return d
    except (OSError, ValueError):
        pass
    why = (f"the worker was killed by signal {-exit_code}" if exit_code < 0 else
           f"the worker exited {exit_code} without a result")
    return crashed_result(plan, index, engine, seconds, exit_code, why)


def gather(plan: Plan, *, engine: str = "slurm") -> list[dict[str, Any]]:
    """Every task of ``plan`` into ``results.jsonl`` (the SLURM array's final step): each task's
    result file, or a crashed result naming its log when there is none. Idempotent: a task whose
    result of this run is recorded already is not appended again (under a lock, so two gatherers
    cannot both append it)."""
    from pyrepro import cachelock

    with cachelock.held(plan.out, f"gather-{plan.run}"):
        have = {(r.get("run"), r.get("name")) for r in read_results(plan.out / RESULTS)[0]}
        added = []
        for i, e in enumerate(plan.entries):
            if (plan.run, e.name) in have:
                continue
            if plan.task_file(i).exists():
                r = task_result(plan, i, engine, 0.0, 0)
            else:
                r = crashed_result(plan, i, engine, 0.0, -1, "the task left no result (not started, cancelled, or "
                                                             "ended by the scheduler: time limit, memory, node)")
            record_result(plan.out, r)
            added.append(r)
        atomic_write_text(plan.dir / "gathered.json", json.dumps({"run": plan.run, "added": len(added),
                                                                  "at": time.time()}) + "\n")
    return added


# ------------------------------------------------------------------------------------ the summary

def summarise(entries: Sequence[Entry], results: Mapping[str, Mapping[str, Any]], *, out: Path | None = None,
              options: Options | None = None, title: str = "", no_code: Sequence[Path] = ()) -> dict[str, Any]:
    """The batch as the report shows it: counts per status, per stage reached and per lock
    category, and one row per entry (pending ones included)."""
    from pyrepro.reproduce import STAGES

    rows = []
    for e in entries:
        r = results.get(e.name)
        if r is None or r.get("folder") != str(e.folder):
            rows.append({**e.to_json(), "status": PENDING, "stage": None, "category": None, "seconds": None,
                         "reason": "not run yet", "next_step": "run the batch again", "exit_code": None,
                         "log": None, "run": None})
            continue
        rows.append({**e.to_json(), **{k: r.get(k) for k in ("status", "stage", "category", "seconds", "reason",
                                                              "next_step", "exit_code", "log", "run")}})
    statuses = {s: sum(1 for r in rows if r["status"] == s) for s in (PASSED, FAILED, CRASHED, INTERRUPTED, PENDING)}
    by_stage: dict[str, dict[str, int]] = {}
    for st in STAGES:
        here = [r for r in rows if r["stage"] == st]
        if here:
            by_stage[st] = {"passed": sum(1 for r in here if r["status"] == PASSED),
                            "failed": sum(1 for r in here if r["status"] != PASSED)}
    by_category: dict[str, int] = {}
    for r in rows:
        if r["status"] in (PASSED, FAILED):
            k = str(r["category"]) if r["category"] is not None else "none"
            by_category[k] = by_category.get(k, 0) + 1
    done = [r for r in rows if r["status"] not in (PENDING, INTERRUPTED)]
    return {"schema": SCHEMA, "title": title, "out": str(out) if out else None,
            "generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "options": options.to_json() if options else None, "total": len(rows), "done": len(done),
            "statuses": statuses, "by_stage": by_stage, "by_category": dict(sorted(by_category.items())),
            "seconds": round(sum(float(r["seconds"] or 0) for r in done), 1),
            "no_code": [str(p) for p in no_code], "rows": rows}


# ------------------------------------------------------------------------------------ one batch

@dataclass(frozen=True)
class BatchOutcome:
    out: Path
    run: str | None
    engine: EngineReport | None
    ran: tuple[str, ...]
    skipped: tuple[str, ...]  # had a result already (resumed)
    summary: dict[str, Any]
    reports: tuple[Path, ...] = ()
    unreadable_lines: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def all_passed(self) -> bool:
        return bool(self.summary["statuses"][PASSED] == self.summary["total"])

    def to_json(self) -> dict[str, Any]:
        s = self.summary
        return {"out": str(self.out), "run": self.run, "engine": self.engine.to_json() if self.engine else None,
                "entries": s["total"], "ran": list(self.ran), "resumed": len(self.skipped),
                "statuses": s["statuses"], "by_stage": s["by_stage"], "by_category": s["by_category"],
                "results": [{k: v for k, v in r.items() if k != "where"} for r in s["rows"]],
                "report": {"html": str(self.reports[0]) if self.reports else None,
                           "markdown": str(self.reports[1]) if len(self.reports) > 1 else None},
                "unreadable_lines": self.unreadable_lines, "notes": list(self.notes)}


def default_out(source: Path) -> Path:
    """The batch folder for ``source`` when ``--out`` is not given: ``<source name>.batch`` in
    the current folder (a manifest's stem, a folder's name)."""
    source = Path(source)
    stem = source.stem if source.is_file() else (source.resolve().name or "batch")
    return Path.cwd() / f"{stem}.batch"


def write_reports(out: Path, summary: Mapping[str, Any]) -> tuple[Path, Path]:
    """``report.html`` and ``report.md`` of the batch folder, from ``summary``."""
    from pyrepro import batch_report

    html, md = Path(out) / "report.html", Path(out) / "report.md"
    atomic_write_text(html, batch_report.render_html(summary))
    atomic_write_text(md, batch_report.render_markdown(summary))
    return html, md


def run_batch(entries: Sequence[Entry], *, out: Path, paths: Paths, options: Options, engine: Engine,
              progress: Progress, retry_failed: bool = False, no_code: Sequence[Path] = (), title: str = "",
              clock: Callable[[], float] = time.time) -> BatchOutcome:
    """Run what is left of a batch on ``engine``; append each result as it finishes; write the
    report. An interruption (Ctrl-C, SIGTERM) records the interrupted ones, writes the report of
    what is done, and is re-raised."""
    from pyrepro import cachelock
    from pyrepro.cachelock import LockTimeout

    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    try:
        with cachelock.held(out, "batch", timeout=0.0):
            return _run_locked(entries, out=out, paths=paths, options=options, engine=engine, progress=progress,
                               retry_failed=retry_failed, no_code=no_code, title=title, clock=clock)
    except LockTimeout:
        raise UsageError(f"another pyrepro batch is running on {out}",
                         hint="wait for it to end, or give this one another --out") from None


def _run_locked(entries: Sequence[Entry], *, out: Path, paths: Paths, options: Options, engine: Engine,
                progress: Progress, retry_failed: bool, no_code: Sequence[Path], title: str,
                clock: Callable[[], float]) -> BatchOutcome:
    results, bad = read_results(out / RESULTS)
    done = latest(results)
    todo = pending(entries, done, retry_failed=retry_failed)
    skipped = tuple(e.name for e in entries if e not in todo)
    notes = []
    if bad:
        notes.append(f"{bad} line(s) of {out / RESULTS} could not be read (cut short by a crash?) and were skipped")
    report: EngineReport | None = None
    run: str | None = None
    if todo:
        run = new_run_id(clock)
        plan = Plan(run, out, tuple(todo), options, paths.root, paths.cache)
        plan.write()
        try:
            report = engine.run(plan, record=lambda r: record_result(out, r), progress=progress)
        finally:
            results, bad = read_results(out / RESULTS)
            summary = summarise(entries, latest(results), out=out, options=options, title=title, no_code=no_code)
            reports = write_reports(out, summary)
    else:
        summary = summarise(entries, done, out=out, options=options, title=title, no_code=no_code)
        reports = write_reports(out, summary)
        notes.append("every entry has a result already" + ("" if retry_failed else
                                                            " (--retry-failed reruns the failures)"))
    return BatchOutcome(out, run, report, tuple(e.name for e in todo), skipped, summary, reports, bad, tuple(notes))


def report_only(entries: Sequence[Entry], *, out: Path, options: Options | None = None, title: str = "",
                no_code: Sequence[Path] = ()) -> BatchOutcome:
    """Rewrite the report of a batch folder from its ``results.jsonl`` (after gathering results of
    several machines into it, for example), running nothing."""
    out = Path(out).resolve()
    results, bad = read_results(out / RESULTS)
    summary = summarise(entries, latest(results), out=out, options=options, title=title, no_code=no_code)
    return BatchOutcome(out, None, None, (), tuple(e.name for e in entries), summary, write_reports(out, summary), bad)


def progress_line(done: int, passed: int, running: Mapping[str, float], left: int, now: float) -> str:
    """``12 done (10 passed), 2 running, 26 left; slowest: foo 4m05s`` (``running``: name -> start)."""
    from pyrepro.progress import shorten

    text = f"{done} done ({passed} passed), {len(running)} running, {left} left"
    if running:
        name, started = min(running.items(), key=lambda kv: kv[1])
        text += f"; slowest: {name} {_age(now - started)}"
    return shorten(text)


def _age(seconds: float) -> str:
    s = int(max(0.0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def one_line(result: Mapping[str, Any]) -> str:
    """A finished submission in one line, for the progress display."""
    status = result.get("status")
    secs = result.get("seconds")
    took = f" in {_age(float(secs))}" if isinstance(secs, int | float) else ""
    if status == PASSED:
        return f"passed ({result.get('stage')}){took}"
    if status == FAILED:
        cat = f", category {result['category']}" if result.get("category") is not None else ""
        return f"failed at {result.get('stage')}{cat}{took}: {str(result.get('reason') or '')[:90]}"
    return f"{status}{took}: {str(result.get('reason') or '')[:90]}"


__all__ = ["CRASHED", "FAILED", "INTERRUPTED", "PASSED", "PENDING", "RESULTS", "BatchFailures", "BatchOutcome",
           "Engine", "EngineReport", "Entry", "Options", "Plan", "gather", "latest", "load_entries", "pending",
           "read_manifest", "read_results", "record_result", "result_of", "run_batch", "summarise"]
