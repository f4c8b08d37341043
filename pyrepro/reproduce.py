"""``pyrepro reproduce DIR``: a submission folder in, a verified environment out, no human step.

Stages, each also callable on its own (``init``, ``lock``, ``build``, ``check-imports``, ``run``):

1. ``init``: scan the folder, decide Python/GPU/benchmarks from its evidence (each with its
   reason), write ``models/<name>/`` (a folder outside a pinned mirror goes into the source cache
   by tree id, so the later stages need no mirror);
2. ``lock``: ``pdm lock`` as declared, then date-bounded, then error-guided relaxation, recorded;
3. ``build``: the local backend's hash-checked environment from the lock, plus the staged source;
4. ``imports``: every module the code imports unconditionally must import in that environment
   (at least one, or the stage fails: an environment that imports nothing proves nothing);
5. ``run`` (with ``test``): the model's test mode, when a reviewed patch series gives it one.

The first stage that fails stops the rest; the result names the stage, its category (for the
lock) and the one next step a person would take. ``Reproduction.to_json()`` is the ``--json``
record; the same record is written to ``<cache>/reproduce/<name>.json``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from pyrepro import proc, relax
from pyrepro.errors import BuildError, InputError, PyreproError, ResolutionError, UsageError, exit_code_for
from pyrepro.paths import Paths
from pyrepro.proc import Runner
from pyrepro.progress import NULL_PROGRESS, Progress

STAGES = ("init", "lock", "build", "imports", "run")


@dataclass(frozen=True)
class Stage:
    name: str
    status: str  # ok | failed | skipped
    seconds: float
    detail: str
    next_step: str = ""
    category: int | None = None  # the lock category (1-4), for the lock stage

    def to_json(self) -> dict[str, Any]:
        return {"stage": self.name, "status": self.status, "seconds": round(self.seconds, 2), "detail": self.detail,
                "next_step": self.next_step or None, "category": self.category}


@dataclass(frozen=True)
class Reproduction:
    name: str
    folder: str
    stages: tuple[Stage, ...]
    python: str = ""
    python_reason: str = ""
    relaxed: tuple[str, ...] = ()
    imports: tuple[tuple[str, str, str], ...] = ()
    error: PyreproError | None = field(default=None, compare=False)

    @property
    def ok(self) -> bool:
        return all(s.status != "failed" for s in self.stages)

    @property
    def stopped_at(self) -> Stage | None:
        return next((s for s in self.stages if s.status == "failed"), None)

    @property
    def category(self) -> int | None:
        """The lock's category once it counts: after an environment built from it (a lock whose
        environment did not build is 4); None while the build has not been reached."""
        lock = next((s for s in self.stages if s.name == "lock"), None)
        build = next((s for s in self.stages if s.name == "build"), None)
        if lock is None or lock.category is None:
            return None
        if lock.category == 4 or (build is not None and build.status == "ok"):
            return lock.category
        return None

    def to_json(self) -> dict[str, Any]:
        stop = self.stopped_at
        return {"name": self.name, "folder": self.folder, "ok": self.ok, "category": self.category,
                "python": {"version": self.python, "reason": self.python_reason},
                "stages": [s.to_json() for s in self.stages],
                "stopped_at": stop.name if stop else None,
                "next_step": stop.next_step if stop else None,
                "relaxed": list(self.relaxed),
                "imports": [{"module": m, "status": st, "message": msg} for m, st, msg in self.imports],
                "exit_code": exit_code_for(self.error) if self.error else 0,
                "seconds": round(sum(s.seconds for s in self.stages), 2)}


def default_name(folder: Path) -> str:
    """A model name from a folder name: lower case, ``[a-z0-9_]``, starting with a letter."""
    import unicodedata

    plain = unicodedata.normalize("NFKD", folder.resolve().name).encode("ascii", "ignore").decode()
    base = re.sub(r"[^a-z0-9_]+", "_", plain.lower()).strip("_") or "submission"
    return base if base[0].isalpha() else f"m_{base}"


def gist(text: str, limit: int = 600) -> str:
    """A tool's failure, readable in a table: the first line and the error lines, without the
    warning noise a pip or pdm run prints first."""
    noise = ("WARNING:", "INFO:", "See ", "⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏")
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith(noise)]
    if len(lines) <= 1:
        return text.strip()[:limit]
    errors = [ln.strip() for ln in lines[1:]
              if re.search(r"ERROR|Error\b|error:|Unable|conflict|No matching|NotFound|Impossible|No space", ln)
              and not ln.lstrip().startswith(("Traceback", "File \""))]
    # the last error lines name the cause (a traceback's final line, pip's closing ERROR)
    return " | ".join([lines[0].strip(), *errors[-3:]])[:limit] if errors else " | ".join(ln.strip() for ln in lines[:3])[:limit]


def _next_step(exc: PyreproError, fallback: str) -> str:
    return exc.hint or fallback


class Budget:
    """A time budget for one reproduction: ``runner(...)`` wraps the subprocess chokepoint so every
    command gets at most the time left (its own timeout when shorter), and a command that would
    start after the end, or that the end of the budget cut short, raises ``BudgetError`` naming it.
    ``seconds`` None: no budget (the commands' own timeouts only)."""

    def __init__(self, seconds: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.clock = clock
        self.end = clock() + seconds if seconds is not None else None

    def left(self) -> float | None:
        return None if self.end is None else self.end - self.clock()

    def spent(self) -> bool:
        left = self.left()
        return left is not None and left <= 1.0

    def what(self) -> str:
        return f"the time budget of {self.seconds / 60:.3g} min" if self.seconds is not None else "no time budget"

    def runner(self, inner: Runner) -> Runner:
        if self.end is None:
            return inner
        from pyrepro.errors import BudgetError, ExternalToolError

        def call(cmd: Any, **kw: Any) -> Any:
            left = self.left() or 0.0
            shown = " ".join(str(c) for c in list(cmd)[:3])
            if left <= 1.0:
                raise BudgetError(f"{self.what()} ran out before '{shown} ...' could start",
                                  hint=_BUDGET_HINT)
            own = kw.get("timeout")
            cut = own is None or own > left
            if cut:
                kw["timeout"] = left
            try:
                return inner(cmd, **kw)
            except ExternalToolError as exc:
                if cut and exc.timeout is not None and self.spent():
                    raise BudgetError(f"{self.what()} ran out during '{shown} ...'", hint=_BUDGET_HINT) from exc
                raise

        return call  # type: ignore[return-value]


# How long the sdists' builds of one environment may run in a reproduction, together, whether one
# after another or side by side (``PYREPRO_SDIST_SECONDS`` overrides): a build still running then
# (or not started) is stopped and counted as not built, so the repair planner can move it (a
# release with a wheel, another Python, or dropping a requirement the code never imports) while
# the budget lasts; torch-scatter's build from source alone takes longer than 10 minutes on 2 cores
SDIST_SECONDS = 240.0

# The share of the time left that one lock may take: the build and the import check need the rest
LOCK_SHARE_OF_BUDGET = 0.5


def _relock_kw(rec: dict[str, Any], lock_timeout: float | None) -> dict[str, Any]:
    t = _lock_timeout(rec, lock_timeout)
    return {"timeout": t} if t else {}


def _lock_timeout(rec: dict[str, Any], lock_timeout: float | None) -> float | None:
    """The lock's timeout under the reproduction's budget: at most ``LOCK_SHARE_OF_BUDGET`` of the
    time left (so the as-declared attempt, a third of it, cannot eat the budget by backtracking)."""
    limit = rec.get("budget")
    left = limit.left() if limit is not None else None
    if left is None:
        return lock_timeout
    share = max(60.0, left * LOCK_SHARE_OF_BUDGET)
    return min(lock_timeout, share) if lock_timeout else share


_BUDGET_HINT = "rerun with a larger --budget (minutes): finished stages (the lock, a built environment) are reused"
DEFAULT_BUDGET = 10 * 60  # seconds: the issue-23 budget for one submission on 2 cores


def reproduce(folder: Path, *, paths: Paths, name: str | None = None, python: str | None = None,
              test: bool = False, online: bool = True, force: bool = False, mirror: Path | None = None,
              lock_timeout: float = 15 * 60, progress: Progress = NULL_PROGRESS, runner: Runner = proc.run,
              clock: Callable[[], float] = time.monotonic, budget: float | None = None,
              uv_first: bool | None = None) -> Reproduction:
    """Run the stages above on ``folder``; never raises for a stage's failure (it is recorded).
    An interruption (Ctrl-C, SIGTERM, a scheduler's time limit) is recorded too, then re-raised.
    ``budget``: seconds for the whole reproduction (None: unlimited); when it runs out, the stage
    it ran out in fails saying so (``BudgetError``), never a half-written model folder.
    ``uv_first`` (None: ``UV_FIRST``): every lock of this reproduction is first made from uv's
    resolution for this machine, pdm only where uv cannot answer (``pyrepro.lock.lock_request``)."""
    token = _uv_first.set(UV_FIRST if uv_first is None else uv_first)
    try:
        return _reproduce_in(folder, paths=paths, name=name, python=python, test=test, online=online, force=force,
                             mirror=mirror, lock_timeout=lock_timeout, progress=progress, runner=runner,
                             clock=clock, budget=budget)
    finally:
        _uv_first.reset(token)


#: whether ``reproduce`` locks from uv's resolution first (``pyrepro reproduce --pdm`` says no):
#: the time budget is the issue's 10 minutes; uv locked corpus11 sets in 4.4 and 14.1 s whose pdm lock
#: stages had taken 125 and 69 s
UV_FIRST = True
_uv_first: ContextVar[bool] = ContextVar("pyrepro_reproduce_uv_first", default=False)


def _reproduce_in(folder: Path, *, paths: Paths, name: str | None, python: str | None, test: bool, online: bool,
                  force: bool, mirror: Path | None, lock_timeout: float, progress: Progress, runner: Runner,
                  clock: Callable[[], float], budget: float | None) -> Reproduction:
    folder = Path(folder)
    name = name or default_name(folder)
    stages: list[Stage] = []
    rec: dict[str, Any] = {"name": name, "folder": str(folder)}
    t_start = clock()
    limit = Budget(budget, clock)
    runner = limit.runner(runner)
    rec["budget"] = limit
    try:
        return _reproduce(folder, name, stages, rec, paths=paths, python=python, test=test, online=online,
                          force=force, mirror=mirror, lock_timeout=lock_timeout, progress=progress, runner=runner,
                          clock=clock)
    except OSError as exc:
        # a file a stage needed vanished or could not be written (a cache another run was pruning,
        # a full disk): that stage fails, named, and the record is kept, as for any stage failure
        at = next((st for st in STAGES if st not in {s.name for s in stages}), "run")
        where = f"{exc.filename}: " if exc.filename else ""
        err = BuildError(f"{where}{exc.strerror or exc}",
                         hint="check the disk and that no other pyrepro run is cleaning the same cache "
                              "(PYREPRO_CACHE), then rerun: finished stages are reused")
        stages.append(Stage(at, "failed", clock() - t_start - sum(s.seconds for s in stages), str(err), err.hint or ""))
        stages.extend(Stage(st, "skipped", 0.0, "not reached") for st in STAGES if st not in {s.name for s in stages})
        result = Reproduction(name=name, folder=str(folder), stages=tuple(stages), error=err,
                              python=rec.get("python", ""), python_reason=rec.get("python_reason", ""),
                              relaxed=tuple(rec.get("relaxed", ())), imports=tuple(rec.get("imports", ())))
        _save(paths, result)
        return result
    except KeyboardInterrupt:
        at = next((st for st in STAGES if st not in {s.name for s in stages}), "run")
        stages.append(Stage(at, "failed", clock() - t_start - sum(s.seconds for s in stages),
                            "interrupted (Ctrl-C or a termination signal)", "rerun: finished stages are reused"))
        stages.extend(Stage(st, "skipped", 0.0, "not reached") for st in STAGES if st not in {s.name for s in stages})
        _save(paths, Reproduction(name=name, folder=str(folder), stages=tuple(stages),
                                  python=rec.get("python", ""), python_reason=rec.get("python_reason", "")))
        raise


class _StageProgress:
    """The caller's progress, plus one step per stage that ends when the next stage begins or the
    reproduction stops: a terminal shows each stage's own time, not a spinner that never stops."""

    def __init__(self, inner: Progress) -> None:
        self.inner = inner
        self.open: str | None = None

    def begin(self, label: str) -> None:
        self.end()
        self.inner.start(label)
        self.open = label

    def end(self, detail: str = "") -> None:
        if self.open is not None:
            self.inner.finish(self.open, detail)
            self.open = None

    def start(self, label: str, total: int | None = None) -> None:
        self.inner.start(label, total)

    def advance(self, label: str, n: int = 1, detail: str = "") -> None:
        self.inner.advance(label, n, detail)

    def finish(self, label: str, detail: str = "") -> None:
        self.inner.finish(label, detail)


def _reproduce(folder: Path, name: str, stages: list[Stage], rec: dict[str, Any], *, paths: Paths,
               python: str | None, test: bool, online: bool, force: bool, mirror: Path | None, lock_timeout: float,
               progress: Progress, runner: Runner, clock: Callable[[], float]) -> Reproduction:
    from pyrepro import init as init_mod
    from pyrepro.registry import parse_model

    steps = _StageProgress(progress)

    def done(error: PyreproError | None = None) -> Reproduction:
        steps.end("failed" if error else "")
        limit = rec.get("budget")
        if error is not None and limit is not None and limit.spent() and stages and stages[-1].status == "failed" \
                and "time budget" not in stages[-1].detail:
            # the budget ended it, whatever the tool said about being cut short
            last = stages[-1]
            stages[-1] = Stage(last.name, "failed", last.seconds, f"{limit.what()} ran out: {last.detail}",
                               _BUDGET_HINT, last.category)
        # stages never reached are listed as skipped, so the table always has every stage
        reached = {s.name for s in stages}
        for st in STAGES:
            if st not in reached:
                stages.append(Stage(st, "skipped", 0.0, "not reached" if error else "not asked for"))
        result = Reproduction(name=name, folder=str(folder), stages=tuple(stages), error=error,
                              python=rec.get("python", ""), python_reason=rec.get("python_reason", ""),
                              relaxed=tuple(rec.get("relaxed", ())), imports=tuple(rec.get("imports", ())))
        _save(paths, result)
        return result

    # 1. init
    t0 = clock()
    steps.begin(f"reproduce {name}: init")
    target = paths.models / name
    try:
        existing = parse_model(target / "model.toml") if (target / "model.toml").is_file() else None
        from pyrepro import sources

        tree = sources.git_tree_id(folder) if folder.is_dir() else None
        if existing is not None and not force and existing.source.tree == tree and \
                (python is None or existing.python == python):
            spec = existing
            detail = f"models/{name} already describes this folder (tree {tree[:12] if tree else '?'}); kept"
        else:
            from pyrepro.scan import scan_path

            if folder.is_dir() and scan_path(folder).files == 0:
                raise InputError("no Python code here (.py or .ipynb files): nothing to reproduce", path=folder,
                                 hint="give the folder that holds the submission's code")
            res = init_mod.init_model(folder, name=name, models_dir=paths.models, python=python,
                                      force=force or (existing is not None and existing.source.tree == tree),
                                      mirror=mirror, cache=paths.cache, online=online)
            spec = parse_model(target / "model.toml")
            detail = f"models/{name}: {len(spec.dependencies.scanned)} scanned, {len(spec.dependencies.extra)} extra " \
                     f"requirements; {len(res.scan.guesses)} guesses left for review"
        rec["python"], rec["python_reason"] = spec.python, spec.python_reason
        stages.append(Stage("init", "ok", clock() - t0, detail))
    except PyreproError as exc:
        stages.append(Stage("init", "failed", clock() - t0, str(exc), _next_step(exc, "fix the folder and rerun")))
        return done(exc)

    # 2. lock
    t0 = clock()
    steps.begin(f"reproduce {name}: lock (Python {spec.python})")
    try:
        from pyrepro import lock

        record = lock.read_record(spec.dir) if not force else None
        if record is not None and record.get("category") in (1, 2, 3) and not lock.check_lock(spec):
            # the lock on disk matches this pyproject and has its record: reuse it
            rec["relaxed"] = _step_lines([_recorded_step(s) for s in record.get("steps", []) if isinstance(s, dict)])
            stages.append(Stage("lock", "ok", clock() - t0, f"category {record['category']} "
                                f"({record.get('category_label', '')}), existing lock matches the pyproject; reused",
                                category=int(record["category"])))
            return _after_lock(spec, paths, stages, rec, done, mirror=mirror, runner=runner, progress=steps,
                               test=test, clock=clock, online=online, lock_timeout=lock_timeout)
        outcome = lock.lock_model(spec, paths, runner=runner, progress=steps, timeout=_lock_timeout(rec, lock_timeout),
                                      uv_first=_uv_first.get())
        rec["relaxed"] = _step_lines(outcome.steps)
        moves: list[Any] = []
        if not outcome.ok:
            spec, outcome, why = _repair_lock(spec, outcome, paths, rec, moves, online=online, runner=runner,
                                              progress=steps, lock_timeout=lock_timeout)
        if not outcome.ok:
            unlocked = ResolutionError(f"no lock (category {outcome.category}: {outcome.label}): {outcome.message}"
                                       + (f" ({why})" if why else ""),
                                       hint=f"read {outcome.record_path or 'lock.toml'}; add a reviewed pin or "
                                            "[mapping] entry to model.toml, then rerun")
            stages.append(Stage("lock", "failed", clock() - t0, gist(str(unlocked)), unlocked.hint or "",
                                category=outcome.category))
            return done(unlocked)
        searched_python = outcome.python != spec.python  # the pin search moved it (lock.py, rule pin-search-python)
        spec = parse_model(target / "model.toml")  # the lock may have recorded reviewed overrides or a Python
        if searched_python:
            rec["python"], rec["python_reason"] = spec.python, spec.python_reason
        stages.append(Stage("lock", "ok", clock() - t0,
                            f"category {outcome.category} ({outcome.label}), {outcome.packages} packages"
                            + (f", {len(outcome.steps)} relaxation steps" if outcome.steps else "")
                            + (f"; Python moved to {spec.python}: {rec['python_reason']}"
                               if any(m.ok for m in moves) or searched_python else ""),
                            category=outcome.category))
    except PyreproError as exc:
        stages.append(Stage("lock", "failed", clock() - t0, gist(str(exc)), _next_step(exc, "see the lock record"),
                            category=4))
        return done(exc)

    return _after_lock(spec, paths, stages, rec, done, mirror=mirror, runner=runner, progress=steps,
                       test=test, clock=clock, online=online, lock_timeout=lock_timeout, moves=moves)


def _unlocked_pins(outcome: Any) -> tuple[tuple[str, str], ...]:
    """(distribution, version) of the exact pins the last attempt's resolver said it could not find."""
    from pyrepro import lockplan

    if not outcome.attempts:
        return ()
    last = outcome.attempts[-1]
    return tuple(dict.fromkeys((p, v) for p, v, _r in lockplan.direct_not_found(last.problems, last.requirements)
                               if v))


def _lock_problem(outcome: Any) -> str:
    """What the failed lock's last attempt complained about, in a few words ("conflict (pytorch)"),
    or "" when there is nothing a move of the Python could change: no attempt, a resolver that ran
    out of time (another Python only spends the budget again), the network."""
    if not outcome.attempts:
        return ""
    problems = [p for p in outcome.attempts[-1].problems if p.kind not in ("unknown",)]
    if not problems or any(p.kind in ("timeout", "network") for p in problems):
        return ""
    return ", ".join(dict.fromkeys(f"{p.kind}{f' ({p.package})' if p.package else ''}" for p in problems))


def _repair_lock(spec: Any, outcome: Any, paths: Paths, rec: dict[str, Any], moves: list[Any], *, online: bool,
                 runner: Runner, progress: Any, lock_timeout: float | None) -> tuple[Any, Any, str]:
    """A lock that found no release of exact pins for the model's Python asks the repair planner
    (``repair.next_move`` with ``unlocked``) and performs its moves: (spec, outcome, why the last
    move was not possible or "")."""
    from pyrepro import repair

    index: Any = None
    if online:
        from pyrepro.index import WheelIndex

        index = WheelIndex(paths.cache)
    while not outcome.ok:
        unlocked = _unlocked_pins(outcome)
        failed = "" if unlocked else _lock_problem(outcome)
        if not unlocked and not failed:
            return spec, outcome, ""
        move = plan(_situation(spec, online=online, moves=moves, unlocked=unlocked, lock_failed=failed),
                    index=index, runner=runner)
        if isinstance(move, repair.PinWheels):  # pins moved for the stated Python
            from pyrepro import lock

            new, relocked = _relock_or_restore(
                spec, lambda m=move: lock.persist_to_model_toml(lock.LockRequest.from_spec(spec), list(m.steps)),
                paths, runner=runner, progress=progress, lock_timeout=_lock_timeout(rec, lock_timeout))
            moves.append(repair.Moved("wheels", "lock", ok=new is not None, pins=tuple(
                (st.package, st.after.split("==", 1)[-1]) for st in move.steps)))
            if new is None:
                return spec, outcome, "the pins moved for the stated Python did not lock either"
            rec.setdefault("relaxed", []).extend(f"{st.summary}: {st.reason}" for st in move.steps)
            spec, outcome = new, relocked
            continue
        if not isinstance(move, repair.MovePython):
            return spec, outcome, getattr(move, "reason", "")
        new, relocked = _relock_on_python(spec, move, paths, runner=runner, progress=progress,
                                          lock_timeout=_lock_timeout(rec, lock_timeout))
        moves.append(repair.Moved("python", "lock", ok=new is not None, python=move.python))
        if new is not None:
            rec.setdefault("relaxed", []).append(f"Python {spec.python} -> {move.python}: {move.reason}")
            rec["python"], rec["python_reason"] = move.python, move.reason
            spec, outcome = new, relocked
    return spec, outcome, ""


def _situation(spec: Any, *, online: bool, moves: list[Any], sdists: tuple[tuple[str, str], ...] = (),
               imports: tuple[tuple[str, str, str], ...] = (), unlocked: tuple[tuple[str, str], ...] = (),
               lock_failed: str = "", unavailable: tuple[tuple[str, str, str], ...] = (),
               clashes: Mapping[str, tuple[str, ...]] | None = None, sdists_slow: bool = False,
               sdists_need: tuple[str, ...] = (), branches: Mapping[str, str] | None = None) -> Any:
    """What the repair planner needs to know of ``spec`` and its lock record (``repair.Situation``)."""
    from pyrepro import lock, repair
    from pyrepro.evidence import BOUND_ONLY, NO_EVIDENCE
    from pyrepro.providers import known_absent

    try:
        record = lock.read_record(spec.dir) or {}
    except PyreproError:
        record = {}
    absent = {r[0].split(".")[0]: known_absent(r[0]) for r in imports if repair.not_provided(r)}
    provided: dict[str, tuple[str, str]] = {}
    provided_after: set[str] = set()
    installed: dict[str, tuple[str, str]] = {}
    locked: dict[str, str] = {}
    if imports:  # the providers pyrepro chose ([mapping] entries of rule import-provider), as locked
        locked = _locked_versions(spec)
        from pyrepro.resolve import Resolver

        resolver = Resolver(model_mapping={m.module: m.distribution for m in spec.mapping})
        for r in imports:
            if r[1] == "ok":
                continue
            top = r[0].split(".")[0]
            dist = canonicalize_name(resolver.resolve(top).distribution or top)
            if dist in locked:
                installed[top] = (dist, locked[dist])
        from pyrepro.providers import AFTER_DATE

        for m in spec.mapping:
            if "rule import-provider" in (m.reason or "") and canonicalize_name(m.distribution) in locked:
                provided[m.module.split(".")[0]] = (canonicalize_name(m.distribution),
                                                    locked[canonicalize_name(m.distribution)])
                if AFTER_DATE in (m.reason or ""):
                    provided_after.add(m.module.split(".")[0])
    return repair.Situation(python=spec.python, python_stated=not (spec.python_reason or "").startswith(NO_EVIDENCE),
                            python_reason=spec.python_reason or "", strategy=str(record.get("strategy", "")),
                            dated=spec.submitted is not None, online=online, sdists=tuple(sdists),
                            sdists_slow=sdists_slow, sdists_need=tuple(sdists_need),
                            bound_only=(spec.submitted_reason or "").startswith(BOUND_ONLY),
                            unlocked=tuple(unlocked), lock_failed=lock_failed,
                            imports=tuple(imports), notes=spec.notes or "", moves=tuple(moves),
                            absent={m: why for m, why in absent.items() if why}, provided=provided,
                            provided_after=frozenset(provided_after),
                            installed=installed, locked=locked, unimported=_unimported_only(spec, sdists),
                            unavailable=tuple(unavailable),
                            imported=frozenset(canonicalize_name(d) for d in spec.dependencies.scanned),
                            clashes=dict(clashes or {}), branches=dict(branches or {}))


def _step_lines(steps: Sequence[Any]) -> list[str]:
    """The lines of relaxation steps (``relax.Step``) as ``relaxed`` says them: one per step, but one
    for a run of ``freeze-to-imported`` drops, which share their reason (subtab-tabular, corpus19
    dev: 163 requirements of a pip freeze dropped together)."""
    from pyrepro.lockplan import TO_IMPORTED_RULE

    out: list[str] = []
    run: list[Any] = []

    def flush() -> None:
        if run:
            names = [relax.req_name(st.before) for st in run]
            shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
            out.append(f"{TO_IMPORTED_RULE}: dropped {len(run)} requirement{'s' if len(run) > 1 else ''} ({shown}): "
                       f"{run[0].reason}")
            run.clear()

    for st in steps:
        if st.rule == TO_IMPORTED_RULE and (not run or st.reason == run[0].reason):
            run.append(st)
            continue
        flush()
        if st.rule == TO_IMPORTED_RULE:
            run.append(st)
        else:
            out.append(f"{st.summary}: {st.reason}")
    flush()
    return out


def _recorded_step(step: dict[str, Any]) -> relax.Step:
    """A relaxation step of a lock record, as the fresh lock's step was (the record keeps its
    parts, not its summary)."""
    parts = [str(step.get(k, "")) for k in ("rule", "package", "before", "after")]
    return relax.Step(*parts, str(step.get("reason", "")), ())


def _unimported_only(spec: Any, sdists: Sequence[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    """sdist -> the declared requirements that bring it into the model's pdm.lock, when every one of
    them is a requirement the code never imports (``[dependencies] extra`` with no marker, not a
    scanned distribution, not a provider of ``[mapping]``): ``repair.Situation.unimported``. Read
    from the lock's dependency lists. A lock without them (pip's and uv's) says only the plain case:
    the sdist is itself such a requirement (combo-bo, corpus10 held: its README lists "mpi4py >= 2.0
    (optional)", which no code imports, and mpi4py's sdist needs mpi.h)."""
    import tomllib

    req_name = relax.req_name
    if not sdists:
        return {}
    try:
        data = tomllib.loads((spec.dir / "pdm.lock").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    pkgs = [p for p in data.get("package", []) if isinstance(p, dict)]
    deps = spec.dependencies
    imported = {req_name(n) for n in deps.scanned} | {canonicalize_name(m.distribution) for m in spec.mapping} | \
        {req_name(e) for e in deps.extra if ";" in e}
    unimported = {req_name(e) for e in deps.extra if ";" not in e} - imported
    if not any("dependencies" in p for p in pkgs):
        return {pkg: (canonicalize_name(pkg),) for pkg, _v in sdists if canonicalize_name(pkg) in unimported}
    edges: dict[str, set[str]] = {}
    for p in pkgs:
        edges.setdefault(canonicalize_name(str(p.get("name", ""))), set()).update(
            req_name(str(d)) for d in p.get("dependencies", []))
    roots = (imported | unimported) - {req_name(n) for n in (*deps.remove, *deps.dropped)}

    def reaches(root: str, target: str) -> bool:
        seen, todo = set(), [root]
        while todo:
            n = todo.pop()
            if n == target:
                return True
            if n not in seen:
                seen.add(n)
                todo.extend(edges.get(n, ()))
        return False

    out: dict[str, tuple[str, ...]] = {}
    for pkg, _v in sdists:
        via = {r for r in roots if reaches(r, canonicalize_name(pkg))}
        if via and via <= unimported:
            out[pkg] = tuple(sorted(via))
    return out


def _locked_versions(spec: Any) -> dict[str, str]:
    """name -> version of every package in the model's pdm.lock ({} when it cannot be read)."""
    import tomllib

    try:
        data = tomllib.loads((spec.dir / "pdm.lock").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {canonicalize_name(str(p.get("name", ""))): str(p.get("version", ""))
            for p in data.get("package", []) if isinstance(p, dict)}


def plan(situation: Any, *, index: Any, runner: Runner = proc.run, before: Any = None) -> Any:
    """The repair planner's move for ``situation``, its look-ups answered from ``index`` (a
    ``WheelIndex``; None offline), the interpreter search and ``pyrepro.providers`` (wheels
    released by ``before``, the submission's date): never a ``repair.LookUp``."""
    from dataclasses import replace

    from pyrepro import repair
    from pyrepro.interpreters import find_python

    facts = situation.facts
    for _ in range(64):
        move = repair.next_move(replace(situation, facts=facts))
        if not isinstance(move, repair.LookUp):
            return move
        learned: dict[str, dict[Any, Any]] = {
            "wheel_versions": {(p, py): tuple(index.versions_with_wheel(p, py)) if index is not None else ()
                               for p, py in move.wheel_versions},
            "has_wheel": {(p, v, py): index.has_wheel(p, v, py) if index is not None else None
                          for p, v, py in move.has_wheel},
            "uploaded": {(p, v): index.uploaded(p, v) if index is not None else None for p, v in move.uploads},
            "interpreters": {}, "providers": {},
            "next_release": {},
            "releases": {n: tuple(index.releases_by(n)) if index is not None else () for n in move.releases}}
        for key in move.next_release:
            from pyrepro.providers import next_release

            learned["next_release"][key] = next_release(*key, index) if index is not None else None
        for mod in move.providers:
            from pyrepro.providers import find_provider

            found = find_provider(mod, index, before, situation.python) if index is not None else None
            learned["providers"][mod] = (found.distribution, found.version, found.reason, found.pinned) \
                if found else None
        for py in move.interpreters:
            try:
                find_python(py, runner=runner)
                learned["interpreters"][py] = ""
            except PyreproError as missing:
                learned["interpreters"][py] = str(missing)
        facts = facts.learn(**learned)
    raise RuntimeError("the repair planner kept asking for facts (a bug in pyrepro.repair)")


def _relocked(stages: list[Stage], outcome: Any, how: str) -> None:
    """After a relock that an import failure asked for: the lock row says the new lock and why,
    and the build and imports rows go (the next attempt writes them again)."""
    for i, st in enumerate(stages):
        if st.name == "lock":
            stages[i] = Stage("lock", "ok", st.seconds + outcome.seconds, f"category {outcome.category} "
                              f"({outcome.label}), {outcome.packages} packages, relocked {how}", None, outcome.category)
    stages[:] = [st for st in stages if st.name not in ("build", "imports")]


def _relock_on_python(spec: Any, move: Any, paths: Paths, *, runner: Runner, progress: Any,
                      lock_timeout: float | None) -> tuple[Any, Any]:
    """Perform a ``MovePython`` with ``restore``: record the Python in model.toml, relock
    (``_relock_or_restore``)."""
    from pyrepro import lock

    return _relock_or_restore(spec, lambda: lock.persist_python(lock.LockRequest.from_spec(spec), move.python,
                                                                move.reason),
                              paths, runner=runner, progress=progress, lock_timeout=lock_timeout)


def _relock_with_providers(spec: Any, move: Any, paths: Paths, *, runner: Runner, progress: Any,
                           lock_timeout: float | None) -> tuple[Any, Any]:
    """Perform ``AddProviders``: record each provider with its evidence in model.toml, relock
    (``_relock_or_restore``)."""
    from pyrepro import providers

    return _relock_or_restore(spec, lambda: providers.persist(spec.path, [
        providers.Provider(m, d, v, "", "", why, pinned) for m, d, v, why, pinned in move.providers]),
        paths, runner=runner, progress=progress, lock_timeout=lock_timeout)


def _relock_or_restore(spec: Any, change: Callable[[], object], paths: Paths, *, runner: Runner, progress: Any,
                       lock_timeout: float | None, start: str | None = None) -> tuple[Any, Any]:
    """``change`` model.toml, relock: (new spec, outcome), or (None, None) with model.toml,
    pyproject.toml, pdm.lock and lock.toml back as they were when the change does not lock."""
    from pyrepro import lock
    from pyrepro.fsutil import atomic_write_text
    from pyrepro.registry import parse_model

    kept = {f: f.read_text(encoding="utf-8") for f in (spec.path, spec.dir / "pyproject.toml", spec.dir / "pdm.lock",
                                                       spec.dir / "lock.toml") if f.is_file()}
    if start is None and _record_strategy(spec.dir) == "date-bounded":
        # a relock after a move keeps the date bound an earlier move chose (skip-thoughts, corpus14
        # held: a provider's relock went back to the newest releases, and with them to regex
        # 2022.1.18, whose sdist the date relock had just moved away from)
        start = "date-bounded"
    change()
    new = parse_model(spec.path)
    try:
        outcome = lock.lock_model(new, paths, runner=runner, progress=progress,
                                  prefer=kept.get(spec.dir / "pdm.lock"), uv_first=_uv_first.get(),
                                  **({"timeout": lock_timeout} if lock_timeout else {}),
                                  **({"start": start} if start else {}))
    except PyreproError:
        outcome = None
    if outcome is None or not outcome.ok:
        for f in (spec.path, spec.dir / "pyproject.toml", spec.dir / "pdm.lock", spec.dir / "lock.toml"):
            if f in kept:
                atomic_write_text(f, kept[f])
            elif f.exists():  # made by the failed relock: it was not there before
                f.unlink()
        return None, None
    return new, outcome


def _record_strategy(model_dir: Path) -> str:
    """The strategy the model's lock.toml records ("" when none or unreadable)."""
    from pyrepro import lock

    try:
        return str((lock.read_record(model_dir) or {}).get("strategy", ""))
    except PyreproError:
        return ""


def _lock_text(spec: Any) -> str | None:
    """The model's pdm.lock as it is before a relock (the versions the relock prefers), or None."""
    f = spec.dir / "pdm.lock"
    return f.read_text(encoding="utf-8") if f.is_file() else None


def _lock_did_not_build(stages: list[Stage], exc: PyreproError) -> None:
    """A lock whose locked packages do not install is no lock (category 4): the lock row says so.
    Failures that are not the lock's (network, disk, a missing interpreter) leave it alone."""
    from pyrepro.backends.local import lock_at_fault

    if not lock_at_fault(exc):
        return
    for i, st in enumerate(stages):
        if st.name == "lock" and st.category in (1, 2, 3):
            stages[i] = Stage(st.name, st.status, st.seconds,
                              f"{st.detail}; but its environment did not build, so it counts as category 4 "
                              f"(was {st.category})", st.next_step, 4)


_BUILD_FIX = "read the build log; a reviewed pin in model.toml usually fixes it"


def _after_lock(spec: Any, paths: Paths, stages: list[Stage], rec: dict[str, Any],
                done: Callable[..., Reproduction], *, mirror: Path | None, runner: Runner,
                progress: _StageProgress, test: bool, clock: Callable[[], float], online: bool = False,
                lock_timeout: float | None = None, moves: list[Any] | None = None) -> Reproduction:
    """Stages 3-5 of ``reproduce``: build, imports, run. Every failure of the build or the import
    check asks the repair planner (``pyrepro.repair``) for one move, which this performs and
    records (pins or a Python in model.toml with their reasons, relock, rebuild) until the planner
    gives up or the stage passes."""
    from pyrepro import lock, repair
    from pyrepro.errors import BuildError, ResolutionError, SdistBuildError, SourceUnavailableError
    from pyrepro.registry import parse_model

    name = spec.name
    moves = moves if moves is not None else []  # the lock stage's moves first
    index: Any = None
    if online:
        from pyrepro.index import WheelIndex

        index = WheelIndex(paths.cache)
    def relock_or_fail(persist: Callable[[], None], moved: Any, exc: PyreproError, reason: str, *,
                       start: str | None, built_nothing: bool) -> Any:
        """A build-stage move that edits model.toml (``persist``) and relocks: the new spec, or None
        after every file went back and the build stage was recorded as failed (``built_nothing``:
        the lock's environment never built, so it counts as category 4)."""
        new, _outcome = _relock_or_restore(spec, persist, paths, runner=runner, progress=progress,
                                           lock_timeout=_lock_timeout(rec, lock_timeout), start=start)
        moves.append(replace(moved, ok=new is not None))
        if new is None:
            if built_nothing:
                _lock_did_not_build(stages, exc)
            stages.append(Stage("build", "failed", clock() - t0, gist(str(exc)) + f" ({reason}; that relock found "
                                "no lock)", _next_step(exc, _BUILD_FIX)))
        return new

    while True:  # one build and import check per pass; a relock an import failure asked for starts the next
        # 3. build
        t0 = clock()
        progress.begin(f"reproduce {name}: build")
        replaced: list[str] = []
        while True:
            try:
                from pyrepro.backends import local

                built = local.build(spec, paths, mirror=mirror, runner=runner, progress=progress,
                                    sdist_seconds=local.sdist_cap(SDIST_SECONDS))
                stages.append(Stage("build", "ok", clock() - t0, f"environment {built.env_key[:12]} (Python {built.python})"
                                    + (f"; after sdists that did not build: {'; '.join(replaced)}" if replaced else "")))
                break
            except SourceUnavailableError as exc:
                move = plan(_situation(spec, online=online, moves=moves, unavailable=(exc.source,)), index=index,
                            runner=runner)
                if not isinstance(move, repair.SourceToIndex):
                    stages.append(Stage("build", "failed", clock() - t0,
                                        gist(str(exc)) + (f" ({move.reason})" if getattr(move, "reason", "") else ""),
                                        _next_step(exc, _BUILD_FIX)))
                    return done(exc)
                new = relock_or_fail(
                    lambda mv=move: lock.persist_source_to_index(lock.LockRequest.from_spec(spec), mv.names, mv.reason,
                                                                 mv.dropped, mv.renamed),
                    repair.Moved("source", "build", modules=(*move.names, *move.dropped,
                                                             *(src for src, _n in move.renamed))), exc, move.reason,
                    start="date-bounded" if spec.submitted is not None else None, built_nothing=False)
                if new is None:
                    return done(exc)
                said = [f"{', '.join(move.names)} from the index"] if move.names else []
                said += [f"{', '.join(move.dropped)} dropped"] if move.dropped else []
                rec.setdefault("relaxed", []).append(f"{'; '.join(said)}: {move.reason}")
                replaced.append(f"git source {', '.join(move.names)} -> the index's" if move.names else
                                f"git source {', '.join(move.dropped)} dropped")
                spec = new
                continue
            except SdistBuildError as exc:
                move = plan(_situation(spec, online=online, moves=moves, sdists=exc.packages,
                                       sdists_slow=exc.slow, sdists_need=exc.needs), index=index,
                            runner=runner)
                if isinstance(move, repair.GiveUp):
                    _lock_did_not_build(stages, exc)
                    stages.append(Stage("build", "failed", clock() - t0,
                                        gist(str(exc)) + (f" ({move.reason})" if move.reason else ""),
                                        move.hint or _next_step(exc, _BUILD_FIX)))
                    return done(exc)
                if isinstance(move, repair.RelockByEra):  # an undated sdist that did not build: its day bounds
                    new = relock_or_fail(
                        lambda mv=move: lock.persist_era(lock.LockRequest.from_spec(spec), mv.day, mv.reason),
                        repair.Moved("era-of", "build"), exc, move.reason, start="date-bounded", built_nothing=True)
                    if new is None:
                        return done(exc)
                    rec.setdefault("relaxed", []).append(f"submission date {move.day}: {move.reason}")
                    replaced.append(f"date bound {move.day}")
                    spec = new
                    continue
                if isinstance(move, repair.RelockByDate):  # a dated sdist that did not build: the date bounds
                    taken: list[str] = []
                    new = relock_or_fail(
                        lambda out=taken: out.extend(lock.drop_target_pins(lock.LockRequest.from_spec(spec))),
                        repair.Moved("era", "build"), exc, move.reason, start="date-bounded", built_nothing=True)
                    if new is None:
                        return done(exc)
                    rec.setdefault("relaxed", []).append(
                        f"relocked with nothing newer than the submission's date: {move.reason}"
                        + (f"; pins chosen for the as-declared lock taken back: {', '.join(taken)}" if taken else ""))
                    replaced.append("relocked by the submission's date")
                    spec = new
                    continue
                if isinstance(move, repair.MovePython):
                    lock.persist_python(lock.LockRequest.from_spec(spec), move.python, move.reason)
                    replaced.append(f"Python {spec.python} -> {move.python}")
                    rec["python"], rec["python_reason"] = move.python, move.reason
                    rec.setdefault("relaxed", []).append(f"Python {spec.python} -> {move.python}: {move.reason}")
                    moves.append(repair.Moved("python", "build", python=move.python))
                else:  # PinWheels
                    lock.persist_to_model_toml(lock.LockRequest.from_spec(spec), list(move.steps))
                    replaced += [f"{st.before} -> {st.after}" for st in move.steps]
                    rec.setdefault("relaxed", []).extend(f"{st.summary}: {st.reason}" for st in move.steps)
                    moves.append(repair.Moved("wheels", "build", pins=tuple(
                        (st.package, st.after.split("==", 1)[-1]) for st in move.steps)))
                before = _lock_text(spec)
                spec = parse_model(spec.path)
                try:
                    outcome = lock.lock_model(spec, paths, runner=runner, progress=progress, prefer=before,
                                              uv_first=_uv_first.get(), **_relock_kw(rec, lock_timeout))
                except PyreproError as lexc:
                    _lock_did_not_build(stages, exc)  # its environment did not build: category 4
                    stages.append(Stage("build", "failed", clock() - t0, f"relock after {replaced[-1]}: {gist(str(lexc))}",
                                        _next_step(lexc, "see the lock record")))
                    return done(lexc)
                if not outcome.ok:
                    err = ResolutionError(f"relock after {replaced[-1]} failed: {outcome.message}",
                                          hint="add a reviewed pin to model.toml, then rerun")
                    _lock_did_not_build(stages, exc)
                    stages.append(Stage("build", "failed", clock() - t0, gist(str(err)), err.hint or ""))
                    return done(err)
                spec = parse_model(spec.path)
            except PyreproError as exc:
                _lock_did_not_build(stages, exc)
                stages.append(Stage("build", "failed", clock() - t0, gist(str(exc)), _next_step(exc, _BUILD_FIX)))
                return done(exc)

        # 4. imports
        t0 = clock()
        progress.begin(f"reproduce {name}: import check")
        relocked = False
        accepted: Any = None  # repair.AcceptBranches: failing modules imported only under a run-time if
        try:
            from pyrepro import run as run_mod

            modules = run_mod.scanned_modules(spec, built)
            rows = run_mod.check_imports(spec, built, modules=modules, runner=runner) if modules else []
            rec["imports"] = [tuple(r) for r in rows]
            if not modules:
                exc2: PyreproError = InputError("the code imports no third-party module: the import check proves nothing",
                                                path=spec.dir / "model.toml",
                                                hint="check that the folder holds the model's code (.py or .ipynb) "
                                                     "and the entry point in model.toml")
                stages.append(Stage("imports", "failed", clock() - t0, str(exc2), exc2.hint or ""))
                return done(exc2)
            while any(r[1] != "ok" for r in rows):
                # who ships each checked module (a failure in pymc3 may come of two distributions
                # shipping theano, whose own import passes)
                clashes = run_mod.module_owners(built, [r[0] for r in rows])
                move = plan(_situation(spec, online=online, moves=moves, imports=tuple(tuple(r) for r in rows),
                                       clashes=clashes, branches=run_mod.branch_only_modules(
                                           spec, built, failing=[r[0] for r in rows if r[1] != "ok"])),
                            index=index, runner=runner, before=spec.submitted)
                if isinstance(move, repair.AcceptBranches):
                    accepted = move
                    rec["imports_accepted"] = [list(m) for m in move.modules]
                    break
                if isinstance(move, repair.AddProviders):
                    new, outcome = _relock_with_providers(spec, move, paths, runner=runner, progress=progress,
                                                          lock_timeout=_lock_timeout(rec, lock_timeout))
                    mods = tuple(p[0] for p in move.providers)
                    moves.append(repair.Moved("provider", "imports", ok=new is not None, modules=mods))
                    if new is not None:
                        rec.setdefault("relaxed", []).extend(f"{m} provided by {d}=={v}: {why}"
                                                             for m, d, v, why, _p in move.providers)
                        _relocked(stages, outcome, "after adding " + ", ".join(
                            f"{d} (ships {m})" for m, d, _v, _w, _p in move.providers))
                        spec, relocked = new, True
                        break
                    continue
                if isinstance(move, repair.PinProvider):
                    step = relax.Step(move.rule, move.distribution, move.distribution, move.spec, move.reason, ())
                    new, outcome = _relock_or_restore(
                        spec, lambda st=step: lock.persist_to_model_toml(lock.LockRequest.from_spec(spec), [st]),
                        paths, runner=runner, progress=progress, lock_timeout=_lock_timeout(rec, lock_timeout))
                    moves.append(repair.Moved(move.kind, "imports",
                                              ok=new is not None, modules=(move.module,),
                                              pins=((move.distribution, move.version),)))
                    if new is not None:
                        rec.setdefault("relaxed", []).append(
                            f"{move.distribution} {move.before} -> {move.version}: {move.reason}")
                        _relocked(stages, outcome, f"after moving {move.distribution} {move.before} -> {move.version}")
                        spec, relocked = new, True
                        break
                    continue
                if isinstance(move, repair.DropClash):
                    step = relax.Step("module-clash", move.distribution, move.distribution, "", move.reason, ())
                    new, outcome = _relock_or_restore(
                        spec, lambda st=step: lock.persist_to_model_toml(lock.LockRequest.from_spec(spec), [st]),
                        paths, runner=runner, progress=progress, lock_timeout=_lock_timeout(rec, lock_timeout))
                    moves.append(repair.Moved("clash", "imports", ok=new is not None, modules=(move.module,)))
                    if new is not None:
                        rec.setdefault("relaxed", []).append(f"{move.distribution} dropped: {move.reason}")
                        _relocked(stages, outcome, f"after dropping {move.distribution} (module-clash)")
                        spec, relocked = new, True
                        break
                    continue
                if isinstance(move, repair.RelockByEra):
                    new, outcome = _relock_or_restore(
                        spec, lambda mv=move: lock.persist_era(lock.LockRequest.from_spec(spec), mv.day, mv.reason,
                                                               python=mv.python if mv.python != spec.python else None),
                        paths, runner=runner, progress=progress, lock_timeout=_lock_timeout(rec, lock_timeout),
                        start="date-bounded")
                    moves.append(repair.Moved("era-of", "imports", ok=new is not None, python=move.python))
                    if new is not None:
                        rec.setdefault("relaxed", []).append(f"submission date {move.day}: {move.reason}")
                        if move.python != spec.python:
                            rec["python"], rec["python_reason"] = move.python, move.reason
                        _relocked(stages, outcome, f"date-bounded after {move.summary}")
                        spec, relocked = new, True
                        break
                    continue
                if isinstance(move, repair.RelockByDate):
                    taken_back: list[str] = []

                    def by_date(sp: Any = spec, out: list[str] = taken_back) -> None:
                        # pins chosen for the as-declared lock's newest releases (a wheel's nearest
                        # release, a guided resolution's) are taken back: they would move the date bound
                        out.extend(lock.drop_target_pins(lock.LockRequest.from_spec(sp)))

                    new, outcome = _relock_or_restore(spec, by_date, paths, runner=runner, progress=progress,
                                                      lock_timeout=_lock_timeout(rec, lock_timeout),
                                                      start="date-bounded")
                    moves.append(repair.Moved("era", "imports", ok=new is not None))
                    if new is not None:
                        rec.setdefault("relaxed", []).append(
                            f"relocked with nothing newer than the submission's date: {move.reason} with the "
                            "as-declared lock (newest releases beside the submission's pins)"
                            + (f"; pins chosen for that lock taken back: {', '.join(taken_back)}" if taken_back
                               else ""))
                        _relocked(stages, outcome, f"{outcome.strategy} after {move.reason}")
                        spec, relocked = new, True
                        break
                    continue
                if isinstance(move, repair.MovePython):
                    new, outcome = _relock_on_python(spec, move, paths, runner=runner, progress=progress,
                                                     lock_timeout=_lock_timeout(rec, lock_timeout))
                    moves.append(repair.Moved("python", "imports", ok=new is not None, python=move.python))
                    if new is not None:
                        rec.setdefault("relaxed", []).append(f"Python {spec.python} -> {move.python}: {move.reason}")
                        rec["python"], rec["python_reason"] = move.python, move.reason
                        _relocked(stages, outcome, f"for Python {move.python} after {move.summary}")
                        spec, relocked = new, True
                        break
                    continue
                exc3 = BuildError(move.reason or "modules fail to import", hint=move.hint)
                stages.append(Stage("imports", "failed", clock() - t0, str(exc3), exc3.hint or ""))
                return done(exc3)
            if relocked:
                continue
            good = [r for r in rows if r[1] == "ok"]
            stages.append(Stage("imports", "ok", clock() - t0, f"{len(good)} modules import: "
                                + ", ".join(r[0] for r in good[:8]) + (" ..." if len(good) > 8 else "")
                                + (f"; {len(accepted.modules)} imported only where a run may never go (under a "
                                   f"run-time condition, or in a function nothing refers to or whose module the code tries "
                                   f"under except ImportError) do not: "
                                   f"{accepted.summary}" if accepted else "")
                                + (f"; not checked: {'; '.join(aside)}" if (aside := run_mod.unchecked_modules(
                                    spec, built)) else "")))
        except PyreproError as exc:
            stages.append(Stage("imports", "failed", clock() - t0, str(exc), _next_step(exc, "see the import check")))
            return done(exc)
        break

    # 5. run
    if test:
        t0 = clock()
        series = sorted(paths.patch_dir(spec.name).glob("*.patch")) if paths.patch_dir(spec.name).is_dir() else []
        if not series:
            stages.append(Stage("run", "skipped", 0.0, "no reviewed patch series gives this submission a --test "
                                "mode (patches/<name>/); the environment is verified, the run is not",
                                "write a test-mode patch: pyrepro patch new " + spec.name))
        else:
            progress.begin(f"reproduce {name}: test run")
            try:
                from pyrepro import run as run_mod

                record = run_mod.run_model(spec, paths, test=True, mirror=mirror, progress=progress)
                if not record.ok:
                    exc4 = run_mod.run_failure(record)
                    stages.append(Stage("run", "failed", clock() - t0, str(exc4), exc4.hint or ""))
                    return done(exc4)
                stages.append(Stage("run", "ok", clock() - t0, "test run: exit 0, " + record.verdict.tier
                                    if record.verdict is not None else "test run: exit 0"))
            except PyreproError as exc:
                stages.append(Stage("run", "failed", clock() - t0, str(exc), _next_step(exc, "see the run logs")))
                return done(exc)
    result = done()
    progress.finish(f"reproduce {name}: done")
    return result


def _save(paths: Paths, result: Reproduction) -> None:
    import contextlib
    import json

    from pyrepro.fsutil import atomic_write_text

    with contextlib.suppress(OSError):  # the record is a convenience copy; the result is returned anyway
        atomic_write_text(paths.cache / "reproduce" / f"{result.name}.json",
                          json.dumps(result.to_json(), indent=2) + "\n")


def check_name(name: str) -> str:
    from pyrepro.registry import NAME_RE

    if not NAME_RE.match(name):
        raise UsageError(f"--name {name!r}: use a lower-case attribute name such as 'my_model'")
    return name
