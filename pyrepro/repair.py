"""The repair planner: what ``reproduce`` does after a lock whose environment does not build or
does not import (pure: no I/O), as ``lockplan`` is for the lock itself.

``reproduce`` describes what happened in a frozen ``Situation`` (the model's Python and whether
the submission stated it, the current lock's strategy, whether a submission date exists, the
sdists of the last build that did not build, the rows of the last import check, every move made so
far and the facts looked up) and ``next_move`` returns exactly one move:

- ``PinWheels``: locked sdists that did not build move to the nearest release with a wheel for the
  model's Python (rule ``sdist-to-wheel``): pins with reasons in model.toml, relock, rebuild; and
  exact pins with no release for a Python the submission states move the same way before the first
  lock (rule ``pin-for-stated-python``);
- ``MovePython``: the Python moves (rules ``sdist-to-older-python``, ``sdist-to-newer-python``,
  ``imports-to-older-python``, ``not-found-to-older-python``, ``unresolved-to-older-python``,
  ``unresolved-to-newer-python``):
  model.toml records it with its reason and the Python it replaced, relock, rebuild. ``restore``:
  when that Python does not lock, every file goes back as it was and the planner is asked again;
- ``RelockByDate``: relock with nothing newer than the submission's date (imports failing inside
  installed code under an as-declared lock), rebuild;
- ``RelockByEra``: an undated submission whose installed code fails to import takes the upload
  day of the failing distribution's locked release as its date (and the Python settled by then,
  when it states none): rule ``era-of-failing-release``, model.toml records both, relock, rebuild;
  likewise the upload day of a locked sdist that does not build when nothing else helps (rule
  ``era-of-failing-sdist``, the Python kept);
- ``AddProviders``: modules no installed distribution provides get the distribution whose wheel,
  released by the submission's date, ships them (``pyrepro.providers``; rule ``import-provider``):
  recorded in model.toml with that evidence, relock, rebuild. That includes a whole package that
  installed code imports and its distribution never declared (``undeclared_dependency``);
- ``PinProvider``: a module whose provider pyrepro chose (``provided``: at init or by
  ``AddProviders``) fails to import inside that very distribution: the provider moves to its next
  release that ships the module (rule ``provider-next-release``, at most ``MAX_PROVIDER_MOVES``
  per module; matbench-discovery 0.1.0 reads a file it does not ship): a pin with the reason in
  model.toml, relock, rebuild;
- ``SourceToIndex``: a git source pinned to a commit that cannot be fetched here gives way to the
  index's distribution of that name (rule ``source-to-index``): model.toml drops the source and
  says why, relock by date when the submission has one, rebuild;
- ``LookUp``: the decision needs facts first (release lists with wheels, whether a release has a
  wheel for a Python, upload days, which interpreters exist); the caller looks them up,
  ``Facts.learn``s them and asks again;
- ``AcceptBranches``: nothing more to try, and every module that still fails is imported only
  under a run-time ``if`` or in functions nothing refers to (``accept_branches``): the import
  check passes and names them;
- ``GiveUp``: nothing more to try, with the reason and the next step a person would take.

The situations are, in this order: extra sources the build could not find (``unavailable``), a lock that failed because the resolver found no release of an
exact pin for the model's Python (``unlocked``), sdists that did not build (``sdists``), modules that
do not import (``imports``). ``reproduce`` only performs moves and records them (``Moved``), so
every rule lives here.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from packaging.utils import canonicalize_name

from pyrepro import relax
from pyrepro.interpreters import RELEASES, python_of_day, settled_pythons, version_key
from pyrepro.providers import AFTER_DATE

MAX_BUILD_MOVES = 3  # sdist-to-wheel and sdist-to-older-python moves per build, in all
MAX_LOCK_MOVES = 2  # not-found-to-older-python moves before the first lock
MAX_PROVIDER_MOVES = 2  # provider-next-release moves per module
MAX_UNRESOLVED_MOVES = 3  # unresolved-to-older-python moves (one minor each: 3.13 -> 3.10 at most)


@dataclass(frozen=True)
class Moved:
    """A move ``reproduce`` performed: ``kind`` wheels | python | era | era-of | provider | provider-next |
    lockstep | version-check | source | clash; ``trigger``
    lock | build | imports;
    ``ok``: whether its relock produced a lock (a failed era relock or older-Python lock lets the
    next rule try)."""

    kind: str
    trigger: str
    ok: bool = True
    python: str = ""  # the Python moved to (kind python)
    pins: tuple[tuple[str, str], ...] = ()  # (distribution, release) moved to (kind wheels)
    modules: tuple[str, ...] = ()  # the modules given a provider (kinds provider, provider-next); sources (source)


@dataclass(frozen=True)
class Facts:
    """What the index and the machine said, keyed by what was asked."""

    wheel_versions: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)  # (dist, python)
    has_wheel: Mapping[tuple[str, str, str], bool | None] = field(default_factory=dict)  # (dist, version, python)
    uploaded: Mapping[tuple[str, str], str | None] = field(default_factory=dict)  # (dist, version) -> ISO day
    interpreters: Mapping[str, str] = field(default_factory=dict)  # python -> "" (found) or why missing
    # module -> (distribution, version, reason) whose wheel ships it, or None: no candidate's does
    providers: Mapping[str, tuple[str, str, str] | None] = field(default_factory=dict)
    # (module, distribution, version) -> (next version, reason) of a later release that ships the
    # module, or None: none does
    next_release: Mapping[tuple[str, str, str], tuple[str, str] | None] = field(default_factory=dict)
    # distribution -> its releases on the index, (version, first upload day) each; () for none
    releases: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)

    def learn(self, **more: Mapping) -> Facts:
        return replace(self, **{k: {**getattr(self, k), **v} for k, v in more.items()})


@dataclass(frozen=True)
class Situation:
    python: str
    python_stated: bool  # the submission states it (evidence); a stated Python is never moved by imports
    python_reason: str
    strategy: str  # the current lock's strategy: as-declared | date-bounded | relaxed | reused
    dated: bool  # the submission has a date to bound a relock by
    #: that date only bounds the submission's time (its Python's end of life, an API's removal:
    #: ``evidence.BOUND_ONLY``), so a failing release's own upload day may date it better
    bound_only: bool = False
    online: bool = True
    # exact pins (distribution, version) the failed lock's resolver found no release of for this Python
    unlocked: tuple[tuple[str, str], ...] = ()
    # the failed lock's problem when it was not ``unlocked`` pins (a conflict, a dependency that
    # resolves to nothing): "" when the lock did not fail that way
    lock_failed: str = ""
    sdists: tuple[tuple[str, str], ...] = ()  # locked sdists the last build could not build
    sdists_slow: bool = False  # ... because their build ran past the time one sdist's build may take
    # what their builds said they need from the system (a header, a ``*-config`` tool, R): no date
    # or era relock brings that, only a wheel (or a Python with one) avoids it
    sdists_need: tuple[str, ...] = ()
    # sdist -> the declared requirements, none of them imported by the code, that alone bring it
    # into the lock (absent: an imported requirement needs it, or the lock does not say)
    unimported: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    imports: tuple[tuple[str, str, str], ...] = ()  # the last import check: (module, status, message)
    notes: str = ""  # model.toml notes (the reason an import has no distribution, when known)
    absent: Mapping[str, str] = field(default_factory=dict)  # module -> the name table's reason it is not on PyPI
    # module -> (distribution, locked version) of the providers pyrepro chose for undeclared imports
    provided: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    # modules of ``provided`` whose provider is pinned to its first release after the submission's
    # date (no release by then ships them)
    provided_after: frozenset[str] = frozenset()
    # module -> (distribution, locked version) providing each module whose import failed (as far
    # as the name table and the lock tell)
    installed: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    locked: Mapping[str, str] = field(default_factory=dict)  # distribution -> its locked version
    moves: tuple[Moved, ...] = ()
    facts: Facts = field(default_factory=Facts)
    # extra (git) sources of model.toml the build could not find here: (name, repository, commit)
    unavailable: tuple[tuple[str, str, str], ...] = ()
    # the distributions the code imports (model.toml's scanned set, canonical); empty: not known
    imported: frozenset[str] = frozenset()
    # top-level module -> the installed distributions that all ship it (two or more: one's files
    # overwrote the other's), for the modules of the last import check
    clashes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # checked module -> where it is imported, for modules imported only under a run-time ``if`` or
    # in functions nothing refers to (``run.branch_only_modules``)
    branches: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PinWheels:
    steps: tuple[relax.Step, ...]


@dataclass(frozen=True)
class MovePython:
    python: str
    reason: str
    rule: str
    restore: bool = False  # no lock for it: put every file back and ask again
    summary: str = ""  # what asked for it, in a few words


@dataclass(frozen=True)
class RelockByDate:
    reason: str


@dataclass(frozen=True)
class RelockByEra:
    """An undated submission gets the date of the release whose import fails (``day``, ISO): relock
    with nothing newer, on ``python`` (the Python settled by that day when the submission states
    none, else its own)."""

    day: str
    python: str
    reason: str
    summary: str = ""


@dataclass(frozen=True)
class AddProviders:
    # (module, distribution, version, reason, pinned: that release, as newer ones no longer ship it)
    providers: tuple[tuple[str, str, str, str, bool], ...]


@dataclass(frozen=True)
class PinProvider:
    module: str
    distribution: str
    before: str  # the locked version that failed
    version: str  # the release moved to
    reason: str
    rule: str = "provider-next-release"  # or "lockstep", "import-version-check"
    requirement: str = ""  # the specifier written (rule import-version-check: ">=2.8"); "" : ==version

    @property
    def spec(self) -> str:
        return f"{self.distribution}{self.requirement or '==' + self.version}"

    @property
    def kind(self) -> str:
        """The kind of ``Moved`` that records it."""
        return {"lockstep": "lockstep", "import-version-check": "version-check",
                "companion": "companion", "bundled-library": "bundled"}.get(self.rule, "provider-next")


@dataclass(frozen=True)
class DropClash:
    """A distribution the scan chose for an imported module, dropped because a dependency brings
    another distribution that ships the same module (rule ``module-clash``): relock, rebuild."""

    distribution: str
    module: str
    reason: str


@dataclass(frozen=True)
class LookUp:
    wheel_versions: tuple[tuple[str, str], ...] = ()
    has_wheel: tuple[tuple[str, str, str], ...] = ()
    uploads: tuple[tuple[str, str], ...] = ()
    interpreters: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()  # modules to find a provider for
    next_release: tuple[tuple[str, str, str], ...] = ()  # (module, distribution, version)
    releases: tuple[str, ...] = ()  # distributions whose releases on the index are wanted


@dataclass(frozen=True)
class SourceToIndex:
    """Extra (git) sources that are not available here give way to the index's distribution of the
    same name (rule ``source-to-index``): model.toml drops the source and says why, relock (by date
    when the submission has one), rebuild."""

    names: tuple[str, ...]
    reason: str
    #: sources named only by their repository (no egg or PEP 508 name) whose name the code does not
    #: import: dropped, not replaced by the index's unrelated project of that name
    dropped: tuple[str, ...] = ()
    #: (source name, index name): an egg name in setuptools' ``project-version`` form
    #: (``#egg=Lasagne-master``) whose project part is the repository's name; the index's project
    #: of that name is among ``names``
    renamed: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class AcceptBranches:
    """The import check passes: every module that still fails is imported only where a run may
    never go (under a run-time condition, or in a function nothing in the folder refers to:
    ``run.branch_only_modules``), and another module imports. ``modules``: (module, where, its
    failure)."""
    modules: tuple[tuple[str, str, str], ...]

    @property
    def summary(self) -> str:
        return "; ".join(f"{m} ({where}): {msg[:120]}" for m, where, msg in self.modules)


@dataclass(frozen=True)
class GiveUp:
    reason: str  # why nothing more is tried ("" when the failure speaks for itself)
    hint: str = ""  # the next step a person would take ("" : the failure's own hint)


Move = (PinWheels | MovePython | RelockByDate | RelockByEra | AddProviders | PinProvider | SourceToIndex | DropClash
        | LookUp
        | AcceptBranches | GiveUp)


class _Need(Exception):
    """A fact the decision needs (internal: turned into a LookUp)."""

    def __init__(self, lookup: LookUp) -> None:
        self.lookup = lookup


def next_move(s: Situation) -> Move:
    """The one move for ``s`` (see the module docstring): lock rules when the lock found no release
    of a pin, build rules when sdists did not build, else import rules when modules do not import."""
    try:
        if s.unavailable:
            return _after_unavailable_source(s)
        if s.unlocked:
            return _after_lock_failure(s)
        if s.lock_failed:
            return _after_unresolved(s)
        if s.sdists:
            return _after_build(s)
        return _after_imports(s)
    except _Need as need:
        return need.lookup


# ----------------------------------------------------------------------------------- facts

def _wheel_versions(s: Situation, pkgs: list[str]) -> dict[str, tuple[str, ...]]:
    missing = tuple((p, s.python) for p in pkgs if (p, s.python) not in s.facts.wheel_versions)
    if missing:
        raise _Need(LookUp(wheel_versions=missing))
    return {p: tuple(s.facts.wheel_versions[(p, s.python)]) for p in pkgs}


def _upload_day(s: Situation, dist: str, version: str) -> dt.date | None:
    """The day the index received ``dist`` ``version`` (looked up when not known yet), or None."""
    if (dist, version) not in s.facts.uploaded:
        raise _Need(LookUp(uploads=((dist, version),)))
    day = s.facts.uploaded[(dist, version)]
    try:
        return dt.date.fromisoformat(day) if day else None
    except ValueError:
        return None


def _interpreter(s: Situation, python: str) -> str:
    if python not in s.facts.interpreters:
        raise _Need(LookUp(interpreters=(python,)))
    return s.facts.interpreters[python]


def older_pythons(python: str) -> list[str]:
    """The CPython versions pyrepro targets that are older than ``python``, oldest first."""
    return [v for v, _d in RELEASES if version_key(v) < version_key(python)]


# ---------------------------------------------------------------------------- extra sources

def _after_unavailable_source(s: Situation) -> Move:
    """A git dependency pinned to a commit that cannot be fetched here (catkit, corpus8 dev:
    ``git+https://gitlab.com/ase/ase.git@d441dd6``) whose name the index has releases of: the
    index's distribution instead, relocked by the submission's date when it has one, so the
    release of that time (rule ``source-to-index``, once per source). A name the index does not
    have stays a source, and the build stops saying where to put its checkout.

    A source whose name is only its repository's (no egg or PEP 508 name said otherwise) and that
    the code does not import is dropped instead: the index's project of that name is another one
    (retroxpert, corpus12 dev: ``git+git://github.com/pytorch/audio.git@d92de5b`` is torchaudio,
    which the code imports and another rule provides; PyPI's ``audio`` is unrelated)."""
    done = {mod for m in s.moves if m.kind == "source" for mod in m.modules}
    names = [n for n, _r, _c in s.unavailable if n not in done]
    if not names or not s.online:
        return GiveUp("" if s.online else "offline: the index was not asked for a distribution of that name")
    guessed = tuple(n for n, r, _c in s.unavailable if n in names and s.imported
                    and canonicalize_name(n) not in s.imported
                    and canonicalize_name(n) == canonicalize_name(r.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")))
    names = [n for n in names if n not in guessed]
    asks = tuple(n for n in names if n not in s.facts.releases)
    if asks:
        raise _Need(LookUp(releases=asks))
    missing = [n for n in names if not s.facts.releases[n]]
    stems = {n: st for n, r, _c in s.unavailable if n in missing and (st := egg_project(n, r))}
    asks = tuple(st for st in stems.values() if st not in s.facts.releases)
    if asks:
        raise _Need(LookUp(releases=asks))
    renamed = tuple((n, st) for n, st in stems.items() if s.facts.releases[st])
    missing = [n for n in missing if n not in dict(renamed)]
    if missing:
        return GiveUp(f"{', '.join(missing)}: no distribution of that name on the index either")
    names = [dict(renamed).get(n, n) for n in names]
    parts = []
    if names:
        shown = {st: f"{st}, named {n} by its egg fragment (setuptools' project-version form)" for n, st in renamed}
        where = "; ".join(f"{shown.get(dict(renamed).get(n, n), n)} ({r or 'no repository'} at {c[:12]})"
                          for n, r, c in s.unavailable if dict(renamed).get(n, n) in names)
        when = ("relocked with nothing newer than the submission's date, so the release of its time" if s.dated else
                "the submission has no date, so the release the lock takes")
        parts.append(f"the git source{'s' if len(names) > 1 else ''} {where} cannot be fetched here, and the index "
                     f"has releases of {', '.join(names)}: {when} (rule source-to-index; the commit's own code may "
                     f"differ)")
    if guessed:
        where = "; ".join(f"{r} at {c[:12]}" for n, r, c in s.unavailable if n in guessed)
        parts.append(f"the git source{'s' if len(guessed) > 1 else ''} {where} cannot be fetched here; "
                     f"{'their names are' if len(guessed) > 1 else 'its name is'} only the repository's, and the "
                     f"code imports no distribution of {'those names' if len(guessed) > 1 else 'that name'}: dropped, "
                     f"not replaced by the index's project of that name (rule source-to-index; an import it "
                     f"provided fails the import check, which finds its provider)")
    return SourceToIndex(tuple(names), "; ".join(parts), dropped=guessed, renamed=renamed)


def egg_project(name: str, repository: str) -> str | None:
    """The project part of an egg name in setuptools' ``project-version`` form whose project is the
    repository's name (kaggle-diabetic-retinopathy, corpus19 dev:
    ``git+https://github.com/benanne/Lasagne.git@9f591a5#egg=Lasagne-master`` is Lasagne at a
    version pip calls "master"), or None. Only the repository's own name is taken, so a hyphenated
    project name (``scikit-learn``) is never cut."""
    if "-" not in name or not repository:
        return None
    stem = name.rsplit("-", 1)[0]
    repo = repository.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    return stem if stem and canonicalize_name(stem) == canonicalize_name(repo) else None


# ------------------------------------------------------------------------------------ lock

def _after_lock_failure(s: Situation) -> Move:
    """The resolver found no release of exact pins for the model's Python (torch==1.11.0 has no
    CPython 3.11 wheel; a 2023 date chose 3.11): when the submission did not state its Python, move
    to the newest older CPython that has a wheel of every such pin (rule
    ``not-found-to-older-python``; a pin with no wheels at all: the newest CPython of the day the
    index received it). A Python the submission states is evidence and is not moved."""
    moved = [m for m in s.moves if m.trigger == "lock"]
    pins = ", ".join(f"{p}=={v}" for p, v in s.unlocked)
    if s.python_stated:
        steps = _pins_for_python(s, moved) if s.online and len(moved) < MAX_LOCK_MOVES else []
        if steps:
            return PinWheels(tuple(steps))
        return GiveUp(f"no release of {pins} installs on CPython {s.python}, the Python the submission states "
                      f"({s.python_reason})", "pin a release of the submission's time that has a wheel for that "
                      "Python in model.toml ([[dependencies.pins]]), or set python, then rerun")
    if len(moved) >= MAX_LOCK_MOVES:
        return GiveUp(f"no lock after {len(moved)} moves of the Python (at most {MAX_LOCK_MOVES}); {pins} still "
                      f"not found for CPython {s.python}")
    if not s.online:
        return GiveUp(f"no release of {pins} found for CPython {s.python} (offline: the index was not asked)")
    tried = {m.python for m in moved}
    older = [v for v in older_pythons(s.python) if v not in tried]
    asks = tuple((p, v, py) for p, v in s.unlocked for py in older if (p, v, py) not in s.facts.has_wheel)
    if asks:
        raise _Need(LookUp(has_wheel=asks))
    wants: list[tuple[str, str, str]] = []  # (python, pin, how)
    for p, v in s.unlocked:
        known = [py for py in older if s.facts.has_wheel[(p, v, py)] is not None]
        fits = [py for py in older if s.facts.has_wheel[(p, v, py)]]
        if fits:
            wants.append((fits[-1], f"{p}=={v}", f"{fits[-1]} is the newest older CPython with a wheel of {p} {v}"))
            continue
        if known:
            return GiveUp(f"{p} {v} has wheels, but none for CPython {s.python} or an older one pyrepro targets",
                          f"pin a release of {p} with a wheel for CPython {s.python} in model.toml, then rerun")
        if (p, v) not in s.facts.uploaded:
            raise _Need(LookUp(uploads=((p, v),)))
        day = s.facts.uploaded[(p, v)]
        try:
            made = python_of_day(dt.date.fromisoformat(day)) if day else None
        except ValueError:
            made = None
        if made is None or version_key(made) >= version_key(s.python) or made in tried:
            return GiveUp(f"no release of {p}=={v} found for CPython {s.python}, and the index says nothing that "
                          "points to an older Python")
        wants.append((made, f"{p}=={v}", f"{made} was the newest CPython when the index received {p} {v} ({day})"))
    target, pin, how = min(wants, key=lambda w: version_key(w[0]))
    missing = _interpreter(s, target)
    if missing:
        return GiveUp(f"{pin} has no release for CPython {s.python}; {how}; but {missing}",
                      f"install CPython {target} (pyenv install {target}), then rerun")
    reason = (f"{target}: the lock found no release of {pin} for CPython {s.python}; {how} (rule "
              f"not-found-to-older-python; before: {s.python}, {s.python_reason or 'no reason recorded'})")
    return MovePython(target, reason, "not-found-to-older-python", restore=True,
                      summary=f"{pin} not found for {s.python}")


def _pins_for_python(s: Situation, moved: list[Moved]) -> list[relax.Step]:
    """Exact pins with no release for the Python the submission states (requirements that state
    python==3.7.10 beside numpy==1.22.0, whose wheels start at 3.8): each moves to the
    release nearest it with a wheel for that Python (rule ``pin-for-stated-python``); the stated
    Python is evidence and stays. [] when one has no such release, or was moved there already."""
    tried = {(p, v) for m in moved for p, v in m.pins}
    have = _wheel_versions(s, [p for p, _v in s.unlocked])
    steps = []
    for pkg, version in s.unlocked:
        near = relax.nearest_version(version, [v for v in have[pkg] if (pkg, v) not in tried])
        if near is None or near == version:
            return []
        steps.append(relax.Step("pin-for-stated-python", pkg, f"{pkg}=={version}", f"{pkg}=={near}",
                                f"{pkg} {version} has no release for CPython {s.python}, the Python the submission "
                                f"states ({s.python_reason}); {near} is the nearest release with a wheel for it", ()))
    return steps


def _after_unresolved(s: Situation) -> Move:
    """The lock failed for another reason than a missing pin (a conflict no relaxation resolved;
    mat_discover needs torch<2, which has no CPython 3.13 wheel, so the resolver backtracked into
    releases that require a dummy). When the submission states no Python, the newest one was a
    guess: step back one minor at a time (rule ``unresolved-to-older-python``, at most
    ``MAX_UNRESOLVED_MOVES``), every file restored when that Python does not lock either."""
    moved = [m for m in s.moves if m.trigger == "lock"]
    if s.python_stated:
        return _stated_unresolved(s, moved)
    if len(moved) >= MAX_UNRESOLVED_MOVES:
        return GiveUp(f"no lock on CPython {', '.join(m.python for m in moved)} either (at most "
                      f"{MAX_UNRESOLVED_MOVES} moves of the Python)")
    tried = {m.python for m in moved}
    older = [v for v in older_pythons(s.python) if v not in tried]
    if not older:
        return GiveUp(f"no older CPython than {s.python} to try")
    target = older[-1]
    missing = _interpreter(s, target)
    if missing:
        return GiveUp(f"no lock for CPython {s.python} ({s.lock_failed}); an older Python might lock, but {missing}",
                      f"install CPython {target} (pyenv install {target}), then rerun")
    reason = (f"{target}: no lock for CPython {s.python} ({s.lock_failed}), and the submission states no Python; "
              f"one minor older (rule unresolved-to-older-python; before: {s.python}, "
              f"{s.python_reason or 'no reason recorded'})")
    return MovePython(target, reason, "unresolved-to-older-python", restore=True,
                      summary=f"no lock for {s.python}")


def _stated_unresolved(s: Situation, moved: list[Moved]) -> Move:
    """A Python the submission states that does not lock (deep-drug-coder and mat, corpus5: a README's
    `conda create python=3.6` beside rdkit, whose every PyPI release for 3.6 needs a numpy that never
    had a 3.6 release; conda had its own builds). PyPI's releases for that Python never made a
    consistent set, so the next newer CPython is tried once (rule ``unresolved-to-newer-python``),
    said as a deviation from the stated one; every file is restored when it does not lock either."""
    if moved or _python2(s):  # Python 2 code does not run on a Python 3
        return GiveUp("", "")
    newer = [v for v, _d in RELEASES if version_key(v) > version_key(s.python)]
    if not newer:
        return GiveUp("", "")
    target = newer[0]
    missing = _interpreter(s, target)
    if missing:
        return GiveUp(f"no lock for CPython {s.python}, the Python the submission states ({s.lock_failed}); "
                      f"{target} might lock, but {missing}", f"install CPython {target} (pyenv install {target}), "
                      "then rerun")
    reason = (f"{target}: no lock for CPython {s.python}, the Python the submission states ({s.python_reason}), "
              f"because {s.lock_failed}: PyPI's releases for {s.python} do not make a consistent set (conda had "
              f"builds of its own); one minor newer, a deviation from the submission (rule "
              f"unresolved-to-newer-python; before: {s.python})")
    return MovePython(target, reason, "unresolved-to-newer-python", restore=True,
                      summary=f"no lock for the stated {s.python}")


# ----------------------------------------------------------------------------------- build

def _window(s: Situation) -> tuple[Moved, ...]:
    """The moves of the current build: those after the last import-triggered one."""
    last = max((i for i, m in enumerate(s.moves) if m.trigger == "imports"), default=-1)
    return tuple(m for m in s.moves[last + 1:] if m.trigger == "build")


def _after_build(s: Situation) -> Move:
    # a git source given way to the index is no move for an sdist (kaggle-diabetic-retinopathy,
    # corpus19 dev: three source moves had used up the sdists' three before any sdist was moved)
    window = tuple(m for m in _window(s) if m.kind != "source")
    if len(window) >= MAX_BUILD_MOVES:
        return GiveUp(f"{len(window)} moves for sdists that did not build were made already (at most "
                      f"{MAX_BUILD_MOVES})")
    tried: dict[str, set[str]] = {}
    for m in window:
        for pkg, version in m.pins:
            tried.setdefault(pkg, set()).add(version)
    if not s.online:
        pkg, version = s.sdists[0]
        return GiveUp(f"{pkg} {version} did not build and no release of {pkg} has a wheel for CPython {s.python} "
                      "(offline: the index was not asked)")
    undone = {pkg for pkg, _v in s.sdists if pkg in tried}  # moved before, and back again
    # (python, reason, rule) of a move of the Python, when one is the answer
    move = _with_rule(_older_python(s, undone), "sdist-to-older-python") if undone else None
    drops = _unimported_steps(s)
    if drops:  # with the sdists the other ones bring in moved to wheels where they can be
        dropped = {st.package for st in drops}
        rest = [(p, v) for p, v in s.sdists if not (s.unimported.get(p) and set(s.unimported[p]) <= dropped)]
        more, _why = _wheel_steps(s, tried, rest) if rest else ([], "")
        return PinWheels(tuple(drops + more))
    steps: list[relax.Step] = []
    why = ""
    wants_python = False  # a Python move is the answer, and that interpreter is missing here
    if move is None:
        steps, why = _wheel_steps(s, tried, list(s.sdists))
        crossing = _across_series(steps) if steps and not s.python_stated and not _python2(s) else set()
        if crossing:
            # the Python was guessed: a Python with a wheel of the very release keeps what the
            # resolver chose, where a wheel of another series changes the API and moves the
            # releases that bound it (memory-knowledge-tracing, corpus15 dev: mxnet 1.9.1 holds
            # numpy<2, numpy 1.26.4 has no wheel for 3.13; numpy 2.1.0 took mxnet back to 2017)
            older = _with_rule(_older_python(s, crossing, across=True), "sdist-to-older-python")
            been = {m.python for m in s.moves if m.kind == "python"}  # never back to a Python left before
            if older is not None and older[0] not in been and not _interpreter(s, older[0]):
                steps, move = [], older
        if not steps and move is None:
            move = _with_rule(_older_python(s, set()), "sdist-to-older-python")
        if not steps and move is None and not undone and not _python2(s):
            move = _with_rule(_newer_python(s), "sdist-to-newer-python")
    if move is not None:
        missing = _interpreter(s, move[0])
        if missing:  # say which Python the move needs, change nothing
            why = f"{why}; {move[1]}; but {missing}" if why else f"{move[1]}; but {missing}"
            move, wants_python = None, True
    if steps:
        return PinWheels(tuple(steps))
    if move is not None:
        return MovePython(*move)
    if s.sdists_need:  # a relock by a date builds the same sdist against the same system
        pkg, version = s.sdists[0]
        said = f"{pkg} {version} did not build: its build needs {', '.join(s.sdists_need)} from the system"
        return GiveUp(f"{said}; {why}" if why else said)
    era = _era_of_failing_sdist(s)
    if era is not None:
        return era
    by_date = None if wants_python else _sdist_by_date(s)
    if by_date is not None:
        return by_date
    return GiveUp(why)


def _sdist_by_date(s: Situation) -> RelockByDate | None:
    """A dated submission whose as-declared lock (newest releases beside its pins) holds a sdist
    that does not build, and no release or Python move helps: relocked with nothing newer than the
    submission's date, once (rule ``sdist-by-date``). A release made after the code's time may
    claim a Python it no longer builds for: regex 2022.1.18 states no Requires-Python, and its
    sdist carries only its Python 3 C code, so on a Python 2 submission (whose date is bounded by
    Python 2's end of life) gcc stops on ``Py_UCS1`` (crowdflower-relevance, corpus14 dev). Not
    for a build stopped for its time (torch-scatter on 2 cores: hydrodl, corpus14 dev)."""
    if not s.dated or s.strategy != "as-declared" or any(m.kind in ("era", "era-of") for m in s.moves):
        return None
    if s.sdists_slow:  # a build too slow for this machine (PyG's extensions) is as slow from another day
        return None
    pkg, version = s.sdists[0]
    return RelockByDate(f"the locked sdist {pkg} {version} did not build on CPython {s.python} and no release or "
                        "Python move helps (rule sdist-by-date)")


def _with_rule(found: tuple[str, str] | None, rule: str) -> tuple[str, str, str] | None:
    return (*found, rule) if found is not None else None


def _python2(s: Situation) -> bool:
    """Python 2 code: no Python 3 runs it, so no move of the Python helps. (pip locks it, through a
    date-bounded view of the index when the lock is bounded: ``pyrepro.dateindex``.)"""
    return s.python.startswith("2.")


def _era_of_failing_sdist(s: Situation) -> RelockByEra | None:
    """An undated submission whose locked sdist does not build and no Python or release move helps:
    today's releases beside it are the likely cause (perovskite-ordering: torch 1.13.1's
    cpp_extension imports pkg_resources, which the newest setuptools the lock took no longer ships,
    so torch-scatter 2.1.1's setup.py cannot even start). The sdist's upload day becomes the date
    bound, once (rule ``era-of-failing-sdist``); the Python stays. None when dated or tried."""
    if (s.dated and not s.bound_only) or any(m.kind == "era-of" for m in s.moves) or _python2(s):
        return None
    pkg, version = s.sdists[0]
    when = _upload_day(s, pkg, version)
    if when is None:
        return None
    reason = (f"{when.isoformat()}: the locked sdist {pkg} {version} did not build on CPython {s.python} and no "
              f"release or Python move helps; the submission has no date, and {pkg} {version} was uploaded "
              f"{when.isoformat()}: relocked with nothing newer than that day, so what builds it is of its "
              f"time (rule era-of-failing-sdist)")
    return RelockByEra(when.isoformat(), s.python, reason, summary=f"{pkg} {version} did not build")


def _newer_python(s: Situation) -> tuple[str, str] | None:
    """When locked sdists did not build, no release of them has a wheel for the model's Python and
    no older CPython has a wheel of the locked releases either, the oldest newer CPython for which
    every one of them has a release with a wheel (rule ``sdist-to-newer-python``): Open Babel's PyPI
    wheels start at CPython 3.10, and a conda file's python=3.8 had conda's own binary. A move
    already made away from that Python is not repeated. (python, reason), or None."""
    newer = [v for v, _d in RELEASES if version_key(v) > version_key(s.python)]
    been = {m.python for m in s.moves if m.kind == "python"}
    asks = tuple((p, v) for p, _ in s.sdists for v in newer if (p, v) not in s.facts.wheel_versions)
    if asks:
        raise _Need(LookUp(wheel_versions=asks))
    for v in newer:
        if v in been:
            continue
        if all(s.facts.wheel_versions[(p, v)] for p, _ in s.sdists):
            names = ", ".join(f"{p} {ver}" for p, ver in s.sdists)
            return v, (f"{v}: the locked sdist{'s' if len(s.sdists) > 1 else ''} {names} did not build for CPython "
                       f"{s.python}, and no release has a wheel for it or for an older CPython; {v} is the oldest "
                       f"newer CPython with a wheel of {'each' if len(s.sdists) > 1 else 'a release'} (rule "
                       f"sdist-to-newer-python; before: {s.python}, {s.python_reason or 'no reason recorded'})")
    return None


def _unimported_steps(s: Situation) -> list[relax.Step]:
    """Sdists that did not build which only declared requirements the code never imports bring
    into the lock (chemprop 2024's environment export declares torch-scatter, which nothing it
    imports needs, and its build ran past the time allowed): those requirements are dropped, once
    each (rule ``unimported-sdist``). They go to ``dependencies.dropped`` with the reason, as a
    relaxation's drop does. [] when no failing sdist is of that kind."""
    before = {pkg for m in s.moves for pkg, v in m.pins if not v}  # dropped already: not again
    steps: list[relax.Step] = []
    for pkg, version in s.sdists:
        roots = s.unimported.get(pkg, ())
        if not roots or any(r in before for r in roots):
            continue
        via = "" if roots == (pkg,) else f", which {pkg} {version} comes with,"
        for root in roots:
            if root not in {st.package for st in steps}:
                steps.append(relax.Step("unimported-sdist", root, root, "",
                                        f"the locked sdist {pkg} {version} did not build here and the declared "
                                        f"requirement {root}{via} is imported by none of the code: dropped "
                                        "(its modules are still import-checked)", ()))
    return steps


def _wheel_steps(s: Situation, tried: Mapping[str, set[str]],
                 sdists: list[tuple[str, str]]) -> tuple[list[relax.Step], str]:
    """For each sdist of ``sdists`` that did not build, the nearest release with a wheel for the
    model's Python (rule ``sdist-to-wheel``), leaving out releases already moved to (nequip_mlearn:
    the relock widened scikit-learn==1.0.2 back, as nequip 0.5.5 needs <=1.0.1, and the same sdist
    came back); ([], why not) when one has none."""
    have = _wheel_versions(s, [p for p, _v in sdists])
    held = _held(s)
    steps = []
    without: list[str] = []
    for pkg, version in sdists:
        versions = [v for v in have[pkg] if v not in tried.get(pkg, set()) and _within(v, held.get(pkg, ()))]
        w = relax.nearest_version(version, versions)
        if w is None:
            without.append(f"{pkg} {version}")
            continue
        steps.append(relax.Step("sdist-to-wheel", pkg, f"{pkg}=={version}", f"{pkg}=={w}",
                                f"the locked sdist {pkg} {version} did not build here; {w} is the nearest release "
                                f"with a wheel for CPython {s.python}", ()))
    if not steps:
        return [], (f"{without[0]} did not build and no release of {without[0].split()[0]} has a wheel for "
                    f"CPython {s.python}")
    # pip blamed several sdists at once (molecule-autoencoder, corpus8 dev: numpy 1.11 did not compile,
    # and the pure-Python theano 0.8.1 was named with it): those with a wheel move, the others stay
    return steps, ""


def _held(s: Situation) -> dict[str, list[str]]:
    """distribution -> the specifiers an ``import-version-check`` move held it to (numpy <1.24): a
    wheel move must not undo them (memory-knowledge-tracing, corpus15 dev: numpy held below 1.24
    for mxnet's np.bool, 1.23.5 has no cp312 wheel, and sdist-to-wheel took 1.26.0 again)."""
    out: dict[str, list[str]] = {}
    for m in s.moves:
        if m.kind == "version-check":
            for dist, spec in m.pins:
                out.setdefault(canonicalize_name(dist), []).append(spec)
    return out


def _within(version: str, specs: Sequence[str]) -> bool:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return all(Version(version) in SpecifierSet(sp, prereleases=True) for sp in specs)
    except (InvalidSpecifier, InvalidVersion):
        return True


def _across_series(steps: list[relax.Step]) -> set[str]:
    """The packages of ``sdist-to-wheel`` steps that move to another major version (numpy 1.26.4 ->
    2.1.0)."""
    from packaging.version import InvalidVersion, Version

    out = set()
    for st in steps:
        try:
            if Version(st.before.split("==", 1)[-1]).major != Version(st.after.split("==", 1)[-1]).major:
                out.add(st.package)
        except InvalidVersion:
            continue
    return out


def _older_python(s: Situation, undone: set[str], *, across: bool = False) -> tuple[str, str] | None:
    """When a locked sdist did not build and no release of it has a wheel for the model's Python,
    or the relock undid that move (``undone``), the Python that sdist was made for: the newest older
    CPython with a wheel of that very release, else the newest CPython released by the day the
    index received it (rule ``sdist-to-older-python``). (python, reason), or None."""
    have = _wheel_versions(s, [p for p, _v in s.sdists if p not in undone])
    held = _held(s)
    found = []
    for pkg, version in s.sdists:
        if pkg not in undone and any(_within(v, held.get(pkg, ())) for v in have[pkg]):
            continue  # a release with a wheel exists: the sdist-to-wheel move, not this one
        older = older_pythons(s.python)
        asks = tuple((pkg, version, v) for v in older if (pkg, version, v) not in s.facts.has_wheel)
        if asks:
            raise _Need(LookUp(has_wheel=asks))
        made = next((v for v in reversed(older) if s.facts.has_wheel[(pkg, version, v)]), None)
        how = f"{made} is the newest older CPython with a wheel of {pkg} {version}" if made else ""
        if made is None:
            if (pkg, version) not in s.facts.uploaded:
                raise _Need(LookUp(uploads=((pkg, version),)))
            day = s.facts.uploaded[(pkg, version)]
            try:
                made = python_of_day(dt.date.fromisoformat(day)) if day else None
            except ValueError:
                made = None
            how = f"{made} was the newest CPython when the index received that sdist ({day})"
        if made is not None and version_key(made) < version_key(s.python):
            found.append((made, pkg, version, how))
    if not found:
        return None
    made, pkg, version, how = min(found, key=lambda f: version_key(f[0]))
    why = ("its nearest release with a wheel for it is of another major version, and the submission states no "
           "Python" if across else
           "the move to a wheel release was undone by the relock (a dependent's bound rules it out)" if pkg in undone
           else f"no release of {pkg} {','.join(held[pkg])} (held so by an earlier import repair) has a wheel for it"
           if held.get(pkg) else f"no release of {pkg} has a wheel for it")
    return made, (f"{made}: the locked sdist {pkg} {version} did not build for CPython {s.python} and {why}; "
                  f"{how} (rule sdist-to-older-python; before: {s.python}, "
                  f"{s.python_reason or 'no reason recorded'})")


# --------------------------------------------------------------------------------- imports

# Python 3 quotes the module ("No module named 'x.y'"), Python 2 does not ("No module named y")
_NO_MODULE = re.compile(r"No module named '?([A-Za-z_][\w.]*)")
# a package that checks for its companion itself and says so (jax 0.2: "jax requires jaxlib to be
# installed"), in place of Python's "No module named"
_NEEDS_INSTALLED = re.compile(r"\brequires ([A-Za-z_][\w.]*) to be installed")


def not_provided(row: tuple[str, str, str]) -> bool:
    """An import check row failing only because no installed distribution provides the module
    (``No module named 'compute_metrics'`` for ``compute_metrics``), not because of an error
    inside installed code."""
    m = _NO_MODULE.search(row[2])
    return bool(m) and m.group(1).split(".")[0] == row[0].split(".")[0]


def undeclared_dependency(row: tuple[str, str, str], python: str) -> str | None:
    """The top-level package an import fails for inside installed code when the whole package is
    absent (``No module named 'pkg_resources'`` while importing pybel: no dot, so not a submodule
    that a release dropped), and it is no standard-library module of ``python`` or an older CPython
    (a module that left the standard library is ``imports-to-older-python``'s); else None. A module
    only newer CPythons have is a backport's (``dataclasses`` on 3.6: smart_open imports it and
    never declared the backport; ``builtins`` and ``queue`` on Python 2)."""
    from pyrepro.scan.stdlib import stdlib_names

    m = _NO_MODULE.search(row[2]) or _NEEDS_INSTALLED.search(row[2])
    if not m or "." in m.group(1) or m.group(1) == row[0].split(".")[0]:
        return None
    pythons = [python] if python.startswith("2.") else \
        [v for v, _d in RELEASES if version_key(v) <= version_key(python)] + [python]
    if any(m.group(1) in stdlib_names(v) for v in pythons):
        return None
    return m.group(1)


# Packages every virtual environment carried before CPython 3.12 (venv's seed): code of any date
# imported them without declaring them, so their absence is not the date's doing.
_VENV_SEEDED = frozenset({"pkg_resources", "setuptools", "pip", "_distutils_hack"})


def _dateless(module: str, python: str) -> bool:
    """What installed code misses is missing whatever the date: standard library in a CPython
    newer than ``python`` (``dataclasses`` on 3.6: a backport), or a package venvs used to carry
    (``pkg_resources`` on 3.12+)."""
    from pyrepro.scan.stdlib import stdlib_names

    return module in _VENV_SEEDED or any(module in stdlib_names(v) for v, _d in RELEASES
                                         if version_key(v) > version_key(python))


def _module_clash(s: Situation, bad: list[tuple[str, str, str]]) -> DropClash | None:
    """Modules failed to import, and a checked module is shipped by two installed distributions, one
    of them the scan's choice for the code's import and the other not imported by name (a
    dependency brought it): the scan's choice is dropped, once per module (rt-covid, corpus13 dev:
    the code imports theano, so Theano 1.0.5 was locked beside Theano-PyMC 1.1.2, which pymc3 3.11
    requires; both ship ``theano``, and pymc3 failed with "'TheanoConfigParser' object has no
    attribute 'gcc__cxxflags'"). Only a failure that names the module counts: the failing module is
    it or under it, or its message says its name (chemcrow, corpus13 held: molbloom failed on
    Python 3.10 syntax beside an rdkit/rdkit-pypi clash; dropping rdkit cost a relock and a build
    before the date relock that fixed it)."""
    done = {mod for m in s.moves if m.kind == "clash" for mod in m.modules}
    if not bad or not s.imported:
        return None
    for top, owners in sorted(s.clashes.items()):
        if top in done or len(owners) < 2:
            continue
        named = [r for r in bad if r[0].split(".")[0] == top or top.lower() in r[2].lower()]
        if not named:
            continue
        first = named[0]
        ours = [d for d in owners if d in s.imported]
        theirs = [d for d in owners if d not in s.imported]
        if len(ours) != 1 or not theirs:
            continue
        return DropClash(ours[0], top, f"{', '.join(owners)} all ship the module {top}, so one's files overwrote "
                                       f"the other's ({first[0]} fails: {first[2][:160]}); {ours[0]} was locked for "
                                       f"the code's `import {top}`, {', '.join(theirs)} because a dependency "
                                       f"requires it: {ours[0]} is dropped (rule module-clash)")
    return None


def _after_imports(s: Situation) -> Move:
    bad = [r for r in s.imports if r[1] != "ok"]
    if not bad:
        return GiveUp("")
    inside = [r for r in bad if not not_provided(r)]
    tried = {m.kind for m in s.moves if m.trigger == "imports"}
    given = {mod for m in s.moves if m.kind == "provider" for mod in m.modules}
    missing = list(dict.fromkeys(r[0].split(".")[0] for r in bad if not_provided(r)))
    # installed code importing a whole package its distribution never declared (PyBEL and
    # pkg_resources on a Python whose venvs carry no setuptools): that package's provider
    undeclared = [m for r in inside if (m := undeclared_dependency(r, s.python))]
    era_open = bool(inside) and "era" not in tried and s.strategy == "as-declared" and s.dated
    if era_open and any(not _dateless(m, s.python) for m in undeclared):
        # installed code of an as-declared lock asking for a package it never declared: first
        # nothing newer than the submission's date, whose releases may not need it (a 2022 keras
        # on a 2016 submission asks for tensorflow, which the keras of 2016 never imported:
        # molecule-autoencoder, corpus8 dev, piled providers and next releases on the anachronism)
        first = next(r for r in inside if undeclared_dependency(r, s.python))
        return RelockByDate(f"{first[0]} fails to import inside installed code ({first[2][:160]})")
    missing += [m for m in undeclared if m not in missing]
    wanted = [m for m in missing if m not in given and not s.absent.get(m)]
    if wanted and s.online:
        asks = tuple(m for m in wanted if m not in s.facts.providers)
        if asks:
            raise _Need(LookUp(providers=asks))
        # a module imported only under a run-time condition gets no provider first released after
        # the submission's date: that release binds the lock to its own era (d4rl 1.1 of 2022 needs
        # Python 3.7; rlkit-sac, corpus18 held), and the import check accepts the module missing
        found = tuple((m, *s.facts.providers[m]) for m in wanted if s.facts.providers[m] is not None
                      and not (m in s.branches and AFTER_DATE in s.facts.providers[m][2]))
        if found:
            return AddProviders(found)  # type: ignore[arg-type]
    move = _module_clash(s, bad)
    if move is not None:
        return move
    tops = {r[0].split(".")[0] for r in inside}
    if era_open and not (tops & set(s.provided) and tops & set(s.provided) <= s.provided_after):
        # newest releases mixed with the submission's old pins (cdvae_model: pandas 1.5.3 beside
        # numpy 2.4 fails with "numpy.dtype size changed"): nothing newer than the submission's date,
        # before a provider moves on to its next release (deephpm, corpus9 dev: a 2020 submission's
        # pyDOE failed inside pydoe 0.9.1 of 2026, and provider-next-release took 0.9.2), unless
        # every failing provider is pinned to its first release after the date (a date relock
        # cannot change it)
        return _by_date(inside)
    move = _companion(s, inside)
    if move is not None:
        return move
    # a message that says which release of a locked distribution installed code needs (or an
    # [abi] break: protobuf 4 under TensorFlow 2.2's generated code) is evidence; a provider's next
    # release is a guess, and it had blamed the provider (bayesian-rnn-sentiment, corpus16 dev:
    # keras 2.4.3 -> 2.6.0 -> 2.7.0 on protobuf's "Descriptors cannot be created directly")
    move = _version_check(s, inside)
    if move is not None:
        return move
    move = _provider_next_release(s, inside)
    if move is not None:
        return move
    move = _lockstep(s, inside)
    if move is not None:
        return move
    if era_open:  # the providers' rules had nothing to move
        return _by_date(inside)
    if inside and "era-of" not in tried and (not s.dated or s.bound_only):
        move = _era_of_failing_release(s, inside)
        if move is not None:
            return move
    if inside and "python" not in tried and not s.python_stated:
        move = _imports_older_python(s, inside)
        if move is not None:
            return move
    move = _bundled(s, bad)
    if move is not None:
        return move
    accepted = accept_branches(s.imports, s.branches)
    if accepted is not None:
        return accepted
    first = bad[0]
    known = re.search(rf"unresolved import {re.escape(first[0])}: ([^\n]+)", s.notes or "")
    top = first[0].split(".")[0]
    if known:
        hint = f"{first[0]} is {known.group(1)}"
    elif s.absent.get(top):
        hint = f"{top}: {s.absent[top]}"
    elif not_provided(first):
        looked = " (no candidate distribution's wheel of the submission's time ships it)" \
            if top in s.facts.providers or top in given else ""
        clones = re.findall(r"the code clones (\S+) \(([^)]*)\)", s.notes or "")
        where = "".join(f"; the code clones {u} ({w}): {first[0]} may come from there" for u, w in clones[:2])
        linked = re.search(rf"the README links (\S+) \(([^)]*)\): {re.escape(top)} may come from it", s.notes or "")
        if linked:
            where += f"; the README links {linked.group(1)} ({linked.group(2)}): {first[0]} may come from there"
        away = re.search(rf"(\S+) puts ([^;]+?) on sys\.path, outside the folder: {re.escape(top)} may come", s.notes or "")
        if away:
            where += f"; {away.group(1)} puts {away.group(2)} on sys.path, outside the folder: {first[0]} may be there"
        hint = (f"no locked distribution provides {first[0]}{looked}{where}: code from another repository goes "
                "into model.toml as [[extra_sources]] (name, repository, 40-hex commit), a PyPI distribution of "
                "another name as a [mapping] entry; then rerun")
    elif top in s.provided and _python3_only(s, first[2]):
        dist, version = s.provided[top]
        hint = (f"{top}'s only provider found, {dist} {version}, is Python 3 code (a SyntaxError on CPython "
                f"{s.python}): {top} is likely the submission's own module, missing from the folder; put its "
                "code into model.toml as [[extra_sources]] (name, repository, 40-hex commit), or a Python 2 "
                "distribution of another name as a [mapping] entry; then rerun")
    elif (lib := system_library(first[2])) is not None:
        hint = (f"installed code loads the system library {lib}, which no locked release bundles for this Python: "
                "install it with the system's package manager (or add it to the Nix build's inputs), or pin a "
                "release that bundles it, then rerun")
    else:
        hint = ("pin the failing distribution to a release of the submission's time in model.toml "
                "([[dependencies.pins]]), relock and rerun")
    return GiveUp(f"{len(bad)} of {len(s.imports)} modules fail to import: {first[0]}: {first[2][:200]}", hint)


def _bundled(s: Situation, bad: list[tuple[str, str, str]]) -> PinProvider | None:
    """An import failing for want of a system library that a later release of a locked distribution
    bundles (the name table's ``[bundled]``): that distribution is held to that release or later
    (rule ``bundled-library``), once (hifi-gan, corpus15 held, studied after its measurement:
    librosa failed on "sndfile library not found" with soundfile 0.10.3 locked by the 2020 date; its
    manylinux wheels carry libsndfile from 0.12.0)."""
    from packaging.version import InvalidVersion, Version

    from pyrepro.resolve import bundled_library

    done = {pin for m in s.moves if m.kind == "bundled" for pin in m.pins}
    for module, _status, message in bad:
        lib = system_library(message)
        entry = bundled_library(lib) if lib else None
        if entry is None:
            continue
        dist, first, why = entry
        locked, spec = s.locked.get(dist), f">={first}"
        if not locked or (dist, spec) in done:
            continue
        try:
            if Version(locked) >= Version(first):
                continue
        except InvalidVersion:
            continue
        return PinProvider(module, dist, locked, spec,
                           f"{module} fails to import: installed code needs the system library {lib} ({message[:160]}); "
                           f"{dist} {locked} was locked, and {dist} {first} and later bundle it ({why}), so {dist} is "
                           f"held to {spec} (rule bundled-library)", rule="bundled-library", requirement=spec)
    return None


def accept_branches(rows: Sequence[tuple[str, str, str]], branches: Mapping[str, str]) -> AcceptBranches | None:
    """The import check's verdict when only modules that ``branches`` places where a run may never
    go fail (pocket2mol's ``from apex import amp`` under ``if use_apex``; seirs-network-epidemic's
    ``import plotNets`` inside a function nothing calls): it passes, naming them, when at least one
    other module imports. A module imported anywhere unconditionally, a failure of the probe itself
    ("*") or a check where nothing imports is never accepted."""
    bad = [r for r in rows if r[1] != "ok"]
    if not bad or not any(r[1] == "ok" for r in rows):
        return None
    where = [branches.get(r[0]) or branches.get(r[0].split(".")[0]) for r in bad]
    if not all(where):
        return None
    return AcceptBranches(tuple((r[0], w, r[2]) for r, w in zip(bad, where, strict=True)))  # type: ignore[misc]


# how installed code says at import time that a shared library of the system is missing
_SYSTEM_LIBRARY = (
    re.compile(r"\b(lib[\w+.-]+?\.so)(?:\.[\d.]+)?: cannot open shared object file"),
    re.compile(r"\b([\w+.-]+) library not found"),  # soundfile: "sndfile library not found"
    re.compile(r"[Cc]ould not find (?:the )?(?:shared )?library:? '?([\w+.-]+)'?"),
)


def system_library(message: str) -> str | None:
    """The system library an import failure's message says is missing ("libGL.so.1: cannot open
    shared object file", soundfile's "sndfile library not found": music-autotagging, corpus14 dev,
    on Python 2, where no soundfile release bundles libsndfile), or None."""
    for rx in _SYSTEM_LIBRARY:
        m = rx.search(message)
        if m:
            return m.group(1)
    return None


def _by_date(inside: list[tuple[str, str, str]]) -> RelockByDate:
    """A relock by date for the first import that fails inside installed code."""
    first = inside[0]
    return RelockByDate(f"{first[0]} fails to import inside installed code ({first[2][:160]})")


def _companion(s: Situation, inside: list[tuple[str, str, str]]) -> PinProvider | None:
    """Installed code fails to import inside a distribution made for particular releases of another
    that it does not declare (the name table's ``[companions]``: keras and TensorFlow), and its
    locked release does not fit the other's locked one: the newest release that does (rule
    ``companion``, once per distribution). mlreview (corpus12 dev): keras 2.7.0 beside TensorFlow
    1.15.3, "cannot import name 'get_config'"; Keras 2.3.1 is the last made for TensorFlow 1."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    from pyrepro.resolve import companion_want

    done = {d for m in s.moves if m.kind == "companion" for d, _v in m.pins}
    for module, _status, message in inside:
        got = s.installed.get(module.split(".")[0])
        if got is None or got[0] in done:
            continue
        dist, version = got
        found = companion_want(dist, s.locked)
        if found is None:
            continue
        spec, other, other_version, why = found
        fits = SpecifierSet(spec)
        if fits.contains(version, prereleases=True):
            continue
        if dist not in s.facts.releases:
            raise _Need(LookUp(releases=(dist,)))
        ok = []
        for v, _day in s.facts.releases[dist]:
            try:
                ok.append((Version(v), v))
            except InvalidVersion:
                continue
        chosen = [v for key, v in sorted(ok) if fits.contains(key)]
        if not chosen:
            continue
        with_ = f"{other} {other_version}, the release locked" if other_version else f"no {other} in the lock"
        reason = (f"{module} fails to import inside {dist} {version} ({message[:160]}); {dist} {spec} goes with "
                  f"{with_}: {chosen[-1]}, the newest such ({why}) (rule companion)")
        return PinProvider(module, dist, version, chosen[-1], reason, rule="companion")
    return None


def _lockstep(s: Situation, inside: list[tuple[str, str, str]]) -> PinProvider | None:
    """Installed code fails to import inside a distribution released in lockstep with another (the
    name table's ``[lockstep]``) whose locked version differs: it moves to that same version, once
    (rule ``lockstep``). A 2020 submission pins jax 0.1.75 and jaxlib 0.1.52; PyPI no longer has that
    jaxlib, so the lock took the nearest, 0.4.13, and jax 0.1.75 fails ("cannot import name 'pytree'
    from 'jaxlib'"): jax 0.4.13 is the release made for it. None when that does not apply."""
    from pyrepro.resolve import lockstep_partner

    done = {d for m in s.moves if m.kind == "lockstep" for d, _v in m.pins}
    for module, _status, message in inside:
        got = s.installed.get(module.split(".")[0])
        partner = lockstep_partner(got[0]) if got else None
        if got is None or partner is None or got[0] in done:
            continue
        dist, version = got
        other, why = partner
        want = s.locked.get(other)
        if not want or want == version:
            continue
        if dist not in s.facts.releases:
            raise _Need(LookUp(releases=(dist,)))
        if want not in {v for v, _d in s.facts.releases[dist]}:
            continue
        reason = (f"{module} fails to import inside {dist} {version} ({message[:160]}); {dist} is released in "
                  f"lockstep with {other}, locked at {want}: {dist} {want} is the release made for it ({why}) "
                  f"(rule lockstep)")
        return PinProvider(module, dist, version, want, reason, rule="lockstep")
    return None


_NAME = r"(?P<name>[A-Za-z][\w.\-]*)"
_SPEC = r"(?P<spec>(?:(?:[<>=!~]=?|===)\s*\d[\w.*+]*\s*,?\s*)+)"
_VER = r"(?P<v>\d[\w.]*\w)"
# How installed code says at import time which release of another distribution it needs (English
# grammar, no names): each gives the distribution and a specifier (``op`` turns "incompatible with
# numpy < 1.20.3" into ">=1.20.3").
_VERSION_CHECKS: tuple[tuple[re.Pattern[str], str], ...] = (
    # tensorflow-probability: "requires TensorFlow version >= 2.8; Detected an installation of version 2.7.3"
    (re.compile(rf"\brequires {_NAME} version\s*{_SPEC}"), ""),
    # "numpy>=1.17.3 is required", transformers: "tokenizers>=0.11.1,!=0.11.3,<0.14 is required for ..."
    (re.compile(rf"\b{_NAME}\s*{_SPEC}\s*(?:is|are) required"), ""),
    # matplotlib: "Matplotlib requires numpy>=1.20; you have 1.19.5"
    (re.compile(rf"\brequires {_NAME}\s*(?P<spec>(?:>=|>|==|~=)\s*\d[\w.]*\w)"), ""),
    # pandas: "Pandas requires version '1.3.6' or newer of 'numexpr'"
    (re.compile(rf"\brequires version '{_VER}' or (?:newer|higher|later) of '{_NAME}'"), ">="),
    # keras: "Keras requires TensorFlow 2.2 or higher"
    (re.compile(rf"\brequires {_NAME} (?:version )?{_VER} or (?:higher|newer|later|above|greater)"), ">="),
    # "numpy version 1.16 or higher is required"
    (re.compile(rf"\b{_NAME} (?:version )?{_VER} or (?:higher|newer|later|above|greater) is required"), ">="),
    # pandas: "this version of pandas is incompatible with numpy < 1.20.3"
    (re.compile(rf"\b(?:in|not )compatible with {_NAME}\s*(?P<op><=|<)\s*{_VER}"), "inverse"),
)


def required_versions(message: str) -> list[tuple[str, str]]:
    """(distribution, specifier) pairs that an import failure's message says installed code needs
    (``requires TensorFlow version >= 2.8`` -> ("tensorflow", ">=2.8")), in the order found;
    specifiers that do not parse are left out."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    out: list[tuple[str, str]] = []
    for pattern, how in _VERSION_CHECKS:
        for m in pattern.finditer(message):
            if how == ">=":
                spec = f">={m.group('v')}"
            elif how == "inverse":
                spec = f"{'>=' if m.group('op') == '<' else '>'}{m.group('v')}"
            else:
                spec = m.group("spec")
            spec = ",".join(part.replace(" ", "") for part in spec.strip().rstrip(",").split(",") if part.strip())
            try:
                SpecifierSet(spec)
            except InvalidSpecifier:
                continue
            pair = (canonicalize_name(m.group("name").rstrip(".-")), spec)
            if pair not in out:
                out.append(pair)
    return out


def _version_check(s: Situation, inside: list[tuple[str, str, str]]) -> PinProvider | None:
    """Installed code checks at import time the version of another locked distribution and says
    which it needs ("This version of TensorFlow Probability requires TensorFlow version >= 2.8;
    Detected an installation of version 2.7.3": photoswitch, corpus8), or fails as code compiled
    against an older major series does (the name table's ``[abi]``: "numpy.dtype size changed"
    under NumPy 2): that distribution is held to what the message asks, once per distribution and
    specifier (rule ``import-version-check``), when its locked version does not already satisfy it. None
    when no message says so of a locked distribution."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    from pyrepro.resolve import abi_ceilings

    done = {pin for m in s.moves if m.kind == "version-check" for pin in m.pins}  # (distribution, specifier)
    for module, _status, message in inside:
        wanted = [(dist, spec, "the message says so") for dist, spec in required_versions(message)]
        wanted += [(dist, f"<{below}", reason) for dist, below, messages, reason in abi_ceilings()
                   if any(text in message for text in messages)]
        for dist, spec, why in wanted:
            locked = s.locked.get(dist)
            if not locked or (dist, spec) in done:
                continue
            try:
                if Version(locked) in SpecifierSet(spec, prereleases=True):
                    continue
            except InvalidVersion:
                continue
            reason = (f"{module} fails to import: installed code needs {dist}{spec} ({message[:200]}); {dist} "
                      f"{locked} was locked, so {dist} is held to {spec} ({why}) (rule import-version-check)")
            return PinProvider(module, dist, locked, spec, reason, rule="import-version-check", requirement=spec)
    return None


def _imports_older_python(s: Situation, inside: list[tuple[str, str, str]]) -> Move | None:
    """Imports failing inside installed code on a Python chosen without evidence (the newest CPython
    of the submission's date was a guess: matgl_mlearn's torch 1.13.1 fails on 3.11 with "mutable
    default ... use default_factory") move to the next older CPython, once (rule
    ``imports-to-older-python``). None when that does not apply."""
    older = older_pythons(s.python) if s.python in [v for v, _d in RELEASES] else []
    if not older:
        return None
    python_made = [r for r in inside if system_library(r[2]) is None]  # a missing system library: no
    if not python_made:
        return None
    target, why = older[-1], "so the next older one"
    removed = _removed_stdlib(s.python, python_made)
    if removed is not None:  # installed code needs a standard-library module this Python no longer has
        target, why = removed[0], f"and {removed[1]} left the standard library after {removed[0]}, so {removed[0]}"
    if _interpreter(s, target):
        return None
    first = python_made[0]
    reason = (f"{target}: {first[0]} fails to import inside installed code on CPython {s.python} "
              f"({first[2][:160]}); no Python was stated, {why} (rule imports-to-older-python; "
              f"before: {s.python}, {s.python_reason})")
    return MovePython(target, reason, "imports-to-older-python", restore=True,
                      summary=f"{first[0]} failed to import on {s.python}")


def _era_of_failing_release(s: Situation, inside: list[tuple[str, str, str]]) -> Move | None:
    """A submission with no date whose installed code fails to import (automatminer 2020 on today's
    scikit-learn: "No module named 'sklearn.metrics.scorer'"): the locked release of the
    distribution that fails was made against the packages of its own day, so that day becomes the
    submission's date bound, and the Python settled by then when the submission states none (rule
    ``era-of-failing-release``, once; Python 2 code keeps its Python 2, which pip locks through a
    date-bounded view of the index). A provider pyrepro chose is not asked: the submission never
    named it, so its release day is not the submission's era. None when no failing module's
    distribution is known."""
    for module, _status, message in inside:
        got = s.installed.get(module.split(".")[0])
        if got is None or module.split(".")[0] in s.provided:
            continue  # a provider pyrepro chose: its release day says nothing of the submission's
        dist, version = got
        when = _upload_day(s, dist, version)
        if when is None:
            continue
        python, how = s.python, f"on CPython {s.python}"
        settled = settled_pythons(when)
        if not s.python_stated and not _python2(s) and settled and version_key(settled[-1]) < version_key(s.python) \
                and not _interpreter(s, settled[-1]):
            python, how = settled[-1], f"on CPython {settled[-1]}, the Python settled by then"
        reason = (f"{when.isoformat()}: {module} fails to import inside installed code on CPython {s.python} "
                  f"({message[:160]}); the submission has {'only a bound for its date' if s.dated else 'no date'}, "
                  f"and {dist} {version}, the release locked, was "
                  f"uploaded {when.isoformat()}: relocked with nothing newer than that day {how} (rule "
                  f"era-of-failing-release)")
        return RelockByEra(when.isoformat(), python, reason, summary=f"{module} failed to import on {s.python}")
    return None


def _removed_stdlib(python: str, rows: list[tuple[str, str, str]]) -> tuple[str, str] | None:
    """(newest older CPython that has it, module) for a row whose import failed with "No module
    named 'imp'" where that module is standard library in an older CPython but not in ``python``
    (``imp``, ``distutils``: gone in 3.12; ``asynchat``, ``cgi``: gone in 3.13); None otherwise."""
    from pyrepro.scan.stdlib import stdlib_names

    for _module, _status, message in rows:
        m = _NO_MODULE.search(message)
        top = m.group(1).split(".")[0] if m else ""
        if not top or top in stdlib_names(python):
            continue
        having = [v for v in older_pythons(python) if top in stdlib_names(v)]
        if having:
            return having[-1], top
    return None


def _python3_only(s: Situation, message: str) -> bool:
    """A Python 2 environment's import failed on syntax: the code is Python 3's, and its later
    releases only more so (adversarial-jet-images, corpus19 dev: the notebook's
    ``from generators import generator`` is a file missing from the folder; PyPI's generators, the
    provider found, is Python 3 code, and provider-next-release and era-of-failing-release took
    three releases and a 2020 date on it, 526 s in all)."""
    return _python2(s) and message.lstrip().startswith("SyntaxError")


def _provider_next_release(s: Situation, inside: list[tuple[str, str, str]]) -> Move | None:
    """A module whose provider pyrepro chose fails to import inside that very distribution (the
    message names a file of it, or the module itself raised): its next release that ships the
    module, at most ``MAX_PROVIDER_MOVES`` times per module (rule ``provider-next-release``). The
    submission never named that distribution, so no release of it is the authors'; the first
    that was tried may simply be broken. None when that does not apply."""
    for module, _status, message in inside:
        top = module.split(".")[0]
        if top not in s.provided or _python3_only(s, message):
            continue
        dist, version = s.provided[top]
        done = [m for m in s.moves if m.kind == "provider-next" and top in m.modules]
        if len(done) >= MAX_PROVIDER_MOVES:
            continue
        key = (top, dist, version)
        if key not in s.facts.next_release:
            raise _Need(LookUp(next_release=(key,)))
        nxt = s.facts.next_release[key]
        if nxt is None:
            continue
        reason = (f"{top} fails to import inside {dist} {version}, the provider pyrepro chose for it "
                  f"({message[:160]}); {nxt[1]} (rule provider-next-release)")
        return PinProvider(top, dist, version, nxt[0], reason)
    return None
