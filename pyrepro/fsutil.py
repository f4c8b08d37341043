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
