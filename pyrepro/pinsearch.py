"""The pin search: declared requirements are evidence, not orders (issue 42).

A submission's declared requirements are **soft constraints**, each with a weight from the
evidence behind it (``weigh``): a distribution the code imports over one only declared, an exact
pin over a range, the model's own packages over a benchmark harness over tooling. The date bound,
the platform and "no pre-release unless declared" are hard: the oracle applies them to every
query. The Python version is a variable over the CPythons the caller offers (the submission's
era; only the one it states when it states one).

``search`` finds a maximum-weight set of declared constraints that resolves, with a resolver as
the **oracle** (``Oracle``: requirements and a Python in, an ``Answer`` out) and a budget of
queries:

1. **Python**: the declared set on each offered CPython in the caller's order (an exact pin with
   no wheel for the chosen Python, ``tensorflow==2.3.0`` on 3.9, resolves on 3.8 as declared).
2. **The fully relaxed set** (every constraint widened to its bare name) on each offered CPython.
   When none resolves, the requirement that makes even that fail is found by delta debugging over
   the names (``minimal_failing``); a culprit the code never imports is dropped and the search goes
   on, an imported one ends the search with a **proof**: this set does not resolve either, and why.
3. **Keep**: the constraints are added back at their declared strength, heaviest first, in chunks
   halved on failure (the same result as adding them one by one, in fewer queries when few
   conflict). The resolver's explanation may *propose* which constraints to leave out first (the
   names it mentions, ``hint``); it never decides.
4. **Widen**: each constraint left out goes up its ladder (``ladder``: the same release without a
   local label, the same release series, the same minor, the same major, the bare name), the
   heaviest first, and keeps the narrowest rung that resolves.

Every answer that resolved is a set the resolver accepted; the outcome is always the last such set
(a spent budget leaves the undecided constraints at their bare names, which resolved). Nothing here
reads the wording of a resolver's message to decide: ``hint`` only orders the first query of step 3.
This module does no I/O (it reads requirements as ``pyrepro.relax`` does): ``pyrepro.lock`` gives it uv (``pyrepro.uvtool.ask``) as the oracle.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from pyrepro.relax import _format, _parse, pinned_version

RULE = "pin-search"
#: oracle queries one search may make (uv answers one in seconds with a warm cache)
DEFAULT_BUDGET = 48
#: rounds of dropping an unimported requirement that fails even by its bare name
MAX_DROPS = 6

#: weights of the kinds of distribution (``kind_of``)
KIND_WEIGHT = {"model": 3, "harness": 2, "tooling": 1}
IMPORTED_FACTOR = 3
EXACT_FACTOR = 2


@dataclass(frozen=True)
class Answer:
    """One oracle answer. ``known`` False: the oracle could not say (a timeout, an sdist whose
    metadata did not build); the search treats it as "does not resolve" and says so."""

    ok: bool
    text: str = ""
    versions: Mapping[str, str] = field(default_factory=dict)  # canonical name -> version, when ok
    known: bool = True


Oracle = Callable[[tuple[str, ...], str], Answer]


@dataclass(frozen=True)
class Constraint:
    """One declared requirement as a soft constraint."""

    index: int  # its place in the declared list
    requirement: str
    name: str  # canonical
    weight: int
    evidence: str  # why this weight ("imported by the code; an exact pin; a model package")
    ladder: tuple[tuple[str, str], ...]  # (rung, requirement) from the declared strength to the bare name

    @property
    def pinned(self) -> bool:
        return len(self.ladder) > 1


@dataclass(frozen=True)
class Relaxation:
    """How far one declared constraint moved, and why."""

    name: str
    before: str
    after: str  # "" when dropped
    rung: str  # the ladder rung kept ("minor", "major", "bare", "dropped", ...)
    locked: str  # the version the resolution took ("" when dropped or unknown)
    distance: str  # "same release", "same minor", "same major", "other major", "dropped", "not pinned"
    explanation: str  # the resolver's words when the constraint at its declared strength was refused
    queries: int  # the oracle queries made when this was decided
    evidence: str

    def reason(self, total: int) -> str:
        said = " ".join(ln.strip() for ln in self.explanation.splitlines() if ln.strip())[:400]
        what = ("dropped: even its bare name does not resolve, and the code never imports it"
                if not self.after else
                f"widened to {self.after!r} ({self.rung}; locked {self.locked or '?'}: {self.distance})")
        return (f"{self.before} ({self.evidence}) cannot hold with the heavier constraints kept; {what}; "
                f"found by the pin search with the resolver as the oracle in {total} queries"
                + (f"; the resolver said: {said}" if said else ""))


@dataclass(frozen=True)
class Query:
    requirements: tuple[str, ...]
    python: str
    ok: bool
    known: bool


@dataclass(frozen=True)
class Outcome:
    """What the search found. ``ok``: ``requirements`` resolved on ``python`` (the last query that
    did); else ``proof`` says why no relaxation resolves, naming ``culprits``."""

    ok: bool
    requirements: tuple[str, ...]
    python: str
    relaxations: tuple[Relaxation, ...] = ()
    queries: tuple[Query, ...] = ()
    proof: str = ""
    culprits: tuple[str, ...] = ()
    python_reason: str = ""  # why the Python moved ("" when it did not)
    spent: bool = False  # the budget ran out before every constraint was decided
    versions: Mapping[str, str] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return len(self.queries)


# --------------------------------------------------------------------------- constraints

def _bare(r: Requirement) -> str:
    return _format(r.name, r, "")


def _with(r: Requirement, spec: str) -> str:
    return _format(r.name, r, spec)


def exact_version(req: str) -> str | None:
    """The version of an exact pin (``==1.2.3``, ``===1.2.3``; not a wildcard), else None: relax's
    reading of a pin, for a requirement that parses and names no URL."""
    r = _parse(req)
    return None if r is None or r.url else pinned_version(req)


def ladder(req: str) -> tuple[tuple[str, str], ...]:
    """The rungs a requirement widens through, from its declared strength to its bare name:
    ``torch==1.12.1+cu113``: declared, ``==1.12.1`` (local label dropped), ``==1.12.*``, ``==1.*``,
    bare; ``automatminer==1.0.3.20191111``: declared, ``==1.0.3.*`` (series), ``==1.0.*``,
    ``==1.*``, bare; a range or any other specifier: declared, bare. A URL or a bare name: declared
    only (nothing to widen)."""
    r = _parse(req)
    if r is None or r.url or not r.specifier:
        return (("declared", req),)
    rungs: list[tuple[str, str]] = [("declared", req)]
    v = exact_version(req)
    if v is not None:
        try:
            parsed = Version(v)
        except InvalidVersion:
            parsed = None
        if parsed is not None:
            rel = parsed.release
            if parsed.local:
                rungs.append(("no local label", _with(r, f"=={parsed.public}")))
            if len(rel) >= 4:
                rungs.append(("series", _with(r, "==" + ".".join(map(str, rel[:3])) + ".*")))
            if len(rel) >= 2:
                rungs.append(("minor", _with(r, "==" + ".".join(map(str, rel[:2])) + ".*")))
            if len(rel) >= 2:
                rungs.append(("major", _with(r, f"=={rel[0]}.*")))
    rungs.append(("bare", _bare(r)))
    out: list[tuple[str, str]] = []
    for rung, text in rungs:  # no rung twice (==1.0 gives minor ==1.0.* and major ==1.*)
        if all(text != t for _r, t in out):
            out.append((rung, text))
    return tuple(out)


def weigh(declared: Sequence[str], imported: frozenset[str] | None,
          kind_of: Callable[[str], str] = lambda _n: "model") -> tuple[Constraint, ...]:
    """Each declared requirement as a constraint with its weight: ``KIND_WEIGHT`` of its kind
    (``kind_of``: "model", "harness", "tooling"), times ``IMPORTED_FACTOR`` when the code imports it
    (unknown imports: every requirement counts as imported), times ``EXACT_FACTOR`` for an exact pin."""
    out = []
    for i, req in enumerate(declared):
        r = _parse(req)
        name = canonicalize_name(r.name) if r is not None else req
        kind = kind_of(name)
        used = imported is None or name in imported
        exact = exact_version(req) is not None
        weight = KIND_WEIGHT.get(kind, 3) * (IMPORTED_FACTOR if used else 1) * (EXACT_FACTOR if exact else 1)
        evidence = "; ".join((("imported by the code" if imported is not None else "imports unknown")
                              if used else "declared, never imported",
                              "an exact pin" if exact else "a range" if r is not None and r.specifier else "a name",
                              {"harness": "a benchmark harness", "tooling": "tooling"}.get(kind, "a model package")))
        out.append(Constraint(i, req, name, weight, evidence, ladder(req)))
    return tuple(out)


def distance(declared: str | None, locked: str | None) -> str:
    """How far a locked version is from a declared exact one."""
    if not locked:
        return "dropped"
    if not declared:
        return "not pinned"
    try:
        a, b = Version(declared), Version(locked)
    except InvalidVersion:
        return "same release" if declared == locked else "other major"
    if Version(a.public) == Version(b.public):
        return "same release"
    if a.release[:2] == b.release[:2]:
        return "same minor"
    if a.release[:1] == b.release[:1]:
        return "same major"
    return "other major"


# --------------------------------------------------------------------------- the search

class _Spent(Exception):
    pass


@dataclass
class _Asker:
    oracle: Oracle
    budget: int
    time_left: Callable[[], float] | None = None
    log: list[Query] = field(default_factory=list)
    answers: dict[tuple[tuple[str, ...], str], Answer] = field(default_factory=dict)

    def __call__(self, reqs: Sequence[str], python: str) -> Answer:
        key = (tuple(reqs), python)
        if key in self.answers:
            return self.answers[key]
        if len(self.log) >= self.budget or (self.time_left is not None and self.time_left() <= 0):
            raise _Spent()
        a = self.oracle(key[0], python)
        self.answers[key] = a
        self.log.append(Query(key[0], python, a.ok, a.known))
        return a


def minimal_failing(items: Sequence[str], fails: Callable[[Sequence[str]], bool]) -> list[str]:
    """A small subset of ``items`` that still ``fails`` (``fails(items)`` must hold): halves while a
    half fails on its own, then removes single items that are not needed (delta debugging, ddmin's
    one-minimal result for the usual case of one or two culprits)."""
    cur = list(items)
    while len(cur) > 1:
        half = len(cur) // 2
        a, b = cur[:half], cur[half:]
        if fails(a):
            cur = a
        elif fails(b):
            cur = b
        else:
            break
    i = 0
    while len(cur) > 1 and i < len(cur):
        rest = cur[:i] + cur[i + 1:]
        if fails(rest):
            cur = rest
        else:
            i += 1
    return cur


def search(declared: Sequence[str], *, oracle: Oracle, pythons: Sequence[str],
           imported: frozenset[str] | None = None, kind_of: Callable[[str], str] = lambda _n: "model",
           hint: Sequence[str] = (), budget: int = DEFAULT_BUDGET, first: Answer | None = None,
           time_left: Callable[[], float] | None = None,
           releases: Callable[[str], Sequence[str]] | None = None, stated: bool = False,
           worth: Callable[[str], bool] | None = None) -> Outcome:
    """The search of the module docstring. ``pythons``: the CPythons to try, in order of preference
    (the first is the target's own); ``hint``: names a resolver's explanation mentions (only
    ordering); ``first``: the answer for ``declared`` on ``pythons[0]`` already known (the failed
    attempt that led here), so it is not asked again; ``time_left``: seconds the search may still
    spend (a spent budget of queries or time ends it as ``Outcome.spent``); ``releases``: the index's
    releases of a distribution (for the nearest release that fits); ``stated``: the submission states
    ``pythons[0]``, which then moves only when no relaxation resolves on it (step 1 asks it alone: a
    pin gives way before a stated Python does); ``worth(python)``: whether the declared set is worth
    asking on another Python in step 1 (evidence such as the wheels of the exact pins; default: yes)."""
    if not pythons:
        raise ValueError("the search needs at least one Python")
    ask = _Asker(oracle, budget, time_left)
    if first is not None:
        ask.answers[(tuple(declared), pythons[0])] = first
    cons = weigh(declared, imported, kind_of)
    try:
        return _search(tuple(declared), cons, ask, tuple(pythons), imported, hint, releases, stated, worth)
    except _Spent:
        return Outcome(False, tuple(declared), pythons[0], queries=tuple(ask.log), spent=True,
                       proof=f"the search's budget ({budget} resolver queries, or its time) ran out after "
                             f"{len(ask.log)} queries, before any relaxation of the declared set resolved")


#: how many of the requirements the resolver's explanation names are tried alone, as a proposal
NAMED_PROPOSALS = 3


def _named_culprit(live: Sequence[Constraint], text: str, ask: _Asker, py: str) -> list[str]:
    """A proposal from the resolver's words, checked by the oracle: a requirement the explanation
    names that fails on its own (by its bare name: a known "no") is a minimal failing set by itself,
    found in one query instead of delta debugging's dozens (tapas, corpus21 dev: its own package's
    name, which the index only has as a later pre-release, in a set of 24 whose subsets take 25 s
    each to resolve). [] when no named requirement fails alone: then the words decided nothing."""
    for c in [c for c in live if _mentions(text, c.name)][:NAMED_PROPOSALS]:
        a = ask((c.ladder[-1][1],), py)
        if not a.ok and a.known:
            return [c.ladder[-1][1]]
    return []


def _mentions(text: str, name: str) -> bool:
    """Whether ``text`` names the distribution ``name`` (any spelling of its separators)."""
    pattern = "[-_.]+".join(re.escape(part) for part in re.split(r"[-_.]+", name))
    return re.search(rf"(?<![A-Za-z0-9_.-]){pattern}(?![A-Za-z0-9_-])", text, re.IGNORECASE) is not None


def _search(declared: tuple[str, ...], cons: tuple[Constraint, ...], ask: _Asker, pythons: tuple[str, ...],
            imported: frozenset[str] | None, hint: Sequence[str],
            releases: Callable[[str], Sequence[str]] | None, stated: bool = False,
            worth: Callable[[str], bool] | None = None) -> Outcome:
    own = pythons[0]
    # 1. the declared set, Python by Python (only the stated one, when the submission states it; of the
    # others only those ``worth`` asking)
    for py in pythons[:1] if stated else [own, *(p for p in pythons[1:] if worth is None or worth(p))]:
        a = ask(declared, py)
        if a.ok:
            why = "" if py == own else (f"every declared requirement resolves as declared on CPython {py}, not on "
                                        f"{own}")
            return Outcome(True, declared, py, (), tuple(ask.log), python_reason=why, versions=a.versions)
    refused = ask(declared, own)
    # 2. the fully relaxed set; unimported requirements that fail even by name are dropped
    live = list(cons)
    drops: list[Relaxation] = []
    for _round in range(MAX_DROPS + 1):
        bare = tuple(c.ladder[-1][1] for c in live)
        first_no = ask(bare, own)
        if first_no.ok:
            where = own
            break
        by_text = {c.ladder[-1][1]: c for c in live}
        # a requirement the code never imports that fails alone on the submission's own Python is
        # dropped before any other Python is asked (each query of a large set costs 10-30 s)
        named = _named_culprit(live, first_no.text, ask, own) if first_no.known else []
        unimported = [by_text[t] for t in named if imported is not None and by_text[t].name not in imported]
        if unimported and len(drops) < MAX_DROPS:
            for c in unimported:
                live.remove(c)
                drops.append(Relaxation(c.name, c.requirement, "", "dropped", "", "dropped", _said(first_no.text),
                                        len(ask.log), c.evidence))
            continue
        where = next((py for py in pythons[1:] if ask(bare, py).ok), None)
        if where is not None:
            break
        if not first_no.known:
            return Outcome(False, declared, own, tuple(drops), tuple(ask.log), culprits=(),
                           proof="the resolver could not answer for the fully relaxed set (every requirement by its "
                                 f"bare name) on CPython {own}: {_said(first_no.text)}")
        culprit_reqs = named or minimal_failing(list(bare), lambda sub: not ask(tuple(sub), own).ok)
        culprits = [by_text[t] for t in culprit_reqs]
        droppable = [c for c in culprits if imported is not None and c.name not in imported]
        if not droppable or len(drops) >= MAX_DROPS:
            names = ", ".join(c.requirement for c in culprits)
            alone = ask(tuple(culprit_reqs), own)
            one = len(culprits) == 1
            return Outcome(False, declared, own, tuple(drops), tuple(ask.log),
                           culprits=tuple(c.name for c in culprits),
                           proof=(f"even the fully relaxed set (every requirement by its bare name, nothing newer "
                                  f"than the date bound) does not resolve on CPython {', '.join(pythons)}: "
                                  f"{'this requirement by its name alone' if one else 'these requirements by their names alone'} "
                                  f"({names}) {'makes' if one else 'make'} it fail"
                                  f"{(' (the code imports it)' if one else ' (the code imports them)') if imported is not None else ''}; "
                                  f"the resolver said: {_said(alone.text)}"))
        for c in droppable:
            live.remove(c)
            drops.append(Relaxation(c.name, c.requirement, "", "dropped", "", "dropped", _said(first_no.text),
                                    len(ask.log), c.evidence))
    else:  # pragma: no cover - the loop returns or breaks
        raise AssertionError("unreachable")
    assert where is not None
    py = where
    python_reason = "" if py == own else (f"no relaxation of the declared set resolves on CPython {own}"
                                          f"{', the Python the submission states' if stated else ''}; {py} is "
                                          "the nearest of the era's CPythons on which one does")
    base = tuple(c.ladder[-1][1] for c in live)
    best = (base, ask(base, py))
    rung: dict[int, int] = {c.index: len(c.ladder) - 1 for c in live}  # constraint -> rung index
    ladders: dict[int, tuple[tuple[str, str], ...]] = {c.index: c.ladder for c in live}

    def current(over: Mapping[int, int] | None = None) -> tuple[str, ...]:
        pick = {**rung, **(over or {})}
        return tuple(ladders[c.index][pick[c.index]][1] for c in live)

    # 3. keep: heaviest first, in chunks halved on failure; the hint proposes the first chunk
    order = sorted((c for c in live if c.pinned), key=lambda c: (-c.weight, c.index))
    hinted = {canonicalize_name(h) for h in hint}
    kept: set[int] = set()
    refusal: dict[int, str] = {}
    try:
        def keep(chunk: list[Constraint]) -> Answer:
            """Ask for ``chunk`` at its declared strength beside what is kept; keep it when it resolves."""
            nonlocal best
            trial = current({c.index: 0 for c in chunk})
            a = ask(trial, py)
            if a.ok:
                for c in chunk:
                    rung[c.index] = 0
                    kept.add(c.index)
                best = (trial, a)
            return a

        def add(chunk: list[Constraint]) -> None:
            if not chunk:
                return
            a = keep(chunk)
            if a.ok:
                return
            if len(chunk) == 1:
                refusal[chunk[0].index] = a.text
                return
            half = len(chunk) // 2
            add(chunk[:half])
            add(chunk[half:])

        proposed = [c for c in order if c.name not in hinted]
        if hinted and proposed and len(proposed) < len(order):
            # the names the resolver's words mention are left out first, the rest kept: one query;
            # when that does not resolve, the plain order decides
            if keep(proposed).ok:
                add([c for c in order if c.name in hinted])
            else:
                add(order)
        else:
            add(order)
        # 4. widen each constraint left out, heaviest first, to the narrowest rung that resolves
        for c in order:
            if c.index in kept:
                continue
            for i in range(1, len(c.ladder) - 1):
                trial = current({c.index: i})
                a = ask(trial, py)
                if a.ok:
                    rung[c.index] = i
                    best = (trial, a)
                    break
            # within the rung that resolved the resolver takes the newest release that fits; the
            # release nearest the declared one wins: the lowest of those between them that resolves
            # (a floor conflict: pandas==1.1.5 against a dependency's >=1.3.1), or the one it took
            # when that is below the declared release (a ceiling: numpy==2.2.0 against <2.0)
            near = _nearest(c, best[1].versions.get(c.name), releases)
            if not near:
                continue
            r = _parse(c.requirement)
            assert r is not None
            texts = [_with(r, f"=={v}") for v in near]
            was = rung[c.index]
            spot = was  # the nearest release is tried in the place of the rung that resolved
            lo, hi, found = 0, len(texts) - 1, None
            while lo <= hi:
                mid = (lo + hi) // 2
                ladders[c.index] = (*c.ladder[:spot], ("nearest release", texts[mid]), *c.ladder[spot:])
                trial = current({c.index: spot})
                a = ask(trial, py)
                if a.ok:
                    found, hi = (mid, trial, a), mid - 1
                else:
                    lo = mid + 1
            if found is not None:
                mid, trial, a = found
                ladders[c.index] = (*c.ladder[:spot], ("nearest release", texts[mid]), *c.ladder[spot:])
                rung[c.index] = spot
                best = (trial, a)
            else:
                ladders[c.index] = c.ladder
                rung[c.index] = was
        spent = False
    except _Spent:
        spent = True
    reqs, answer = best
    versions = dict(answer.versions)
    out = list(drops)
    for c in live:
        i = rung[c.index]
        if i == 0:
            continue
        after = ladders[c.index][i][1]
        if after not in reqs:  # a rung asked about but not in the set that resolved last
            after = next(t for t in reqs if _parse(t) is not None and canonicalize_name(_parse(t).name) == c.name)
        locked = versions.get(c.name, "")
        out.append(Relaxation(c.name, c.requirement, after, next((n for n, t in ladders[c.index] if t == after),
                                                                 "bare"), locked,
                              distance(exact_version(c.requirement), locked) if exact_version(c.requirement)
                              else "not pinned", _said(refusal.get(c.index, "") or refused.text),
                              len(ask.log), c.evidence))
    return Outcome(True, reqs, py, tuple(out), tuple(ask.log), python_reason=python_reason, spent=spent,
                   versions=versions)


def _nearest(c: Constraint, took: str | None, releases: Callable[[str], Sequence[str]] | None) -> list[str]:
    """The releases to try, nearest the declared exact pin first, once a rung resolved with ``took``:
    [took] when that is below the declared release; the final releases after the declared one up
    to ``took``, ascending, when above; [] when nothing is known or nothing lies between."""
    declared = exact_version(c.requirement)
    if declared is None or not took:
        return []
    try:
        d, t = Version(declared), Version(took)
    except InvalidVersion:
        return []
    if t < d:
        return [took] if t.release != d.release else []
    if releases is None:
        return []
    between = []
    for v in releases(c.name):
        try:
            pv = Version(v)
        except InvalidVersion:
            continue
        if d < pv <= t and not pv.is_prerelease:
            between.append(pv)
    return [str(v) for v in sorted(set(between))]


def _said(text: str, limit: int = 12) -> str:
    """The resolver's explanation, trimmed to its first lines."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    return "\n".join(lines[:limit])


_NAME = re.compile(r"\b([A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]|[A-Za-z0-9])\b")


def hinted_names(text: str, declared: Sequence[str]) -> tuple[str, ...]:
    """The declared distributions a resolver's explanation mentions (a proposal only: the search
    leaves them out first and verifies)."""
    names = {canonicalize_name(r.name) for req in declared if (r := _parse(req)) is not None}
    said = {canonicalize_name(m.group(1)) for m in _NAME.finditer(text)}
    return tuple(sorted(names & said))


__all__ = [
    "DEFAULT_BUDGET",
    "RULE",
    "Answer",
    "Constraint",
    "Oracle",
    "Outcome",
    "Query",
    "Relaxation",
    "distance",
    "exact_version",
    "hinted_names",
    "ladder",
    "minimal_failing",
    "search",
    "weigh",
]
