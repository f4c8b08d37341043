"""File-system helpers shared by the stages."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and ``os.replace``:
    readers see the old content or the new, never a half-written file; a failure leaves the
    old file untouched and no temporary file behind. The file gets the mode an ordinary write
    would (0666 less the umask; an existing file keeps its mode), not mkstemp's 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            os.fchmod(f.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def append_line(path: Path, line: str) -> None:
    """Append ``line`` (one line; its newline is added) to ``path`` as one whole line: one
    ``write`` of the whole line to a file opened ``O_APPEND``, under ``flock`` (writers on other
    hosts of a shared filesystem take turns too), then ``fsync``. Concurrent appenders never
    interleave; a crash leaves at most a last line without its newline, which readers of such
    logs skip (``pyrepro.batch.read_results``) and the next append ends first, so it never
    swallows the next whole line."""
    import fcntl

    if "\n" in line:
        raise ValueError("append_line: one line at a time")
    data = (line + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def file_sha256(path: Path) -> Any:
    """sha256 of a file read in 1 MiB blocks (environments hold files of hundreds of MB); the
    hash object, so callers choose hexdigest() or digest()."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h


_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"),
         (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def decode_text(data: bytes) -> str:
    """A declaration or script file's bytes as text, the way pip reads a requirements file: a
    byte-order mark names the encoding (Windows PowerShell's ``pip freeze > requirements.txt``
    writes UTF-16 with one), as does UTF-16 without one (every other byte NUL in ASCII text);
    else UTF-8, undecodable bytes replaced. A leading BOM never reaches the text."""
    for bom, enc in _BOMS:
        if data.startswith(bom):
            return data[len(bom):].decode(enc, errors="replace")
    pairs = data[:200][: len(data[:200]) // 2 * 2]
    if len(pairs) >= 4:
        if pairs[1::2].count(0) == len(pairs) // 2 and pairs[0::2].count(0) == 0:
            return data.decode("utf-16-le", errors="replace")
        if pairs[0::2].count(0) == len(pairs) // 2 and pairs[1::2].count(0) == 0:
            return data.decode("utf-16-be", errors="replace")
    return data.decode("utf-8", errors="replace")


# ------------------------------------------------------------------ the submission folder is the boundary

def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def link_out(base: Path, rel: str) -> str | None:
    """The first part of ``rel`` (a path inside ``base``, ``/``-separated) that is a symbolic link
    leading out of ``base`` (a dangling one too), as ``rel`` spells it; None when every link on the
    way stays inside (those may be followed; a loop stays inside, and opening it fails). A ``..``
    that climbs out counts as leaving. Nothing is read, only links resolved: a caller that gets a
    name never opens the file."""
    root = os.path.realpath(base)
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    for i in range(1, len(parts) + 1):
        here = os.path.join(root, *parts[:i])
        if parts[i - 1] == ".." or os.path.islink(here):
            try:
                target = os.path.realpath(here, strict=True)
            except OSError:  # dangling or a loop: where it would lead, as far as it resolves
                target = os.path.realpath(here)
            if not _inside(target, root):
                return "/".join(parts[:i])
    return None


def outward_links(root: Path) -> list[tuple[str, str]]:
    """(path relative to ``root``, the link's text) of every symbolic link in the tree ``root`` that
    does not stay inside it: an absolute link (a tree that moves keeps no absolute target inside
    it), a relative one that resolves out of it (through other links too), and a loop. Links that
    stay inside are not listed. Nothing is read through a link; sorted."""
    top = os.path.realpath(root)
    out: list[tuple[str, str]] = []
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        for n in [*dirnames, *filenames]:
            p = os.path.join(dirpath, n)
            if not os.path.islink(p):
                continue
            text = os.readlink(p)
            keep = not os.path.isabs(text)
            if keep:
                try:
                    target = os.path.realpath(p, strict=True) if os.path.exists(p) else os.path.realpath(p)
                except OSError:
                    keep = False
                else:
                    keep = _inside(target, top) and not _loops(p)
            if not keep:
                out.append((os.path.relpath(p, top).replace(os.sep, "/"), text))
    return sorted(out)


def contained_links(root: Path) -> list[tuple[str, str]]:
    """Remove from the tree ``root`` every link ``outward_links`` lists (links that stay inside are
    kept as links); returns them."""
    dropped = outward_links(root)
    top = os.path.realpath(root)
    for rel, _text in dropped:
        os.unlink(os.path.join(top, *rel.split("/")))
    return dropped


def _loops(path: str) -> bool:
    try:
        os.stat(path)
    except OSError as exc:
        import errno

        return exc.errno == errno.ELOOP
    return False
