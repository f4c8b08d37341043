"""Locking: a hash-checked ``pdm.lock`` per model, by a recorded, ordered strategy.

Split by concern: ``pyrepro.lockplan`` (pure) decides each next attempt from the results so far;
``pyrepro.pdmrun`` runs one ``pdm lock`` attempt; ``pyrepro.relax`` (pure) reads resolver errors
and holds the relaxation rules; ``pyrepro.lockrecord`` is the outcome and its ``lock.toml``. This
module drives them: ``lock_model(spec, paths, runner)`` / ``lock_request(req, ...)`` run what the
planner asks for (the pinned ``pdm lock`` for the model's Python on linux x86_64, and aarch64
when that resolves too), look up the facts it needs, and write the files:

1. ``as-declared``: the model's pyproject (declared pins + reviewed overrides);
2. ``date-bounded``: the same, with nothing newer than the submission date
   (``pdm lock --exclude-newer``);
3. ``relaxed``: error-guided relaxation, one rule of ``pyrepro.relax.RULES`` per attempt,
   each step logged with the resolver text that triggered it;
4. give up with a report (category 4).

``pdm.lock`` is replaced only after a successful lock (temp file + ``os.replace``): a failed or
interrupted lock leaves the previous one untouched.

``check_lock(spec)`` verifies offline that ``pdm.lock``'s content hash equals the hash pdm
computes from ``pyproject.toml`` and that every package file has ``file`` and ``hash``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import tomlkit
from packaging.utils import canonicalize_name

from pyrepro import lockplan, pinsearch, piplock, proc, relax, uvtool
from pyrepro.errors import (
    InputError,
    NetworkError,
    NotFoundError,
    PyreproError,
    ResolutionError,
)
from pyrepro.fsutil import atomic_write_text
from pyrepro.interpreters import era_pythons, lock_range
from pyrepro.lockplan import MAX_STEPS, STRATEGIES, Strategy  # noqa: F401  (re-exported)
from pyrepro.lockrecord import (  # noqa: F401  (re-exported: the record lives in pyrepro/lockrecord.py)
    CATEGORIES,
    RECORD_SCHEMA,
    UV_LOCKED,
    Attempt,
    Drift,
    LockOutcome,
    SearchRecord,
    _ml,
    _pdm_version,
    _tbl,
    confirmed_category,
    read_record,
    record_build,
    render_record,
)
from pyrepro.paths import Paths, cache_dir

# the pdm attempt (command, environment, output reading) lives in pyrepro/pdmrun.py; these names
# stay importable from here
from pyrepro.pdmrun import (  # noqa: F401
    PDM_COMPAT_CONSTRAINTS,
    PLATFORMS,
    TRANSIENT,
    TRANSIENT_PAUSE,
    TRANSIENT_RETRIES,
    ResolverDetail,
    _lock_args,
    _pdm_env,
    _prepare_compat,
    _quiet,
    _Run,
    _run_pdm,
    _timed_out,
    _trim,
    needs_stand_in,
    pdm_cache_dir,
    pdm_command,
    stand_in_interpreter,
)
from pyrepro.proc import Runner
from pyrepro.progress import NULL_PROGRESS, Progress, output_detail
from pyrepro.registry import ModelSpec
from pyrepro.resolve import dummy_reason, requirement_kind
from pyrepro.types import Location

AUTO_REASON = "auto-relaxed by pyrepro lock"
DECLARED_REASON = "declared by the submission"  # pins 'pyrepro init' copies from the declared metadata
DEFAULT_TIMEOUT = 20 * 60.0
# The as-declared attempt (the newest releases of everything unpinned) is the one that backtracks
# for long: snap_mlearn's ran out of 900 s where the date-bounded attempt then locked in 25 s. It
# gets this share of the per-attempt budget whenever something can follow it: a date-bounded
# attempt, or a resolution uv finds to pin (the slowest as-declared success among the 15 targets
# took 190 s on shared cores; graphgps, corpus5, spent 284 s of a 9.5-minute budget backtracking).
AS_DECLARED_SHARE = 1 / 3


def attempt_budget(strategy: str, bound: str | None, era_bound: str | None, timeout: float,
                   relaxing: bool = True) -> float:
    """Seconds one attempt may take: ``timeout``, or its AS_DECLARED_SHARE for an as-declared
    attempt when a date-bounded attempt (the submission's date) or relaxation (which asks uv
    for a resolution when the resolver times out) can follow it."""
    if strategy == "as-declared" and bound is None and (era_bound is not None or relaxing):
        return timeout * AS_DECLARED_SHARE
    return timeout


@dataclass(frozen=True)
class LockProblem:
    """One thing ``check_lock`` found wrong."""

    path: Path
    message: str
    key: str = ""

    def __str__(self) -> str:
        return f"{self.path}{f' [{self.key}]' if self.key else ''}: {self.message}"


@dataclass(frozen=True)
class LockRequest:
    """What to lock: a folder with a pyproject.toml, and the facts about its model."""

    name: str
    project_dir: Path
    python: str
    submitted: dt.date | None = None
    overrides: tuple[tuple[str, str, str], ...] = ()
    fidelity: tuple[str, ...] = ()
    model_toml: Path | None = None
    #: distributions the code imports (model.toml's ``scanned``); None: not known
    imported: frozenset[str] | None = None
    #: what earlier relaxations and repairs left in model.toml (auto-relaxed pins, dropped names):
    #: a lock of that set is not the submission's as declared (category 2 at least)
    carried: tuple[str, ...] = ()
    #: the other CPythons of the submission's era the pin search may move the lock to (nearest first);
    #: () : the Python stays
    pythons: tuple[str, ...] = ()
    #: the submission states its Python: the search moves it only when no relaxation resolves on it
    python_stated: bool = False

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> LockRequest:
        reviewed = tuple((p.name, p.spec, p.reason) for p in spec.dependencies.pins
                         if not p.reason.startswith((AUTO_REASON, DECLARED_REASON)))
        fidelity = []
        for n, s, r in reviewed:
            fidelity.append(f"reviewed pin {n}{s}: {r}")
        for es in spec.extra_sources:
            fidelity.append(f"{es.name} is a git source ({es.repository}@{es.commit[:8]}), not in the lock; "
                            "its declared dependencies are locked instead")
        imported = frozenset(relax.req_name(r) for r in spec.dependencies.scanned)
        carried = tuple(f"{p.name}{p.spec}" for p in spec.dependencies.pins if p.reason.startswith(AUTO_REASON)) + \
            tuple(f"{d} dropped" for d in spec.dependencies.dropped)
        from pyrepro.evidence import NO_EVIDENCE

        stated = not (spec.python_reason or "").startswith(NO_EVIDENCE)
        return cls(name=spec.name, project_dir=spec.dir, python=spec.python, submitted=spec.submitted,
                   overrides=reviewed, fidelity=tuple(fidelity), model_toml=spec.path, imported=imported,
                   carried=carried, pythons=() if piplock.targets_pip(spec.python)
                   else era_pythons(spec.python, spec.submitted), python_stated=stated)


# --------------------------------------------------------------------------- pyproject / hash

def read_pyproject(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise NotFoundError(f"{path} does not exist",
                            hint="generate it first: pyrepro generate NAME") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", path=path, line=getattr(exc, "lineno", None)) from exc


def content_hash(pyproject: dict[str, Any]) -> str:
    """``sha256:<hex>`` exactly as pdm 2.29 computes it (``PyProject.content_hash``) for a
    project that is not a workspace root."""
    project = pyproject.get("project", {})
    settings = pyproject.get("tool", {}).get("pdm", {})
    groups: dict[str, list[Any]] = {}
    for group, deps in pyproject.get("dependency-groups", {}).items():
        groups[_norm(group)] = list(deps)
    for group, deps in settings.get("dev-dependencies", {}).items():
        groups.setdefault(_norm(group), []).extend(deps)
    dump = {
        "sources": settings.get("source", []),
        "dependencies": project.get("dependencies", []),
        "dev-dependencies": groups,
        "optional-dependencies": project.get("optional-dependencies", {}),
        "requires-python": project.get("requires-python", ""),
        "resolution": settings.get("resolution", {}),
    }
    text = json.dumps(dump, sort_keys=True)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def with_dependencies(pyproject_text: str, reqs: Sequence[str]) -> str:
    """The pyproject text with ``[project] dependencies`` replaced (formatting kept)."""
    doc = tomlkit.parse(pyproject_text)
    arr = tomlkit.array()
    arr.multiline(True)
    for r in reqs:
        arr.append(r)
    doc.setdefault("project", tomlkit.table())["dependencies"] = arr
    return tomlkit.dumps(doc)


# --------------------------------------------------------------------------- check

def check_lock_dir(project_dir: Path) -> list[LockProblem]:
    """Offline check of ``project_dir/pdm.lock`` against ``project_dir/pyproject.toml``."""
    pyproject_path = project_dir / "pyproject.toml"
    lock_path = project_dir / "pdm.lock"
    problems: list[LockProblem] = []
    if not pyproject_path.is_file():
        return [LockProblem(pyproject_path, "missing; generate it first (pyrepro generate NAME)")]
    if not lock_path.is_file():
        return [LockProblem(lock_path, "missing; create it with: pyrepro lock NAME")]
    try:
        pyproject = read_pyproject(pyproject_path)
    except InputError as exc:
        return [LockProblem(pyproject_path, str(exc))]
    try:
        lock = tomllib.loads(lock_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        return [LockProblem(lock_path, f"not valid TOML: {exc}; relock with: pyrepro lock NAME")]
    recorded = lock.get("metadata", {}).get("content_hash", "")
    expected = content_hash(pyproject)
    if recorded != expected:
        problems.append(LockProblem(
            lock_path, f"content_hash {recorded or '(none)'} does not match {pyproject_path.name} "
            f"({expected}): the lock is stale; relock with: pyrepro lock {project_dir.name}",
            "metadata.content_hash"))
    if "static_urls" in lock.get("metadata", {}).get("strategy", []):
        problems.append(LockProblem(lock_path, "locked with static_urls: dream2nix needs file+hash entries",
                                    "metadata.strategy"))
    from pyrepro.cycles import unbroken_cycles
    for cyc in unbroken_cycles(lock):
        problems.append(LockProblem(
            lock_path, f"dependency cycle {' -> '.join(cyc)} has no reviewed break: dream2nix would "
            "recurse forever (infinite recursion); add the edge to remove, with a reason, to "
            "pyrepro/data/cycle-breaks.toml", "package"))
    packages = lock.get("package", [])
    if not packages and pyproject.get("project", {}).get("dependencies"):
        problems.append(LockProblem(lock_path, "has no packages", "package"))
    for i, pkg in enumerate(packages):
        name = pkg.get("name", f"#{i}")
        files = pkg.get("files")
        if not files:
            if any(k in pkg for k in ("git", "url", "path")):
                continue  # a VCS/url/path package has no index files
            problems.append(LockProblem(lock_path, f"package {name} {pkg.get('version', '')} has no files",
                                        f"package[{i}].files"))
            continue
        for j, f in enumerate(files):
            if not f.get("file") or not f.get("hash"):
                problems.append(LockProblem(
                    lock_path, f"package {name}: entry {j} lacks {'file' if not f.get('file') else 'hash'}"
                    f" ({f})", f"package[{i}].files[{j}]"))
            elif not re.fullmatch(r"sha256:[0-9a-f]{64}", f["hash"]):
                problems.append(LockProblem(lock_path, f"package {name}: bad hash {f['hash']!r}",
                                            f"package[{i}].files[{j}].hash"))
    return problems


def check_lock(spec: ModelSpec) -> list[LockProblem]:
    """Offline check of a registry model's lock (see ``check_lock_dir``), plus its record."""
    problems = check_lock_dir(spec.dir)
    record = spec.dir / "lock.toml"
    if not record.is_file():
        problems.append(LockProblem(record, f"missing; create it with: pyrepro lock {spec.name}"))
    else:
        try:
            data = tomllib.loads(record.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            return [*problems, LockProblem(record, f"not valid TOML: {exc}")]
        if data.get("category") not in CATEGORIES:
            problems.append(LockProblem(record, "category must be 1..4", "category"))
        lock_path = spec.dir / "pdm.lock"
        if data.get("category") in (1, 2, 3) and lock_path.is_file():
            lock_hash = tomllib.loads(lock_path.read_text(encoding="utf-8")).get("metadata", {}).get(
                "content_hash")
            if data.get("content_hash") != lock_hash:
                problems.append(LockProblem(record, f"content_hash {data.get('content_hash')} is not the "
                                            f"lock's ({lock_hash}); relock with: pyrepro lock {spec.name}",
                                            "content_hash"))
    return problems


# --------------------------------------------------------------------------- interpreters

def find_python(version: str) -> Path:
    """An interpreter for ``major.minor``: the one search of ``pyrepro.interpreters`` (pyenv
    versions newest patch first by number, so 3.10.13 before 3.10.9, then PATH), probed."""
    from pyrepro.interpreters import find_python as find

    return find(version)




_UPLOAD_DATE_SCRIPT = r"""
import json, sys, urllib.request
from packaging.utils import parse_wheel_filename, parse_sdist_filename, canonicalize_name
from packaging.specifiers import SpecifierSet
from packaging.version import Version
name, index = sys.argv[1], sys.argv[3].rstrip("/")
# a version, a specifier (the first release that satisfies it), or "" (the project's first upload)
arg = sys.argv[2]
version = None if not arg else SpecifierSet(arg) if arg[0] in "<>=!~" else SpecifierSet(f"=={arg}")
req = urllib.request.Request(f"{index}/{canonicalize_name(name)}/",
                             headers={"Accept": "application/vnd.pypi.simple.v1+json"})
try:
    data = json.load(urllib.request.urlopen(req, timeout=60))
except Exception as exc:
    print(f"ERROR: {index}: {exc}", file=sys.stderr)
    sys.exit(2)
dates = []
for f in data.get("files", []):
    fn = f.get("filename", "")
    try:
        v = parse_wheel_filename(fn)[1] if fn.endswith(".whl") else parse_sdist_filename(fn)[1]
    except Exception:
        continue
    if (version is None or version.contains(v, prereleases=True)) and f.get("upload-time"):
        dates.append(f["upload-time"][:10])
print(min(dates) if dates else "")
"""


def upload_date(name: str, version: str, *, runner: Runner,
                index: str = "https://pypi.org/simple") -> dt.date | None:
    """The day the index first received a file of ``name==version`` (PEP 700 ``upload-time``; a
    specifier such as ``>=1.2.3,<2``: of the first release that satisfies it; an empty ``version``:
    any file of the project, i.e. its first release), or ``None`` when the index does not say."""
    done = runner([sys.executable, "-c", _UPLOAD_DATE_SCRIPT, name, version, index], check=False, timeout=120)
    text = done.stdout.strip()
    if done.returncode != 0 or not text:
        return None
    try:
        return dt.date.fromisoformat(text.splitlines()[-1].strip())
    except ValueError:
        return None


def _later_bound(problems: Sequence[relax.Problem], reqs: Sequence[str], bound: str,
                 *, runner: Runner) -> tuple[str, str] | None:
    """``lockplan.later_bound`` with the upload days looked up from the index."""
    wanted = lockplan.direct_not_found(problems, reqs)
    uploaded = {(pkg, v): upload_date(pkg, v, runner=runner) for pkg, v, _ in wanted}
    return lockplan.later_bound(problems, reqs, bound, uploaded)


def lookup_versions(names: Sequence[str], python: str, *, runner: Runner) -> dict[str, tuple[str, ...]]:
    """Release lists from the index via ``pip index versions`` (``()``: no such package)."""
    out: dict[str, tuple[str, ...]] = {}
    for name in names:
        cmd = [sys.executable, "-m", "pip", "index", "versions", name, "--python-version", python,
               "--disable-pip-version-check"]
        done = runner(cmd, check=False, timeout=120)
        text = done.stdout + "\n" + done.stderr
        net = [p for p in relax.diagnose(text) if p.kind == "network"]
        if net:
            raise NetworkError(f"index {net[0].index or 'PyPI'} unreachable while looking up {name}: "
                               f"{net[0].excerpt}")
        out[relax.req_name(name)] = relax.pip_versions(text)
    return out


# --------------------------------------------------------------------------- lock facts

def read_lock_versions(lock_text: str) -> dict[str, str]:
    data = tomllib.loads(lock_text)
    return {relax.req_name(p["name"]): str(p.get("version", "")) for p in data.get("package", [])}


def compute_drift(declared: Sequence[str], steps: Sequence[relax.Step], locked: dict[str, str],
                  where: Location | None) -> tuple[Drift, ...]:
    out: list[Drift] = []
    seen: set[str] = set()
    for req in declared:
        v = relax.pinned_version(req)
        name = relax.req_name(req)
        if v is None or name in seen:
            continue
        seen.add(name)
        got = locked.get(name)
        if got is None:
            renamed = [s for s in steps if s.package == name and s.rule == "rename"]
            if renamed:
                new = relax.req_name(renamed[-1].after)
                out.append(Drift(name, v, f"{new} {locked.get(new, '?')}", renamed[-1].reason, where))
            else:
                out.append(Drift(name, v, "(not locked)", "dropped by relaxation", where))
        elif relax.strip_local(got) != relax.strip_local(v) or (got != v and "+" in v):
            why = next((s.reason for s in steps if s.package == name), "resolver choice")
            out.append(Drift(name, v, got, why, where))
    return tuple(out)


def _dummy_problems(locked: dict[str, str]) -> tuple[relax.Problem, ...]:
    # the [dummies] table of pyrepro/data/module_map.toml (one name table for the project)
    return tuple(relax.Problem("build-failed", package=n, excerpt=f"locked {n} {locked[n]}: {msg}")
                 for n in sorted(locked) if (msg := dummy_reason(n)) is not None)


# --------------------------------------------------------------------------- the procedure

def _bound(submitted: dt.date | None) -> str | None:
    """``--exclude-newer`` value: the end of the submission day (UTC)."""
    if submitted is None:
        return None
    return (submitted + dt.timedelta(days=1)).isoformat()


#: the fidelity line of a relock that preferred the versions of the lock it replaced
PREFERRED = "relocked preferring the versions of the lock this one replaced"


def lock_request(req: LockRequest, *, runner: Runner = proc.run, progress: Progress = NULL_PROGRESS,
                 start: Strategy | None = None, timeout: float = DEFAULT_TIMEOUT, aarch64: bool = True,
                 python_exe: Path | None = None, persist: Callable[[LockRequest, Sequence[relax.Step]], None]
                 | None = None, now: Callable[[], dt.datetime] | None = None,
                 prefer: str | None = None, uv_first: bool = False) -> LockOutcome:
    """Lock ``req.project_dir``: ``pyrepro.lockplan`` decides each next attempt from the results
    so far; this runs them (``pdm lock``), looks up what the planner asks for, and writes pdm.lock
    and lock.toml.

    ``uv_first``: every attempt (but Python 2's, which pip locks) is first a lock from uv's
    resolution for this machine's target (CPython ``req.python``, x86_64 Linux), and pdm runs only
    when uv could not answer (an sdist whose metadata uv could not build, a timeout, a file the
    index does not list). ``pyrepro reproduce`` locks so, within its time budget: uv locked
    guacamol's and deepcpg's sets (corpus11) in 4.4 and 14.1 s from an empty cache, where their
    lock stages with pdm had taken 125 and 69 s. Such a lock is for one target; the record
    says so, and ``pyrepro lock NAME`` relocks with pdm for every target.

    ``prefer``: the text of the lock this one replaces (a relock after a repair move). pdm attempts
    without a date bound take its versions first where they still fit (``pdm lock --update-reuse``),
    so a relock of a large set reads little from the index; a date-bounded attempt never does, since
    a kept version may be newer than the bound.

    Raises ``NetworkError`` (naming index and package) when the index is unreachable; then
    nothing is written. A resolution that fails by every strategy gives category 4 (the
    record is written, the previous pdm.lock is kept)."""
    if start is None:
        # the date bound is hard where the submission's date is known (issue 42): a lock of the newest
        # releases of everything unpinned is of another era, and the attempt that backtracks longest
        # (camd, corpus20 dev: 240 s of an unbounded attempt before the bounded one locked in 25 s)
        start = "date-bounded" if req.submitted is not None else "as-declared"
    if start not in STRATEGIES:
        raise InputError(f"unknown strategy {start!r}; use one of {', '.join(STRATEGIES)}", key="strategy")
    pyproject_path = req.project_dir / "pyproject.toml"
    text = pyproject_path.read_text(encoding="utf-8") if pyproject_path.is_file() else None
    if text is None:
        raise NotFoundError(f"{pyproject_path} does not exist",
                            hint=f"generate it first: pyrepro generate {req.name}")
    pyproject = read_pyproject(pyproject_path)
    declared = tuple(pyproject.get("project", {}).get("dependencies", []))
    for i, d in enumerate(declared):
        if relax._parse(d) is None:
            raise InputError(f"dependency {d!r} is not a PEP 508 requirement", path=pyproject_path,
                             key=f"project.dependencies[{i}]",
                             hint="write it like 'name>=1.0'; regenerate from model.toml")
    by_pip = piplock.targets_pip(req.python)  # Python 2: pip on that interpreter locks (pyrepro.piplock)
    if python_exe is None:
        # pdm cannot run a 3.6/3.7 interpreter: it runs a stand-in, and the lock needs none of the target's
        python_exe = stand_in_interpreter(req.python) if needs_stand_in(req.python) and not by_pip \
            else find_python(req.python)
    label = f"lock {req.name}"
    progress.start(label, total=None)
    attempts: list[Attempt] = []
    runs: dict[int, _Run] = {}
    era = _bound(req.submitted)  # pip reads a date-bounded view of the index (pyrepro.dateindex)
    # uv (--exclude-newer-package) and pip's date-bounded view of the index take a bound per project
    sit = lockplan.start(declared, first=start, era_bound=era, imported=req.imported,
                         per_package=by_pip or (uv_first and uvtool.uv_executable() is not None),
                         search=not by_pip and uvtool.uv_executable() is not None)
    t0 = time.monotonic()

    lock_env: list[Path] = []
    uv_first_made: list[bool] = []  # per attempt: whether it was uv's, first (``uv_first``)

    def pip_python() -> Path:
        """Python 2's resolving interpreter (``piplock.resolver_python``), made on first use."""
        if not lock_env:
            lock_env.append(piplock.resolver_python(python_exe, cache_dir(), runner=runner))
        return lock_env[0]

    found: list[str | None] = []

    def uv_python() -> str | None:
        """The target's own interpreter, for uv's sdist metadata builds (``uvtool._compile``), or
        None when this machine has none (uv then builds with what it finds)."""
        if not found:
            try:
                found.append(str(find_python(req.python)))
            except PyreproError:
                found.append(None)
        return found[0]

    def _uv_says_no(rs: Sequence[str], bound: str | None) -> tuple[str, float] | None:
        """uv's no-solution text and its seconds, when uv finds none for a large set (not for Python
        2, which uv does not resolve); None otherwise."""
        if by_pip or len(rs) < uvtool.UV_PRECHECK_MIN:
            return None
        t_uv = time.monotonic()
        text = uvtool.precheck(rs, req.python, bound, runner=runner, cache=uvtool.uv_cache(cache_dir()),
                               interpreter=uv_python())
        if text is None or not any(p.kind in ("conflict", "not-found") for p in relax.diagnose(text)):
            return None
        return text, time.monotonic() - t_uv

    def attempt(move: lockplan.Try) -> lockplan.Tried:
        progress.advance(label, 1, f"{move.strategy}{f' (<= {move.bound})' if move.bound else ''}: pdm lock"
                         if move.step is None and not move.bound_note else move.detail)
        rs = move.requirements
        said_by = ""  # "uv, before pdm: " when uv's check answered instead of a pdm attempt
        own = move.package_bounds or sit.package_bounds  # (project, day): bounds of their own
        # pdm takes one bound for all: the latest of them
        pdm_bound = max([move.bound, *(d for _p, d in own)]) if move.bound and own else move.bound
        with tempfile.TemporaryDirectory(prefix=f"pyrepro-lock-{req.name}-") as tmp:
            work = Path(tmp)
            (work / "pyproject.toml").write_text(text if rs == declared else with_dependencies(text, rs),
                                                 encoding="utf-8")
            budget = attempt_budget(move.strategy, move.bound, era, timeout, "relaxed" in sit.order)
            first = uv_first and not by_pip and move.resolver != "uv"
            if move.resolver == "uv" or first:
                progress.advance(label, 0, "uv first: a lock from uv's resolution for this machine" if first
                                 else "pdm refused the set uv resolved: the lock from uv's resolution")
                t_uv, index = time.monotonic(), _index()  # one index: its project listings are read once
                ok, out, locked_text = uvtool.lock_with_uv(
                    rs, req.python, move.bound, runner=runner, cache=uvtool.uv_cache(cache_dir()),
                    files_of=index.file_hashes, requires_python=lock_range(req.python),
                    fits=_admits(req.python, index),
                    content_hash=content_hash(read_pyproject(work / "pyproject.toml")),
                    timeout=min(budget, uvtool.UV_RESOLVE_TIMEOUT),
                    why=UV_FIRST_WHY if first else uvtool.PDM_REFUSED, interpreter=uv_python(),
                    package_bounds=own if move.bound else ())
                run = _Run(ok, out, time.monotonic() - t_uv, locked_text, "not locked: uv resolved for x86_64")
                if first and not ok and not uvtool.no_solution(out):
                    # uv could not answer (sdist metadata it could not build: torch-cluster's
                    # setup.py imports torch): pdm decides, as without uv first
                    first, said_by = False, f"uv first could not answer ({_first_line(out)}); pdm: "
                    run = _run_pdm(work, req.python, pdm_bound, runner=runner, python_exe=python_exe,
                                   timeout=max(budget - run.seconds, budget / 2), aarch64=aarch64,
                                   on_line=output_detail(progress, label, ResolverDetail()),
                                   prefer=prefer if move.bound is None else None)
                elif first:
                    said_by = "uv first: "
            elif (quick := _uv_says_no(rs, pdm_bound)) is not None:
                # every pdm attempt of a large set is checked by uv first: a set uv finds no
                # resolution for goes on to the next strategy or step in seconds, without a pdm
                # attempt (mlearn_analysis_Ni_orb-v2: fairchem-core and mace-torch need different
                # e3nn, which pdm's as-declared and date-bounded attempts spent 400 s timing out on)
                run, said_by = _Run(False, quick[0], quick[1], "", ""), "uv, before pdm: "
            elif by_pip:
                ok, out, secs, locked_text = piplock.run_pip_lock(
                    work, req.python, pip_python(), runner=runner, timeout=budget,
                    content_hash=content_hash(read_pyproject(work / "pyproject.toml")),
                    exclude_newer=move.bound, index=_index() if move.bound else None,
                    package_bounds=own if move.bound else ())
                run = _Run(ok, out, secs, locked_text, "not locked: pip locks for the machine it runs on")
            else:
                run = _run_pdm(work, req.python, pdm_bound, runner=runner, python_exe=python_exe,
                               timeout=budget, aarch64=aarch64,
                               on_line=output_detail(progress, label, ResolverDetail()),
                               prefer=prefer if move.bound is None else None)
        problems: tuple[relax.Problem, ...] = ()
        if run.ok:
            dummies = _dummy_problems(read_lock_versions(run.lock_text))
            if dummies:
                problems = dummies
                run = replace(run, ok=False, text="\n".join(p.excerpt for p in dummies))
        else:
            problems = relax.diagnose(run.text)
            net = [p for p in problems if p.kind == "network"]
            if net:
                progress.finish(label, "network failure")
                p = net[0]
                raise NetworkError(
                    f"locking {req.name}: index {p.index or '(unknown host)'} could not be reached"
                    f"{f' for package {p.package}' if p.package else ''}: {p.excerpt}",
                    hint="check the network or the index URL (PDM_PYPI_URL / tool.pdm.source)")
            if run.seconds >= budget * 0.98 and not any(p.kind == "timeout" for p in problems):
                why = "" if budget == timeout else " (an as-declared attempt's share of the budget: a " \
                                                   f"{'date-bounded attempt' if era else 'relaxation'} follows)"
                problems = (relax.Problem("timeout", excerpt=f"timed out after {budget:.0f} s{why}"), *problems)
        error = "" if run.ok else said_by + _trim(run.text)
        attempts.append(Attempt(move.strategy, rs, run.ok, run.seconds, move.bound, error, problems, run.aarch64))
        runs[len(attempts) - 1] = run
        uv_first_made.append(first)
        return lockplan.Tried(move.strategy, rs, move.bound, run.ok, problems, error,
                              resolver="uv" if move.resolver == "uv" or (first and run.ok) else "pdm")

    searches: list[SearchRecord] = []
    bounded_again: list[bool] = []  # a culprit of the search got a bound of its own (once)

    def run_search(move: lockplan.Search) -> pinsearch.Outcome:
        """The pin search (``pyrepro.pinsearch``) with uv as the oracle, under the move's bound, on
        the lock's Python and, when the submission states none, its era's others."""
        pythons = (req.python, *(req.pythons if persist is not None else ()))
        t_s = time.monotonic()
        progress.advance(label, 1, f"pin search: {len(move.requirements)} declared constraints, uv as the oracle "
                                   f"(CPython {', '.join(pythons)})")
        cache = uvtool.uv_cache(cache_dir())

        index = _index()  # Requires-Python of the releases uv takes (uv reads only its lower bound)

        def oracle(reqs: tuple[str, ...], py: str) -> pinsearch.Answer:
            left = SEARCH_SECONDS - (time.monotonic() - t_s)
            progress.advance(label, 0, f"pin search: asking uv about {len(reqs)} requirements on CPython {py}")
            return uvtool.ask(reqs, py, move.bound, runner=runner, cache=cache,
                              timeout=max(5.0, min(uvtool.UV_PRECHECK_TIMEOUT, left)),
                              interpreter=uv_python() if py == req.python else None,
                              package_bounds=sit.package_bounds if move.bound else (), fits=_admits(py, index))

        listed: dict[str, tuple[str, ...]] = {}

        def releases(name: str) -> tuple[str, ...]:
            """The index's releases of ``name`` (for the nearest release that fits), () when unknown."""
            if name not in listed:
                known = sit.facts.versions.get(relax.req_name(name))
                try:
                    listed[name] = known if known is not None else \
                        lookup_versions([name], req.python, runner=runner).get(relax.req_name(name), ())
                except PyreproError:
                    listed[name] = ()
            return listed[name]

        last = sit.tried[-1] if sit.tried else None
        known = None  # the attempt that led here was uv's own "no solution" for this very set: not asked again
        if last is not None and not last.ok and last.requirements == move.requirements and last.bound == move.bound \
                and not sit.package_bounds and last.error.startswith(("uv first: ", "uv, before pdm: ")) \
                and uvtool.no_solution(last.error):
            known = pinsearch.Answer(False, last.error)
        pins = [(relax.req_name(r), v) for r in move.requirements if (v := pinsearch.exact_version(r)) is not None]
        missing: list[tuple[str, str]] | None = None

        def worth(py: str) -> bool:
            """Step 1 asks the declared set on another Python only where the wheels say it may help:
            an exact pin has no wheel for the lock's own Python, and each such pin has one for ``py``
            (a pin with no wheels at all, or none known, counts as fitting)."""
            nonlocal missing
            if missing is None:
                missing = [(n, v) for n, v in pins if index.has_wheel(n, v, req.python) is False]
            return bool(missing) and all(index.has_wheel(n, v, py) is not False for n, v in missing)

        result = pinsearch.search(move.requirements, oracle=oracle, pythons=pythons, imported=req.imported,
                                  worth=worth,
                                  kind_of=requirement_kind, hint=pinsearch.hinted_names(move.error, move.requirements),
                                  time_left=lambda: SEARCH_SECONDS - (time.monotonic() - t_s), releases=releases,
                                  first=known, stated=req.python_stated)
        said = (f"{len(result.relaxations)} constraints relaxed" if result.ok else "no relaxation resolves")
        searches.append(SearchRecord(
            result.ok, result.python, pythons, result.count, time.monotonic() - t_s, move.bound, result.proof,
            result.culprits, tuple(f"{r.before} -> {r.after or '(dropped)'} ({r.rung}; locked {r.locked or '-'}: "
                                   f"{r.distance})" for r in result.relaxations), result.spent))
        progress.advance(label, 0, f"pin search: {said} in {result.count} queries")
        return result

    while True:
        move = lockplan.next_move(sit)
        if isinstance(move, lockplan.LookUp):
            guides = None
            if move.guide is not None and by_pip:
                guides = {move.guide: uvtool.Guide((), f"uv does not resolve for Python {req.python}")}
            elif move.guide is not None:
                progress.advance(label, 0, "the resolver had nothing to act on: asking uv for a resolution")
                guides = {move.guide: uvtool.guide(move.guide, req.python, sit.relax_bound, runner=runner,
                                                   cache=uvtool.uv_cache(cache_dir()), interpreter=uv_python(),
                                                   package_bounds=sit.package_bounds if sit.relax_bound else ())}
            sit = sit.learn(
                versions=lookup_versions(move.versions, req.python, runner=runner) if move.versions else None,
                uploaded={(n, v): upload_date(n, v, runner=runner) for n, v in move.uploads}, guides=guides)
            continue
        if isinstance(move, lockplan.Search):
            sit = sit.found(run_search(move))
            own_bounds = _culprit_bounds(sit, move, runner) if sit.per_package and not bounded_again else ()
            if own_bounds:
                # the requirement that makes even the fully relaxed set fail was first released after the
                # date bound (a date estimated from evidence that the code itself outdates): it gets a
                # bound of its own, the others keep theirs; the set is tried so, and a failure of that
                # attempt gets a search of its own
                bounded_again.append(True)
                why = "; ".join(f"{p} (as required) was first released {d}" for p, d, _n in own_bounds)
                retry = lockplan.Try("relaxed", move.requirements, move.bound,
                                     package_bounds=(*sit.package_bounds, *((p, n) for p, _d, n in own_bounds)),
                                     bound_note=f"date bound {move.bound} kept; {why}, after it: "
                                                f"{', '.join(f'{p} up to {n}' for p, _d, n in own_bounds)} (a bound "
                                                "of its own; the pin search's proof named it)")
                sit = replace(sit, searched=None)
                sit = sit.after(retry, attempt(retry))
                continue
            moved = sit.searched
            if moved is not None and moved.ok and moved.python != req.python and persist is not None:
                progress.finish(label, f"the pin search moved the Python to {moved.python}")
                return _on_other_python(req, moved, lockplan.search_steps(sit, moved), attempts, searches,
                                        runner=runner, progress=progress, start=start, timeout=timeout,
                                        aarch64=aarch64, persist=persist, now=now, uv_first=uv_first)
            continue
        if isinstance(move, lockplan.Try):
            sit = sit.after(move, attempt(move))
            continue
        break
    steps = list(sit.steps)
    reqs = sit.requirements
    bound_for_relax = sit.relax_bound
    bound_moves = [why for _, why in sit.bound_moves]
    result = runs[len(attempts) - 1] if isinstance(move, lockplan.Locked) else None
    strategy: Strategy | None = move.attempt.strategy if isinstance(move, lockplan.Locked) else None
    seconds = time.monotonic() - t0
    stamp = (now or (lambda: dt.datetime.now(dt.UTC)))().replace(microsecond=0)
    where = Location(str(Path(req.project_dir.name) / "pyproject.toml"))
    record_path = req.project_dir / "lock.toml"
    lock_path = req.project_dir / "pdm.lock"
    if result is None:
        last = attempts[-1] if attempts else None
        why = move.reason if isinstance(move, lockplan.GiveUp) else "no lock"
        msg = (f"{req.name}: no strategy produced a lock ({len(attempts)} attempts, {len(steps)} relaxation "
               f"steps; {why}); last error:\n{last.error if last else '(none)'}")
        outcome = LockOutcome(req.name, 4, None, tuple(attempts), tuple(steps), (), req.fidelity,
                              req.overrides, reqs, seconds, req.python,
                              exclude_newer=bound_for_relax, record_path=record_path, message=msg,
                              searches=tuple(searches))
        atomic_write_text(record_path, render_record(outcome, stamp))
        progress.finish(label, "category 4 (failed)")
        return outcome
    locked = read_lock_versions(result.lock_text)
    lock_data = tomllib.loads(result.lock_text)
    targets = tuple(t.get("platform", "") for t in lock_data.get("metadata", {}).get("targets", []))
    drift = compute_drift(declared, steps, locked, where)
    category = 2 if steps or bound_moves or strategy == "date-bounded" or req.carried else 1
    if req.overrides:
        category = 3
    fidelity = list(req.fidelity)
    if req.carried:
        fidelity.append(f"locked with what earlier automatic relaxations left in model.toml: {', '.join(req.carried)}")
    if by_pip:
        last_bound = move.attempt.bound if isinstance(move, lockplan.Locked) else None
        fidelity.append(piplock.FIDELITY.format(python=req.python, bound=piplock.BOUNDED.format(bound=last_bound)
                                                if last_bound else piplock.UNBOUNDED))
    if isinstance(move, lockplan.Locked) and move.attempt.resolver == "uv":
        if uv_first_made[-1]:
            fidelity.append(f"{UV_LOCKED} for CPython {req.python} on x86_64 Linux: {UV_FIRST_WHY} "
                            f"(pyrepro lock {req.name} locks with pdm for every target)")
        else:
            fidelity.append(f"{UV_LOCKED} for CPython {req.python} on x86_64 Linux: pdm refused the same "
                            f"requirement set ({_first_line(attempts[-2].error) if len(attempts) > 1 else 'no reason'})")
    for s in steps:
        fidelity.append(f"relaxed {s.summary} ({s.reason})")
    if strategy == "relaxed":
        fidelity.extend(bound_moves)
    if strategy == "date-bounded":
        fidelity.append(f"resolved with nothing newer than {_bound(req.submitted)} (the submission era)")
    if prefer is not None and not by_pip and isinstance(move, lockplan.Locked) and move.attempt.bound is None \
            and move.attempt.resolver != "uv":
        fidelity.append(f"{PREFERRED}: where they still fit, pdm kept its versions (pdm lock --update-reuse)")
    if result.stand_in:
        fidelity.append(f"pdm ran on {result.stand_in} for this Python {req.python} target (pdm's helpers do "
                        f"not run on {req.python}); metadata of sdist-only packages was built there")
    if steps:
        # the relaxed requirement set must become the pyproject that the lock belongs to
        if persist is None:
            atomic_write_text(req.project_dir / "pyproject.toml", with_dependencies(text, reqs))
        else:
            persist(req, steps)
            written = tuple((read_pyproject(req.project_dir / "pyproject.toml").get("project") or {})
                            .get("dependencies", []))
            if sorted(written) != sorted(reqs):  # model.toml must say exactly what was locked
                raise ResolutionError(
                    f"{req.model_toml}: {req.name}: after the relaxation model.toml gives "
                    f"{sorted(set(written) - set(reqs))} where the lock was made for {sorted(set(reqs) - set(written))}; "
                    "the lock is not written", hint="fix [dependencies] in model.toml by hand, then relock (and report "
                                              "this: pyrepro wrote the relaxation wrongly)")
            if written != tuple(reqs):
                # the same requirements in the generator's order (a renamed pytorch==1.10 was locked
                # where pytorch stood, and model.toml lists it as torch): pdm's content hash reads the
                # list in order, so the lock takes the hash of the pyproject it now belongs to
                old_hash = lock_data.get("metadata", {}).get("content_hash", "")
                fresh = content_hash(read_pyproject(req.project_dir / "pyproject.toml"))
                if old_hash:
                    result = replace(result, lock_text=result.lock_text.replace(old_hash, fresh))
                    lock_data = tomllib.loads(result.lock_text)
    new_hash = lock_data.get("metadata", {}).get("content_hash", "")
    outcome = LockOutcome(
        req.name, category, strategy, tuple(attempts), tuple(steps), drift, tuple(fidelity), req.overrides,
        reqs, seconds, req.python, targets, len(locked), new_hash,
        _bound(req.submitted) if strategy == "date-bounded"
        else bound_for_relax if strategy == "relaxed" else None, lock_path, record_path,
        f"{req.name}: category {category} ({CATEGORIES[category]}) by {strategy}, {len(locked)} packages",
        searches=tuple(searches))
    atomic_write_text(lock_path, result.lock_text)
    atomic_write_text(record_path, render_record(outcome, stamp))
    progress.finish(label, f"category {category} ({strategy}, {seconds:.0f} s)")
    return outcome


#: why a lock was made from uv's resolution first (``lock_request``'s ``uv_first``)
UV_FIRST_WHY = "uv first, within the reproduction's time budget"
#: seconds one pin search may spend asking uv (its queries are budgeted too: pinsearch.DEFAULT_BUDGET).
#: A large set of 2020 pins takes 10-30 s a query (tapas, corpus21 dev: 24 requirements, two
#: releases whose metadata does not build), and a search cut short ends the lock: 300 s, not 150.
SEARCH_SECONDS = 300.0


def _culprit_bounds(sit: lockplan.Situation, move: lockplan.Search,
                    runner: Runner) -> tuple[tuple[str, str, str], ...]:
    """(project, first upload day, its own bound) for each requirement the pin search named as what
    makes even the fully relaxed set fail under ``move.bound``, whose first release that satisfies
    it (its project's first release, for a bare name) was uploaded on or after the bound, and which
    has no bound of its own yet. () when the search resolved, or nothing was that late."""
    found = sit.searched
    if found is None or found.ok or not found.culprits or not move.bound:
        return ()
    try:
        bound = dt.date.fromisoformat(move.bound)
    except ValueError:
        return ()
    have = {p for p, _d in sit.package_bounds}
    out = []
    for name in found.culprits:
        if name in have:
            continue
        req = next((r for r in move.requirements if relax.req_name(r) == name), None)
        if req is None:
            continue
        pinned = pinsearch.exact_version(req)
        parsed = relax._parse(req)
        spec = pinned if pinned is not None else str(parsed.specifier) if parsed is not None and parsed.specifier \
            and any(sp.operator in (">=", ">", "~=") for sp in parsed.specifier) else ""
        day = upload_date(name, spec, runner=runner)
        if day is None or day < bound:
            continue
        out.append((name, day.isoformat(), (day + dt.timedelta(days=1)).isoformat()))
    return tuple(out)


def _on_other_python(req: LockRequest, found: pinsearch.Outcome, steps: Sequence[relax.Step],
                     before: Sequence[Attempt], searches: Sequence[SearchRecord], *, runner: Runner, progress: Progress,
                     start: Strategy | None, timeout: float, aarch64: bool,
                     persist: Callable[[LockRequest, Sequence[relax.Step]], None],
                     now: Callable[[], dt.datetime] | None, uv_first: bool) -> LockOutcome:
    """The pin search found that the declared set (or its relaxation ``steps``) resolves on another
    CPython of the submission's era, which states none: the Python and the relaxation go into
    model.toml (the pyproject is regenerated), and the lock is made for that Python. The outcome
    carries the attempts before the move and the search's steps."""
    reason = (f"{found.python}: {found.python_reason} (rule pin-search-python, {found.count} resolver queries; "
              f"before: {req.python})")
    persist_python(req, found.python, reason)
    moved = replace(req, python=found.python, pythons=(), python_stated=True,
                    fidelity=(*req.fidelity, f"Python {req.python} -> {found.python}: {found.python_reason} (the pin "
                                             "search)"))
    if steps:
        persist(moved, steps)
    out = lock_request(moved, runner=runner, progress=progress, start=start, timeout=timeout, aarch64=aarch64,
                       persist=persist, now=now, uv_first=uv_first)
    out = replace(out, attempts=(*before, *out.attempts), steps=(*steps, *out.steps),
                  searches=(*searches, *out.searches),
                  category=max(out.category, 2) if out.category != 4 else 4)
    if out.record_path is not None:
        stamp = (now or (lambda: dt.datetime.now(dt.UTC)))().replace(microsecond=0)
        atomic_write_text(out.record_path, render_record(out, stamp))
    return out


def _index() -> Any:
    """The package index (PEP 691, cached under pyrepro's cache) for file names and hashes."""
    from pyrepro.index import WheelIndex

    return WheelIndex(cache_dir())


def _admits(python: str, index: Any) -> Callable[[str, str], bool]:
    """Whether a release's Requires-Python (from ``index``) admits CPython ``python``
    (``buildreqs.admits_python``: any of its patch releases; unknown admits)."""
    from pyrepro.buildreqs import admits_python

    return lambda name, version: admits_python(index.requires_python(name, version), python)


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")[:200]


def persist_to_model_toml(req: LockRequest, steps: Sequence[relax.Step]) -> None:
    """Write relaxation steps into model.toml ``[dependencies]`` (the only channel into the
    generated pyproject) and regenerate the pyproject with ``pyrepro.generate``."""
    if req.model_toml is None:
        raise ResolutionError(f"{req.name}: no model.toml to record the relaxation in")
    doc = tomlkit.parse(req.model_toml.read_text(encoding="utf-8"))
    deps = doc.setdefault("dependencies", tomlkit.table())
    pins = _pins_of(deps)
    remove = deps.get("remove") or []
    extra = deps.setdefault("extra", tomlkit.array())
    dropped = deps.get("dropped")
    for s in steps:
        old = relax.req_name(s.before) if s.before else ""
        new = relax.req_name(s.after) if s.after else ""
        reason = f"{AUTO_REASON} {_rule_marker(s.rule)} see lock.toml): {s.reason}"
        if old and new == old:
            spec = s.after[len(relax._parse(s.after).name):] if relax._parse(s.after) else ""  # type: ignore[union-attr]
            existing = [p for p in pins if relax.req_name(str(p.get("name", ""))) == old]
            for p in existing:
                pins.remove(p)
            t = tomlkit.table()
            t.update({"name": old, "spec": spec.split(";")[0].strip(), "reason": reason})
            pins.append(t)
        else:  # another name, or dropped: the old name's pins and extras go with it
            for p in [p for p in pins if relax.req_name(str(p.get("name", ""))) == old]:
                pins.remove(p)
            for e in [e for e in extra if old and relax.req_name(str(e)) == old]:
                extra.remove(e)
            # left out by a relaxation (renamed or dropped), not by a reviewer: its modules are still
            # import-checked, so a dropped rdkit-pypi (no Python 2 release) fails the check by name
            if old and old not in remove:
                if dropped is None:
                    dropped = deps.setdefault("dropped", tomlkit.array())
                if old not in dropped:
                    dropped.append(old)
            if new and s.after not in extra:
                extra.append(s.after)
    _prune_pins(deps)
    atomic_write_text(req.model_toml, tomlkit.dumps(doc))
    _regenerate(req)


def _pins_of(deps: Any) -> Any:
    """``[[dependencies.pins]]`` as an array of tables to edit. An emptied one was written by
    tomlkit as ``pins = []``, an inline array: a table appended to that came out as ``pins =
    [name = ...]``, which is no TOML (equibind, corpus6: every later read of model.toml failed)."""
    pins = deps.get("pins")
    if isinstance(pins, tomlkit.items.AoT):
        return pins
    fresh = tomlkit.aot()
    for t in list(pins or []):
        if isinstance(t, dict):
            table = tomlkit.table()
            table.update(t)
            fresh.append(table)
    if "pins" in deps:
        del deps["pins"]
    deps["pins"] = fresh
    return deps["pins"]


def _prune_pins(deps: Any) -> None:
    """No ``pins`` key at all when no pin is left (see ``_pins_of``)."""
    if deps is not None and "pins" in deps and not len(deps["pins"]):
        del deps["pins"]


def _rule_marker(rule: str) -> str:
    """How a pin's reason in model.toml names the relaxation rule that wrote it."""
    return f"(rule {rule};"


#: rules whose pins were chosen for one target (a Python, a date bound) and are taken back for a new one
TARGET_RULES = (lockplan.GUIDED_RULE, "sdist-to-wheel")


def _drop_target_pins(doc: Any) -> list[str]:
    """A new target (Python or date bound) takes back the pins chosen for the old one: a guided
    resolution's (rule resolver-guided: uv's versions for CPython 3.10 with no date would otherwise
    hold a relock for 2023 to releases of 2026; graphgps, corpus5 dev) and the nearest release with
    a wheel for a locked sdist (rule sdist-to-wheel: netcdf4 1.6.1 of 2022, pinned for the newest
    releases, moved cbrain's 2019 date relock to 2022, where keras 2.9 met its TensorFlow 1; corpus11
    dev). The names taken back."""
    pins = (doc.get("dependencies") or {}).get("pins")
    if pins is None:
        return []
    gone = [p for p in pins if any(_rule_marker(r) in str(p.get("reason", "")) for r in TARGET_RULES)]
    for p in gone:
        pins.remove(p)
    _prune_pins(doc.get("dependencies"))
    return [str(p.get("name", "")) for p in gone]


def drop_target_pins(req: LockRequest) -> list[str]:
    """``_drop_target_pins`` for a relock by date that changes nothing else (the submission's own
    date, after an as-declared lock): model.toml and the pyproject rewritten when a pin went."""
    if req.model_toml is None:
        return []
    doc = tomlkit.parse(req.model_toml.read_text(encoding="utf-8"))
    gone = _drop_target_pins(doc)
    if gone:
        atomic_write_text(req.model_toml, tomlkit.dumps(doc))
        _regenerate(req)
    return gone


def persist_python(req: LockRequest, python: str, reason: str) -> None:
    """Write a new target Python and its reason into model.toml and regenerate the pyproject."""
    if req.model_toml is None:
        raise ResolutionError(f"{req.name}: no model.toml to record the Python in")
    doc = tomlkit.parse(req.model_toml.read_text(encoding="utf-8"))
    _drop_target_pins(doc)
    doc["python"] = python
    doc["python_reason"] = reason
    atomic_write_text(req.model_toml, tomlkit.dumps(doc))
    _regenerate(req)


def persist_era(req: LockRequest, day: str, reason: str, *, python: str | None = None) -> None:
    """Write a submission date (ISO ``day``) found by a repair and its reason into model.toml, with
    a new target Python when given, and regenerate the pyproject."""
    if req.model_toml is None:
        raise ResolutionError(f"{req.name}: no model.toml to record the date in")
    doc = tomlkit.parse(req.model_toml.read_text(encoding="utf-8"))
    _drop_target_pins(doc)
    doc["submitted"] = day
    doc["submitted_reason"] = reason
    if python is not None:
        doc["python"] = python
        doc["python_reason"] = reason
    atomic_write_text(req.model_toml, tomlkit.dumps(doc))
    _regenerate(req)


def persist_source_to_index(req: LockRequest, names: Sequence[str], reason: str,
                            dropped: Sequence[str] = (), renamed: Sequence[tuple[str, str]] = ()) -> None:
    """Extra sources ``names`` give way to the index's distributions of those names (rule
    ``source-to-index``): their ``[[extra_sources]]`` entries leave model.toml, each name is a
    requirement (``[dependencies] extra`` unless scanned), the reason goes into ``notes``; the
    pyproject is regenerated. The sources ``dropped`` leave model.toml and become no requirement;
    for each (source, index name) of ``renamed`` the source leaves and the index name (in ``names``)
    is required."""
    if req.model_toml is None:
        raise ResolutionError(f"{req.name}: no model.toml to record the change in")
    doc = tomlkit.parse(req.model_toml.read_text(encoding="utf-8"))
    wanted = {canonicalize_name(n) for n in (*names, *dropped, *(src for src, _n in renamed))}
    sources = doc.get("extra_sources")
    if sources is not None:
        kept = [t for t in sources if canonicalize_name(str(t.get("name", ""))) not in wanted]
        if kept:
            aot = tomlkit.aot()
            for t in kept:
                aot.append(t)
            doc["extra_sources"] = aot
        else:
            del doc["extra_sources"]
    deps = doc.setdefault("dependencies", tomlkit.table())
    have = {canonicalize_name(relax.req_name(str(d))) for key in ("scanned", "extra") for d in deps.get(key, [])}
    extra = deps.setdefault("extra", tomlkit.array())
    for n in names:
        if canonicalize_name(n) not in have:
            extra.append(n)
    notes = str(doc.get("notes", "") or "")
    doc["notes"] = f"{notes}; {reason}" if notes else reason
    atomic_write_text(req.model_toml, tomlkit.dumps(doc))
    _regenerate(req)


def _regenerate(req: LockRequest) -> None:
    assert req.model_toml is not None
    try:
        from pyrepro import generate as gen
        from pyrepro.registry import parse_model
    except ImportError as exc:
        raise ResolutionError(
            f"{req.model_toml}: written, but pyrepro.generate is not available "
            "to regenerate pyproject.toml", hint=f"run: pyrepro generate {req.name}") from exc
    model_spec = parse_model(req.model_toml)
    atomic_write_text(req.project_dir / "pyproject.toml", gen.render_pyproject(model_spec))


# --------------------------------------------------------------------------- registry entry

def lock_model(spec: ModelSpec, paths: Paths, runner: Runner = proc.run, *,
               progress: Progress = NULL_PROGRESS, start: Strategy | None = None,
               timeout: float = DEFAULT_TIMEOUT, aarch64: bool = True,
               python_exe: Path | None = None, prefer: str | None = None, uv_first: bool = False) -> LockOutcome:
    """Lock one registry model (``models/<name>/``); ``prefer`` and ``uv_first`` as in ``lock_request``."""
    del paths  # the model's folder comes from its spec; kept for the stage signature
    return lock_request(LockRequest.from_spec(spec), runner=runner, progress=progress, start=start,
                        timeout=timeout, aarch64=aarch64, python_exe=python_exe,
                        persist=persist_to_model_toml, prefer=prefer, uv_first=uv_first)


def reuse_lock(spec: ModelSpec, source: ModelSpec, *, progress: Progress = NULL_PROGRESS,
               now: Callable[[], dt.datetime] | None = None) -> LockOutcome:
    """Give ``spec`` the pdm.lock of ``source`` without resolving again, which pdm itself
    would accept: both pyprojects must have the same pdm content hash (same dependencies,
    requires-python, sources, resolution settings) and ``source``'s lock must pass
    ``--check``. The record says where the lock came from; the category is this model's
    own (3 when it has reviewed pins)."""
    req = LockRequest.from_spec(spec)
    label = f"lock {spec.name}"
    progress.start(label, total=None)
    t0 = time.monotonic()
    src_dir = source.dir
    own_py = req.project_dir / "pyproject.toml"
    if not own_py.is_file():
        raise NotFoundError(f"{own_py} does not exist", hint=f"generate it first: pyrepro generate {spec.name}")
    problems = check_lock_dir(src_dir)
    if problems:
        raise ResolutionError(f"cannot reuse the lock of {source.name}: " + "; ".join(p.message for p in problems),
                              hint=f"relock it first: pyrepro lock {source.name}")
    src_text = (src_dir / "pdm.lock").read_text(encoding="utf-8")
    src_hash = tomllib.loads(src_text).get("metadata", {}).get("content_hash", "")
    own_hash = content_hash(read_pyproject(own_py))
    if own_hash != src_hash:
        raise ResolutionError(
            f"cannot reuse the lock of {source.name} for {spec.name}: content hash {own_hash} of {own_py} "
            f"differs from {src_hash} (different dependencies, requires-python, sources or resolution "
            "settings); pdm would treat the lock as stale", hint=f"lock it on its own: pyrepro lock {spec.name}")
    src_rec = read_record(src_dir) or {}
    if str(src_rec.get("python", req.python)) != req.python:
        raise ResolutionError(f"cannot reuse the lock of {source.name}: it targets Python {src_rec.get('python')}, "
                              f"{spec.name} needs {req.python}")
    bound = src_rec.get("exclude_newer")
    fidelity = list(req.fidelity)
    fidelity += [f for f in src_rec.get("fidelity", []) if f.startswith(("date bound", "resolved with", "relaxed "))]
    fidelity.append(f"lock reused from {source.name} (identical pdm content hash {own_hash})")
    if bound and req.submitted and bound > _bound(req.submitted):
        fidelity.append(f"{source.name}'s date bound {bound} is after this model's submission ({req.submitted})")
    lock_data = tomllib.loads(src_text)
    locked = read_lock_versions(src_text)
    declared = tuple(read_pyproject(own_py).get("project", {}).get("dependencies", []))
    category = 3 if req.overrides else int(src_rec.get("category", 1))
    targets = tuple(t.get("platform", "") for t in lock_data.get("metadata", {}).get("targets", []))
    outcome = LockOutcome(
        spec.name, category, "reused", (), (),
        compute_drift(declared, (), locked, Location(str(Path(spec.name) / "pyproject.toml"))),
        tuple(fidelity), req.overrides, declared, time.monotonic() - t0, req.python, targets, len(locked),
        own_hash, str(bound) if bound else None, req.project_dir / "pdm.lock", req.project_dir / "lock.toml",
        f"{spec.name}: category {category} ({CATEGORIES[category]}), lock reused from {source.name}, "
        f"{len(locked)} packages")
    stamp = (now or (lambda: dt.datetime.now(dt.UTC)))().replace(microsecond=0)
    record = render_record(outcome, stamp)
    doc = tomlkit.parse(record)
    doc["reused_from"] = source.name
    doc["source_seconds"] = src_rec.get("seconds", 0.0)
    atomic_write_text(req.project_dir / "pdm.lock", src_text)
    atomic_write_text(req.project_dir / "lock.toml", tomlkit.dumps(doc))
    progress.finish(label, f"category {category} (reused from {source.name})")
    return outcome


__all__ = [
    "CATEGORIES", "STRATEGIES", "Attempt", "Drift", "LockOutcome", "LockProblem", "LockRequest",
    "check_lock", "check_lock_dir", "confirmed_category", "content_hash", "lock_model", "lock_request",
    "record_build", "reuse_lock",
]
