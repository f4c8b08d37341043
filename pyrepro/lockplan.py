"""The lock planner: which resolver attempt comes next, from the results so far (pure: no I/O).

``pyrepro.lock`` runs attempts and looks facts up; this module only decides. Given a
``Situation`` (the declared requirements, the strategies to try, every attempt so far with
the problems its resolver reported, the relaxation steps taken, the date-bound moves made and
the facts looked up), ``next_move`` returns exactly one of:

- ``Try``: run the resolver on these requirements with this date bound (and, for relaxation,
  the one step or bound move that changed them, so the record says why); ``resolver="uv"``: make
  the lock from uv's resolution instead, when pdm refused the set uv resolved;
- ``LookUp``: the decision needs facts first (release lists, upload dates of pinned releases);
  the caller looks them up, ``learn``s them, and asks again;
- ``Locked``: the last attempt produced a lock;
- ``GiveUp``: nothing more to try, and why (category 4).

The order is the documented one (docs/lock.md): ``as-declared``, then ``date-bounded``, then
``relaxed``. Relaxation first moves a date bound that hides an exactly pinned release to the day
after that release (no requirement changes), then applies one rule of ``pyrepro.relax.RULES``
per attempt, at most ``MAX_STEPS`` times. A timeout with nothing else to act on, or an error
no rule reads, asks a second resolver (uv, ``pyrepro.uvtool``) once for a resolution of the same
set for the same target: its versions of the requirements that are not exactly pinned become pins
(rule ``resolver-guided``, one step per pin, uncounted), so pdm's resolver checks one candidate
each instead of backtracking. When uv finds none either, the give-up says uv's reason too.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from pyrepro import pinsearch, relax
from pyrepro.uvtool import Guide

Strategy = Literal["as-declared", "date-bounded", "relaxed", "reused"]
STRATEGIES: tuple[Strategy, ...] = ("as-declared", "date-bounded", "relaxed")
MAX_STEPS = 8
GUIDED_RULE = "resolver-guided"
#: a requirement the code never imports that uv's explanation of a failed resolution runs through
UNRESOLVABLE_RULE = "unimported-unresolvable"
#: the requirements the code never imports, dropped together when relaxation reached its limit with
#: them (a whole environment's ``pip freeze``): the imported ones resolve under the date bound
TO_IMPORTED_RULE = "freeze-to-imported"
# relaxation steps that do not count toward MAX_STEPS: a dropped name the index lacks, the pins of a
# guided resolution (one per requirement, taken together once), and a pin moving past releases whose
# metadata no longer parses (forced, and only ever upwards: pandas 0.23.4 to 0.25.0 took four)
UNCOUNTED_RULES = frozenset({"not-on-index", GUIDED_RULE, "valid-metadata", TO_IMPORTED_RULE, pinsearch.RULE})
#: a declaration at least this long, mostly (two thirds) of distributions the code never imports,
#: is a freeze: the rule applies after half the steps, not all of them
FREEZE_SIZE = 30
#: a release that refuses the target Python moves its distribution to older minor series (rule
#: older-series-for-python: 1, 2, 4, ... series on its further refusals): a descent through many series
#: (pyscf 2.12 ... 1.7 on Python 2.7) counts as one step toward MAX_STEPS, and ends after
#: MAX_SERIES_DESCENT steps of one distribution
SERIES_RULE = "older-series-for-python"
MAX_SERIES_DESCENT = 16
_ACTIONABLE = ("not-found", "conflict", "build-failed", "python-refused", "invalid-metadata", "pin-needs-python")


@dataclass(frozen=True)
class Tried:
    """One finished attempt, as the planner sees it."""

    strategy: Strategy
    requirements: tuple[str, ...]
    bound: str | None
    ok: bool
    problems: tuple[relax.Problem, ...] = ()
    error: str = ""  # the resolver text (trimmed), for the trigger of the next step
    resolver: str = "pdm"  # "uv": the lock was made from uv's resolution (pdm refused the same set)


@dataclass(frozen=True)
class Try:
    strategy: Strategy
    requirements: tuple[str, ...]
    bound: str | None
    step: relax.Step | None = None  # the relaxation that made ``requirements``
    bound_note: str = ""  # why the date bound moved (empty: it did not)
    pins: tuple[relax.Step, ...] = ()  # a guided attempt's other pins, taken before ``step``
    resolver: str = "pdm"  # "uv": lock from uv's resolution of ``requirements`` (see ``_guided``)
    #: (project, day) bounds of projects first published after ``bound`` (``Situation.per_package``);
    #: () : the situation's own
    package_bounds: tuple[tuple[str, str], ...] = ()

    @property
    def detail(self) -> str:
        if self.bound_note:
            return self.bound_note
        if self.pins and self.step is not None:
            return f"{self.step.rule}: {len(self.pins) + 1} requirements pinned to a resolution uv found"
        if self.step is not None:
            return self.step.summary
        return f"{self.strategy}{f' (<= {self.bound})' if self.bound else ''}"


@dataclass(frozen=True)
class LookUp:
    versions: tuple[str, ...] = ()  # release lists of these distributions
    uploads: tuple[tuple[str, str], ...] = ()  # the upload day of these (name, version)
    guide: tuple[str, ...] | None = None  # resolve this requirement set with uv (the lock's Python and bound)


@dataclass(frozen=True)
class Search:
    """Search over the declared constraints with the resolver as the oracle (``pyrepro.pinsearch``),
    for ``requirements`` under ``bound``; ``error``: the failed attempt's words (a hint only)."""

    requirements: tuple[str, ...]
    bound: str | None
    error: str = ""


@dataclass(frozen=True)
class Locked:
    attempt: Tried


@dataclass(frozen=True)
class GiveUp:
    reason: str


Move = Try | LookUp | Search | Locked | GiveUp


@dataclass(frozen=True)
class Situation:
    """Everything the planner knows. Build one with ``start``; grow it with ``after``/``learn``."""

    declared: tuple[str, ...]
    order: tuple[Strategy, ...]
    era_bound: str | None  # the end of the submission day, or None when the date is unknown
    tried: tuple[Tried, ...] = ()
    steps: tuple[relax.Step, ...] = ()
    bound_moves: tuple[tuple[str, str], ...] = ()  # (new bound, why)
    facts: relax.Facts = field(default_factory=relax.Facts)
    uploaded: Mapping[tuple[str, str], dt.date | None] = field(default_factory=dict)
    guides: Mapping[tuple[str, ...], Guide] = field(default_factory=dict)  # uv's answer per requirement set
    #: the resolver takes a bound per project (uv's --exclude-newer-package, pip's date-bounded view
    #: of the index): a project first published after the bound gets its own later bound, and the
    #: others keep theirs (diagnose-heart, corpus12 dev: dicom's and opencv-python's first wheels
    #: moved the bound of all from 2015 to 2018, and Theano 1.0 came in beside Lasagne 0.1)
    per_package: bool = False
    package_bounds: tuple[tuple[str, str], ...] = ()  # (project, day), day after its first upload
    #: the pin search may run (a Python 3 target and uv to ask): it takes the place of the
    #: per-message relaxation rules, which act only after it (or where it could not answer)
    search: bool = False
    searched: pinsearch.Outcome | None = None

    @property
    def requirements(self) -> tuple[str, ...]:
        """The requirement set relaxation works on now."""
        return self.steps[-1].requirements if self.steps else self.declared

    @property
    def relax_bound(self) -> str | None:
        """The date bound relaxed attempts use (the era bound when date-bounding is in the plan)."""
        if self.bound_moves:
            return self.bound_moves[-1][0]
        return self.era_bound if "date-bounded" in self.order else None

    def after(self, move: Try, tried: Tried) -> Situation:
        steps = self.steps + move.pins + ((move.step,) if move.step is not None else ())
        moves = self.bound_moves + (((move.bound or "", move.bound_note),) if move.bound_note else ())
        facts = self.facts
        st = move.step
        if st is not None and st.before and st.after and facts.imported is not None:
            old, new = relax.req_name(st.before), relax.req_name(st.after)
            if old != new and old in facts.imported:  # a renamed distribution is as central as before
                facts = replace(facts, imported=facts.imported | {new})
        return replace(self, tried=(*self.tried, tried), steps=steps, bound_moves=moves, facts=facts,
                       package_bounds=move.package_bounds or self.package_bounds)

    def found(self, outcome: pinsearch.Outcome) -> Situation:
        """The pin search's outcome."""
        return replace(self, searched=outcome)

    def learn(self, versions: Mapping[str, tuple[str, ...]] | None = None,
              uploaded: Mapping[tuple[str, str], dt.date | None] | None = None,
              guides: Mapping[tuple[str, ...], Guide] | None = None) -> Situation:
        facts = self.facts
        if versions:
            facts = replace(facts, versions={**facts.versions, **{relax.req_name(k): tuple(v)
                                                                  for k, v in versions.items()}})
        return replace(self, facts=facts, uploaded={**self.uploaded, **(uploaded or {})},
                       guides={**self.guides, **(guides or {})})


def start(declared: Sequence[str], *, first: Strategy = "as-declared", era_bound: str | None = None,
          imported: frozenset[str] | None = None, per_package: bool = False, search: bool = False) -> Situation:
    """The situation before any attempt: the strategies from ``first`` on (``date-bounded``
    only when the submission date is known). ``per_package``: the resolver takes bounds per
    project (``Situation.per_package``)."""
    if first not in STRATEGIES:
        raise ValueError(f"unknown strategy {first!r}")
    order = tuple(s for s in STRATEGIES[STRATEGIES.index(first):] if s != "date-bounded" or era_bound)
    return Situation(tuple(declared), order, era_bound, facts=relax.Facts(imported=imported), per_package=per_package,
                     search=search)


def direct_not_found(problems: Sequence[relax.Problem], reqs: Sequence[str]) -> list[tuple[str, str, str]]:
    """(package, version, requirement) of direct requirements the resolver said it could not find:
    an exact pin gives its version; a range with a lower bound gives its specifier (the first
    release that satisfies it: a poetry ``paretoset = "^1.2.3"`` beside a date before 1.2.3 came
    out); any other requirement gives "" (the project's first release: a package that did not
    exist yet at the submission date, like a tool the authors published after the date their
    metadata gives)."""
    out = []
    for p in problems:
        if p.kind != "not-found" or not p.package:
            continue
        for i in relax.find(tuple(reqs), p.package):
            v = relax.pinned_version(reqs[i])
            if v is not None and "*" not in v:
                out.append((p.package, relax.strip_local(v), reqs[i]))
            elif v is None:
                r = relax._parse(reqs[i])
                floor = r is not None and any(sp.operator in (">=", ">", "~=") for sp in r.specifier)
                out.append((p.package, str(r.specifier) if floor and r is not None else "", reqs[i]))
    return out


def dependency_not_found(problems: Sequence[relax.Problem], reqs: Sequence[str]) -> list[tuple[str, str, str]]:
    """(package, version, requirement) of exact releases a dependency asks for that the resolver
    said do not exist (uv: "there is no version of triton==2.0.0" when torch 2.0.0 needs it) and
    that are no direct requirement of ``reqs``: a date bound may hide them (triton 2.0.0's wheels
    came five days after torch 2.0.0)."""
    out = []
    for p in problems:
        if p.kind != "not-found" or not p.package or relax.find(tuple(reqs), p.package):
            continue
        for r in p.requirements:
            v = relax.pinned_version(r)
            if v is not None and "*" not in v:
                out.append((p.package, relax.strip_local(v), r))
    return out


def later_bound(problems: Sequence[relax.Problem], reqs: Sequence[str], bound: str,
                uploaded: Mapping[tuple[str, str], dt.date | None],
                wanted: Sequence[tuple[str, str, str]] | None = None) -> tuple[str, str] | None:
    """A date bound that hides an exactly pinned release, or a whole project first published after
    it (the resolver says "not found"), moves to the day after that upload: (new bound, why), or None.
    ``wanted``: the (package, version, requirement) to consider (default: ``direct_not_found``)."""
    try:
        current = dt.date.fromisoformat(bound)
    except ValueError:
        return None
    best: tuple[dt.date, str] | None = None
    found = direct_not_found(problems, reqs)
    direct = {pkg for pkg, _v, _r in found}
    for pkg, version, req in (found if wanted is None else wanted):
        day = uploaded.get((pkg, version))
        if day is None or day < current:
            continue
        new = day + dt.timedelta(days=1)
        if best is None or new > best[0]:
            what = f"the first release of {pkg} that satisfies {req} was uploaded" if version[:1] in "<>=!~" \
                and version else f"{req} was released" if version else f"{pkg} was first published"
            if pkg not in direct and version and version[:1] not in "<>=!~":
                what = f"{req}, which a locked dependency needs exactly, was released"
            best = (new, f"{what} {day.isoformat()}, after the submission date bound")
    if best is None:
        return None
    return best[0].isoformat(), best[1]


def counted_steps(steps: Sequence[relax.Step]) -> list[relax.Step]:
    """The steps that count toward MAX_STEPS: not an ``UNCOUNTED_RULES`` one, and of a distribution's
    descent through older series only its first."""
    seen: set[str] = set()
    out: list[relax.Step] = []
    last = max((i for i, st in enumerate(steps) if st.rule == TO_IMPORTED_RULE), default=-1)
    for st in steps[last + 1:]:  # the requirements changed wholesale: the steps start again
        if st.rule in UNCOUNTED_RULES:
            continue
        if st.rule == SERIES_RULE:
            if st.package in seen:
                continue
            seen.add(st.package)
        out.append(st)
    return out


def next_move(s: Situation, *, max_steps: int = MAX_STEPS) -> Move:
    """The one next thing to do (see the module docstring). With ``Situation.search``, the pin
    search comes before any per-message rule, and before a give-up: a lock ends in failure only
    after the search found no relaxation that resolves (its proof is the give-up's reason)."""
    move = _next_move(s, max_steps=max_steps)
    if isinstance(move, Try) and move.strategy == "relaxed" and move.step is not None and s.search \
            and s.searched is None and s.tried and not s.tried[-1].ok and move.step.rule in SEARCH_REPLACES:
        return Search(s.requirements, s.relax_bound, s.tried[-1].error)
    if isinstance(move, GiveUp) and s.search and s.tried and s.searched is None:
        return Search(s.requirements, s.relax_bound, s.tried[-1].error)
    if isinstance(move, GiveUp) and s.searched is not None:
        if not s.searched.ok:
            return GiveUp(f"{move.reason}; the pin search: {s.searched.proof}")
        return GiveUp(f"{move.reason}; the pin search's set resolved for uv ({s.searched.count} queries) "
                      "but did not lock")
    return move


#: the per-message rules the pin search takes the place of: the ones that read which declared
#: constraints conflict out of a resolver's wording and widen or drop one. The others act first: they
#: change a name or a version the index does not have (rename, nearest-release, not-on-index), move
#: past metadata that no longer parses, or act on a failed build or a refused Python.
SEARCH_REPLACES = frozenset({"nearest-compatible", "widen-conflict", "unimported-unavailable", "unbuildable-unpin"})


def search_steps(s: Situation, outcome: pinsearch.Outcome, trigger: str = "") -> tuple[relax.Step, ...]:
    """The pin search's relaxations as relaxation steps (rule ``pin-search``), one per constraint
    that moved, each with the requirement set after it."""
    cur = list(s.requirements)
    out: list[relax.Step] = []
    for r in outcome.relaxations:
        if r.before not in cur:
            continue
        i = cur.index(r.before)
        if r.after:
            cur[i] = r.after
        else:
            del cur[i]
        out.append(relax.Step(pinsearch.RULE, r.name, r.before, r.after, r.reason(outcome.count), tuple(cur),
                              trigger=r.explanation or trigger))
    return tuple(out)


def _next_move(s: Situation, *, max_steps: int = MAX_STEPS) -> Move:
    if s.tried and s.tried[-1].ok:
        return Locked(s.tried[-1])
    done = {t.strategy for t in s.tried}
    for strat in s.order:
        if strat == "relaxed":
            break
        if strat not in done:
            return Try(strat, s.declared, s.era_bound if strat == "date-bounded" else None)
    if "relaxed" not in s.order:
        return GiveUp(f"no strategy produced a lock ({', '.join(s.order)}), and relaxation was not asked for")
    if not s.tried:  # started at "relaxed": a first error to work from
        return Try("relaxed", s.declared, s.relax_bound)
    # a step that drops a name the index does not have shortens the list and loosens nothing: a
    # fully pinned conda export names a dozen system libraries, each dropped in a step of its own
    counted = counted_steps(s.steps)
    if len(counted) >= _freeze_limit(s, max_steps):
        move = _to_imported(s, len(counted))
        if move is not None:
            return move
    if len(counted) >= max_steps:
        return GiveUp(f"still no lock after {len(counted)} relaxation steps (the limit)")
    descents = dict(Counter(st.package for st in s.steps if st.rule == SERIES_RULE))
    deepest = max(descents.items(), key=lambda kv: kv[1], default=("", 0))
    if deepest[1] >= MAX_SERIES_DESCENT:
        return GiveUp(f"{deepest[0]} refused this Python in {deepest[1]} release series, one after another (the "
                      "limit)")
    problems = s.tried[-1].problems
    if any(p.kind == "timeout" for p in problems) and not any(p.kind in _ACTIONABLE for p in problems):
        return _guided(s, "the resolver timed out without naming a conflict, a missing release or a failed "
                          "build; a relaxation needs such an error to act on")
    reqs = s.requirements
    bound = s.relax_bound
    undone = _unhelpful_bound_move(s)
    if undone is not None:
        # the bound moved for a project first published after it, and the attempt under the new
        # bound still found no release of it (rdkit's first PyPI release came in 2022, for Python 3
        # only; a Python 2 submission's lock under the 2022 bound took keras 2.9, which needs
        # TensorFlow 2: chemts-logp, corpus10 held): the move is taken back, and relaxation goes on
        # under the bound before it
        move = next_move(replace(s, bound_moves=(*s.bound_moves, undone)), max_steps=max_steps)
        if isinstance(move, Try) and not move.bound_note and move.bound == undone[0]:
            move = replace(move, bound_note=undone[1])
        return move
    if bound:
        missing = tuple(dict.fromkeys((pkg, v) for pkg, v, _ in direct_not_found(problems, reqs)
                                      if (pkg, v) not in s.uploaded))
        if missing:
            return LookUp(uploads=missing)
        own = _project_bounds(s, problems, reqs, bound) if s.per_package else ()
        if own:
            why = "; ".join(f"{pkg} was first published {day}" if not floor else
                            f"the first release of {pkg} that satisfies {pkg}{floor} was uploaded {day}"
                            for pkg, day, _n, floor in own)
            return Try("relaxed", reqs, bound, package_bounds=(*s.package_bounds, *((p, n) for p, _d, n, _f in own)),
                       bound_note=f"date bound {bound} kept; {why}, after it: "
                                  f"{', '.join(f'{p} up to {n}' for p, _d, n, _f in own)} (a bound of its own)")
        moved = later_bound(problems, reqs, bound, s.uploaded)
        if moved is not None and moved[0] not in {b for b, _ in s.bound_moves}:
            return Try("relaxed", reqs, moved[0], bound_note=f"date bound {bound} -> {moved[0]}: {moved[1]}")
    found = s.searched
    if found is not None and found.ok and found.relaxations and not any(st.rule == pinsearch.RULE for st in s.steps):
        steps = search_steps(s, found, "\n".join(s.tried[-1].error.splitlines()[-8:]))
        if steps and not any(t.requirements == steps[-1].requirements and t.bound == bound for t in s.tried):
            return Try("relaxed", steps[-1].requirements, bound, step=steps[-1], pins=steps[:-1])
    names = tuple(n for n in relax.packages_to_look_up(problems, reqs) if n not in s.facts.versions)
    if names:
        return LookUp(versions=names)
    facts = replace(s.facts, descents=descents)
    step = relax.relax(problems, reqs, facts)
    rules, looped = relax.RULES, None
    while step is not None and any(t.requirements == step.requirements and t.bound == bound for t in s.tried):
        # a step back to a set already tried: the next rule's step instead (latent-diffusion,
        # corpus18 dev: the README's kornia==0.6.4 moved torch==1.7.0 to 1.8.1, torchvision==0.8.1
        # then asked for torch==1.7.0 again; widening torchvision's pin is the way out)
        looped = looped or step
        rules = tuple(r for r in rules if r[0] != step.rule)
        step = relax.relax(problems, reqs, facts, rules=rules)
    if step is None and looped is not None:
        return GiveUp(f"the relaxation {looped.summary} leads back to a requirement set already tried, and no "
                      "other rule applies")
    if step is None:
        first = next((p for p in problems if p.kind != "unknown"), problems[0] if problems else None)
        what = f"{first.kind}{f' ({first.package})' if first.package else ''}" if first else "an unreadable error"
        return _guided(s, f"no relaxation rule applies to {what}")
    if not step.trigger:
        step = replace(step, trigger="\n".join(s.tried[-1].error.splitlines()[-8:]))
    return Try("relaxed", step.requirements, bound, step=step)


def _project_bounds(s: Situation, problems: Sequence[relax.Problem], reqs: Sequence[str],
                    bound: str) -> tuple[tuple[str, str, str, str], ...]:
    """(project, first upload day, its own bound, floor) of every unpinned requirement the resolver
    found no release of under ``bound`` whose project was first published on or after it, and of
    every requirement with a floor (``soundfile>=0.12.0``, ``floor`` ">=0.12.0") whose first release
    that satisfies it came after it (hifi-gan, corpus15 held, studied after its measurement: the
    repair rule bundled-library held soundfile to >=0.12.0 of 2023 under a 2020 bound; moving the
    bound of all would take every other release to 2023), when it has no bound of its own yet."""
    try:
        current = dt.date.fromisoformat(bound)
    except ValueError:
        return ()
    have = {p for p, _d in s.package_bounds}
    out = []
    for pkg, version, _req in direct_not_found(problems, reqs):
        day = s.uploaded.get((pkg, version))
        floor = version if version[:2] in (">=", "~=") or version[:1] == ">" else ""
        if (version and not floor) or pkg in have or day is None or day < current:
            continue
        out.append((pkg, day.isoformat(), (day + dt.timedelta(days=1)).isoformat(), floor))
    return tuple(dict.fromkeys(out))


def _unhelpful_bound_move(s: Situation) -> tuple[str, str] | None:
    """(the bound before, why) when the last attempt was the first under a date bound moved later
    for projects the resolver had not found, and it still found none of them: the move brought
    nothing and is taken back. None otherwise."""
    bound = s.relax_bound
    if not bound or not s.bound_moves or len(s.tried) < 2:
        return None
    last, before = s.tried[-1], s.tried[-2]
    if last.bound != bound or not before.bound or not bound > before.bound:
        return None
    # only a move for a whole project (an unpinned requirement): a moved bound an exact pin needs stays
    still = sorted({p for p, v, _r in direct_not_found(last.problems, last.requirements) if not v}
                   & {p for p, v, _r in direct_not_found(before.problems, before.requirements) if not v})
    if not still:
        return None
    return before.bound, (f"date bound {bound} -> {before.bound}: under {bound} the resolver still found no release "
                          f"of {', '.join(still)} for this Python, so the later bound is taken back")


def guided_pins(reqs: Sequence[str], guide: Guide, why: str) -> tuple[relax.Step, ...]:
    """One ``resolver-guided`` step per requirement that is not exactly pinned and that ``guide``'s
    resolution has a version for: ``name[extras]`` pinned ``==version`` (requirements with a
    marker or a URL are left as they are). Each step's requirement set includes the ones before."""
    out: list[relax.Step] = []
    cur = list(reqs)
    for i, req in enumerate(reqs):
        r = relax._parse(req)
        if r is None or r.marker is not None or r.url or relax.pinned_version(req) is not None:
            continue
        version = guide.version(r.name)
        if version is None or (r.specifier and not r.specifier.contains(version, prereleases=True)):
            continue
        after = relax._format(r.name, r, f"=={version}")
        cur[i] = after
        out.append(relax.Step(GUIDED_RULE, relax.req_name(req), req, after,
                              f"uv's resolver found a resolution of the whole set for this target with "
                              f"{r.name} {version}; pinned so pdm checks that one candidate ({why})",
                              tuple(cur)))
    return tuple(out)


_DERIVATION = re.compile(r"(?:you require|versions of|\band|\bBecause|\bbecause)\s+([A-Za-z0-9][A-Za-z0-9._-]*)"
                         r"(?:\[[^\]]*\])?(?:[<>=!~]=?[^\s,]*)?\s*(?:depends? on|$|,|\band\b|was yanked|cannot)",
                         re.MULTILINE)


def unimported_in_derivation(error: str, reqs: Sequence[str], facts: relax.Facts) -> tuple[int, str] | None:
    """(index, name) of the first requirement of ``reqs`` that uv's explanation of why there is no
    resolution names (``all versions of conda-minify depend on conda>=4.3.0``) and that the code
    never imports: a conda tool, a plugin, a docs theme. None when the imports are unknown or every
    named requirement is imported (then the conflict is the code's own)."""
    if facts.imported is None or not error:
        return None
    for m in _DERIVATION.finditer(error):
        name = relax.req_name(m.group(1))
        if facts.central(name):
            continue
        hits = relax.find(tuple(reqs), name)
        if hits:
            return hits[0], name
    return None


def _unimported(s: Situation) -> list[str]:
    """The requirements of the set relaxation works on whose distributions the code never imports
    (none when the imports are not known)."""
    if s.facts.imported is None:
        return []
    return [r for r in s.requirements if not s.facts.central(relax.req_name(r))]


def _freeze_limit(s: Situation, max_steps: int) -> int:
    """After how many counted steps ``freeze-to-imported`` applies: half of them for a freeze
    (``FREEZE_SIZE`` requirements or more, two thirds never imported), else all of them."""
    reqs, unimported = s.requirements, _unimported(s)
    freeze = len(reqs) >= FREEZE_SIZE and 3 * len(unimported) >= 2 * len(reqs)
    return max(1, max_steps // 2) if freeze else max_steps


def _to_imported(s: Situation, counted: int) -> Try | None:
    """Relaxation reached its limit with requirements the code never imports still in the set
    (subtab-tabular, corpus19 dev: a 176-line ``pip freeze`` of a CUDA machine, with TensorFlow,
    pytorch-lightning and aiohttp beside the few packages the code imports; eight steps widened and
    dropped them one by one, 449 s, and found no lock): they are dropped together, once (rule
    ``freeze-to-imported``); the imported requirements keep their pins, and their dependencies
    resolve under the date bound, the releases of the submission's time. None when it was done,
    the imports are not known, or every requirement is imported."""
    if any(st.rule == TO_IMPORTED_RULE for st in s.steps):
        return None
    dropped = _unimported(s)
    kept = tuple(r for r in s.requirements if r not in dropped)
    if not dropped or not kept:
        return None
    shown = ", ".join(relax.req_name(r) for r in dropped[:6]) + (", ..." if len(dropped) > 6 else "")
    why = (f"{counted} relaxation steps left no lock, and {len(dropped)} of the {len(s.requirements)} requirements "
           f"are of distributions the code never imports ({shown}): dropped together; the {len(kept)} it imports "
           "keep their pins" + (f", and their dependencies resolve with nothing newer than {s.relax_bound}"
                                if s.relax_bound else ""))
    trigger = "\n".join(s.tried[-1].error.splitlines()[-8:]) if s.tried else ""
    steps, cur = [], list(s.requirements)
    for r in dropped:  # one step per requirement, taken together (as a guided resolution's pins)
        cur.remove(r)
        steps.append(relax.Step(TO_IMPORTED_RULE, relax.req_name(r), r, "", why, tuple(cur), trigger=trigger))
    return Try("relaxed", kept, s.relax_bound, step=steps[-1], pins=tuple(steps[:-1]))


def _guided(s: Situation, why: str) -> Move:
    """The move when relaxation has nothing to act on (``why``): ask uv once, then pin its answer."""
    reqs = s.requirements
    if not reqs:
        return GiveUp(why)
    if any(st.rule == GUIDED_RULE for st in s.steps):
        # pdm refuses the very set uv resolved (its lock covers a whole Python range and every
        # marker: a dependency needed only on newer Pythons has no release for this one; molmap,
        # gaspy-regress, oximachine): the lock is made from uv's resolution for this target, once
        if not any(t.resolver == "uv" for t in s.tried):
            return Try("relaxed", reqs, s.relax_bound, resolver="uv")
        return GiveUp(f"{why} (after pinning a resolution uv found; a lock from uv's resolution failed too)")
    guide = s.guides.get(reqs)
    if guide is None:
        return LookUp(guide=reqs)
    if not guide.ok:
        said = " ".join(ln.strip() for ln in guide.error.splitlines()[:3] if ln.strip())
        bound = s.relax_bound
        if bound:
            # uv names the exact release a dependency needs that the date bound hides (torch 2.0.0
            # needs triton==2.0.0, whose wheels came five days later): the bound moves past it
            said_by_uv = relax.diagnose(guide.error)
            wanted = direct_not_found(said_by_uv, reqs) + dependency_not_found(said_by_uv, reqs)
            missing = tuple(dict.fromkeys((pkg, v) for pkg, v, _ in wanted if (pkg, v) not in s.uploaded))
            if missing:
                return LookUp(uploads=missing)
            moved = later_bound(said_by_uv, reqs, bound, s.uploaded, wanted)
            if moved is not None and moved[0] not in {b for b, _ in s.bound_moves}:
                return Try("relaxed", reqs, moved[0], bound_note=f"date bound {bound} -> {moved[0]}: {moved[1]} "
                                                                 f"(uv's resolver named it)")
        drop = unimported_in_derivation(guide.error, reqs, s.facts)
        if drop is not None:
            i, name = drop
            after = reqs[:i] + reqs[i + 1:]
            if not any(t.requirements == after and t.bound == s.relax_bound for t in s.tried):
                step = relax.Step(UNRESOLVABLE_RULE, name, reqs[i], "",
                                  f"uv's resolver found no resolution, and its explanation runs through {reqs[i]}, "
                                  f"which the code never imports; dropped ({why})", after,
                                  trigger="\n".join(guide.error.splitlines()[:12]))
                return Try("relaxed", after, s.relax_bound, step=step)
        # uv names the conflict pdm ran out of time on: the conflict rules act on uv's words
        named = relax.relax(guide.error, reqs, s.facts)
        if named is not None and not any(t.requirements == named.requirements and t.bound == s.relax_bound
                                         for t in s.tried):
            step = replace(named, reason=f"{named.reason} (the conflict as uv's resolver explained it; {why})",
                           trigger="\n".join(guide.error.splitlines()[:12]))
            return Try("relaxed", named.requirements, s.relax_bound, step=step)
        return GiveUp(f"{why}; uv's resolver found no resolution either: {said}")
    pins = guided_pins(reqs, guide, why.split(";")[0])
    if not pins:
        return GiveUp(f"{why}; uv found a resolution, but every requirement it could pin is pinned already")
    if any(t.requirements == pins[-1].requirements and t.bound == s.relax_bound for t in s.tried):
        return GiveUp(f"{why}; uv's resolution pins the requirements to a set already tried")
    trigger = "\n".join(s.tried[-1].error.splitlines()[-8:])
    pins = tuple(replace(p, trigger=trigger) for p in pins)
    return Try("relaxed", pins[-1].requirements, s.relax_bound, step=pins[-1], pins=pins[:-1])


__all__ = [
    "GUIDED_RULE",
    "MAX_SERIES_DESCENT",
    "MAX_STEPS",
    "SEARCH_REPLACES",
    "SERIES_RULE",
    "STRATEGIES",
    "TO_IMPORTED_RULE",
    "UNRESOLVABLE_RULE",
    "GiveUp",
    "Locked",
    "LookUp",
    "Move",
    "Search",
    "Situation",
    "Tried",
    "Try",
    "counted_steps",
    "dependency_not_found",
    "direct_not_found",
    "guided_pins",
    "later_bound",
    "next_move",
    "search_steps",
    "start",
    "unimported_in_derivation",
]
