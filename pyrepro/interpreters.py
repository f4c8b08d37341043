"""Find a CPython interpreter by ``major.minor`` (never a hard-coded path in tracked files).

Search order: ``$PYENV_ROOT/versions`` (default ``~/.pyenv/versions``), newest patch release
first; then ``python{major.minor}`` on ``PATH``; then ``python3`` on ``PATH`` if it reports
the wanted version. Every candidate is checked by running it (``sys.version_info``), so a
broken pyenv folder is skipped rather than used.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass
from pathlib import Path

from pyrepro import proc
from pyrepro.errors import MissingToolError, UsageError
from pyrepro.proc import Runner

_VERSION = re.compile(r"^(?:3\.\d+|2\.7)$")  # 2.7: locked by pip (pyrepro.piplock), built with virtualenv

# The one table of CPython minor versions pyrepro can target, with their first release date
# (python.org): init's choice (pyrepro.evidence), the repair planner's moves (pyrepro.repair) and
# doctor's check all read it.
RELEASES: tuple[tuple[str, dt.date], ...] = (
    ("3.6", dt.date(2016, 12, 23)), ("3.7", dt.date(2018, 6, 27)), ("3.8", dt.date(2019, 10, 14)),
    ("3.9", dt.date(2020, 10, 5)), ("3.10", dt.date(2021, 10, 4)), ("3.11", dt.date(2022, 10, 24)),
    ("3.12", dt.date(2023, 10, 2)), ("3.13", dt.date(2024, 10, 7)),
)
NEWEST = RELEASES[-1][0]

# The day each CPython minor reached its end of life (no more releases from its core developers;
# 3.10 on: the planned day). Code that states a minor was written while it was maintained.
END_OF_LIFE: dict[str, dt.date] = {
    "2.7": dt.date(2020, 1, 1), "3.6": dt.date(2021, 12, 23), "3.7": dt.date(2023, 6, 27),
    "3.8": dt.date(2024, 10, 7), "3.9": dt.date(2025, 10, 31), "3.10": dt.date(2026, 10, 31),
    "3.11": dt.date(2027, 10, 31), "3.12": dt.date(2028, 10, 31), "3.13": dt.date(2029, 10, 31),
}


# The first patch release of a minor that locks target, where it is not x.y.0, with the reason.
# Widely used packages declare python_requires on a minor's early bug-fix releases; a lock for
# every patch release of the minor (``==3.7.*``, which takes in 3.7.0, a release no one runs
# today) leaves out each of their releases: it fails, or quietly takes years-older ones.
PATCH_FLOORS: dict[str, tuple[str, str]] = {
    "3.6": ("3.6.8", "torch 1.7.1-1.10.2 declare python_requires>=3.6.2, pandas 0.25-1.1 >=3.6.1, pyparsing "
                     "3.1 >=3.6.8: with ==3.6.* torch stops at 1.7.0 (DGL 0.9 then refuses to import) and pandas "
                     "at 0.24, and from 3.6.2 a pyparsing==3.1.1 pin does not lock (ftcp-inverse, corpus11 dev)"),
    "3.7": ("3.7.1", "pandas 1.2-1.3 declare python_requires>=3.7.1; with ==3.7.* a pin like "
                     "pandas>=1.2.3 does not resolve (alignn 2021)"),
}


def lock_range(version: str) -> str:
    """The Python range a ``major.minor`` target is locked for (the pyproject's requires-python
    and pdm's ``--python``): ``==3.10.*``, or from the minor's floor in ``PATCH_FLOORS``
    (``>=3.7.1,<3.8``)."""
    floor = PATCH_FLOORS.get(version)
    if floor is None:
        return f"=={version}.*"
    major, minor = version_key(version)
    return f">={floor[0]},<{major}.{minor + 1}"


def first_patch(version: str) -> str:
    """The lowest full version a ``major.minor`` target is locked for (``3.7.1``, ``3.10.0``): the
    ``python_full_version`` that lock markers are evaluated with."""
    floor = PATCH_FLOORS.get(version)
    return floor[0] if floor else f"{version}.0"


def version_key(v: str) -> tuple[int, ...]:
    """``"3.10"`` -> ``(3, 10)``, for ordering Python versions."""
    return tuple(int(x) for x in v.split("."))


def python_of_day(day: dt.date) -> str | None:
    """The newest CPython minor version released on or before ``day`` (None: before 3.6)."""
    out = [v for v, released in RELEASES if released <= day]
    return out[-1] if out else None


# A new CPython waits months for the scientific stack's wheels (torch, tensorflow, scipy, pymatgen
# took about 4-6 months for 3.11 and 3.12): code submitted shortly after a release was written on
# the one before. Used only for a guess from the submission date, never for a stated Python.
ADOPTION_LAG = dt.timedelta(days=180)


def settled_pythons(day: dt.date | None) -> list[str]:
    """The CPython minor versions out for ``ADOPTION_LAG`` by ``day`` (all when ``day`` is None),
    oldest first; the ones released before ``day`` when none had been out that long."""
    if day is None:
        return [v for v, _r in RELEASES]
    settled = [v for v, released in RELEASES if released + ADOPTION_LAG <= day]
    return settled or [v for v, released in RELEASES if released <= day]


def era_pythons(python: str, day: dt.date | None, *, limit: int = 3) -> tuple[str, ...]:
    """The other CPython minors of a submission's era that a lock may move to (the pin search's
    Python variable, ``pyrepro.pinsearch``), nearest ``python`` first (older before newer at the same
    distance): the minors out on ``day`` whose end of life was not a year or more before it; undated,
    the older ones (an undated submission gets the newest CPython). At most ``limit``."""
    here = version_key(python)
    if day is None:
        cands = [v for v, _r in RELEASES if version_key(v) < here]
    else:
        cands = [v for v, released in RELEASES if v != python and released <= day
                 and END_OF_LIFE[v] + dt.timedelta(days=365) > day]
    return tuple(sorted(cands, key=lambda v: (abs(version_key(v)[1] - here[1]), version_key(v) > here)))[:limit]


@dataclass(frozen=True)
class Interpreter:
    path: Path
    version: str  # full, e.g. "3.10.13"
    origin: str  # "pyenv" | "path"


def _patch_key(p: Path) -> tuple[int, ...]:
    parts = p.name.split(".")
    return tuple(int(x) if x.isdigit() else -1 for x in parts)


def _probe(exe: Path, runner: Runner) -> str | None:
    try:
        res = runner([str(exe), "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"], timeout=30)
    except Exception:  # an interpreter that cannot start is simply not a candidate
        return None
    if getattr(res, "returncode", 1) != 0:
        return None
    out = (getattr(res, "stdout", "") or "").strip()
    return out if re.fullmatch(r"\d+\.\d+\.\d+", out) else None


def candidates(version: str) -> list[tuple[Path, str]]:
    """Paths that may be CPython ``version`` (unverified), in search order."""
    out: list[tuple[Path, str]] = []
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if root.is_dir():
        found = [d for d in root.glob(f"{version}.*") if re.fullmatch(rf"{re.escape(version)}\.\d+", d.name)]
        for d in sorted(found, key=_patch_key, reverse=True):
            exe = d / "bin" / "python"
            if exe.is_file():
                out.append((exe, "pyenv"))
    for name in (f"python{version}", "python3"):
        w = proc.which(name)
        if w:
            out.append((Path(w), "path"))
    return out


def find_interpreter(version: str, *, runner: Runner = proc.run) -> Interpreter:
    """The first working CPython ``version`` (``"3.10"``); MissingToolError names how to get it."""
    if not _VERSION.match(version):
        raise UsageError(f"python version must be major.minor like '3.10', got {version!r}")
    seen: set[Path] = set()
    tried = []
    for exe, origin in candidates(version):
        if exe in seen:
            continue
        seen.add(exe)
        full = _probe(exe, runner)
        tried.append(f"{exe} ({full or 'does not run'})")
        if full and full.rsplit(".", 1)[0] == version:
            return Interpreter(exe, full, origin)
    where = "; tried " + ", ".join(tried) if tried else ""
    raise MissingToolError(
        f"no Python {version} interpreter found (pyenv versions, python{version} or python3 on PATH){where}",
        hint=f"install it, e.g. 'pyenv install {version}' (or your distribution's python{version} package)",
    )


def find_python(version: str, *, runner: Runner = proc.run) -> Path:
    return find_interpreter(version, runner=runner).path
