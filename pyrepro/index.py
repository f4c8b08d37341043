"""Questions to the package index (PyPI's simple API, PEP 691 JSON), answered once and cached.

``has_wheel(name, version, python)``: does that release have a wheel a Linux x86_64 CPython
``python`` can install? True/False, or None when the index cannot be asked or the release ships
no wheels at all (an sdist-only release says nothing about Python versions). Responses are kept
in ``<cache>/index/`` (a release's files never change), so a second ask is offline.
"""

from __future__ import annotations

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


def _urllib_fetch(url: str) -> bytes | None:
    try:
        req = urllib.request.Request(url, headers={"Accept": SIMPLE_JSON})
        with urllib.request.urlopen(req, timeout=30) as r:
            body: bytes = r.read()
            return body
    except (urllib.error.URLError, OSError, ValueError):
        return None


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

    def release_files(self, name: str, version: str) -> list[str] | None:
        """File names of one release, or None when unknown."""
        key = f"{canonicalize_name(name)}-{version}"
        path = self.cache / "index" / f"{key}.json" if self.cache else None
        if path is not None and path.is_file():
            try:
                return list(json.loads(path.read_text()))
            except (OSError, ValueError):
                pass
        body = self.fetch(f"{INDEX}/{canonicalize_name(name)}/")
        if body is None:
            return None
        try:
            listed = [f["filename"] for f in json.loads(body).get("files", []) if isinstance(f, dict)]
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        from packaging.version import InvalidVersion, Version

        try:
            want = Version(version)
        except InvalidVersion:
            return None
        files = []
        for f in listed:
            v = _version_of(f)
            try:
                if v is not None and Version(v) == want:
                    files.append(f)
            except InvalidVersion:
                continue
        if not files:
            return None  # no such release: nothing to say
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".{path.name}.{os.getpid()}")
                tmp.write_text(json.dumps(files))
                os.replace(tmp, path)
            except OSError:
                pass
        return files

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
        if interp in (f"py{major}", f"py{major}{minor}") or interp == "py2.py3":
            return True
        m = re.fullmatch(r"cp(\d)(\d+)", interp)
        if m and int(m.group(1)) == major:
            if int(m.group(2)) == minor:
                return True
            if abi == "abi3" and int(m.group(2)) <= minor:
                return True
    return False
