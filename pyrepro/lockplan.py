"""The lock planner: which resolver attempt comes next, from the results so far (pure: no I/O).

``pyrepro.lock`` runs attempts and looks facts up; this module only decides. Given a
``Situation`` (the declared requirements, the strategies to try, every attempt so far with
the problems its resolver reported, the relaxation steps taken, the date-bound moves made and
the facts looked up), ``next_move`` returns exactly one of:

- ``Try``: run the resolver on these requirements with this date bound (and, for relaxation,
  the one step or bound move that changed them, so the record says why);
- ``LookUp``: the decision needs facts first (release lists, upload dates of pinned releases);
  the caller looks them up, ``learn``s them, and asks again;
- ``Locked``: the last attempt produced a lock;
- ``GiveUp``: nothing more to try, and why (category 4).

The order is the documented one (docs/lock.md): ``as-declared``, then ``date-bounded``, then
``relaxed``. Relaxation first moves a date bound that hides an exactly pinned release to the day
after that release (no requirement changes), then applies one rule of ``pyrepro.relax.RULES``
per attempt, at most ``MAX_STEPS`` times. A timeout with nothing else to act on stops it: a
relaxation needs an error to be guided by.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from pyrepro import relax

Strategy = Literal["as-declared", "date-bounded", "relaxed", "reused"]
STRATEGIES: tuple[Strategy, ...] = ("as-declared", "date-bounded", "relaxed")
MAX_STEPS = 8
UNCOUNTED_RULES = frozenset({"not-on-index"})  # relaxation steps that do not count toward MAX_STEPS
_ACTIONABLE = ("not-found", "conflict", "build-failed")


@dataclass(frozen=True)
class Tried:
    """One finished attempt, as the planner sees it."""

    strategy: Strategy
    requirements: tuple[str, ...]
    bound: str | None
    ok: bool
    problems: tuple[relax.Problem, ...] = ()
    error: str = ""  # the resolver text (trimmed), for the trigger of the next step


@dataclass(frozen=True)
class Try:
    strategy: Strategy
    requirements: tuple[str, ...]
    bound: str | None
    step: relax.Step | None = None  # the relaxation that made ``requirements``
    bound_note: str = ""  # why the date bound moved (empty: it did not)

    @property
    def detail(self) -> str:
        if self.bound_note:
            return self.bound_note
        if self.step is not None:
            return self.step.summary
        return f"{self.strategy}{f' (<= {self.bound})' if self.bound else ''}"


@dataclass(frozen=True)
class LookUp:
    versions: tuple[str, ...] = ()  # release lists of these distributions
    uploads: tuple[tuple[str, str], ...] = ()  # the upload day of these (name, version)


@dataclass(frozen=True)
class Locked:
    attempt: Tried


@dataclass(frozen=True)
class GiveUp:
    reason: str


Move = Try | LookUp | Locked | GiveUp


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
        steps = self.steps + ((move.step,) if move.step is not None else ())
        moves = self.bound_moves + (((move.bound or "", move.bound_note),) if move.bound_note else ())
        return replace(self, tried=(*self.tried, tried), steps=steps, bound_moves=moves)

    def learn(self, versions: Mapping[str, tuple[str, ...]] | None = None,
              uploaded: Mapping[tuple[str, str], dt.date | None] | None = None) -> Situation:
        facts = self.facts
        if versions:
            facts = replace(facts, versions={**facts.versions, **{relax.req_name(k): tuple(v)
                                                                  for k, v in versions.items()}})
        return replace(self, facts=facts, uploaded={**self.uploaded, **(uploaded or {})})


def start(declared: Sequence[str], *, first: Strategy = "as-declared", era_bound: str | None = None,
          imported: frozenset[str] | None = None) -> Situation:
    """The situation before any attempt: the strategies from ``first`` on (``date-bounded``
    only when the submission date is known)."""
    if first not in STRATEGIES:
        raise ValueError(f"unknown strategy {first!r}")
    order = tuple(s for s in STRATEGIES[STRATEGIES.index(first):] if s != "date-bounded" or era_bound)
    return Situation(tuple(declared), order, era_bound, facts=relax.Facts(imported=imported))


def direct_not_found(problems: Sequence[relax.Problem], reqs: Sequence[str]) -> list[tuple[str, str, str]]:
    """(package, version, requirement) of direct requirements the resolver said it could not find:
    an exact pin gives its version; any other requirement gives "" (the project's first release:
    a package that did not exist yet at the submission date, like a tool the authors published
    after the date their metadata gives)."""
    out = []
    for p in problems:
        if p.kind != "not-found" or not p.package:
            continue
        for i in relax.find(tuple(reqs), p.package):
            v = relax.pinned_version(reqs[i])
            if v is not None and "*" not in v:
                out.append((p.package, relax.strip_local(v), reqs[i]))
            elif v is None:
                out.append((p.package, "", reqs[i]))
    return out


def later_bound(problems: Sequence[relax.Problem], reqs: Sequence[str], bound: str,
                uploaded: Mapping[tuple[str, str], dt.date | None]) -> tuple[str, str] | None:
    """A date bound that hides an exactly pinned release, or a whole project first published after
    it (the resolver says "not found"), moves to the day after that upload: (new bound, why), or None."""
    try:
        current = dt.date.fromisoformat(bound)
    except ValueError:
        return None
    best: tuple[dt.date, str] | None = None
    for pkg, version, req in direct_not_found(problems, reqs):
        day = uploaded.get((pkg, version))
        if day is None or day < current:
            continue
        new = day + dt.timedelta(days=1)
        if best is None or new > best[0]:
            what = f"{req} was released" if version else f"{pkg} was first published"
            best = (new, f"{what} {day.isoformat()}, after the submission date bound")
    if best is None:
        return None
    return best[0].isoformat(), best[1]


def next_move(s: Situation, *, max_steps: int = MAX_STEPS) -> Move:
    """The one next thing to do (see the module docstring)."""
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
    counted = [st for st in s.steps if st.rule not in UNCOUNTED_RULES]
    if len(counted) >= max_steps:
        return GiveUp(f"still no lock after {len(counted)} relaxation steps (the limit)")
    problems = s.tried[-1].problems
    if any(p.kind == "timeout" for p in problems) and not any(p.kind in _ACTIONABLE for p in problems):
        return GiveUp("the resolver timed out without naming a conflict, a missing release or a failed build; "
                      "a relaxation needs such an error to act on")
    reqs = s.requirements
    bound = s.relax_bound
    if bound:
        missing = tuple(dict.fromkeys((pkg, v) for pkg, v, _ in direct_not_found(problems, reqs)
                                      if (pkg, v) not in s.uploaded))
        if missing:
            return LookUp(uploads=missing)
        moved = later_bound(problems, reqs, bound, s.uploaded)
        if moved is not None and moved[0] not in {b for b, _ in s.bound_moves}:
            return Try("relaxed", reqs, moved[0], bound_note=f"date bound {bound} -> {moved[0]}: {moved[1]}")
    names = tuple(n for n in relax.packages_to_look_up(problems, reqs) if n not in s.facts.versions)
    if names:
        return LookUp(versions=names)
    step = relax.relax(problems, reqs, s.facts)
    if step is None:
        first = next((p for p in problems if p.kind != "unknown"), problems[0] if problems else None)
        what = f"{first.kind}{f' ({first.package})' if first.package else ''}" if first else "an unreadable error"
        return GiveUp(f"no relaxation rule applies to {what}")
    if not step.trigger:
        step = replace(step, trigger="\n".join(s.tried[-1].error.splitlines()[-8:]))
    return Try("relaxed", step.requirements, bound, step=step)


__all__ = ["MAX_STEPS", "STRATEGIES", "GiveUp", "direct_not_found", "Locked", "LookUp", "Move", "Situation", "Tried", "Try",
           "later_bound", "next_move", "start"]
