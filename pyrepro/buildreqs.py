"""Build requirements of locked sdists, bounded by the submission's date.

An sdist is built as its authors would have built it: in PEP 517 isolation, with the build
requirements it declares (``[build-system] requires`` of its ``pyproject.toml``; without one,
pip's legacy default ``setuptools>=40.8.0`` and ``wheel``). Left alone, pip installs the newest
releases of those, which may postdate the submission by years (a 2020 ``setup.py`` built with a
2026 setuptools). ``constraints(...)`` pins each declared build requirement to its newest release
the index received before the date bound that still satisfies the declared specifier; the local
backend hands the result to pip as a constraints file for the isolated build only.

Sdists are read once from the index (PEP 691 listing: ``url`` and PEP 700 ``upload-time``) and
their build requirements cached under ``<cache>/index/build-requires/``. What cannot be known
(the index unreachable, no release before the date satisfies the specifier) stays unconstrained
and is said so in the returned notes. Only the declared build requirements are bounded, not what
they in turn require.
"""

from __future__ import annotations

import datetime as dt
import io
import tarfile
import tomllib
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass

from packaging.markers import InvalidMarker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from pyrepro.index import Index, _cache_read, _cache_write, _version_of

LEGACY = ("setuptools>=40.8.0", "wheel")  # pip's default for an sdist without [build-system]
MAX_SDIST = 200 * 1024 * 1024


@dataclass(frozen=True)
class Bounded:
    constraints: tuple[str, ...]  # "name==version" lines
    notes: tuple[str, ...]  # what was left unconstrained, and why


def read_build_requires(archive: bytes, filename: str) -> list[str] | None:
    """``[build-system] requires`` of an sdist (tar.gz/zip bytes), the legacy default when it has
    no pyproject.toml or no [build-system] table, None when the archive cannot be read."""
    text: str | None = None
    try:
        if filename.endswith(".zip"):
            with zipfile.ZipFile(io.BytesIO(archive)) as z:
                cands = sorted((n for n in z.namelist() if n.count("/") == 1 and n.endswith("/pyproject.toml")),
                               key=len)
                if cands:
                    text = z.read(cands[0]).decode("utf-8", "replace")
        else:
            with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as t:
                members = sorted((m for m in t.getmembers() if m.isfile() and m.name.count("/") == 1
                                  and m.name.endswith("/pyproject.toml")), key=lambda m: len(m.name))
                if members:
                    f = t.extractfile(members[0])
                    text = f.read().decode("utf-8", "replace") if f else None
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError):
        return None
    if text is None:
        return list(LEGACY)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return list(LEGACY)  # pip falls back the same way only for a missing table; a broken file fails there
    bs = data.get("build-system")
    if not isinstance(bs, dict) or not isinstance(bs.get("requires"), list):
        return list(LEGACY)
    return [str(r) for r in bs["requires"]]


def _build_requires(index: Index, name: str, version: str) -> list[str] | None:
    key = f"{canonicalize_name(name)}-{version}"
    path = index.cache / "index" / "build-requires" / f"{key}.json" if index.cache else None
    cached = _cache_read(path)
    if cached is not None:
        return cached
    proj = index._project(name)
    if not proj:
        return None
    sdists = [f for f in proj.get("files", []) if isinstance(f, dict)
              and str(f.get("filename", "")).endswith((".tar.gz", ".zip", ".tar.bz2"))
              and _version_of(str(f["filename"])) is not None and _same(_version_of(str(f["filename"])), version)]
    if not sdists or int(sdists[0].get("size") or 0) > MAX_SDIST:
        return None
    body = index.fetch(str(sdists[0].get("url", "")))
    if not body:
        return None
    reqs = read_build_requires(body, str(sdists[0]["filename"]))
    if reqs is not None and path is not None:
        _cache_write(path, reqs)
    return reqs


def _same(a: str | None, b: str) -> bool:
    try:
        return a is not None and Version(a) == Version(b)
    except InvalidVersion:
        return False


def admits_python(requires_python: object, python: str | None) -> bool:
    """Whether a file's ``requires-python`` admits CPython ``python`` (``"3.6"``): any patch
    release of it (``3.6.0`` or a late one). No Python, or no readable specifier, admits."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not python or not requires_python:
        return True
    try:
        sset = SpecifierSet(str(requires_python))
    except InvalidSpecifier:
        return True
    return any(sset.contains(f"{python}.{patch}", prereleases=True) for patch in (0, 99))


def _first_uploads(index: Index, name: str, spec: str, python: str | None) -> dict[Version, str]:
    """Final, unyanked releases of ``name`` satisfying ``spec`` with a file whose
    ``requires-python`` admits ``python``: the day each was first uploaded."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    proj = index._project(name)
    if not proj:
        return {}
    try:
        sset = SpecifierSet(spec)
    except InvalidSpecifier:
        return {}
    first: dict[Version, str] = {}
    runs: set[Version] = set()  # releases with a file for ``python``
    for f in proj.get("files", []):
        if not isinstance(f, dict) or f.get("yanked") or not f.get("upload-time"):
            continue
        v = _version_of(str(f.get("filename", "")))
        try:
            vv = Version(v) if v else None
        except InvalidVersion:
            vv = None
        if vv is None or vv.is_prerelease or vv.is_devrelease:
            continue
        day = str(f["upload-time"])[:10]
        if vv not in first or day < first[vv]:
            first[vv] = day
        if admits_python(f.get("requires-python"), python):
            runs.add(vv)
    return {v: day for v, day in first.items() if v in runs and sset.contains(v)}


def newest_before(index: Index, name: str, spec: str, bound: dt.date, python: str | None = None) -> str | None:
    """The newest final release of ``name`` first uploaded before ``bound`` that satisfies
    ``spec`` and (with ``python``) has a file whose ``requires-python`` admits that Python (a
    setuptools of 2023 pinned for a 3.6 build would not install), or None (unknown, or none)."""
    ok = [v for v, day in _first_uploads(index, name, spec, python).items() if day < bound.isoformat()]
    return str(max(ok)) if ok else None


def oldest_after(index: Index, name: str, spec: str, bound: dt.date, python: str | None = None) -> str | None:
    """When no release before ``bound`` satisfies ``spec``: the oldest that does (the one nearest
    the submission's era), under the same conditions as ``newest_before``; None when none does."""
    ok = [v for v, day in _first_uploads(index, name, spec, python).items() if day >= bound.isoformat()]
    return str(min(ok)) if ok else None


def constraints(index: Index, sdists: Sequence[tuple[str, str]], bound: dt.date, python: str,
                exclude: Sequence[str] = ()) -> Bounded:
    """Date-bounded pins for the declared build requirements of ``sdists`` ((name, version) each).
    ``exclude``: names never constrained (the sdists themselves: a constraint on a package being
    installed would fight the lock)."""
    env = {"python_version": python, "python_full_version": f"{python}.0", "sys_platform": "linux",
           "platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython",
           "os_name": "posix", "platform_python_implementation": "CPython"}
    skip = {canonicalize_name(n) for n in exclude}
    wanted: dict[str, list[str]] = {}
    notes: list[str] = []
    for name, version in sdists:
        reqs = _build_requires(index, name, version)
        if reqs is None:
            notes.append(f"{name} {version}: build requirements unknown (the index did not give its sdist); "
                         "unbounded")
            continue
        for r in reqs:
            try:
                req = Requirement(r)
            except InvalidRequirement:
                notes.append(f"{name} {version}: build requirement {r!r} is not PEP 508; unbounded")
                continue
            try:
                if req.marker is not None and not req.marker.evaluate(env):
                    continue
            except InvalidMarker:
                pass
            key = canonicalize_name(req.name)
            if key not in skip:
                wanted.setdefault(key, []).append(str(req.specifier))
    pins: list[str] = []
    for key in sorted(wanted):
        spec = ",".join(s for s in wanted[key] if s)
        v = newest_before(index, key, spec, bound, python)
        if v is None:
            # a build requirement newer than the era (pip's legacy setuptools>=40.8.0 for a 2018
            # sdist): its oldest release that satisfies it, not today's
            v = oldest_after(index, key, spec, bound, python)
            if v is None:
                notes.append(f"{key}{f' {spec}' if spec else ''}: no release satisfies it (or the index did not "
                             "say); unbounded")
                continue
            notes.append(f"{key}{f' {spec}' if spec else ''}: no release before {bound} satisfies it; its oldest "
                         f"that does, {v}")
        pins.append(f"{key}=={v}")
    return Bounded(tuple(pins), tuple(notes))


__all__ = ["LEGACY", "Bounded", "constraints", "newest_before", "oldest_after", "read_build_requires"]
