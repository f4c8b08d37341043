"""A date-bounded view of the package index for pip, which takes no date bound of its own.

pdm and uv resolve with ``--exclude-newer``; pip, the only resolver for Python 2 (``pyrepro.piplock``),
has no such option. Without one, pip on Python 2 takes the newest release that does not refuse the
interpreter, and releases that never stated a Requires-Python keep claiming Python 2 long after
they stopped working on it (keras 2.10.0 of 2022 ships a ``py2.py3`` wheel with Python 3 syntax:
chemts-logp, corpus10 held). ``DateBoundIndex`` serves, on 127.0.0.1 for the length of one pip
run, the simple API (PEP 503 HTML, which every pip reads) of the real index with only the releases
published before the bound (each with all its files, wheels built for it later included): pip's
own resolution, of the submission's time. File links point at the
index's own file URLs, so the downloads and their hashes are the real ones.
"""

from __future__ import annotations

import html
import re
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from packaging.utils import canonicalize_name

from pyrepro.index import Index, _version_of, wheel_fits


def _instant(bound: str) -> str:
    """A bound (``2020-01-01`` or an ISO time) as a UTC instant string that compares with PEP
    700 ``upload-time`` values (``2019-10-03T12:00:01.123456Z``) as text."""
    b = bound.strip().replace(" ", "T")
    if len(b) == 10:
        return b + "T00:00:00"
    return b.removesuffix("Z").split("+")[0]


def _born(project: dict[str, Any]) -> dict[str, str]:
    """version -> the upload instant of its first file: when the release was published."""
    out: dict[str, str] = {}
    for f in project.get("files", []):
        if not isinstance(f, dict):
            continue
        v = _version_of(str(f.get("filename", "")))
        up = str(f.get("upload-time") or "").removesuffix("Z")
        if v and up and (v not in out or up < out[v]):
            out[v] = up
    return out


def _uploaded(f: dict[str, Any], born: dict[str, str]) -> str:
    """When the release of file ``f`` was published (its own upload when the version is not
    known; "" when the index did not say)."""
    return born.get(_version_of(str(f.get("filename", ""))) or "", "") or \
        str(f.get("upload-time") or "").removesuffix("Z")


def page(project: dict[str, Any], bound: str) -> str:
    """The PEP 503 page of one project's PEP 691 listing with only the releases published before
    ``bound``, each with all its files: a wheel built later for a release of the time is that
    release (numpy 1.9.2 of March 2015 got its manylinux1 wheels in 2016; kaggle-diabetic-
    retinopathy, corpus19 dev, pins it for Python 2.7 with a 2015 bound, and the view without
    them sent nine 2015 sdists to the compiler, past the time the builds may take). A file
    without an upload time is kept: the index did not say."""
    limit = _instant(bound)
    born = _born(project)
    rows = []
    for f in project.get("files", []):
        if not isinstance(f, dict) or not f.get("url") or not f.get("filename"):
            continue
        up = _uploaded(f, born)
        if up and up >= limit:
            continue
        url = str(f["url"]).split("#", 1)[0]
        sha = (f.get("hashes") or {}).get("sha256") if isinstance(f.get("hashes"), dict) else None
        attrs = [f'href="{html.escape(url + (f"#sha256={sha}" if sha else ""), quote=True)}"']
        if f.get("requires-python"):
            attrs.append(f'data-requires-python="{html.escape(str(f["requires-python"]), quote=True)}"')
        if f.get("yanked"):
            why = f["yanked"] if isinstance(f["yanked"], str) else ""
            attrs.append(f'data-yanked="{html.escape(why, quote=True)}"')
        rows.append(f'<a {" ".join(attrs)}>{html.escape(str(f["filename"]))}</a><br/>')
    name = html.escape(str(project.get("name", "")))
    return ("<!DOCTYPE html>\n<html><head><title>Links for " + name + "</title></head><body>\n"
            + "\n".join(rows) + "\n</body></html>\n")


_PROJECT = re.compile(r"^/simple/([^/]+)/?$")


def wheel_floor(project: dict[str, Any], bound: str, python: str) -> str:
    """The bound for one project: ``bound``, or, when none of its files before ``bound`` is a wheel
    for this Python and machine but a later one is, the upload instant of that first wheel. A
    project that later shipped wheels is compiled (or at least built): its sdists of before would
    have to build here with the compilers and libraries of their day (a 2015 bound for Python 2.7:
    scikit-image 0.11.3's setup.py imports scipy, and no manylinux wheel existed before 2016). An
    sdist-only project (Lasagne, Theano) keeps ``bound``, and so does one whose later wheels are
    all pure Python (keras: its 2015 sdists are pure Python; its first wheel, 2.0.x of 2017, asks
    for TensorFlow: skip-thoughts, corpus14 held)."""
    limit = _instant(bound)
    born = _born(project)
    first_after = ""
    for f in project.get("files", []):
        if not isinstance(f, dict) or f.get("yanked") or not wheel_fits(str(f.get("filename", "")), python):
            continue
        up = str(f.get("upload-time") or "").removesuffix("Z")
        if not up or _uploaded(f, born) < limit:  # a wheel of a release of the time, even one built later
            return bound
        if str(f.get("filename", "")).endswith("-none-any.whl"):
            continue  # a pure-Python wheel says nothing of building: its sdists of before are pure too
        if not first_after or up < first_after:
            first_after = up
    if not first_after:
        return bound
    # just past that upload: the page keeps files uploaded before its bound
    return first_after[:19] + ".999999" if len(first_after) >= 19 else first_after


class DateBoundIndex:
    """``with DateBoundIndex("2020-01-01") as url:`` gives a simple-API URL for ``pip
    --index-url`` that lists only files the real index received before the bound."""

    def __init__(self, bound: str, index: Index | None = None,
                 package_bounds: Sequence[tuple[str, str]] = (), python: str | None = None) -> None:
        self.bound = bound
        #: with a Python, a project whose files before the bound hold no wheel for it moves to its
        #: first such wheel (``wheel_floor``)
        self.python = python
        #: projects with a later bound of their own (first published after ``bound``)
        self.package_bounds = {canonicalize_name(n): day for n, day in package_bounds}
        self.index = index or Index(None)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _answer(self, path: str) -> tuple[int, str]:
        m = _PROJECT.match(path.split("?", 1)[0])
        if not m:
            return 404, "not a project page\n"
        name = canonicalize_name(m.group(1))
        with self._lock:  # Index keeps one listing per project; pip asks one page at a time anyway
            project = self.index._project(name)
        if project is None:
            return 404, f"{name}: not on the index\n"
        bound = self.package_bounds.get(name, self.bound)
        if self.python:
            bound = wheel_floor(project, bound, self.python)
        return 200, page(project, bound)

    def __enter__(self) -> str:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server name)
                status, body = owner._answer(self.path)
                data = body.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="pyrepro-date-index", daemon=True)
        self._thread.start()
        return self.url

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("DateBoundIndex is not serving: use it as a context manager")
        return f"http://127.0.0.1:{self._server.server_address[1]}/simple/"

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None


__all__ = ["DateBoundIndex", "page"]
