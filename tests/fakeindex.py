"""A tiny index and an exact resolver over it: the oracle of the pin-search tests.

``FakeIndex`` holds releases (name, version, the requirements of that release, the CPythons it has
files for). ``resolve`` searches every combination by backtracking (the sets are small) and answers
as a resolver would: a resolution, or no resolution with an explanation in the wording chosen by
``words`` (tests prove the search's outcome does not depend on it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from pyrepro.pinsearch import Answer


@dataclass(frozen=True)
class Release:
    name: str
    version: str
    requires: tuple[str, ...] = ()
    pythons: frozenset[str] | None = None  # None: every CPython (a pure-Python wheel)
    uploaded: str = "2000-01-01"  # ISO day its files reached the index


def uv_words(culprits: Sequence[str]) -> str:
    names = " and ".join(culprits) or "your requirements"
    return ("  x No solution found when resolving dependencies:\n"
            f"  `-> Because {names} cannot all hold, we can conclude that your requirements are unsatisfiable.\n")


def odd_words(culprits: Sequence[str]) -> str:
    """uv's verdict line (its protocol: no resolution exists) with an explanation no rule can read."""
    return "  x No solution found when resolving dependencies:\n  `-> the stars are not right (no details given)\n"


@dataclass
class FakeIndex:
    releases: list[Release] = field(default_factory=list)
    words: Callable[[Sequence[str]], str] = uv_words
    asked: list[tuple[tuple[str, ...], str]] = field(default_factory=list)

    def add(self, name: str, version: str, *requires: str, pythons: Sequence[str] | None = None,
            uploaded: str = "2000-01-01") -> FakeIndex:
        self.releases.append(Release(canonicalize_name(name), version, tuple(requires),
                                     frozenset(pythons) if pythons is not None else None, uploaded))
        return self

    def candidates(self, name: str, python: str, bound: str | None = None,
                   own: dict[str, str] | None = None) -> list[Release]:
        name = canonicalize_name(name)
        limit = (own or {}).get(name, bound)  # releases uploaded before the day (uv's --exclude-newer)
        out = [r for r in self.releases if r.name == name and (r.pythons is None or python in r.pythons)
               and (limit is None or r.uploaded < limit)]
        return sorted(out, key=lambda r: Version(r.version), reverse=True)

    def first_upload(self, name: str, spec: str = "") -> str | None:
        """The day of the first release of ``name`` that satisfies ``spec`` (a version or a specifier)."""
        from packaging.specifiers import SpecifierSet

        want = SpecifierSet(spec if spec[:1] in "<>=!~" else f"=={spec}") if spec else None
        days = [r.uploaded for r in self.releases if r.name == canonicalize_name(name)
                and (want is None or want.contains(r.version, prereleases=True))]
        return min(days) if days else None

    def resolve(self, reqs: Sequence[str], python: str, bound: str | None = None,
                own: dict[str, str] | None = None) -> dict[str, str] | None:
        wanted = [Requirement(r) for r in reqs]

        def go(todo: list[Requirement], chosen: dict[str, str]) -> dict[str, str] | None:
            if not todo:
                return chosen
            r, rest = todo[0], todo[1:]
            name = canonicalize_name(r.name)
            if name in chosen:
                if r.specifier.contains(chosen[name], prereleases=True):
                    return go(rest, chosen)
                return None
            # every other requirement on this name already queued narrows it too
            for rel in self.candidates(name, python, bound, own):
                if not r.specifier.contains(rel.version, prereleases=True):
                    continue
                got = go([*rest, *(Requirement(x) for x in rel.requires)], {**chosen, name: rel.version})
                if got is not None:
                    return got
            return None

        return go(wanted, {})

    def __call__(self, reqs: tuple[str, ...], python: str) -> Answer:
        self.asked.append((reqs, python))
        got = self.resolve(reqs, python)
        if got is not None:
            return Answer(True, "", got)
        names = sorted({canonicalize_name(Requirement(r).name) for r in reqs if any(s.operator for s in
                                                                                     Requirement(r).specifier)})
        return Answer(False, self.words(names))
