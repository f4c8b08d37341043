"""Declared dependencies: what a contribution says it needs.

* JARVIS ``metadata.json``: ``software_used``, a comma string ("jarvis-tools,numpy,torch");
* MatBench ``info.json``: ``requirements`` in any shape (lists nested to any depth, dict name ->
  version(s), groups, a string of names, ``pip install`` text, free text), each item located on
  its own line; see ``_req`` for the shapes of one requirement (repository addresses become VCS
  sources, the Python a warning saying whether init reads it as evidence, names of the
  [not_packages] table a warning with its reason); free text gets a "not machine-readable" warning;
* ``environment.yml``: conda names (mapped: py-xgboost-gpu -> xgboost, pytorch -> torch) and
  the ``pip:`` sub-list; conda system packages (the [conda_system] table: python, cudatoolkit, lib*) are left out;
* model-metadata YAML (Matbench Discovery's ``<model>.yml``, ``metadata.yml``; any ``.yml``/``.yaml``
  not named for a conda environment): the top-level ``requirements`` like info.json's; a conda
  recipe's (``meta.yaml``) only ``requirements.run``; MatBench Discovery's 2026 schema (an
  ``environment:`` block) is read by ``pyrepro.scan.matbench_discovery`` (``parse_any_yml``);
* package sources besides PyPI (``--extra-index-url``/``--find-links`` lines): ``PackageSource``,
  refused with a warning, never silently dropped;
* ``requirements.txt``: PEP 508 lines; ``-e git+...#egg=x`` and ``x @ file:///...`` entries
  are kept by name with a warning that they are not installable as written; a direct reference
  (``direct_reference``) is never a PyPI name: init makes it a note, the submission's own code or
  a refusal.

Every problem is a warning with the file and line; nothing here raises on bad input.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from pyrepro.resolve import (
    conda_system_reason,
    conda_to_pypi,
    module_alias,
    not_a_package_reason,
    renamed,
)
from pyrepro.scan.shell import logical_lines

# Keys of a requirements dict that hold a group of packages, not a package of that name.
GROUP_KEYS = frozenset({"python", "pip", "pypi", "conda", "packages", "dependencies", "requirements", "other",
                        "python_packages", "libraries", "software"})
FREE_TEXT = re.compile(r"[^\w.,\-\[\]<>=!~ \t;:@/+*'\"]")


@dataclass(frozen=True)
class Declared:
    name: str  # canonical distribution name
    spec: str  # as written (or '')
    path: str
    line: int | None
    cell: int | None = None  # notebook cell of a ``%pip install`` line
    commented: bool = False  # from an install line kept as a comment (weaker: see scan.weigh_commented)
    doc: int | None = None  # from a README or a conda export: its command's or list's line (weaker, like commented)
    locked: bool = False  # a lock file's resolution (poetry.lock): it refines declarations, declares nothing

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "spec": self.spec,
                                  "location": {"path": self.path, "line": self.line, "cell": self.cell}}
        if self.commented:
            out["commented"] = True
        if self.doc is not None:
            out["readme"] = True
        return out


@dataclass(frozen=True)
class PackageSource:
    """A package source besides PyPI that a declaration names: MatBench Discovery's ``find_links``
    and ``extra_index_urls``, uv's index settings in a PEP 723 block, a requirements file's
    ``--find-links``/``--extra-index-url`` line. pyrepro locks and builds from PyPI alone (hashes,
    the date bound), so such a source is refused: a warning with its file and line, the scan's
    ``package_sources``, and a note in the draft model.toml; never silently dropped."""

    option: str  # as the file spells it: find_links, extra_index_urls, --extra-index-url, tool.uv find-links, ...
    url: str
    path: str
    line: int | None

    def message(self) -> str:
        return (f"{self.option} {self.url[:100]}: a package source besides PyPI; not used (pyrepro locks from PyPI "
                "alone, with hashes and the date bound): what only it serves comes from PyPI instead (a +cu121 "
                "build as PyPI's release, a wheel PyPI lacks built from the sdist); review those packages in the lock")

    def to_json(self) -> dict[str, object]:
        return {"option": self.option, "url": self.url, "location": {"path": self.path, "line": self.line,
                                                                     "cell": None}}


@dataclass(frozen=True)
class MetaScan:
    declared: tuple[Declared, ...]
    warnings: tuple[tuple[str, int | None, str], ...]  # (path, line, message)
    unreadable: bool = False  # the file could not be read at all (its first warning says where and why)
    # (line, path as written) of the other requirements files it includes (``-r base.txt``): pip
    # reads them relative to this file's folder, and so does the scan (``pyrepro.scan.extract``)
    includes: tuple[tuple[int, str], ...] = ()
    sources: tuple[PackageSource, ...] = ()  # package sources besides PyPI it names (refused, each with a warning)


def _line_of(text: str, needle: str) -> int | None:
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    return None


_SIMPLE_REQ = re.compile(r"^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:(?:==|>=|<=|~=|!=|<|>)\s*[A-Za-z0-9.*+!_-]+)?$")
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_OP = r"===|==|>=|<=|~=|!=|<|>"
_VERSION_WORD = r"v?(\d+(?:\.\d+)*(?:[a-z]+\d*)?(?:\.\*)?)"  # 1.2.3, v1.0, 2.0rc1, 1.*
# The interpreter's names: a requirement on them states the Python (evidence.py), never a package.
PYTHON_NAMES = frozenset({"python", "python2", "python3"})
# The strings evidence.py takes as a Python pin inside info.json/metadata.json (kept equal to
# its rule by tests/test_scan_declared.py): "python=3.7", "python>=3.8", "python 3.8".
_EVIDENCE_PYTHON = re.compile(r"^\s*python\s*(?:==|=|>=|~=)?\s*([23])\.(\d{1,2})(?:\.\d+)?\s*$", re.I)
_HEX40 = re.compile(r"[0-9a-f]{40}")
_REPO_IN_TEXT = re.compile(r"(?:https?://|git@)?(?:www\.)?(?:github\.com|gitlab\.com|bitbucket\.org)[/:][\w.-]+/[\w.-]+"
                           r"[^\s,;)\]\"'`]*")
Warnings = list[tuple[str, int | None, str]]


def vcs_source(spec: str) -> tuple[str, str, str] | None:
    """(name, repository URL, ref) of a VCS requirement (``git+https://host/o/repo@ref#egg=x``,
    ``name @ git+https://...@ref``, ``-e git+...``); None for anything else. The name is the
    egg/PEP 508 name, else the repository's last path segment; ref is "" when none is given."""
    s = spec.strip()
    s = re.sub(r"^(-e|--editable)\s+", "", s)
    named = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*@\s*(.+)$", s)
    name = named.group(1) if named else ""
    if named:
        s = named.group(3).strip()
    m = re.match(r"^(git|hg|svn|bzr)\+(\S+)$", s.split(";")[0].strip())
    if not m:
        return None
    url = m.group(2)
    egg = re.search(r"#egg=([A-Za-z0-9_.\-]+)", url)
    url = url.split("#", 1)[0]
    ref = ""
    scheme_end = url.find("://") + 3 if "://" in url else 0
    at = url.rfind("@")
    if at > scheme_end and "/" not in url[at:]:
        url, ref = url[:at], url[at + 1:]
    base = url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    return (name or (egg.group(1) if egg else base)), url, ref


def _valid(req: str) -> bool:
    try:
        Requirement(req)
    except InvalidRequirement:
        return False
    return True


def repository_reference(text: str) -> tuple[str, str, str, str] | None:
    """(name, repository URL, ref, subdir) of a bare repository address: ``https://github.com/o/r``,
    ``github.com/o/r.git``, ``git@github.com:o/r``, ``.../tree/<ref>[/sub]``, ``.../commit/<sha>``,
    ``.../archive/<ref>.zip``, ``.../releases/tag/<tag>``, ``...r@<ref>`` (GitHub, GitLab,
    Bitbucket); None for anything else. The name is the repository's, ref "" when none is given."""
    m = re.match(r"^(?:git\+)?(?:https?://|git://|ssh://git@|git@)?(?:www\.)?(github\.com|gitlab\.com|bitbucket\.org)"
                 r"[/:]([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?(?:@([A-Za-z0-9_.-]+))?(/[^\s#?]*)?(?:[#?]\S*)?$",
                 text.strip())
    if not m:
        return None
    host, owner, repo, at_ref, rest = m.groups()
    parts = [x for x in (rest or "").split("/") if x]
    if parts[:1] == ["-"]:  # GitLab's /-/tree/<ref>
        parts = parts[1:]
    ref, sub = at_ref or "", ""
    if len(parts) >= 2 and parts[0] in ("tree", "commit", "commits", "blob", "src"):
        ref, sub = parts[1], "/".join(parts[2:])
    elif len(parts) >= 2 and parts[0] == "archive":
        tail = [x for x in parts[1:] if x not in ("refs", "heads", "tags")]
        ref = re.sub(r"\.(zip|tar\.gz|tgz)$", "", "/".join(tail))
    elif len(parts) >= 3 and parts[:2] == ["releases", "tag"]:
        ref = parts[2]
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", ref or "x"):
        ref = ""
    return repo, f"https://{host}/{owner}/{repo}", ref, sub


def _repository(text: str, path: str, line: int | None, warnings: Warnings, cell: int | None = None,
                ) -> Declared | None:
    """A repository address as a VCS declaration (``name @ git+URL@ref``): init makes it an extra
    source when ref is a full commit, else a review item; never a PyPI name."""
    ref_of = repository_reference(text)
    if ref_of is None:
        return None
    repo, url, ref, sub = ref_of
    name = canonicalize_name(repo)
    if not re.fullmatch(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?", name):
        warnings.append((path, line, f"{text[:80]!r} names the repository {url}, whose name is no distribution name; "
                                     "not read: pin it as an extra source by hand"))
        return None
    what = ("it becomes an extra source of the model" if _HEX40.fullmatch(ref) else
            f"a review item until the full 40-hex commit{' of ' + ref if ref else ''} is known")
    warnings.append((path, line, f"{text[:80]!r} is the repository {url}{' at ' + ref if ref else ' (no ref)'}"
                                 f"{' (folder ' + sub + ')' if sub else ''}, not a PyPI name: {what}"))
    return Declared(name, f"{name} @ git+{url}{'@' + ref if ref else ''}", path, line, cell)


_PYTHON_VERSION_TAIL = re.compile(r"(?:[:(]\s*)?(?:===|==|>=|<=|~=|!=|=|<|>)?\s*v?\d+(?:\.\d+)*(?:\.\*)?\s*\)?"
                                  r"(?:\s*,\s*(?:==|>=|<=|~=|!=|<|>)\s*\d+(?:\.\d+)*(?:\.\*)?)*\s*[;,]?")


def _python_entry(s: str, path: str, line: int | None, warnings: Warnings, evidence: str | None) -> bool:
    """True (with a warning) when ``s`` states the Python (``python=3.7``, ``python>=3.8``,
    ``Python (3.8)``, ``python3.9``) rather than a package. ``evidence``: the whole JSON string it
    came from when init reads this file for Python evidence (info.json, metadata.json), else None."""
    m = re.match(r"(?i)^python([23](?:\.\d+)*)?(?![A-Za-z0-9_-])(?!\.[A-Za-z])", s)
    if not m:
        return False
    rest = s[m.end():].strip()
    if rest and not _PYTHON_VERSION_TAIL.fullmatch(rest):
        return False  # "python scripts for ...", "python 3.8 and torch 1.12": text, not a statement of the Python
    ver = re.search(r"([23]\.\d{1,2})", s)
    if not ver and not re.search(r"\d", rest):
        warnings.append((path, line, f"{s[:80]!r} names the interpreter, not a package; not read"))
        return True
    if evidence is not None and _EVIDENCE_PYTHON.match(evidence):
        how = "init reads it as Python evidence"
    else:
        how = ("not a form init reads as Python evidence (python=X.Y, python==X.Y, python>=X.Y in info.json or "
               "an environment file; runtime.txt; .python-version): set python in model.toml if it matters")
    warnings.append((path, line, f"{s[:80]!r} states the Python{' (' + ver.group(1) + ')' if ver else ''}, "
                                 f"not a package: {how}"))
    return True


def _named(d: Declared, warnings: Warnings) -> Declared | None:
    """``d`` unless its name is no Python distribution (the [not_packages] table: pip, cudatoolkit,
    gcc_linux-64, ...): then None, with the table's reason."""
    if not re.fullmatch(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?", d.name):
        warnings.append((d.path, d.line, f"{d.spec[:80]!r}: {d.name!r} is not a valid distribution name; not read"))
        return None
    why = not_a_package_reason(d.name)
    if why is None:
        return d
    warnings.append((d.path, d.line, f"{d.spec[:80]!r}: {d.name} is not a Python distribution ({why}); not read"))
    return None


def _req(s: str, path: str, line: int | None, warnings: Warnings, evidence: str | None = None) -> Declared | None:
    """One requirement as written anywhere (a requirements line, a list item, a ``pip install``
    argument). Read: PEP 508, conda's ``name=1.2=build`` and ``channel::name=1.2``, ``name (1.2.3)``,
    ``name: 1.2.3``, ``name 1.2.3``, ``name v1.2``, stray ``;``/``,``, VCS and repository addresses
    (as sources). Not read, with a warning: the Python itself (see ``_python_entry``), names of the
    [not_packages] table, other addresses, local paths, free text. Every name returned is a valid
    distribution name."""
    s = s.strip().strip("`").strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        s = s[1:-1].strip()
    if not s:
        return None
    stripped = s.rstrip(";,").strip()
    if stripped != s and stripped and not stripped.endswith(("@", "::")):
        before = len(warnings)
        d = _req(stripped, path, line, warnings, evidence)
        if d is not None:
            warnings.insert(before, (path, line, f"{s[:80]!r}: stray {s[len(stripped):].strip()!r} left out; read as "
                                                 f"{d.spec}"))
        return d
    if _python_entry(s, path, line, warnings, evidence):
        return None
    egg = re.search(r"#egg=([A-Za-z0-9_.\-]+)", s)
    if s.startswith(("-e ", "--editable")) or re.match(r"(git|hg|svn|bzr)\+", s):
        src = vcs_source(s)
        name = canonicalize_name(egg.group(1) if egg else (src[0] if src else ""))
        if src is not None and name and re.fullmatch(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?", name):
            if src and not egg and re.match(r"^(-e\s+|--editable\s+)?git\+", s) and repository_reference(src[1]):
                d = _repository(f"{src[1]}{'@' + src[2] if src[2] else ''}", path, line, warnings)
                if d is not None:
                    return dataclasses.replace(d, spec=s)
            warnings.append((path, line, f"{s[:80]!r} is a VCS source, not a PyPI name: it becomes an extra source "
                                         "of the model (a full commit id) or a review item"))
            return Declared(name, s, path, line)
        warnings.append((path, line, f"{s[:80]!r} is a VCS/editable entry whose name cannot be read; ignored"))
        return None
    if re.match(r"^(https?|ftp|ssh|git)://|^(www\.)?(github\.com|gitlab\.com|bitbucket\.org)/|^git@", s):
        return _address(s, path, line, warnings)
    if re.fullmatch(r"v?\d+(\.\d+)*", s):
        warnings.append((path, line, f"{s!r} is a bare version with no name; not read"))
        return None
    simple = _SIMPLE_REQ.match(s)
    # 'name' / 'name==1.2' (most lines of exported environments): no full PEP 508 parse needed
    # unless the version has letters ('x==latest' is no version)
    if simple and (not re.search(r"[<>=!~]", s) or re.fullmatch(r"\s*[<>=!~]{1,2}\s*\d+(\.\d+)*(\.\*)?",
                                                                s[simple.end(1):]) or _valid(s)):
        return _named(Declared(canonicalize_name(simple.group(1)), s, path, line), warnings)
    if s.startswith("-"):
        if re.match(r"^(-r|-c|--requirement|--constraint)\b", s):
            warnings.append((path, line, f"{s[:80]!r} names another requirements file; not followed (scan it too)"))
        return None
    if s.startswith((".", "/", "~")) or (re.search(r"\.(whl|tar\.gz|zip|tgz)$", s) and "@" not in s):
        warnings.append((path, line, f"{s[:80]!r} is a local path or archive, not a declaration; not read (code "
                                     "shipped with the submission, or an extra source)"))
        return None
    s = re.sub(r"\s+--hash[= ]\S+", "", s)  # pip's per-line hash options
    try:
        r = Requirement(s)
    except InvalidRequirement:
        return _lenient(s, path, line, warnings)
    if r.url and (pinned := _release_of_url(r.name, r.url)) is not None:
        # `torch @ https://download.pytorch.org/whl/cu111/torch-1.9.0%2Bcu111-cp38-...whl`, `certifi @
        # file:///.../certifi-2020.6.20-py3-none-any.whl` (pip freeze in a conda environment): the file
        # names its release; the address itself is unreachable or someone else's disk
        spec = f"{r.name}=={pinned}" + (f"; {r.marker}" if r.marker else "")
        warnings.append((path, line, f"{r.name} @ {r.url[:60]}: a file of {r.name} {pinned}; read as "
                                     f"{r.name}=={pinned} (the address itself is not used)"))
        return _named(Declared(canonicalize_name(r.name), spec, path, line), warnings)
    if r.url and not r.url.startswith(("git+", "hg+", "svn+", "bzr+")):
        ref = repository_reference(r.url)
        if ref is not None and ref[2]:  # name @ https://github.com/o/r/archive/<sha>.zip: the repository at <sha>
            d = _repository(r.url, path, line, warnings)
            return dataclasses.replace(d, name=canonicalize_name(r.name)) if d else None
        # any other direct reference is kept as declared (the submission says where its code came
        # from) but is never a PyPI name: init records it as the submission's own code when it
        # points into the folder, and refuses it otherwise (init.direct_references)
        what = (f"{r.name} points at a local file ({r.url[:60]})" if not re.match(r"^[a-z][a-z0-9+.-]*://", r.url)
                or r.url.startswith("file:") else f"{r.name} @ {r.url[:60]} is a direct reference to a web address")
        warnings.append((path, line, f"{what}: not a PyPI name, and not installed as written; if the code needs it, "
                                     "ship it in the submission folder, pin it as [[extra_sources]] (repository and "
                                     "40-hex commit), or add the PyPI release to model.toml after review"))
    return _named(Declared(canonicalize_name(r.name), s, path, line), warnings)


def direct_reference(spec: str) -> str | None:
    """The address of a declaration that is a direct reference other than a VCS source
    (``attrs @ file:///...``, ``pkg @ https://host/pkg.tar.gz``, ``pkg @ ./local``): code pip would
    fetch from that place, never a PyPI name; None for anything else. (A file whose name gives its
    release was read as that release already: see ``_release_of_url``.)"""
    m = re.match(r"^\s*[A-Za-z0-9][A-Za-z0-9._-]*\s*(?:\[[^\]]*\])?\s*@\s*(\S[^;]*)", spec)
    if m is None or vcs_source(spec) is not None:
        return None
    return m.group(1).strip() or None


def _release_of_url(name: str, url: str) -> str | None:
    """The version a direct reference's file name gives (a wheel's or an sdist's name, for this
    very project), None for anything else (a folder, a repository, another project's file)."""
    from urllib.parse import unquote, urlsplit

    from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, \
        parse_wheel_filename

    if url.startswith(("git+", "hg+", "svn+", "bzr+")):
        return None
    fname = unquote(urlsplit(url).path).rstrip("/").rsplit("/", 1)[-1]
    try:
        if fname.endswith(".whl"):
            got, version = parse_wheel_filename(fname)[:2]
        elif fname.endswith((".tar.gz", ".zip")):
            got, version = parse_sdist_filename(fname)
        else:
            return None
    except (InvalidWheelFilename, InvalidSdistFilename, ValueError):
        return None
    return str(version) if got == canonicalize_name(name) else None


def _address(s: str, path: str, line: int | None, warnings: Warnings) -> Declared | None:
    """A web address given as a requirement: a repository (a source), a PyPI project page (its
    name and version), anything else not read."""
    if (d := _repository(s, path, line, warnings)) is not None or repository_reference(s) is not None:
        return d
    page = re.match(rf"^https?://(?:pypi\.org|pypi\.python\.org)/(?:project|pypi|simple)/({_NAME})/?"
                    rf"(?:(\d[\w.!+]*)/?)?(?:[#?].*)?$", s)
    if page:
        spec = f"{page.group(1)}=={page.group(2)}" if page.group(2) else page.group(1)
        if _valid(spec):
            warnings.append((path, line, f"{s[:80]!r} is a PyPI project page: read as {spec}"))
            return _named(Declared(canonicalize_name(page.group(1)), spec, path, line), warnings)
    warnings.append((path, line, f"{s[:80]!r} is a web address, not a requirement or a repository pyrepro can pin; "
                                 "not read: review it"))
    return None


def _lenient(s: str, path: str, line: int | None, warnings: Warnings) -> Declared | None:
    """The shapes a requirement takes outside PEP 508 (see ``_req``), or a warning."""
    chan = re.match(r"^([A-Za-z0-9_.-]+)::\s*(.+)$", s)
    if chan:  # conda's channel::name=1.2
        inner = chan.group(2).strip()
        name = re.split(r"[=<>!~ ]", inner, maxsplit=1)[0]
        mapped = conda_to_pypi(f"{chan.group(1)}::{name}") or conda_to_pypi(name)
        warnings.append((path, line, f"{s[:80]!r}: conda package {name} from the {chan.group(1)} channel"
                                     f"{', ' + mapped + ' on PyPI' if mapped else ''}"))
        if conda_system_reason(name) is not None and not mapped:
            warnings.append((path, line, f"{name} is not a Python distribution ({conda_system_reason(name)}); "
                                         "not read"))
            return None
        d = _req(inner, path, line, warnings)
        return dataclasses.replace(d, name=canonicalize_name(mapped)) if d and mapped else d
    forms = (rf"^({_NAME})\s*\(\s*({_OP})?\s*{_VERSION_WORD}\s*\)$",  # name (1.2.3)
             rf"^({_NAME})\s*:\s*({_OP})?\s*{_VERSION_WORD}$",  # name: 1.2.3
             rf"^({_NAME})\s+(?:version\s*:?\s*)?()(?:{_VERSION_WORD})$")  # name 1.2.3, name v1.2, name version 1.2
    for form in forms:
        m = re.match(form, s, re.I)
        if m and not re.fullmatch(r"\d[\d.]*", m.group(1)):
            spec = f"{m.group(1)}{m.group(2) or '=='}{m.group(3)}"
            if _valid(spec):
                warnings.append((path, line, f"{s[:80]!r} is not PEP 508; read as {spec}"))
                return _req(spec, path, line, warnings)
    # conda-style "name=1.2=build" or "name==1.2=build": init turns the version into a PEP 440 pin
    m = re.match(r"^([A-Za-z0-9](?:[A-Za-z0-9_.\-]*[A-Za-z0-9])?)\s*(?:={1,2}\s*([0-9][^=\s]*))?", s)
    rest = s[m.end():].rstrip() if m else s
    if m and (not rest.strip() or (m.group(2) and re.fullmatch(r"=[\w.*+!]+", rest))):  # the build joins the version
        return _named(Declared(canonicalize_name(m.group(1)), s, path, line), warnings)
    if m and (re.fullmatch(r"\([^()]*\)", rest.strip()) or re.match(rf"^({_OP})", s[len(m.group(1)):].strip())):
        # "alignn (GitHub version)", "x==latest": the name, a remark or a version that is none
        warnings.append((path, line, f"cannot read requirement {s[:80]!r} completely; took the name {m.group(1)!r}"))
        return _named(Declared(canonicalize_name(m.group(1)), m.group(1), path, line), warnings)
    hint = "; it names a repository: pin it as an extra source" if re.search(r"github|gitlab|\b[0-9a-f]{7,40}\b", s) else ""
    warnings.append((path, line, f"{s[:80]!r} is not a requirement (free text); not read{hint}"))
    return None


_PIP_COMMAND = re.compile(r"^[!%$]?\s*(?:sudo\s+)?(?:python[\d.]*\s+-m\s+)?pip[\d.]*\s+install\b")
_CONDA_COMMAND = re.compile(r"^[!%$]?\s*(?:conda|mamba|micromamba)\s+(?:install|create)\b")


def _items(s: str, path: str, line: int | None, warnings: Warnings, evidence: str | None = None,
           ) -> list[Declared]:
    """The requirements of one written item that may hold several: ``pip install x y`` or
    ``conda install x`` text, ``numpy==1.2 scipy==1.3`` (every word with a version), or one
    requirement (``_req``). Repository addresses in free text become sources too."""
    s = s.strip().strip("`").strip()
    if _PIP_COMMAND.match(s):
        ds, ws = pip_install_line(s.lstrip("!%$ "), path, line)
        warnings.extend(ws)
        if not ds and not ws:
            warnings.append((path, line, f"{s[:80]!r}: a pip install command that installs nothing pyrepro can read"))
        return ds
    if _CONDA_COMMAND.match(s):
        return _conda_install(s, path, line, warnings)
    words = s.split()
    if len(words) > 1 and all(re.fullmatch(rf"{_NAME}\s*(?:{_OP})\s*\S+", w) and _valid(w) for w in words):
        return [d for w in words if (d := _req(w, path, line, warnings, evidence))]
    before = len(warnings)
    d = _req(s, path, line, warnings, evidence)
    if d is not None:
        return [d]
    if len(warnings) > before and "free text" in warnings[-1][2]:
        return [r for u in _REPO_IN_TEXT.findall(s) if (r := _repository(u.rstrip("."), path, line, warnings))]
    return []


def _conda_install(s: str, path: str, line: int | None, warnings: Warnings) -> list[Declared]:
    """``conda install -c ch a b=1.2`` text: each package, by its PyPI name; system packages not read."""
    try:
        words = shlex.split(s, comments=True)
    except ValueError:
        words = s.split()
    k = next((i for i, w in enumerate(words) if w in ("install", "create")), len(words))
    if words[k - 1:k] == ["env"]:  # conda env create -f environment.yml: the file is scanned on its own
        return []
    out: list[Declared] = []
    skip = False
    for w in words[k + 1:]:
        if w in ("&&", ";", "||", "|"):
            break
        if skip:
            skip = False
            continue
        if w.startswith("-"):
            skip = w in ("-c", "--channel", "-n", "--name", "-p", "--prefix", "-f", "--file") and "=" not in w
            continue
        name = re.split(r"[=<>!~ ]", w.split("::")[-1], maxsplit=1)[0]
        why = conda_system_reason(name)
        if why is not None:
            warnings.append((path, line, f"conda {words[k]} {w}: not a Python distribution ({why}); not read"))
            continue
        if (d := _req(w, path, line, warnings)):
            out.append(_conda(d))
    return out


def _json_located(text: str) -> object:
    """``text`` (valid JSON) parsed with each string a ``_Str`` that knows its line; None when the
    nesting is too deep to walk (the caller then uses one line for everything)."""
    dec = json.JSONDecoder()
    ws = re.compile(r"[ \t\n\r]*")
    newlines = [i for i, c in enumerate(text) if c == "\n"]

    def line_at(i: int) -> int:
        import bisect

        return bisect.bisect_right(newlines, i - 1) + 1

    def value(i: int, depth: int) -> tuple[object, int]:
        if depth > 100:
            raise RecursionError
        i = ws.match(text, i).end()
        c = text[i]
        if c == '"':
            s, j = json.decoder.scanstring(text, i + 1)
            return _Str(s, line_at(i)), j
        if c in "[{":
            close = "]" if c == "[" else "}"
            out: list[object] | dict[object, object] = [] if c == "[" else {}
            i = ws.match(text, i + 1).end()
            if text[i] == close:
                return out, i + 1
            while True:
                if isinstance(out, dict):
                    k, i = value(i, depth + 1)
                    i = ws.match(text, i).end() + 1  # the colon
                    v, i = value(i, depth + 1)
                    out[k] = v
                else:
                    v, i = value(i, depth + 1)
                    out.append(v)
                i = ws.match(text, i).end()
                if text[i] == close:
                    return out, i + 1
                i += 1  # the comma
        v, j = dec.raw_decode(text, i)
        return v, j

    try:
        return value(0, 0)[0]
    except (RecursionError, ValueError, IndexError):
        return None


class _Str(str):
    """A JSON string with the line it starts on."""

    line: int

    def __new__(cls, s: str, line: int) -> _Str:
        obj = super().__new__(cls, s)
        obj.line = line
        return obj


def _at(x: object, default: int | None) -> int | None:
    return getattr(x, "line", default)


def _load_json(text: str, path: str, what: str) -> tuple[object, tuple[str, int | None, str] | None]:
    """(data with located strings, None) or (None, the located reason it cannot be read)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, (path, exc.lineno, f"not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno}); {what} "
                                        "not read: fix the file")
    except (RecursionError, ValueError) as exc:
        return None, (path, 1, f"cannot be read as JSON ({type(exc).__name__}); {what} not read: fix the file")
    located = _json_located(text)
    return (located if located is not None else data), None


def parse_software_used(text: str, path: str) -> MetaScan:
    warnings: Warnings = []
    data, bad = _load_json(text, path, "declared dependencies")
    if bad is not None:
        return MetaScan((), (bad,), unreadable=True)
    if not isinstance(data, dict):
        return MetaScan((), ((path, 1, "not a JSON object; declared dependencies not read"),), unreadable=True)
    sw = data.get("software_used")
    if sw is None:
        return MetaScan((), ())
    line = _at(sw, _line_of(text, "software_used"))
    if isinstance(sw, list):
        items = [(x, _at(x, line), str(x)) for x in sw if isinstance(x, str)]
    elif isinstance(sw, str):
        items = [(x, line, sw) for x in sw.split(",")]
    else:
        items = []
        warnings.append((path, line, f"software_used is a {type(sw).__name__}, not a list or a string; not read"))
    out = [_alias(_conda(d)) for s, at, whole in items for d in _items(s, path, at, warnings, whole)]
    return MetaScan(tuple(d for d in out if _named(d, warnings)), tuple(warnings))


def _alias(d: Declared) -> Declared:
    """``software_used`` often names the import rather than the distribution (``sklearn``):
    an exact module name of the reviewed mapping becomes its distribution."""
    mapped = module_alias(d.spec.strip()) or module_alias(d.name)
    return dataclasses.replace(d, name=mapped) if mapped and mapped != d.name else d


def _conda(d: Declared) -> Declared:
    """Map a conda package name to its PyPI name (py-xgboost-gpu -> xgboost)."""
    mapped = conda_to_pypi(d.name)
    return dataclasses.replace(d, name=canonicalize_name(mapped)) if mapped else d


def _version_text(x: object) -> str | None:
    """A version value of a {name: version} requirements dict as text (numbers too), or None."""
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, (int, float)):
        return str(x)
    return x.strip() if isinstance(x, str) else None


def _requirements(req: object, path: str, line: int | None, warnings: Warnings, out: list[Declared],
                  depth: int = 0) -> None:
    """Declared names of a ``requirements`` value of any shape: a list of specs (nested lists
    too: ``[["ax_platform==0.2.3", ...]]``), a dict of name -> version(s), a dict of groups
    (``{"python": ["numpy==1.2"]}``), a string of names, or free text (a warning). Each item
    carries its own line."""
    if depth > 8:
        warnings.append((path, line, "requirements nested deeper than 8 levels; the rest not read"))
        return
    if isinstance(req, dict):
        for k, v in req.items():
            kline = _at(k, line)
            key = str(k).strip()
            if key.lower() in PYTHON_NAMES | {"python_version"} and _version_text(v) and \
                    re.match(r"^[<>=~!]*\s*v?[23](\.\d+)*", _version_text(v) or ""):
                _python_entry(f"python {_version_text(v)}", path, kline, warnings,
                              f"python=={v}" if isinstance(v, (str, int, float)) else None)
                continue
            if isinstance(v, dict) and isinstance(v.get("version"), (str, int, float)) and key.lower() not in GROUP_KEYS:
                v = v["version"]  # {"torch": {"version": "1.12"}}
            if depth < 3 and ((isinstance(v, (dict, str)) and key.lower() in GROUP_KEYS) or (isinstance(v, list) and v and all(
                    isinstance(x, (str, list)) and (isinstance(x, list) or (re.match(r"^[A-Za-z]", x.strip())
                                                              and not re.match(r"^v\d", x.strip()))) for x in v))):
                # a group ({"python": ["numpy==1.2", ...]}, {"pip": {...}}), not versions of a package
                _requirements(v, path, kline, warnings, out, depth + 1)
                continue
            if re.search(r"://|^(?:www\.)?github\.com/", key):  # {"https://github.com/o/r": "<sha>"}
                ver = _version_text(v)
                target = key if not ver or re.search(r"/(tree|commit|archive)/|@", key) else f"{key.rstrip('/')}/tree/{ver}"
                if (d := _req(target, path, kline, warnings)) is not None:
                    out.append(d)
                continue
            ref = _version_text(v) if isinstance(v, str) else None
            if ref and re.search(r"(?:git|hg|svn|bzr)\+|://", ref):
                # {"pynanoflann": "pynanoflann@git+https://..."} or {"x": "git+https://..."}: a source
                target = ref if re.match(rf"^{_NAME}\s*@", ref) else f"{key} @ {ref}"
                if (d := _req(target, path, kline, warnings)) is not None:
                    out.append(d)
                continue
            versions = v if isinstance(v, list) else [v]
            texts = [t for x in versions if (t := _version_text(x))]
            if isinstance(v, (dict, list)) and not texts and v:
                warnings.append((path, kline, f"{key}: {json.dumps(v)[:60]} is not a version; took the name"))
            specs = []
            for t in texts:
                spec = f"{key}=={t.lstrip('v')}" if re.fullmatch(r"v?[\w.+!*]+", t) else f"{key}{t}" if re.match(r"^[<>=!~]", t) else None
                if spec is None or not _valid(spec):
                    if t.lower() not in ("", "*", "any", "latest"):
                        warnings.append((path, kline, f"{key}: version {t[:40]!r} cannot be read; took the name"))
                    spec = key
                specs.append(spec)
            specs = list(dict.fromkeys(specs)) or [key]
            if len(specs) > 1:
                warnings.append((path, kline, f"{key} is pinned to several versions ({', '.join(texts)})"))
            for spec in specs:
                out.extend(_conda(d) for d in _items(spec, path, kline, warnings, None))
    elif isinstance(req, list):
        for item in req:
            if isinstance(item, str):
                out.extend(_conda(d) for d in _items(item, path, _at(item, line), warnings, item))
            elif isinstance(item, (list, dict)):
                _requirements(item, path, line, warnings, out, depth + 1)
            else:
                warnings.append((path, line, f"requirement {json.dumps(item)[:60]} is not a string; not read"))
    elif isinstance(req, str):
        _requirement_string(req, path, _at(req, line), warnings, out)
    else:
        warnings.append((path, line, f"requirements has an unexpected type {type(req).__name__}; not read"))


def _requirement_string(req: str, path: str, line: int | None, warnings: Warnings, out: list[Declared]) -> None:
    """A ``requirements`` string: a command (``pip install x y``), a list of requirements
    separated by commas, semicolons, new lines or (up to 3 names, or every one with a version)
    spaces, or free text: a warning, with what can be read off it (``torch 1.12``, addresses)."""
    commands = [p for p in re.split(r"\n|&&|;", req) if p.strip()]
    if commands and any(_PIP_COMMAND.match(p.strip()) or _CONDA_COMMAND.match(p.strip()) for p in commands):
        for part in commands:
            out.extend(_conda(d) for d in _items(part, path, line, warnings, req))
        return
    parts = [p.strip() for p in re.split(rf"[;\n]+|,(?!\s*(?:{_OP}))", req) if p.strip()]
    readable: list[list[str]] = []
    for p in parts:
        words = p.split()
        if _python_entry(p, path, line, [], req) or _req(p, path, line, [], req) is not None:
            readable.append([p])
        elif (1 < len(words) <= 3 and all(re.fullmatch(_NAME, w) and not w[0].isdigit() for w in words)) or (
                len(words) > 1 and all(re.fullmatch(rf"{_NAME}\s*(?:{_OP})\s*\S+", w) and _valid(w) for w in words)):
            readable.append(words)  # "numpy scipy", "numpy==1.2 scipy==1.7"
        else:
            readable = []
            break
    if readable:
        for words in readable:
            for w in words:
                out.extend(_conda(d) for d in _items(w, path, line, warnings, req))
        return
    taken: list[str] = []
    for m in re.finditer(rf"(?<![\w.-])(?!(?:version|ver|v)\b)({_NAME})(?:\s*,?\s*(?:version|ver\.?)\s*:?\s*|\s*(?:==|>=|~=|=)\s*"
                         rf"|\s+v?)(\d+(?:\.\d+)+)\b", req, re.I):
        name = m.group(1)
        if name.lower() in PYTHON_NAMES or re.fullmatch(r"[\d.]+", name) or not _valid(name):
            continue
        d = _named(Declared(canonicalize_name(name), name, path, line), warnings)
        if d is not None:
            taken.append(name)
            out.append(_conda(d))
    warnings.append((path, line, "requirements is free text, not machine-readable"
                                 f"{'; took the names ' + ', '.join(taken) if taken else '; nothing read from it'}: list "
                                 "the packages as [\"name==version\", ...] to have them checked"))
    for u in _REPO_IN_TEXT.findall(req):
        if (d := _repository(u.rstrip("."), path, line, warnings)) is not None:
            out.append(d)


def parse_info_json(text: str, path: str) -> MetaScan:
    """MatBench info.json: ``requirements`` in any shape (see ``_requirements``)."""
    warnings: Warnings = []
    data, bad = _load_json(text, path, "its requirements")
    if bad is not None:
        return MetaScan((), (bad,), unreadable=True)
    if not isinstance(data, dict):
        return MetaScan((), ((path, 1, "not a JSON object; requirements not read"),), unreadable=True)
    req = data.get("requirements")
    line = _line_of(text, "requirements")
    out: list[Declared] = []
    if req is None:
        return MetaScan((), ())
    _requirements(req, path, line, warnings, out)
    return MetaScan(tuple(out), tuple(warnings))


_YAML_KEY = re.compile(r"""^(?:"([^"]*)"|'([^']*)'|([^\s#'"{\[][^:#]*?))\s*:(?:\s+|$)(.*)$""")


def _yaml_uncomment(s: str) -> str:
    """``s`` without a trailing YAML comment (`` #`` outside quotes)."""
    quote = ""
    for i, c in enumerate(s):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or s[i - 1] in " \t"):
            return s[:i].rstrip()
    return s.rstrip()


def _yaml_scalar(s: str, line: int) -> object:
    """A plain or quoted YAML scalar, or a one-line flow list/mapping (``[a, b]``, ``{a: 1}``),
    with located strings; numbers stay text (a version ``1.10`` is not the float 1.1)."""
    s = s.strip()
    if s[:1] == "[" and s.endswith("]"):
        return [_yaml_scalar(x, line) for x in _flow_items(s[1:-1])]
    if s[:1] == "{" and s.endswith("}"):
        out: dict[object, object] = {}
        for x in _flow_items(s[1:-1]):
            k, _, v = x.partition(":")
            out[_Str(k.strip().strip("'\""), line)] = _yaml_scalar(v, line) if v.strip() else None
        return out
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        s = s[1:-1]
    elif s in ("", "~", "null", "Null", "NULL"):
        return None
    return _Str(s, line)


def _flow_items(s: str) -> list[str]:
    items, depth, cur, quote = [], 0, "", ""
    for c in s:
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        cur += c
    return [x for x in (*items, cur) if x.strip()]


def yaml_top(text: str, keys: frozenset[str] | set[str]) -> dict[str, object]:
    """The values of the top-level ``keys`` of a YAML mapping document, read tolerantly without a
    YAML library (block mappings and sequences nested by indentation, plain and quoted scalars,
    one-line flow collections, comments); every string carries its line. Anything else under a
    key (anchors, multi-line scalars, tags) reads as text or is left out; nothing raises."""
    lines: list[tuple[int, int, str]] = []  # (line number, indent, content)
    for n, raw in enumerate(text.splitlines(), 1):
        if raw.strip() in ("---", "..."):
            continue
        content = _yaml_uncomment(raw.replace("\t", "    "))
        if content.strip():
            lines.append((n, len(content) - len(content.lstrip()), content.strip()))

    def block(i: int, indent: int) -> tuple[object, int]:
        """The block starting at lines[i] (its indent ``indent``): (value, next index)."""
        if i >= len(lines):
            return None, i
        if lines[i][2].startswith("- ") or lines[i][2] == "-":
            seq: list[object] = []
            while i < len(lines) and lines[i][1] == indent and (lines[i][2].startswith("- ") or lines[i][2] == "-"):
                n, _ind, c = lines[i]
                item = c[1:].strip()
                i += 1
                if not item:
                    if i < len(lines) and lines[i][1] > indent:
                        v, i = block(i, lines[i][1])
                        seq.append(v)
                    continue
                m = _YAML_KEY.match(item)
                if m and item[:1] not in "[{":
                    # "- name: x" starts a mapping inside the sequence; its other keys follow indented
                    sub_indent = indent + 2 + (len(c[1:]) - len(c[1:].lstrip()) - 1)
                    rest = [(n, sub_indent, item)]
                    while i < len(lines) and lines[i][1] > indent:
                        rest.append(lines[i])
                        i += 1
                    v, _ = _sub(rest)
                    seq.append(v)
                else:
                    seq.append(_yaml_scalar(item, n))
            return seq, i
        mapping: dict[object, object] = {}
        while i < len(lines) and lines[i][1] == indent:
            n, _ind, c = lines[i]
            m = _YAML_KEY.match(c)
            if not m:
                i += 1
                continue
            key = _Str(next(g for g in m.groups()[:3] if g is not None).strip(), n)
            rest = m.group(4).strip()
            i += 1
            if rest and rest not in ("|", ">", "|-", ">-"):
                mapping[key] = _yaml_scalar(rest, n)
            elif i < len(lines) and (lines[i][1] > indent or (lines[i][1] == indent and lines[i][2].startswith("-"))):
                mapping[key], i = block(i, lines[i][1])
            else:
                mapping[key] = None
            while i < len(lines) and lines[i][1] > indent:  # what a multi-line scalar left
                i += 1
        return mapping, i

    def _sub(rows: list[tuple[int, int, str]]) -> tuple[object, int]:
        nonlocal lines
        saved, lines = lines, rows
        try:
            return block(0, rows[0][1])
        finally:
            lines = saved

    out: dict[str, object] = {}
    i = 0
    try:
        while i < len(lines):
            n, ind, c = lines[i]
            m = _YAML_KEY.match(c) if ind == 0 else None
            if not m:
                i += 1
                continue
            key = next(g for g in m.groups()[:3] if g is not None).strip()
            rest = m.group(4).strip()
            i += 1
            value: object = None
            if rest:
                value = _yaml_scalar(rest, n)
            elif i < len(lines) and (lines[i][1] > 0 or lines[i][2].startswith("-")):
                value, i = block(i, lines[i][1])
            while i < len(lines) and lines[i][1] > 0:
                i += 1
            if key in keys and key not in out:
                out[key] = value
    except RecursionError:
        pass
    return out


# conda recipes (meta.yaml) also have requirements:, whose build/host lists are tools and
# templates; only run: is what the code needs
_RECIPE_RUN = "run"


def parse_metadata_yml(text: str, path: str) -> MetaScan:
    """A model-metadata YAML file (Matbench Discovery's ``<model>.yml``, ``metadata.yml``): its
    top-level ``requirements`` in any shape (``{name: version}`` mostly; see ``_requirements``).
    A YAML file without that key declares nothing."""
    warnings: Warnings = []
    req = yaml_top(text, {"requirements"}).get("requirements")
    if req is None:
        return MetaScan((), ())
    line = _line_of(text, "requirements")
    if path.rsplit("/", 1)[-1].lower() in ("meta.yaml", "meta.yml"):
        if not isinstance(req, dict):
            return MetaScan((), ())
        run = next((v for k, v in req.items() if str(k) == _RECIPE_RUN), None)
        if not isinstance(run, list):
            return MetaScan((), ())
        out: list[Declared] = []
        for item in run:
            if isinstance(item, str) and not re.search(r"[{}]", item):
                name = re.split(r"[=<>!~ ]", item.strip(), maxsplit=1)[0]
                if conda_system_reason(name) is not None:
                    continue
                out.extend(_conda(d) for d in _items(item, path, _at(item, line), warnings, item))
        return MetaScan(tuple(out), tuple(warnings))
    out = []
    _requirements(req, path, line, warnings, out)
    return MetaScan(tuple(out), tuple(warnings))


EXPORT_MIN_BUILDS = 10  # conda entries with build strings from which an environment file is an export


def parse_environment_yml(text: str, path: str) -> MetaScan:
    """A tolerant reader of conda environment files (no YAML library needed)."""
    warnings: list[tuple[str, int | None, str]] = []
    out: list[Declared] = []
    in_deps = False
    deps_indent = 0
    system: list[tuple[int, str]] = []  # conda packages that are no Python distribution, said once
    conda_items: list[tuple[int, bool]] = []  # (line, carries a build string) of every conda entry
    pip_indent: int | None = None  # the indent of the "- pip:" line while in its sub-list
    includes: list[tuple[int, str]] = []
    sources: list[PackageSource] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        s = line.strip()
        if re.match(r"^dependencies\s*:", s) and indent == 0:
            in_deps, deps_indent = True, indent
            continue
        if in_deps and indent <= deps_indent and not s.startswith("-"):
            in_deps = False
        if not in_deps or not s.startswith("-"):
            continue
        item = s[1:].strip().strip("'\"")
        if pip_indent is not None and indent <= pip_indent:
            pip_indent = None  # back at the conda list
        if item.endswith(":") or item.startswith("pip:"):
            pip_indent = indent if item.startswith("pip:") else pip_indent
            continue  # the pip: sub-list header; its items follow as '- x', indented deeper
        # a conda entry may carry a conda match spec (pytorch==1.10, scipy>=1.3): still conda's
        # name (pytorch is torch on PyPI); the pip: sub-list's entries are PyPI requirements
        conda = pip_indent is None and indent <= deps_indent + 2
        name = re.split(r"[=<>!~ ]", item, maxsplit=1)[0]
        name = name.split("::")[-1]
        if conda:
            conda_items.append((n, bool(re.fullmatch(r"[^=\s]+=[^=\s]+=[^=\s]+", item))))
            if conda_system_reason(name) is not None:  # the [conda_system] table of module_map.toml
                if name.lower() not in ("python", "pip"):
                    system.append((n, name))
                continue
            mapped = conda_to_pypi(name.lower()) or conda_to_pypi(item.split("=")[0].strip()) or name
            if mapped != name:
                warnings.append((path, n, f"conda package {name} is {mapped} on PyPI"))
            if (d := _named(Declared(canonicalize_name(mapped), item, path, n), warnings)) is not None:
                out.append(d)
        elif inc := _INCLUDE.match(item):  # `- -r requirements.txt`: conda runs pip beside this file
            includes.append((n, inc.group(1)))
        elif (src := index_option(item, path, n)) is not None:  # `- --extra-index-url https://...`
            sources.append(src)
            warnings.append((path, n, src.message()))
        elif (d := _req(item, path, n, warnings)):
            out.append(d)
    if system:
        names = [nm for _n, nm in system]
        warnings.append((path, system[0][0], f"{len(names)} conda package{'s' if len(names) > 1 else ''} "
                         f"{'are' if len(names) > 1 else 'is'} not a Python distribution (system libraries, "
                         f"compilers, build tools; the name table's [conda_system] says why each): "
                         f"{', '.join(names[:12])}{', ...' if len(names) > 12 else ''}; not read"))
    return MetaScan(tuple(_as_export(out, conda_items, path, warnings, "conda env export")), tuple(warnings),
                    includes=tuple(includes), sources=tuple(sources))


_CONDA_BUILT = re.compile(r"[^=\s]+=[^=\s]+=[^=\s]+")  # name=version=build


def _as_export(out: list[Declared], conda_items: list[tuple[int, bool]], path: str, warnings: Warnings,
               what: str) -> list[Declared]:
    """A full conda export (``conda env export``, ``conda list --export``): EXPORT_MIN_BUILDS or more
    entries, at least half with build strings. Every package conda resolved is there; those the
    code does not import are conda's resolution, not the authors' choices: weak, like a README's."""
    built = sum(1 for _n, k in conda_items if k)
    if built < EXPORT_MIN_BUILDS or 2 * built < len(conda_items):
        return out
    warnings.append((path, conda_items[0][0], f"a full `{what}` ({built} of {len(conda_items)} conda entries carry "
                                              "build strings): only the pins of packages the code imports are "
                                              "kept; the rest are conda's own resolution (the lock resolves them "
                                              "anew)"))
    return [dataclasses.replace(d, doc=d.line) for d in out]


_INCLUDE = re.compile(r"^(?:-r|--requirement)(?:\s*=\s*|\s+|(?=[^\s=]))(\S+)$")
# pip's options that name a package source: a requirements line of their own, or a pip install argument
_INDEX_OPTION = re.compile(r"^(-f|--find-links|-i|--index-url|--extra-index-url)(?:\s*=\s*|\s+|(?<=^-[fi])(?=[^\s=]))(\S+)$")
_INDEX_OPTIONS = frozenset({"-f", "--find-links", "-i", "--index-url", "--extra-index-url"})


def index_option(s: str, path: str, line: int | None) -> PackageSource | None:
    """The package source of a ``--find-links URL``/``-f URL``/``--extra-index-url URL``/``-i URL``
    line (requirements files, an environment file's ``pip:`` list), or None."""
    m = _INDEX_OPTION.match(s.strip())
    return PackageSource(m.group(1), m.group(2), path, line) if m else None


def parse_requirements_txt(text: str, path: str) -> MetaScan:
    warnings: list[tuple[str, int | None, str]] = []
    out: list[Declared] = []
    conda_items: list[tuple[int, bool]] = []
    system: list[tuple[int, str]] = []
    includes: list[tuple[int, str]] = []
    sources: list[PackageSource] = []
    # backslash continuations joined as pip joins them (pip-compile's `x==1.0 \` then `--hash=...`)
    for n, raw in logical_lines(text):
        s = raw.split(" #", 1)[0].strip()
        if not s or s.startswith("#"):
            continue
        if inc := _INCLUDE.match(s):
            includes.append((n, inc.group(1)))
            continue
        if (src := index_option(s, path, n)) is not None:
            sources.append(src)
            warnings.append((path, n, src.message()))
            continue
        if _CONDA_BUILT.fullmatch(s):  # `conda list --export`: name=version=build
            conda_items.append((n, True))
            name = s.split("=", 1)[0]
            if conda_system_reason(name) is not None:
                if name.lower() not in ("python", "pip"):
                    system.append((n, name))
                continue
        out.extend(_conda(d) for d in _items(s, path, n, warnings))
    if system:
        names = [nm for _n, nm in system]
        warnings.append((path, system[0][0], f"{len(names)} conda package{'s' if len(names) > 1 else ''} "
                         f"{'are' if len(names) > 1 else 'is'} not a Python distribution (the name table's "
                         f"[conda_system] says why each): {', '.join(names[:12])}{', ...' if len(names) > 12 else ''}"
                         "; not read"))
    return MetaScan(tuple(_as_export(out, conda_items, path, warnings, "conda list --export")), tuple(warnings),
                    includes=tuple(includes), sources=tuple(sources))


def _dev_file(path: str) -> str | None:
    """The kind of a development-only requirements file (``requirements-dev.txt``,
    ``requirements/test.txt``, ``docs/requirements.txt``), or None."""
    stem = path.lower().rsplit(".", 1)[0]
    m = re.search(r"(?:^|[/_.-])(dev|develop|development|test|tests|testing|docs?|lint|style|ci)(?:$|[/_.-])", stem)
    return m.group(1) if m else None


def parse_any_requirements_txt(text: str, path: str) -> MetaScan:
    """A requirements file under another name (``requirements_gpu.txt``, ``requirements/base.txt``);
    development ones (dev, test, docs, lint, ci) are not what the model needs: not read, said so."""
    kind = _dev_file(path)
    if kind is not None:
        return MetaScan((), ((path, None, f"a {kind} requirements file: not read (not what the model needs to "
                                          "run); add any of its pins to model.toml if the model needs them"),))
    return parse_requirements_txt(text, path)


def _toml(text: str, path: str) -> tuple[dict | None, list[tuple[str, int | None, str]]]:
    import tomllib

    try:
        return tomllib.loads(text), []
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"at line (\d+)", str(exc))
        line = getattr(exc, "lineno", None) or (int(at.group(1)) if at else None)
        return None, [(path, line, f"not valid TOML ({str(exc).splitlines()[0][:120]}); declared dependencies "
                                   "not read")]


def poetry_spec(spec: str) -> str | None:
    """A Poetry version constraint as PEP 440 (``^1.2.3`` -> ``>=1.2.3,<2.0.0``, ``~1.2`` ->
    ``>=1.2,<1.3``, ``*`` -> ``""``), or None when it cannot be read."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    out = []
    for part in (x.strip() for x in spec.split(",")):
        if part in ("", "*"):
            continue
        m = re.fullmatch(r"([\^~])\s*(\d+(?:\.\d+)*)", part)
        if m:
            nums = [int(x) for x in m.group(2).split(".")]
            if m.group(1) == "^":
                i = next((k for k, n in enumerate(nums) if n != 0), len(nums) - 1)
            else:  # ~1.2.3 and ~1.2 bump the minor, ~1 the major
                i = 1 if len(nums) > 1 else 0
            upper = [*nums[:i], nums[i] + 1]
            out += [f">={m.group(2)}", "<" + ".".join(map(str, upper + [0] * (max(len(nums), 2) - len(upper))))]
            continue
        if re.fullmatch(r"\d+(?:\.\d+)*(?:\.\*)?", part):
            part = "==" + part
        try:
            SpecifierSet(part)
        except InvalidSpecifier:
            return None
        out.append(part)
    return ",".join(out)


def parse_pyproject(text: str, path: str) -> MetaScan:
    """``[project] dependencies`` (PEP 621), Poetry's ``[tool.poetry.dependencies]`` and PDM's or
    Poetry's dependency groups are not read (development)."""
    data, warnings = _toml(text, path)
    if data is None:
        return MetaScan((), tuple(warnings), unreadable=True)
    out: list[Declared] = []
    project = data.get("project") if isinstance(data.get("project"), dict) else {}
    deps = project.get("dependencies", [])
    line = _line_of(text, "dependencies")
    for item in deps if isinstance(deps, list) else []:
        if isinstance(item, str) and (d := _req(item, path, _line_of(text, item) or line, warnings)):
            out.append(d)
    poetry = ((data.get("tool") or {}).get("poetry") or {}) if isinstance(data.get("tool"), dict) else {}
    pdeps = poetry.get("dependencies", {}) if isinstance(poetry, dict) else {}
    for name, val in pdeps.items() if isinstance(pdeps, dict) else []:
        if str(name).lower() == "python":
            continue
        raw = val.get("version", "*") if isinstance(val, dict) else val
        where = _line_of(text, f"{name} =") or _line_of(text, str(name))
        if isinstance(val, dict) and "git" in val:
            ref = val.get("rev") or val.get("tag") or val.get("branch") or ""
            url = str(val["git"])
            d = _req(f"{name} @ {url if url.startswith('git+') else 'git+' + url}{'@' + str(ref) if ref else ''}",
                     path, where, warnings)
            if d is not None:
                warnings.append((path, where, f"{name} comes from {url[:60]}, not PyPI: it becomes an extra source "
                                              "of the model (a full commit id) or a review item"))
                out.append(d)
            continue
        if isinstance(val, dict) and ("path" in val or "url" in val):
            warnings.append((path, where, f"{name} comes from {str(val.get('path') or val.get('url'))[:60]}, not an "
                                          "index: not read (the submission's own code, or a review item)"))
            continue
        spec = poetry_spec(str(raw))
        if spec is None:
            warnings.append((path, where, f"cannot read Poetry constraint {name} = {str(raw)[:40]!r}; took the name"))
            spec = ""
        if (d := _named(Declared(canonicalize_name(str(name)), f"{name}{spec}", path, where), warnings)) is not None:
            out.append(d)
    return MetaScan(tuple(out), tuple(warnings))


def parse_pipfile(text: str, path: str) -> MetaScan:
    """Pipenv's ``[packages]`` (``[dev-packages]`` is development: not read)."""
    data, warnings = _toml(text, path)
    if data is None:
        return MetaScan((), tuple(warnings), unreadable=True)
    out: list[Declared] = []
    pkgs = data.get("packages", {})
    for name, val in pkgs.items() if isinstance(pkgs, dict) else []:
        raw = val.get("version", "*") if isinstance(val, dict) else val
        where = _line_of(text, f"{name} =") or _line_of(text, str(name))
        if isinstance(val, dict) and "git" in val:  # {git = "https://...", ref = "..."}: a source, never a PyPI name
            ref = str(val.get("ref") or "")
            url = str(val["git"])
            if (d := _req(f"{name} @ {url if url.startswith('git+') else 'git+' + url}{'@' + ref if ref else ''}",
                          path, where, warnings)) is not None:
                out.append(d)
            continue
        if isinstance(val, dict) and ("path" in val or "file" in val):  # a folder or an archive, not an index
            warnings.append((path, where, f"{name} comes from {str(val.get('path') or val.get('file'))[:60]}, not an "
                                          "index: not read, and not a PyPI name (the submission's own code, or a "
                                          "review item)"))
            continue
        spec = "" if str(raw).strip() in ("", "*") else str(raw).strip()
        d = _req(f"{name}{spec}", path, where, warnings)
        if d is not None:
            out.append(d)
    return MetaScan(tuple(out), tuple(warnings))


def parse_lock_file(text: str, path: str) -> MetaScan:
    """The exact versions a lock file beside a project file resolved (poetry.lock, Pipfile.lock,
    uv.lock, pdm.lock): ``Declared(locked=True)`` entries, which never declare anything themselves;
    ``scan.classify`` takes their versions for the requirements the project file beside them
    declares with a range (summit, corpus8 dev: poetry's ``torch = "^1.4.0"`` resolved to 1.7.1)."""
    warnings: Warnings = []
    versions: dict[str, str] = {}
    if path.lower().endswith(".lock") and not path.lower().endswith("pipfile.lock"):
        data, warnings = _toml(text, path)
        if data is None:
            return MetaScan((), tuple(warnings), unreadable=True)
        for pkg in data.get("package", []) if isinstance(data.get("package"), list) else []:
            if isinstance(pkg, dict) and isinstance(pkg.get("name"), str) and isinstance(pkg.get("version"), str):
                if str(pkg.get("category", "main")) != "main":
                    continue  # poetry < 1.5's development packages
                versions.setdefault(canonicalize_name(pkg["name"]), pkg["version"])
    else:
        try:
            data = json.loads(text)
        except ValueError as exc:
            return MetaScan((), ((path, getattr(exc, "lineno", None), f"not JSON ({exc}); its versions not read"),),
                            unreadable=True)
        default = data.get("default") if isinstance(data, dict) else None
        for name, val in default.items() if isinstance(default, dict) else []:
            v = val.get("version") if isinstance(val, dict) else None
            if isinstance(v, str) and v.startswith("=="):
                versions[canonicalize_name(name)] = v[2:]
    out = []
    for name, version in versions.items():
        line = _line_of(text, f'name = "{name}"') or _line_of(text, f'"{name}"')
        out.append(Declared(name, f"{name}=={version}", path, line, locked=True))
    return MetaScan(tuple(out), tuple(warnings))


def parse_setup_cfg(text: str, path: str) -> MetaScan:
    """``[options] install_requires`` of a setup.cfg (one requirement per line)."""
    import configparser

    cp = configparser.ConfigParser(interpolation=None)
    try:
        cp.read_string(text)
    except configparser.Error as exc:
        return MetaScan((), ((path, getattr(exc, "lineno", None), f"cannot read ({str(exc).splitlines()[0][:100]}); "
                                                                  "declared dependencies not read"),),
                        unreadable=True)
    warnings: list[tuple[str, int | None, str]] = []
    out: list[Declared] = []
    raw = cp.get("options", "install_requires", fallback="")
    for item in raw.replace(";\n", "\n").splitlines():
        item = item.split(" #", 1)[0].strip()
        if item and (d := _req(item, path, _line_of(text, item), warnings)):
            out.append(d)
    return MetaScan(tuple(out), tuple(warnings))


def parse_setup_py(text: str, path: str) -> MetaScan:
    """``install_requires`` of a ``setup(...)`` call, read from the syntax tree (never run): lists
    of string literals, names bound to them and ``+`` of such. A computed part is said so, and a
    ``.txt`` file it names (``open("requirements.txt")``) is read as a requirements file."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        return MetaScan((), ((path, getattr(exc, "lineno", None), "cannot parse setup.py; its install_requires "
                                                                  "were not read"),))
    names: dict[str, ast.expr] = {}
    for node in ast.walk(tree):  # module level and inside `with open(...)` blocks alike
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            names[node.targets[0].id] = node.value
    warnings: list[tuple[str, int | None, str]] = []
    out: list[Declared] = []
    includes: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup"):
            continue
        for kw in node.keywords:
            if kw.arg != "install_requires":
                continue
            strings, computed = _setup_strings(kw.value, names, 0)
            if computed:
                files = [(c.lineno, str(c.value)) for part in computed for c in ast.walk(part)
                         if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value.endswith(".txt")]
                includes.extend(files)
                read = f"; the file it reads ({', '.join(f for _l, f in files)}) is read as a requirements file" \
                    if files else ""
                what = "the literal parts were read" if strings else "not read"
                warnings.append((path, kw.value.lineno, f"install_requires is computed in part (read from a file or "
                                                        f"built in code); {what}{read}: declare the rest in "
                                                        "model.toml if the model needs it"))
            for text_, line in strings:
                if d := _req(text_, path, line, warnings):
                    out.append(d)
    return MetaScan(tuple(out), tuple(warnings), includes=tuple(includes))


def _setup_strings(node: Any, names: Mapping[str, Any], depth: int) -> tuple[list[tuple[str, int]], list[Any]]:
    """The string literals an ``install_requires`` value is built from (a list or tuple of strings,
    a module-level name bound to one, ``+`` of such), and the parts that are computed (a file read,
    a comprehension), which the caller names."""
    import ast

    if isinstance(node, ast.Name) and node.id in names and depth < 4:
        return _setup_strings(names[node.id], names, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, lc = _setup_strings(node.left, names, depth)
        right, rc = _setup_strings(node.right, names, depth)
        return left + right, lc + rc
    if isinstance(node, (ast.List, ast.Tuple)):
        got: list[tuple[str, int]] = []
        computed: list[Any] = []
        for e in node.elts:
            if isinstance(e, ast.Constant) and isinstance(e.value, str):
                got.append((e.value, e.lineno))
            else:
                computed.append(e)
        return got, computed
    return [], [node]


# ------------------------------------------------------------------------------- README files

README_NAMES = frozenset({"readme.md", "readme.rst", "readme.txt", "readme", "readme.markdown", "install.md",
                          "installation.md", "install.rst", "installation.rst", "install.txt"})
_PROMPT = re.compile(r"^\s*(?:[$>%!]\s*|\(\w[\w.-]*\)\s*\$\s*)?")
_INLINE_CODE = re.compile(r"`+([^`]+)`+")


def _fenced_blocks(lines: list[str]) -> list[tuple[int, list[tuple[int, str]]]]:
    """Markdown fenced code blocks (``` or ~~~) and reStructuredText literal blocks (after a line
    ending in ``::`` or a ``.. code-block::`` directive): (first line, [(line, text)])."""
    blocks: list[tuple[int, list[tuple[int, str]]]] = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^\s*(```+|~~~+)", lines[i])
        if fence:
            body: list[tuple[int, str]] = []
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(fence.group(1)):
                body.append((j + 1, lines[j]))
                j += 1
            blocks.append((i + 2, body))
            i = j + 1
            continue
        if lines[i].rstrip().endswith("::"):
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            body = []
            while j < len(lines) and (not lines[j].strip() or lines[j][:1] in (" ", "\t")):
                if lines[j].strip():
                    body.append((j + 1, lines[j]))
                j += 1
            if body:
                blocks.append((body[0][0], body))
            i = j
            continue
        i += 1
    return blocks


# A README section that lists what to install: its heading names requirements
_REQ_SECTION = re.compile(r"\b(?:requirements?|dependenc(?:y|ies)|prerequisites?|environment|installation|install(?:ing)?|"
                          r"packages|software|set ?up|libraries)\b", re.I)
_MD_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_LIST_ITEM = re.compile(r"^\s{0,8}(?:[-*+\u2022]|\d{1,2}[.)])\s+(.+)$")
# a list item naming a package and its version: "PyTorch (tested on 1.2.0)", "Pandas 0.21.3",
# "scikit-learn>=0.22", "PyTorch Geometric (1.6.1)", "RDKit: 2019.09.1", "Python 3.6"
_LIST_REQ = re.compile(
    r"^(?P<name>[A-Za-z][A-Za-z0-9_.\-]*(?:\s+[A-Z][A-Za-z0-9_.\-]*)?)\s*(?:\(\s*|:\s*|,\s*)?"
    r"(?:(?:tested|used|verified|developed|run|built)\s+(?:on|with)\s+|version\s+|ver\.?\s*)?"
    r"(?P<op>==|>=|~=|=)?\s*v?(?P<v>\d+(?:\.\d+){1,3}(?:[a-z]+\d*)?)(?![\d.]*[A-Za-z]{2})(?P<tail>.*)$", re.I)
_LATER = re.compile(r"^\s*\)?\s*(?:\+|or\s+(?:later|higher|newer|above|greater)|and\s+(?:later|above|up))", re.I)


def readme_lists(lines: Sequence[str]) -> list[tuple[int, str, int]]:
    """Requirements a README lists in prose under a heading that names them (``## Requirements``,
    ``Dependencies:``, a reStructuredText title): (line, ``name==version`` or ``name>=version``,
    the list's first line) for each list item that names a package and a version ("Pytorch (tested
    on 1.2.0)", "Pandas 0.21.3", "scikit-learn>=0.22"; "1.2.0 or later" is ``>=``), and each line of
    its own that is only that ("tensorflow-gpu==2.2.0", "python 3.7"). Items without a version, other
    prose, and lists under other headings are not read."""
    out: list[tuple[int, str, int]] = []
    section = False
    start: int | None = None
    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        nxt = lines[n].strip() if n < len(lines) else ""
        heading = None
        if m := _MD_HEADING.match(line):
            heading = m.group(1)
        elif stripped and re.fullmatch(r"([=\-~^*#])\1{2,}", nxt) and not _LIST_ITEM.match(line):
            heading = stripped  # a reStructuredText title (its underline follows)
        elif re.fullmatch(r"(\*\*|__)[^*_]{2,60}\1:?|[A-Z][\w /&-]{2,60}:", stripped):
            heading = stripped  # a bold line, or a short line ending in a colon
        if heading is not None:
            section, start = bool(_REQ_SECTION.search(heading)), None
            continue
        if not section:
            continue
        item = _LIST_ITEM.match(line)
        # a list item, or a line that is nothing but a name and a version (CubicGAN's "## Prerequisites":
        # "python 3.7  ", "tensorflow-gpu==2.2.0  " on lines of their own, Markdown line breaks)
        raw = item.group(1) if item else re.sub(r"(?:\\|<br\s*/?>)$", "", stripped).strip()
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", raw).replace("**", "").replace("`", "").strip()
        m = _LIST_REQ.match(text)
        if m is None or (item is None and m.group("tail").strip(" )")):
            continue
        if re.search(r"\boptional(?:ly)?\b", m.group("tail"), re.I):
            continue  # "mpi4py >= 2.0 (optional)": the authors say the code runs without it (combo-bo)
        words = "-".join(m.group("name").split()).lower()
        name = renamed(words) or renamed(words.replace("-", "_")) or words  # PyTorch Geometric: torch-geometric
        op = ">=" if m.group("op") == ">=" or _LATER.match(m.group("tail")) else \
            ("~=" if m.group("op") == "~=" else "==")
        start = start or n
        out.append((n, f"{name}{op}{m.group('v')}", start))
    return out


def readme_commands(text: str) -> list[tuple[int, str, int | None]]:
    """Install commands a README gives, and requirement lists it shows: (line, text, block). A
    command is a ``pip install``/``conda install``/``conda create`` line in a code block, or in
    inline code (`pip install x`); a requirement list is a code block whose every line is a
    ``name==version``-like requirement (``block``: that block's first line, else None)."""
    lines = text.splitlines()
    out: list[tuple[int, str, int | None]] = []
    seen: set[int] = set()
    for start, body in _fenced_blocks(lines):
        cmds = [(n, _PROMPT.sub("", t, count=1).strip()) for n, t in body]
        cmds = [(n, t) for n, t in cmds if t and not t.startswith("#")]
        if cmds and all(_SIMPLE_REQ.match(t) and re.search(r"(==|>=|~=|<=|=)\s*\d", t) for _n, t in cmds):
            out.extend((n, t, start) for n, t in cmds)
            seen.update(n for n, _t in cmds)
            continue
        for n, t in cmds:
            if _PIP_COMMAND.match(t) or _CONDA_COMMAND.match(t):
                out.append((n, t, None))
                seen.add(n)
    for n, t, start in readme_lists(lines):
        if n not in seen:
            out.append((n, t, start))
            seen.add(n)
    for n, line in enumerate(lines, 1):
        if n in seen:
            continue
        t = _PROMPT.sub("", line, count=1).strip()
        if re.match(r"^(?: {4}|\t)", line) and (_PIP_COMMAND.match(t) or _CONDA_COMMAND.match(t)):
            out.append((n, t, None))  # an indented (Markdown) code block's command
            continue
        for span in _INLINE_CODE.findall(line):
            t = _PROMPT.sub("", span, count=1).strip()
            if _PIP_COMMAND.match(t) or _CONDA_COMMAND.match(t):
                out.append((n, t, None))
    return out


def parse_readme(text: str, path: str) -> MetaScan:
    """What a README says to install (``readme_commands``). These are documentation, weaker than a
    declaration file: every one is marked ``doc`` (see ``scan.weigh_commented``: kept when no other
    declaration names the package and its command or list installs something the code imports)."""
    warnings: Warnings = []
    out: list[Declared] = []
    for n, t, block in readme_commands(text):
        if block is not None:
            d = _req(t, path, n, warnings, evidence=t)
            ds = [_conda(d)] if d is not None else []
        elif _CONDA_COMMAND.match(t):
            ds = _conda_install(t, path, n, warnings)
        else:
            ds, ws = pip_install_line(t, path, n)
            warnings.extend(ws)
        out.extend(dataclasses.replace(d, doc=block if block is not None else n) for d in ds)
    return MetaScan(tuple(out), tuple(warnings))


PARSERS = {"metadata.json": parse_software_used, "info.json": parse_info_json,
           "environment.yml": parse_environment_yml, "environment.yaml": parse_environment_yml,
           "requirements.txt": parse_requirements_txt, "pyproject.toml": parse_pyproject,
           "pipfile": parse_pipfile, "setup.cfg": parse_setup_cfg, "setup.py": parse_setup_py,
           "poetry.lock": parse_lock_file, "pipfile.lock": parse_lock_file, "uv.lock": parse_lock_file,
           "pdm.lock": parse_lock_file}


def parser_for(path: str) -> Callable[[str, str], MetaScan] | None:
    """The reader of a declaration file by its name (relative posix path), or None: the names in
    PARSERS, any ``*requirement*.txt``, YAML files named for a conda environment, and any other
    YAML file as model metadata (its top-level ``requirements``; none declares nothing)."""
    name = path.rsplit("/", 1)[-1].lower()
    if name in README_NAMES:  # the submission's own README (or its first-level folders'), not vendored code's
        return parse_readme if path.count("/") <= 1 else None
    if name == "requirements.txt":
        return parse_any_requirements_txt  # docs/requirements.txt is development
    if name in PARSERS:
        return PARSERS[name]
    if name.endswith(".txt") and ("requirement" in name or "/requirements/" in f"/{path.lower()}"):
        return parse_any_requirements_txt
    if name.endswith((".yml", ".yaml")):
        return parse_environment_yml if re.search(r"env|conda", name) else parse_any_yml
    return None


_CONDA_TOP = re.compile(r"^dependencies\s*:", re.M)


def is_conda_environment(text: str) -> bool:
    """A YAML text with a top-level ``dependencies:`` key: a conda environment file, whatever its
    name (deepdta's ``deepdta.yml``, RoseTTAFold's ``RoseTTAFold-linux.yml``, corpus8 dev)."""
    return _CONDA_TOP.search(text) is not None


def parse_any_yml(text: str, path: str) -> MetaScan:
    """A YAML file not named for an environment: a conda environment file by its content
    (``is_conda_environment``), MatBench Discovery's model file (an ``environment:`` block:
    ``pyrepro.scan.matbench_discovery``), else model metadata."""
    from pyrepro.scan import matbench_discovery  # it reads requirements with this module's readers

    if is_conda_environment(text):
        return parse_environment_yml(text, path)
    if matbench_discovery.is_model_file(text):
        return matbench_discovery.parse_model_yml(text, path)
    return parse_metadata_yml(text, path)


_PIP_OPTS_WITH_VALUE = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url",
                        "-f", "--find-links", "-t", "--target", "--prefix", "--root", "--src", "--trusted-host",
                        "--platform", "--python-version", "--implementation", "--abi", "--progress-bar",
                        "--cache-dir", "--log", "--proxy", "--retries", "--timeout", "--upgrade-strategy"}


# An install line written as prose (a comment "# pip install pathlib2 and is in", a README sentence
# "pip install torch and torchvision to run the notebooks"): its conjunctions join two names and
# are skipped; any other English function word ends the requirements (catkit, corpus8 dev: "and",
# "is" and "in" had become requirements). No distribution of these names is meant by anyone.
_PROSE_JOINS = frozenset({"and", "or", "plus", "&"})
_PROSE_ENDS = frozenset({
    "is", "in", "to", "then", "the", "with", "for", "if", "from", "of", "on", "via", "first", "also", "will",
    "should", "must", "as", "you", "it", "this", "that", "are", "be", "using", "before", "after", "which", "we",
    "can", "not", "into", "so", "but", "when", "where", "your", "our", "a", "an", "see", "etc", "e.g.", "i.e.",
})


def pip_install_requirements(argv: tuple[str, ...], path: str, line: int | None, cell: int | None = None,
                             ) -> tuple[list[Declared], list[tuple[str, int | None, str]]]:
    """Declarations of a ``pip install ...`` command line (argv starting at ``pip``): each
    requirement with its version, located; options skipped; ``-r FILE`` noted."""
    warnings: list[tuple[str, int | None, str]] = []
    out: list[Declared] = []
    if len(argv) < 2 or argv[1] != "install":
        return out, warnings
    args = list(argv[2:])
    i = 0
    while i < len(args):
        a = args[i]
        if a.lower() in _PROSE_JOINS:
            i += 1
            continue
        if a.lower().rstrip(".,:;") in _PROSE_ENDS:
            break
        if a in ("-r", "--requirement"):
            if i + 1 < len(args):
                warnings.append((path, line, f"pip install -r {args[i + 1]}: scan that requirements file too"))
            i += 2
            continue
        if a in _INDEX_OPTIONS or (a.startswith("--") and a.split("=", 1)[0] in _INDEX_OPTIONS):
            src = index_option(a if "=" in a else f"{a} {args[i + 1] if i + 1 < len(args) else ''}", path, line)
            if src is not None:  # `pip install torch-scatter -f https://data.pyg.org/...`: said, not used
                warnings.append((path, line, f"pip install {src.message()}"))
            i += 1 if "=" in a else 2
            continue
        if a in _PIP_OPTS_WITH_VALUE:
            i += 2
            continue
        if a.startswith("-") and a not in ("-e", "--editable"):
            i += 1
            continue
        if a in ("-e", "--editable"):
            i += 1
            if i < len(args):
                d = _req(f"-e {args[i]}", path, line, warnings)
                if d:
                    out.append(Declared(d.name, d.spec, path, line, cell))
            i += 1
            continue
        # a folder ("allegro/", cloned a line before: nequip_mlearn) or an archive is not a PyPI name
        if a in (".", "..") or a.startswith(("./", "../", "/", "~")) or \
                (a.endswith((".whl", ".tar.gz", ".zip")) and "://" not in a) or ("/" in a and "://" not in a and "@" not in a):
            warnings.append((path, line, f"pip install {a}: a local path or file, not a declaration (code cloned "
                                         "or shipped with the submission: pin it as an extra source)"))
            i += 1
            continue
        if "$" in a or "`" in a:  # a shell expansion: `jaxlib==0.1.69+cuda$(cut -f1,2 ...)`, `torch==${TORCH}`
            kept = _unexpanded(a)
            warnings.append((path, line, f"pip install {a}: a shell expansion pyrepro cannot know; read as "
                                         f"{kept!r}" if kept else f"pip install {a}: a shell expansion; not read"))
            a = kept
            if not a:
                i += 1
                continue
        d = _req(a, path, line, warnings)
        if d:
            out.append(_alias(Declared(d.name, d.spec, path, line, cell)))
        i += 1
    return out, warnings


def _unexpanded(word: str) -> str:
    """A requirement word up to its first shell expansion (``$``, a backquote), with a local version
    label or an operator left dangling there taken off: ``jaxlib==0.1.69+cuda$(cut`` is
    ``jaxlib==0.1.69``, ``torch==${TORCH}`` is ``torch``; "" when not even a name is left."""
    head = re.split(r"[$`]", word, maxsplit=1)[0]
    head = re.sub(r"\+[^+=<>!~,;]*$", "", head)  # a local version label the expansion completed
    head = re.sub(r"[=<>!~.,*]+$", "", head)  # an operator whose version was the expansion
    return head if re.match(r"^[A-Za-z0-9]", head) else ""


def conda_install_requirements(argv: tuple[str, ...], path: str, line: int | None, cell: int | None = None,
                               ) -> tuple[list[Declared], list[tuple[str, int | None, str]]]:
    """Declarations of a ``conda install ...``/``conda create ...`` command (argv starting at
    ``conda``, ``mamba`` or ``micromamba``): each package by its PyPI name, with its version; system
    packages (cudatoolkit, compilers) and the Python itself not read. Nothing for other commands."""
    if len(argv) < 2 or argv[1] not in ("install", "create"):
        return [], []
    warnings: Warnings = []
    ds = _conda_install(" ".join(shlex.quote(a) for a in argv), path, line, warnings)
    return [dataclasses.replace(d, cell=cell) for d in ds], warnings


def pip_install_line(command: str, path: str, line: int | None, cell: int | None = None,
                     ) -> tuple[list[Declared], list[tuple[str, int | None, str]]]:
    """Declarations of a shell command text containing ``pip install`` (``!pip install x``,
    ``python -m pip install x``); nothing for other commands."""
    if "install" not in command or "pip" not in command:
        return [], []
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    for k, w in enumerate(words):
        base = w.rsplit("/", 1)[-1]
        if re.fullmatch(r"pip[\d.]*", base) and words[k + 1:k + 2] == ["install"]:
            end = next((j for j in range(k, len(words)) if words[j] in ("&&", ";", "||", "|")), len(words))
            return pip_install_requirements(("pip", *words[k + 1:end]), path, line, cell)
    return [], []
