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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyrepro import proc
from pyrepro.errors import InputError, PyreproError, ResolutionError, UsageError, exit_code_for
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


def reproduce(folder: Path, *, paths: Paths, name: str | None = None, python: str | None = None,
              test: bool = False, online: bool = True, force: bool = False, mirror: Path | None = None,
              lock_timeout: float = 15 * 60, progress: Progress = NULL_PROGRESS, runner: Runner = proc.run,
              clock: Callable[[], float] = time.monotonic) -> Reproduction:
    """Run the stages above on ``folder``; never raises for a stage's failure (it is recorded).
    An interruption (Ctrl-C, SIGTERM, a scheduler's time limit) is recorded too, then re-raised."""
    folder = Path(folder)
    name = name or default_name(folder)
    stages: list[Stage] = []
    rec: dict[str, Any] = {"name": name, "folder": str(folder)}
    t_start = clock()
    try:
        return _reproduce(folder, name, stages, rec, paths=paths, python=python, test=test, online=online,
                          force=force, mirror=mirror, lock_timeout=lock_timeout, progress=progress, runner=runner,
                          clock=clock)
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
    if not spec.python.startswith("3."):
        py2 = ResolutionError(f"Python {spec.python} ({spec.python_reason}): pdm locks for Python 3 only",
                              hint="port the code to Python 3 (a patch series), then rerun with --python 3.X")
        stages.append(Stage("lock", "failed", clock() - t0, str(py2), py2.hint or "", category=4))
        return done(py2)
    try:
        from pyrepro import lock

        record = lock.read_record(spec.dir) if not force else None
        if record is not None and record.get("category") in (1, 2, 3) and not lock.check_lock(spec):
            # the lock on disk matches this pyproject and has its record: reuse it
            rec["relaxed"] = [f"{s.get('summary', '')}: {s.get('reason', '')}" for s in record.get("steps", [])
                              if isinstance(s, dict)]
            stages.append(Stage("lock", "ok", clock() - t0, f"category {record['category']} "
                                f"({record.get('category_label', '')}), existing lock matches the pyproject; reused",
                                category=int(record["category"])))
            return _after_lock(spec, paths, stages, rec, done, mirror=mirror, runner=runner, progress=steps,
                               test=test, clock=clock, online=online, lock_timeout=lock_timeout)
        outcome = lock.lock_model(spec, paths, runner=runner, progress=steps, timeout=lock_timeout)
        rec["relaxed"] = [f"{s.summary}: {s.reason}" for s in outcome.steps]
        if not outcome.ok:
            unlocked = ResolutionError(f"no lock (category {outcome.category}: {outcome.label}): {outcome.message}",
                                       hint=f"read {outcome.record_path or 'lock.toml'}; add a reviewed pin or "
                                            "[mapping] entry to model.toml, then rerun")
            stages.append(Stage("lock", "failed", clock() - t0, gist(str(unlocked)), unlocked.hint or "",
                                category=outcome.category))
            return done(unlocked)
        stages.append(Stage("lock", "ok", clock() - t0,
                            f"category {outcome.category} ({outcome.label}), {outcome.packages} packages"
                            + (f", {len(outcome.steps)} relaxation steps" if outcome.steps else ""),
                            category=outcome.category))
        spec = parse_model(target / "model.toml")  # the lock may have recorded reviewed overrides
    except PyreproError as exc:
        stages.append(Stage("lock", "failed", clock() - t0, gist(str(exc)), _next_step(exc, "see the lock record"),
                            category=4))
        return done(exc)

    return _after_lock(spec, paths, stages, rec, done, mirror=mirror, runner=runner, progress=steps,
                       test=test, clock=clock, online=online, lock_timeout=lock_timeout)


MAX_WHEEL_ROUNDS = 3


def wheel_instead(spec: Any, exc: Any, index: Any, tried: dict[str, set[str]] | None = None
                  ) -> tuple[list[Any], str]:
    """For each locked sdist that did not build, the nearest release with a wheel for the model's
    Python, as relaxation steps (rule ``sdist-to-wheel``); ([], why not) when one has none.
    ``tried``: releases already moved to per package, left out (nequip_mlearn: the relock widened
    scikit-learn==1.0.2 back, as nequip 0.5.5 needs <=1.0.1, and the same sdist came back)."""
    from pyrepro import relax

    steps = []
    for pkg, version in exc.packages:
        versions = index.versions_with_wheel(pkg, spec.python) if index is not None else []
        versions = [v for v in versions if v not in (tried or {}).get(pkg, set())]
        w = relax.nearest_version(version, versions)
        if w is None:
            return [], (f"{pkg} {version} did not build and no release of {pkg} has a wheel for CPython "
                        f"{spec.python}" + ("" if index is not None else " (offline: the index was not asked)"))
        steps.append(relax.Step("sdist-to-wheel", pkg, f"{pkg}=={version}", f"{pkg}=={w}",
                                f"the locked sdist {pkg} {version} did not build here; {w} is the nearest release "
                                f"with a wheel for CPython {spec.python}", ()))
    return steps, ""


def older_python(spec: Any, exc: Any, index: Any, undone: set[str] = frozenset()) -> tuple[str, str] | None:
    """When a locked sdist did not build and no release of it has a wheel for the model's Python
    (nothing for ``wheel_instead`` to move to), or the relock undid that move (``undone``: the
    packages whose wheel release a dependent's bound rules out: nequip 0.5.5 needs scikit-learn
    <=1.0.1, whose wheels stop at 3.9), the Python that sdist was made for: the newest older CPython
    with a wheel of that very release, else the newest CPython released by the day the index
    received it (rule ``sdist-to-older-python``). (python, reason), or None when there is none."""
    import datetime as dt

    from pyrepro.evidence import RELEASES, python_of_day
    from pyrepro.evidence import version_key as _vkey

    if index is None:
        return None
    found = []
    for pkg, version in exc.packages:
        if pkg not in undone and index.versions_with_wheel(pkg, spec.python):
            continue  # a release with a wheel exists: wheel_instead's move, not this one
        older = [v for v, _d in RELEASES if _vkey(v) < _vkey(spec.python)]
        made = next((v for v in reversed(older) if index.has_wheel(pkg, version, v)), None)
        how = f"{made} is the newest older CPython with a wheel of {pkg} {version}" if made else ""
        if made is None:
            day = index.uploaded(pkg, version)
            try:
                made = python_of_day(dt.date.fromisoformat(day)) if day else None
            except ValueError:
                made = None
            how = f"{made} was the newest CPython when the index received that sdist ({day})"
        if made is not None and _vkey(made) < _vkey(spec.python):
            found.append((made, pkg, version, how))
    if not found:
        return None
    made, pkg, version, how = min(found, key=lambda f: _vkey(f[0]))
    why = ("the move to a wheel release was undone by the relock (a dependent's bound rules it out)" if pkg in undone
           else f"no release of {pkg} has a wheel for it")
    return made, (f"{made}: the locked sdist {pkg} {version} did not build for CPython {spec.python} and {why}; "
                  f"{how} (rule sdist-to-older-python; before: {spec.python}, "
                  f"{spec.python_reason or 'no reason recorded'})")


def _not_provided(row: tuple[str, str, str]) -> bool:
    """An import check row failing only because no installed distribution provides the module
    (``No module named 'compute_metrics'`` for ``compute_metrics``), not because of an error
    inside installed code."""
    m = re.search(r"No module named '([^']+)'", row[2])
    return bool(m) and m.group(1).split(".")[0] == row[0].split(".")[0]


def _era_relock(spec: Any, paths: Paths, stages: list[Stage], rec: dict[str, Any], inside: list[Any], *,
                runner: Runner, progress: Any, lock_timeout: float | None) -> Any:
    """Imports that fail inside installed code under an as-declared lock (newest releases mixed
    with the submission's old pins: cdvae_model's pandas 1.5.3 with numpy 2.4 fails with "numpy.dtype
    size changed") relock with nothing newer than the submission's date, once. The new spec, or
    None when that does not apply or the relock fails (the import failure then stands)."""
    from pyrepro import lock
    from pyrepro.registry import parse_model

    if not _era_applies(spec):
        return None
    first = inside[0]
    why = f"{first[0]} fails to import inside installed code ({first[2][:160]})"
    try:
        outcome = lock.lock_model(spec, paths, runner=runner, progress=progress, start="date-bounded",
                                  **({"timeout": lock_timeout} if lock_timeout else {}))
    except PyreproError:
        return None
    if not outcome.ok:
        return None
    rec.setdefault("relaxed", []).append(f"relocked with nothing newer than the submission's date: {why} with "
                                         "the as-declared lock (newest releases beside the submission's pins)")
    _relocked(stages, outcome, f"{outcome.strategy} after {why}")
    return parse_model(spec.path)


def _relocked(stages: list[Stage], outcome: Any, how: str) -> None:
    """After a relock that an import failure asked for: the lock row says the new lock and why,
    and the build and imports rows go (the next attempt writes them again)."""
    for i, st in enumerate(stages):
        if st.name == "lock":
            stages[i] = Stage("lock", "ok", st.seconds + outcome.seconds, f"category {outcome.category} "
                              f"({outcome.label}), {outcome.packages} packages, relocked {how}", None, outcome.category)
    stages[:] = [st for st in stages if st.name not in ("build", "imports")]


def _era_applies(spec: Any) -> bool:
    """The model's lock is as-declared and the submission has a date to bound a relock by."""
    from pyrepro import lock

    try:
        record = lock.read_record(spec.dir) or {}
    except PyreproError:
        return False
    return record.get("strategy") == "as-declared" and spec.submitted is not None


def _older_python_relock(spec: Any, paths: Paths, stages: list[Stage], rec: dict[str, Any], inside: list[Any],
                         *, runner: Runner, progress: Any, lock_timeout: float | None) -> Any:
    """Imports that fail inside installed code when no Python was stated (the newest CPython of the
    submission's date was a guess: matgl_mlearn's torch 1.13.1 fails on 3.11 with "mutable default
    ... use default_factory", a 3.11 dataclass rule) move to the next older CPython, once: recorded
    in model.toml, relocked, rebuilt. The new spec, or None when that does not apply."""
    from pyrepro import lock
    from pyrepro.evidence import NO_EVIDENCE, RELEASES
    from pyrepro.interpreters import find_python
    from pyrepro.registry import parse_model

    if not (spec.python_reason or "").startswith(NO_EVIDENCE):
        return None  # a Python the submission states is kept
    versions = [v for v, _d in RELEASES]
    if spec.python not in versions or versions.index(spec.python) == 0:
        return None
    older = versions[versions.index(spec.python) - 1]
    try:
        find_python(older, runner=runner)
    except PyreproError:
        return None
    python_made = [r for r in inside if "shared object file" not in r[2]]  # a missing system library: no
    if not python_made:
        return None
    first = python_made[0]
    reason = (f"{older}: {first[0]} fails to import inside installed code on CPython {spec.python} "
              f"({first[2][:160]}); no Python was stated, so the next older one (rule imports-to-older-python; "
              f"before: {spec.python}, {spec.python_reason})")
    kept = {f: f.read_text(encoding="utf-8") for f in (spec.path, spec.dir / "pyproject.toml", spec.dir / "pdm.lock",
                                                       spec.dir / "lock.toml") if f.is_file()}
    lock.persist_python(lock.LockRequest.from_spec(spec), older, reason)
    new = parse_model(spec.path)
    try:
        outcome = lock.lock_model(new, paths, runner=runner, progress=progress,
                                  **({"timeout": lock_timeout} if lock_timeout else {}))
    except PyreproError:
        outcome = None
    if outcome is None or not outcome.ok:  # no lock for the older Python: every file back as it was
        from pyrepro.fsutil import atomic_write_text

        for f, text in kept.items():
            atomic_write_text(f, text)
        return None
    rec["python"], rec["python_reason"] = older, reason
    rec.setdefault("relaxed", []).append(f"Python {spec.python} -> {older}: {reason}")
    _relocked(stages, outcome, f"for Python {older} after {first[0]} failed to import on {spec.python}")
    return new


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


def _after_lock(spec: Any, paths: Paths, stages: list[Stage], rec: dict[str, Any],
                done: Callable[..., Reproduction], *, mirror: Path | None, runner: Runner,
                progress: _StageProgress, test: bool, clock: Callable[[], float], online: bool = False,
                lock_timeout: float | None = None) -> Reproduction:
    """Stages 3-5 of ``reproduce``: build, imports, run. A locked sdist that does not build is
    replaced by the nearest release with a wheel for the chosen Python (recorded in model.toml as
    a pin with its reason, then relocked and rebuilt; at most MAX_WHEEL_ROUNDS times); when no
    release of it has one, the Python moves to the one of the sdist's day (``older_python``)."""
    from pyrepro.errors import SdistBuildError
    from pyrepro.registry import parse_model

    name = spec.name
    second_chances: set[str] = set()  # each at most once: "era" (_era_relock), "python" (_older_python_relock)
    while True:  # again after a relock that an import failure asked for
        # 3. build
        t0 = clock()
        progress.begin(f"reproduce {name}: build")
        replaced: list[str] = []
        tried: dict[str, set[str]] = {}  # sdist-to-wheel targets already moved to, per package
        index = None
        while True:
            try:
                from pyrepro.backends import local

                built = local.build(spec, paths, mirror=mirror, runner=runner, progress=progress)
                stages.append(Stage("build", "ok", clock() - t0, f"environment {built.env_key[:12]} (Python {built.python})"
                                    + (f"; after sdists that did not build: {'; '.join(replaced)}" if replaced else "")))
                break
            except SdistBuildError as exc:
                if online and index is None:
                    from pyrepro.index import WheelIndex

                    index = WheelIndex(paths.cache)
                rounds_left = len(replaced) < MAX_WHEEL_ROUNDS
                undone = {pkg for pkg, _v in exc.packages if pkg in tried}  # moved before, and back again
                older = older_python(spec, exc, index, undone) if rounds_left and undone else None
                steps, why = wheel_instead(spec, exc, index, tried) if rounds_left and older is None else ([], "")
                for st in steps:
                    tried.setdefault(st.package, set()).add(st.after.split("==", 1)[-1])
                if older is None and rounds_left and not steps:
                    older = older_python(spec, exc, index)
                if older is not None:
                    from pyrepro.interpreters import find_python

                    try:
                        find_python(older[0], runner=runner)
                    except PyreproError as missing:  # say which Python the move needs, change nothing
                        why = f"{why}; {older[1]}; but {missing}"
                        older = None
                if not steps and older is None:
                    _lock_did_not_build(stages, exc)
                    stages.append(Stage("build", "failed", clock() - t0, gist(str(exc)) + (f" ({why})" if why else ""),
                                        _next_step(exc, "read the build log; a reviewed pin in model.toml usually "
                                                        "fixes it")))
                    return done(exc)
                from pyrepro import lock

                if older is not None:
                    lock.persist_python(lock.LockRequest.from_spec(spec), *older)
                    replaced.append(f"Python {spec.python} -> {older[0]}")
                    rec["python"], rec["python_reason"] = older
                    rec.setdefault("relaxed", []).append(f"Python {spec.python} -> {older[0]}: {older[1]}")
                else:
                    lock.persist_to_model_toml(lock.LockRequest.from_spec(spec), steps)
                    replaced += [f"{st.before} -> {st.after}" for st in steps]
                    rec.setdefault("relaxed", []).extend(f"{st.summary}: {st.reason}" for st in steps)
                spec = parse_model(spec.path)
                try:
                    outcome = lock.lock_model(spec, paths, runner=runner, progress=progress,
                                              **({"timeout": lock_timeout} if lock_timeout else {}))
                except PyreproError as lexc:
                    _lock_did_not_build(stages, exc)  # its environment did not build: category 4
                    stages.append(Stage("build", "failed", clock() - t0, f"relock after {replaced[-1]}: {gist(str(lexc))}",
                                        _next_step(lexc, "see the lock record")))
                    return done(lexc)
                if not outcome.ok:
                    from pyrepro.errors import ResolutionError

                    err = ResolutionError(f"relock after {replaced[-1]} failed: {outcome.message}",
                                          hint="add a reviewed pin to model.toml, then rerun")
                    _lock_did_not_build(stages, exc)
                    stages.append(Stage("build", "failed", clock() - t0, gist(str(err)), err.hint or ""))
                    return done(err)
                spec = parse_model(spec.path)
            except PyreproError as exc:
                _lock_did_not_build(stages, exc)
                stages.append(Stage("build", "failed", clock() - t0, gist(str(exc)),
                                    _next_step(exc, "read the build log; a reviewed pin in model.toml usually fixes it")))
                return done(exc)

        # 4. imports
        t0 = clock()
        progress.begin(f"reproduce {name}: import check")
        try:
            from pyrepro import run as run_mod

            modules = run_mod.scanned_modules(spec, built)
            rows = run_mod.check_imports(spec, built, modules=modules) if modules else []
            rec["imports"] = [tuple(r) for r in rows]
            bad = [r for r in rows if r[1] != "ok"]
            if not modules:
                exc2: PyreproError = InputError("the code imports no third-party module: the import check proves nothing",
                                                path=spec.dir / "model.toml",
                                                hint="check that the folder holds the model's code (.py or .ipynb) "
                                                     "and the entry point in model.toml")
                stages.append(Stage("imports", "failed", clock() - t0, str(exc2), exc2.hint or ""))
                return done(exc2)
            inside = [r for r in bad if not _not_provided(r)]
            if inside and "era" not in second_chances and _era_applies(spec):
                second_chances.add("era")  # once; after a Python move the new as-declared lock may need it
                again = _era_relock(spec, paths, stages, rec, inside, runner=runner, progress=progress,
                                    lock_timeout=lock_timeout)
                if again is not None:
                    spec = again
                    continue
            if inside and "python" not in second_chances:
                second_chances.add("python")
                again = _older_python_relock(spec, paths, stages, rec, inside, runner=runner, progress=progress,
                                             lock_timeout=lock_timeout)
                if again is not None:
                    spec = again
                    continue
            if bad:
                from pyrepro.errors import BuildError

                first = bad[0]
                # an import no PyPI distribution provides carries its own reason in model.toml's notes
                known = re.search(rf"unresolved import {re.escape(first[0])}: ([^\n]+)", spec.notes or "")
                exc3 = BuildError(f"{len(bad)} of {len(rows)} modules fail to import: {first[0]}: {first[2][:200]}",
                                  hint=(f"{first[0]} is {known.group(1)}" if known else
                                        f"no locked distribution provides {first[0]}: code from another repository "
                                        "goes into model.toml as [[extra_sources]] (name, repository, 40-hex "
                                        "commit), a PyPI distribution of another name as a [mapping] entry; "
                                        "then rerun" if _not_provided(first) else
                                        "pin the failing distribution to a release of the submission's time in "
                                        "model.toml ([[dependencies.pins]]), relock and rerun"))
                stages.append(Stage("imports", "failed", clock() - t0, str(exc3), exc3.hint or ""))
                return done(exc3)
            stages.append(Stage("imports", "ok", clock() - t0, f"{len(rows)} modules import: "
                                + ", ".join(r[0] for r in rows[:8]) + (" ..." if len(rows) > 8 else "")))
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
                status = "ok" if record.ok else "failed"
                stages.append(Stage("run", status, clock() - t0, f"test run: {record.error or 'exit 0'}"))
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
