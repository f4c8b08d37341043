"""The model registry: ``models/<name>/model.toml`` is the single source of truth.

Schema (``schema = 1``), every key documented in docs/model-toml.md::

    schema = 1
    name = "elemnet"                       # lower-case attribute name (Nix and CLI)
    upstream_name = "ElemNet1"             # folder name upstream
    aliases = ["ElemNet1"]
    title = "ElemNet (Jha et al.) on ..."
    python = "3.10"                        # target interpreter, major.minor
    gpu = "none"                           # none | optional | required
    benchmarks = ["ssub_formula_energy", ...]
    submitted = "2023-06-01"               # ISO date string (Nix's fromTOML rejects TOML dates)
    draft = true                           # written by init: unreviewed (run needs --draft); delete after review

    [source]                               # the pinned upstream folder
    repository = "https://github.com/usnistgov/jarvis_leaderboard"
    commit = "57afc55f..."
    subdir = "jarvis_leaderboard/contributions/ElemNet1"
    tree = "fe03830a..."                   # git tree id of subdir at commit
    nar_hash = "sha256-..."                # NAR hash of the fetched tree (Nix FOD), optional

    [[extra_sources]]                      # non-PyPI code (git projects)
    name = "matformer"
    repository = "https://github.com/YKQ98/Matformer"
    commit = "48f29d7e..."
    hash = "sha256-..."                    # NAR hash (SRI) of `git archive <commit>`
    install = "package"                    # package (pip-installed into env) | tree (copied next to the entry)

    [entry]
    command = ["ipython", "run.py"]        # run from the staged (patched) source folder

    [test]
    args = ["--test"]
    description = "3 epochs instead of 3000"

    [runtime]
    tools = ["zip"]                        # programs the scripts call

    [dependencies]
    scanned = ["jarvis-tools", ...]        # distributions `pyrepro scan` found (written by init)
    extra = ["ipython"]                    # PEP 508, added to the scanned set
    remove = []                            # distributions dropped from the scanned set
    [[dependencies.pins]]
    name = "tensorflow"
    spec = "==2.10.1"
    reason = "faithful Adam(lr=...) semantics"

    [[predictions]]                        # what the authors submitted
    benchmark = "ssub_formula_energy"
    file = "AI-SinglePropertyPrediction-formula_energy-ssub-test-mae.csv.zip"
    reported_mae = 0.2068
    comparable = true
    note = ""

The loader validates and names the file and key of every problem, with the fix.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from pyrepro.errors import InputError, NotFoundError, toml_error_line

GpuNeed = Literal["none", "optional", "required"]
GPU_NEEDS: tuple[str, ...] = ("none", "optional", "required")
NAME_RE = re.compile(r"^[a-z][a-z0-9_-]*$")
PY_RE = re.compile(r"^[23]\.\d{1,2}$")
HEX40 = re.compile(r"^[0-9a-f]{40}$")
SCHEMA = 1


@dataclass(frozen=True)
class SourcePin:
    repository: str
    commit: str
    subdir: str
    tree: str
    nar_hash: str | None = None
    benchmarks_subdir: str = ""
    benchmarks_nar_hash: str | None = None


@dataclass(frozen=True)
class ExtraSource:
    name: str
    repository: str
    commit: str
    hash: str | None
    install: Literal["package", "tree"] = "package"
    subdir: str = ""


@dataclass(frozen=True)
class Pin:
    name: str
    spec: str
    reason: str


@dataclass(frozen=True)
class Dependencies:
    scanned: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()
    pins: tuple[Pin, ...] = ()
    #: distributions a lock relaxation dropped (rdkit-pypi has no Python 2 release): left out of
    #: the pyproject like ``remove``, but their modules are still import-checked (``remove`` is a
    #: reviewer's word that the code needing them never runs)
    dropped: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModuleMapping:
    """A reviewed ``module -> distribution`` answer for one model (its ``[mapping]`` table), the
    scanner's first resolver."""

    module: str
    distribution: str
    reason: str


@dataclass(frozen=True)
class TestMode:
    args: tuple[str, ...] = ("--test",)
    description: str = ""


@dataclass(frozen=True)
class SubmittedPrediction:
    benchmark: str
    file: str
    reported_mae: float | None
    comparable: bool = True
    note: str = ""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    upstream_name: str
    title: str
    python: str
    gpu: GpuNeed
    benchmarks: tuple[str, ...]
    source: SourcePin
    entry: tuple[str, ...]
    path: Path  # the model.toml this came from
    aliases: tuple[str, ...] = ()
    submitted: dt.date | None = None
    submitted_reason: str = ""  # why that date (evidence.BOUND_ONLY: it only bounds the submission's time)
    extra_sources: tuple[ExtraSource, ...] = ()
    test: TestMode = field(default_factory=TestMode)
    tools: tuple[str, ...] = ()
    dependencies: Dependencies = field(default_factory=Dependencies)
    predictions: tuple[SubmittedPrediction, ...] = ()
    notes: str = ""
    mapping: tuple[ModuleMapping, ...] = ()
    python_reason: str = ""  # why this Python (evidence from the submission, or how it was chosen)
    gpu_reason: str = ""
    benchmarks_reason: str = ""
    #: written by ``pyrepro init`` (``draft = true``): nobody has reviewed this model yet, so
    #: ``pyrepro run`` refuses it without ``--draft``; a reviewer deletes the line
    draft: bool = False

    @property
    def module_mapping(self) -> dict[str, str]:
        """The ``[mapping]`` table as the scanner's resolver takes it."""
        return {m.module: m.distribution for m in self.mapping}

    @property
    def dir(self) -> Path:
        return self.path.parent

    @property
    def default_benchmark(self) -> str:
        return self.benchmarks[0]


class _Reader:
    """Typed access to a TOML table that reports ``file [key]: problem. fix``."""

    def __init__(self, path: Path, data: Mapping[str, Any], prefix: str = "") -> None:
        self.path, self.data, self.prefix = path, data, prefix

    def _key(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def fail(self, key: str, msg: str, fix: str) -> InputError:
        return InputError(f"{msg}. Fix: {fix}", path=self.path, key=self._key(key))

    def text(self, key: str, default: str | None = None, pattern: re.Pattern[str] | None = None,
            fix: str = "") -> str:
        v = self.data.get(key, default)
        if v is None:
            raise self.fail(key, "missing required key", fix or f"add {key} = \"...\"")
        if not isinstance(v, str):
            raise self.fail(key, f"expected a string, got {type(v).__name__}", fix or f"write {key} = \"...\"")
        if pattern is not None and not pattern.match(v):
            raise self.fail(key, f"invalid value {v!r}", fix or f"must match {pattern.pattern}")
        return v

    def opt_str(self, key: str) -> str | None:
        if key not in self.data:
            return None
        return self.text(key)

    def strs(self, key: str, default: tuple[str, ...] | None = None, nonempty: bool = False) -> tuple[str, ...]:
        v = self.data.get(key)
        if v is None:
            if default is None:
                raise self.fail(key, "missing required key", f'add {key} = ["..."]')
            return default
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise self.fail(key, "expected a list of strings", f'write {key} = ["a", "b"]')
        if nonempty and not v:
            raise self.fail(key, "must not be empty", f'list at least one value in {key}')
        return tuple(v)

    def table(self, key: str, required: bool = True) -> _Reader:
        v = self.data.get(key)
        if v is None:
            if required:
                raise self.fail(key, "missing required table", f"add a [{self._key(key)}] table")
            v = {}
        if not isinstance(v, dict):
            raise self.fail(key, "expected a table", f"write [{self._key(key)}]")
        return _Reader(self.path, v, f"{self._key(key)}.")

    def tables(self, key: str) -> list[_Reader]:
        v = self.data.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            raise self.fail(key, "expected an array of tables", f"write [[{self._key(key)}]] entries")
        return [_Reader(self.path, x, f"{self._key(key)}[{i}].") for i, x in enumerate(v)]

    def unknown(self, allowed: set[str]) -> None:
        for k in self.data:
            if k not in allowed:
                close = difflib.get_close_matches(k, sorted(allowed), n=1)
                fix = f"did you mean {close[0]!r}?" if close else f"allowed keys: {', '.join(sorted(allowed))}"
                raise self.fail(k, "unknown key", fix)


SRI_RE = re.compile(r"^sha256-[A-Za-z0-9+/]{43}=$")


def _nar(r: _Reader, key: str) -> str | None:
    v = r.opt_str(key)
    if v is not None and not SRI_RE.match(v):
        raise r.fail(key, f"invalid NAR hash {v!r}",
                     "write the SRI form sha256-<44 base64 chars> that `pyrepro source hash` or `nix hash path` prints")
    return v


def parse_model(path: Path, text: str | None = None) -> ModelSpec:
    """Parse and validate one ``model.toml``."""
    try:
        raw = text if text is not None else path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from exc
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", path=path, line=toml_error_line(exc),
                         hint="fix the TOML syntax; see docs/model-toml.md") from exc
    r = _Reader(path, data)
    r.unknown({"schema", "name", "upstream_name", "aliases", "title", "python", "gpu", "benchmarks",
               "submitted", "source", "extra_sources", "entry", "test", "runtime", "dependencies",
               "predictions", "notes", "mapping", "python_reason", "gpu_reason", "benchmarks_reason",
               "submitted_reason", "draft"})
    draft = data.get("draft", False)
    if not isinstance(draft, bool):
        raise r.fail("draft", f"expected true or false, not {draft!r}",
                     "write draft = true (an unreviewed draft), or delete the line once the model is reviewed")
    schema = data.get("schema")
    if schema != SCHEMA:
        raise r.fail("schema", f"unsupported schema {schema!r}", f"set schema = {SCHEMA}")
    name = r.text("name", pattern=NAME_RE, fix="use a lower-case attribute name like 'elemnet'")
    if path.parent.name != name and path.name == "model.toml":
        raise r.fail("name", f"name {name!r} differs from its folder {path.parent.name!r}",
                     f"rename the folder or set name = \"{path.parent.name}\"")
    gpu = r.text("gpu", default="none")
    if gpu not in GPU_NEEDS:
        raise r.fail("gpu", f"invalid value {gpu!r}", "use one of none, optional, required")
    submitted_raw = data.get("submitted")
    submitted: dt.date | None = None
    if submitted_raw is not None:
        if not isinstance(submitted_raw, str):
            raise r.fail("submitted", "expected an ISO date string (Nix cannot read TOML dates)",
                         'write submitted = "2023-05-02"')
        try:
            submitted = dt.date.fromisoformat(submitted_raw)
        except ValueError as exc:
            raise r.fail("submitted", f"invalid date {submitted_raw!r}", 'write submitted = "2023-05-02"') from exc

    s = r.table("source")
    s.unknown({"repository", "commit", "subdir", "tree", "nar_hash", "benchmarks_subdir", "benchmarks_nar_hash"})
    source = SourcePin(
        repository=s.text("repository"),
        commit=s.text("commit", pattern=HEX40, fix="use the full 40-hex commit id"),
        subdir=s.text("subdir", default=""),
        tree=s.text("tree", pattern=HEX40, fix="use the 40-hex git tree id of subdir at commit"),
        nar_hash=_nar(s, "nar_hash"),
        benchmarks_subdir=s.text("benchmarks_subdir", default=""),
        benchmarks_nar_hash=_nar(s, "benchmarks_nar_hash"),
    )
    extras = []
    for e in r.tables("extra_sources"):
        e.unknown({"name", "repository", "commit", "hash", "install", "subdir"})
        install = e.text("install", default="package")
        if install not in ("package", "tree"):
            raise e.fail("install", f"invalid value {install!r}", "use 'package' or 'tree'")
        extras.append(ExtraSource(
            name=e.text("name"), repository=e.text("repository"),
            commit=e.text("commit", pattern=HEX40, fix="use the full 40-hex commit id"),
            hash=_nar(e, "hash"), install=cast(Literal["package", "tree"], install),
            subdir=e.text("subdir", default=""),
        ))
    en = r.table("entry")
    en.unknown({"command"})
    entry = en.strs("command", nonempty=True)
    t = r.table("test", required=False)
    t.unknown({"args", "description"})
    test = TestMode(args=t.strs("args", default=("--test",)), description=t.text("description", default=""))
    rt = r.table("runtime", required=False)
    rt.unknown({"tools"})
    d = r.table("dependencies", required=False)
    d.unknown({"scanned", "extra", "remove", "dropped", "pins"})
    pins = []
    for p in d.tables("pins"):
        p.unknown({"name", "spec", "reason"})
        pins.append(Pin(p.text("name"), p.text("spec"),
                        p.text("reason", fix="every reviewed pin needs a reason = \"...\"")))
    benchmarks = r.strs("benchmarks", nonempty=True)
    preds = []
    for p in r.tables("predictions"):
        if p.data.get("benchmark") not in (None, *benchmarks):
            raise p.fail("benchmark", f"{p.data.get('benchmark')!r} is not one of this model's benchmarks",
                         f"add it to benchmarks = [...] or use one of {', '.join(benchmarks)}")
        p.unknown({"benchmark", "file", "reported_mae", "comparable", "note"})
        mae = p.data.get("reported_mae")
        if mae is not None and not isinstance(mae, (int, float)):
            raise p.fail("reported_mae", "expected a number", "write reported_mae = 52.7033")
        comparable = p.data.get("comparable", True)
        if not isinstance(comparable, bool):
            raise p.fail("comparable", "expected true or false", "write comparable = false")
        preds.append(SubmittedPrediction(p.text("benchmark"), p.text("file"),
                                         float(mae) if mae is not None else None,
                                         comparable, p.text("note", default="")))
    return ModelSpec(
        name=name,
        upstream_name=r.text("upstream_name", default=name),
        title=r.text("title", default=name),
        python=r.text("python", pattern=PY_RE, fix='write python = "3.11"'),
        gpu=cast(GpuNeed, gpu),
        benchmarks=benchmarks,
        source=source,
        entry=entry,
        path=path,
        aliases=r.strs("aliases", default=()),
        submitted=submitted,
        extra_sources=tuple(extras),
        test=test,
        tools=rt.strs("tools", default=()),
        dependencies=Dependencies(scanned=d.strs("scanned", default=()), extra=d.strs("extra", default=()), remove=d.strs("remove", default=()),
                                  pins=tuple(pins), dropped=d.strs("dropped", default=())),
        predictions=tuple(preds),
        notes=r.text("notes", default=""),
        mapping=_mapping(r),
        python_reason=r.text("python_reason", default=""),
        submitted_reason=r.text("submitted_reason", default=""),
        gpu_reason=r.text("gpu_reason", default=""),
        benchmarks_reason=r.text("benchmarks_reason", default=""),
        draft=draft,
    )


MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
DIST_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")


def _mapping(r: _Reader) -> tuple[ModuleMapping, ...]:
    m = r.table("mapping", required=False)
    out = []
    for module, value in m.data.items():
        if not MODULE_RE.match(module):
            raise m.fail(module, f"{module!r} is not a module name", "use a dotted module name like google.cloud.storage")
        if not isinstance(value, dict):
            raise m.fail(module, "expected an inline table",
                         f'write {module} = {{ distribution = "...", reason = "..." }}')
        e = _Reader(r.path, value, f"mapping.{module}.")
        e.unknown({"distribution", "reason"})
        out.append(ModuleMapping(module, e.text("distribution", pattern=DIST_RE, fix="use a PyPI distribution name"),
                                 e.text("reason", fix="every reviewed mapping needs a reason = \"...\"")))
    return tuple(out)


def load_mapping(path: Path) -> dict[str, str]:
    """The ``[mapping]`` table of any TOML file (a model.toml or a file holding only that table),
    validated as in model.toml: ``module -> distribution``."""
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path,
                         hint="give a TOML file with a [mapping] table") from exc
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", path=path, line=toml_error_line(exc),
                         hint="fix the TOML syntax; see docs/model-toml.md") from exc
    if "mapping" not in data:
        raise InputError("no [mapping] table", path=path,
                         hint='add [mapping] with entries like x = { distribution = "x-dist", reason = "..." }')
    return {m.module: m.distribution for m in _mapping(_Reader(path, data))}


@dataclass(frozen=True)
class Registry:
    models: tuple[ModelSpec, ...]

    def __iter__(self) -> Iterator[ModelSpec]:
        return iter(self.models)

    def __len__(self) -> int:
        return len(self.models)

    def names(self) -> list[str]:
        return [m.name for m in self.models]

    def get(self, name: str) -> ModelSpec:
        """Look up by name or alias (case-insensitive for aliases)."""
        for m in self.models:
            if m.name == name or name in m.aliases or name.lower() in (a.lower() for a in m.aliases):
                return m
        known = self.names() + [a for m in self.models for a in m.aliases]
        close = difflib.get_close_matches(name, known, n=3)
        hint = f"did you mean {', '.join(close)}?" if close else f"known models: {', '.join(self.names())}"
        raise NotFoundError(f"unknown model {name!r}", hint=hint)

    def for_benchmark(self, benchmark: str) -> list[ModelSpec]:
        return [m for m in self.models if benchmark in m.benchmarks]

    def select(self, names: list[str]) -> list[ModelSpec]:
        return [self.get(n) for n in names]


def load_registry(models_dir: Path) -> Registry:
    """Load every ``models/*/model.toml``, sorted by name. Raises on the first bad file."""
    if not models_dir.is_dir():
        raise NotFoundError(f"models folder not found: {models_dir}")
    specs = [parse_model(p) for p in sorted(models_dir.glob("*/model.toml"))]
    seen: dict[str, Path] = {}
    for s in specs:
        for n in (s.name, *s.aliases):
            if n in seen and seen[n] != s.path:
                raise InputError(f"name or alias {n!r} is also used by {seen[n]}", path=s.path,
                                 key="aliases", hint="names and aliases must be unique")
            seen[n] = s.path
    return Registry(tuple(specs))
