"""Materialise an ``[[entry]]`` corpus (bench/corpus2.toml onwards) from fetched mirror snapshots.

Usage: python bench/materialise.py CORPUS.toml OUTDIR --mirror-root MIRROR_ROOT [--only a,b]
                                   [--max-mb 5] [--force] [--json]

For every entry (``id``, ``repository`` (or ``repo``), ``commit``, ``path``) the blobs of ``path`` at ``commit``
are written to OUTDIR/<id>/, as the corpus headers describe: a file path gives that one file at
the top of the folder; "." the repository root; a folder its contents at the top. The repository
must already be fetched (the ``fetch`` tool, github:OWNER/NAME), which leaves a git directory
under MIRROR_ROOT/OWNER+NAME/ (``repo`` or ``repo/.git``). Nothing is fetched here.

The tree is read with ``git ls-tree`` and each blob written with ``git cat-file`` (a ``git
archive`` of the whole path fails as soon as one blob is missing, which snapshots do: they lack
files of 4 MiB and more, and Git LFS content). Left out and reported: blobs missing from the
snapshot, blobs over --max-mb, and git submodules (paths relative to the repository root). The
report says, per entry, how the computed ``absent`` list compares with the entry's own, and the
year of the last commit touching ``path`` (the ``year`` the corpus files record). An existing
OUTDIR/<id>/ is left alone unless --force.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path, PurePosixPath


def git_dir(mirror_root: Path, repository: str) -> Path:
    owner, name = repository.rstrip("/").removesuffix(".git").split("/")[-2:]
    base = mirror_root / f"{owner}+{name}"
    for cand in (base / "repo" / ".git", base / "repo", base):
        if (cand / "HEAD").is_file() and (cand / "objects").is_dir():
            return cand
    for cand in sorted(base.glob("**/HEAD")):
        if (cand.parent / "objects").is_dir():
            return cand.parent
    raise FileNotFoundError(f"no fetched snapshot of {owner}/{name} under {base} (fetch github:{owner}/{name})")


def _git(gd: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", "--git-dir", str(gd), *args], input=data, capture_output=True,
                          check=True).stdout


def tree(gd: Path, commit: str, path: str) -> list[tuple[str, str, str, int | None, str]]:
    """(mode, type, sha, size, repo path) of every entry under ``path`` at ``commit``."""
    spec = [] if path in ("", ".") else ["--", path]
    out = _git(gd, "ls-tree", "-r", "-l", "-z", "--full-tree", commit, *spec)
    rows = []
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, name = rec.split(b"\t", 1)
        mode, typ, sha, size = meta.decode().split()
        rows.append((mode, typ, sha, int(size) if size.isdigit() else None, name.decode("utf-8", "surrogateescape")))
    return rows


def last_year(gd: Path, commit: str, path: str) -> int:
    spec = [] if path in ("", ".") else ["--", path]
    return int(_git(gd, "log", "-1", "--format=%cd", "--date=format:%Y", commit, *spec).decode().strip())


def materialise(entry: dict, out: Path, mirror_root: Path, max_bytes: int, force: bool) -> dict:
    gd = git_dir(mirror_root, entry.get("repository") or entry["repo"])
    commit, path = entry["commit"], entry.get("path", ".")
    dest = out / entry["id"]
    rows = tree(gd, commit, path)
    if not rows:
        raise FileNotFoundError(f"{path!r} is not in {entry.get('repository') or entry['repo']} at {commit[:12]}")
    single = len(rows) == 1 and rows[0][4] == path.strip("/")  # a file path
    prefix = "" if path in ("", ".") or single else path.strip("/") + "/"
    absent: list[str] = []
    wanted: list[tuple[str, str, str, Path]] = []
    for mode, typ, sha, size, name in rows:
        rel = PurePosixPath(name).name if single else name[len(prefix):]
        if typ == "commit":  # a submodule
            absent.append(name)
            continue
        if size is not None and size > max_bytes:
            absent.append(name)
            continue
        wanted.append((mode, sha, name, dest / rel))
    # which blobs the snapshot holds
    probe = _git(gd, "cat-file", "--batch-check", data="".join(f"{sha}\n" for _, sha, _, _ in wanted).encode())
    present = {line.split()[0] for line in probe.decode().splitlines() if not line.endswith(" missing")}
    written = 0
    if dest.exists() and not force:
        skipped = True
    else:
        skipped = False
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
    for mode, sha, name, target in wanted:
        if sha not in present:
            absent.append(name)
            continue
        if skipped:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        blob = _git(gd, "cat-file", "blob", sha)
        if mode == "120000":  # a symlink: keep it a link (its target is the blob)
            try:
                target.symlink_to(blob.decode("utf-8", "surrogateescape"))
            except OSError:
                target.write_bytes(blob)
        else:
            target.write_bytes(blob)
            if mode == "100755":
                target.chmod(0o755)
        written += 1
    absent.sort()
    declared = sorted(entry.get("absent", []))
    return {"id": entry["id"], "dir": str(dest), "files": written, "skipped_existing": skipped,
            "absent": absent, "absent_matches": absent == declared,
            "year": last_year(gd, commit, path), "year_matches": entry.get("year") in (None, last_year(gd, commit, path))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--mirror-root", type=Path, required=True,
                    help="the folder the fetch tool writes its snapshots to (owner+name/...)")
    ap.add_argument("--only", default="", help="comma-separated ids")
    ap.add_argument("--max-mb", type=float, default=5.0, help="leave out blobs larger than this (MB)")
    ap.add_argument("--force", action="store_true", help="rewrite folders that exist")
    ap.add_argument("--json", action="store_true", help="print the per-entry report as JSON")
    a = ap.parse_args()
    entries = tomllib.loads(a.corpus.read_text())["entry"]
    if a.only:
        keep = set(a.only.split(","))
        entries = [e for e in entries if e["id"] in keep]
    a.out.mkdir(parents=True, exist_ok=True)
    reports, bad = [], 0
    for e in entries:
        try:
            r = materialise(e, a.out, a.mirror_root, int(a.max_mb * 1_000_000), a.force)
        except (OSError, subprocess.CalledProcessError, ValueError) as exc:
            err = exc.stderr.decode(errors="replace").strip() if isinstance(exc, subprocess.CalledProcessError) else str(exc)
            r = {"id": e["id"], "error": err}
            bad += 1
        reports.append(r)
        if not a.json:
            if "error" in r:
                print(f"{r['id']:40} ERROR {r['error']}")
            else:
                note = "" if r["absent_matches"] else f"  absent differs from the corpus: {r['absent']}"
                if not r["year_matches"]:
                    note += f"  year is {r['year']}, corpus says {e.get('year')}"
                state = "kept (exists)" if r["skipped_existing"] else f"{r['files']} files"
                print(f"{r['id']:40} {state:>14}  {len(r['absent'])} absent{note}")
    if a.json:
        print(json.dumps(reports, indent=1))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
