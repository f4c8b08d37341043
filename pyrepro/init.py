"""``pyrepro init``: a draft model from any contribution folder (JARVIS or MatBench style).

It scans the folder, computes its git tree id, and writes ``models/<name>/model.toml`` (the
scan's required distributions as ``[dependencies] scanned``, guarded ones (with their PEP 508
markers) as ``extra``, unresolved modules, guesses and optional imports as notes,
entry point from the shell scripts, runtime tools), then the generated ``pyproject.toml`` and
``default.nix``. A folder inside a pinned mirror (``<mirror>/<repo>/<subdir>``) gets a real
pin; any other folder gets a draft pin marked as such (repository and commit to fill in).
Nothing is overwritten without ``force``; everything is written atomically.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from pyrepro import generate, sources
from pyrepro.errors import InputError, NotFoundError, UsageError
from pyrepro.fsutil import contained_links, link_out, outward_links
from pyrepro.lock import AUTO_REASON, DECLARED_REASON
from pyrepro.registry import NAME_RE, PY_RE, parse_model
from pyrepro.resolve import dev_tool_reason, not_a_package_reason
from pyrepro.scan import ScanResult, scan_path
from pyrepro.scan.metadata import vcs_source

DRAFT_COMMIT = "0" * 40
KNOWN_REPOS = {"jarvis_leaderboard": "https://github.com/usnistgov/jarvis_leaderboard",
               "matbench": "https://github.com/materialsproject/matbench"}


@dataclass(frozen=True)
class InitResult:
    name: str
    model_dir: Path
    written: tuple[Path, ...]
    scan: ScanResult
    warnings: tuple[str, ...]
    decisions: Decisions | None = None

    def to_json(self) -> dict[str, Any]:
        d = self.decisions
        return {"name": self.name, "model_dir": str(self.model_dir), "written": [str(p) for p in self.written],
                "distributions": list(self.scan.distributions), "warnings": list(self.warnings),
                "python": {"version": d.python, "reason": d.python_reason} if d else None,
                "gpu": {"need": d.gpu, "reason": d.gpu_reason} if d else None,
                "benchmarks": list(d.benchmarks) if d else None,
                "scan": self.scan.to_json()}


def _submitted(folder: Path) -> str | None:
    """The date the submission's metadata states (ISO), or None (``evidence.stated_date``)."""
    from pyrepro import evidence

    day, _why = evidence.stated_date(folder)
    return day.isoformat() if day else None


def _exact_pins(scan: ScanResult) -> list[tuple[str, str]]:
    """(name, version) of every exact pin the submission declares, in pip's spelling or conda's
    (``pandas=0.23.4=py36h04863e7_0`` in a conda export: delinker, corpus8, was dated by the one
    pip pin of its environment file, two years before its conda pins)."""
    out = []
    for d in scan.declared:
        spec = _declared_spec(d)
        if spec.startswith("==") and not spec.startswith("===") and "," not in spec and "*" not in spec:
            out.append((d.name, spec[2:].strip()))
    return list(dict.fromkeys(out))


def _conflicting_exact_pins(scan: ScanResult) -> dict[str, tuple[Any, list[Any]]]:
    """Names the submission pins exactly to more than one version (a folder serving several model
    versions, one metadata file each): name -> (the declaration of the newest version, the others).
    Two exact pins can never lock together; the newest agrees with the date chosen for the folder
    (evidence: the newest model file's)."""
    from packaging.version import InvalidVersion, Version

    by: dict[str, list[tuple[Version, Any]]] = {}
    for d in scan.declared:
        if "==" not in d.spec or "@" in d.spec:
            continue
        raw = d.spec.split("==", 1)[1].split(";")[0].strip()
        try:
            by.setdefault(d.name, []).append((Version(raw), d))
        except InvalidVersion:
            continue
    out = {}
    for n, vs in by.items():
        if len({v for v, _d in vs}) > 1:
            newest = max(vs, key=lambda x: x[0])
            out[n] = (newest[1], [d for v, d in vs if v != newest[0]])
    return out


def api_eras_applied(scan: ScanResult) -> tuple[list[Any], list[tuple[Any, list[str]]]]:
    """The scan's API-era uses (``scan.ApiUse``) whose requirement init applies (a pin, and a bound
    on an unstated Python), and those a declaration contradicts, with its specifiers: a
    distribution the submission pins exactly, or declares with a range the requirement is not in
    (tensorflow>=2.3 beside one file of tf.placeholder), keeps the authors' word."""
    exactly = {n for n, _v in _exact_pins(scan)}
    declared: dict[str, list[str]] = {}
    for d in scan.declared:
        spec = _declared_spec(d)
        if spec and spec not in declared.setdefault(d.name, []):
            declared[d.name].append(spec)
    applied: list[Any] = []
    contradicted: list[tuple[Any, list[str]]] = []
    for use in scan.api_uses:
        req = Requirement(use.requirement)
        dist = canonicalize_name(req.name)
        if dist in exactly:
            continue
        specs = declared.get(dist, [])
        if specs and not jointly_satisfiable([*specs, str(req.specifier)]):
            contradicted.append((use, specs))
            continue
        applied.append(use)
    return applied, contradicted


def _declared_spec(decl: Any) -> str:
    """A declaration's version spec as PEP 440 ("" when it has none or it cannot be one)."""
    spec = decl.spec[len(decl.spec.split("=")[0].split("<")[0].split(">")[0].split("!")[0].split("~")[0]):].strip()
    spec = _pep440_spec(spec.split(";")[0].strip().replace(" ", ""))
    if spec and not _valid_requirements([f"{decl.name}{spec}"], names_only=False)[0]:
        return ""  # never written: it would not parse as a requirement
    return spec


def jointly_satisfiable(specs: Sequence[str]) -> bool:
    """Whether some version could satisfy every specifier set in ``specs`` (``~=1.4.2`` and
    ``~=1.2.0`` cannot). Tried on the versions the specifiers name and the ones just above them,
    which is where two ranges meet; a set that names no version always is."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    sets = [SpecifierSet(s) for s in specs if s]
    named = {sp.version.removesuffix(".*") for ss in sets for sp in ss}
    candidates = []
    for v in named:
        for c in (v, f"{v}.1", f"{v}.0.1", f"{v}.post1"):
            try:
                candidates.append(Version(c))
            except InvalidVersion:
                continue
    if not candidates:
        return True
    return any(all(ss.contains(c, prereleases=True) for ss in sets) for c in candidates)


def _contradicting_files(specs: Sequence[tuple[Any, str]]) -> dict[str, tuple[Any, list[Any]]]:
    """Names declared in several files whose ranges exclude each other (requirements.txt's
    xgboost~=1.4.2 beside a docs/environment.yml's xgboost~=1.2.0, a year older): name -> (the
    declaration kept, those set aside). The kept one is the main file's: a declaration that is not a
    comment or a README line, then the file nearest the folder's top, then a requirement file before
    a conda environment file. Intersected, they would never lock."""
    by: dict[str, list[tuple[Any, str]]] = {}
    for decl, spec in specs:
        if spec and "@" not in decl.spec:
            by.setdefault(decl.name, []).append((decl, spec))
    out = {}
    for n, rows in by.items():
        if len({d.path for d, _s in rows}) < 2 or jointly_satisfiable([s for _d, s in rows]):
            continue

        def rank(row: tuple[Any, str]) -> tuple[bool, int, bool]:
            d = row[0]
            return (d.commented or d.doc is not None, d.path.count("/"), d.path.endswith((".yml", ".yaml")))

        best = min(rows, key=rank)[0]
        kept = [s for d, s in rows if d.path == best.path]
        others = [d for d, s in rows if d.path != best.path and not jointly_satisfiable([*kept, s])]
        if others:
            out[n] = (best, others)
    return out


def _pin(folder: Path, mirror: Path | None) -> tuple[dict[str, str], list[str]]:
    tree = sources.git_tree_id(folder)
    warnings = []
    resolved = folder.resolve()
    if mirror is not None:
        try:
            rel = resolved.relative_to(mirror.resolve())
            repo = rel.parts[0]
            manifest = mirror / f"{repo}.MANIFEST.json"
            subdir = "/".join(rel.parts[1:])
            if manifest.is_file():
                man = json.loads(manifest.read_text())
                expected = man.get("trees", {}).get(subdir)
                if expected and expected != tree:
                    warnings.append(f"tree id {tree} differs from the mirror manifest's {expected} for {subdir}")
                pin = {"repository": man["repository"], "commit": man["commit"], "subdir": subdir, "tree": tree}
                if expected == tree:  # the Nix fetch hashes, from the same verified mirror
                    try:
                        h = sources.sparse_hashes(mirror / repo, subdir, sources.DEFAULT_BENCHMARKS_SUBDIR,
                                                  ["dft_3d_exfoliation_energy"])
                        pin.update(nar_hash=h.source.sri, benchmarks_nar_hash=h.benchmarks.sri)
                    except NotFoundError as exc:
                        warnings.append(f"nar_hash not computed: {exc}")
                else:
                    warnings.append("nar_hash not computed: the folder differs from the mirror's pinned tree")
                return pin, warnings
        except (ValueError, IndexError, OSError, KeyError):
            pass
    warnings.append("the folder is not in a pinned mirror: [source] repository and commit are drafts; fill them in "
                    "(the tree id is computed from the folder as it is)")
    return {"repository": "", "commit": DRAFT_COMMIT, "subdir": "", "tree": tree}, warnings


@dataclass(frozen=True)
class Decisions:
    """What init decided from evidence, each with its reason (written into model.toml)."""

    python: str
    python_reason: str
    gpu: str = "none"
    gpu_reason: str = ""
    benchmarks: tuple[str, ...] = ()
    benchmarks_reason: str = ""
    aliases: tuple[str, ...] = ()


def draft_model_toml(folder: Path, name: str, python: str | Decisions, scan: ScanResult, pin: dict[str, str],
                     wheel_matches: Sequence[WheelMatch] = (), submitted: Any = None) -> str:
    """The draft model.toml. ``submitted``: an ``evidence.DateChoice`` (default: the date the
    metadata states)."""
    d = python if isinstance(python, Decisions) else Decisions(python, "given with --python")
    doc = tomlkit.document()
    doc.add(tomlkit.comment(f"Draft written by 'pyrepro init' from {folder.name}; review every value."))
    doc["schema"] = 1
    doc["name"] = name
    # nobody has reviewed it yet: 'pyrepro run' refuses it without --draft (delete the line after review)
    doc["draft"] = True
    doc["upstream_name"] = folder.name
    doc["aliases"] = list(d.aliases) if isinstance(python, Decisions) else ([folder.name] if folder.name != name else [])
    doc["title"] = folder.name
    doc["python"] = d.python
    doc["python_reason"] = d.python_reason
    doc["gpu"] = d.gpu
    if d.gpu_reason:
        doc["gpu_reason"] = d.gpu_reason
    doc["benchmarks"] = list(d.benchmarks) or ["dft_3d_exfoliation_energy"]
    if d.benchmarks_reason:
        doc["benchmarks_reason"] = d.benchmarks_reason
    from pyrepro import evidence

    when = submitted if submitted is not None else evidence.DateChoice(*evidence.stated_date(folder))
    if when.day is not None:
        doc["submitted"] = when.day.isoformat()
        doc["submitted_reason"] = when.reason
    notes = [f"unresolved import {i.module}: {i.note}" for i in scan.unresolved]
    if isinstance(python, Decisions) and not d.benchmarks:
        notes.append("no result files (<Category>-<Task>-<property>-<dataset>-test-<metric>.csv.zip) found: "
                     "the benchmark is a placeholder")
    # guesses and optional imports are never written as dependencies: they wait for review
    notes += [f"import {i.module} ({i.locations[0]}): no known distribution; {i.guess!r} is only a guess; review it, "
              "then add it to [mapping] or dependencies.extra" for i in scan.guesses]
    notes += [f"import {m.module}: {m.distribution}? {m.reason}" for m in wheel_matches if not m.declared]
    undeclared_optional = [d for d in scan.optional_distributions if d not in set(scan.declared_names)]
    if undeclared_optional:
        notes.append("optional imports (try/except ImportError or TYPE_CHECKING), not dependencies: "
                     + ", ".join(undeclared_optional))
    if scan.python2_evidence:
        notes.append(f"Python 2 evidence: {scan.python2_evidence[0]}")
    notes += [f"the code clones {url} ({where}): a module no distribution provides may come from it; pin it as "
              "an extra source" for url, where in cloned_repositories(scan)]
    notes += [f"the README links {url} ({where}): {module} may come from it; pin it as an extra source"
              for module, url, where in linked_repositories(folder, [i.module for i in scan.guesses])]
    notes += [f"{m.group(1)} puts {m.group(2)} on sys.path, outside the folder: {i.module} may come from there; "
              "pin that code as an extra source" for i in scan.guesses
              if (m := re.search(r"; (\S+) puts (.+?) on sys\.path before it, outside this folder", i.note or ""))]
    # a second package source the submission names (find_links, --extra-index-url) is refused, never lost
    notes += [f"{s.option} {s.url} ({s.path}{':' + str(s.line) if s.line else ''}): a package source besides PyPI, "
              "not used; what only it serves (a +cu121 build, a wheel PyPI lacks) comes from PyPI instead: review "
              "those packages in the lock" for s in scan.package_sources]
    if notes:
        doc["notes"] = "; ".join(notes)
    src = tomlkit.table()
    for k in ("repository", "commit", "subdir", "tree", "nar_hash", "benchmarks_nar_hash"):
        if k in pin:
            src[k] = pin[k]
    doc["source"] = src
    entry = tomlkit.table()
    ep = scan.entry_points[0] if scan.entry_points else None
    entry["command"] = [ep.interpreter, ep.script] if ep else ["python", "run.py"]
    doc["entry"] = entry
    test = tomlkit.table()
    test["args"] = ["--test"]
    test["description"] = "TODO: the cheap-run knobs the test-mode patch sets"
    doc["test"] = test
    rt = tomlkit.table()
    rt["tools"] = sorted({t.name for t in scan.runtime_tools if not t.name.startswith("python")})
    doc["runtime"] = rt
    # declared VCS requirements are sources, never PyPI names: a full commit becomes an extra
    # source (generate leaves its name out of the PyPI dependencies); anything else is a review item
    vcs: dict[str, tuple[tuple[str, str, str], Any]] = {}
    for decl in scan.declared:
        src = vcs_source(decl.spec)
        if src is not None and decl.name not in vcs:
            vcs[decl.name] = (src, decl)
    pinned_sources = {n: v for n, v in vcs.items() if re.fullmatch(r"[0-9a-f]{40}", v[0][2])}
    # a source with no full commit cannot be installed, but a PyPI declaration of the same name can
    # (an install hint for a branch, next to the model file's pinned release): that one is used
    for n in [n for n in vcs if n not in pinned_sources]:
        pypi = next((d for d in scan.declared if d.name == n and vcs_source(d.spec) is None), None)
        if pypi is not None:
            (_nm, url, ref), decl = vcs.pop(n)
            notes.append(f"declared VCS source {n} ({decl.path}:{decl.line}, {url}{' at ' + ref if ref else ''}) not "
                         f"used: {n} is also declared from PyPI ({pypi.path}:{pypi.line}: {pypi.spec}), which installs")
    for n, ((_nm, url, ref), decl) in sorted(vcs.items()):
        if n not in pinned_sources:
            notes.append(f"declared VCS source {n} ({decl.path}:{decl.line}): {url}"
                         f"{' at ' + ref if ref else ' with no ref'}; not a PyPI name and not installed: resolve "
                         "the full 40-hex commit, then add it as [[extra_sources]] (name, repository, commit)")
    if vcs:
        doc["notes"] = "; ".join(notes)
    direct = direct_references(folder, scan)
    for n, (decl, inside) in sorted(direct.items()):
        where = f"{decl.path}:{decl.line}" if decl.line else decl.path
        if inside is not None:
            notes.append(f"{n} ({where}: {decl.spec[:80]}) is the submission's own code ({inside}): part of the pinned "
                         "source, not a PyPI name and not installed into the environment; after review, make it "
                         "importable from the source (a patch), or pin it as [[extra_sources]]")
        else:
            notes.append(f"{n} ({where}: {decl.spec[:80]}) is a direct reference to code outside the submission: "
                         "refused, not a PyPI name and not installed; ship the code in the folder, pin it as "
                         "[[extra_sources]] (repository and 40-hex commit), or add the PyPI release to "
                         "dependencies.extra after review")
    imported_direct = sorted(n for n in direct if n in scan.required)
    if imported_direct:  # the import, not the declaration, makes these PyPI names (numpy @ file:///croot/...)
        notes.append("the code imports " + ", ".join(imported_direct) + ", declared only as direct references: "
                     "the PyPI distribution the import resolves to is used, not the referenced code; review it")
    if direct:
        doc["notes"] = "; ".join(notes)
    deps = tomlkit.table()
    deps["scanned"] = [d for d in scan.required if d not in vcs or d in pinned_sources]
    # imports behind platform/version guards keep their guard as a PEP 508 marker
    declared = set(scan.declared_names) - set(direct)
    deps["extra"] = [f"{d}; {m}" for d, m in scan.conditional.items()] + \
        [d for d in scan.optional_distributions if d in declared]  # optional in the code, but declared
    deps["remove"] = []
    pins = tomlkit.aot()
    used = set(scan.required) | set(scan.conditional) | set(scan.optional_distributions)
    # Declared requirements the code never imports (console tools, plugins) are kept, as declared;
    # development tools are dropped with their reason; repeated declarations are merged.
    extra = list(deps["extra"])
    dropped = []
    # JARVIS's metadata.json "software_used" is a free-text line ("quantum espresso", a boilerplate
    # "jarvis-tools,numpy,scipy,torch,alignn"): it confirms what the code imports, never adds to it
    requirement_files = {d.name for d in scan.declared if Path(d.path).name != "metadata.json"}
    for dname in scan.declared_names:
        if dname not in requirement_files:
            continue
        if dname in used or dname in vcs or dname in direct or any(e.split(";")[0].strip() == dname for e in extra):
            continue
        why = dev_tool_reason(dname)
        own = own_package(folder, dname)
        if why:
            dropped.append(f"{dname} ({why})")
        elif own:
            decl = next(d for d in scan.declared if d.name == dname)
            notes.append(f"{dname} ({decl.path}{':' + str(decl.line) if decl.line else ''}) is this submission itself "
                         f"(its own {own}): not a dependency")
            doc["notes"] = "; ".join(notes)
        elif not _not_installable(dname):
            extra.append(dname)
    deps["extra"] = extra
    deps["scanned"], bad_scanned = _valid_requirements(list(deps["scanned"]), names_only=True)
    deps["extra"], bad_extra = _valid_requirements(extra)
    for bad in (*bad_scanned, *bad_extra):
        notes.append(f"not written as a dependency: {bad!r} is not a valid PEP 508 requirement; review it")
    if bad_scanned or bad_extra:
        doc["notes"] = "; ".join(notes)
    if dropped:
        notes.append("declared development tools not installed: " + ", ".join(dropped))
        doc["notes"] = "; ".join(notes)
    seen_specs: set[tuple[str, str]] = set()
    exact = _conflicting_exact_pins(scan)
    for n, (kept, others) in sorted(exact.items()):
        notes.append(f"{n} is pinned to several versions: kept =={kept.spec.split('==', 1)[1].split(';')[0].strip()} "
                     f"({kept.path}:{kept.line}), the newest (two exact pins never lock together); "
                     "not " + ", ".join(f"=={o.spec.split('==', 1)[1].split(';')[0].strip()} ({o.path}:{o.line})"
                                         for o in others))
    if exact:
        doc["notes"] = "; ".join(notes)
    specs = [(decl, _declared_spec(decl)) for decl in scan.declared
             if not (decl.name in exact and decl is not exact[decl.name][0] and "==" in decl.spec)]
    set_aside = _contradicting_files(specs)
    for n, (kept, others) in sorted(set_aside.items()):
        notes.append(f"{n} is declared with ranges that exclude each other: kept {kept.spec} ({kept.path}:{kept.line}), "
                     "the declaration of the submission's main file; not " +
                     ", ".join(f"{o.spec} ({o.path}:{o.line})" for o in others))
    if set_aside:
        doc["notes"] = "; ".join(notes)
    dropped_decls = {id(o) for _k, others in set_aside.values() for o in others}
    for decl, spec in specs:
        if (decl.name not in used and decl.name not in extra) or id(decl) in dropped_decls:
            continue
        if spec and "@" not in decl.spec and (decl.name, spec) not in seen_specs:
            seen_specs.add((decl.name, spec))
            t = tomlkit.table()
            t.update({"name": decl.name, "spec": spec,
                      "reason": f"{DECLARED_REASON} ({decl.path}:{decl.line})"})
            pins.append(t)
    # an API a later series removed (tf.placeholder): that distribution is held before the series,
    # unless the submission pins it exactly (its pin is the authors' word)
    applied, contradicted = api_eras_applied(scan)
    for use, declared_specs in contradicted:
        notes.append(f"{use.location} uses {use.module} ({use.requirement}), but the submission declares "
                     f"{canonicalize_name(Requirement(use.requirement).name)}{','.join(declared_specs)}: the "
                     "declaration is kept")
        doc["notes"] = "; ".join(notes)
    for use in applied:
        req = Requirement(use.requirement)
        dist = canonicalize_name(req.name)
        if (dist not in used and dist not in extra) or (dist, str(req.specifier)) in seen_specs:
            continue
        seen_specs.add((dist, str(req.specifier)))
        t = tomlkit.table()
        t.update({"name": dist, "spec": str(req.specifier),
                  "reason": f"{AUTO_REASON} (rule api-era; from the scan): the code uses {use.module} "
                            f"({use.location}): {use.reason}"})
        pins.append(t)
    for m in wheel_matches:
        if m.declared and m.spec and (m.distribution, m.spec) not in seen_specs:
            seen_specs.add((m.distribution, m.spec))
            t = tomlkit.table()
            t.update({"name": m.distribution, "spec": m.spec, "reason": m.reason})
            pins.append(t)
    if len(pins):
        deps["pins"] = pins
    if pinned_sources:
        es = tomlkit.aot()
        for n, ((_nm, url, ref), decl) in sorted(pinned_sources.items()):
            t = tomlkit.table()
            t.update({"name": n, "repository": url, "commit": ref, "install": "package"})
            t.add(tomlkit.comment(f"declared in {decl.path}:{decl.line}; hash unknown until fetched"))
            es.append(t)
        doc["extra_sources"] = es
    doc["dependencies"] = deps
    matched = [m for m in wheel_matches if m.declared]
    if matched:
        mp = tomlkit.table()
        for m in sorted(matched, key=lambda m: m.module):
            row = tomlkit.inline_table()
            row.update({"distribution": m.distribution, "reason": m.reason})
            mp[m.module] = row
        doc["mapping"] = mp
    return tomlkit.dumps(doc)


def direct_references(folder: Path, scan: ScanResult) -> dict[str, tuple[Any, str | None]]:
    """Names the submission declares only as direct references (``attrs @ file:///...``,
    ``pkg @ https://host/pkg.tar.gz``; ``scan.metadata.direct_reference``), never as a PyPI
    requirement: name -> (its first such declaration, the folder-relative path it points to when
    that lies inside the submission, else None). Nothing is read: a ``file:`` address or a path is
    resolved (links included) and checked for containment; a web address is outside."""
    from urllib.parse import unquote, urlsplit

    from pyrepro.scan.metadata import direct_reference

    plain = {d.name for d in scan.declared if direct_reference(d.spec) is None}
    root = folder.resolve()
    out: dict[str, tuple[Any, str | None]] = {}
    for decl in scan.declared:
        url = direct_reference(decl.spec)
        if url is None or decl.name in plain or decl.name in out:
            continue
        inside = None
        scheme = re.match(r"^([a-z][a-z0-9+.-]*):", url)
        if scheme is None or scheme.group(1) == "file":
            where = unquote(urlsplit(url).path) if scheme else url
            if where:
                target = Path(where) if Path(where).is_absolute() else folder / Path(decl.path).parent / where
                try:
                    real: Path | None = target.resolve()
                except (OSError, RuntimeError):  # a link loop: not followed
                    real = None
                if real is not None and real.is_relative_to(root):
                    inside = real.relative_to(root).as_posix()
        out[decl.name] = (decl, inside)
    return out


@dataclass(frozen=True)
class WheelMatch:
    """An import with no known distribution, matched to a distribution by what its wheel ships."""

    module: str
    distribution: str
    reason: str
    declared: bool  # the submission declares the distribution (written to [mapping]); else a review note
    spec: str = ""  # "==version" when that release must be installed (``Provider.spec``)


def match_by_wheels(scan: ScanResult, index: Any, before: dt.date | None = None,
                    python: str | None = None) -> list[WheelMatch]:
    """Imports with no known distribution, checked against the wheels of the distributions the
    submission declares (``import ax`` with ``ax-platform==0.2.3`` declared): a module that a
    declared distribution's wheel ships at top level resolves to it (written to ``[mapping]``
    with the wheel named). A guess that matches no declaration gets a provider by evidence
    (``pyrepro.providers``, rule import-provider: a candidate whose wheel, released by ``before``,
    the submission's date, ships that module), written to ``[mapping]`` with that evidence, the
    same rule the import check's repair applies, one lock and build earlier. A name the table
    knows is not on PyPI, or a generic name that is almost always the submission's own missing
    module (``utils``), is never given one; it stays a review note."""
    guesses = [i for i in scan.imports if i.resolved_with in ("identity-guess", "unresolved")]
    if not guesses or index is None or not hasattr(index, "top_levels"):
        return []
    declared = {}
    for d in scan.declared:
        if Path(d.path).name == "metadata.json" or _not_installable(d.name) or d.name in declared:
            continue
        if vcs_source(d.spec) is not None:
            continue
        spec = d.spec.split(";")[0]
        version = spec.split("==", 1)[1].strip() if "==" in spec and "*" not in spec.split("==", 1)[1] else None
        declared[d.name] = (version, d)
    used = {i.distribution for i in scan.imports if i.distribution}
    candidates = {n: v for n, v in declared.items() if n not in used}
    tops: dict[str, tuple[frozenset[str], str] | None] = {}

    def wheel(name: str, version: str | None) -> tuple[frozenset[str], str] | None:
        if name not in tops:
            tops[name] = index.top_levels(name, version)
        return tops[name]

    out: list[WheelMatch] = []
    for imp in guesses:
        top = imp.module.split(".")[0]
        hits = []
        for name, (version, decl) in sorted(candidates.items()):
            got = wheel(name, version)
            if got is not None and top in got[0]:
                hits.append((name, got[1], decl))
        if len(hits) == 1:
            name, fname, decl = hits[0]
            out.append(WheelMatch(top, name, f"declared in {decl.path}{':' + str(decl.line) if decl.line else ''}; "
                                  f"its wheel {fname} ships the top-level module {top}", True))
        elif len(hits) > 1:
            out.append(WheelMatch(top, hits[0][0], "ambiguous: the wheels of " + ", ".join(h[0] for h in hits)
                                  + f" all ship {top}; review and add the right one to [mapping]", False))
        elif imp.guess and imp.kind == "required" and hasattr(index, "releases_by"):
            # an optional import is never installed unless declared: no provider is looked up
            from pyrepro.providers import AFTER_DATE, find_provider, known_absent

            if known_absent(imp.module):
                continue
            found = find_provider(imp.module, index, before, python)
            if found is not None and imp.branch and AFTER_DATE in found.reason:
                # imported only under a run-time condition, and nothing of the submission's time
                # ships it: a later release would bind the whole lock to its own era (rlkit-sac,
                # corpus18 held, studied after its measurement: d4rl 1.1 of 2022 for a 2019
                # submission needs Python 3.7 through dm-control, and the 3.6 lock failed on it);
                # the import check accepts a branch-only module missing, and says so
                out.append(WheelMatch(top, found.distribution, f"imported only at {imp.branch}; not added: {found.reason}",
                                      False))
            elif found is not None:
                out.append(WheelMatch(top, found.distribution, found.reason, True, found.spec()))
    return out


def cloned_repositories(scan: ScanResult) -> list[tuple[str, str]]:
    """(address, where) of each repository the code clones at run time (``git clone URL`` in a
    script or a notebook cell): code the submission needs that is not in its folder."""
    out: dict[str, str] = {}
    for t in scan.runtime_tools:
        if t.name != "git":
            continue
        words = t.command.split()
        if "clone" not in words:
            continue
        url = next((w for w in words[words.index("clone") + 1:] if re.match(r"^(https?://|git@)", w)), None)
        if url:
            out.setdefault(url.removesuffix(".git"), str(t.location))
    return sorted(out.items())


_REPOSITORY_LINK = re.compile(r"https?://(?:www\.)?(?:github\.com|gitlab\.com|bitbucket\.org)/[\w.-]+/([\w.-]+)")


def linked_repositories(folder: Path, modules: Sequence[str]) -> list[tuple[str, str, str]]:
    """(module, address, where) for each of ``modules`` (imports no distribution provides) whose
    name a repository linked from the folder's README (or its first-level folders' READMEs) bears:
    vnet-volumetric (corpus18 dev) imports torchbiomed, which is on no index, and its README links
    https://github.com/mattmacy/torchbiomed. Names compare as distribution names (case, ``-``,
    ``_`` and ``.`` alike), and a ``scikit-X`` repository also as the SciKits' import name ``skX``
    (scikit-learn's sklearn, scikit-image's skimage; the k shared when X begins with one:
    scikit-kinematics' skinematics; holographic-embeddings, corpus19 dev, imports skge and its
    README links github.com/mnick/scikit-kge); the first link of each module is kept."""
    from packaging.utils import canonicalize_name

    from pyrepro.fsutil import decode_text
    from pyrepro.scan.metadata import README_NAMES

    wanted = {canonicalize_name(m.split(".")[0]): m.split(".")[0] for m in modules}
    if not wanted:
        return []
    found: dict[str, tuple[str, str]] = {}
    readmes = [p for pattern in ("*", "*/*") for p in sorted(folder.glob(pattern))
               if p.name.lower() in README_NAMES and link_out(folder, p.relative_to(folder).as_posix()) is None
               and p.is_file()]  # a README linked to a file outside the folder is never read
    for path in readmes:
        try:
            text = decode_text(path.read_bytes())
        except (OSError, UnicodeDecodeError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for m in _REPOSITORY_LINK.finditer(line):
                repo = m.group(1).removesuffix(".git")
                key = canonicalize_name(repo)
                if key not in wanted and key.startswith("scikit-"):
                    rest = key.removeprefix("scikit-").replace("-", "")
                    # sk + the rest, its k shared when the rest begins with one (scikit-kinematics: skinematics)
                    key = next((k for k in ("sk" + rest, "s" + rest) if k in wanted and k.startswith("sk")), key)
                if key in wanted and wanted[key] not in found:
                    url = m.group(0).removesuffix(".git")
                    found[wanted[key]] = (url, f"{path.relative_to(folder).as_posix()}:{n}")
    return [(mod, url, where) for mod, (url, where) in sorted(found.items())]


def _pep440_spec(spec: str) -> str:
    """A declared version spec as PEP 440, or "" when it cannot be one: conda's ``=0.6.0=py310_0``
    and ``=1.2`` mean ``==0.6.0`` and ``==1.2.*``; anything that does not parse is left out (the
    name is still declared; the resolver picks the version)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not spec or spec[0] not in "<>=!~":
        return ""
    conda = re.fullmatch(r"=?=([0-9][\w.*+!]*)(=[\w.*+]+)?", spec)
    if conda and not spec.startswith("=="):  # conda: name=version[=build]
        v = conda.group(1)
        spec = f"=={v}" if conda.group(2) or v.count(".") >= 2 else f"=={v}.*" if "*" not in v else f"=={v}"
    elif conda and conda.group(2):  # name==version=build
        spec = f"=={conda.group(1)}"
    try:
        SpecifierSet(spec)
    except InvalidSpecifier:
        return ""
    return spec


def _valid_requirements(reqs: list[str], *, names_only: bool = False) -> tuple[list[str], list[str]]:
    """(the ones that parse as PEP 508 requirements, the ones that do not); ``names_only``: each
    must also be a bare canonical distribution name. Nothing else is ever written to model.toml."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    good, bad = [], []
    for r in reqs:
        try:
            parsed = Requirement(r)
        except InvalidRequirement:
            bad.append(r)
            continue
        if names_only and (str(parsed) != r or canonicalize_name(parsed.name) != r):
            bad.append(r)
        else:
            good.append(r)
    return good, bad


def own_package(folder: Path, dist: str) -> str:
    """Where the submission is itself the distribution ``dist``: its own top-level package or module
    of that import name ("package pyemma_tutorials/"), or "" (pyemma-msm-tutorials, corpus19 held,
    studied after its measurement: the README's ``conda install -c conda-forge pyemma_tutorials``
    installs the repository itself; PyPI has no such project, and uv spent the budget building
    sdists before it could say so)."""
    top = re.sub(r"[-.]+", "_", dist)
    for cand in dict.fromkeys((top, top.lower())):
        if link_out(folder, f"{cand}/__init__.py") is None and (folder / cand / "__init__.py").is_file():
            return f"package {cand}/"
        if link_out(folder, f"{cand}.py") is None and (folder / f"{cand}.py").is_file():
            return f"module {cand}.py"
    return ""


def _not_installable(dist: str) -> bool:
    """Declared names that are not PyPI distributions (the [not_packages] table) are never extras."""
    return not_a_package_reason(dist) is not None or not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", dist)


def _taken_names(models_dir: Path) -> dict[str, str]:
    """Names and aliases of the models already in ``models_dir`` -> the model that has them
    (read leniently: a broken neighbour must not stop a new draft)."""
    import tomllib

    taken: dict[str, str] = {}
    if not models_dir.is_dir():
        return taken
    for mt in sorted(models_dir.glob("*/model.toml")):
        try:
            data = tomllib.loads(mt.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        owner = str(data.get("name", mt.parent.name))
        taken.setdefault(owner, owner)
        for a in data.get("aliases", []) if isinstance(data.get("aliases"), list) else []:
            taken.setdefault(str(a), owner)
    return taken


def decide(folder: Path, scan: ScanResult, *, name: str, models_dir: Path, python: str | None,
           submitted: str | None, index: Any = None) -> tuple[Decisions, list[str]]:
    """Python, GPU, benchmarks and aliases of a draft, from the submission's own evidence."""
    from pyrepro import evidence

    warnings: list[str] = []
    if python is not None:
        py, why = python, "given with --python"
    else:
        found = evidence.python_evidence(folder, python2=[w.location for w in scan.python2_evidence])
        pins = _exact_pins(scan)
        date = dt.date.fromisoformat(submitted) if submitted else None
        choice = evidence.choose_python(found, submitted=date, pins=pins,
                                        wheel_check=index.has_wheel if index is not None else None,
                                        stdlib_uses=(*scan.stdlib_uses, *api_eras_applied(scan)[0]),
                                        python3_code=bool(scan.python3_evidence))
        py, why = choice.version, choice.reason
    gpu, gpu_why = evidence.gpu_evidence(folder, distributions=[*scan.required, *scan.optional_distributions])
    found_b = evidence.benchmarks_of(folder)
    benchmarks = tuple(b for b, _f in found_b)
    b_why = ("from the result files: " + ", ".join(f for _b, f in found_b[:3]) +
             (f" and {len(found_b) - 3} more" if len(found_b) > 3 else "")) if found_b else ""
    aliases: tuple[str, ...] = ()
    if folder.name != name:
        owner = _taken_names(models_dir).get(folder.name)
        if owner is not None and owner != name:
            warnings.append(f"alias {folder.name!r} is already used by model {owner!r}; not added (every command "
                            "would refuse an ambiguous registry)")
        elif NAME_RE.match(folder.name) or re.fullmatch(r"[A-Za-z0-9_.-]+", folder.name):
            aliases = (folder.name,)
    return Decisions(py, why, gpu, gpu_why, benchmarks, b_why, aliases), warnings


def _imported_distributions(scan: ScanResult) -> list[tuple[str, str]]:
    """(distribution, where first imported) of each import the scan resolved and the code needs
    unconditionally (not only under a run-time ``if``)."""
    return [(r.distribution, str(r.locations[0]) if r.locations else "")
            for r in scan.imports if r.kind == "required" and r.distribution and not r.branch]


@contextlib.contextmanager
def _contained_view(folder: Path) -> Iterator[Path]:
    """``folder`` itself when no symbolic link in it leads out of it (or loops); else a temporary
    copy of it, under the same name, without those links (files hard-linked where the file system
    allows, else copied; links that stay inside kept as links). The evidence readers
    (``pyrepro.evidence``) walk and read whatever they find, so they get a tree where every path
    stays inside the submission: a README linked to a file elsewhere on the machine is never read."""
    if not outward_links(folder):
        yield folder
        return

    def link_or_copy(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    tmp = Path(tempfile.mkdtemp(prefix="pyrepro-view."))
    try:
        view = tmp / (folder.name or folder.resolve().name)
        shutil.copytree(folder, view, symlinks=True, copy_function=link_or_copy,
                        ignore=shutil.ignore_patterns(".git"))
        contained_links(view)
        yield view
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _submission_date(folder: Path, view: Path, scan: ScanResult, index: Any) -> Any:
    """``evidence.submission_date`` of the submission, its files read in ``view`` (see
    ``_contained_view``); the folder's git history (which reads no file of it) in ``folder``."""
    from pyrepro import evidence

    pins, uploaded = _exact_pins(scan), index.uploaded if index else None
    if view == folder:
        when = evidence.submission_date(folder, pins=pins, uploaded=uploaded)
    else:  # the same order of evidence: stated, the folder's last git commit, the rest
        stated = evidence.stated_date(view)
        git = evidence.git_date(folder) if stated[0] is None else (None, "")
        when = evidence.DateChoice(*git) if git[0] is not None else evidence.submission_date(
            view, pins=pins, uploaded=uploaded, runner=_no_git)
    if index is not None and hasattr(index, "first_upload") and when.reason.startswith(evidence.PIN_UPLOAD):
        when = evidence.imports_floor(when, _imported_distributions(scan), index.first_upload)
    return when


def _no_git(*_args: Any, **_kw: Any) -> Any:
    """A runner for ``evidence.git_date`` in a temporary view: the view has no history of its own
    (the folder's own was asked already)."""
    raise OSError("no git history in a temporary view")


def init_model(folder: Path, *, name: str, models_dir: Path, python: str | None = None, force: bool = False,
               mirror: Path | None = None, cache: Path | None = None, online: bool = True) -> InitResult:
    """Scan a folder and write a draft ``models/<name>/`` (see the module docstring). ``python``:
    None decides from evidence (see ``pyrepro.evidence``); ``cache``: where the index answers and
    a draft-pinned folder's verified copy go (default: the user cache)."""
    from pyrepro.paths import cache_dir

    if not NAME_RE.match(name):
        raise UsageError(f"--name {name!r}: use a lower-case attribute name such as 'cfid' or 'my_model'")
    if python is not None and not PY_RE.match(python):
        raise UsageError(f"--python {python!r}: write major.minor, e.g. 3.10")
    folder = Path(folder)
    scan = scan_path(folder, python=python or "3.11")  # raises NotFoundError for a missing folder
    if not folder.is_dir():
        raise InputError("init needs a contribution folder, not a file", path=folder)
    if scan.unreadable:  # a draft without that file's declarations would look complete and be wrong
        bad = scan.unreadable[0]
        raise InputError(f"declaration file cannot be read: {bad.message}", path=folder / bad.location.path,
                         line=bad.location.line,
                         hint="fix the file (nothing was written), or draft from a copy of the folder without it")
    target = models_dir / name
    if target.exists() and not force:
        raise UsageError(f"{target} already exists", hint="pass --force to overwrite it, or choose another --name")
    cache = cache or cache_dir()
    index = None
    if online:
        from pyrepro.index import WheelIndex

        index = WheelIndex(cache)
    from pyrepro import evidence

    with _contained_view(folder) as view:  # the evidence is read without following a link out of the folder
        when = _submission_date(folder, view, scan, index)
        decisions, warnings = decide(view, scan, name=name, models_dir=models_dir, python=python,
                                     submitted=when.day.isoformat() if when.day else None, index=index)
    if when.day is None and python is None:  # undated: the stated Python's end of life bounds it
        when = evidence.python_era(decisions.python, decisions.python_reason)
    if when.day is None and python is None:  # or the day an API its code uses was removed
        when = evidence.api_era(api_eras_applied(scan)[0])
    if decisions.python != (python or "3.11") and decisions.python.startswith("3."):
        scan = scan_path(folder, python=decisions.python)  # the standard library of the chosen Python
    matches = match_by_wheels(scan, index, when.day, decisions.python if decisions.python.startswith("3.") else None)
    mapping = {m.module: m.distribution for m in matches if m.declared}
    if mapping:  # the reviewed-mapping resolver of the draft, so the scan result is what build checks
        scan = scan_path(folder, python=decisions.python if decisions.python.startswith("3.") else "3.11",
                         mapping=mapping)
    pin, pin_warnings = _pin(folder, mirror)
    warnings += pin_warnings
    if pin["commit"] == DRAFT_COMMIT:
        # a folder outside any pinned mirror: its verified copy goes into the content-addressed
        # source cache, so build finds it by tree id without a mirror or a download
        sources.install_tree(folder, cache, pin["tree"])
    text = draft_model_toml(folder, name, decisions, scan, pin, matches, submitted=when)
    models_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=models_dir))
    try:
        stage = tmp / name
        stage.mkdir()
        (stage / "model.toml").write_text(text, encoding="utf-8")
        spec = parse_model(stage / "model.toml")  # the draft must be valid
        for path, body in generate.outputs(spec).items():
            path.write_text(body, encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        stage.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    written = tuple(sorted(target.iterdir()))
    warnings += [str(w) for w in scan.warnings]
    return InitResult(name, target, written, scan, tuple(warnings), decisions)
