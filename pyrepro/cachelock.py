"""File locks on the shared cache: the one place where pyrepro processes wait for each other.

Every writer of the cache already writes through a temporary file or folder and an atomic rename
(``pyrepro.fsutil.atomic_write_text``, ``backends.local._commit_dir``), so a reader never sees a
half-written file. What renames cannot prevent is two processes doing the same long work at once
and then stepping on each other's results: two builds of one model and lock both filling a
temporary environment, one committing it while the other rewrites its manifest or its launcher;
two reproductions of one model both writing ``models/<name>/``. Those entry points hold a lock
named for what they make (``held(cache, "build-<name>-<env key>")``) for as long as they make it:
the second process waits, then finds the first one's result complete and reuses it.

The lock is ``flock(2)`` on a file under ``<cache>/locks/``: the kernel releases it when its holder
exits, however (a crash, SIGKILL, a scheduler's time limit), so a lock is never stale and nothing
has to be cleaned up. On NFS (a cluster's shared cache), Linux clients turn ``flock`` into a POSIX
byte-range lock the server arbitrates between nodes (NFSv4, or NFSv3 with lockd). The lock file
holds its holder's host, pid and start time, for the message of a process that waits.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from pyrepro.errors import PyreproError
from pyrepro.progress import NULL_PROGRESS, Progress

LOCKS = "locks"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.=+-]+")


class LockTimeout(PyreproError):
    """A cache lock was not free within the time asked for (``held(..., timeout=)``)."""


def lock_path(cache: Path, name: str) -> Path:
    """The lock file of ``name`` under ``cache`` (a name is any text; it is made a safe file name)."""
    safe = _UNSAFE.sub("_", name).strip("._") or "lock"
    return Path(cache) / LOCKS / f"{safe[:180]}.lock"


def holder(path: Path) -> str:
    """Who holds (or last held) the lock at ``path``, as its file says: ``host pid N since T``."""
    try:
        return path.read_text(encoding="utf-8").strip() or "another pyrepro process"
    except OSError:
        return "another pyrepro process"


@contextlib.contextmanager
def held(cache: Path, name: str, *, progress: Progress = NULL_PROGRESS, label: str = "",
         timeout: float | None = None, poll: float = 0.5,
         clock: Callable[[], float] = time.monotonic) -> Iterator[Path]:
    """Hold the exclusive lock ``name`` of ``cache`` for the ``with`` block; yields the lock file.

    Free: taken at once. Held by another process: ``progress.advance(label, 0, "waiting for ...")``
    once, then wait (``timeout`` None: as long as it takes, the holder's work is what this process
    would otherwise do twice; else ``LockTimeout`` after ``timeout`` seconds). An interruption while
    waiting (Ctrl-C, SIGTERM) ends the wait like any other."""
    path = lock_path(cache, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress.advance(label or name, 0, f"waiting for {holder(path)} ({name})")
            _wait(fd, path, name, timeout, poll, clock)
        _stamp(fd)
        yield path
    finally:
        os.close(fd)  # closing the only descriptor of this open file releases the lock


def _wait(fd: int, path: Path, name: str, timeout: float | None, poll: float, clock: Callable[[], float]) -> None:
    if timeout is None:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a signal ends the wait: its handler raises (PEP 475)
        return
    end = clock() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if clock() >= end:
                raise LockTimeout(f"the cache lock {name} ({path}) is held by {holder(path)} and was not "
                                  f"free within {timeout:.0f} s",
                                  hint="wait for that process to finish, or stop it; a lock is released "
                                       "when its process ends") from None
            time.sleep(poll)


def _stamp(fd: int) -> None:
    """Write who holds the lock into its file (for a waiting process's message)."""
    text = f"{socket.gethostname()} pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode()
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, text, 0)


def is_held(cache: Path, name: str) -> bool:
    """Whether another open file holds the lock ``name`` now (for tests and diagnostics)."""
    path = lock_path(cache, name)
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
