"""Content verification of what a run executes: the staged source and the built environment.

A cached tree was trusted on its completion marker alone: a line added to a staged script or to
a module inside an environment still ran, and the record still vouched for the pinned tree id.
Now, before every run:

* the staged (patched) source is checked against the manifest written when it was staged
  (``MANIFEST.json``: every file's sha256; a file added, changed or removed is a mismatch);
* the environment is checked against its installed distributions' own ``RECORD`` files (the
  hashes pip wrote at install time) for every Python file, and no Python file may sit in
  site-packages that no RECORD lists (an injected ``sitecustomize.py``).

A mismatch raises ``IntegrityError`` naming the file and how to rebuild. The result says what was
checked and how long it took; the run record keeps it. Compiled files (``.so``) and data are not
re-hashed on every run (the big part of an environment, several GB for torch), which the record
states.
"""

from __future__ import annotations

import base64
import csv
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from pyrepro.errors import IntegrityError
from pyrepro.fsutil import file_sha256

MANIFEST = "MANIFEST.json"
_SKIP_PARTS = ("__pycache__",)


@dataclass(frozen=True)
class Verified:
    what: str  # "source" | "environment"
    files: int
    seconds: float
    scope: str  # what the check covers

    def to_json(self) -> dict[str, object]:
        return {"what": self.what, "files": self.files, "seconds": round(self.seconds, 3), "scope": self.scope}


def _sha256(path: Path) -> str:
    return str(file_sha256(path).hexdigest())


def _files(root: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_PARTS]
        for n in filenames:
            p = Path(dirpath, n)
            rel = p.relative_to(root).as_posix()
            if rel != MANIFEST and not n.endswith(".pyc"):
                out[rel] = p
    return out


def write_manifest(root: Path) -> Path:
    """Record every file of a staged tree (before it is made read-only)."""
    data = {rel: _sha256(p) for rel, p in sorted(_files(root).items()) if not p.is_symlink()}
    path = root / MANIFEST
    path.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    return path


def verify_tree(root: Path, *, rebuild_hint: str) -> Verified:
    """Check a staged tree against its manifest; IntegrityError names the first difference."""
    t0 = time.monotonic()
    path = root / MANIFEST
    try:
        want: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IntegrityError(f"{path}: missing or unreadable manifest of the staged source",
                             hint=rebuild_hint) from exc
    have = _files(root)
    for rel in sorted(set(want) | {r for r, p in have.items() if not p.is_symlink()}):
        p = have.get(rel)
        if rel not in want:
            raise IntegrityError(f"{root / rel}: a file the staged source never had", hint=rebuild_hint)
        if p is None:
            raise IntegrityError(f"{root / rel}: missing from the staged source", hint=rebuild_hint)
        got = _sha256(p)
        if got != want[rel]:
            raise IntegrityError(f"{root / rel}: changed since it was staged", expected=want[rel][:16],
                                 actual=got[:16], hint=rebuild_hint)
    return Verified("source", len(want), time.monotonic() - t0, "every file against MANIFEST.json")


def _record_hash(path: Path) -> str:
    """The hash as pip writes it in RECORD (urlsafe base64, no padding)."""
    return "sha256=" + base64.urlsafe_b64encode(file_sha256(path).digest()).rstrip(b"=").decode()


def site_packages(env_dir: Path) -> list[Path]:
    return sorted(p for p in (env_dir / "lib").glob("python*/site-packages") if p.is_dir())


STAT_INDEX = ".pyrepro-verified.json"  # in the environment's root, outside site-packages
RACY = 2.0  # seconds: a file changed this close to the index's writing is hashed again (as git does)


def _stat_key(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def verify_env(env_dir: Path, *, rebuild_hint: str, use_index: bool = True) -> Verified:
    """Every Python file an installed distribution's RECORD lists must have its recorded hash,
    and every Python file in site-packages must be listed by some RECORD.

    A file whose size, mtime, ctime and inode equal those of the last verification that hashed
    it (``STAT_INDEX``, with its RECORD hash) is not hashed again: changing a file's content
    changes its ctime, which no ordinary tool can set back. Files changed within ``RACY`` seconds
    of that verification are hashed every time."""
    t0 = time.monotonic()
    checked = hashed = 0
    index_path = env_dir / STAT_INDEX
    old: dict[str, list] = {}
    if use_index:
        try:
            data = json.loads(index_path.read_text(encoding="utf-8"))
            old = data.get("files", {}) if isinstance(data, dict) else {}
        except (OSError, ValueError):
            old = {}
    new: dict[str, list] = {}
    started = time.time()
    for sp in site_packages(env_dir):
        sps = str(sp)
        listed: set[str] = set()
        # a file two distributions both ship (a top-level 'tests/__init__.py') is listed by both
        # RECORDs, with the hash of whichever was installed last: it must match one of them
        claims: dict[str, list[str]] = {}
        for record in sorted(sp.glob("*.dist-info/RECORD")):
            try:
                rows = list(csv.reader(record.read_text(encoding="utf-8").splitlines()))
            except (OSError, csv.Error, UnicodeDecodeError) as exc:
                raise IntegrityError(f"{record}: unreadable install record", hint=rebuild_hint) from exc
            for row in rows:
                if len(row) < 2:
                    continue
                rel, digest = row[0], row[1]
                target = os.path.normpath(os.path.join(sps, rel))
                listed.add(target)
                # scripts in bin/ are outside: their shebang is rewritten when the environment is moved
                if not rel.endswith(".py") or not digest or not target.startswith(sps + os.sep):
                    continue
                claims.setdefault(target, [])
                if digest not in claims[target]:
                    claims[target].append(digest)
        for target, digests in claims.items():
            try:
                st = os.stat(target)
            except OSError:
                raise IntegrityError(f"{target}: missing from the environment", hint=rebuild_hint) from None
            key = _stat_key(st)
            prev = old.get(target)
            if prev is not None and prev[:4] == key and prev[4] in digests and st.st_ctime_ns / 1e9 <= started - RACY:
                digest = prev[4]
            else:
                got = _record_hash(Path(target))
                if got not in digests:
                    raise IntegrityError(f"{target}: changed since it was installed", hint=rebuild_hint)
                digest = got
                hashed += 1
            new[target] = [*key, digest]
            checked += 1
        for dirpath, dirnames, filenames in os.walk(sps):
            dirnames[:] = [d for d in dirnames if d not in _SKIP_PARTS]
            for n in filenames:
                if n.endswith(".py") or n.endswith(".pth"):
                    p = os.path.join(dirpath, n)
                    if p not in listed and not n.startswith("_virtualenv") and n != "distutils-precedence.pth":
                        raise IntegrityError(f"{p}: a file no installed distribution lists", hint=rebuild_hint)
    if use_index and new != old:
        try:
            from pyrepro.fsutil import atomic_write_text

            atomic_write_text(index_path, json.dumps({"files": new}))
        except OSError:
            pass  # a read-only environment is verified in full each time
    return Verified("environment", checked, time.monotonic() - t0,
                    "every .py and .pth file against the installed distributions' RECORD hashes "
                    f"({hashed} hashed now, {checked - hashed} unchanged since a hashing verification by size, "
                    "mtime, ctime and inode; compiled libraries and data are not re-hashed)")
