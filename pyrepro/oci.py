"""OCI image archives: deterministic layers, the image config and manifest, and an unpacker.

What ``write_archive`` writes is one tar file in the OCI image layout (``oci-layout``,
``index.json``, ``blobs/sha256/<digest>``), plus the docker-archive index of the same blobs
(``manifest.json``), as ``docker save`` itself writes since Docker 25: ``podman load`` and
``docker load`` read it.

Layers are deterministic: the same entries give the same bytes. Entries are sorted by path,
every entry has the same modification time (``EPOCH``), owner 0:0 and no owner names, every
parent folder is an entry of its own, and the gzip stream has no time or file name in its
header. A layer's ``diff_id`` is the sha256 of its uncompressed tar, its digest that of the
blob (``docs/export.md``).

``unpack`` applies the layers of an archive in order into a folder, as a container runtime
does: whiteouts (``.wh.<name>`` removes a path of a lower layer, ``.wh..wh..opq`` the lower
layers' contents of a folder) are honoured, and every blob is checked against its digest and
every layer against its ``diff_id`` first. It refuses what would write outside the folder
(``..``, a path through a link).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pyrepro.errors import InputError, IntegrityError

#: Every entry's modification time: 1980-01-01T00:00:00Z, the earliest time a zip file can
#: hold (a model that zips files of its own image must not fail on an older one).
EPOCH = 315532800
CREATED = "1980-01-01T00:00:00Z"

LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
LAYER_TAR = "application/vnd.oci.image.layer.v1.tar"
CONFIG = "application/vnd.oci.image.config.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
REF_NAME = "org.opencontainers.image.ref.name"
WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
_BLOCK = 1 << 20


@dataclass(frozen=True)
class Entry:
    """One path of a layer. ``path`` is relative to the image's root (``opt/venv/bin/python``).

    A file's bytes come from ``data`` or from the host file ``source``, read when the layer is
    written; ``sha256`` is what those bytes must hash to (checked as they are read: the bytes
    in the image are the verified ones), and ``transform`` may rewrite them after that check
    (relocation)."""

    path: str
    kind: str  # "file" | "dir" | "symlink"
    mode: int = 0o644
    target: str = ""
    source: Path | None = None
    data: bytes | None = None
    sha256: str | None = None
    transform: Callable[[bytes], bytes] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in ("file", "dir", "symlink"):
            raise ValueError(f"entry {self.path}: unknown kind {self.kind!r}")
        check_path(self.path)


def check_path(path: str) -> str:
    """``path`` if it is a clean path relative to the image's root; ``ValueError`` otherwise."""
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"not a clean relative path inside an image: {path!r}")
    return path


def file_entry(path: str, data: bytes, mode: int = 0o644) -> Entry:
    return Entry(path, "file", mode, data=data)


def dir_entry(path: str, mode: int = 0o755) -> Entry:
    return Entry(path, "dir", mode)


def link_entry(path: str, target: str) -> Entry:
    return Entry(path, "symlink", 0o777, target=target)


@dataclass(frozen=True)
class Blob:
    """A blob written to a folder: a layer (with its ``diff_id``), a config or a manifest."""

    path: Path
    digest: str  # "sha256:<hex>"
    size: int
    media_type: str
    diff_id: str = ""  # layers: sha256 of the uncompressed tar
    entries: int = 0

    def descriptor(self) -> dict[str, Any]:
        return {"mediaType": self.media_type, "digest": self.digest, "size": self.size}


class _Hashing(io.RawIOBase):
    """A write-only stream that hashes and counts what passes through to ``out``."""

    def __init__(self, out: IO[bytes] | io.RawIOBase | gzip.GzipFile | None) -> None:
        self.out, self.sha, self.size = out, hashlib.sha256(), 0

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        data = bytes(b)
        self.sha.update(data)
        self.size += len(data)
        if self.out is not None:
            self.out.write(data)
        return len(data)


class _Checked(io.RawIOBase):
    """Reads ``f`` and, at its end, checks what was read against ``sha256`` (``IntegrityError``)."""

    def __init__(self, f: IO[bytes], sha256: str | None, where: str) -> None:
        self.f, self.want, self.where, self.sha = f, sha256, where, hashlib.sha256()

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.sha.update(data)
        if (not data or n < 0) and self.want is not None and self.sha.hexdigest() != self.want:
            raise IntegrityError(f"{self.where}: changed since it was verified", expected=self.want[:16],
                                 actual=self.sha.hexdigest()[:16])
        return data


def with_parents(entries: Iterable[Entry]) -> list[Entry]:
    """``entries`` sorted by path, each parent folder an entry (0755 unless given); a path given
    twice is a ``ValueError`` (two different things cannot sit at one path of a layer)."""
    by_path: dict[str, Entry] = {}
    for e in entries:
        if e.path in by_path:
            if by_path[e.path] == e and e.kind != "file":
                continue
            raise ValueError(f"two entries for {e.path} in one layer")
        by_path[e.path] = e
    for path in list(by_path):
        parts = path.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            if parent in by_path:
                if by_path[parent].kind != "dir":
                    raise ValueError(f"{path}: its parent {parent} is a {by_path[parent].kind} in the same layer")
                continue
            by_path[parent] = dir_entry(parent)
    return [by_path[p] for p in sorted(by_path)]


def _info(e: Entry, size: int = 0) -> tarfile.TarInfo:
    ti = tarfile.TarInfo(e.path)
    ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = EPOCH, 0, 0, "", ""
    ti.mode = e.mode & 0o7777
    if e.kind == "dir":
        ti.type = tarfile.DIRTYPE
    elif e.kind == "symlink":
        ti.type, ti.linkname = tarfile.SYMTYPE, e.target
    else:
        ti.type, ti.size = tarfile.REGTYPE, size
    return ti


def _add(tar: tarfile.TarFile, e: Entry) -> None:
    if e.kind != "file":
        tar.addfile(_info(e))
        return
    if e.data is not None:
        data = e.transform(e.data) if e.transform else e.data
        tar.addfile(_info(e, len(data)), io.BytesIO(data))
        return
    assert e.source is not None, e.path
    with open(e.source, "rb") as f:
        if e.transform is not None:  # read whole: the transform needs every byte
            data = f.read()
            if e.sha256 is not None and hashlib.sha256(data).hexdigest() != e.sha256:
                raise IntegrityError(f"{e.source}: changed since it was verified", expected=e.sha256[:16],
                                     actual=hashlib.sha256(data).hexdigest()[:16])
            data = e.transform(data)
            tar.addfile(_info(e, len(data)), io.BytesIO(data))
            return
        size = os.fstat(f.fileno()).st_size
        checked = _Checked(f, e.sha256, str(e.source))
        tar.addfile(_info(e, size), checked)
        if checked.read(1):  # the file grew while it was read: not the verified bytes
            raise IntegrityError(f"{e.source}: changed while it was written into the image")
        checked.read()  # the end: the hash is checked


def write_layer(entries: Iterable[Entry], folder: Path, *, compress: bool = True, level: int = 6) -> Blob:
    """A layer tar of ``entries`` (with their parent folders, sorted) as a blob file in
    ``folder``, gzip-compressed unless ``compress`` is false. The same entries give the same
    bytes."""
    items = with_parents(entries)
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".layer-", dir=folder)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as raw:
            outer = _Hashing(raw)
            gz = gzip.GzipFile(filename="", mode="wb", fileobj=outer, mtime=0, compresslevel=level) \
                if compress else None
            inner = _Hashing(gz if gz is not None else outer)
            stream = io.BufferedWriter(inner, buffer_size=_BLOCK)
            with tarfile.open(fileobj=stream, mode="w|", format=tarfile.PAX_FORMAT, encoding="utf-8",
                              errors="surrogateescape") as tar:
                for e in items:
                    _add(tar, e)
            stream.flush()
            if gz is not None:
                gz.close()
        digest = "sha256:" + outer.sha.hexdigest()
        path = folder / digest.split(":")[1]
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return Blob(path, digest, outer.size, LAYER_GZIP if compress else LAYER_TAR,
                "sha256:" + inner.sha.hexdigest(), len(items))


def canonical_json(obj: Any) -> bytes:
    """The bytes a config, manifest or index is written as (sorted keys, no spaces)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def write_json_blob(obj: Any, folder: Path, media_type: str) -> Blob:
    data = canonical_json(obj)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    path = folder / digest.split(":")[1]
    path.write_bytes(data)
    return Blob(path, digest, len(data), media_type)


def image_config(layers: list[Blob], *, entrypoint: list[str], env: dict[str, str], workdir: str,
                 labels: dict[str, str], history: list[str], cmd: list[str] | None = None,
                 architecture: str = "amd64", os_name: str = "linux") -> dict[str, Any]:
    """The image config (OCI image spec, ``config.json``): what a runtime starts and how."""
    if len(history) != len(layers):
        raise ValueError("one history line per layer")
    return {
        "created": CREATED, "architecture": architecture, "os": os_name,
        "config": {"Entrypoint": list(entrypoint), "Cmd": list(cmd or []),
                   "Env": [f"{k}={v}" for k, v in env.items()], "WorkingDir": workdir,
                   "Labels": dict(sorted(labels.items()))},
        "rootfs": {"type": "layers", "diff_ids": [b.diff_id for b in layers]},
        "history": [{"created": CREATED, "created_by": h} for h in history],
    }


@dataclass(frozen=True)
class Archive:
    path: Path
    reference: str  # name:tag, as the loaded image is called
    manifest: Blob
    config: Blob
    layers: tuple[Blob, ...]

    @property
    def size(self) -> int:
        return self.path.stat().st_size


def _tar_add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode, ti.uid, ti.gid, ti.uname, ti.gname = len(data), EPOCH, 0o644, 0, 0, "", ""
    tar.addfile(ti, io.BytesIO(data))


def _tar_add_dir(tar: tarfile.TarFile, name: str) -> None:
    ti = tarfile.TarInfo(name)
    ti.type, ti.mtime, ti.mode, ti.uid, ti.gid, ti.uname, ti.gname = tarfile.DIRTYPE, EPOCH, 0o755, 0, 0, "", ""
    tar.addfile(ti)


def write_archive(out: Path, layers: list[Blob], config: dict[str, Any], *, name: str, tag: str,
                  annotations: dict[str, str] | None = None) -> Archive:
    """The image archive at ``out`` (written beside it, then renamed): the OCI layout of
    ``layers`` and ``config``, and docker-archive's ``manifest.json`` of the same blobs."""
    if config["rootfs"]["diff_ids"] != [b.diff_id for b in layers]:
        raise ValueError("the config's diff_ids are not the layers'")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".oci-", dir=out.parent) as work:
        cfg = write_json_blob(config, Path(work), CONFIG)
        manifest = {"schemaVersion": 2, "mediaType": MANIFEST, "config": cfg.descriptor(),
                    "layers": [b.descriptor() for b in layers], "annotations": dict(annotations or {})}
        man = write_json_blob(manifest, Path(work), MANIFEST)
        reference = f"{name}:{tag}"
        index = {"schemaVersion": 2, "mediaType": INDEX,
                 "manifests": [{**man.descriptor(), "annotations": {REF_NAME: tag,
                                                                    "io.containerd.image.name": reference}}]}
        docker = [{"Config": f"blobs/sha256/{cfg.digest[7:]}", "RepoTags": [reference],
                   "Layers": [f"blobs/sha256/{b.digest[7:]}" for b in layers]}]
        tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        try:
            with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
                _tar_add_dir(tar, "blobs")
                _tar_add_dir(tar, "blobs/sha256")
                seen: set[str] = set()
                for b in [*layers, cfg, man]:
                    if b.digest in seen:  # two equal layers are one blob
                        continue
                    seen.add(b.digest)
                    ti = tarfile.TarInfo(f"blobs/sha256/{b.digest[7:]}")
                    ti.size, ti.mtime, ti.mode, ti.uid, ti.gid, ti.uname, ti.gname = \
                        b.size, EPOCH, 0o644, 0, 0, "", ""
                    with open(b.path, "rb") as f:
                        tar.addfile(ti, f)
                _tar_add_bytes(tar, "index.json", canonical_json(index))
                _tar_add_bytes(tar, "manifest.json", canonical_json(docker))
                _tar_add_bytes(tar, "oci-layout", canonical_json({"imageLayoutVersion": "1.0.0"}))
            os.replace(tmp, out)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    return Archive(out, reference, man, cfg, tuple(layers))


# ------------------------------------------------------------------ reading and unpacking

@dataclass(frozen=True)
class Image:
    """An archive as read back: its index, manifest and config, each checked against its digest."""

    index: dict[str, Any]
    manifest: dict[str, Any]
    config: dict[str, Any]
    docker_manifest: list[dict[str, Any]] | None


def _blob_name(digest: str) -> str:
    algo, _, hexd = digest.partition(":")
    if algo != "sha256" or len(hexd) != 64 or any(c not in "0123456789abcdef" for c in hexd):
        raise InputError(f"not a sha256 digest: {digest!r}")
    return f"blobs/sha256/{hexd}"


def _read_member(tar: tarfile.TarFile, name: str, where: Path) -> bytes:
    try:
        f = tar.extractfile(name)
    except KeyError:
        f = None
    if f is None:
        raise InputError(f"{name} is missing from the image archive", path=where)
    return f.read()


def _read_blob(tar: tarfile.TarFile, digest: str, where: Path) -> bytes:
    data = _read_member(tar, _blob_name(digest), where)
    got = "sha256:" + hashlib.sha256(data).hexdigest()
    if got != digest:
        raise IntegrityError(f"{where}: blob {digest[:19]} does not match its digest", expected=digest, actual=got)
    return data


def read_archive(path: Path) -> Image:
    """The index, manifest and config of an archive ``write_archive`` (or ``docker save``)
    wrote; the first manifest of the index is the image."""
    with tarfile.open(path, "r:") as tar:
        index = json.loads(_read_member(tar, "index.json", path))
        descs = index.get("manifests") or []
        if not descs:
            raise InputError("index.json lists no manifest", path=path)
        manifest = json.loads(_read_blob(tar, descs[0]["digest"], path))
        config = json.loads(_read_blob(tar, manifest["config"]["digest"], path))
        try:
            docker = json.loads(_read_member(tar, "manifest.json", path))
        except InputError:
            docker = None
    return Image(index, manifest, config, docker)


def _copy_hashing(src: IO[bytes] | gzip.GzipFile | io.BufferedReader, dst: IO[bytes]) -> str:
    h = hashlib.sha256()
    for block in iter(lambda: src.read(_BLOCK), b""):
        h.update(block)
        dst.write(block)
    return "sha256:" + h.hexdigest()


def iter_layers(path: Path, work: Path) -> Iterator[tuple[int, Path]]:
    """Each layer of the archive at ``path``, in order, as an uncompressed tar file in ``work``
    (removed when the next is given): the blob checked against its digest, the tar against the
    config's ``diff_id``."""
    image = read_archive(path)
    diff_ids = image.config.get("rootfs", {}).get("diff_ids", [])
    layers = image.manifest.get("layers", [])
    if len(diff_ids) != len(layers):
        raise IntegrityError(f"{path}: {len(layers)} layers but {len(diff_ids)} diff_ids in the config")
    with tarfile.open(path, "r:") as tar:
        for i, desc in enumerate(layers):
            member = tar.extractfile(_blob_name(desc["digest"]))
            if member is None:
                raise InputError(f"layer {desc['digest'][:19]} is missing from the image archive", path=path)
            raw = work / f"layer-{i}.blob"
            with open(raw, "wb") as f:
                got = _copy_hashing(member, f)
            if got != desc["digest"]:
                raise IntegrityError(f"{path}: layer {i} does not match its digest", expected=desc["digest"], actual=got)
            plain = work / f"layer-{i}.tar"
            with open(raw, "rb") as f:
                gz = f.read(2) == b"\x1f\x8b"
            with (gzip.open(raw, "rb") if gz else open(raw, "rb")) as src, open(plain, "wb") as dst:
                got = _copy_hashing(src, dst)
            raw.unlink()
            if got != diff_ids[i]:
                raise IntegrityError(f"{path}: layer {i} does not match its diff_id", expected=diff_ids[i], actual=got)
            try:
                yield i, plain
            finally:
                plain.unlink(missing_ok=True)


def _member_path(name: str) -> str:
    clean = name
    while clean.startswith("./"):
        clean = clean[2:]
    clean = clean.strip("/")  # an absolute name is taken relative to the root, as tar does
    if not clean or clean == ".":
        return ""
    try:
        return check_path(clean)
    except ValueError as exc:
        raise InputError(f"layer entry {name!r}: {exc}; not unpacked") from exc


def _inside(dest: Path, rel: str, *, parent_only: bool) -> Path:
    """``dest/rel``, refusing a path that passes through a link (it could lead out of ``dest``)."""
    parts = rel.split("/")
    cur = dest
    for part in parts[:-1] if parent_only else parts:
        cur = cur / part
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise InputError(f"layer entry {rel} passes through the link {cur.relative_to(dest)}; "
                             "not unpacked (it could write outside the root)")
    return dest / rel


def _remove(p: Path) -> None:
    if p.is_symlink() or not p.is_dir():
        p.unlink(missing_ok=True)
    else:
        shutil.rmtree(p)


def apply_layer(layer_tar: Path, dest: Path) -> dict[str, int]:
    """Apply one uncompressed layer tar to ``dest``: its whiteouts first (they hide only what
    lower layers put there, never an entry of the same layer), then its entries in order.
    Returns counts: files, dirs, links, whiteouts, skipped (device nodes and fifos)."""
    counts = {"files": 0, "dirs": 0, "links": 0, "whiteouts": 0, "skipped": 0}
    dirs: list[tuple[Path, int]] = []
    with tarfile.open(layer_tar, "r:") as tar:
        members = tar.getmembers()
        for m in members:
            rel = _member_path(m.name)
            base = rel.rsplit("/", 1)[-1]
            if not base.startswith(WHITEOUT):
                continue
            counts["whiteouts"] += 1
            parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
            if base == OPAQUE:
                folder = _inside(dest, parent, parent_only=False) if parent else dest
                if folder.is_dir() and not folder.is_symlink():
                    for child in list(folder.iterdir()):
                        _remove(child)
                continue
            hidden = (parent + "/" if parent else "") + base[len(WHITEOUT):]
            target = _inside(dest, check_path(hidden), parent_only=True)
            if target.exists() or target.is_symlink():
                _remove(target)
        for m in members:
            rel = _member_path(m.name)
            if not rel or rel.rsplit("/", 1)[-1].startswith(WHITEOUT):
                continue
            target = _inside(dest, rel, parent_only=True)
            target.parent.mkdir(parents=True, exist_ok=True)
            if m.isdir():
                if (target.exists() or target.is_symlink()) and (target.is_symlink() or not target.is_dir()):
                    _remove(target)
                target.mkdir(exist_ok=True)
                dirs.append((target, m.mode))
                counts["dirs"] += 1
                continue
            if target.exists() or target.is_symlink():
                _remove(target)
            if m.issym():
                os.symlink(m.linkname, target)
                os.utime(target, (m.mtime, m.mtime), follow_symlinks=False)
                counts["links"] += 1
            elif m.islnk():
                other = _inside(dest, _member_path(m.linkname), parent_only=False)
                os.link(other, target)
                counts["files"] += 1
            elif m.isreg():
                src = tar.extractfile(m)
                assert src is not None
                with open(target, "wb") as f:
                    shutil.copyfileobj(src, f, _BLOCK)
                os.chmod(target, m.mode & 0o7777)
                os.utime(target, (m.mtime, m.mtime))
                counts["files"] += 1
            else:
                counts["skipped"] += 1
    for d, mode in reversed(dirs):  # after their contents: a read-only folder was still written into
        os.chmod(d, mode & 0o7777)
        os.utime(d, (EPOCH, EPOCH))
    return counts


def unpack(path: Path, dest: Path) -> dict[str, int]:
    """Apply every layer of the archive at ``path`` in order into the folder ``dest`` (made
    when missing); the totals of ``apply_layer``'s counts."""
    dest.mkdir(parents=True, exist_ok=True)
    total = {"layers": 0, "files": 0, "dirs": 0, "links": 0, "whiteouts": 0, "skipped": 0}
    with tempfile.TemporaryDirectory(prefix=".unpack-", dir=dest.parent) as work:
        for _i, layer in iter_layers(path, Path(work)):
            for k, v in apply_layer(layer, dest).items():
                total[k] += v
            total["layers"] += 1
    return total
