"""``pyrepro scan``: what a contribution folder needs, from its code, offline.

Four stages, each with one door, joined by ``scan_path`` (in the manner of FawltyDeps' ``Analysis``):

1. ``walk(root)`` finds the files to read (``.py``, ``.ipynb``, shell entry points, declared
   metadata) and nothing else; it parses nothing.
2. ``extract(walked)`` turns each file into ``FileFacts``: located imports (with their optional /
   platform-guard context), shell commands, ``pip install`` declarations, ``sys.path`` inserts,
   warnings. It never executes anything; the result is a pure function of the file's bytes, so
   it is cached by content hash (a re-scan of an unchanged tree reads the cache) and big trees
   are extracted on all cores. ``conda install``/``conda create`` commands declare too, and so do
   a README's install commands and requirement lists (the folder's own README and its first-level
   folders'), though weaker than a declaration file (``weigh_commented``).
3. ``classify(walked, facts, python)`` sets apart the standard library, the contribution's own
   modules (resolved the way Python 3 does: from the folders scripts run in, for them and the
   files they import, and ``sys.path`` inserts; never from each importing file's folder, save a
   Python 2 file's) and Python 2 evidence.
4. ``resolve(classified, resolver)`` maps the rest to distributions (longest dotted prefix,
   namespace packages by their first non-namespace component) and sorts every import into one of
   three kinds: required, optional (``try/except ImportError``, ``TYPE_CHECKING``) and conditional
   (a platform/version guard, kept as a PEP 508 marker). Guesses are reported, never distributions.

The result is a frozen ``ScanResult`` whose ``to_json()`` is the documented ``--json`` contract
(docs/scan.md).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
import json
import os
import posixpath
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from pyrepro.errors import NotFoundError
from pyrepro.fsutil import decode_text, link_out
from pyrepro.resolve import Resolution, Resolver, api_eras
from pyrepro.scan import apiuse, fastpy, notebook, pep723, shell
from pyrepro.scan import metadata as meta
from pyrepro.scan import python as pysrc
from pyrepro.scan.stdlib import (
    known_versions,
    name_span,
    python2_only_names,
    python3_span,
    stdlib_names,
)
from pyrepro.types import Location

SKIP_DIRS = {".git", "__pycache__", ".ipynb_checkpoints", "node_modules", ".venv", "venv", ".tox", ".mypy_cache"}
MAX_BYTES = 20_000_000
# Bump when extraction changes what it returns: the per-file cache is keyed by it.
EXTRACT_VERSION = "13"
SHELL_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch", ".job", ".pbs")
PARALLEL_MIN_BYTES = 2_000_000  # below this, worker start-up costs more than it saves
FAST_MIN_BYTES = 2_000_000  # from this much Python on, the fast reader (fastpy) is used unless thorough


# ---------------------------------------------------------------------------------------- records

@dataclass(frozen=True)
class Warning_:
    location: Location
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


@dataclass(frozen=True)
class Tool:
    name: str
    command: str
    location: Location

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.name, "command": self.command, "location": self.location.to_json()}


@dataclass(frozen=True)
class EntryPoint:
    interpreter: str
    script: str
    location: Location

    def to_json(self) -> dict[str, Any]:
        return {"interpreter": self.interpreter, "script": self.script, "location": self.location.to_json()}


@dataclass(frozen=True)
class SourceFile:
    path: Path
    rel: str  # relative to the scanned folder, posix
    kind: str  # python | notebook | metadata | shell


@dataclass(frozen=True)
class FoundImport:
    """One absolute import statement (or literal dynamic import) where it was written."""

    module: str
    names: tuple[str, ...]
    location: Location
    optional: bool
    marker: str | None
    dynamic: bool = False
    branch: str | None = None  # the run-time ``if`` condition it sits under (python.RawImport.branch)


@dataclass(frozen=True)
class FoundCommand:
    tool: str
    argv: tuple[str, ...]
    location: Location


@dataclass(frozen=True)
class FileFacts:
    source: SourceFile
    imports: tuple[FoundImport, ...] = ()
    commands: tuple[FoundCommand, ...] = ()
    declared: tuple[meta.Declared, ...] = ()
    warnings: tuple[Warning_, ...] = ()
    unreadable: tuple[Warning_, ...] = ()  # a declaration file that could not be read at all, and why
    sources: tuple[meta.PackageSource, ...] = ()  # package sources besides PyPI it names (refused)
    python2: tuple[Warning_, ...] = ()
    python3: tuple[Warning_, ...] = ()  # the first Python-3-only syntax of a file without Python 2 evidence
    api_uses: tuple[tuple[str, Location], ...] = ()  # (``[api_eras]`` name, where it is used)
    entry_points: tuple[EntryPoint, ...] = ()
    syspath: tuple[tuple[Location, str], ...] = ()
    script: bool = False  # run as a script (a notebook, or ``if __name__ == "__main__"``)
    lines: int = 0
    code: bool = False  # counted as a code file


@dataclass(frozen=True)
class LocalModule:
    module: str
    path: str  # the file or folder that defines it, relative to the scanned folder
    locations: tuple[Location, ...]

    def to_json(self) -> dict[str, Any]:
        return {"module": self.module, "path": self.path, "locations": [loc.to_json() for loc in self.locations]}


KINDS = ("required", "optional", "conditional")


@dataclass(frozen=True)
class ImportRecord:
    module: str  # the name the import is resolved by (top-level, or a longer mapped/namespace prefix)
    distribution: str | None  # None when unresolved or only guessed
    resolved_with: str  # model-mapping | mapping | environment | declared | identity-guess | unresolved
    kind: str  # required | optional | conditional
    locations: tuple[Location, ...]
    note: str = ""
    marker: str | None = None  # for kind == "conditional"
    guess: str | None = None  # for identity guesses: the distribution name guessed
    # required, but every required occurrence sits under a run-time ``if`` (not a platform guard):
    # "path:line (under `condition`)" of the first; None when one occurrence is unconditional
    branch: str | None = None

    @property
    def optional(self) -> bool:
        """Not needed unconditionally (optional or conditional)."""
        return self.kind != "required"

    def to_json(self) -> dict[str, Any]:
        return {"module": self.module, "distribution": self.distribution, "resolved_with": self.resolved_with,
                "kind": self.kind, "marker": self.marker, "optional": self.kind == "optional",
                "locations": [loc.to_json() for loc in self.locations]} | ({"branch": self.branch} if self.branch else {})


@dataclass(frozen=True)
class StdlibUse:
    """An import of a standard-library module only some Python 3 versions have: evidence of the
    Python the code was written for (``import imp``: 3.11 at the newest)."""
    module: str
    first: str  # the first Python 3 version whose standard library has it
    last: str  # the last one
    location: Location
    optional: bool  # behind try/except ImportError or a guard: no evidence

    def __str__(self) -> str:
        return f"{self.location}: {self.module} (standard library of Python {self.first}-{self.last} only)"

    def to_json(self) -> dict[str, Any]:
        return {"module": self.module, "first": self.first, "last": self.last, "optional": self.optional,
                "location": self.location.to_json()}


@dataclass(frozen=True)
class ApiUse:
    """A use of an API that a later series of its distribution removed (the name table's
    ``[api_eras]``: ``tf.placeholder`` is TensorFlow 1): evidence of the releases the code was
    written for, and of the newest Python (``last``) with such a release."""
    module: str  # the dotted name as the table has it (tensorflow.placeholder)
    requirement: str  # what it needs (tensorflow<2)
    last: str  # the newest CPython with a release that satisfies it ("" : no bound)
    reason: str
    location: Location
    first: str = "2.7"  # no lower bound (``stdlib_bounds`` reads both)
    optional: bool = False
    removed: str = ""  # ISO day of the release that removed it ("" : not known)

    def __str__(self) -> str:
        return f"{self.location}: {self.module} ({self.requirement}: {self.reason})"

    def bound(self) -> str:
        """How ``evidence.stdlib_bounds`` names it."""
        return f"{self.location} uses {self.module}, which needs {self.requirement} (CPython {self.last} at the newest)"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.module, "requirement": self.requirement, "python_max": self.last,
                "reason": self.reason, "location": self.location.to_json()}


@dataclass(frozen=True)
class ScanResult:
    root: Path
    python: str
    imports: tuple[ImportRecord, ...]
    runtime_tools: tuple[Tool, ...]
    entry_points: tuple[EntryPoint, ...]
    declared: tuple[meta.Declared, ...]
    warnings: tuple[Warning_, ...]
    python2_evidence: tuple[Warning_, ...] = ()
    python3_evidence: tuple[Warning_, ...] = ()  # Python-3-only syntax: the code cannot run on 2.7
    files: int = 0
    lines: int = 0
    local: tuple[LocalModule, ...] = field(default=())
    stdlib_uses: tuple[StdlibUse, ...] = ()
    unreadable: tuple[Warning_, ...] = ()  # declaration files not read at all (broken JSON/TOML), with where
    api_uses: tuple[ApiUse, ...] = ()  # uses of APIs a later series removed (tf.placeholder)
    # package sources besides PyPI the declarations name (find_links, --extra-index-url): refused
    package_sources: tuple[meta.PackageSource, ...] = ()

    @property
    def local_modules(self) -> tuple[str, ...]:
        return tuple(m.module for m in self.local)

    def _dists(self, kind: str) -> set[str]:
        return {i.distribution for i in self.imports if i.distribution and i.kind == kind}

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(sorted(self._dists("required")))

    @property
    def distributions(self) -> tuple[str, ...]:
        """What the code needs unconditionally: the required, resolved distributions."""
        return self.required

    @property
    def optional_distributions(self) -> tuple[str, ...]:
        return tuple(sorted(self._dists("optional") - self._dists("required") - set(self.conditional)))

    @property
    def conditional(self) -> dict[str, str]:
        """distribution -> PEP 508 marker, for distributions needed only behind a guard."""
        out: dict[str, list[str]] = {}
        required = self._dists("required")
        for i in self.imports:
            if i.kind == "conditional" and i.distribution and i.distribution not in required and i.marker:
                out.setdefault(i.distribution, [])
                if i.marker not in out[i.distribution]:
                    out[i.distribution].append(i.marker)
        return {d: " or ".join(f"({m})" if " and " in m or " or " in m else m for m in ms) if len(ms) > 1 else ms[0]
                for d, ms in sorted(out.items())}

    @property
    def guesses(self) -> tuple[ImportRecord, ...]:
        return tuple(i for i in self.imports if i.resolved_with == "identity-guess")

    @property
    def unresolved(self) -> tuple[ImportRecord, ...]:
        return tuple(i for i in self.imports if i.resolved_with == "unresolved")

    @property
    def declared_names(self) -> tuple[str, ...]:
        return tuple(sorted({d.name for d in self.declared}))

    @property
    def undeclared(self) -> tuple[str, ...]:
        """Resolved distributions of every kind that no requirement file declares."""
        every = {i.distribution for i in self.imports if i.distribution}
        return tuple(sorted(every - set(self.declared_names)))

    @property
    def unused_declared(self) -> tuple[str, ...]:
        used = {i.distribution for i in self.imports if i.distribution} | {i.guess for i in self.guesses if i.guess} | \
            {i.module.lower() for i in self.unresolved}
        return tuple(d for d in self.declared_names if d not in used)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, object] = {
            "distributions": list(self.distributions),
            "required": list(self.required),
            "optional": list(self.optional_distributions),
            "conditional": [{"distribution": d, "marker": m} for d, m in self.conditional.items()],
            "imports": [i.to_json() for i in self.imports],
            "guesses": [{"module": i.module, "guess": i.guess, "hint": i.note,
                         "locations": [loc.to_json() for loc in i.locations]} for i in self.guesses],
            "unresolved": [{"module": i.module, "hint": i.note, "locations": [loc.to_json() for loc in i.locations]}
                           for i in self.unresolved],
            "local_modules": [m.to_json() for m in self.local],
            "runtime_tools": sorted({t.name for t in self.runtime_tools}),
            "entry_points": [e.to_json() for e in self.entry_points],
            "declared": list(self.declared_names),
            "declarations": [d.to_json() for d in self.declared],
            "undeclared": list(self.undeclared),
            "unused_declared": list(self.unused_declared),
            "warnings": [str(w) for w in (*self.warnings, *self.python2_evidence)],
            "stdlib_uses": [u.to_json() for u in self.stdlib_uses],
            "api_uses": [u.to_json() for u in self.api_uses],
        }
        if self.unreadable:  # only when there is one: the contract's other keys are always there
            out["unreadable_declarations"] = [{"location": w.location.to_json(), "message": w.message}
                                              for w in self.unreadable]
        if self.package_sources:  # likewise: only when a declaration names one
            out["package_sources"] = [s.to_json() for s in self.package_sources]
        return out


# ---------------------------------------------------------------------------------------- 1. walk

@dataclass(frozen=True)
class Walked:
    root: Path
    base: Path  # the folder locations are relative to
    files: tuple[SourceFile, ...]
    all_files: tuple[str, ...]  # every file under root (relative), for local-module lookups
    warnings: tuple[Warning_, ...]


def _rel(p: Path, root: Path) -> str:
    try:
        return p.relative_to(root).as_posix()
    except ValueError:
        return p.as_posix()


def _kind(name: str, rel: str | None) -> str | None:
    """What the scanner reads a file as, by its name and (for requirements/ folders) its path."""
    lower = name.lower()
    if lower == "setup.py":  # a build script: its install_requires are declarations, its imports build tools
        return "metadata"
    if lower.endswith(".py"):
        return "python"
    if lower.endswith(".ipynb"):
        return "notebook"
    if meta.parser_for(rel or name) is not None:
        return "metadata"
    if lower.endswith(SHELL_SUFFIXES) or lower in ("run", "job"):
        return "shell"
    if shell.is_dockerfile(name):
        return "dockerfile"
    return None


def walk(root: Path) -> Walked:
    """The files of a contribution the scanner reads (symlink loops and unreadable folders are
    warnings). ``root`` may be a single file."""
    root = Path(root)
    if not root.exists():
        raise NotFoundError(f"path not found: {root}", hint="give the contribution folder (or a single file) to scan")
    if root.is_dir() and not os.access(root, os.R_OK | os.X_OK):
        raise NotFoundError(f"folder not readable: {root}", hint="check its permissions")
    base = root if root.is_dir() else root.parent
    warnings: list[Warning_] = []
    if not root.is_dir():
        kind = _kind(root.name, root.name)
        if kind is None:
            warnings.append(Warning_(Location(root.name), "not a file the scanner reads (.py, .ipynb, shell "
                                     "scripts, metadata.json, info.json, environment.yml, requirements files, setup.py, "
                                     "setup.cfg, pyproject.toml, Pipfile)"))
            return Walked(root, base, (), (root.name,), tuple(warnings))
        return Walked(root, base, (SourceFile(root, root.name, kind),), (root.name,), tuple(warnings))
    files: list[SourceFile] = []
    every: list[str] = []
    seen: set[tuple[int, int]] = set()

    def onerror(exc: OSError) -> None:
        warnings.append(Warning_(Location(_rel(Path(exc.filename or root), root)), f"cannot read: {exc.strerror}"))

    base_s = os.fspath(base)
    for dirpath, dirnames, filenames in os.walk(base_s, onerror=onerror, followlinks=False):
        try:
            st = os.stat(dirpath)
            if (st.st_dev, st.st_ino) in seen:
                dirnames[:] = []
                continue
            seen.add((st.st_dev, st.st_ino))
        except OSError:
            pass
        dirnames[:] = sorted(n for n in dirnames if n not in SKIP_DIRS and not n.startswith("."))
        prefix = os.path.relpath(dirpath, base_s).replace(os.sep, "/")
        prefix = "" if prefix == "." else prefix + "/"
        for n in sorted(filenames):
            rel = prefix + n
            every.append(rel)
            kind = _kind(n, rel)
            if kind is not None:
                files.append(SourceFile(Path(dirpath, n), rel, kind))
    return Walked(root, base, tuple(files), tuple(every), tuple(warnings))


# ---------------------------------------------------------------------------------------- 2. extract

def _count_lines(text: str) -> int:
    """Lines as ``wc -l`` would count them, plus a last line without a newline."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _code_payload(parsed: pysrc.Parsed, cell: int | None, out: dict[str, list[Any]]) -> None:
    """Add one code text's facts (a .py file or a notebook cell) to a cacheable payload."""
    for imp in parsed.imports:
        if imp.relative or not imp.module:
            continue
        out["imports"].append([imp.module, list(imp.names), imp.line, cell, imp.optional, imp.marker, imp.dynamic,
                               imp.branch])
    for line, msg in parsed.warnings:
        out["warnings"].append([line, cell, msg])
    for line, ev in parsed.python2:
        out["python2"].append([line, cell, f"Python 2 evidence: {ev}"])
    for line, folder in parsed.syspath:
        out["syspath"].append([line, cell, folder])
    for cmd, line in parsed.commands:
        for tool, argv in shell.command_tools(cmd):
            out["commands"].append([tool, list(argv), line, cell])


def _empty_payload() -> dict[str, Any]:
    return {"imports": [], "commands": [], "warnings": [], "python2": [], "python3": [], "syspath": [],
            "entry_points": [], "script": False, "lines": 0, "code": False, "commented_installs": [], "api_uses": [],
            "script_metadata": None}


# Syntax that Python 2 cannot parse, found line by line (the fast reader parses only what can hold
# imports): a file that has it and parses is Python 3 code. Comment lines are skipped.
_PYTHON3_ONLY = (
    (re.compile(r"""(?<![\w'"])(?:[fF][rR]?|[rR][fF])(?:'|")"""), "an f-string"),
    (re.compile(r"^\s*async\s+def\s"), "async def"),
    (re.compile(r"^\s*nonlocal\s+\w"), "nonlocal"),
    (re.compile(r"\byield\s+from\s"), "yield from"),
    (re.compile(r"^\s*def\s+\w+\s*\(.*\)\s*->\s*[^:]+:\s*(?:#.*)?$"), "a return annotation"),
)


def _python3_only(text: str) -> tuple[int, str] | None:
    """(line, what) of the first Python-3-only syntax in ``text``, or None."""
    if not any(k in text for k in ("f'", 'f"', "F'", 'F"', "async", "nonlocal", "yield", "->")):
        return None
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        for rx, what in _PYTHON3_ONLY:
            if rx.search(line):
                return n, what
    return None


def _python3_payload(text: str, parsed: pysrc.Parsed, cell: int | None, out: dict[str, Any]) -> None:
    if out["python3"] or parsed.python2:
        return
    hit = _python3_only(text)
    if hit is not None:
        out["python3"].append([hit[0], cell, hit[1]])


# "# !pip install x" / "#%pip install x": the install line of a notebook kept as a comment (a converted
# notebook, a cell the author ran once): what the author installed, though nothing runs it now
_COMMENTED_INSTALL = re.compile(r"^\s*(?:#\s*)+[!%]?\s*((?:python3?\s+-m\s+)?pip3?\s+install\s.+)$")


def _commented_installs(text: str, cell: int | None, out: dict[str, Any]) -> None:
    if "pip" not in text:
        return
    for n, line in enumerate(text.splitlines(), 1):
        m = _COMMENTED_INSTALL.match(line)
        if m:
            for tool, argv in shell.command_tools(m.group(1)):
                if tool in ("pip", "pip3"):
                    out["commented_installs"].append([list(argv), n, cell])


def extract_bytes(kind: str, data: bytes, thorough: bool = False) -> dict[str, Any]:
    """The facts of one file's bytes as a JSON-able payload (no paths: the cache is shared by
    files with equal content). Pure: never raises on bad input, never runs anything.
    ``thorough``: parse every ``.py`` file in full (``python.parse_code``) instead of the fast
    reader (``fastpy.parse_fast``), which finds the same imports but reports syntax errors only
    in the statements it parses."""
    out = _empty_payload()
    if kind == "python":
        out["code"] = True
        if b"\0" in data[:8192]:
            out["warnings"].append([None, None, "binary content in a .py file; skipped"])
            return out
        text, enc_warn = pysrc.decode_source(data)
        if enc_warn:
            out["warnings"].append([1, None, enc_warn])
        out["lines"] = _count_lines(text)
        if pep723.MARKER in text:  # PEP 723 inline script metadata (`# /// script`): declarations
            out["script_metadata"] = pep723.extract(text)
        parsed = pysrc.parse_code(text) if thorough else fastpy.parse_fast(text)
        out["script"] = parsed.main_guard
        _code_payload(parsed, None, out)
        _python3_payload(text, parsed, None, out)
        _commented_installs(text, None, out)
        out["api_uses"] = [list(u) for u in apiuse.find_uses([(None, text)], api_eras())]
    elif kind == "notebook":
        out["code"] = True
        try:
            cells, lang = notebook.code_cells(data)
        except notebook.NotebookError as exc:
            out["warnings"].append([exc.line, None, f"broken notebook: {exc}; its imports were not read"])
            return out
        if lang is not None and lang not in ("python", "python3", "ipython", "python2"):
            out["warnings"].append([None, None, f"a {lang} notebook; skipped"])
            return out
        out["script"] = True  # a notebook runs in its own folder
        out["api_uses"] = [list(u) for u in apiuse.find_uses([(c.index, c.source) for c in cells], api_eras())]
        for c in cells:
            out["lines"] += _count_lines(c.source)
            cell_parsed = pysrc.parse_code(c.source)
            _code_payload(cell_parsed, c.index, out)
            _python3_payload(c.source, cell_parsed, c.index, out)
            _commented_installs(c.source, c.index, out)
    elif kind in ("shell", "dockerfile"):  # extract() has already checked that the file is a shell script
        text = decode_text(data)
        sh = shell.scan_shell(shell.dockerfile_script(text) if kind == "dockerfile" else text)
        for sc in sh.commands:
            out["commands"].append([sc.tool, list(sc.argv), sc.line, None])
        for interp, script, line in sh.entry_points:
            out["entry_points"].append([interp, script, line])
    return out


def _facts(src: SourceFile, payload: dict[str, Any]) -> FileFacts:
    rel = src.rel

    def loc(line: int | None, cell: int | None) -> Location:
        return Location(rel, line, cell)

    docs = docs_config(rel)  # a Sphinx conf.py: its imports build the documentation, not the model
    imports = tuple(FoundImport(m, tuple(names), loc(line, cell), bool(opt) or docs, marker, bool(dyn), branch)
                    for m, names, line, cell, opt, marker, dyn, branch in payload["imports"])
    commands = tuple(FoundCommand(tool, tuple(argv), loc(line, cell)) for tool, argv, line, cell in payload["commands"])
    declared: list[meta.Declared] = []
    warnings = [Warning_(loc(line, cell), msg) for line, cell, msg in payload["warnings"]]
    for c in commands:  # `pip install x==1.2` in notebooks, scripts and shell files is a declaration
        if c.tool in ("pip", "pip3") or c.tool.startswith("pip"):
            ds, ws = meta.pip_install_requirements(c.argv, rel, c.location.line, c.location.cell)
            declared.extend(ds)
            warnings.extend(Warning_(loc(line, c.location.cell), msg) for _p, line, msg in ws)
        elif c.tool in ("conda", "mamba", "micromamba"):  # `conda install pytorch=1.6.0` too
            ds, ws = meta.conda_install_requirements(c.argv, rel, c.location.line, c.location.cell)
            declared.extend(ds)
            warnings.extend(Warning_(loc(line, c.location.cell), msg) for _p, line, msg in ws)
    for argv, line, cell in payload.get("commented_installs", ()):  # declarations too, though commented out
        ds, ws = meta.pip_install_requirements(tuple(argv), rel, line, cell)
        declared.extend(dataclasses.replace(d, commented=True) for d in ds)
        warnings.extend(Warning_(loc(wline, cell), msg) for _p, wline, msg in ws)
    script_meta = meta.MetaScan((), ())
    if payload.get("script_metadata"):  # a `# /// script` block (PEP 723)
        script_meta = pep723.declarations(payload["script_metadata"], rel)
        declared.extend(script_meta.declared)
        warnings.extend(Warning_(loc(line, None), msg) for _p, line, msg in script_meta.warnings)
    return FileFacts(
        source=src, imports=imports, commands=commands, declared=tuple(declared), warnings=tuple(warnings),
        unreadable=tuple(Warning_(loc(line, None), msg) for _p, line, msg in script_meta.warnings[:1])
        if script_meta.unreadable else (), sources=script_meta.sources,
        python2=tuple(Warning_(loc(line, cell), msg) for line, cell, msg in payload["python2"]),
        python3=tuple(Warning_(loc(line, cell), msg) for line, cell, msg in payload.get("python3", ())),
        api_uses=tuple((name, loc(line, cell)) for name, line, cell in payload.get("api_uses", ())),
        entry_points=tuple(EntryPoint(i, s, loc(line, None)) for i, s, line in payload["entry_points"]),
        syspath=tuple((loc(line, cell), folder) for line, cell, folder in payload["syspath"]),
        script=bool(payload["script"]), lines=int(payload["lines"]), code=bool(payload["code"]))


DOCS_FOLDERS = frozenset({"docs", "doc", "documentation", "sphinx", "docs_src"})


def docs_config(rel: str) -> bool:
    """Whether ``rel`` is the Sphinx configuration of a documentation folder (``docs/conf.py``,
    ``doc/source/conf.py``): its imports (sphinx_rtd_theme, recommonmark) build the documentation,
    so they are optional, never the model's requirements."""
    parts = rel.lower().split("/")
    return parts[-1] == "conf.py" and any(p in DOCS_FOLDERS for p in parts[:-1])


def _cache_key(kind: str, data: bytes, thorough: bool) -> str:
    # the scanner's own code is part of the key: an edited extractor never reads an older answer
    return hashlib.sha256(f"{EXTRACT_VERSION}\0{_code_digest()}\0{kind}\0{int(thorough)}\0".encode()
                          + data).hexdigest()


class _ExtractCache:
    """The per-file cache: payloads keyed by the sha256 of (extractor version, kind, mode,
    bytes), in one SQLite file under the cache folder (one transaction per scan: a thousand
    small files cost ~0.3 s of file creation on this machine's disk). Any error (a corrupt or
    locked database, a read-only folder) only turns the cache off for that scan."""

    def __init__(self, folder: Path) -> None:
        import sqlite3

        self.db: Any = None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(os.fspath(folder / "extract.sqlite"), timeout=5)
            self.db.execute("CREATE TABLE IF NOT EXISTS payload (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        except (OSError, sqlite3.Error):
            self.close()

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        import sqlite3

        out: dict[str, dict[str, Any]] = {}
        if self.db is None or not keys:
            return out
        try:
            for k in range(0, len(keys), 500):
                part = list(keys[k:k + 500])
                rows = self.db.execute(f"SELECT key, value FROM payload WHERE key IN ({','.join('?' * len(part))})",
                                       part).fetchall()
                for key, value in rows:
                    try:
                        payload = json.loads(value)
                    except ValueError:
                        continue
                    if isinstance(payload, dict) and set(_empty_payload()) <= set(payload):
                        out[key] = payload
        except sqlite3.Error:
            self.close()
        return out

    def put_many(self, items: Sequence[tuple[str, dict[str, Any]]]) -> None:
        import sqlite3

        if self.db is None or not items:
            return
        try:
            with self.db:
                self.db.executemany("INSERT OR REPLACE INTO payload (key, value) VALUES (?, ?)",
                                    [(k, json.dumps(v, separators=(",", ":"))) for k, v in items])
        except sqlite3.Error:
            self.close()

    def close(self) -> None:
        if self.db is not None:
            import contextlib
            import sqlite3

            with contextlib.suppress(sqlite3.Error):
                self.db.close()
        self.db = None


# (kind, bytes, thorough), inherited by forked workers: no copy through a pipe
_FORKED_JOBS: list[tuple[str, bytes, bool]] = []


def _extract_job(k: int) -> dict[str, Any]:
    return extract_bytes(*_FORKED_JOBS[k])


def _link_warning(rel: str, link: str, base: Path, what: str = "") -> Warning_:
    """The warning for a file reached through a link out of the scanned folder: it names the link
    and what the link says (the submission's own text), never anything of the target's."""
    try:
        said = os.readlink(base / link)
    except OSError:
        said = "?"
    return Warning_(Location(rel), f"{what}{link} is a link to {said[:80]!r}, outside the scanned folder; not read")


def _read(src: SourceFile, base: Path | None = None) -> tuple[bytes | None, Warning_ | None]:
    try:
        if base is not None:  # any part of the path may be a link (an include through etc -> /etc)
            out = link_out(base, src.rel)
            if out is not None:
                return None, _link_warning(src.rel, out, base)
        st = src.path.lstat()
        if stat.S_ISLNK(st.st_mode):
            st = src.path.stat()  # raises for dangling links and loops
        if not stat.S_ISREG(st.st_mode):
            return None, None
        if st.st_size > MAX_BYTES and src.kind in ("python", "notebook"):
            return None, Warning_(Location(src.rel), f"larger than {MAX_BYTES // 1_000_000} MB; skipped")
        return src.path.read_bytes(), None
    except OSError as exc:
        return None, Warning_(Location(src.rel), f"cannot read: {exc.strerror or exc}")


def extract(walked: Walked, *, cache: Path | None = None, jobs: int | None = None,
            thorough: bool | None = None) -> tuple[FileFacts, ...]:
    """Facts of every file (see the module docstring). ``cache``: folder of the per-file cache
    (None: no cache). ``jobs``: worker processes for big trees (default: the machine's cores).
    ``thorough``: parse every ``.py`` file in full; None (auto) does so below ``FAST_MIN_BYTES``
    of Python (one contribution: every syntax error is reported) and reads bigger trees (a whole
    leaderboard) with the fast reader, which finds the same imports."""
    facts: list[FileFacts | None] = []
    read: list[tuple[SourceFile, bytes]] = []
    base = walked.base.resolve()
    # files read as declarations in their own right; an include of one is not read twice
    included = {s.rel for s in walked.files if s.kind == "metadata"}
    included |= {os.path.realpath(s.path) for s in walked.files if s.kind == "metadata"}
    pending = collections.deque(walked.files)
    while pending:
        src = pending.popleft()
        data, warn = _read(src, base)
        if data is None:
            facts.append(FileFacts(src, warnings=(warn,) if warn else ()))
            continue
        if src.kind == "metadata":
            text = decode_text(data)
            parse = meta.parser_for(src.rel) or meta.parse_requirements_txt  # an include: a requirements file
            ms = parse(text, src.rel)
            ws = tuple(Warning_(Location(p, line), msg) for p, line, msg in ms.warnings)
            more, inc_ws = _includes(src, ms.includes, walked.base, included)
            pending.extendleft(reversed(more))
            facts.append(FileFacts(src, declared=ms.declared, warnings=ws + inc_ws,
                                   unreadable=ws[:1] if ms.unreadable else (), sources=ms.sources))
            continue
        if src.kind == "shell" and not shell.is_shell_file(src.path.name, data[:200]):
            facts.append(FileFacts(src))
            continue
        read.append((src, data))
    if thorough is None:
        thorough = sum(len(d) for s, d in read if s.kind == "python") < FAST_MIN_BYTES
    store = _ExtractCache(cache) if cache is not None else None
    # content-addressed: files with equal bytes (copies are common in a leaderboard) are read once
    keys = [_cache_key(src.kind, data, thorough) for src, data in read]
    hits = store.get_many(sorted(set(keys))) if store else {}
    todo: dict[str, tuple[str, bytes]] = {}
    slots: list[tuple[int, SourceFile, str]] = []
    for (src, data), key in zip(read, keys, strict=True):
        if key in hits:
            facts.append(_facts(src, hits[key]))
            continue
        facts.append(None)
        slots.append((len(facts) - 1, src, key))
        todo.setdefault(key, (src.kind, data))
    if todo:
        order = list(todo)
        big = sum(len(todo[k][1]) for k in order) >= PARALLEL_MIN_BYTES
        workers = jobs if jobs is not None else _default_jobs()
        if big and workers > 1 and len(order) > 1:
            payloads = _parallel([(*todo[k], thorough) for k in order], workers)
        else:
            payloads = [extract_bytes(*todo[k], thorough) for k in order]
        made = dict(zip(order, payloads, strict=True))
        for i, src, key in slots:
            facts[i] = _facts(src, made[key])
        if store:
            store.put_many(list(made.items()))
    if store:
        store.close()
    return tuple(f for f in facts if f is not None)


def _includes(src: SourceFile, refs: Sequence[tuple[int, str]], base: Path,
              seen: set[str]) -> tuple[list[SourceFile], tuple[Warning_, ...]]:
    """The requirements files ``src`` includes (``-r base.txt``), as pip finds them: relative to
    ``src``'s folder. Each file is read once (include cycles end); one outside the folder, or
    missing from it, or given as a web address is a warning naming the line."""
    files: list[SourceFile] = []
    warnings: list[Warning_] = []
    folder = PurePosixPath(src.rel).parent
    for line, ref in refs:
        where = Location(src.rel, line)
        if re.match(r"^[a-z][a-z0-9+.-]*://", ref):
            warnings.append(Warning_(where, f"includes {ref}: a requirements file at a web address; not read (add its "
                                            "pins to model.toml if the model needs them)"))
            continue
        rel = posixpath.normpath((folder / ref).as_posix())
        path = base / rel
        if rel.startswith("../") or rel == ".." or posixpath.isabs(rel):
            warnings.append(Warning_(where, f"includes {ref}: outside the scanned folder; not read"))
            continue
        out = link_out(base, rel)
        if out is not None:  # resolved and checked before anything is opened: a link never leads out
            w = _link_warning(src.rel, out, base, f"includes {ref}: ")
            warnings.append(Warning_(where, w.message))
            continue
        if not path.is_file():
            warnings.append(Warning_(where, f"includes {ref}: no such file in the folder ({rel}); its requirements are "
                                            "missing (add the file, or their pins to model.toml)"))
            continue
        real = os.path.realpath(path)  # one file reached by two names (a link inside the folder) is read once
        if rel in seen or real in seen:
            continue
        seen.update((rel, real))
        files.append(SourceFile(path, rel, "metadata"))
    return files, tuple(warnings)


def _default_jobs() -> int:
    """``PYREPRO_SCAN_JOBS`` when set (1 turns parallel extraction off), else the machine's cores."""
    try:
        return max(1, int(os.environ.get("PYREPRO_SCAN_JOBS", "") or (os.cpu_count() or 1)))
    except ValueError:
        return os.cpu_count() or 1


def _parallel(jobs: list[tuple[str, bytes, bool]], workers: int) -> list[dict[str, Any]]:
    import concurrent.futures
    import multiprocessing

    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:
        return [extract_bytes(*j) for j in jobs]
    # biggest first, so no worker is left with a huge file at the end
    order = sorted(range(len(jobs)), key=lambda k: -len(jobs[k][1]))
    _FORKED_JOBS[:] = jobs
    try:
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            results = list(pool.map(_extract_job, order, chunksize=4))
    except (OSError, concurrent.futures.process.BrokenProcessPool):
        return [extract_bytes(*j) for j in jobs]
    finally:
        _FORKED_JOBS.clear()
    out: list[dict[str, Any]] = [{}] * len(jobs)
    for k, r in zip(order, results, strict=True):
        out[k] = r
    return out


# ---------------------------------------------------------------------------------------- 3. classify

RUNTIME_TOOLS = {"zip", "unzip", "wget", "curl", "git", "pip", "pip3", "conda", "mamba", "module", "srun",
                 "mpirun", "tar", "ipython", "jupyter", "nvidia-smi", "rm", "cp", "mv"}
_LOCAL_EXTS = (".py", ".so", ".pyd", ".pyx")


def _is_runtime_tool(tool: str, script_dir: Path) -> bool:
    """Known tools, Python interpreters, and ``*.py`` console scripts that a distribution puts
    on PATH (alignn's ``train_folder.py``), not scripts of the contribution itself."""
    if tool in RUNTIME_TOOLS or tool.startswith("python"):
        return True
    return tool.endswith(".py") and "/" not in tool and not (script_dir / tool).exists()


@dataclass(frozen=True)
class Classified:
    third_party: tuple[FoundImport, ...]
    local: tuple[LocalModule, ...]
    tree_modules: dict[str, str]  # every module name the tree defines anywhere -> first path
    python2: tuple[Warning_, ...]
    warnings: tuple[Warning_, ...]
    tools: tuple[Tool, ...]
    entry_points: tuple[EntryPoint, ...]
    declared: tuple[meta.Declared, ...]
    files: int
    lines: int
    stdlib_uses: tuple[StdlibUse, ...] = ()
    unreadable: tuple[Warning_, ...] = ()
    root_package: bool = False  # the scanned folder has an __init__.py of its own
    api_uses: tuple[ApiUse, ...] = ()
    python3: tuple[Warning_, ...] = ()  # code only Python 3 parses (f-strings, keyword-only arguments, ...)
    #: top-level module -> (where, folder) of a sys.path insert, in the importing file, of a folder
    #: outside the scanned tree that does not hold it: the repository's code, out of the folder
    outside: dict[str, tuple[Location, str]] = field(default_factory=dict)


class _LocalIndex:
    """Module names importable from given folders: ``x.py``, extension modules and folders that
    hold Python code (a folder of CSVs or run logs is not a package). Folders inside the tree are
    relative posix strings ("" is the scanned folder); folders outside it are absolute paths."""

    def __init__(self, walked: Walked) -> None:
        self.base = walked.base.resolve()
        self.names: dict[str, dict[str, str]] = {}  # folder (relative) -> module -> defining path
        code_dirs: set[str] = set()
        for rel in walked.all_files:
            parent, _, name = rel.rpartition("/")
            if name.endswith(_LOCAL_EXTS):
                self.names.setdefault(parent, {}).setdefault(name.split(".", 1)[0], rel)
                if name.endswith(".py"):
                    parts = parent.split("/") if parent else []
                    for i in range(len(parts)):
                        code_dirs.add("/".join(parts[:i + 1]))
        for d in code_dirs:
            parent, _, name = d.rpartition("/")
            self.names.setdefault(parent, {}).setdefault(name, d + "/")
        self.outside: dict[str, dict[str, str]] = {}

    def folder_key(self, folder: str) -> str:
        """``folder`` (relative to the scanned folder, may contain ``..``) as a lookup key."""
        norm = os.path.normpath(folder) if folder else "."
        if norm == ".":
            return ""
        if not norm.startswith("../") and norm != ".." and not os.path.isabs(norm):
            return norm.replace(os.sep, "/")
        full = Path(os.path.normpath(self.base / norm))
        try:
            rel = full.relative_to(self.base).as_posix()
        except ValueError:
            return str(full)
        return "" if rel == "." else rel

    def lookup(self, key: str, module: str) -> str | None:
        if key.startswith("/"):
            return self._outside(key).get(module)
        return self.names.get(key, {}).get(module)

    def _outside(self, folder: str) -> dict[str, str]:
        """A folder outside the scanned tree (``sys.path.insert(0, "../lib")``): one listing."""
        if folder not in self.outside:
            names: dict[str, str] = {}
            try:
                with os.scandir(folder) as it:
                    for e in it:
                        try:
                            if e.name.endswith(_LOCAL_EXTS) and e.is_file():
                                names.setdefault(e.name.split(".", 1)[0], e.path)
                            elif e.is_dir() and any(p.suffix == ".py" for p in Path(e.path).rglob("*.py")):
                                names.setdefault(e.name, e.path + "/")
                        except OSError:
                            continue
            except OSError:
                pass
            self.outside[folder] = names
        return self.outside[folder]


def _ancestors(folder: str) -> Iterable[str]:
    """``a/b`` -> ``a/b``, ``a``, ``""``."""
    while folder:
        yield folder
        folder = folder.rpartition("/")[0]
    yield ""


def _tree_modules(all_files: Iterable[str]) -> dict[str, str]:
    """Module names the scanned tree itself defines anywhere (``x.py`` files and folders holding
    ``.py`` files) -> the first such path. Only consulted for names no resolver knows, so a
    folder named like a real package (``jarvis/``) never hides it."""
    out: dict[str, str] = {}
    for rel in all_files:
        if not rel.endswith(".py"):
            continue
        parts = rel.split("/")
        out.setdefault(parts[-1][:-3], rel)
        for i, d in enumerate(parts[:-1]):
            out.setdefault(d, "/".join(parts[:i + 1]) + "/")
    return out


def _self_package_paths(key: str, occ: Sequence[FoundImport], classified: Classified) -> list[str]:
    """A submitted folder that is itself a package imports itself by the name it had in its
    repository (the ``rexgen_direct/`` folder of connorcoley/rexgen_direct: ``from
    rexgen_direct.core_wln_global.nn import linearND``, with ``core_wln_global/`` at the folder's
    top). Taken so when the folder has an ``__init__.py`` of its own and every import of the name
    goes on into a module at the folder's top; the paths it goes into, else an empty list. A bare
    ``import X`` says nothing of where ``X`` is, so one such import is no evidence."""
    if not classified.root_package:
        return []
    top = key.split(".")[0]
    inside: list[str] = []
    for o in occ:
        parts = o.module.split(".")
        if parts[0] != top:
            return []
        nxt = parts[1] if len(parts) > 1 else (o.names[0] if o.names else None)
        where = classified.tree_modules.get(nxt) if nxt else None
        if where is None or "/" in where.rstrip("/"):  # not at the folder's top
            return []
        inside.append(where)
    return sorted(set(inside))


def _unimported_script(f: FileFacts, imported: set[str], packages: set[str]) -> bool:
    """A ``.py`` file outside any package whose name no file imports (``imported``: the names in
    imports of the tree's own modules) is run as a script (``python run.py``), so its folder is
    where its absolute imports resolve from. When in doubt (the name is imported somewhere), it is not."""
    if f.source.kind != "python":
        return False
    folder, _, name = f.source.rel.rpartition("/")
    stem = name[:-3] if name.endswith(".py") else name
    return stem != "__init__" and stem not in imported and folder not in packages


def classify(walked: Walked, facts: Sequence[FileFacts], python: str) -> Classified:
    """Standard library, the contribution's own modules, and third-party imports (see above)."""
    stdlib = stdlib_names(python)
    warnings: list[Warning_] = list(walked.warnings)
    if python not in known_versions():
        nearest = next(v for v in known_versions() if stdlib_names(v) is stdlib)
        warnings.append(Warning_(Location("--python"), f"no standard-library table for Python {python!r}; used "
                                 f"{nearest} (known: {', '.join(known_versions())})"))
    py2_names = python2_only_names()
    base = walked.base
    index = _LocalIndex(walked)
    entries = [e for f in facts for e in f.entry_points]
    # Where Python 3 resolves an absolute import of a file from: the folders on sys.path in the runs
    # that execute the file, never a folder merely because it holds a file of that name
    # (utils/matbench.py does not hide the real matbench from utils/bench.py unless a run puts
    # utils/ on sys.path). The scanned folder, for every file (top-level scripts run there); the
    # folder of a script run directly (a notebook, an `if __name__ == "__main__"` file, a file
    # nothing imports, a script a shell entry runs), for that script; a sys.path insert that can be
    # read without running anything, for the files at and below the inserting file's folder; and
    # the folders of every run a file takes part in, for the files it imports, on and on (a run's
    # sys.path is the same in every module it imports). A Python 2 file also finds its own folder's
    # modules (implicit relative imports). A leaderboard of many contributions therefore never lends
    # one contribution's modules to another.
    scoped: dict[str, list[str]] = {}  # folder -> folders inserted for the files at and below it
    runs: dict[str, list[str]] = {}  # file -> folders the runs executing it put on sys.path

    def add(table: dict[str, list[str]], at: str, key: str) -> None:
        targets = table.setdefault(at, [])
        if key not in targets:
            targets.append(key)

    # the names a file of the tree may be imported by: the parts of imports that start at a module
    # the tree defines (``kgcnn.data.transform`` imports no transform.py of the tree's)
    tree_modules = _tree_modules(walked.all_files)
    imported = {part for f in facts for imp in f.imports if imp.module.split(".")[0] in tree_modules
                for part in (*imp.module.split("."), *imp.names)}
    packages = {rel.rpartition("/")[0] for rel in walked.all_files if rel.endswith("/__init__.py")}
    outside_inserts: dict[str, list[tuple[Location, str]]] = {}  # file -> its inserts of folders outside
    py2_code: set[str] = set()
    py3_code = False
    for f in facts:
        folder = f.source.rel.rpartition("/")[0]
        if folder and (f.script or _unimported_script(f, imported, packages)):
            add(runs, f.source.rel, folder)
        for loc, inserted in f.syspath:
            if "__file__" not in inserted:
                key = index.folder_key(f"{folder}/{inserted}" if folder else inserted)
                add(scoped, folder, key)
                if key.startswith("/"):
                    outside_inserts.setdefault(f.source.rel, []).append((loc, inserted))
        if f.python2 or any((top := imp.module.split(".")[0]) in py2_names and top not in stdlib for imp in f.imports):
            py2_code.add(f.source.rel)
        py3_code = py3_code or bool(f.python3)
    if not py3_code and any(not _documentation(rel) for rel in py2_code):  # Python 2 code, all of it
        py2_code = {f.source.rel for f in facts}
    for e in entries:
        shell_dir = e.location.path.rpartition("/")[0]
        for cand in (f"{shell_dir}/{e.script}" if shell_dir else e.script, e.script):
            if (base / cand).is_file():
                key = index.folder_key(cand.rpartition("/")[0])
                if key.startswith("/"):
                    add(scoped, shell_dir, key)
                elif key:
                    add(runs, index.folder_key(cand), key)
                break

    deeper_of: dict[str, list[str]] = {}

    def deeper(rel: str) -> list[str]:
        """The inserted folders a file sees beyond those every file sees (the scanned folder's own)."""
        folder = rel.rpartition("/")[0]
        if folder not in deeper_of:
            deeper_of[folder] = [k for scope in _ancestors(folder) if scope for k in scoped.get(scope, ())]
        return deeper_of[folder]

    def folders_of(rel: str) -> tuple[str, ...]:
        own = (rel.rpartition("/")[0],) if rel in py2_code else ()
        return tuple(dict.fromkeys((*own, *runs.get(rel, ()), *deeper(rel), "", *scoped.get("", ()))))

    def first(folders: Sequence[str], top: str, dotted: bool, rel: str = "") -> str | None:
        for key in folders:
            p = index.lookup(key, top)
            # a module file holds no submodules (``from matbench.bench import ...`` in
            # utils/matbench.py), and a file's import of its own name is not itself: the distribution
            if p is not None and (p.endswith("/") or not (dotted or p == rel)):
                return p
        return None

    found: dict[tuple[tuple[str, ...], str, bool], str | None] = {}

    def local_path(rel: str, folders: tuple[str, ...], top: str, dotted: bool) -> str | None:
        key = (folders, top, dotted)
        if key not in found:
            found[key] = first(folders, top, dotted)
        p = found[key]
        return first(folders, top, dotted, rel) if p == rel else p

    by_rel = {f.source.rel: f for f in facts}
    under: dict[str, list[str]] = {}  # a local package folder -> its files
    names_of: dict[str, list[tuple[str, bool]]] = {}  # a file -> the names it imports beyond the standard library
    todo = [rel for rel in by_rel if runs.get(rel) or deeper(rel)]
    while todo:  # the folders of each run, to the files it imports
        rel = todo.pop()
        carried = [*runs.get(rel, ()), *deeper(rel)]
        sys_path = folders_of(rel)
        if rel not in names_of:
            names_of[rel] = list(dict.fromkeys((top, "." in imp.module) for imp in by_rel[rel].imports
                                               if (top := imp.module.split(".")[0]) not in stdlib))
        for top, dotted in names_of[rel]:
            p = local_path(rel, sys_path, top, dotted)
            if p is None or p.startswith("/"):
                continue
            if p.endswith("/"):
                if p not in under:
                    under[p] = [r for r in by_rel if r.startswith(p)]
                targets = under[p]
            else:
                targets = [p] if p in by_rel else []
            for t in targets:
                have = {*runs.get(t, ()), *deeper(t)}
                new = [k for k in carried if k not in have]
                if new:
                    runs.setdefault(t, []).extend(new)
                    todo.append(t)

    third: list[FoundImport] = []
    outside: dict[str, tuple[Location, str]] = {}
    local_locs: dict[str, tuple[str, list[Location]]] = {}
    python2: list[Warning_] = []
    uses: list[StdlibUse] = []
    tools: list[Tool] = []
    declared: list[meta.Declared] = []
    unreadable: list[Warning_] = []
    n_files = n_lines = 0
    for f in facts:
        warnings.extend(f.warnings)
        unreadable.extend(f.unreadable)
        python2.extend(f.python2)
        declared.extend(f.declared)
        n_files += f.code
        n_lines += f.lines
        script_dir = (base / f.source.rel).parent
        sys_path = folders_of(f.source.rel)
        for c in f.commands:
            if _is_runtime_tool(c.tool, script_dir):
                tools.append(Tool(c.tool, " ".join(c.argv)[:200], c.location))
        for imp in f.imports:
            top = imp.module.split(".")[0]
            if top in py2_names and top not in stdlib:
                python2.append(Warning_(imp.location, f"Python 2 evidence: stdlib module {top} exists only in Python 2"))
                continue
            span = python3_span(top)
            if span is not None:
                uses.append(StdlibUse(top, span[0], span[1], imp.location, imp.optional or imp.marker is not None))
            elif top in stdlib or top == "__future__":
                # a name inside the standard library that only some Pythons have (``from collections
                # import Iterable``: 3.9 at the newest; ``from functools import cache``: 3.9 at the oldest)
                for dotted in (*((imp.module,) if "." in imp.module else ()),
                               *(f"{imp.module}.{n}" for n in imp.names if n != "*")):
                    named = name_span(dotted)
                    if named is not None:
                        uses.append(StdlibUse(dotted, named[0], named[1], imp.location,
                                              imp.optional or imp.marker is not None))
            if top in stdlib or top == "__future__":
                continue
            where = local_path(f.source.rel, sys_path, top, "." in imp.module)
            if where is not None:
                entry = local_locs.setdefault(top, (where, []))
                entry[1].append(imp.location)
                continue
            before = [(loc, ins) for loc, ins in outside_inserts.get(f.source.rel, ())
                      if (loc.line or 0) <= (imp.location.line or 0)]
            if before:
                folders = list(dict.fromkeys(posixpath.normpath(ins) for _loc, ins in before))
                outside.setdefault(top, (before[0][0], " and ".join(folders[:3])))
            third.append(imp)
    if not entries and walked.root.is_dir():
        for cand in ("run.py", "main.py", "train.py"):
            if (walked.root / cand).is_file():
                entries.append(EntryPoint("python", cand, Location(cand)))
                break
    python3 = [w for f in facts for w in f.python3]
    in_docs = [w for w in python2 if _documentation(str(w.location.path))]
    if in_docs and len(in_docs) == len(python2):
        # a documentation build's configuration (Sphinx's docs/conf.py of 2017 with a print
        # statement) is not the submission's code: it says nothing of the Python the code needs
        warnings.append(Warning_(in_docs[0].location, (
            f"Python 2 code only in documentation ({', '.join(sorted({str(w.location.path) for w in in_docs})[:3])}): "
            "not taken as the submission's Python")))
        python2 = []
    if python2 and python3:
        # Python 2 code beside code only Python 3 parses (one old helper script in a 2023 project):
        # a leftover, not evidence of the submission's Python; said once, with both places
        py2_files = sorted({str(w.location.path) for w in python2})
        warnings.append(Warning_(python2[0].location, (
            f"Python 2 code in {len(py2_files)} file(s) ({', '.join(py2_files[:3])}"
            f"{', ...' if len(py2_files) > 3 else ''}) beside Python 3 code ({python3[0].location}: "
            f"{python3[0].message}): taken as leftovers, not as the submission's Python")))
        python2 = []
    declared = _refined_by_locks(declared)
    local = tuple(LocalModule(m, p, tuple(sorted(set(locs), key=_loc_key))) for m, (p, locs) in sorted(local_locs.items()))
    eras = api_eras()
    api = tuple(sorted((ApiUse(name, eras[name][0], eras[name][1], eras[name][2], where, removed=eras[name][3])
                        for f in facts for name, where in f.api_uses if name in eras),
                       key=lambda u: _loc_key(u.location)))
    return Classified(tuple(third), local, tree_modules,
                      tuple(python2), tuple(warnings), tuple(tools), tuple(entries), tuple(declared), n_files, n_lines,
                      tuple(uses), tuple(unreadable), "__init__.py" in walked.all_files, api, tuple(python3),
                      outside)


_LOCKED_PROJECTS = frozenset({"pyproject.toml", "pipfile"})


def _refined_by_locks(declared: list[meta.Declared]) -> list[meta.Declared]:
    """A lock file beside a project file (poetry.lock beside pyproject.toml, Pipfile.lock beside
    Pipfile) holds the versions the authors resolved: a requirement that project file declares
    with a range (``torch = "^1.4.0"``) takes the locked version, located at the lock file's line
    (its marker kept). Exact pins and URLs stay; lock entries declare nothing themselves."""
    locks: dict[str, dict[str, meta.Declared]] = {}
    for d in declared:
        if d.locked:
            locks.setdefault(d.path.rpartition("/")[0], {}).setdefault(d.name, d)
    if not locks:
        return declared
    out: list[meta.Declared] = []
    for d in declared:
        if d.locked:
            continue
        folder, _, fname = d.path.rpartition("/")
        lk = locks.get(folder, {}).get(d.name)
        head, _, marker = d.spec.partition(";")
        if lk is None or fname.lower() not in _LOCKED_PROJECTS or "@" in head or re.search(r"===?", head):
            out.append(d)
            continue
        spec = f"{lk.spec}; {marker.strip()}" if marker.strip() else lk.spec
        out.append(dataclasses.replace(d, spec=spec, path=lk.path, line=lk.line))
    return out


def weigh_commented(declared: Sequence[meta.Declared], imported: set[str]
                    ) -> tuple[tuple[meta.Declared, ...], list[Warning_]]:
    """Declarations from install lines kept as comments are weaker than active ones: an abandoned
    alternative ("# !pip install pytorch-lightning==1.3.6" beside an active "!pip install
    pytorch-lightning") or a tool tried once ("# # !pip install fitsnap3"). One is kept when no
    active declaration names its package and its line installs something the code imports (the
    line's other packages come along: "evaluate rouge_score", whose rouge metric needs rouge-score)."""
    def weak(d: meta.Declared) -> bool:
        return d.commented or d.doc is not None

    def group(d: meta.Declared) -> tuple[str, int | None, int | None, bool]:
        return (d.path, d.doc if d.doc is not None else d.line, d.cell, d.doc is not None)

    active = {d.name for d in declared if not weak(d)}
    line_used = {group(d) for d in declared if weak(d) and d.name in imported}
    kept: list[meta.Declared] = []
    said: list[Warning_] = []
    for d in declared:
        what = ("a commented-out install" if d.doc is None else "a conda export's pin"
                if d.path.lower().endswith((".yml", ".yaml")) else "the README's install")
        if weak(d) and d.name in active:
            said.append(Warning_(Location(d.path, d.line, d.cell), f"{d.spec}: {what}; "
                                 f"{'a declaration file' if d.doc is not None else 'an active line'} installs it, "
                                 "so this one is not taken"))
        elif weak(d) and group(d) not in line_used:
            said.append(Warning_(Location(d.path, d.line, d.cell), f"{d.spec}: {what} of nothing the code imports; "
                                 "not taken (add it to model.toml if the model needs it)"))
        else:
            kept.append(d)
    return tuple(kept), said


_DOC_FOLDERS = frozenset({"doc", "docs", "documentation", "sphinx"})


def _documentation(path: str) -> bool:
    """A file of a documentation folder (``docs/source/conf.py``)."""
    return any(part.lower() in _DOC_FOLDERS for part in Path(path).parts[:-1])


def _loc_key(loc: Location) -> tuple[str, int, int]:
    return (loc.path, loc.cell or 0, loc.line or 0)


# ---------------------------------------------------------------------------------------- 4. resolve

def _kind_of(occurrences: Sequence[FoundImport]) -> tuple[str, str | None]:
    if any(not o.optional and o.marker is None for o in occurrences):
        return "required", None
    guarded = [o.marker for o in occurrences if not o.optional and o.marker]
    if guarded:
        unique = list(dict.fromkeys(guarded))
        marker = unique[0] if len(unique) == 1 else " or ".join(
            f"({m})" if " and " in m or " or " in m else m for m in unique)
        return "conditional", marker
    return "optional", None


def _branch_of(occurrences: Sequence[FoundImport]) -> str | None:
    """Where a required import sits under a run-time condition, when every required occurrence
    does ("train.py:12 (under `args.use_apex`)"); None when one is unconditional."""
    required = sorted((o for o in occurrences if not o.optional and o.marker is None),
                      key=lambda o: _loc_key(o.location))
    if not required or any(o.branch is None for o in required):
        return None
    return f"{required[0].location} (under `{required[0].branch}`)"


def resolve(classified: Classified, resolver: Resolver) -> tuple[tuple[ImportRecord, ...], tuple[LocalModule, ...],
                                                                 tuple[Warning_, ...]]:
    """Third-party imports -> distributions, by kind; returns (records, local modules, warnings)."""
    warnings: list[Warning_] = []
    for lm in classified.local:
        module, path = lm.module, lm.path
        res = resolver.resolve(module)
        if res.resolved_with in ("mapping", "model-mapping") and res.distribution:
            warnings.append(Warning_(Location(path), f"local {module} ({path}) has the name of a module of the "
                                     f"distribution {res.distribution}; the code imports the local one (rename it "
                                     "if the distribution is meant)"))
    # the first declaration of each name wins; a direct reference (attrs @ file:///...) names code
    # from another place, never the PyPI project of that name, so it confirms no guess
    declared = {d.name: d for d in reversed(classified.declared) if meta.direct_reference(d.spec) is None}
    groups: dict[str, list[FoundImport]] = {}
    for imp in classified.third_party:
        groups.setdefault(resolver.key_of(imp.module, imp.names), []).append(imp)
    records: list[ImportRecord] = []
    local = list(classified.local)
    for key in sorted(groups, key=str.lower):
        occ = groups[key]
        res = resolver.resolve(key)
        locs = tuple(sorted({o.location for o in occ}, key=_loc_key))
        if res.resolved_with in ("identity-guess", "unresolved"):
            # no known distribution (or a generic name such as utils that no distribution is taken
            # for), but the contribution has code of that name: a module imported through a
            # sys.path change (a notebook appends src/, whose transformer.py imports its sibling utils)
            where = classified.tree_modules.get(key.split(".")[0])
            if where is not None:
                local.append(LocalModule(key.split(".")[0], where, locs))
                warnings.append(Warning_(locs[0], f"{key}: not in a folder Python imports from, but {where} in this "
                                         "folder has that name (a sys.path change?); treated as local code"))
                continue
            inside = _self_package_paths(key, occ, classified)
            if inside:
                local.append(LocalModule(key.split(".")[0], "__init__.py", locs))
                warnings.append(Warning_(locs[0], (
                    f"{key.split('.')[0]}: no distribution is known by that name, and this folder is itself a package "
                    f"(its own __init__.py) holding what the code imports from it ({', '.join(inside[:3])}): taken as "
                    f"this folder imported under the name it had in its repository; a run needs it on sys.path "
                    f"under that name")))
                continue
        if res.resolved_with == "identity-guess":
            decl = declared.get(res.distribution or "")
            away = classified.outside.get(key.split(".")[0])
            if decl is not None:  # the submission declares a distribution of that very name
                res = Resolution(key, res.distribution, "declared",
                                 f"no mapping; the submission declares {decl.name} ({decl.path}"
                                 f"{':' + str(decl.line) if decl.line else ''})")
            elif away is not None:  # after a sys.path insert of a folder outside: the repository's code
                res = replace(res, note=f"{res.note}; {away[0]} puts {away[1]} on sys.path before it, outside "
                                        f"this folder: {key.split('.')[0]} may be the repository's code there")
                warnings.append(Warning_(locs[0], f"{key}: {res.note}"))
            else:
                warnings.append(Warning_(locs[0], f"{key}: {res.note}"))
        kind, marker = _kind_of(occ)
        guess = res.distribution if res.resolved_with == "identity-guess" else None
        dist = None if guess else res.distribution
        records.append(ImportRecord(key, dist, res.resolved_with, kind, locs, res.note, marker, guess,
                                    _branch_of(occ) if kind == "required" else None))
    local.sort(key=lambda m: m.module)
    return tuple(records), tuple(local), tuple(warnings)


# ---------------------------------------------------------------------------------------- the analysis

def default_cache() -> Path:
    from pyrepro.paths import cache_dir

    return cache_dir() / "scan"


def scan_path(root: Path, *, python: str = "3.11", pyenv: Sequence[Path] = (),
              mapping: dict[str, str] | None = None, cache: Path | bool | None = True,
              jobs: int | None = None, thorough: bool | None = None) -> ScanResult:
    """Scan a contribution folder (or one file): walk -> extract -> classify -> resolve.

    ``mapping``: a model's reviewed ``[mapping]`` (module -> distribution), the first resolver.
    ``cache``: True for the user cache, a folder, or False/None for none.
    ``thorough``: parse every ``.py`` file in full (True), use the fast reader (False), or decide
    by size (None; see ``extract``).
    """
    walked = walk(root)
    cache_path = default_cache() if cache is True else (cache or None)
    index = _tree_index(walked, cache_path, python, mapping, thorough) if cache_path and not pyenv else None
    if index is not None and (hit := _read_index(index)) is not None:
        return dataclasses.replace(hit, root=Path(root))
    facts = extract(walked, cache=cache_path, jobs=jobs, thorough=thorough)
    classified = classify(walked, facts, python)
    warnings = list(classified.warnings)
    for env_dir in pyenv:
        if not Path(env_dir).is_dir():
            warnings.append(Warning_(Location(str(env_dir)), "--pyenv folder not found; names were not resolved "
                                     "from it (give a site-packages folder)"))
    records, local, res_warnings = resolve(classified, Resolver(pyenv, mapping))
    warnings.extend(res_warnings)
    declared, weighed = weigh_commented(classified.declared, {r.distribution or r.guess for r in records} - {None})
    warnings.extend(weighed)
    classified = dataclasses.replace(classified, declared=declared)
    result = ScanResult(root=Path(root), python=python, imports=records, runtime_tools=classified.tools,
                        entry_points=classified.entry_points, declared=classified.declared,
                        warnings=tuple(warnings), python2_evidence=classified.python2,
                        python3_evidence=classified.python3, files=classified.files,
                        lines=classified.lines, local=local, stdlib_uses=classified.stdlib_uses,
                        unreadable=classified.unreadable, api_uses=classified.api_uses,
                        package_sources=tuple(s for f in facts for s in f.sources))
    if index is not None:
        _write_index(index, result)
    return result


# ---------------------------------------------------------------------------------------- tree index
#
# A re-scan of an unchanged tree answers from one file: the key covers every file name under the
# folder, the (size, mtime, ctime, inode) of every file the scanner reads, the options, the reviewed
# name table and this scanner's version. As in git's index, a file modified less than
# RACY_SECONDS before the scan could change again within the clock's resolution without
# changing its stat: such a tree is never answered from (nor written to) the index, and the
# per-file cache (keyed by content) still serves it.

RACY_SECONDS = 2.0


def _tree_index(walked: Walked, cache: Path, python: str, mapping: dict[str, str] | None,
                thorough: bool | None) -> Path | None:
    import time

    from pyrepro.resolve import table_digest

    h = hashlib.sha256()
    h.update(f"{EXTRACT_VERSION}\0{_code_digest()}\0{python}\0{thorough}\0{sorted((mapping or {}).items())}\0"
             f"{table_digest()}\0{os.fspath(walked.base.resolve())}\0".encode())
    h.update("\0".join(walked.all_files).encode())
    newest = 0
    # the files read, and text files a requirements file may include (-r base.txt) by any name
    others = [SourceFile(walked.base / rel, rel, "") for rel in walked.all_files if rel.endswith(".txt")]
    for src in (*walked.files, *others):
        try:
            st = os.stat(src.path)
        except OSError:
            return None
        newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
        # ctime cannot be set back by a program (utime sets it to now), so a forged mtime still shows
        h.update(f"\0{src.rel}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}".encode())
    if newest > (time.time() - RACY_SECONDS) * 1e9:
        return None
    digest = h.hexdigest()
    return cache / "trees" / f"{digest}.pickle"


@functools.lru_cache(maxsize=1)
def _code_digest() -> str:
    """The scanner's own code (size and mtime of its modules): an edited scanner never answers
    from an index an older one wrote."""
    here = Path(__file__).parent
    parts = []
    for f in sorted([*here.glob("*.py"), here.parent / "resolve.py", here.parent / "data" / "module_map.toml"]):
        try:
            st = f.stat()
        except OSError:
            continue
        parts.append(f"{f.name}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _read_index(path: Path) -> ScanResult | None:
    import pickle

    try:
        with open(path, "rb") as f:
            result = pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, ValueError, TypeError):
        return None
    return result if isinstance(result, ScanResult) else None


def _write_index(path: Path, result: ScanResult) -> None:
    import pickle

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, path)
    except OSError:
        pass  # an index that cannot be written only costs time
