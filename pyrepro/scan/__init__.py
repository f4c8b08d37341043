"""``pyrepro scan``: what a contribution folder needs, from its code, offline.

``scan_path(root, python=..., pyenv=...)`` walks a folder (never executing anything):
``.py`` files (AST, with fallbacks), ``.ipynb`` code cells, shell entry points and declared
metadata, then resolves third-party modules to distributions and compares them with what the
contribution declares. The result is a frozen ``ScanResult`` whose ``to_json()`` is the
documented ``--json`` contract (docs/scan.md).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyrepro.errors import NotFoundError
from pyrepro.resolve import Resolver
from pyrepro.scan import metadata as meta
from pyrepro.scan import notebook, shell
from pyrepro.scan import python as pysrc
from pyrepro.scan.stdlib import known_versions, python2_only_names, stdlib_names
from pyrepro.types import Location

SKIP_DIRS = {".git", "__pycache__", ".ipynb_checkpoints", "node_modules", ".venv", "venv", ".tox", ".mypy_cache"}
MAX_BYTES = 20_000_000


@dataclass(frozen=True)
class ImportRecord:
    module: str  # top-level module name
    distribution: str | None
    resolved_with: str
    optional: bool  # every occurrence is optional
    locations: tuple[Location, ...]
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"module": self.module, "distribution": self.distribution, "resolved_with": self.resolved_with,
                "optional": self.optional, "locations": [loc.to_json() for loc in self.locations]}


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
class ScanResult:
    root: Path
    python: str
    imports: tuple[ImportRecord, ...]
    runtime_tools: tuple[Tool, ...]
    entry_points: tuple[EntryPoint, ...]
    declared: tuple[meta.Declared, ...]
    warnings: tuple[Warning_, ...]
    python2_evidence: tuple[Warning_, ...] = ()
    files: int = 0
    lines: int = 0
    local_modules: tuple[str, ...] = field(default=())

    @property
    def distributions(self) -> tuple[str, ...]:
        return tuple(sorted({i.distribution for i in self.imports if i.distribution}))

    @property
    def unresolved(self) -> tuple[ImportRecord, ...]:
        return tuple(i for i in self.imports if i.distribution is None)

    @property
    def declared_names(self) -> tuple[str, ...]:
        return tuple(sorted({d.name for d in self.declared}))

    @property
    def undeclared(self) -> tuple[str, ...]:
        return tuple(d for d in self.distributions if d not in set(self.declared_names))

    @property
    def unused_declared(self) -> tuple[str, ...]:
        used = set(self.distributions) | {i.module.lower() for i in self.unresolved}
        return tuple(d for d in self.declared_names if d not in used)

    def to_json(self) -> dict[str, Any]:
        return {
            "distributions": list(self.distributions),
            "imports": [i.to_json() for i in self.imports],
            "unresolved": [{"module": i.module, "hint": i.note, "locations": [loc.to_json() for loc in i.locations]}
                           for i in self.unresolved],
            "runtime_tools": sorted({t.name for t in self.runtime_tools}),
            "entry_points": [e.to_json() for e in self.entry_points],
            "declared": list(self.declared_names),
            "undeclared": list(self.undeclared),
            "unused_declared": list(self.unused_declared),
            "warnings": [str(w) for w in (*self.warnings, *self.python2_evidence)],
        }


RUNTIME_TOOLS = {"zip", "unzip", "wget", "curl", "git", "pip", "pip3", "conda", "mamba", "module", "srun",
                 "mpirun", "tar", "ipython", "jupyter", "nvidia-smi", "rm", "cp", "mv"}


def _is_runtime_tool(tool: str, script_dir: Path) -> bool:
    """Known tools, Python interpreters, and ``*.py`` console scripts that a distribution puts
    on PATH (alignn's ``train_folder.py``), not scripts of the contribution itself."""
    if tool in RUNTIME_TOOLS or tool.startswith("python"):
        return True
    return tool.endswith(".py") and "/" not in tool and not (script_dir / tool).exists()


def _walk(root: Path, warnings: list[Warning_]) -> list[Path]:
    files: list[Path] = []
    seen: set[tuple[int, int]] = set()

    def onerror(exc: OSError) -> None:
        warnings.append(Warning_(Location(_rel(Path(exc.filename or root), root)), f"cannot read: {exc.strerror}"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror, followlinks=False):
        d = Path(dirpath)
        try:
            st = d.stat()
            if (st.st_dev, st.st_ino) in seen:
                dirnames[:] = []
                continue
            seen.add((st.st_dev, st.st_ino))
        except OSError:
            pass
        dirnames[:] = sorted(n for n in dirnames if (n not in SKIP_DIRS and not n.startswith(".")) or n == ".")
        for n in sorted(filenames):
            files.append(d / n)
    return files


def _rel(p: Path, root: Path) -> str:
    try:
        return p.relative_to(root).as_posix()
    except ValueError:
        return p.as_posix()


def _count_lines(text: str) -> int:
    """Lines as ``wc -l`` would count them, plus a last line without a newline."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


_LOCAL_EXTS = (".py", ".so", ".pyd", ".pyx")


def _local_names(script_dir: Path) -> frozenset[str]:
    """Top-level module names a script in ``script_dir`` can import from next to itself:
    ``x.py``, extension modules (``x.so``, ``x.cpython-310-x86_64-linux-gnu.so``, ``x.pyd``,
    ``x.pyx``) and folders. One directory listing (the scanner caches it per folder)."""
    names: set[str] = set()
    try:
        with os.scandir(script_dir) as it:
            for e in it:
                try:
                    if e.is_dir():
                        names.add(e.name)
                    elif e.name.endswith(_LOCAL_EXTS) and e.is_file():
                        names.add(e.name.split(".", 1)[0])
                except OSError:
                    continue
    except OSError:
        pass
    return frozenset(names)


def _is_local(module: str, script_dir: Path, cache: dict[Path, frozenset[str]] | None = None) -> bool:
    """Does ``module`` resolve to a file or folder next to the importing script?"""
    if cache is None:
        cache = {}
    names = cache.get(script_dir)
    if names is None:
        names = cache[script_dir] = _local_names(script_dir)
    return module.split(".")[0] in names


def _tree_modules(files: list[Path], base: Path) -> dict[str, str]:
    """Module names the scanned tree itself defines anywhere (``x.py`` files and folders holding
    ``.py`` files) -> the first such path. Only consulted for names no resolver knows, so a
    folder named like a real package (``jarvis/``) never hides it."""
    out: dict[str, str] = {}
    for f in files:
        if not f.name.endswith(".py"):
            continue
        rel = _rel(f, base)
        parts = rel.split("/")
        out.setdefault(f.name[:-3], rel)
        for i, d in enumerate(parts[:-1]):
            out.setdefault(d, "/".join(parts[:i + 1]) + "/")
    return out


def scan_path(root: Path, *, python: str = "3.11", pyenv: Sequence[Path] = ()) -> ScanResult:
    root = Path(root)
    if not root.exists():
        raise NotFoundError(f"path not found: {root}", hint="give the contribution folder (or a single file) to scan")
    if root.is_dir() and not os.access(root, os.R_OK | os.X_OK):
        raise NotFoundError(f"folder not readable: {root}", hint="check its permissions")
    base = root if root.is_dir() else root.parent
    warnings: list[Warning_] = []
    files = _walk(root, warnings) if root.is_dir() else [root]
    stdlib = stdlib_names(python)
    if python not in known_versions():
        nearest = next(v for v in known_versions() if stdlib_names(v) is stdlib)
        warnings.append(Warning_(Location("--python"), f"no standard-library table for Python {python!r}; used "
                                 f"{nearest} (known: {', '.join(known_versions())})"))
    py2_names = python2_only_names()
    found: dict[str, list[tuple[Location, bool]]] = {}
    tools: list[Tool] = []
    entries: list[EntryPoint] = []
    declared: list[meta.Declared] = []
    py2: list[Warning_] = []
    local_mods: set[str] = set()
    dir_names: dict[Path, frozenset[str]] = {}
    n_files = n_lines = 0

    def add_code(text: str, rel: str, script_dir: Path, cell: int | None = None) -> None:
        parsed = pysrc.parse_code(text)
        for line, msg in parsed.warnings:
            warnings.append(Warning_(Location(rel, line, cell), msg))
        for line, ev in parsed.python2:
            py2.append(Warning_(Location(rel, line, cell), f"Python 2 evidence: {ev}"))
        for imp in parsed.imports:
            if imp.relative or not imp.module:
                continue
            top = imp.module.split(".")[0]
            loc = Location(rel, imp.line, cell)
            if top in py2_names and top not in stdlib:
                py2.append(Warning_(loc, f"Python 2 evidence: stdlib module {top} exists only in Python 2"))
                continue
            if top in stdlib or top == "__future__":
                continue
            if _is_local(imp.module, script_dir, dir_names):
                local_mods.add(top)
                continue
            key = imp.module if imp.module.split(".")[0] in ("google", "tensorflow") else top
            if key.startswith("tensorflow"):
                key = "tensorflow"
            if key.startswith("google.") and key.count(".") > 1:
                key = ".".join(key.split(".")[:2])
            found.setdefault(key, []).append((loc, imp.optional))
        for cmd, line in parsed.commands:
            for tool, argv in shell.command_tools(cmd):
                if _is_runtime_tool(tool, script_dir):
                    tools.append(Tool(tool, " ".join(argv)[:200], Location(rel, line, cell)))

    for f in files:
        rel = _rel(f, base)
        name = f.name
        try:
            st = f.lstat()
            if stat.S_ISLNK(st.st_mode):
                st = f.stat()  # raises for dangling links and loops
            if not stat.S_ISREG(st.st_mode):
                continue
            if st.st_size > MAX_BYTES and name.endswith((".py", ".ipynb")):
                warnings.append(Warning_(Location(rel), f"larger than {MAX_BYTES // 1_000_000} MB; skipped"))
                continue
            lower = name.lower()
            wanted = lower.endswith((".py", ".ipynb")) or lower in meta.PARSERS or \
                lower.endswith((".sh", ".bash", ".slurm", ".sbatch", ".job", ".pbs")) or lower in ("run", "job")
            if not wanted:
                if f == root:  # a single file was asked for
                    warnings.append(Warning_(Location(rel), "not a file the scanner reads (.py, .ipynb, shell "
                                             "scripts, metadata.json, info.json, environment.yml, requirements.txt)"))
                continue
            data = f.read_bytes()
        except OSError as exc:
            warnings.append(Warning_(Location(rel), f"cannot read: {exc.strerror or exc}"))
            continue
        if lower.endswith(".py"):
            n_files += 1
            if b"\0" in data[:8192]:
                warnings.append(Warning_(Location(rel), "binary content in a .py file; skipped"))
                continue
            text, enc_warn = pysrc.decode_source(data)
            if enc_warn:
                warnings.append(Warning_(Location(rel, 1), enc_warn))
            n_lines += _count_lines(text)
            add_code(text, rel, f.parent)
        elif lower.endswith(".ipynb"):
            n_files += 1
            try:
                cells, lang = notebook.code_cells(data)
            except notebook.NotebookError as exc:
                warnings.append(Warning_(Location(rel, exc.line), f"broken notebook: {exc}; its imports were not read"))
                continue
            if lang is not None and lang not in ("python", "python3", "ipython", "python2"):
                warnings.append(Warning_(Location(rel), f"a {lang} notebook; skipped"))
                continue
            for c in cells:
                n_lines += _count_lines(c.source)
                add_code(c.source, rel, f.parent, c.index)
        elif lower in meta.PARSERS:
            text = data.decode("utf-8", errors="replace")
            ms = meta.PARSERS[lower](text, rel)
            declared.extend(ms.declared)
            for path, line, msg in ms.warnings:
                warnings.append(Warning_(Location(path, line), msg))
        elif shell.is_shell_file(name, data[:200]):
            text = data.decode("utf-8", errors="replace")
            sh = shell.scan_shell(text)
            for sc in sh.commands:
                if _is_runtime_tool(sc.tool, f.parent):
                    tools.append(Tool(sc.tool, " ".join(sc.argv)[:200], Location(rel, sc.line)))
            for interp, script, line in sh.entry_points:
                entries.append(EntryPoint(interp, script, Location(rel, line)))

    for env_dir in pyenv:
        if not Path(env_dir).is_dir():
            warnings.append(Warning_(Location(str(env_dir)), "--pyenv folder not found; names were not resolved "
                                     "from it (give a site-packages folder)"))
    resolver = Resolver(pyenv)
    records = []
    tree_modules: dict[str, str] | None = None
    for key in sorted(found, key=str.lower):
        occ = found[key]
        res = resolver.resolve(key)
        if res.resolved_with == "identity-guess":
            if tree_modules is None:
                tree_modules = _tree_modules(files, base)
            where = tree_modules.get(key.split(".")[0])
            if where is not None:  # no known distribution, but the contribution has code of that name
                local_mods.add(key.split(".")[0])
                warnings.append(Warning_(occ[0][0], f"{key}: not next to the importing script, but {where} in this "
                                         "folder has that name (a sys.path change?); treated as local code"))
                continue
            warnings.append(Warning_(occ[0][0], f"{key}: {res.note}"))
        locs = tuple(sorted({loc for loc, _ in occ}, key=lambda x: (x.path, x.cell or 0, x.line or 0)))
        records.append(ImportRecord(key, res.distribution, res.resolved_with, all(o for _, o in occ), locs, res.note))
    if not entries and root.is_dir():
        for cand in ("run.py", "main.py", "train.py"):
            if (root / cand).is_file():
                entries.append(EntryPoint("python", cand, Location(cand)))
                break
    return ScanResult(root=root, python=python, imports=tuple(records),
                      runtime_tools=tuple(tools), entry_points=tuple(entries), declared=tuple(declared),
                      warnings=tuple(warnings), python2_evidence=tuple(py2), files=n_files, lines=n_lines,
                      local_modules=tuple(sorted(local_mods)))
