"""What a submission says about itself, read from its files: the Python it ran on, the
benchmarks it answers, whether it used a GPU. Each answer carries the evidence (file and line)
and a reason that ``init`` writes into model.toml, so no choice is a silent default.

Python, strongest evidence first:

1. an explicit pin: ``environment.yml`` (``python=3.9``), ``runtime.txt`` (``python-3.8.5``),
   ``.python-version``, ``requires-python``/``python_requires``, ``conda create ... python=3.8``
   and ``pythonX.Y script.py`` in shell scripts, a ``python`` requirement in ``info.json``;
2. the notebook's own record: ``metadata.language_info.version`` / the kernelspec name;
3. Python 2 evidence from the scanner (``print "x"``, ``urllib2``): 2.7;
4. no evidence: the newest CPython out for ``ADOPTION_LAG`` (180 days) by the submission date
   (``interpreters.settled_pythons``: a newer one was too new for the wheels of its time) whose wheels exist for
   every exact pin the submission declares (asked of the package index through an injectable
   ``wheel_check``; offline, the date alone decides), else the newest CPython pyrepro supports.
   Either way within the range the code's unguarded standard-library imports allow (``import
   imp``: 3.11 at the newest; ``import tomllib``: 3.11 at the oldest); a stated Python outside
   that range is kept and the reason says what disagrees with it.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from pyrepro.fsutil import decode_text
from pyrepro.interpreters import (  # noqa: F401 (re-exported)
    ADOPTION_LAG,
    NEWEST,
    RELEASES,
    python_of_day,
    settled_pythons,
    version_key,
)
from pyrepro.scan import matbench_discovery, pep723
from pyrepro.scan.metadata import README_NAMES, is_conda_environment, readme_commands
from pyrepro.scan.shell import is_dockerfile, logical_lines
from pyrepro.types import Location

# How every reason for a Python chosen without evidence begins (reproduce moves only such a Python).
NO_EVIDENCE = "no Python stated"
# How strong each kind of evidence is (lower wins).
RANK = {"pin": 0, "notebook": 1, "python2": 2, "range": 3}

_VERSION = r"([23])\.(\d{1,2})(?:\.\d+)?"
# `conda create -n x python=3.7 ...` (a shell script's or a README's install command)
_CONDA_PYTHON = re.compile(rf"\b(?:conda|mamba|micromamba)\s+(?:create|install)\b.*\bpython\s*=+\s*{_VERSION}")


@dataclass(frozen=True)
class Evidence:
    version: str  # major.minor
    kind: str  # pin | notebook | python2 | range
    location: Location
    text: str  # what was read
    spec: str = ""  # a range's specifier set (requires-python >=3.6,<4); "" for the other kinds

    def __str__(self) -> str:
        return f"{self.location}: {self.text}"


@dataclass(frozen=True)
class PythonChoice:
    version: str
    reason: str
    evidence: tuple[Evidence, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"version": self.version, "reason": self.reason,
                "evidence": [{"version": e.version, "kind": e.kind, "location": e.location.to_json(), "text": e.text}
                             for e in self.evidence]}


def _mm(major: str, minor: str) -> str:
    return f"{major}.{int(minor)}"


def _lines(path: Path) -> list[str]:
    try:
        return decode_text(path.read_bytes()).splitlines()
    except OSError:
        return []


def _rel(p: Path, root: Path) -> str:
    try:
        return p.relative_to(root).as_posix()
    except ValueError:
        return p.name


def python_evidence(folder: Path, *, python2: Sequence[Location] = ()) -> tuple[Evidence, ...]:
    """Every statement of a Python version in the folder (files at any depth, hidden folders and
    virtual environments skipped), strongest first."""
    found: list[Evidence] = []
    root = Path(folder)
    files = [root] if root.is_file() else sorted(
        p for p in root.rglob("*") if p.is_file() and not any(
            (part.startswith(".") and part != ".python-version") or part in ("venv", ".venv", "node_modules",
                                                                          "__pycache__")
            for part in p.relative_to(root).parts))
    for p in files:
        name = p.name.lower()
        rel = _rel(p, root)
        if name in ("environment.yml", "environment.yaml") or (name.endswith((".yml", ".yaml")) and (
                "env" in name or is_conda_environment("\n".join(_lines(p))))):
            for n, line in enumerate(_lines(p), 1):
                r = re.match(r"^\s*-?\s*python\s*((?:>=|>|<=|<|!=)[^#\s]*(?:\s*,\s*[<>=!~]=?[^#\s,]*)*)", line)
                if r:  # a range (`python>=3.6`) bounds the choice; it states no version
                    e = _requires_python(f"requires-python = '{r.group(1)}'", Location(rel, n))
                    if e is not None:
                        found.append(replace(e, text=line.strip()))
                    continue
                m = re.match(rf"^\s*-?\s*python\s*(?:==?|~=)?\s*{_VERSION}", line)
                if m:
                    found.append(Evidence(_mm(m.group(1), m.group(2)), "pin", Location(rel, n), line.strip()))
        elif name.endswith((".yml", ".yaml")):
            # MatBench Discovery's model file: environment.python_version, what `uv run --python` is given
            stated = matbench_discovery.python_statement("\n".join(_lines(p)))
            if stated is not None and (m := re.match(rf"^v?{_VERSION}$", stated[0])):
                found.append(Evidence(_mm(m.group(1), m.group(2)), "pin", Location(rel, stated[1]),
                                      f"python_version: {stated[0]}"))
        elif name.endswith(".py") and name != "setup.py":
            # PEP 723 inline script metadata: `# requires-python = ">=3.12,<3.13"` (a pin or a range)
            try:
                data = p.read_bytes()
            except OSError:
                continue
            text = decode_text(data) if pep723.MARKER.encode() in data else ""
            if text and (rp := pep723.requires_python(text)) is not None:
                e = _requires_python(f"requires-python = '{rp[0]}'", Location(rel, rp[1]))
                if e is not None:
                    found.append(replace(e, text=f"# /// script requires-python = {rp[0]!r}"))
        elif name.startswith("requirements") and name.endswith(".txt"):
            # a conda list (`conda list --export`: python=3.6.8=h0371630_0) or a pip line python==3.7
            for n, line in enumerate(_lines(p), 1):
                m = re.match(rf"^\s*python\s*={{1,2}}\s*{_VERSION}(?:[.=\s]|$)", line)
                if m:
                    found.append(Evidence(_mm(m.group(1), m.group(2)), "pin", Location(rel, n), line.strip()))
        elif name == "runtime.txt" or name == ".python-version":
            for n, line in enumerate(_lines(p), 1):
                m = re.match(rf"^\s*(?:python-)?{_VERSION}\s*$", line)
                if m:
                    found.append(Evidence(_mm(m.group(1), m.group(2)), "pin", Location(rel, n), line.strip()))
        elif name in ("setup.py", "setup.cfg", "pyproject.toml"):
            section = ""
            for n, line in enumerate(_lines(p), 1):
                if name == "pyproject.toml" and (h := re.match(r"^\s*\[([^\]]+)\]", line)):
                    section = h.group(1).strip()
                if (e := _requires_python(line, Location(rel, n))) is not None:
                    found.append(e)
                elif section == "tool.poetry.dependencies" and (
                        q := re.match(r"^\s*python\s*=\s*['\"]([^'\"]+)['\"]", line)) and (
                        e := _requires_python(f"requires-python = '{_poetry_spec(q.group(1))}'",
                                              Location(rel, n))) is not None:
                    found.append(replace(e, text=line.strip()))  # Poetry's requires-python (scgen: "^3.8")
        elif name in README_NAMES and rel.count("/") <= 1:
            # a README's install commands and requirement lists (metadata.readme_commands)
            for n, text, _block in readme_commands("\n".join(_lines(p))):
                m = _CONDA_PYTHON.search(text)
                m = m or re.match(rf"^python\s*(?:==?|~=)\s*{_VERSION}\s*$", text)
                if m:
                    found.append(Evidence(_mm(m.group(1), m.group(2)), "pin", Location(rel, n), text[:120]))
        elif name == "pipfile":
            for n, line in enumerate(_lines(p), 1):
                m = re.match(rf"^\s*python_(?:full_)?version\s*=\s*['\"]{_VERSION}['\"]", line)
                if m:
                    found.append(Evidence(_mm(m.group(1), m.group(2)), "pin", Location(rel, n), line.strip()))
        elif name.endswith((".sh", ".bash", ".slurm", ".sbatch", ".job", ".pbs")) or is_dockerfile(name):
            # a command continued over several lines (`conda install -y \` ... `python=3.7`) is one
            for n, line in logical_lines("\n".join(_lines(p))):
                stripped = line.strip()
                if stripped.startswith("#"):
                    continue
                m = _CONDA_PYTHON.search(line)
                m = m or re.search(r"\bpython([23])\.(\d{1,2})\s+\S+\.py\b", line)
                m = m or re.search(rf"\bmodule\s+load\s+python/{_VERSION}", line)
                # a Dockerfile built on the official Python image (`FROM python:3.8-slim`)
                m = m or re.match(rf"^FROM\s+(?:--\S+\s+)?(?:docker\.io/)?(?:library/)?python:{_VERSION}\b",
                                  stripped, re.I)
                if m:
                    found.append(Evidence(_mm(m.group(1), m.group(2)), "pin", Location(rel, n), stripped[:120]))
        elif name == "info.json" or name == "metadata.json":
            try:
                data = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            for text in _strings(data):
                m = re.match(rf"^\s*python\s*(?:==|=|>=|~=)?\s*{_VERSION}\s*$", text, re.I)
                if m:
                    found.append(Evidence(_mm(m.group(1), m.group(2)), "pin", Location(rel, None), text.strip()))
        elif name.endswith(".ipynb"):
            try:
                nb = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            meta = nb.get("metadata", {}) if isinstance(nb, dict) else {}
            info = meta.get("language_info", {}) if isinstance(meta, dict) else {}
            ver = info.get("version") if isinstance(info, dict) else None
            if isinstance(ver, str) and (m := re.match(rf"^{_VERSION}", ver)):
                found.append(Evidence(_mm(m.group(1), m.group(2)), "notebook", Location(rel, None),
                                      f"language_info.version {ver}"))
                continue
            kernel = meta.get("kernelspec", {}) if isinstance(meta, dict) else {}
            label = " ".join(str(kernel.get(k, "")) for k in ("name", "display_name")) if isinstance(kernel, dict) else ""
            if m := re.search(rf"(?:python|Python)\s*{_VERSION}", label):
                found.append(Evidence(_mm(m.group(1), m.group(2)), "notebook", Location(rel, None),
                                      f"kernelspec {label.strip()}"))
    for loc in python2[:1]:
        found.append(Evidence("2.7", "python2", loc, "Python 2 code"))
    return tuple(sorted(found, key=lambda e: (RANK[e.kind], e.location.path, e.location.line or 0)))


def _poetry_spec(text: str) -> str:
    """Poetry's version constraint as a PEP 440 specifier set: ``^3.8`` -> ``>=3.8,<4.0``, ``~3.8``
    -> ``>=3.8,<3.9``, a bare ``3.8`` -> ``==3.8``, ``*`` -> ``""``; anything else as written."""
    t = text.strip()
    if t in ("*", ""):
        return ""
    if m := re.fullmatch(r"\^\s*(\d+)(?:\.(\d+))?(?:\.\d+)?", t):
        return f">={m.group(1)}.{m.group(2) or 0},<{int(m.group(1)) + 1}.0"
    if m := re.fullmatch(r"~\s*(\d+)\.(\d+)(?:\.\d+)?", t):
        return f">={m.group(1)}.{m.group(2)},<{m.group(1)}.{int(m.group(2)) + 1}"
    if re.fullmatch(r"\d+\.\d+(?:\.\d+)?", t):
        return f"=={t}"
    return t


def _requires_python(line: str, where: Location) -> Evidence | None:
    """``python_requires``/``requires-python`` on one line: a pin when it names one minor
    (``==3.8``, ``==3.8.*``, ``~=3.8.0``), else a range (``>=2.7, !=3.0.*, <4`` is no statement that
    the code is Python 2: it bounds the choice, see ``choose_python``). None when unreadable."""
    m = re.search(r"(?:python_requires|requires-python)\s*=\s*(?:['\"]([^'\"]*)['\"]|([^#\n]+))", line)
    if not m:
        return None
    text = (m.group(1) if m.group(1) is not None else m.group(2)).strip().rstrip(",)").strip()
    try:
        spec = SpecifierSet(text)
    except InvalidSpecifier:
        return None
    specs = list(spec)
    one = re.fullmatch(rf"{_VERSION}(?:\.\*)?", specs[0].version) if len(specs) == 1 else None
    if one and (specs[0].operator == "==" or (specs[0].operator == "~=" and specs[0].version.count(".") == 2)):
        return Evidence(_mm(one.group(1), one.group(2)), "pin", where, line.strip())
    lows = [re.match(r"(\d+)(?:\.(\d+))?", x.version) for x in specs if x.operator in (">=", ">", "~=", "==")]
    low = next((f"{g.group(1)}.{g.group(2) or 0}" for g in lows if g), "")
    return Evidence(low, "range", where, line.strip(), spec=str(spec)) if specs else None


def in_range(version: str, spec: str) -> bool:
    """Whether a ``major.minor`` Python is allowed by a requires-python range (any patch release)."""
    s = SpecifierSet(spec)
    return any(s.contains(f"{version}.{patch}", prereleases=True) for patch in (0, 1, 2, 99))


def _strings(obj: object) -> Iterable[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(k, str) and k.lower() in ("python", "python_version") and isinstance(v, (str, int, float)):
                yield f"python=={v}"
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


WheelCheck = Callable[[str, str, str], bool | None]  # (distribution, version, python) -> has a wheel? None: unknown


def stdlib_bounds(uses: Sequence[Any]) -> tuple[str, str, str]:
    """(lowest, highest, what) Python the code's standard-library imports allow (``scan.StdlibUse``:
    ``import imp`` allows 3.11 at the newest, ``import tomllib`` 3.11 at the oldest), and uses of APIs a
    later series removed (``scan.ApiUse``: ``tf.placeholder`` allows 3.7 at the newest). Imports
    behind a guard, and modules the reviewed name table maps to a replacement on PyPI
    (``distutils`` -> setuptools), are no evidence. ``what`` names the imports that bound."""
    from pyrepro.resolve import _mapping

    replaced = _mapping()[0]
    lo, hi = RELEASES[0][0], NEWEST
    said: list[str] = []
    for u in uses:
        if u.optional or u.module in replaced:
            continue
        if not u.last:
            continue
        if version_key(u.first) > version_key(lo) or version_key(u.last) < version_key(hi):
            said.append(u.bound() if hasattr(u, "bound") else
                        f"{u.location} imports {u.module} (standard library of Python {u.first}-{u.last} only)")
        lo = max(lo, u.first, key=version_key)
        hi = min(hi, u.last, key=version_key)
    return lo, hi, "; ".join(dict.fromkeys(said))


def choose_python(evidence: Sequence[Evidence], *, submitted: dt.date | None = None,
                  pins: Sequence[tuple[str, str]] = (), wheel_check: WheelCheck | None = None,
                  stdlib_uses: Sequence[Any] = (), python3_code: bool = True) -> PythonChoice:
    """The Python to lock and run with, and why (see the module docstring). ``pins``: the
    submission's exact pins (name, version); ``stdlib_uses``: the scan's imports of standard-library
    modules only some Pythons have, which bound the choice when nothing states a Python;
    ``python3_code``: some of the code parses only as Python 3 (False lets exact pins that only
    Python 2 installs choose 2.7)."""
    lo, hi, said = stdlib_bounds(stdlib_uses)
    ranges = [e for e in evidence if e.kind == "range"]
    evidence = [e for e in evidence if e.kind != "range"]
    if evidence:
        choice = _stated(evidence, lo, hi, said)
        off = [str(e) for e in ranges if choice.version.startswith("3.") and not in_range(choice.version, e.spec)]
        clashes = said and not version_key(lo) <= version_key(choice.version) <= version_key(hi)
        both = [v for v, _r in RELEASES if all(in_range(v, e.spec) for e in ranges)
                and version_key(lo) <= version_key(v) <= version_key(hi)]
        if off and clashes and both:
            # the submission's own metadata and its code agree against a Python it states elsewhere
            # (scgen 2023: docs say `conda create python=3.7`; pyproject.toml's python = ">=3.8" and the
            # code's typing.Literal both need 3.8): the nearest Python both allow
            above = [v for v in both if version_key(v) > version_key(choice.version)]
            took = above[0] if above else both[-1]
            return PythonChoice(took, f"{choice.reason}; but {'; '.join(off)} does not allow it, nor does the code "
                                      f"({said}): took {took}, the nearest Python both allow", choice.evidence)
        if off:
            choice = PythonChoice(choice.version, f"{choice.reason}; but {'; '.join(off)} does not allow it: a stated "
                                                  "Python is kept, check it", choice.evidence)
        return _targeted(choice)
    candidates = settled_pythons(submitted)
    if not candidates:
        candidates = [RELEASES[0][0]]
    released_by = [v for v, r in RELEASES if submitted is None or r <= submitted]
    if submitted is None:
        bound = "pyrepro supports (no submission date)"
    elif len(candidates) < len(released_by):
        bound = (f"out for {ADOPTION_LAG.days} days by the submission date {submitted} ({released_by[-1]} was "
                 "too new for the wheels of its time)")
    else:
        bound = f"released before the submission date {submitted}"
    if ranges:
        allowed = [v for v in candidates if all(in_range(v, e.spec) for e in ranges)]
        where = "; ".join(str(e) for e in ranges)
        if not allowed:  # the date predates the oldest Python the range allows: that one
            allowed = [v for v, _r in RELEASES if all(in_range(v, e.spec) for e in ranges)][:1]
        if allowed:
            candidates = allowed
            bound += f", within the stated range ({where})"
        else:
            bound += f" (no Python pyrepro targets is in the stated range: {where})"
    py2 = not python3_code and not ranges and version_key(lo) <= version_key(RELEASES[0][0]) and \
        (submitted is None or submitted <= PYTHON2_LAST)
    return _by_date(candidates, bound, lo, hi, said, pins, wheel_check, python2_possible=py2)


# CPython 2.7's last release (2.7.18): a submission dated later than that is no Python 2 one
PYTHON2_LAST = dt.date(2020, 4, 20)


def _targeted(choice: PythonChoice) -> PythonChoice:
    """A stated Python 3 older than any pyrepro targets (a notebook last run on 3.5.2) becomes the
    oldest targeted one: code written for 3.5 runs on 3.6, and no lock or interpreter exists for 3.5."""
    oldest = RELEASES[0][0]
    if not choice.version.startswith("3.") or version_key(choice.version) >= version_key(oldest):
        return choice
    return PythonChoice(oldest, f"{choice.reason}; Python {choice.version} is older than any pyrepro targets: "
                                f"took {oldest}, the oldest it targets", choice.evidence)


def _stated(evidence: Sequence[Evidence], lo: str, hi: str, said: str) -> PythonChoice:
    """The choice among a submission's own statements of its Python (pins, notebooks, Python 2 code)."""
    if evidence:
        best = evidence[0]
        same = [e for e in evidence if e.kind == best.kind]
        versions = sorted({e.version for e in same}, key=lambda v: tuple(map(int, v.split("."))))
        clash = ""
        if said and best.version.startswith("3.") and not version_key(lo) <= version_key(versions[0]) <= version_key(hi):
            clash = f"; but {said}: a stated Python is kept, check it"
        if len(versions) > 1:  # several pins disagree: the oldest (code written for it runs there)
            py3 = [v for v in versions if not v.startswith("2.")]
            # a Python 2 file beside Python 3 ones is a leftover (one notebook last run on a 2.7 kernel
            # among many on 3.6): the submission as a whole runs on Python 3, so the oldest 3.x
            chosen = py3[0] if py3 else versions[0]
            took = f"took the oldest, {chosen}" if chosen == versions[0] else \
                f"took the oldest Python 3, {chosen} (Python 2 files beside Python 3 ones are leftovers)"
            targeted = [v for v in py3 if version_key(v) >= version_key(RELEASES[0][0])]
            top = _top_level_statement(same)
            if best.kind != "notebook" and top is not None:
                chosen = top
                took = (f"took {chosen}, which the folder's top-level files state (files in its sub-folders "
                        "speak for their part: examples, evaluation tools)")
            elif best.kind == "notebook" and targeted:
                # kernels the notebooks last ran on: the one most of them name (ties: the oldest),
                # never one pyrepro cannot target when another is named (one notebook on 3.5.2
                # among 3.7.1 and 3.6.8 ones: SMACT's examples)
                counts = {v: sum(1 for e in same if e.version == v) for v in targeted}
                chosen = max(targeted, key=lambda v: (counts[v], [-x for x in version_key(v)]))
                took = (f"took the one most notebooks name, {chosen} ({counts[chosen]} of {len(same)})"
                        if len(set(counts.values())) > 1 or len(targeted) == 1 else f"took the oldest, {chosen}")
            where = "; ".join(str(e) for e in same)
            return PythonChoice(chosen, f"the submission's files disagree ({where}); {took}{clash}",
                                tuple(evidence))
        return PythonChoice(best.version, f"{best.location}: {best.text}{clash}", tuple(evidence))
    raise ValueError("no statement of a Python")


def _top_level_statement(same: Sequence[Evidence]) -> str | None:
    """The one Python 3 the shallowest of disagreeing statements (the folder's top-level files)
    agree on while deeper ones state others, or None. hydrodl (corpus14 dev): README.md and
    environment.yml say 3.10, whose pins (matplotlib==3.8.0) need >=3.9, and an example's
    example/multiscale/hydroDL-rel.yml says 3.7; the oldest, 3.7, locked nothing. pocket2mol: the
    top-level files say 3.8, evaluation/env_adt.yml 2.7."""
    depth = {e: e.location.path.count("/") for e in same}
    least = min(depth.values())
    shallow = {e.version for e in same if depth[e] == least}
    if len(shallow) != 1 or all(d == least for d in depth.values()):
        return None
    only = next(iter(shallow))
    return only if only.startswith("3.") else None


def _by_date(candidates: list[str], bound: str, lo: str, hi: str, said: str, pins: Sequence[tuple[str, str]],
             wheel_check: WheelCheck | None, *, python2_possible: bool = False) -> PythonChoice:
    """The choice when nothing states a Python: the newest of ``candidates`` (by date, within any
    stated range) the standard-library imports allow, with wheels for the exact pins. When no
    Python 3 has them all and 2.7 does (``python2_possible``: no code only Python 3 parses, no range,
    a date before 2.7's end), 2.7: pins that only Python 2 installs are a Python 2 environment's
    freeze (graphsage, corpus16 dev: futures==3.2.0, enum34, funcsigs, backports.weakref beside
    tensorflow==1.8.0, and code that parses as both)."""
    if said:
        allowed = [v for v in candidates if version_key(lo) <= version_key(v) <= version_key(hi)]
        if not allowed and version_key(lo) <= version_key(hi):  # the date predates the Python the code needs
            allowed = [v for v, _r in RELEASES if version_key(lo) <= version_key(v) <= version_key(hi)][:1]
        if allowed:
            candidates = allowed
            bound += f", within {lo}-{hi} ({said})"
        else:
            bound += f" (the standard-library imports contradict each other: {said})"
    if pins and wheel_check is not None:
        scores: list[tuple[int, str, list[str]]] = []
        for v in reversed(candidates):
            missing = []
            unknown = 0
            for name, version in pins:
                has = wheel_check(name, version, v)
                if has is None:
                    unknown += 1
                elif not has:
                    missing.append(f"{name}=={version}")
            if unknown == len(pins):
                break  # the index could not be asked: decide by date
            if not missing:
                return PythonChoice(v, f"{NO_EVIDENCE}; the newest CPython {bound} with wheels for all "
                                       f"{len(pins)} exact pins")
            scores.append((len(missing), v, missing))
        if scores:
            _n, v, missing = min(scores, key=lambda s: s[0])  # newest first, so ties keep the newest
            if python2_possible and all(wheel_check(name, version, "2.7") is not False for name, version in pins):
                return PythonChoice("2.7", f"{NO_EVIDENCE}; no CPython 3 {bound} has wheels for every exact pin "
                                           f"({v} lacks the fewest: {', '.join(missing)}), and 2.7 has them all: "
                                           "the pins are a Python 2 environment's")
            return PythonChoice(v, f"{NO_EVIDENCE}; no CPython {bound} has wheels for every exact pin; "
                                   f"{v} lacks the fewest ({', '.join(missing)})")
    return PythonChoice(candidates[-1], f"{NO_EVIDENCE}; the newest CPython {bound}")


# ------------------------------------------------------------------------------------------ date

@dataclass(frozen=True)
class DateChoice:
    day: dt.date | None
    reason: str  # where the date comes from ("" when there is none)


def stated_date(folder: Path) -> tuple[dt.date | None, str]:
    """The date the submission's metadata states (``metadata.json`` ``date_submitted``, MM-DD-YYYY
    or ISO; ``info.json`` ``date``; a model-metadata YAML's ``date_added`` or ``dates.benchmark_added``,
    else its paper's day: ``YAML_DATE_KEYS``), with where it was read."""
    for fname, key in (("metadata.json", "date_submitted"), ("info.json", "date")):
        p = Path(folder) / fname
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        raw = data.get(key) if isinstance(data, dict) else None
        if not isinstance(raw, str):
            continue
        m = re.match(r"^(\d{2})-(\d{2})-(\d{4})$", raw.strip())
        try:
            day = dt.date(int(m.group(3)), int(m.group(1)), int(m.group(2))) if m else \
                dt.date.fromisoformat(raw.strip()[:10])
        except ValueError:
            continue
        return day, f"{fname} {key}: {raw.strip()}"
    return _yaml_date(Path(folder))


# model-metadata YAML keys that state when the submission was made, strongest first: the day the
# model was added to the benchmark (MatBench Discovery: ``date_added``, and ``dates.benchmark_added``
# since its 2026 schema), then the day its paper was published (``date_published``,
# ``dates.paper_published``), weaker: the code the benchmark ran may be newer or older than the paper
YAML_DATE_KEYS = ("date_added", "dates.benchmark_added", "date_submitted", "date", "date_published",
                  "dates.paper_published")
PAPER_DATE_KEYS = frozenset({"date_published", "dates.paper_published"})


def _yaml_date(folder: Path) -> tuple[dt.date | None, str]:
    """The date a model-metadata YAML file at the folder's top states (Matbench Discovery's
    ``<model>.yml`` ``date_added``). A folder serving several models has one file each: the newest
    date is taken, because a date bound there still admits every older file's pins."""
    from pyrepro.scan.metadata import parse_any_yml, parser_for, yaml_top

    found: list[tuple[dt.date, str]] = []
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix.lower() in (".yml", ".yaml") and p.is_file())
    except OSError:
        return None, ""
    for p in files:
        try:
            text = decode_text(p.read_bytes())
        except OSError:
            continue
        if parser_for(p.name) is not parse_any_yml or is_conda_environment(text):
            continue  # a conda environment file states no date
        top = yaml_top(text, {k.split(".")[0] for k in YAML_DATE_KEYS})
        for key in YAML_DATE_KEYS:
            raw: object = top
            for part in key.split("."):  # dates.benchmark_added: a key of the top-level dates mapping
                raw = next((v for k, v in raw.items() if str(k) == part), None) if isinstance(raw, dict) else None
            if isinstance(raw, str):
                try:
                    day = dt.date.fromisoformat(raw.strip()[:10])
                except ValueError:
                    continue
                weaker = " (the paper's day: the file states no day the model was added)" if key in PAPER_DATE_KEYS else ""
                found.append((day, f"{p.name} {key}: {raw.strip()}{weaker}"))
                break
    if not found:
        return None, ""
    day, why = max(found)
    return day, why + (f" (newest of {len(found)} model files)" if len(found) > 1 else "")


def git_date(folder: Path, *, runner: Any = None) -> tuple[dt.date | None, str]:
    """The day of the last commit that touched ``folder`` when it lies in a git work tree."""
    from pyrepro import proc

    run = runner or proc.run
    try:
        done = run(["git", "-C", str(folder), "log", "-1", "--format=%cs %h", "--", "."], check=False, timeout=30)
    except Exception:  # no git, or not a repository: no evidence
        return None, ""
    out = (getattr(done, "stdout", "") or "").strip().split()
    if getattr(done, "returncode", 1) != 0 or len(out) != 2:
        return None, ""
    try:
        return dt.date.fromisoformat(out[0]), f"the folder's last git commit ({out[1]}, {out[0]})"
    except ValueError:
        return None, ""


# A notebook's record of when it ran: Jupyter's per-cell execution times (``metadata.execution``,
# ``iopub.execute_input``...), papermill's start and end, and the timestamps that logging and
# TensorFlow print on stdout/stderr ("2021-03-01 12:34:56,789 - INFO"). Only a date with a time of
# day counts, and not exactly midnight: printed data (a pandas datetime column) is mostly dates or
# midnights, a log line almost never.
_RUN_STAMP = re.compile(r"(?<![\d-])((?:19|20)\d\d)-([01]\d)-([0-3]\d)[ T]([0-2]\d):([0-5]\d):([0-5]\d)")
NOTEBOOK_OLDEST = dt.date(2011, 12, 1)  # IPython 0.12, the first notebook format


def _stamp_days(text: str, today: dt.date) -> Iterable[dt.date]:
    for m in _RUN_STAMP.finditer(text):
        if m.group(4, 5, 6) == ("00", "00", "00"):
            continue
        try:
            day = dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            continue
        if NOTEBOOK_OLDEST <= day <= today:
            yield day


def notebook_date(folder: Path, *, today: dt.date | None = None) -> tuple[dt.date | None, str]:
    """The day the folder's notebooks last ran, from what they recorded (``_RUN_STAMP``): the
    newest such day over every notebook (outside hidden folders such as ``.ipynb_checkpoints``),
    with the notebook it came from. An unreadable notebook is no evidence."""
    today = today or dt.date.today()
    root = Path(folder)
    files = [root] if root.is_file() else sorted(
        p for p in root.rglob("*.ipynb")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts))
    best: tuple[dt.date, str, str] | None = None
    for p in files:
        try:
            nb = json.loads(p.read_text(encoding="utf-8", errors="replace"))
        except (OSError, ValueError, RecursionError):
            continue
        if not isinstance(nb, dict):
            continue
        found: list[tuple[dt.date, str]] = []
        meta = nb.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("papermill"), dict):
            for key in ("end_time", "start_time"):
                found += [(d, f"papermill {key}") for d in _stamp_days(str(meta["papermill"].get(key, "")), today)]
        cells = nb.get("cells")
        if not isinstance(cells, list):  # nbformat 3 keeps its cells in worksheets
            sheets = nb.get("worksheets")
            cells = [c for w in sheets if isinstance(w, dict) and isinstance(w.get("cells"), list)
                     for c in w["cells"]] if isinstance(sheets, list) else []
        for cell in cells:
            if not isinstance(cell, dict):
                continue
            cmeta = cell.get("metadata")
            if isinstance(cmeta, dict) and isinstance(cmeta.get("execution"), dict):
                found += [(d, "a cell's execution time") for d in _stamp_days(json.dumps(cmeta["execution"]), today)]
            outputs = cell.get("outputs")
            for out in outputs if isinstance(outputs, list) else []:
                if isinstance(out, dict) and out.get("output_type") == "stream":
                    text = out.get("text", "")
                    text = "".join(text) if isinstance(text, list) else str(text)
                    found += [(d, "a timestamp its output printed") for d in _stamp_days(text, today)]
        if found:
            day, how = max(found)
            if best is None or day > best[0]:
                best = (day, _rel(p, root) if p != root else p.name, how)
    if best is None:
        return None, ""
    return best[0], f"the day its notebook last ran ({best[1]}: {best[2]}, {best[0]})"


def submission_date(folder: Path, *, pins: Sequence[tuple[str, str]] = (),
                    uploaded: Callable[[str, str], str | None] | None = None, runner: Any = None) -> DateChoice:
    """When the submission was made, strongest evidence first: the date its metadata states; the
    last git commit of its folder; the day its notebooks last ran (``notebook_date``); the newest
    upload day among its exact pins (it cannot be older than the newest release it pins;
    ``uploaded``: the index's PEP 700 upload day, None offline). A notebook's day older than that
    upload gives way to it (the pins were written later than the notebook ran).
    ``DateChoice(None, "")`` when nothing says."""
    day, why = stated_date(folder)
    if day is not None:
        return DateChoice(day, why)
    day, why = git_date(folder, runner=runner)
    if day is not None:
        return DateChoice(day, why)
    ran, ran_why = notebook_date(folder)
    pinned = _newest_pin_upload(pins, uploaded)
    if ran is not None:
        if pinned is not None and pinned.day is not None and pinned.day > ran:
            return DateChoice(pinned.day, f"{pinned.reason}; later than {ran_why}")
        return DateChoice(ran, f"no date stated; {ran_why}")
    return pinned or DateChoice(None, "")


#: how the reason of a date that only bounds the submission's time starts (its Python's end of life,
#: an API's removal): the code is older, by how much nobody says (``repair``'s era-of rules still apply)
BOUND_ONLY = "no date stated, only a bound: "
ERA_AFTER_EOL = dt.timedelta(days=365)  # a Python's end of life bounds an undated submission this long after


def python_era(python: str, python_reason: str, *, today: dt.date | None = None) -> DateChoice:
    """For a submission with no date evidence that states its Python: that Python's end of life
    (``interpreters.END_OF_LIFE``) as the date bound, when it is past. The code was written while
    its Python was maintained, so a release made after that day is no release its authors used
    (bo-benchmark 2021, Python 3.7 by its notebooks: pyDOE's 2026 releases use typing.Literal,
    which 3.7 lacks, and their metadata never said so). ``DateChoice(None, "")`` otherwise: a
    Python chosen without evidence, or one whose end of life is less than ``ERA_AFTER_EOL`` ago
    (it bounds next to nothing, and an undated submission keeps the finer rules that date it by
    the upload day of a release that fails, ``era-of-failing-release`` and ``-sdist``)."""
    from pyrepro.interpreters import END_OF_LIFE

    eol = END_OF_LIFE.get(python)
    if eol is None or python_reason.startswith(NO_EVIDENCE) or eol + ERA_AFTER_EOL >= (today or dt.date.today()):
        return DateChoice(None, "")
    return DateChoice(eol, f"{BOUND_ONLY}CPython {python}, the Python the submission states "
                           f"({python_reason[:120]}), reached its end of life on {eol}: nothing released later")


API_ERA_AFTER = dt.timedelta(days=365)  # how long after an API's removal code may still have used it


def api_era(uses: Sequence[Any]) -> DateChoice:
    """For a submission with no date evidence whose code uses an API a later release removed
    (``scan.ApiUse``: ``tf.placeholder``, gone in TensorFlow 2.0 of 2019-09-30): a year after the
    earliest such removal as the date bound; the code was written while the API still worked
    (deephpm, corpus9 dev: TensorFlow 1 code with nothing declared took pyDOE's release of 2026,
    which needs Python 3.8, beside TensorFlow 1.15 on 3.7). ``DateChoice(None, "")`` when no use
    says when its API was removed."""
    dated = []
    for u in uses:
        try:
            dated.append((dt.date.fromisoformat(u.removed), u))
        except (TypeError, ValueError):
            continue
    if not dated:
        return DateChoice(None, "")
    day, use = min(dated, key=lambda x: x[0])
    bound = day + API_ERA_AFTER
    return DateChoice(bound, f"{BOUND_ONLY}{use.location} uses {use.module}, removed on {day} ({use.reason}): "
                             f"nothing released more than a year after that")


#: how the reason of a date read from the newest upload among exact pins starts: a lower bound
PIN_UPLOAD = "no date stated; the newest upload among its"


#: how far past a pin-read date an import's first release may move it: a project first published
#: on PyPI years after its code was in use is a later packaging of it (apache-tvm of 2026 for
#: ``import tvm``), which says nothing of the submission's time
IMPORTS_FLOOR_REACH = dt.timedelta(days=3 * 365)


def imports_floor(when: DateChoice, imported: Sequence[tuple[str, str]],
                  first_upload: Callable[[str], str | None]) -> DateChoice:
    """A date read from the newest upload among the submission's exact pins (``PIN_UPLOAD``) is
    only a lower bound: the code is no older than what it imports either. When a distribution the
    code imports (``imported``: (distribution, where), the scan's required and resolved imports)
    had its first release on the index after that day, the date moves to the latest such first
    release (skip-thoughts, corpus14 held: theano==0.7 dated it 2015-03-26, and its keras code was
    then locked with keras 2.0.7, which asks for TensorFlow; keras's first release is of
    2015-10-11). Any other date (stated, a commit's, a notebook's run) is kept: the code ran by then.
    A first release more than ``IMPORTS_FLOOR_REACH`` later is not taken. ``first_upload``: the
    first upload day of a distribution on the index (None: unknown)."""
    if when.day is None or not when.reason.startswith(PIN_UPLOAD):
        return when
    later: list[tuple[dt.date, str, str]] = []
    for dist, where in imported:
        up = first_upload(dist)
        try:
            day = dt.date.fromisoformat((up or "")[:10])
        except ValueError:
            continue
        if when.day < day <= when.day + IMPORTS_FLOOR_REACH:
            later.append((day, dist, where))
    if not later:
        return when
    day, dist, where = max(later)
    return DateChoice(day, f"{when.reason}; moved to {day}: the code imports {dist} ({where}), whose first release "
                           f"on the index is of that day, and no submission is older than what it imports")


def _newest_pin_upload(pins: Sequence[tuple[str, str]],
                       uploaded: Callable[[str, str], str | None] | None) -> DateChoice | None:
    """The newest upload day among the exact ``pins`` (None offline or when none is known)."""
    if uploaded is not None and pins:
        days = []
        for name, version in pins:
            up = uploaded(name, version)
            if not up:
                continue
            try:
                days.append((dt.date.fromisoformat(up[:10]), name, version))
            except ValueError:
                continue
        if days:
            newest = max(days)
            return DateChoice(newest[0], f"{PIN_UPLOAD} {len(pins)} exact pins: "
                                         f"{newest[1]} {newest[2]} ({newest[0]})")
    return None


# ------------------------------------------------------------------------------------- benchmarks

_RESULT = re.compile(r"^(?P<cat>[A-Za-z]+)-(?P<task>[A-Za-z]+)-(?P<prop>.+)-(?P<data>[^-]+)-(?P<split>test|train|val)-"
                     r"(?P<metric>[a-z]+)\.csv\.zip$")


def benchmarks_of(folder: Path) -> tuple[tuple[str, str], ...]:
    """JARVIS-Leaderboard benchmarks a contribution answers, from its result files
    (``AI-SinglePropertyPrediction-exfoliation_energy-dft_3d-test-mae.csv.zip`` ->
    ``dft_3d_exfoliation_energy``): (benchmark, file), sorted."""
    out: dict[str, str] = {}
    try:
        names = sorted(p.name for p in Path(folder).iterdir() if p.is_file())
    except OSError:
        return ()
    for n in names:
        m = _RESULT.match(n)
        if m:
            out.setdefault(f"{m.group('data')}_{m.group('prop')}", n)
    return tuple(sorted(out.items()))


# ------------------------------------------------------------------------------------------- GPU

_GPU_WORDS = re.compile(r"\b(?:V100|A100|H100|P100|K80|T4|RTX|GTX|Tesla|CUDA|GPU)\b", re.I)


def gpu_evidence(folder: Path, *, distributions: Iterable[str] = ()) -> tuple[str, str]:
    """("optional", reason) when the submission shows it ran on a GPU (a CUDA-only distribution,
    ``#SBATCH --gres=gpu``, a GPU named in metadata), else ("none", reason). Never "required":
    whether the code has a CPU path is a reviewer's call."""
    cuda_dists = sorted(d for d in distributions if d.startswith(("cupy", "pycuda", "nvidia-")) or
                        d in ("tensorflow-gpu", "jax-cuda", "dgl-cu"))
    if cuda_dists:
        return "optional", f"CUDA-only distributions imported: {', '.join(cuda_dists)}"
    root = Path(folder)
    for p in sorted(root.glob("*")):
        if p.suffix in (".sh", ".slurm", ".sbatch", ".job", ".pbs") or p.name in ("run", "job"):
            for n, line in enumerate(_lines(p), 1):
                if re.search(r"--gres=gpu|--gpus|#PBS .*ngpus|CUDA_VISIBLE_DEVICES", line):
                    return "optional", f"{_rel(p, root)}:{n}: {line.strip()[:80]}"
        if p.name in ("metadata.json", "info.json"):
            try:
                data = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict):
                for key in ("hardware_used", "hardware", "compute"):
                    v = data.get(key)
                    if isinstance(v, str) and _GPU_WORDS.search(v):
                        return "optional", f"{p.name} {key}: {v.strip()[:80]}"
    return "none", "no GPU evidence (CUDA-only packages, GPU job requests, GPU hardware in the metadata)"
