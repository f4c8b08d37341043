"""Content verification of what a run executes: the staged source and the built environment.

When a tree is made (a staged source, an environment), pyrepro writes its **manifest**: every
file's sha256, size and executable bit, and every link's target, of every file in the tree
(compiled libraries, ``.pth``, ``.pyc`` and the ``RECORD`` files included). The manifest is kept
**outside the tree**, in the cache's ``manifests/`` folder, named after the tree (whose name
carries the lock's or the patch series' key, ``manifest_path``): code that runs with the tree
cannot edit the manifest beside the file it changed.

Before every run and every import check (``pyrepro.run``), the tree must equal its manifest: a
file added (a planted ``sitecustomize.py``, ``.pth`` or ``__pycache__/*.pyc``), changed (a byte
appended to a compiled library, a module and its ``RECORD`` row edited together), removed, or a
link retargeted is an ``IntegrityError`` naming the file and how to rebuild.

Hashing a torch environment (several GB) on every run would cost more than the run, so a second
index (``<manifest>.stat.json``, also outside the tree) keeps each file's size, mtime, ctime and
inode from the last verification that hashed it: such a file is not hashed again. Changing a
file's content changes its ctime, which no ordinary tool can set back; a file changed within
``RACY`` seconds of that verification is hashed every time (as git does).
"""

from __future__ import annotations

import json
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from pyrepro.errors import IntegrityError
from pyrepro.fsutil import atomic_write_text, file_sha256

MANIFESTS = "manifests"  # the cache's folder of manifests, beside envs/ and staged/
SCHEMA = 2
RACY = 2.0  # seconds


@dataclass(frozen=True)
class Verified:
    what: str  # "source" | "environment"
    files: int
    seconds: float
    scope: str  # what the check covers

    def to_json(self) -> dict[str, object]:
        return {"what": self.what, "files": self.files, "seconds": round(self.seconds, 3), "scope": self.scope}


def manifest_path(tree: Path) -> Path:
    """Where the manifest of ``tree`` (``<cache>/<kind>/<name>``) is kept:
    ``<cache>/manifests/<kind>-<name>.json``."""
    tree = Path(os.path.abspath(tree))
    return tree.parent.parent / MANIFESTS / f"{tree.parent.name}-{tree.name}.json"


def _stat_path(manifest: Path) -> Path:
    return manifest.with_name(manifest.stem + ".stat.json")


def _entries(root: Path) -> dict[str, os.stat_result]:
    """Every file and link under ``root`` (links not followed), by path relative to it."""
    out: dict[str, os.stat_result] = {}
    stack = [(str(root), "")]
    while stack:
        folder, prefix = stack.pop()
        with os.scandir(folder) as it:
            for e in it:
                rel = prefix + e.name
                if e.is_dir(follow_symlinks=False):
                    stack.append((e.path, rel + "/"))
                else:
                    out[rel] = e.stat(follow_symlinks=False)
    return out


def _stat_key(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _digest(path: Path) -> str:
    return str(file_sha256(path).hexdigest())


def write_manifest(tree: Path, *, at: Path | None = None) -> Path:
    """Record every file and link of ``tree`` (``at``: where, default ``manifest_path(tree)``;
    a tree built under a temporary name gives its final one's). The stat index is written with
    it, so the first verification does not hash everything again."""
    at = at or manifest_path(tree)
    files: dict[str, list] = {}
    links: dict[str, str] = {}
    index: dict[str, list] = {}
    for rel, st in sorted(_entries(tree).items()):
        p = tree / rel
        if stat.S_ISLNK(st.st_mode):
            links[rel] = os.readlink(p)
        elif stat.S_ISREG(st.st_mode):
            digest = _digest(p)
            files[rel] = [digest, st.st_size, bool(st.st_mode & 0o111)]
            index[rel] = [*_stat_key(st), digest]
    at.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(at, json.dumps({"schema": SCHEMA, "files": files, "links": links}, sort_keys=True) + "\n")
    atomic_write_text(_stat_path(at), json.dumps({"written": time.time(), "files": index}))
    return at


def has_manifest(tree: Path) -> bool:
    return manifest_path(tree).is_file()


def _verify(tree: Path, what: str, rebuild_hint: str, *, use_index: bool = True) -> Verified:
    t0 = time.monotonic()
    mpath = manifest_path(tree)
    try:
        data = json.loads(mpath.read_text(encoding="utf-8"))
        want_files: dict[str, list] = data["files"]
        want_links: dict[str, str] = data["links"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise IntegrityError(f"{tree}: no manifest of this {what} ({mpath} is missing or unreadable): it was made "
                             "by an older pyrepro, or the manifest was removed", hint=rebuild_hint) from exc
    spath = _stat_path(mpath)
    old: dict[str, list] = {}
    stamp = 0.0
    if use_index:
        try:
            idx = json.loads(spath.read_text(encoding="utf-8"))
            old, stamp = idx.get("files", {}), float(idx.get("written", 0))
        except (OSError, ValueError, AttributeError, TypeError):
            old, stamp = {}, 0.0
    started = time.time()
    have = _entries(tree)
    if extra := sorted(set(have) - set(want_files) - set(want_links)):
        raise IntegrityError(f"{tree / extra[0]}: a file that was not in the {what} when it was made"
                             + (f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""), hint=rebuild_hint)
    if gone := sorted((set(want_files) | set(want_links)) - set(have)):
        raise IntegrityError(f"{tree / gone[0]}: missing from the {what}", hint=rebuild_hint)
    new: dict[str, list] = {}
    hashed = 0
    for rel in sorted(want_links):
        st = have[rel]
        if not stat.S_ISLNK(st.st_mode) or os.readlink(tree / rel) != want_links[rel]:
            raise IntegrityError(f"{tree / rel}: a link changed since the {what} was made", hint=rebuild_hint)
    for rel, (digest, size, executable) in sorted(want_files.items()):
        st = have[rel]
        if not stat.S_ISREG(st.st_mode) or st.st_size != size or bool(st.st_mode & 0o111) != executable:
            raise IntegrityError(f"{tree / rel}: changed since the {what} was made", hint=rebuild_hint)
        key = _stat_key(st)
        prev = old.get(rel)
        if prev is not None and prev[:4] == key and prev[4] == digest and st.st_ctime_ns / 1e9 <= stamp - RACY:
            new[rel] = prev
            continue
        got = _digest(tree / rel)
        hashed += 1
        if got != digest:
            raise IntegrityError(f"{tree / rel}: changed since the {what} was made", expected=digest[:16],
                                 actual=got[:16], hint=rebuild_hint)
        new[rel] = [*key, got]
    if use_index and (hashed or new != old):
        try:
            atomic_write_text(spath, json.dumps({"written": started, "files": new}))
        except OSError:
            pass  # verified in full next time
    n = len(want_files) + len(want_links)
    return Verified(what, n, time.monotonic() - t0,
                    f"every file and link ({len(want_files)} files, compiled libraries, .pth, .pyc and RECORD "
                    f"included) against the manifest written when it was made, kept outside it ({hashed} hashed "
                    f"now, {len(want_files) - hashed} unchanged since a hashing verification by size, mtime, ctime "
                    "and inode)")


def verify_tree(root: Path, *, rebuild_hint: str, use_index: bool = True) -> Verified:
    """Check a staged source tree against its manifest; IntegrityError names the first difference."""
    return _verify(root, "source", rebuild_hint, use_index=use_index)


def verify_env(env_dir: Path, *, rebuild_hint: str, use_index: bool = True) -> Verified:
    """Check an environment against its manifest; IntegrityError names the first difference."""
    return _verify(env_dir, "environment", rebuild_hint, use_index=use_index)

