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

import datetime as dt
import json
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit

from pyrepro import generate, sources
from pyrepro.errors import InputError, NotFoundError, UsageError
from pyrepro.lock import DECLARED_REASON
from pyrepro.registry import NAME_RE, PY_RE, parse_model
from pyrepro.scan import ScanResult, scan_path

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

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "model_dir": str(self.model_dir), "written": [str(p) for p in self.written],
                "distributions": list(self.scan.distributions), "warnings": list(self.warnings),
                "scan": self.scan.to_json()}


def _submitted(folder: Path) -> str | None:
    for fname, key in (("metadata.json", "date_submitted"), ("info.json", "date")):
        p = folder / fname
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        raw = data.get(key) if isinstance(data, dict) else None
        if isinstance(raw, str):
            m = re.match(r"^(\d{2})-(\d{2})-(\d{4})$", raw.strip())
            if m:
                return f"{m.group(3)}-{m.group(1)}-{m.group(2)}"
            try:
                return dt.date.fromisoformat(raw.strip()[:10]).isoformat()
            except ValueError:
                pass
    return None


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


def draft_model_toml(folder: Path, name: str, python: str, scan: ScanResult, pin: dict[str, str]) -> str:
    doc = tomlkit.document()
    doc.add(tomlkit.comment(f"Draft written by 'pyrepro init' from {folder.name}; review every value."))
    doc["schema"] = 1
    doc["name"] = name
    doc["upstream_name"] = folder.name
    doc["aliases"] = [folder.name] if folder.name != name else []
    doc["title"] = folder.name
    doc["python"] = python
    doc["gpu"] = "none"
    doc["benchmarks"] = ["dft_3d_exfoliation_energy"]
    sub = _submitted(folder)
    if sub:
        doc["submitted"] = sub
    notes = [f"unresolved import {i.module}: {i.note}" for i in scan.unresolved]
    # guesses and optional imports are never written as dependencies: they wait for review
    notes += [f"import {i.module} ({i.locations[0]}): no known distribution; {i.guess!r} is only a guess; review it, "
              "then add it to [mapping] or dependencies.extra" for i in scan.guesses]
    undeclared_optional = [d for d in scan.optional_distributions if d not in set(scan.declared_names)]
    if undeclared_optional:
        notes.append("optional imports (try/except ImportError or TYPE_CHECKING), not dependencies: "
                     + ", ".join(undeclared_optional))
    if scan.python2_evidence:
        notes.append(f"Python 2 evidence: {scan.python2_evidence[0]}")
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
    deps = tomlkit.table()
    deps["scanned"] = list(scan.required)
    # imports behind platform/version guards keep their guard as a PEP 508 marker
    declared = set(scan.declared_names)
    deps["extra"] = [f"{d}; {m}" for d, m in scan.conditional.items()] + \
        [d for d in scan.optional_distributions if d in declared]  # optional in the code, but declared
    deps["remove"] = []
    pins = tomlkit.aot()
    used = set(scan.required) | set(scan.conditional) | set(scan.optional_distributions)
    for d in scan.declared:
        spec = d.spec[len(d.spec.split("=")[0].split("<")[0].split(">")[0].split("!")[0].split("~")[0]):].strip() \
            if d.name in used else ""
        if spec and spec[0] in "<>=!~" and "@" not in d.spec:
            t = tomlkit.table()
            t.update({"name": d.name, "spec": spec.replace(" ", ""),
                      "reason": f"{DECLARED_REASON} ({d.path}:{d.line})"})
            pins.append(t)
    if len(pins):
        deps["pins"] = pins
    doc["dependencies"] = deps
    return tomlkit.dumps(doc)


def init_model(folder: Path, *, name: str, models_dir: Path, python: str = "3.10", force: bool = False,
               mirror: Path | None = None) -> InitResult:
    if not NAME_RE.match(name):
        raise UsageError(f"--name {name!r}: use a lower-case attribute name such as 'cfid' or 'my_model'")
    if not PY_RE.match(python):
        raise UsageError(f"--python {python!r}: write major.minor, e.g. 3.10")
    folder = Path(folder)
    scan = scan_path(folder, python=python)  # raises NotFoundError for a missing folder
    if not folder.is_dir():
        raise InputError("init needs a contribution folder, not a file", path=folder)
    target = models_dir / name
    if target.exists() and not force:
        raise UsageError(f"{target} already exists", hint="pass --force to overwrite it, or choose another --name")
    pin, warnings = _pin(folder, mirror)
    text = draft_model_toml(folder, name, python, scan, pin)
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
    return InitResult(name, target, written, scan, tuple(warnings))
