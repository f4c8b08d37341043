"""Which PyPI distribution provides an import nothing declares, by evidence rather than by name.

An import the environment lacks (``import loguru``, ``import submitit`` with nothing declared)
has candidate distributions: the name table's answer (``pyrepro/data/module_map.toml``), the module
name itself, and its common spellings (``a_b`` as ``a-b``; ``python-a``, ``py-a``, ``pya``,
``a-python``). A candidate is accepted only when the wheel of its newest release uploaded by the
submission's date ships that very top-level module (the wheel's file list, read with two range
requests, never the whole wheel): a PyPI project that merely has the name is no evidence. When no
candidate ships it, the index's project names are searched for names whose words the module's
words begin (``bayes_opt``: bayesian-optimization), and those are read the same way. The
accepted provider, with that evidence, goes into model.toml (``[mapping]`` with the reason and
``[dependencies] extra``).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from packaging.utils import canonicalize_name

MAX_RELEASES = 3  # unreadable releases of one candidate (no wheel, no readable sdist) passed over
MAX_YEARS = 4  # releases of one candidate, a year apart, read that do not ship the module
AFTER_DATE = "after the submission's date"  # in the reason of a provider first released after that date


@dataclass(frozen=True)
class Provider:
    module: str
    distribution: str
    version: str
    wheel: str
    uploaded: str  # ISO day
    reason: str
    pinned: bool = False  # newer releases no longer ship the module: this release is pinned

    def spec(self) -> str:
        """``==version`` when this very release must be installed, else "": a provider first released
        after the submission's date (a date-bounded relock would not see it, an unbounded one takes
        today's: keras 1.1.1 of 2016 beside tensorflow 2.x fails with "module 'tensorflow' has no
        attribute 'placeholder'"), or one whose newer releases no longer ship the module."""
        return f"=={self.version}" if self.version and (self.pinned or AFTER_DATE in self.reason) else ""


def known_absent(module: str) -> str:
    """The name table's reason why no PyPI distribution provides ``module`` ("" when it has none)."""
    from pyrepro.resolve import _mapping

    _modules, not_installable, unresolved = _mapping()
    top = module.split(".")[0]
    return str(unresolved.get(module) or unresolved.get(top) or not_installable.get(module)
               or not_installable.get(top) or "")


def candidates(module: str) -> tuple[str, ...]:
    """Distribution names that may provide the top-level module ``module``, most likely first."""
    from pyrepro.resolve import _mapping

    top = module.split(".")[0]
    table = _mapping()[0]
    names = [str(table[m]) for m in (module, top) if isinstance(table.get(m), str)]
    low = top.lower()
    names += [top, low.replace("_", "-"), f"python-{low}", f"py-{low}", f"py{low}", f"{low}-python"]
    return tuple(dict.fromkeys(canonicalize_name(n) for n in names))


MAX_SEARCHED = 8  # names found by the search of the index's project names that are read, at most


def abbreviated_by(module: str, names: list[str]) -> tuple[str, ...]:
    """Project names whose words the module's words begin, word for word, shortest first (at most
    ``MAX_SEARCHED``): ``bayes_opt`` -> bayes-optim, bayesian-optimization. Only for a module of
    two words or more (one word begins far too many names to read); never the module's own
    spellings, which ``candidates`` already has."""
    top = module.split(".")[0]
    words = [w for w in top.lower().split("_") if w]
    if len(words) < 2:
        return ()
    pattern = re.compile("-".join(re.escape(w) + "[a-z0-9]*" for w in words))
    own = set(candidates(module))
    found = sorted((n for n in names if pattern.fullmatch(n) and n not in own), key=lambda n: (len(n), n))
    return tuple(found[:MAX_SEARCHED])


def find_provider(module: str, index: Any, before: dt.date | None, python: str | None = None) -> Provider | None:
    """The first candidate whose wheel (for a release without one, its sdist), released by
    ``before`` (None: any day), ships ``module``'s top-level name. When no release by that day
    does, the earliest release after it that does (a package first published after the code was
    written, as the repository's own package often is), said so in the reason. With ``python``,
    releases whose wheels all are for other Pythons are passed over (keras-molecules, 2016, on
    CPython 3.6: TensorFlow's first releases had no cp36 wheel; its first with one is 1.2.0). None
    when no candidate's release ships it (or the index cannot be asked)."""
    top = module.split(".")[0]
    found = _first_shipping(top, module, index, before, after=False, python=python)
    if found is None and before is not None:
        found = _first_shipping(top, module, index, before, after=True, python=python)
    return found


def _installs(index: Any, name: str, version: str, python: str | None) -> bool:
    """False when ``name`` ``version``'s Requires-Python excludes ``python``, or it has wheels and
    none for ``python`` and no sdist to fall back on that is pure Python (a sdist-only release, or an
    unknown answer, may still install)."""
    if python is None:
        return True
    if hasattr(index, "requires_python"):
        from pyrepro.buildreqs import admits_python

        if not admits_python(index.requires_python(name, version), python):
            return False
    if not hasattr(index, "has_wheel") or index.has_wheel(name, version, python) is not False:
        return True
    # only wheels for other Pythons: still installable from its sdist when those wheels are pure
    # Python (edward 1.3.5 ships a "py2-none-any" wheel beside an sdist that installs on 3.7:
    # gryffin, corpus9 dev); a compiled project's sdist would have to be built (TensorFlow has none)
    files = index.release_files(name, version) if hasattr(index, "release_files") else None
    wheels = [f for f in files or () if f.endswith(".whl")]
    sdist = any(f.endswith((".tar.gz", ".zip", ".tar.bz2", ".tgz")) for f in files or ())
    return sdist and bool(wheels) and all(f.endswith("-none-any.whl") for f in wheels)


def _searched(module: str, index: Any) -> tuple[str, ...]:
    """``abbreviated_by`` over the index's project names (() when the index cannot list them)."""
    names = index.project_names() if hasattr(index, "project_names") else None
    return abbreviated_by(module, names) if names else ()


def _first_shipping(top: str, module: str, index: Any, before: dt.date | None, *, after: bool,
                    python: str | None = None) -> Provider | None:
    own = candidates(module)
    for name in (*own, *_searched(module, index)):
        if after:
            assert before is not None
            releases = sorted((r for r in index.releases_by(name, None) if r[1] > before.isoformat()),
                              key=lambda r: r[1])
        else:
            releases = index.releases_by(name, before)
        releases = [r for r in releases if _installs(index, name, r[0], python)]
        first_miss = ""  # the first release read that does not ship it
        miss_year = ""  # the year of the last such release
        misses = unread = 0
        for version, day in releases:
            if miss_year and day[:4] == miss_year:
                continue  # the same year as a release that does not ship it: a year further on
            got = index.top_levels(name, version)
            if got is None:
                unread += 1
                if unread >= MAX_RELEASES:
                    break
                continue  # neither a wheel nor a readable sdist for this release: the next one
            tops, file = got
            if top not in tops:
                # this release does not ship it; the project may have renamed its module (pyDOE 0.3.8
                # of 2015 ships pyDOE, its releases of 2026 ship pydoe): one release a year further
                first_miss, miss_year, misses = first_miss or version, day[:4], misses + 1
                if misses >= MAX_YEARS:
                    break  # not this candidate: the next one
                continue
            if after:
                late = (dt.date.fromisoformat(day) - before).days if before else 0
                when = (f"uploaded {day}, {late} day{'s' if late != 1 else ''} {AFTER_DATE} {before}: no release "
                        "by that date ships it, this is the first after it that does")
            else:
                when = f"uploaded {day}" + (f", by the submission's date {before}" if before else "")
            kind = "wheel" if file.endswith(".whl") else "sdist"
            pinned = bool(first_miss) and not after
            gone = (f"; {canonicalize_name(name)} {first_miss}, a newer release, no longer ships it, so {version} is "
                    "pinned") if pinned else ""
            how = (f"candidates {', '.join(own)}" if name in own else
                   f"none of the candidates {', '.join(own)} ships it; {canonicalize_name(name)} was found by a "
                   f"search of the index's project names for words that {top}'s words begin")
            return Provider(top, canonicalize_name(name), version, file, day,
                            f"no declaration provides {top}; the {kind} {file} ({when}) ships the top-level "
                            f"module {top}{gone} (rule import-provider: {how})", pinned)
    return None


def next_release(module: str, distribution: str, version: str, index: Any) -> tuple[str, str] | None:
    """(version, reason) of the first release of ``distribution`` after ``version`` whose wheel
    (or sdist) ships ``module``'s top-level name, looking at up to ``MAX_RELEASES`` releases;
    None when none does or the index cannot say."""
    from packaging.version import InvalidVersion, Version

    top = module.split(".")[0]
    try:
        after = Version(version)
    except InvalidVersion:
        return None
    later = []
    for v, day in index.releases_by(distribution, None):
        try:
            if Version(v) > after:
                later.append((Version(v), v, day))
        except InvalidVersion:
            continue
    for _key, v, day in sorted(later)[:MAX_RELEASES]:
        got = index.top_levels(distribution, v)
        if got is not None and top in got[0]:
            return v, f"{distribution} {v} (uploaded {day}) is the next release that ships {top} ({got[1]})"
    return None


def persist(model_toml: Any, providers: list[Provider]) -> None:
    """Record providers in model.toml (``[mapping]`` entry with the evidence, the distribution in
    ``[dependencies] extra``) and regenerate the pyproject."""
    import tomlkit

    from pyrepro import generate as gen
    from pyrepro.fsutil import atomic_write_text
    from pyrepro.registry import parse_model

    doc = tomlkit.parse(model_toml.read_text(encoding="utf-8"))
    mapping = doc.setdefault("mapping", tomlkit.table())
    deps = doc.setdefault("dependencies", tomlkit.table())
    extra = deps.setdefault("extra", tomlkit.array())
    scanned = {canonicalize_name(re.split(r"[;\[<>=!~ ]", str(e), maxsplit=1)[0]) for e in deps.get("scanned", [])}
    for p in providers:
        entry = tomlkit.inline_table()
        entry.update({"distribution": p.distribution, "reason": p.reason})
        mapping[p.module] = entry
        listed = [canonicalize_name(re.split(r"[;\[<>=!~ ]", str(e), maxsplit=1)[0]) for e in extra]
        if p.distribution not in listed and p.distribution not in scanned:
            extra.append(p.distribution + p.spec())
        elif p.spec():
            # the distribution is already required (catkit, corpus8 dev: setuptools scanned, and its
            # newest release no longer ships pkg_resources): the release that ships the module is
            # pinned all the same, or the relock takes the same release again
            pins = deps.setdefault("pins", tomlkit.aot())
            for old in [t for t in pins if canonicalize_name(str(t.get("name", ""))) == p.distribution]:
                pins.remove(old)
            from pyrepro.lock import AUTO_REASON, _rule_marker

            t = tomlkit.table()
            # pyrepro's own choice, not a reviewed override: the lock's category stays automatic
            t.update({"name": p.distribution, "spec": p.spec(),
                      "reason": f"{AUTO_REASON} {_rule_marker('import-provider')} see model.toml [mapping]): {p.reason}"})
            pins.append(t)
    atomic_write_text(model_toml, tomlkit.dumps(doc))
    atomic_write_text(model_toml.parent / "pyproject.toml", gen.render_pyproject(parse_model(model_toml)))
