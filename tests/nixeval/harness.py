"""Offline evaluation of pyrepro's flake against the REAL dream2nix modules (issue 13).

No nixpkgs and no network: the flake is evaluated with

* the real dream2nix and pyproject.nix at the revisions in ``flake.lock`` (their NAR hashes are
  checked against the lock before anything runs),
* the real nixpkgs ``lib`` (a fetched nixpkgs.lib),
* a builtins-only stand-in package set (``tests/nixeval/standin/pkgs.nix``) whose output paths
  depend on their inputs, so lock cycles surface as infinite recursion,

through flake machinery (``nix eval --override-input``) on a wrapper flake
(``tests/nixeval/harness/flake.nix``) that consumes the real flake as an input. What this
proves: every attribute a build would instantiate evaluates (module options merge, every locked
package has a source, derivations are well-formed, no dependency cycle). What it cannot prove:
that anything builds or runs (the stand-in never builds).

The fetched sources are never committed. Their location comes from ``PYREPRO_NIX_SOURCES``, a
folder holding ``dream2nix/``, ``pyproject.nix/`` and ``nixpkgs.lib/``, else ``../shared/nix-sources``
beside the checkout (CI's read-only offline copy); they are only read, and their NAR hashes are
checked against ``flake.lock`` before use. Make such a folder with

    python -m tests.nixeval.harness sources DEST [--mirror DIR]

(``--mirror``: a folder of bare git mirrors named ``owner+name/repo``; else ``git clone`` from
GitHub). Then ``PYREPRO_NIX_SOURCES=DEST python -m tests.nixeval.harness run`` prints, per
system and model, whether it evaluates, and the counts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pyrepro import proc

SOURCES_VAR = "PYREPRO_NIX_SOURCES"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# flake.lock node -> folder under $PYREPRO_NIX_SOURCES, GitHub repository
LOCKED = {"dream2nix": ("dream2nix", "nix-community/dream2nix"),
          "pyproject-nix": ("pyproject.nix", "pyproject-nix/pyproject.nix")}
# nixpkgs itself cannot be fetched; its lib is taken from nixpkgs.lib at the commit nearest
# before the locked nixpkgs revision's date (the lib is all the stand-in uses of nixpkgs).
NIXPKGS_LIB = ("nixpkgs.lib", "nix-community/nixpkgs.lib")


def nix_env() -> dict[str, str]:
    env = dict(os.environ)
    env["NIX_CONFIG"] = "experimental-features = nix-command flakes\nflake-registry = \nwarn-dirty = false"
    return env


SOURCE_FOLDERS = [d for d, _ in LOCKED.values()] + [NIXPKGS_LIB[0]]


def default_sources() -> Path:
    """``../shared/nix-sources`` beside the checkout (the offline copy CI has), resolved."""
    return Path(os.path.realpath(ROOT.parent / "shared" / "nix-sources"))


def find_sources() -> tuple[Path | None, str]:
    """The fetched sources and where they come from, or ``(None, why not)``.

    ``$PYREPRO_NIX_SOURCES`` wins when set; else ``../shared/nix-sources`` beside the checkout
    when it exists. A folder that lacks one of ``dream2nix/``, ``pyproject.nix/``,
    ``nixpkgs.lib/`` is not used (the reason names it)."""
    val = os.environ.get(SOURCES_VAR, "")
    p, origin = (Path(os.path.realpath(val)), f"${SOURCES_VAR}") if val else (default_sources(), "default")
    if not val and not p.is_dir():
        return None, (f"${SOURCES_VAR} not set and no {p}: no fetched dream2nix, pyproject.nix and "
                      "nixpkgs.lib (python -m tests.nixeval.harness sources DEST)")
    missing = [n for n in SOURCE_FOLDERS if not (p / n).is_dir()]
    if missing:
        return None, f"{p} ({origin}) has no {', '.join(n + '/' for n in missing)}"
    return p, origin


def sources_dir() -> Path | None:
    """The fetched sources (see ``find_sources``), or None."""
    return find_sources()[0]


def _lock(root: Path) -> dict:
    return json.loads((root / "flake.lock").read_text())["nodes"]


def check_sources(root: Path, src: Path) -> list[str]:
    """Problems with the fetched sources: a NAR hash that differs from flake.lock's."""
    nodes, bad = _lock(root), []
    for node, (folder, _) in LOCKED.items():
        want = nodes[node]["locked"]["narHash"]
        got = nar_hash(src / folder)
        if got != want:
            bad.append(f"{src / folder}: NAR hash {got}, flake.lock has {want} "
                       f"(rev {nodes[node]['locked']['rev']})")
    return bad


def nar_hash(path: Path) -> str:
    return proc.run(["nix", "hash", "path", str(path)], env=nix_env()).stdout.strip()


def flattened_symlinks(tree: Path) -> dict[Path, str]:
    """Regular files that look like symbolic links written out as text, as ``git checkout`` with
    ``core.symlinks=false`` (or a dereferencing copy of such a checkout) leaves them: the whole
    content is a relative path (one line, no newline) to something that exists inside ``tree``.
    A guess; ``stage_sources`` adopts it only when the NAR hash then equals flake.lock's."""
    found = {}
    top = tree.resolve()
    for d, _, files in os.walk(tree):
        for n in files:
            f = Path(d) / n
            if f.is_symlink() or f.stat().st_size > 255:
                continue
            try:
                text = f.read_bytes().decode("utf-8")
            except UnicodeDecodeError:
                continue
            if not text or "\n" in text or "\0" in text or text.startswith("/"):
                continue
            target = (f.parent / text).resolve()
            if target != f.resolve() and target.is_relative_to(top) and target.exists():
                found[f] = text
    return found


def stage_sources(root: Path, src: Path, dest: Path) -> tuple[Path, list[str], list[str]]:
    """Copy the sources into ``dest`` (writable; ``src`` is only read) and check each locked
    folder's NAR hash against flake.lock: ``(dest, problems, notes)``.

    A folder whose copy does not hash as locked but whose flattened symbolic links
    (``flattened_symlinks``) restored make it hash exactly as locked is used restored (a note
    says so); any other difference is a problem, and nothing should be evaluated then."""
    nodes, problems, notes = _lock(root), [], []
    for folder in SOURCE_FOLDERS:
        _copy_writable(src / folder, dest / folder)
    for node, (folder, _) in LOCKED.items():
        want, tree = nodes[node]["locked"]["narHash"], dest / folder
        got = nar_hash(tree)
        if got == want:
            continue
        links = flattened_symlinks(tree)
        for f, text in links.items():
            f.unlink()
            f.symlink_to(text)
        fixed = nar_hash(tree) if links else got
        if fixed == want:
            notes.append(f"{src / folder}: {len(links)} symbolic links stored as text files "
                         f"({', '.join(sorted(str(f.relative_to(tree)) for f in links))}); restored, "
                         f"NAR hash then equals flake.lock's {want}")
        else:
            problems.append(f"{src / folder}: NAR hash {got}"
                            + (f" ({fixed} with {len(links)} text files restored as symbolic links)" if links else "")
                            + f", flake.lock has {want} (rev {nodes[node]['locked']['rev']})")
    return dest, problems, notes


class SourcesMismatch(RuntimeError):
    """The fetched sources are not the ones flake.lock pins."""


def get_sources(root: Path, dest: Path, mirror: Path | None) -> None:
    """Write dream2nix, pyproject.nix (flake.lock revisions) and nixpkgs.lib into ``dest``."""
    nodes = _lock(root)
    dest.mkdir(parents=True, exist_ok=True)
    nixpkgs_date = nodes["nixpkgs"]["locked"]["lastModified"]
    wanted = [(folder, repo, nodes[node]["locked"]["rev"]) for node, (folder, repo) in LOCKED.items()]
    wanted.append((*NIXPKGS_LIB, None))
    for folder, repo, rev in wanted:
        git_dir = mirror / repo.replace("/", "+") / "repo" if mirror else None
        if git_dir is None or not git_dir.is_dir():
            git_dir = dest / f".{folder}.git"
            if not git_dir.is_dir():
                proc.run(["git", "clone", "--bare", f"https://github.com/{repo}", str(git_dir)])
        if rev is None:
            rev = proc.run(["git", "--git-dir", str(git_dir), "log", "-1", "--format=%H",
                            f"--until=@{nixpkgs_date}", "HEAD"]).stdout.strip()
        out = dest / folder
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", rev],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
        print(f"{out}: {repo} {rev}")


@dataclass
class World:
    """A throw-away copy of the checkout plus the stand-in flakes, ready for ``nix eval``."""

    work: Path
    src: Path  # the staged, checked copy of the sources (never the folder they came from)
    project: Path = field(init=False)
    harness: Path = field(init=False)
    notes: list[str] = field(default_factory=list)  # what staging the sources restored

    def __post_init__(self) -> None:
        self.project = self.work / "project"
        self.harness = self.work / "harness"

    def overrides(self, *, project: bool = False) -> list[str]:
        """``--override-input`` arguments for the harness flake (or, ``project``, for the copy of
        pyrepro's own flake)."""
        pre = "" if project else "pyrepro/"
        pairs = {} if project else {"pyrepro": self.project}
        pairs |= {f"{pre}dream2nix": self.src / "dream2nix",
                  f"{pre}dream2nix/nixpkgs": self.work / "standin",
                  f"{pre}dream2nix/pyproject-nix": self.src / "pyproject.nix",
                  f"{pre}dream2nix/purescript-overlay": self.work / "empty"}
        return [a for k, v in pairs.items() for a in ("--override-input", k, f"path:{v}")]


def prepare(root: Path, src: Path, work: Path) -> World:
    """Copy the checkout's files (tracked and new, not ignored), the sources (checked against
    flake.lock: ``SourcesMismatch`` when they differ) and the stand-ins into ``work``."""
    staged, problems, notes = stage_sources(root, src, work / "sources")
    if problems:
        raise SourcesMismatch("\n".join(problems))
    world = World(work, staged)
    world.notes = notes
    files = proc.run(["git", "-C", str(root), "ls-files", "-co", "--exclude-standard", "-z"]).stdout
    world.project.mkdir(parents=True)
    for rel in filter(None, files.split("\0")):
        if rel.startswith("tests/") or not (root / rel).is_file():
            continue
        dest = world.project / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, dest)
    _copy_writable(HERE / "standin", work / "standin")
    # the sources are only read (CI's copy has no write bits): copied as plain, writable files
    _copy_writable(staged / "nixpkgs.lib" / "lib", work / "standin" / "lib")
    _copy_writable(HERE / "empty", work / "empty")
    _copy_writable(HERE / "harness", world.harness)
    return world


def _copy_writable(src: Path, dest: Path) -> None:
    """``cp -r`` keeping symbolic links and executable bits (both are part of a NAR hash), with
    write permission added, so a copy of a read-only tree can be changed and removed again."""
    shutil.copytree(src, dest, symlinks=True, copy_function=shutil.copy)
    for d, _, files in os.walk(dest):
        os.chmod(d, 0o755)
        for f in files:
            p = os.path.join(d, f)
            if not os.path.islink(p):
                os.chmod(p, 0o755 if os.stat(p).st_mode & 0o100 else 0o644)


def evaluate(world: World, attr: str, *, apply: str | None = None) -> tuple[bool, object]:
    """``nix eval --json`` one attribute of the harness flake: (True, value) or (False, error)."""
    cmd = ["nix", "eval", "--json", f"path:{world.harness}#{attr}", *world.overrides()]
    if apply:
        cmd += ["--apply", apply]
    done = proc.run(cmd, check=False, env=nix_env())
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if ln.startswith("error:") or ln.startswith("       ")]
        return False, "\n".join(lines[:12]) or done.stderr[-2000:]
    return True, json.loads(done.stdout)


@dataclass(frozen=True)
class Result:
    system: str
    model: str
    ok: bool
    detail: object  # the forced paths (ok) or the error text


def run(world: World, jobs: int = 2) -> tuple[dict, list[Result], dict]:
    """Evaluate every model on every system the flake offers it on, then the shared outputs."""
    ok, systems = evaluate(world, "systems")
    if not ok:
        raise RuntimeError(f"the flake's outputs do not evaluate:\n{systems}")
    assert isinstance(systems, dict)
    pairs = [(s, m) for s, names in sorted(systems["models"].items()) for m in names]

    def one(pair: tuple[str, str]) -> Result:
        s, m = pair
        ok, val = evaluate(world, f"models.{s}.{m}")
        return Result(s, m, ok, val)

    with ThreadPoolExecutor(jobs) as ex:
        results = list(ex.map(one, pairs))
    shared = {s: evaluate(world, f"shared.{s}") for s in sorted(systems["apps"])}
    return systems, results, shared


def summary(systems: dict, results: list[Result], shared: dict) -> str:
    lines = []
    for r in results:
        if r.ok:
            assert isinstance(r.detail, dict)
            lines.append(f"ok      {r.system:14} {r.model:18} {len(r.detail['locked']):4} locked packages, "
                         f"pyEnv, package, app, {len(r.detail['checks'])} checks")
        else:
            first = str(r.detail).splitlines()[0] if r.detail else "?"
            lines.append(f"FAILED  {r.system:14} {r.model:18} {first}")
    for s, (ok, val) in shared.items():
        lines.append(f"{'ok' if ok else 'FAILED':7} {s:14} {'shared':18} "
                     + ("apps.exfoliation, apps.pyrepro, devShells.default, pyrepro" if ok else str(val).splitlines()[0]))
    good = sum(r.ok for r in results)
    pkgs = sum(len(r.detail["locked"]) for r in results if r.ok and isinstance(r.detail, dict))
    lines.append(f"{good}/{len(results)} model-system pairs evaluate ({pkgs} locked package output paths forced); "
                 f"shared outputs: {sum(ok for ok, _ in shared.values())}/{len(shared)} systems")
    return "\n".join(lines)


def record(root: Path, src: Path, results: list[Result], shared: dict) -> dict:
    """What was evaluated, against what, with which outcome (committed as docs/nixeval.json; the
    lock hashes let the report say when a model's lock changed since)."""
    import datetime as dt

    from pyrepro.fsutil import file_sha256

    nodes = _lock(root)
    models: dict[str, dict] = {}
    for r in results:
        m = models.setdefault(r.model, {"lock_sha256": file_sha256(root / "models" / r.model / "pdm.lock").hexdigest(),
                                        "systems": {}})
        m["systems"][r.system] = ({"ok": True, "locked_packages": len(r.detail["locked"])}
                                  if r.ok and isinstance(r.detail, dict)
                                  else {"ok": False, "error": str(r.detail).splitlines()[0] if r.detail else "?"})
    head = proc.run(["git", "-C", str(root), "rev-parse", "HEAD"], check=False).stdout.strip()
    return {
        "schema": 1,
        "evaluated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "pyrepro_commit": head,
        "against": {node: nodes[node]["locked"]["rev"] for node in LOCKED} | {
            "nixpkgs": "stand-in package set tests/nixeval/standin/pkgs.nix with the real nixpkgs lib "
                       f"(nixpkgs.lib at or before {nodes['nixpkgs']['locked']['rev'][:12]}'s date)"},
        "proves": "every output instantiates: each locked package's output path, public.pyEnv, the Python "
                  "environment, the wrapped package, its app and checks (module options merge, sources "
                  "selected, no dependency cycle); not that anything builds or runs",
        "shared": {s: ok for s, (ok, _) in shared.items()},
        "models": models,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.nixeval.harness", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("sources", help="write the fetched sources at the flake.lock revisions")
    g.add_argument("dest", type=Path)
    g.add_argument("--mirror", type=Path)
    r = sub.add_parser("run", help=f"evaluate every model (needs ${SOURCES_VAR})")
    r.add_argument("--work", type=Path, help="work folder (default: a fresh temporary folder)")
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--json", action="store_true")
    r.add_argument("--record", type=Path, help="write the evaluation record here (docs/nixeval.json, read "
                   "by `pyrepro report` for docs/STATUS.md)")
    a = ap.parse_args(argv)
    if a.cmd == "sources":
        get_sources(ROOT, a.dest, a.mirror)
        return 0
    src, why = find_sources()
    if src is None:
        print(f"{why}; set {SOURCES_VAR} to a folder with dream2nix/, pyproject.nix/ and nixpkgs.lib/",
              file=sys.stderr)
        return 2
    import tempfile
    work = a.work or Path(tempfile.mkdtemp(prefix="pyrepro-nixeval-"))
    if work.exists() and any(work.iterdir()):
        shutil.rmtree(work)
    try:
        world = prepare(ROOT, src, work)
    except SourcesMismatch as exc:
        print(f"the sources are not the ones flake.lock pins:\n{exc}", file=sys.stderr)
        return 2
    for note in world.notes:
        print(note, file=sys.stderr)
    systems, results, shared = run(world, a.jobs)
    if a.record:
        from pyrepro.fsutil import atomic_write_text
        atomic_write_text(a.record, json.dumps(record(ROOT, src, results, shared), indent=1, sort_keys=True) + "\n")
    if a.json:
        print(json.dumps({"results": [vars(r) for r in results],
                          "shared": {s: {"ok": ok, "detail": v} for s, (ok, v) in shared.items()}}, indent=1))
    else:
        print(summary(systems, results, shared))
    return 0 if all(r.ok for r in results) and all(ok for ok, _ in shared.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
