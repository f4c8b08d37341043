"""Reviewed patch series: parse, apply to a pristine copy (never in place), check, create.

A series is ``patches/<name>/NNNN-<slug>.patch``: unified diffs applied with ``patch -p1``
from the root of the pinned contribution folder, each with an RFC 822-style header
(docs/conventions.md). ``apply_series`` copies the pristine folder to a temporary folder next
to the destination, applies every patch with ``patch -F0`` and refuses any hunk that needed
an offset or fuzz, then renames the result into place: on failure nothing is left behind.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pyrepro import proc
from pyrepro.errors import InputError, PatchError
from pyrepro.fsutil import contained_links
from pyrepro.proc import Runner

CATEGORIES = ("cli", "test-mode", "paths", "api-drift", "nix", "runtime-fetch")
HEADER_FIELDS = ("Subject", "Category", "Why", "Effect")
NAME_RE = re.compile(r"^(\d{4})-([a-z0-9][a-z0-9-]*)\.patch$")
UNIFORM_FLAGS = ("--benchmark", "--test", "--benchmarks-dir", "--data-dir", "--output-dir")
RUNTIME_FETCH = (("os.system(\"zip", "shell zip"), ("os.system('zip", "shell zip"), ("git clone", "git clone"),
                 ("wget ", "wget"), ("pip install", "pip install"))


@dataclass(frozen=True)
class Hunk:
    file: str
    number: int  # 1-based within its file
    line: int  # line of the @@ header in the patch file


@dataclass(frozen=True)
class Patch:
    path: Path
    number: int
    slug: str
    subject: str
    category: str
    why: str
    effect: str
    sha256: str
    files: tuple[str, ...]
    hunks: tuple[Hunk, ...]

    def to_json(self) -> dict[str, object]:
        return {"file": self.path.name, "number": self.number, "slug": self.slug, "subject": self.subject,
                "category": self.category, "why": self.why, "effect": self.effect, "sha256": self.sha256,
                "files": list(self.files), "hunks": len(self.hunks)}


def parse_patch(path: Path) -> Patch:
    m = NAME_RE.match(path.name)
    if not m:
        raise InputError("patch file name must be NNNN-<slug>.patch (lower-case slug)", path=path,
                         hint="rename it, e.g. 0003-test-mode.patch")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8: {exc}", path=path) from exc
    lines = text.splitlines()
    fields: dict[str, str] = {}
    current: str | None = None
    body_start = None
    for i, line in enumerate(lines, 1):
        if line.startswith("--- "):
            body_start = i
            break
        if not line.strip():
            current = None
            continue
        if line[0] in " \t" and current is not None:
            fields[current] += " " + line.strip()
            continue
        key, sep, value = line.partition(":")
        if not sep or key not in HEADER_FIELDS:
            raise InputError(f"unexpected header line {line[:60]!r}", path=path, line=i,
                             hint=f"header fields are {', '.join(HEADER_FIELDS)}; continuation lines are indented")
        if key in fields:
            raise InputError(f"duplicate header field {key}", path=path, line=i)
        fields[key] = value.strip()
        current = key
    if body_start is None:
        raise InputError("no diff found (no '--- ' line)", path=path, hint="append the output of 'diff -u a/x b/x'")
    for key in HEADER_FIELDS:
        if not fields.get(key):
            raise InputError(f"missing header field {key}", path=path, line=1,
                             hint="every patch starts with Subject:, Category:, Why: and Effect: lines")
    if fields["Category"] not in CATEGORIES:
        raise InputError(f"unknown category {fields['Category']!r}", path=path,
                         line=_line_of(lines, "Category:"), hint=f"use one of {', '.join(CATEGORIES)}")
    if not (fields["Effect"].startswith("none:") or fields["Effect"].startswith("changes:")):
        raise InputError("Effect must start with 'none:' or 'changes:'", path=path, line=_line_of(lines, "Effect:"))
    files: list[str] = []
    hunks: list[Hunk] = []
    current_file = None
    n = 0
    for i in range(body_start - 1, len(lines)):
        line = lines[i].rstrip("\r")
        if line.startswith("+++ "):
            target = line[4:].split("\t")[0].strip()
            current_file = target[2:] if target.startswith("b/") else target
            files.append(current_file)
            n = 0
        elif line.startswith("@@ ") and current_file is not None:
            n += 1
            hunks.append(Hunk(current_file, n, i + 1))
    if not hunks:
        raise InputError("the diff has no hunks", path=path)
    return Patch(path=path, number=int(m.group(1)), slug=m.group(2), subject=fields["Subject"],
                 category=fields["Category"], why=fields["Why"], effect=fields["Effect"],
                 sha256=hashlib.sha256(raw).hexdigest(), files=tuple(files), hunks=tuple(hunks))


def _line_of(lines: list[str], prefix: str) -> int | None:
    return next((i for i, line in enumerate(lines, 1) if line.startswith(prefix)), None)


def load_series(patch_dir: Path) -> tuple[Patch, ...]:
    """Every ``*.patch`` of a folder, in order; an absent folder is an empty series."""
    if not patch_dir.is_dir():
        return ()
    patches = [parse_patch(p) for p in sorted(patch_dir.iterdir()) if p.suffix == ".patch"]
    numbers = [p.number for p in patches]
    if numbers != list(range(1, len(numbers) + 1)):
        raise InputError(f"patch numbers must run 1, 2, 3 ... without gaps, found {numbers}", path=patch_dir,
                         hint="renumber the files")
    return tuple(patches)


REVIEWED = "REVIEWED"  # `sha256  file` per reviewed patch (the sha256sum format)


def reviewed_pins(patch_dir: Path) -> dict[str, str]:
    """file name -> sha256 of the reviewed patches of a series (``patches/<name>/REVIEWED``)."""
    path = patch_dir / REVIEWED
    if not path.is_file():
        return {}
    pins: dict[str, str] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2 or not re.fullmatch(r"[0-9a-f]{64}", parts[0]):
            raise InputError("expected '<sha256>  <patch file>'", path=path, line=n,
                             hint="regenerate it with: pyrepro patch accept NAME")
        pins[parts[1]] = parts[0]
    return pins


def check_reviewed(patch_dir: Path, series: Sequence[Patch]) -> None:
    """Every patch of the series is the one a reviewer accepted (its hash in REVIEWED), and every
    accepted patch is there. An edited ``+`` line is an unreviewed change: IntegrityError."""
    from pyrepro.errors import IntegrityError

    pins = reviewed_pins(patch_dir)
    name = patch_dir.name
    hint = f"review the change, then record it with: pyrepro patch accept {name}"
    for p in series:
        want = pins.get(p.path.name)
        if want is None:
            raise IntegrityError(f"{p.path}: not a reviewed patch ({patch_dir / REVIEWED} does not list it)", hint=hint)
        if want != p.sha256:
            raise IntegrityError(f"{p.path}: changed since it was reviewed", expected=want[:16], actual=p.sha256[:16],
                                 hint=hint)
    present = {p.path.name for p in series}
    for f in sorted(set(pins) - present):
        raise IntegrityError(f"{patch_dir / f}: a reviewed patch is missing from the series", hint=hint)


def accept_series(patch_dir: Path) -> tuple[list[str], Path]:
    """Record the current series as reviewed; returns (what changed, the REVIEWED file)."""
    series = load_series(patch_dir)
    old = reviewed_pins(patch_dir)
    new = {p.path.name: p.sha256 for p in series}
    changes = [f"{'new' if f not in old else 'changed'} {f}" for f in sorted(new) if old.get(f) != new[f]]
    changes += [f"removed {f}" for f in sorted(set(old) - set(new))]
    path = patch_dir / REVIEWED
    body = "# sha256 of each reviewed patch (pyrepro patch accept); build refuses anything else\n" + \
        "".join(f"{h}  {f}\n" for f, h in sorted(new.items()))
    fd, tmp = tempfile.mkstemp(dir=patch_dir, prefix=".reviewed.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(body)
    os.replace(tmp, path)
    return changes, path


def series_digest(series: Sequence[Patch]) -> str:
    h = hashlib.sha256()
    for p in series:
        h.update(f"{p.path.name}\0{p.sha256}\n".encode())
    return h.hexdigest()


_HUNK_OUT = re.compile(r"Hunk #(\d+) (succeeded|FAILED) at (\d+)(?: \(offset (-?\d+) lines?\))?(?: with fuzz (\d+))?")
_FILE_OUT = re.compile(r"^patching file (.+)$", re.M)


def _check_output(patch: Patch, out: str) -> None:
    """Refuse offsets and fuzz that ``patch`` reports as success."""
    current = patch.files[0] if patch.files else "?"
    for line in out.splitlines():
        fm = _FILE_OUT.match(line)
        if fm:
            current = fm.group(1).strip().strip("'")
            continue
        hm = _HUNK_OUT.search(line)
        if hm and (hm.group(2) == "FAILED" or hm.group(4) or hm.group(5)):
            what = ("does not apply" if hm.group(2) == "FAILED"
                    else f"needs an offset of {hm.group(4)} lines" if hm.group(4) else f"needs fuzz {hm.group(5)}")
            raise PatchError(f"{patch.path.name}: {current}: hunk #{hm.group(1)} {what}",
                             hint="the source drifted from the patch: re-create it with 'pyrepro patch new' "
                                  "against the pinned source")


def apply_series(series: Sequence[Patch], pristine: Path, dest: Path, *, runner: Runner = proc.run) -> Path:
    """Copy ``pristine`` to ``dest`` with ``series`` applied; atomic, no fuzz, no offset. A symbolic
    link that leads out of the tree (or loops) is not copied (``fsutil.contained_links``): a patch
    never writes through one, and the tree holds none; ``fsutil.outward_links(pristine)`` lists them."""
    dest = Path(dest)
    if dest.exists():
        raise PatchError(f"destination already exists: {dest}", hint="remove it or choose another folder")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    work = tmp / "src"
    try:
        shutil.copytree(pristine, work, symlinks=True)
        contained_links(work)
        for dirpath, _dirs, files in os.walk(work):
            os.chmod(dirpath, 0o755)
            for f in files:
                fp = os.path.join(dirpath, f)
                if not os.path.islink(fp):
                    os.chmod(fp, os.lstat(fp).st_mode | 0o200)
        for p in series:
            done = runner(["patch", "-p1", "--batch", "--forward", "-F0", "--no-backup-if-mismatch",
                           "-r", "-", "-i", str(p.path)], cwd=work, check=False)
            out = done.stdout + done.stderr
            _check_output(p, out)
            if done.returncode != 0:
                raise PatchError(f"{p.path.name} does not apply (exit {done.returncode}):\n{out.strip()[-800:]}",
                                 hint="the source drifted from the patch: re-create it against the pinned source")
        contained_links(work)  # nor one a patch made
        os.rename(work, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


# ---------------------------------------------------------------- static checks of a patched tree

@dataclass(frozen=True)
class StaticCheck:
    entry: str
    uniform: bool
    missing_flags: tuple[str, ...]
    leftovers: tuple[str, ...]  # "file:line: what"


def static_check(tree: Path, entry_script: str) -> StaticCheck:
    """Does the patched entry define the uniform flags? Which runtime fetches remain in it?"""
    path = tree / entry_script
    try:
        mod = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError) as exc:
        raise PatchError(f"patched entry {entry_script} cannot be parsed: {exc}") from exc
    uses_runtime = False
    flags: set[str] = set()
    for node in ast.walk(mod):
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            if name in ("parse_uniform_args", "add_uniform_args", "parse_known_uniform_args"):
                uses_runtime = True
            if name == "add_argument":
                for a in node.args:
                    if isinstance(a, ast.Constant) and isinstance(a.value, str):
                        flags.add(a.value)
    missing = () if uses_runtime else tuple(f for f in UNIFORM_FLAGS if f not in flags)
    leftovers = []
    # Only the entry is checked: other scripts in a contribution folder are never run.
    for py in (path,):
        try:
            text = py.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for i, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            for needle, what in RUNTIME_FETCH:
                if needle in code:
                    leftovers.append(f"{py.relative_to(tree)}:{i}: {what}")
    return StaticCheck(entry_script, not missing, missing, tuple(leftovers))


def entry_script(entry: Sequence[str]) -> str:
    """The script of an entry command (``["ipython", "run.py"]`` -> ``run.py``)."""
    for part in entry[1:]:
        if part.endswith(".py"):
            return part
    raise InputError(f"entry command {list(entry)} names no .py script", key="entry.command")


def diff_trees(old: Path, new: Path, *, runner: Runner = proc.run) -> str:
    """``diff -ruN`` of two trees as a ``a/``, ``b/`` patch body ('' when identical)."""
    tmp = Path(tempfile.mkdtemp(prefix="pyrepro-diff."))
    try:
        shutil.copytree(old, tmp / "a", symlinks=True)
        shutil.copytree(new, tmp / "b", symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.orig", "*.rej"))
        for side in ("a", "b"):  # diff follows links: one out of the tree would put a file from elsewhere in the patch
            contained_links(tmp / side)
        res = runner(["diff", "-ruN", "a", "b"], cwd=tmp, check=False)
        if res.returncode not in (0, 1):
            raise PatchError(f"diff failed: {res.stderr.strip()}")
        return res.stdout
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def new_patch(series_dir: Path, pristine_patched: Path, workdir: Path, *, slug: str, category: str,
              subject: str, why: str, effect: str, runner: Runner = proc.run) -> Path:
    """Write the next patch of a series: the diff from pristine + series to ``workdir``."""
    if category not in CATEGORIES:
        raise InputError(f"unknown category {category!r}", key="--category", hint=f"use one of {', '.join(CATEGORIES)}")
    if not re.match(r"^[a-z0-9][a-z0-9-]*$", slug):
        raise InputError(f"bad slug {slug!r}", key="--slug", hint="lower-case letters, digits and dashes")
    if not (effect.startswith("none:") or effect.startswith("changes:")):
        raise InputError("--effect must start with 'none:' or 'changes:'", key="--effect")
    body = diff_trees(pristine_patched, workdir, runner=runner)
    if not body.strip():
        raise InputError(f"{workdir} does not differ from the patched source; nothing to record", path=workdir)
    existing = load_series(series_dir)
    number = len(existing) + 1
    header = f"Subject: {subject}\nCategory: {category}\nWhy: {why}\nEffect: {effect}\n"
    body = "\n".join(line for line in body.splitlines() if not line.startswith("diff -ruN ")) + "\n"
    series_dir.mkdir(parents=True, exist_ok=True)
    out = series_dir / f"{number:04d}-{slug}.patch"
    fd, tmp = tempfile.mkstemp(dir=series_dir, prefix=".new.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(header + body)
    try:
        os.replace(tmp, out)
        parse_patch(out)  # the file we wrote must read back as a valid patch
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        out.unlink(missing_ok=True)
        raise
    return out


# ---------------------------------------------------------------- the checker over the registry

@dataclass(frozen=True)
class SeriesCheck:
    model: str
    patches: tuple[Patch, ...]
    static: StaticCheck

    @property
    def ok(self) -> bool:
        return self.static.uniform

    def to_json(self) -> dict[str, object]:
        return {"model": self.model, "ok": self.ok, "patches": [p.to_json() for p in self.patches],
                "entry": self.static.entry, "uniform_flags": self.static.uniform,
                "missing_flags": list(self.static.missing_flags), "leftovers": list(self.static.leftovers)}


def check_model(spec: object, patch_dir: Path, pristine: Path, *, runner: Runner = proc.run) -> SeriesCheck:
    """Check that every patch is the reviewed one, apply ``spec``'s series to a temporary copy of
    ``pristine`` and check it statically."""
    series = load_series(patch_dir)
    check_reviewed(patch_dir, series)
    tmp = Path(tempfile.mkdtemp(prefix="pyrepro-patch-check."))
    try:
        tree = apply_series(series, pristine, tmp / "tree", runner=runner)
        static = static_check(tree, entry_script(spec.entry))  # type: ignore[attr-defined]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return SeriesCheck(spec.name, series, static)  # type: ignore[attr-defined]
