"""Questions to the package index (PyPI's simple API, PEP 691 JSON), answered once and cached.

``has_wheel(name, version, python)``: does that release have a wheel a Linux x86_64 CPython
``python`` can install? True/False, or None when the index cannot be asked or the release ships
no wheels at all (an sdist-only release says nothing about Python versions). Responses are kept
in ``<cache>/index/`` (a release's files never change), so a second ask is offline.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

INDEX = os.environ.get("PYREPRO_INDEX_SIMPLE", "https://pypi.org/simple")
Fetch = Callable[[str], bytes | None]  # url -> body, None when unreachable / not found
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"  # PEP 691


NAMES_DAYS = 30  # how long the index's list of project names is kept before it is read again


def parse_project_names(body: bytes) -> list[str]:
    """Normalised project names of a simple API root page: PEP 691 JSON (``projects``) or the
    HTML form (one ``<a href="name/">`` each); [] when it is neither."""
    text = body.decode("utf-8", "replace")
    with contextlib.suppress(ValueError):
        data = json.loads(text)
        if isinstance(data, dict) and isinstance(data.get("projects"), list):
            return sorted({canonicalize_name(str(p.get("name", ""))) for p in data["projects"]
                           if isinstance(p, dict) and p.get("name")})
    return sorted({canonicalize_name(n) for n in re.findall(r'<a href="([^"/<>]+)/?"', text) if n.strip()})


def _urllib_fetch(url: str) -> bytes | None:
    try:
        req = urllib.request.Request(url, headers={"Accept": SIMPLE_JSON})
        with urllib.request.urlopen(req, timeout=30) as r:
            body: bytes = r.read()
            return body
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _cache_read(path: Path | None) -> list | None:
    """An answer kept in the index cache, or None (not there, or unreadable: ask again)."""
    if path is None or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, list) else None


def _cache_write(path: Path, data: object) -> None:
    """Keep an answer in the index cache; a cache that cannot be written is asked again next time."""
    from pyrepro.fsutil import atomic_write_text

    with contextlib.suppress(OSError):
        atomic_write_text(path, json.dumps(data))


_SDIST_ENDINGS = (".tar.gz", ".zip", ".tar.bz2", ".tgz", ".tar.xz", ".tar")


def _version_text(filename: str) -> str:
    """The version part of a wheel's or sdist's file name as written ("" when the name has none):
    the wheel's second field, the sdist's text after its last "-". Read by splitting, as a project
    of thousands of files is grouped by it; ``Version`` then parses each distinct text once."""
    if filename.endswith(".whl"):
        parts = filename[:-4].split("-")
        return parts[1] if len(parts) in (5, 6) else ""
    for ending in _SDIST_ENDINGS:
        if filename.endswith(ending):
            name, _sep, version = filename[: -len(ending)].rpartition("-")
            return version if name else ""
    return ""


@functools.lru_cache(maxsize=1 << 17)
def _version_of(filename: str) -> str | None:
    from packaging.utils import InvalidSdistFilename, parse_sdist_filename

    try:
        if filename.endswith(".whl"):
            return str(parse_wheel_filename(filename)[1])
        return str(parse_sdist_filename(filename)[1])
    except (InvalidWheelFilename, InvalidSdistFilename, ValueError):
        return None


class Index:
    def __init__(self, cache: Path | None, fetch: Fetch | None = None) -> None:
        self.cache = cache
        self.fetch = fetch or _urllib_fetch
        self._projects: dict[str, dict | None] = {}
        self._versions: dict[str, dict[object, list[dict]]] = {}
        self._names: list[str] | None = None

    def _project(self, name: str) -> dict | None:
        """The project's PEP 691 listing, asked once per Index."""
        key = canonicalize_name(name)
        if key not in self._projects:
            body = self.fetch(f"{INDEX}/{key}/")
            try:
                data = json.loads(body) if body else None
            except ValueError:
                data = None
            self._projects[key] = data if isinstance(data, dict) else None
        return self._projects[key]

    def _by_version(self, name: str) -> dict[object, list[dict]]:
        """The project's file entries grouped by parsed version, built once per Index: a lock of
        300 packages asks each release's hashes and Requires-Python, and parsing every file name
        of a project with thousands of files at each question took most of a minute (chemcrow,
        corpus13 held: 318 packages)."""
        from packaging.version import InvalidVersion, Version

        key = canonicalize_name(name)
        if key not in self._versions:
            by_text: dict[str, list[dict]] = {}  # each distinct version text is parsed once
            for f in (self._project(name) or {}).get("files", []):
                if isinstance(f, dict):
                    text = _version_text(str(f.get("filename", "")))
                    if text:
                        by_text.setdefault(text, []).append(f)
            grouped: dict[object, list[dict]] = {}
            for text, files in by_text.items():
                try:
                    grouped.setdefault(Version(text), []).extend(files)
                except InvalidVersion:
                    continue
            self._versions[key] = grouped
        return self._versions[key]

    def release_files(self, name: str, version: str) -> list[str] | None:
        """File names of one release, or None when unknown."""
        key = f"{canonicalize_name(name)}-{version}"
        path = self.cache / "index" / f"{key}.json" if self.cache else None
        cached = _cache_read(path)
        if cached is not None:
            return cached
        if self._project(name) is None:
            return None
        from packaging.version import InvalidVersion, Version

        try:
            want = Version(version)
        except InvalidVersion:
            return None
        files = [str(f["filename"]) for f in self._by_version(name).get(want, []) if "filename" in f]
        if not files:
            return None  # no such release: nothing to say
        if path is not None:
            _cache_write(path, files)
        return files

    def _release(self, name: str, version: str) -> list[dict]:
        """The PEP 691 file entries of ``name==version`` ([] when none or the index cannot say)."""
        from packaging.version import InvalidVersion, Version

        try:
            want = Version(version)
        except InvalidVersion:
            return []
        return list(self._by_version(name).get(want, []))

    def file_hashes(self, name: str, version: str) -> list[tuple[str, str]]:
        """(file name, "sha256:<hex>") of every file of ``name==version`` the index lists with a
        sha256 (PEP 691 ``hashes``); [] when none or the index cannot be asked."""
        return [(str(f["filename"]), f"sha256:{f['hashes']['sha256']}") for f in self._release(name, version)
                if isinstance(f.get("hashes"), dict) and f["hashes"].get("sha256")]

    def requires_python(self, name: str, version: str) -> str | None:
        """The ``Requires-Python`` the index gives for ``name==version`` (PEP 691 per file; the
        first a file states), or None when it states none."""
        return next((str(f["requires-python"]) for f in self._release(name, version) if f.get("requires-python")),
                    None)

    def uploaded(self, name: str, version: str) -> str | None:
        """The day (ISO) the index first received a file of ``name==version`` (PEP 700
        ``upload-time``), or None when the index does not say."""
        days = [str(f["upload-time"])[:10] for f in self._release(name, version) if f.get("upload-time")]
        return min(days) if days else None

    def first_upload(self, name: str) -> str | None:
        """The day (ISO) the index first received a release of ``name`` (``releases_by``'s earliest),
        or None when it has none or cannot say."""
        days = [day for _v, day in self.releases_by(name, None)]
        return min(days) if days else None

    def releases_by(self, name: str, day: dt.date | None = None) -> list[tuple[str, str]]:
        """(version, first upload day) of every final release of ``name`` the index received by
        ``day`` (None: any day), newest version first; yanked files left out. A project that never
        had a final release is read by its pre-releases, as pip takes them when nothing else
        matches (pydensecrf: 1.0rc2 and 1.0rc3 only; attention-gated, corpus13 dev)."""
        from packaging.version import InvalidVersion, Version

        seen: list[tuple[Version, str]] = []
        for f in (self._project(name) or {}).get("files", []):
            if not isinstance(f, dict) or f.get("yanked") or not f.get("upload-time"):
                continue
            v = _version_of(str(f.get("filename", "")))
            try:
                seen.append((Version(v or ""), str(f["upload-time"])[:10]))
            except InvalidVersion:
                continue
        finals = any(not ver.is_prerelease for ver, _up in seen)
        first: dict[Version, str] = {}
        for ver, up in seen:
            if (ver.is_prerelease and finals) or (day is not None and up > day.isoformat()):
                continue
            first[ver] = min(first.get(ver, up), up)
        return [(str(v), first[v]) for v in sorted(first, reverse=True)]

    def project_names(self) -> list[str] | None:
        """Every project name on the index (normalised), read from the simple API's root page
        (PEP 691 JSON, or the HTML page PyPI may serve instead): asked once per Index and kept
        for ``NAMES_DAYS`` days in ``<cache>/index/project-names.txt``; None when it cannot be
        had. About a million names, 40 MB to download once."""
        if self._names is not None:
            return self._names or None
        path = self.cache / "index" / "project-names.txt" if self.cache else None
        if path is not None and path.is_file() and \
                dt.datetime.now().timestamp() - path.stat().st_mtime < NAMES_DAYS * 86400:
            with contextlib.suppress(OSError):
                self._names = path.read_text(encoding="utf-8").split()
                return self._names or None
        body = self.fetch(f"{INDEX}/")
        names = parse_project_names(body) if body else []
        if names and path is not None:
            from pyrepro.fsutil import atomic_write_text

            with contextlib.suppress(OSError):
                atomic_write_text(path, "\n".join(names) + "\n")
        self._names = names
        return names or None

    def has_wheel(self, name: str, version: str, python: str) -> bool | None:
        files = self.release_files(name, version)
        if files is None:
            return None
        wheels = [f for f in files if f.endswith(".whl")]
        if not wheels:
            return None
        return any(wheel_fits(f, python) for f in wheels)


def wheel_fits(filename: str, python: str, machine: str = "x86_64") -> bool:
    """A wheel file name installable by CPython ``python`` (major.minor) on Linux ``machine``."""
    try:
        _name, _ver, _build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return False
    major, minor = (int(x) for x in python.split("."))
    for t in tags:
        plat = t.platform
        if not (plat == "any" or (plat.startswith(("manylinux", "musllinux", "linux")) and plat.endswith(machine))):
            continue
        if plat.startswith("musllinux"):
            continue
        interp, abi = t.interpreter, t.abi
        if abi == "cp27m":  # the narrow (UCS2) build's; CPython 2.7 on Linux is cp27mu
            continue
        if interp in (f"py{major}", f"py{major}{minor}") or interp == "py2.py3":
            return True
        m = re.fullmatch(r"cp(\d)(\d+)", interp)
        if m and int(m.group(1)) == major:
            if int(m.group(2)) == minor:
                return True
            if abi == "abi3" and int(m.group(2)) <= minor:
                return True
    return False


# ------------------------------------------------------------------ what a wheel ships (top level)

RangeFetch = Callable[[str, int, int | None], bytes | None]  # url, start (<0: suffix), length -> body


def _urllib_range(url: str, start: int, length: int | None) -> bytes | None:
    """Bytes of ``url``: the last ``-start`` bytes when ``start < 0``, else ``length`` bytes from
    ``start``. A server that ignores ranges is read only up to 64 MiB."""
    rng = f"bytes={start}" if start < 0 else f"bytes={start}-{start + (length or 1) - 1}"
    try:
        req = urllib.request.Request(url, headers={"Range": rng})
        with urllib.request.urlopen(req, timeout=60) as r:
            body: bytes = r.read(64 << 20)
            if r.status == 200:  # whole file: cut out the wanted part
                body = body[start:] if start < 0 else body[start:start + (length or 1)]
            return body
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _zip_names(tail: bytes, size_hint: int, fetch_at: Callable[[int, int], bytes | None]) -> list[str] | None:
    """File names from a zip's central directory, given the file's last bytes (``tail``) and a way
    to read more (``fetch_at(offset, length)``). ZIP64 aware; None when it is not a zip."""
    import struct

    eocd = tail.rfind(b"PK\x05\x06")
    if eocd < 0 or len(tail) - eocd < 22:
        return None
    _sig, _d, _dcd, _n_here, n, cd_size, cd_off, _clen = struct.unpack("<IHHHHIIH", tail[eocd:eocd + 22])
    if cd_off == 0xFFFFFFFF or n == 0xFFFF:  # ZIP64: the locator sits just before the EOCD
        loc = tail.rfind(b"PK\x06\x07", 0, eocd)
        if loc < 0:
            return None
        (z64_off,) = struct.unpack("<Q", tail[loc + 8:loc + 16])
        rec = fetch_at(z64_off, 56)
        if not rec or rec[:4] != b"PK\x06\x06":
            return None
        n, cd_size, cd_off = struct.unpack("<QQQ", rec[32:56])
    # the central directory is usually inside the tail already
    file_size = size_hint
    tail_start = file_size - len(tail)
    if cd_off >= tail_start:
        cd = tail[cd_off - tail_start:cd_off - tail_start + cd_size]
    else:
        got = fetch_at(cd_off, cd_size)
        if got is None:
            return None
        cd = got
    names, pos = [], 0
    while pos + 46 <= len(cd) and cd[pos:pos + 4] == b"PK\x01\x02":
        nlen, xlen, clen = struct.unpack("<HHH", cd[pos + 28:pos + 34])
        names.append(cd[pos + 46:pos + 46 + nlen].decode("utf-8", "replace"))
        pos += 46 + nlen + xlen + clen
    return names


class WheelIndex(Index):
    """``Index`` plus the top-level modules of a release's wheel, read from the wheel's zip
    central directory with two HTTP range requests (never the whole wheel), cached per file."""

    def __init__(self, cache: Path | None, fetch: Fetch | None = None, range_fetch: RangeFetch | None = None) -> None:
        super().__init__(cache, fetch)
        self.range_fetch = range_fetch or _urllib_range

    def _wheel_for(self, name: str, version: str | None) -> dict | None:
        """The wheel whose contents stand for the release: the pinned version (else the newest with
        a wheel), preferring a pure-Python one, then the smallest."""
        from packaging.version import InvalidVersion, Version

        proj = self._project(name)
        if not proj:
            return None
        wheels = []
        for f in proj.get("files", []):
            if not isinstance(f, dict) or not str(f.get("filename", "")).endswith(".whl") or f.get("yanked"):
                continue
            try:
                v = Version(_version_of(f["filename"]) or "")
            except InvalidVersion:
                continue
            wheels.append((v, f))
        if version is not None:
            try:
                want = Version(version)
            except InvalidVersion:
                return None
            wheels = [(v, f) for v, f in wheels if v == want]
        elif wheels:
            newest = max(v for v, _f in wheels if not v.is_prerelease) if any(
                not v.is_prerelease for v, _f in wheels) else max(v for v, _f in wheels)
            wheels = [(v, f) for v, f in wheels if v == newest]
        if not wheels:
            return None
        def rank(f: dict) -> tuple[int, int]:
            n = f["filename"]
            kind = 0 if n.endswith("-none-any.whl") else 1 if re.search(r"linux[^-]*x86_64\.whl$", n) else 2
            return kind, int(f.get("size") or 1 << 62)

        return min((f for _v, f in wheels), key=rank)

    def versions_with_wheel(self, name: str, python: str) -> list[str]:
        """Every release of ``name`` with a wheel a Linux x86_64 CPython ``python`` installs: its
        tags fit, and its Requires-Python admits it (torch-geometric 2.4.0's ``py3-none-any``
        wheel needs >=3.8; gvp, corpus10 held, moved to it on 3.6 and the relock found nothing)."""
        from pyrepro.buildreqs import admits_python

        proj = self._project(name)
        out = set()
        for f in (proj or {}).get("files", []):
            fn = str(f.get("filename", "")) if isinstance(f, dict) else ""
            if fn.endswith(".whl") and not f.get("yanked") and wheel_fits(fn, python) \
                    and admits_python(f.get("requires-python"), python):
                v = _version_of(fn)
                if v:
                    out.add(v)
        return sorted(out)

    def top_levels(self, name: str, version: str | None = None) -> tuple[frozenset[str], str] | None:
        """(top-level module names, wheel or sdist file name) of ``name`` at ``version`` (None:
        newest): the wheel's file list; for a release without a wheel, its sdist's member list
        (``sdist_top_levels``; the whole sdist is read, up to ``MAX_SDIST_LIST`` bytes). None when
        the index has neither or cannot be reached."""
        w = self._wheel_for(name, version)
        if w is None:
            return self._sdist_top_levels(name, version) if version is not None else None
        fname = str(w["filename"])
        path = self.cache / "index" / "top-level" / f"{fname}.json" if self.cache else None
        cached = _cache_read(path)
        if cached is not None:
            return frozenset(cached), fname
        url = str(w.get("url", ""))
        tail = self.range_fetch(url, -65536, None)
        if not tail:
            return None
        size = int(w.get("size") or 0) or len(tail)
        names = _zip_names(tail, size, lambda off, n: self.range_fetch(url, off, n))
        if names is None:
            return None
        from pyrepro.toplevel import top_levels_of

        tops = top_levels_of(names)
        if path is not None:
            _cache_write(path, sorted(tops))
        return tops, fname

    def _sdist_top_levels(self, name: str, version: str) -> tuple[frozenset[str], str] | None:
        from packaging.version import InvalidVersion, Version

        try:
            want = Version(version)
        except InvalidVersion:
            return None
        sdists = [f for f in (self._project(name) or {}).get("files", [])
                  if isinstance(f, dict) and not f.get("yanked")
                  and str(f.get("filename", "")).endswith((".tar.gz", ".zip", ".tar.bz2", ".tgz"))
                  and _version_of(str(f["filename"])) is not None
                  and _same_version(_version_of(str(f["filename"])), want)]
        if not sdists:
            return None
        f = min(sdists, key=lambda x: int(x.get("size") or 1 << 62))
        fname = str(f["filename"])
        # "sdist-2": read with the sdist's own top_level.txt and root .pyx modules (older entries,
        # which missed sparsesvd's extension module, are not reused)
        path = self.cache / "index" / "top-level" / "sdist-2" / f"{fname}.json" if self.cache else None
        cached = _cache_read(path)
        if cached is not None:
            return frozenset(cached), fname
        if int(f.get("size") or 0) > MAX_SDIST_LIST:
            return None
        body = self.fetch(str(f.get("url", "")))
        if not body:
            return None
        listing = _archive_listing(body, fname)
        if listing is None:
            return None
        names, own = listing
        from pyrepro.toplevel import said_top_levels, sdist_top_levels

        # what the sdist says of itself (setuptools' egg-info at its root) wins over what its file
        # names suggest: sparsesvd 0.2.2 ships one extension module from sparsesvd.pyx beside a
        # bundled Pyrex and ez_setup.py, and its top_level.txt says "sparsesvd"
        tops = said_top_levels(own) or sdist_top_levels(names)
        if path is not None:
            _cache_write(path, sorted(tops))
        return tops, fname


MAX_SDIST_LIST = 40 * 1024 * 1024  # an sdist read whole for its member list at most (jieba 0.42.1: 19 MB)


def _own_top_level_txt(names: list[str]) -> str | None:
    """The member path of the sdist's own ``<x>.egg-info/top_level.txt`` (at its root or under
    ``src/``), None when it has none (a vendored project's egg-info deeper down is not its own)."""
    for n in names:
        parts = n.replace("\\", "/").strip("/").split("/")[1:]
        if parts[:1] == ["src"]:
            parts = parts[1:]
        if len(parts) == 2 and parts[0].endswith(".egg-info") and parts[1] == "top_level.txt":
            return n
    return None


def _same_version(a: str | None, want: object) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        return a is not None and Version(a) == want
    except InvalidVersion:
        return False


def _archive_listing(body: bytes, filename: str) -> tuple[list[str], str | None] | None:
    """Member paths of an sdist archive (tar or zip) and the text of its own ``top_level.txt``
    (``_own_top_level_txt``; None when it has none), read in one pass; None when the archive
    cannot be read."""
    import io
    import tarfile
    import zipfile

    try:
        if filename.endswith(".zip"):
            with zipfile.ZipFile(io.BytesIO(body)) as z:
                names = z.namelist()
                own = _own_top_level_txt(names)
                return names, z.read(own).decode("utf-8", "replace") if own else None
        with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as t:
            names = [m.name for m in t.getmembers()]
            own = _own_top_level_txt(names)
            fh = t.extractfile(own) if own else None
            return names, fh.read(1 << 16).decode("utf-8", "replace") if fh is not None else None
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError, ValueError, KeyError):
        return None
