"""One ``pdm lock`` attempt: the pinned pdm, its environment (cache under pyrepro's, compat
constraints for 3.8-3.9 targets, a stand-in interpreter for 3.6-3.7 targets, a temporary
directory of its own), transient-error retries, live resolver detail from ``-v`` output, and what
a failed attempt is recorded as. Split out of ``pyrepro.lock`` (the procedure and its record);
nothing here decides what to try next.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from pyrepro import relax
from pyrepro.errors import ExternalToolError
from pyrepro.interpreters import lock_range
from pyrepro.proc import Runner
from pyrepro.progress import release_of

PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_28_aarch64")


def pdm_command() -> list[str]:
    """The pinned pdm from pyrepro's own environment, through ``python -m pyrepro.pdmrun``
    (``_main``: pip's legacy build backend for sdists without one, and the stand-in interpreter
    when ``$PYREPRO_PDM_STAND_IN`` is set)."""
    return [sys.executable, "-m", "pyrepro.pdmrun"]


# pip builds an sdist that declares no [build-system] with setuptools>=40.8.0 and wheel (PEP 517's
# legacy fallback); pdm 2.29 asks for setuptools>=61 instead. Under a date bound before March 2022
# (--exclude-newer) no such setuptools exists, and pdm stops before it reads the sdist's metadata
# ("Unable to find a resolution for setuptools": matminer 0.6.5 on a 2021 date, modnet-2021).
LEGACY_BUILD_REQUIRES = ["setuptools>=40.8.0", "wheel"]
# That floor was released on 2019-02-05 (setuptools 40.8.0, the first with the legacy backend
# ``setuptools.build_meta:__legacy__``). Under an older date bound no setuptools satisfies it, so a
# 2018 submission's legacy sdists cannot be built for their metadata at all ("Unable to find a
# resolution for setuptools": phoenics-2018, bound 2018-01-22). The build tool alone then gets the
# day after that release as its own bound (pdm's --exclude-newer-override, uv's
# --exclude-newer-package): the oldest setuptools a legacy sdist can be built with today.
BUILD_TOOL_FLOOR = (("setuptools", "2019-02-06"),)


def build_tool_overrides(exclude_newer: str | None) -> tuple[tuple[str, str], ...]:
    """(package, day) for each build tool whose floor postdates the bound ``exclude_newer`` (a
    ``YYYY-MM-DD`` day, or an ISO time whose first ten characters are one); none without a bound."""
    if not exclude_newer:
        return ()
    day = exclude_newer[:10]
    return tuple((name, floor) for name, floor in BUILD_TOOL_FLOOR if day < floor)


def patch_pdm_legacy_backend() -> None:
    """pdm's default build system for an sdist without one becomes pip's (``LEGACY_BUILD_REQUIRES``)."""
    from pdm.builders.base import EnvBuilder

    EnvBuilder.DEFAULT_BACKEND = {**EnvBuilder.DEFAULT_BACKEND, "requires": list(LEGACY_BUILD_REQUIRES)}


# --------------------------------------------------------------------------- the interpreter pdm runs

# pdm runs its project's interpreter with helper scripts and libraries (pdm/models/in_process/*.py,
# dep-logic, packaging) that do not run on 3.6 ("from __future__ import annotations": SyntaxError)
# or 3.7 (dep_logic/tags/platform.py's ":=": SyntaxError), and it only accepts an interpreter its
# project's requires-python admits. The lock itself is made for the lock target (--python ==3.7.*
# --platform ... --implementation cpython) and needs no interpreter of that version, so for these
# targets pdm runs through ``python -m pyrepro.pdmrun`` with a stand-in interpreter: the nearest
# newer CPython that pdm's helpers run on, else pyrepro's own. Sdist metadata (sdist-only
# packages) is then built on the stand-in; the lock record says which one.
HELPERS_OLDEST = (3, 8)
STAND_IN_VERSIONS = ("3.8", "3.9", "3.10")
STAND_IN_ENV = "PYREPRO_PDM_STAND_IN"


def _version_tuple(python: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in python.split(".")[:2])
    except ValueError:
        return ()


def needs_stand_in(python: str) -> bool:
    """Whether pdm cannot run the ``python`` (``"3.7"``) interpreter itself, so a lock for it runs
    pdm with a stand-in interpreter (``stand_in_interpreter``)."""
    v = _version_tuple(python)
    return bool(v) and v < HELPERS_OLDEST


def stand_in_interpreter(python: str, find: Callable[[str], Path] | None = None) -> Path:
    """The interpreter pdm runs for a lock targeting ``python`` when ``needs_stand_in``: the first
    installed CPython of ``STAND_IN_VERSIONS`` (closest to the target, so sdist metadata is built
    on as near a Python as pdm allows), else the interpreter pyrepro runs on. ``find``: the
    interpreter search (default ``pyrepro.interpreters.find_python``)."""
    from pyrepro.errors import MissingToolError

    if find is None:
        from pyrepro.interpreters import find_python

        find = find_python
    for v in STAND_IN_VERSIONS:
        if _version_tuple(v) <= _version_tuple(python):
            continue
        try:
            return find(v)
        except MissingToolError:
            continue
    return Path(sys.executable)


def _main(argv: list[str]) -> int:
    """``python -m pyrepro.pdmrun ARGS``: pdm's command line, with pip's legacy build backend for
    sdists that declare none (``patch_pdm_legacy_backend``). When ``$PYREPRO_PDM_STAND_IN`` is set,
    its project interpreter is replaced by that one whatever the project's requires-python says (pdm would otherwise
    search for, and run, an interpreter of the target version). Everything else is pdm's own: the
    requires-python that lock markers are relative to, the lock targets, the lock file.

    One more change: the environment pdm builds an sdist's metadata in (a ``PythonEnvironment``
    with a prefix) runs on the stand-in, so its build requirements are resolved for the stand-in's
    own version. pdm gives every environment the project's requires-python (``==3.7.*``), and an
    sdist whose build needs ``numpy>=1.20.1`` then finds no numpy release with a wheel for both
    (pymatgen on 3.7: "No candidate is found for `numpy` that matches the environment")."""
    from pdm.core import main

    patch_pdm_legacy_backend()
    if os.environ.get(STAND_IN_ENV):
        patch_pdm_for_stand_in(os.environ[STAND_IN_ENV])
    main(argv)  # exits with pdm's own status on failure
    return 0


def patch_pdm_for_stand_in(exe: str) -> None:
    """The changes ``_main`` makes to pdm before it runs (its docstring says why)."""
    from pdm.environments.python import PythonEnvironment
    from pdm.models.python import PythonInfo
    from pdm.models.specifiers import PySpecSet
    from pdm.project.core import Project

    def resolve_interpreter(self: Project) -> PythonInfo:
        return PythonInfo.from_path(exe)

    Project.resolve_interpreter = resolve_interpreter  # type: ignore[method-assign]
    original_init = PythonEnvironment.__init__

    def build_env_init(self: PythonEnvironment, *args: object, **kw: object) -> None:
        original_init(self, *args, **kw)  # type: ignore[arg-type]
        if kw.get("prefix") is not None:  # a build environment: requirements for its own interpreter
            self.python_requires = PySpecSet(f"=={self.interpreter.major}.{self.interpreter.minor}.*")

    PythonEnvironment.__init__ = build_env_init  # type: ignore[method-assign]
    # the file a candidate's metadata is read from ("allow all": any platform) may be a wheel for
    # the stand-in's Python too, not only for the target's
    from pdm.environments.base import BaseEnvironment
    from pdm.models.markers import EnvSpec

    def allow_all_spec(self: BaseEnvironment) -> EnvSpec:
        both = self.python_requires | PySpecSet(f"=={self.interpreter.major}.{self.interpreter.minor}.*")
        return EnvSpec(both._logic)

    BaseEnvironment.allow_all_spec = property(allow_all_spec)  # type: ignore[method-assign,assignment]


# --------------------------------------------------------------------------- running pdm

@dataclass(frozen=True)
class _Run:
    ok: bool
    text: str
    seconds: float
    lock_text: str = ""
    aarch64: str = ""
    stand_in: str = ""  # the interpreter pdm ran instead of the target's (needs_stand_in), home as ~


# pdm inspects a target interpreter older than 3.10 with helper libraries it pip-installs into
# <pdm cache>/.compat_libs; unconstrained, pip takes a `packaging` that itself needs 3.10
# ("TypeError: unsupported operand type(s) for |"), so every 3.6-3.9 lock failed in seconds.
PDM_COMPAT_CONSTRAINTS = "packaging<25  # the last releases that import on Python 3.8\n"


def pdm_cache_dir() -> Path:
    """pdm's cache, under pyrepro's (not ~/.cache/pdm, which reached 14 GB unseen)."""
    from pyrepro.paths import cache_dir

    return cache_dir() / "pdm"


def _prepare_compat(cache: Path) -> Path:
    """The constraints file for pdm's compat install, and a compat folder that an unconstrained
    install broke (a `packaging` 25 or newer) removed so pdm installs it again."""
    import shutil

    compat = cache / ".compat_libs"
    for info in compat.glob("packaging-*.dist-info"):
        try:
            major = int(info.name.split("-")[1].split(".")[0])
        except (IndexError, ValueError):
            continue
        if major >= 25:
            shutil.rmtree(compat, ignore_errors=True)
            break
    constraints = cache / "compat-constraints.txt"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        if not constraints.is_file() or constraints.read_text() != PDM_COMPAT_CONSTRAINTS:
            constraints.write_text(PDM_COMPAT_CONSTRAINTS)
    except OSError:
        pass
    return constraints


# pdm keeps every HTTP response it fetched (whole wheels it read metadata from) in one SQLite file
# that nothing bounds: 41 GB after one corpus run here. Past this size it is removed before the
# next attempt; pdm starts a new one. MB, from PYREPRO_PDM_HTTP_CACHE_MB.
HTTP_CACHE_MB = 4096


def bound_http_cache(cache: Path, limit_mb: float | None = None) -> int:
    """Remove pdm's HTTP cache database (``<cache>/http/http-cache.db`` with its journal files)
    when it is larger than ``limit_mb``; the bytes freed (0 when it was within bounds)."""
    if limit_mb is None:
        try:
            limit_mb = float(os.environ.get("PYREPRO_PDM_HTTP_CACHE_MB", HTTP_CACHE_MB))
        except ValueError:
            limit_mb = HTTP_CACHE_MB
    db = cache / "http" / "http-cache.db"
    try:
        size = db.stat().st_size
    except OSError:
        return 0
    if size <= limit_mb * 1024 * 1024:
        return 0
    freed = 0
    for f in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"), db.with_name(db.name + "-journal")):
        try:
            n = f.stat().st_size
            f.unlink()
            freed += n
        except OSError:
            continue
    return freed


def _pdm_env(python_exe: Path | None, *, stand_in: bool = False, tmp: Path | None = None) -> dict[str, str]:
    """pdm's environment: pyrepro's pdm cache, no venv, no saved interpreter; ``python_exe`` as
    PDM_PYTHON (``stand_in``: as ``$PYREPRO_PDM_STAND_IN`` for ``_main``); ``tmp`` as its
    temporary directory (TMPDIR, TMP, TEMP)."""
    env = dict(os.environ)
    cache = Path(env.get("PDM_CACHE_DIR") or pdm_cache_dir())
    bound_http_cache(cache)
    env.update({"PDM_CHECK_UPDATE": "false", "PDM_USE_VENV": "false", "PDM_NON_INTERACTIVE": "1",
                "PDM_IGNORE_SAVED_PYTHON": "1", "NO_COLOR": "1", "TERM": "dumb", "PDM_CACHE_DIR": str(cache),
                "PIP_CONSTRAINT": str(_prepare_compat(cache))})
    env.pop("PDM_PROJECT", None)
    env.pop("PDM_LOCKFILE", None)
    env.pop(STAND_IN_ENV, None)
    if python_exe is not None:
        env["PDM_PYTHON"] = str(python_exe)
        if stand_in:
            env[STAND_IN_ENV] = str(python_exe)
    if tmp is not None:
        env.update({"TMPDIR": str(tmp), "TMP": str(tmp), "TEMP": str(tmp)})
    return env


def _lock_args(python: str, platform: str, exclude_newer: str | None) -> list[str]:
    args = ["--python", lock_range(python), "--platform", platform, "--implementation", "cpython"]
    if exclude_newer:
        args += ["--exclude-newer", exclude_newer]
        floors = build_tool_overrides(exclude_newer)
        if floors:
            args += ["--exclude-newer-override", *(f"{name}={day}" for name, day in floors)]
    return args


# Failures that are about the machine or the network, not the requirements.
TRANSIENT = re.compile(r"database is locked|Connection (?:reset|refused|aborted)|Temporary failure in name resolution"
                       r"|Read timed out|RemoteDisconnected|ConnectTimeout|HTTP(?:Status)?Error:? 5\d\d|"
                       r"Max retries exceeded|IncompleteRead|SSLError", re.I)
TRANSIENT_RETRIES = 5
TRANSIENT_PAUSE = 5.0  # seconds before the first retry, doubled before each next one (5 ... 80 s)
_CACHE_BUSY = re.compile(r"database is locked", re.I)


def _run_pdm(workdir: Path, python: str, exclude_newer: str | None, *, runner: Runner,
             python_exe: Path | None, timeout: float, aarch64: bool,
             on_line: Callable[[str], None] | None = None, prefer: str | None = None) -> _Run:
    """One attempt: ``pdm lock`` for x86_64, then ``--append`` aarch64. pdm gets a temporary
    directory of its own (its ``pdm-build-*`` folders and build environments go there), removed
    afterwards whatever happened. For a ``needs_stand_in`` target ``python_exe`` is the stand-in
    (``stand_in_interpreter`` when None). ``prefer``: the text of an earlier pdm.lock whose versions
    the resolver takes first where they still fit (``pdm lock --update-reuse``; their dependencies
    and hashes come from that lock, so a relock of a large set needs few index reads)."""
    stand_in = needs_stand_in(python)
    if stand_in and python_exe is None:
        python_exe = stand_in_interpreter(python)
    tmp = Path(tempfile.mkdtemp(prefix="pyrepro-pdm-tmp-"))
    try:
        run = _run_pdm_in(workdir, python, exclude_newer, runner=runner, python_exe=python_exe, timeout=timeout,
                          aarch64=aarch64, on_line=on_line, stand_in=stand_in, tmp=tmp, prefer=prefer)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if stand_in and python_exe is not None:
        run = replace(run, stand_in=_stand_in_label(python_exe))
    return run


def _stand_in_label(exe: Path) -> str:
    """The stand-in as the record says it (home folder as ``~``: records get committed)."""
    return str(exe).replace(str(Path.home()), "~")


def _run_pdm_in(workdir: Path, python: str, exclude_newer: str | None, *, runner: Runner,
                python_exe: Path | None, timeout: float, aarch64: bool, on_line: Callable[[str], None] | None,
                stand_in: bool, tmp: Path, prefer: str | None = None) -> _Run:
    env = _pdm_env(python_exe, stand_in=stand_in, tmp=tmp)
    start = time.monotonic()
    pdm = pdm_command()
    # -v: pdm logs its resolver's rounds and pins (for ``on_line``); _quiet() takes them out again
    cmd = [*pdm, "lock", "-v", "-p", str(workdir), *_lock_args(python, PLATFORMS[0], exclude_newer)]
    if prefer is not None:
        (workdir / "pdm.lock").write_text(prefer, encoding="utf-8")
        cmd.append("--update-reuse")
    for retry in range(TRANSIENT_RETRIES + 1):
        try:
            done = runner(cmd, cwd=workdir, env=env, check=False, timeout=timeout, on_line=on_line)
        except ExternalToolError as exc:  # the default runner's timeout
            return _Run(False, _timed_out(exc), time.monotonic() - start)
        text = _quiet(done.stderr + "\n" + done.stdout).strip()
        if done.returncode == 0 or not TRANSIENT.search(text) or retry == TRANSIENT_RETRIES:
            break
        # a locked cache database or a dropped connection says nothing about the requirements:
        # the same attempt again, after a pause, and never a relaxation step
        time.sleep(TRANSIENT_PAUSE * 2 ** retry)
    if done.returncode != 0 and _CACHE_BUSY.search(text):
        # still busy after every retry: another pdm holds pyrepro's pdm cache. That says nothing about
        # the requirements, so no record and no category 4: an error to rerun after
        raise ExternalToolError(cmd, done.returncode, text,
                                hint="another pdm (a second pyrepro lock or reproduce) is using pyrepro's pdm "
                                     f"cache ({pdm_cache_dir()}); rerun when it has finished")
    lock_file = workdir / "pdm.lock"
    if done.returncode != 0 or not lock_file.is_file():
        return _Run(False, text or f"pdm lock exited with {done.returncode}", time.monotonic() - start)
    note = "not tried"
    if aarch64:
        saved = lock_file.read_text(encoding="utf-8")
        left = max(60.0, timeout - (time.monotonic() - start))
        cmd2 = [*pdm, "lock", "-v", "-p", str(workdir), "--append",
                *_lock_args(python, PLATFORMS[1], exclude_newer)]
        try:
            d2 = runner(cmd2, cwd=workdir, env=env, check=False, timeout=left, on_line=on_line)
            if d2.returncode == 0:
                note = "locked"
            else:
                problems = relax.diagnose(_quiet(d2.stderr + "\n" + d2.stdout))
                note = "not locked: " + "; ".join(p.excerpt.splitlines()[0] if p.excerpt else p.kind
                                                  for p in problems)
                lock_file.write_text(saved, encoding="utf-8")
        except ExternalToolError as exc:
            note = f"not locked: {_timed_out(exc)}"
            lock_file.write_text(saved, encoding="utf-8")
    return _Run(True, text, time.monotonic() - start, lock_file.read_text(encoding="utf-8"), note)


# pdm -v: log records ("pdm.termui: Adding new pin: six 1.16.0") and, on failure, a traceback
_LOG_RECORD = re.compile(r"^(?:pdm\.termui|unearth[\w.]*): ")
# log records kept: pdm rejects a release whose metadata modern parsers refuse (pandas 0.23.4's
# "pytz (>=2011k)") and says so only in its log, then "Unable to find a resolution"
_KEPT_RECORD = re.compile(r"Candidate rejected because it contains invalid metadata")
_TRACEBACK = "Traceback (most recent call last):"
_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
_PDM_FRAME = re.compile(r'^\s+File ".*(?:[/\\]pdm[/\\]|[/\\]bin[/\\]pdm")')
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?([A-Za-z_]\w*)(?::\s?(.*))?$")


def _quiet(text: str) -> str:
    """pdm's output as it reads without ``-v``, for the diagnosis and the lock record: the log
    records (and their indented continuation lines) dropped, and pdm's own traceback reduced to
    the ``[ResolutionError]: Unable to find a resolution`` line it prints in its place (a
    traceback that pdm quotes, a build's, stays)."""
    lines = text.splitlines()
    out: list[str] = []
    in_record = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if _LOG_RECORD.match(line) and _KEPT_RECORD.search(line):
            out.append(_LOG_RECORD.sub("", line))  # why pdm passed over a release: the diagnosis reads it
            in_record = True
            i += 1
            continue
        if _LOG_RECORD.match(line) or (in_record and line[:1].isspace()):
            in_record = True
            i += 1
            continue
        in_record = False
        if line.startswith(_TRACEBACK):
            last, end = _skip_traceback(lines, i)
            if any(_PDM_FRAME.match(ln) for ln in lines[i:end]):
                if last is not None:
                    m = _EXCEPTION_LINE.match(last)
                    out.append(f"[{m.group(1)}]: {m.group(2) or ''}".rstrip() if m else last)
                i = end
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


def _skip_traceback(lines: list[str], i: int) -> tuple[str | None, int]:
    """The final exception line of the (chained) traceback starting at ``lines[i]``, and the
    index after it."""
    while True:
        i += 1
        while i < len(lines) and (not lines[i].strip() or lines[i][:1].isspace() or lines[i].startswith(_TRACEBACK)):
            i += 1
        if i >= len(lines):
            return None, i
        last = lines[i]
        after = i + 1
        while after < len(lines) and not lines[after].strip():
            after += 1
        if after < len(lines) and lines[after].startswith(_CHAINED):
            i = after
            continue
        return last, i + 1


_ROUND = re.compile(r"=+ Starting round (\d+) =+")
_PIN = re.compile(r"Adding new pin: (\S+) (\S+)")
_REQUIREMENT = re.compile(r"^\s*Adding requirement (\S+?)(?:\(from (.+)\))?\s*$")
_REJECTED = re.compile(r"Candidate rejected: (\S+)")
_DOWNLOAD = re.compile(r"Downloading <Link \S*/([^/\s#]+)\S* .*\((\d[\d.]* [kMG]?B)\)\s*$")
_HASHES = re.compile(r"Fetching hashes for (\S+)")


class ResolverDetail:
    """Summarises ``pdm lock -v`` output, line by line, into one short progress detail:
    "round 12, 40 pinned: pin numpy 1.24.4". ``None`` for lines that change nothing."""

    def __init__(self) -> None:
        self.round = 0
        self.names: set[str] = set()  # pinned at least once (a backtrack pins a name again)

    def __call__(self, line: str) -> str | None:
        if not _LOG_RECORD.match(line):
            return line if line.startswith("ERROR:") else None
        msg = _LOG_RECORD.sub("", line, count=1)
        if m := _ROUND.search(msg):
            self.round = int(m.group(1))
            return f"round {self.round}, {len(self.names)} pinned"
        if "Resolution Result" in msg:
            return f"resolved: {len(self.names)} pinned in {self.round} rounds"
        if m := _PIN.search(msg):
            self.names.add(m.group(1))
            return self._at(f"pin {m.group(1)} {m.group(2)}")
        if m := _REQUIREMENT.match(msg):
            return self._at(f"requirement {m.group(1)}" + (f" (from {m.group(2)})" if m.group(2) else ""))
        if m := _REJECTED.search(msg):
            return self._at(f"rejected {m.group(1)}")
        if m := _DOWNLOAD.search(msg):
            return self._at(f"download {release_of(m.group(1))} ({m.group(2)})")
        if m := _HASHES.search(msg):
            return f"fetching hashes: {m.group(1)}"
        return None

    def _at(self, event: str) -> str:
        return f"round {self.round}, {len(self.names)} pinned: {event}"


def _timed_out(exc: ExternalToolError) -> str:
    """What a runner's timeout tells the diagnosis: the reason only. pdm's half-finished output
    (retries, warnings) must not be read as the cause of a failed resolution."""
    return f"timed out after {exc.timeout} s" if exc.timeout is not None else exc.stderr or str(exc)


def _trim(text: str, lines: int = 25) -> str:
    """The recorded error of a failed attempt: the resolver's own message (relax.error_excerpt),
    with no machine paths (records get committed: the home folder becomes '~')."""
    text = text.replace(str(Path.home()), "~")
    text = "\n".join(ln for ln in relax._clean(text).splitlines()
                     if "virtualenv" not in ln.lower() and "use_venv" not in ln)
    return relax.error_excerpt(text, lines)




if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
