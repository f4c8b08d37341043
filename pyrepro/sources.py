"""Pinned sources: git tree ids and NAR hashes computed in Python, and verified pristine copies.

- ``git_tree_id(dir)`` hashes a folder exactly like ``git add -A && git write-tree`` would in an
  empty index: blobs ``blob <size>\\0<data>``, trees sorted the git way (a directory sorts as
  ``name/``), modes 100644 / 100755 (owner-executable) / 120000 (symlink, the target is the blob)
  / 40000. Empty directories and ``.git`` entries are left out, as git does.
- ``nar_hash(dir)`` is the sha256 of the NAR serialisation of ``dir`` (what ``nix hash path`` and
  ``nix-hash --type sha256`` print); ``NarHash`` gives SRI, nix-base32 and hex forms.
- ``obtain_source(pin, mirror=..., cache=...)`` returns a verified, read-only pristine copy of a
  pinned folder from the content-addressed cache (``<cache>/sources/<tree>``), a mirror folder
  (``<mirror>/<repo-name>/<subdir>``) or, online, the upstream host's tarball.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import stat
import tarfile
import tempfile
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from pyrepro.errors import InputError, IntegrityError, NetworkError, NotFoundError

NIX_BASE32 = "0123456789abcdfghijklmnpqrsvwxyz"
_CHUNK = 1 << 20


class PinLike(Protocol):
    @property
    def repository(self) -> str: ...
    @property
    def commit(self) -> str: ...
    @property
    def subdir(self) -> str: ...
    @property
    def tree(self) -> str: ...


# --------------------------------------------------------------------------- git tree ids

def _blob_id(data: bytes) -> bytes:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).digest()


def _file_blob_id(path: Path, size: int) -> bytes:
    h = hashlib.sha1(b"blob %d\0" % size)
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.digest()


def _tree_id(path: Path) -> bytes | None:
    """Binary tree id of ``path``, or None when it holds no file (git omits empty trees)."""
    entries: list[tuple[bytes, bytes, bytes]] = []  # (sort key, mode, sha)
    with os.scandir(path) as it:
        for e in it:
            if e.name == ".git":
                continue
            name = os.fsencode(e.name)
            st = e.stat(follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                entries.append((name, b"120000", _blob_id(os.fsencode(os.readlink(e.path)))))
            elif stat.S_ISDIR(st.st_mode):
                sub = _tree_id(Path(e.path))
                if sub is not None:
                    entries.append((name + b"/", b"40000", sub))
            elif stat.S_ISREG(st.st_mode):
                mode = b"100755" if st.st_mode & stat.S_IXUSR else b"100644"
                entries.append((name, mode, _file_blob_id(Path(e.path), st.st_size)))
    if not entries:
        return None
    entries.sort(key=lambda t: t[0])
    body = b"".join(mode + b" " + key.rstrip(b"/") + b"\0" + sha for key, mode, sha in entries)
    return hashlib.sha1(b"tree %d\0" % len(body) + body).digest()


EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def git_tree_id(path: Path) -> str:
    """The git tree id (40 hex) of the folder ``path``, computed without git."""
    path = Path(path)
    if not path.is_dir():
        raise NotFoundError(f"not a folder: {path}")
    tid = _tree_id(path)
    return tid.hex() if tid is not None else EMPTY_TREE


# --------------------------------------------------------------------------- NAR hashes

def nix_base32(digest: bytes) -> str:
    """Nix's base32 (alphabet without e,o,u,t; least significant bits first)."""
    n = len(digest)
    out_len = (n * 8 - 1) // 5 + 1
    chars = []
    for k in range(out_len - 1, -1, -1):
        b = k * 5
        i, j = divmod(b, 8)
        c = digest[i] >> j
        if i + 1 < n:
            c |= digest[i + 1] << (8 - j)
        chars.append(NIX_BASE32[c & 0x1F])
    return "".join(chars)


def nix_base32_decode(text: str) -> bytes:
    n = len(text) * 5 // 8
    out = bytearray(n)
    for k, ch in enumerate(reversed(text)):
        v = NIX_BASE32.index(ch)
        b = k * 5
        i, j = divmod(b, 8)
        out[i] |= (v << j) & 0xFF
        if i + 1 < n:
            out[i + 1] |= v >> (8 - j)
        elif v >> (8 - j):
            raise ValueError("invalid nix base32 string")
    return bytes(out)


@dataclass(frozen=True)
class NarHash:
    digest: bytes

    @property
    def sri(self) -> str:
        return "sha256-" + base64.b64encode(self.digest).decode()

    @property
    def base32(self) -> str:
        return nix_base32(self.digest)

    @property
    def hex(self) -> str:
        return self.digest.hex()

    def __str__(self) -> str:
        return self.sri


def parse_sri(value: str) -> bytes:
    """The digest of ``sha256-<base64>``, ``sha256:<nix32|hex>`` or a bare nix32/hex string."""
    v = value.strip()
    try:
        if v.startswith("sha256-"):
            d = base64.b64decode(v[7:], validate=True)
        else:
            v = v.removeprefix("sha256:")
            d = bytes.fromhex(v) if len(v) == 64 else nix_base32_decode(v)
    except ValueError as exc:
        raise ValueError(f"not a sha256 hash: {value!r}") from exc
    if len(d) != 32:
        raise ValueError(f"not a sha256 hash: {value!r}")
    return d


def _nar_str(b: bytes) -> bytes:
    return len(b).to_bytes(8, "little") + b + b"\0" * (-len(b) % 8)


def _nar_chunks(path: Path) -> Iterator[bytes]:
    st = os.lstat(path)
    yield _nar_str(b"(")
    if stat.S_ISLNK(st.st_mode):
        yield _nar_str(b"type") + _nar_str(b"symlink") + _nar_str(b"target")
        yield _nar_str(os.fsencode(os.readlink(path)))
    elif stat.S_ISDIR(st.st_mode):
        yield _nar_str(b"type") + _nar_str(b"directory")
        for name in sorted(os.fsencode(n) for n in os.listdir(path)):
            yield _nar_str(b"entry") + _nar_str(b"(") + _nar_str(b"name") + _nar_str(name) + _nar_str(b"node")
            yield from _nar_chunks(path / os.fsdecode(name))
            yield _nar_str(b")")
    elif stat.S_ISREG(st.st_mode):
        yield _nar_str(b"type") + _nar_str(b"regular")
        if st.st_mode & stat.S_IXUSR:
            yield _nar_str(b"executable") + _nar_str(b"")
        yield _nar_str(b"contents") + st.st_size.to_bytes(8, "little")
        with open(path, "rb") as f:
            while chunk := f.read(_CHUNK):
                yield chunk
        yield b"\0" * (-st.st_size % 8)
    else:
        raise InputError("cannot serialise a special file (device, fifo or socket) into a NAR", path=path)
    yield _nar_str(b")")


def nar_bytes(path: Path) -> bytes:
    """The NAR serialisation of ``path`` (for tests and small trees)."""
    return _nar_str(b"nix-archive-1") + b"".join(_nar_chunks(Path(path)))


def nar_hash(path: Path) -> NarHash:
    """sha256 of the NAR of ``path``, as ``nix hash path`` computes it."""
    path = Path(path)
    if not os.path.lexists(path):
        raise NotFoundError(f"path not found: {path}")
    h = hashlib.sha256(_nar_str(b"nix-archive-1"))
    for chunk in _nar_chunks(path):
        h.update(chunk)
    return NarHash(h.digest())


# --------------------------------------------------------------------------- obtaining sources

Downloader = Callable[[str, Path], None]


def _urllib_download(url: str, dest: Path) -> None:  # pragma: no cover - needs the network
    try:
        with urllib.request.urlopen(url, timeout=60) as resp, open(dest, "wb") as out:
            shutil.copyfileobj(resp, out, _CHUNK)
    except OSError as exc:
        host = url.split("/")[2] if "//" in url else url
        raise NetworkError(f"cannot download {url} from {host}: {exc}",
                           hint="work offline with --mirror DIR (e.g. ../shared/upstream)") from exc


@dataclass(frozen=True)
class ObtainedSource:
    path: Path  # read-only pristine folder in the cache
    tree: str
    origin: Literal["cache", "mirror", "download"]


def repo_name(repository: str) -> str:
    """``https://github.com/usnistgov/jarvis_leaderboard(.git)`` -> ``jarvis_leaderboard``."""
    return repository.rstrip("/").removesuffix(".git").rsplit("/", 1)[-1]


def tarball_url(repository: str, commit: str) -> str:
    """The upstream host's tarball for a commit (GitHub: codeload.github.com)."""
    r = repository.rstrip("/").removesuffix(".git")
    prefix = "https://github.com/"
    if not r.startswith(prefix):
        raise InputError(f"cannot download from {repository!r}: only github.com repositories are supported",
                         hint="use --mirror DIR with a local copy of the repository")
    owner_repo = r[len(prefix):]
    return f"https://codeload.github.com/{owner_repo}/tar.gz/{commit}"


def make_read_only(root: Path) -> None:
    for dirpath, _dirnames, filenames in os.walk(root):
        for n in filenames:
            p = os.path.join(dirpath, n)
            if not os.path.islink(p):
                os.chmod(p, os.lstat(p).st_mode & 0o555)
        os.chmod(dirpath, os.lstat(dirpath).st_mode & 0o555)


def make_writable(root: Path) -> None:
    """Undo ``make_read_only`` (to delete a cached copy)."""
    for dirpath, _dirnames, filenames in os.walk(root):
        os.chmod(dirpath, os.lstat(dirpath).st_mode | 0o700)
        for n in filenames:
            p = os.path.join(dirpath, n)
            if not os.path.islink(p):
                os.chmod(p, os.lstat(p).st_mode | 0o200)


def _rmtree(p: Path) -> None:
    if p.exists():
        make_writable(p)
        shutil.rmtree(p)


def check_tree(path: Path, expected: str, what: str) -> str:
    actual = git_tree_id(path)
    if actual != expected:
        raise IntegrityError(f"{what}: git tree id of {path} does not match its pin", expected=expected,
                             actual=actual, hint="the folder was changed or is another version; "
                             "restore it, or update [source] tree/commit in model.toml after review")
    return actual


def _install(src: Path, cache: Path, tree: str) -> Path:
    """Copy ``src`` into ``<cache>/sources/<tree>`` atomically, read-only."""
    dest_root = cache / "sources"
    dest_root.mkdir(parents=True, exist_ok=True)
    dest = dest_root / tree
    tmp = Path(tempfile.mkdtemp(prefix=f".{tree}.", dir=dest_root))
    try:
        staged = tmp / "t"
        shutil.copytree(src, staged, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        check_tree(staged, tree, "copy")
        make_read_only(staged)
        try:
            os.rename(staged, dest)
        except OSError:
            if not dest.is_dir():  # someone else won the race: fine; otherwise re-raise
                raise
    finally:
        _rmtree(tmp)
    return dest


def install_tree(folder: Path, cache: Path, tree: str) -> Path:
    """A verified read-only copy of ``folder`` (whose git tree id is ``tree``) in the source cache,
    where ``obtain_source`` finds it by tree id; an existing verified copy is kept."""
    cached = cache / "sources" / tree
    if cached.is_dir():
        try:
            check_tree(cached, tree, "cached copy")
            return cached
        except IntegrityError:
            _rmtree(cached)
    return _install(folder, cache, tree)


def obtain_source(pin: PinLike, *, mirror: Path | None = None, cache: Path,
                  downloader: Downloader | None = None, online: bool = True) -> ObtainedSource:
    """A verified read-only pristine copy of ``pin``'s folder.

    Order: the cache (re-verified), then ``mirror`` if given (a missing mirror is an error, not a
    fallback), then a download of the upstream tarball when ``online``.
    """
    cached = cache / "sources" / pin.tree
    if cached.is_dir():
        try:
            check_tree(cached, pin.tree, "cached copy")
            return ObtainedSource(cached, pin.tree, "cache")
        except IntegrityError:
            _rmtree(cached)  # a damaged cache entry is dropped and fetched again
    if mirror is not None:
        mirror = Path(mirror)
        if not mirror.is_dir():
            raise NotFoundError(f"mirror folder not found: {mirror}",
                                hint="pass --mirror pointing at a folder holding <repo-name>/<subdir>, "
                                     "e.g. ../shared/upstream")
        folder = mirror / repo_name(pin.repository) / pin.subdir
        if not folder.is_dir():
            raise NotFoundError(f"the mirror {mirror} has no {repo_name(pin.repository)}/{pin.subdir}",
                                hint="the mirror must hold <repo-name>/<subdir> of the pinned commit")
        check_tree(folder, pin.tree, f"mirror copy of {pin.subdir or repo_name(pin.repository)}")
        return ObtainedSource(_install(folder, cache, pin.tree), pin.tree, "mirror")
    if not online:
        raise NotFoundError(f"source {pin.repository}@{pin.commit[:12]} is not cached and no mirror was given",
                            hint="pass --mirror DIR, or allow downloads")
    return ObtainedSource(_download(pin, cache, downloader or _urllib_download), pin.tree, "download")


def _download_tree(url: str, work: Path, downloader: Downloader) -> Path:
    """Download the tarball ``url`` into ``work`` and unpack it; its one top folder."""
    archive = work / "src.tar.gz"
    downloader(url, archive)
    out = work / "x"
    out.mkdir()
    try:
        with tarfile.open(archive) as tf:
            tf.extractall(out, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise IntegrityError(f"downloaded archive {url} is not a readable tarball: {exc}") from exc
    tops = [p for p in out.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise IntegrityError(f"downloaded archive {url} does not have one top folder")
    return tops[0]


def _download(pin: PinLike, cache: Path, downloader: Downloader) -> Path:
    url = tarball_url(pin.repository, pin.commit)
    (cache / "downloads").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="dl.", dir=cache / "downloads"))
    try:
        top = _download_tree(url, work, downloader)
        folder = top / pin.subdir if pin.subdir else top
        if not folder.is_dir():
            raise NotFoundError(f"{url} has no folder {pin.subdir}")
        check_tree(folder, pin.tree, f"download of {pin.repository}@{pin.commit[:12]}")
        return _install(folder, cache, pin.tree)
    finally:
        _rmtree(work)


# --------------------------------------------------------------------------- sparse checkouts (Nix pins)

def _copy_entry(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
    elif src.is_dir():
        shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        _prune_empty_dirs(dst)  # git has no empty folders: a checkout never contains them
    else:
        shutil.copy2(src, dst)


def _prune_empty_dirs(root: Path) -> None:
    for dirpath, _dirnames, _filenames in os.walk(root, topdown=False):
        if dirpath != str(root) and not os.listdir(dirpath):
            os.rmdir(dirpath)


def _check_rel(rel: str, what: str) -> tuple[str, ...]:
    parts = tuple(p for p in rel.strip("/").split("/") if p)
    if not parts or any(p in (".", "..", ".git") for p in parts):
        raise InputError(f"{what} {rel!r} is not a plain relative path inside the repository",
                         hint="write it like jarvis_leaderboard/contributions/cfid")
    return parts


def cone_layout(repo_root: Path, dirs: list[str] | tuple[str, ...], dest: Path) -> Path:
    """Copy into ``dest`` what a cone-mode ``git sparse-checkout set <dirs>`` checks out.

    Cone mode keeps every file at the repository root, the files directly inside each parent
    folder of a listed folder, and the listed folders recursively. This is the tree nixpkgs'
    ``fetchgit { sparseCheckout = dirs; }`` produces (without ``.git``), so its NAR hash is the
    fixed-output hash Nix expects.
    """
    repo_root = Path(repo_root)
    if not repo_root.is_dir():
        raise NotFoundError(f"repository folder not found: {repo_root}")
    dest.mkdir(parents=True)
    wanted = [_check_rel(d, "sparse folder") for d in dirs]
    parents = {()} | {w[:i] for w in wanted for i in range(1, len(w))}
    for parent in sorted(parents):
        here = repo_root.joinpath(*parent)
        if not here.is_dir():
            raise NotFoundError(f"{repo_root} has no folder {'/'.join(parent)}")
        for e in sorted(here.iterdir()):
            if e.name != ".git" and (e.is_symlink() or not e.is_dir()):
                _copy_entry(e, dest.joinpath(*parent, e.name))
    for w in wanted:
        src = repo_root.joinpath(*w)
        if not src.is_dir():
            raise NotFoundError(f"{repo_root} has no folder {'/'.join(w)}",
                                hint="the sparse folder must exist in the pinned repository")
        if not dest.joinpath(*w).exists():
            _copy_entry(src, dest.joinpath(*w))
    return dest


def files_layout(repo_root: Path, files: list[str] | tuple[str, ...], dest: Path) -> Path:
    """Copy into ``dest`` exactly ``files`` (what non-cone ``sparseCheckout`` of those paths gives)."""
    repo_root = Path(repo_root)
    dest.mkdir(parents=True)
    for f in files:
        parts = _check_rel(f, "sparse file")
        src = repo_root.joinpath(*parts)
        if not (src.is_file() or src.is_symlink()):
            raise NotFoundError(f"{repo_root} has no file {f}", hint="the file must exist in the pinned repository")
        _copy_entry(src, dest.joinpath(*parts))
    return dest


@dataclass(frozen=True)
class SparseHashes:
    """NAR hashes of a model's two fixed-output fetches (see nix/model.nix)."""
    source: NarHash        # cone-mode sparse checkout of [source] subdir
    benchmarks: NarHash    # non-cone checkout of the model's <benchmark>.json.zip files
    benchmark_files: tuple[str, ...]


def benchmark_files(benchmarks_subdir: str, benchmarks: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    return tuple(f"{benchmarks_subdir.strip('/')}/{b}.json.zip" for b in benchmarks)


def sparse_hashes(repo_root: Path, subdir: str, benchmarks_subdir: str,
                  benchmarks: tuple[str, ...] | list[str]) -> SparseHashes:
    """Compute both NAR hashes from a local copy of the pinned repository (e.g. the mirror)."""
    files = benchmark_files(benchmarks_subdir, benchmarks)
    with tempfile.TemporaryDirectory(prefix="pyrepro-nar.") as t:
        src = nar_hash(cone_layout(repo_root, [subdir], Path(t) / "src"))
        bench = nar_hash(files_layout(repo_root, files, Path(t) / "bench"))
    return SparseHashes(src, bench, files)


class SpecLike(Protocol):
    @property
    def source(self) -> PinLike: ...
    @property
    def benchmarks(self) -> tuple[str, ...]: ...
    @property
    def path(self) -> Path: ...


DEFAULT_BENCHMARKS_SUBDIR = "jarvis_leaderboard/benchmarks/AI/SinglePropertyPrediction"


def mirror_repo(mirror: Path, repository: str) -> Path:
    mirror = Path(mirror)
    if not mirror.is_dir():
        raise NotFoundError(f"mirror folder not found: {mirror}",
                            hint="pass --mirror pointing at a folder holding <repo-name>/, e.g. ../shared/upstream")
    root = mirror / repo_name(repository)
    if not root.is_dir():
        raise NotFoundError(f"the mirror {mirror} has no {repo_name(repository)}/",
                            hint="the mirror must hold <repo-name>/ of the pinned commit")
    return root


def pin_hashes(spec: SpecLike, mirror: Path) -> SparseHashes:
    """Verify the tree id of ``spec``'s pinned folder in the mirror, then compute its two NAR hashes."""
    pin = spec.source
    root = mirror_repo(mirror, pin.repository)
    check_tree(root / pin.subdir, pin.tree, f"mirror copy of {pin.subdir}")
    bsub = getattr(pin, "benchmarks_subdir", "") or DEFAULT_BENCHMARKS_SUBDIR
    return sparse_hashes(root, pin.subdir, bsub, spec.benchmarks)


def write_pin_hashes(spec: SpecLike, hashes: SparseHashes) -> bool:
    """Record the hashes in ``spec.path`` ([source] nar_hash, benchmarks_subdir, benchmarks_nar_hash).

    Formatting and comments are kept (tomlkit); the file is replaced atomically. Returns whether
    it changed.
    """
    import tomlkit

    text = spec.path.read_text(encoding="utf-8")
    doc = tomlkit.parse(text)
    src = doc["source"]
    bsub = getattr(spec.source, "benchmarks_subdir", "") or DEFAULT_BENCHMARKS_SUBDIR
    src["nar_hash"] = hashes.source.sri
    src["benchmarks_subdir"] = bsub
    src["benchmarks_nar_hash"] = hashes.benchmarks.sri
    new = tomlkit.dumps(doc)
    if new == text:
        return False
    fd, tmp = tempfile.mkstemp(prefix=".model.", suffix=".toml", dir=spec.path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(new)
        os.replace(tmp, spec.path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True


@dataclass(frozen=True)
class PinCheck:
    """Recorded vs computed pins of one model (``pyrepro source verify``)."""
    name: str
    tree: str
    hashes: SparseHashes
    problems: tuple[str, ...]  # "key: expected X, got Y" / "key: not recorded, computed Y"

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "tree": self.tree, "nar_hash": self.hashes.source.sri,
                "benchmarks_nar_hash": self.hashes.benchmarks.sri,
                "benchmark_files": list(self.hashes.benchmark_files), "ok": self.ok,
                "problems": list(self.problems)}


def check_pins(spec: SpecLike, mirror: Path) -> PinCheck:
    """Verify the tree id (IntegrityError on mismatch) and compare the recorded NAR hashes."""
    hashes = pin_hashes(spec, mirror)
    problems = []
    for key, computed in (("nar_hash", hashes.source.sri), ("benchmarks_nar_hash", hashes.benchmarks.sri)):
        recorded = getattr(spec.source, key, None)
        if recorded is None:
            problems.append(f"[source] {key}: not recorded, computed {computed}")
        elif recorded != computed:
            problems.append(f"[source] {key}: expected {recorded}, got {computed}")
    return PinCheck(getattr(spec, "name", spec.path.parent.name), spec.source.tree, hashes, tuple(problems))


def obtain_benchmarks(spec: SpecLike, *, mirror: Path | None = None, cache: Path,
                      downloader: Downloader | None = None, online: bool = True) -> ObtainedSource:
    """The model's ``<benchmark>.json.zip`` files as a verified, read-only folder.

    The folder (``.path``) holds exactly the files of ``spec.benchmarks``, verified against
    ``[source] benchmarks_nar_hash`` (the NAR hash of the non-cone sparse checkout that Nix
    fetches). This works with a partial mirror, where the whole benchmarks folder cannot
    match its git tree id. Order: cache, mirror, download of the upstream tarball.
    """
    pin = spec.source
    expected = getattr(pin, "benchmarks_nar_hash", None)
    if not expected:
        raise IntegrityError(f"{spec.path}: [source] benchmarks_nar_hash is not recorded, so the benchmark "
                             "files cannot be verified", hint="run `pyrepro source verify --write` after review")
    bsub = getattr(pin, "benchmarks_subdir", "") or DEFAULT_BENCHMARKS_SUBDIR
    files = benchmark_files(bsub, spec.benchmarks)
    key = parse_sri(expected).hex()
    dest = cache / "benchmarks" / key

    def check(layout: Path, what: str) -> None:
        actual = nar_hash(layout).sri
        if actual != expected:
            raise IntegrityError(f"{what}: the benchmark files {', '.join(Path(f).name for f in files)} do not "
                                 "match [source] benchmarks_nar_hash", expected=expected, actual=actual,
                                 hint="the copy is damaged or from another commit")

    if dest.is_dir():
        try:
            check(dest, "cached copy")
            return ObtainedSource(dest / bsub, expected, "cache")
        except IntegrityError:
            _rmtree(dest)

    def install(repo_root: Path, origin: Literal["mirror", "download"]) -> ObtainedSource:
        (cache / "benchmarks").mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key[:12]}.", dir=cache / "benchmarks"))
        try:
            layout = files_layout(repo_root, files, tmp / "t")
            check(layout, f"{origin} copy")
            make_read_only(layout)
            try:
                os.rename(layout, dest)
            except OSError:
                if not dest.is_dir():
                    raise
        finally:
            _rmtree(tmp)
        return ObtainedSource(dest / bsub, expected, origin)

    if mirror is not None:
        return install(mirror_repo(mirror, pin.repository), "mirror")
    if not online:
        raise NotFoundError(f"benchmark files of {spec.path.parent.name} are not cached and no mirror was given",
                            hint="pass --mirror DIR, or allow downloads")
    url = tarball_url(pin.repository, pin.commit)
    (cache / "downloads").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="dl.", dir=cache / "downloads"))
    try:
        return install(_download_tree(url, work, downloader or _urllib_download), "download")
    finally:
        _rmtree(work)
