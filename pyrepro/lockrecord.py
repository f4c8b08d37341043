"""The lock record: what one lock attempt sequence produced, as data and as ``lock.toml``.

``LockOutcome`` (with its ``Attempt``s and ``Drift``s) is what ``pyrepro.lock`` returns;
``render_record`` writes it as ``models/<name>/lock.toml``; ``read_record`` reads it back (a
broken file is a located ``InputError``). ``record_build`` adds what a build from the lock showed
(``[built]``), and ``confirmed_category`` is the one reading of a record's category: it counts once
an environment was built from that very lock (docs/lock.md).
"""

from __future__ import annotations

import datetime as dt
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit

from pyrepro import relax
from pyrepro.errors import InputError, toml_error_line
from pyrepro.fsutil import atomic_write_text
from pyrepro.lockplan import Strategy
from pyrepro.types import Location

CATEGORIES = {
    1: "as declared",
    2: "automatically relaxed",
    3: "needed a reviewed override in model.toml",
    4: "failed",
}

RECORD_SCHEMA = 1

# --------------------------------------------------------------------------- records

@dataclass(frozen=True)
class Attempt:
    """One run of the resolver."""

    strategy: Strategy
    requirements: tuple[str, ...]
    ok: bool
    seconds: float
    exclude_newer: str | None = None
    error: str = ""  # the resolver text (trimmed) when it failed
    problems: tuple[relax.Problem, ...] = ()
    aarch64: str = ""  # "locked", or why not

    def to_json(self) -> dict[str, object]:
        return {"strategy": self.strategy, "ok": self.ok, "seconds": round(self.seconds, 1),
                "exclude_newer": self.exclude_newer, "error": self.error,
                "requirements": list(self.requirements), "aarch64": self.aarch64,
                "problems": [p.to_json() for p in self.problems]}


@dataclass(frozen=True)
class Drift:
    """A locked version that differs from a declared one."""

    package: str
    declared: str
    locked: str
    why: str
    location: Location | None = None

    def __str__(self) -> str:
        return f"{self.package} {self.declared} -> {self.locked}"

    def to_json(self) -> dict[str, object]:
        return {"package": self.package, "declared": self.declared, "locked": self.locked,
                "why": self.why, "location": self.location.to_json() if self.location else None}


#: How a lock record's fidelity line begins when the lock was made from uv's resolution.
UV_LOCKED = "locked from uv's resolution"


@dataclass(frozen=True)
class SearchRecord:
    """What a pin search (``pyrepro.pinsearch``) did, for the lock record's ``[search]`` table."""

    ok: bool
    python: str
    pythons: tuple[str, ...]
    queries: int
    seconds: float
    bound: str | None
    proof: str = ""
    culprits: tuple[str, ...] = ()
    relaxed: tuple[str, ...] = ()  # "name before -> after (rung; locked V: distance)"
    spent: bool = False

    def to_json(self) -> dict[str, object]:
        return {"ok": self.ok, "python": self.python, "pythons": list(self.pythons), "queries": self.queries,
                "seconds": round(self.seconds, 1), "bound": self.bound, "proof": self.proof,
                "culprits": list(self.culprits), "relaxed": list(self.relaxed), "spent": self.spent}


@dataclass(frozen=True)
class LockOutcome:
    name: str
    category: int
    strategy: Strategy | None
    attempts: tuple[Attempt, ...]
    steps: tuple[relax.Step, ...]
    drift: tuple[Drift, ...]
    fidelity: tuple[str, ...]
    overrides: tuple[tuple[str, str, str], ...]  # reviewed (name, spec, reason)
    requirements: tuple[str, ...]  # as locked
    seconds: float
    python: str
    targets: tuple[str, ...] = ()
    packages: int = 0
    content_hash: str = ""
    exclude_newer: str | None = None
    lock_path: Path | None = None
    record_path: Path | None = None
    message: str = ""
    searches: tuple[SearchRecord, ...] = ()

    @property
    def ok(self) -> bool:
        return self.category in (1, 2, 3)

    @property
    def label(self) -> str:
        return CATEGORIES[self.category]

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name, "category": self.category, "label": self.label,
            "strategy": self.strategy, "python": self.python, "targets": list(self.targets),
            "packages": self.packages, "seconds": round(self.seconds, 1),
            "exclude_newer": self.exclude_newer, "content_hash": self.content_hash,
            "drift": [d.to_json() for d in self.drift], "fidelity": list(self.fidelity),
            "overrides": [{"name": n, "spec": s, "reason": r} for n, s, r in self.overrides],
            "steps": [s.to_json() for s in self.steps],
            "attempts": [a.to_json() for a in self.attempts],
            "requirements": list(self.requirements),
            "lock": str(self.lock_path) if self.lock_path else None,
            "record": str(self.record_path) if self.record_path else None,
            "message": self.message,
            "searches": [x.to_json() for x in self.searches],
            # a new lock is confirmed by the first environment built from it (lock.toml [built])
            "confirmed": False if self.ok else None,
        }


def render_record(o: LockOutcome, stamp: dt.datetime) -> str:
    doc = tomlkit.document()
    doc.add(tomlkit.comment("Written by 'pyrepro lock'. The outcome of locking this model; see docs/lock.md."))
    doc["schema"] = RECORD_SCHEMA
    doc["model"] = o.name
    doc["category"] = o.category
    doc["category_label"] = o.label
    doc["strategy"] = o.strategy or "none"
    doc["python"] = o.python
    doc["targets"] = list(o.targets)
    if o.exclude_newer:
        doc["exclude_newer"] = o.exclude_newer
    from pyrepro.piplock import targets_pip

    by_pip = targets_pip(o.python)  # pip on the target interpreter locked it
    by_uv = any(f.startswith(UV_LOCKED) for f in o.fidelity)  # pyrepro.uvtool.lock_with_uv
    doc["resolver"] = "pip" if by_pip else "uv" if by_uv else "pdm"
    if not by_pip and not by_uv:
        doc["pdm"] = _pdm_version()
    doc["locked_at"] = stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    doc["seconds"] = round(o.seconds, 1)
    doc["packages"] = o.packages
    doc["content_hash"] = o.content_hash
    doc["requirements"] = _ml(o.requirements)
    doc["drift"] = _ml([str(d) for d in o.drift])
    # how far each declared exact pin moved (issue 42): same release / same minor / same major / dropped
    from pyrepro.pinsearch import distance

    doc["pins_moved"] = _ml([f"{d.package} {d.declared} -> {d.locked}: "
                             f"{distance(d.declared, d.locked if d.locked[:1].isdigit() else '')}" for d in o.drift])
    doc["fidelity"] = _ml(o.fidelity)
    if o.message and o.category == 4:
        doc["message"] = tomlkit.string(o.message, multiline=True)
    overrides = [{"name": n, "spec": s, "reason": r} for n, s, r in o.overrides]
    steps = [{"rule": s.rule, "package": s.package, "before": s.before, "after": s.after,
              "reason": s.reason, "trigger": tomlkit.string(s.trigger, multiline=True)} for s in o.steps]
    attempts = []
    for a in o.attempts:
        t: dict[str, Any] = {"strategy": a.strategy, "ok": a.ok, "seconds": round(a.seconds, 1)}
        if a.exclude_newer:
            t["exclude_newer"] = a.exclude_newer
        if a.aarch64:
            t["aarch64"] = a.aarch64
        if a.error:
            t["error"] = tomlkit.string(a.error, multiline=True)
        attempts.append(t)
    searches = [{"ok": x.ok, "python": x.python, "pythons": list(x.pythons), "queries": x.queries,
                 "seconds": round(x.seconds, 1), **({"bound": x.bound} if x.bound else {}),
                 **({"proof": tomlkit.string(x.proof, multiline=True)} if x.proof else {}),
                 "culprits": list(x.culprits), "relaxed": list(x.relaxed), "spent": x.spent} for x in o.searches]
    tables = {"overrides": overrides, "steps": steps, "attempts": attempts, "searches": searches}
    # Empty lists are plain keys; they must come before the first array of tables, or
    # tomlkit hoists them above the header comment.
    for key, rows in tables.items():
        if not rows:
            doc[key] = tomlkit.array()
    for key, rows in tables.items():
        if rows:
            aot = tomlkit.aot()
            for row in rows:
                aot.append(_tbl(row))
            doc[key] = aot
    return tomlkit.dumps(doc)


def _ml(items: Sequence[str]) -> Any:
    arr = tomlkit.array()
    arr.multiline(True)
    for x in items:
        arr.append(x)
    return arr


def _tbl(d: dict[str, Any]) -> Any:
    t = tomlkit.table()
    for k, v in d.items():
        t[k] = v
    return t


def _pdm_version() -> str:
    try:
        from importlib.metadata import version

        return version("pdm")
    except Exception:
        return "unknown"


def read_record(project_dir: Path) -> dict[str, Any] | None:
    p = project_dir / "lock.toml"
    if not p.is_file():
        return None
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", path=p, line=toml_error_line(exc),
                         hint=f"relock to rewrite it: pyrepro lock {project_dir.name}") from exc


def record_build(project_dir: Path, *, env_key: str, python: str, error: str = "",
                 now: Callable[[], dt.datetime] | None = None) -> bool:
    """Write whether an environment built from this lock into lock.toml ``[built]``: a lock is
    only as good as its install, so its category counts (``confirmed_category``) once this says
    ``ok = true``. Nothing is written when the record belongs to another lock (content hashes
    differ) or already says the same; returns whether lock.toml changed."""
    rec_path, lock_path = project_dir / "lock.toml", project_dir / "pdm.lock"
    if not rec_path.is_file() or not lock_path.is_file():
        return False
    try:
        doc = tomlkit.parse(rec_path.read_text(encoding="utf-8"))
        lock_hash = tomllib.loads(lock_path.read_text(encoding="utf-8")).get("metadata", {}).get("content_hash")
    except (tomllib.TOMLDecodeError, tomlkit.exceptions.ParseError):
        return False  # 'pyrepro lock --check' names a broken file; a build does not rewrite it
    if not lock_hash or doc.get("content_hash") != lock_hash:
        return False
    new: dict[str, Any] = {"ok": not error, "env_key": env_key, "python": python}
    if error:
        lines = [ln.strip() for ln in error.strip().splitlines() if ln.strip()]
        why = [ln for ln in lines[1:] if ln.startswith(("Failed to build", "ERROR:", "error:")) or "did not build" in ln]
        new["error"] = "\n".join([lines[0][:300], *dict.fromkeys(w[:200] for w in why)][:6]) if lines else "failed"
    cur = doc.get("built")
    if isinstance(cur, dict) and all(cur.get(k) == v for k, v in new.items()) and len(cur) == len(new) + 1:
        return False
    new["at"] = (now or (lambda: dt.datetime.now(dt.UTC)))().replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    doc["built"] = _tbl(new)
    atomic_write_text(rec_path, tomlkit.dumps(doc))
    return True


def confirmed_category(record: dict[str, Any]) -> tuple[int | None, str]:
    """The category a lock record earns, and its label. A resolved lock (1-3) counts only once an
    environment was built from it: before that it is "unconfirmed"; a failed build makes it 4."""
    cat = record.get("category")
    if not isinstance(cat, int) or cat not in CATEGORIES:
        return None, "not locked"
    label = CATEGORIES[cat]
    if cat == 4:
        return 4, label
    built = record.get("built")
    if isinstance(built, dict) and built.get("ok"):
        return cat, label
    if isinstance(built, dict):
        return 4, f"locked as {cat} ({label}), but the environment did not build: {built.get('error', '')}"
    return None, f"{label}, unconfirmed: no environment has been built from this lock yet"
