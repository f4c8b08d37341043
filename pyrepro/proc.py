"""The one subprocess chokepoint.

Every external program (pdm, nix, pip, patch, dot, git, a model's entry) is started
through a ``Runner``. Library functions take ``runner: Runner = run`` so tests can pass a
fake that records argv and returns canned output (see ``tests/fakes.py``).

The default runner logs ``$ <cmd>`` at debug level, captures output (or streams it to
files for long runs), and raises ``ExternalToolError`` on a non-zero exit when
``check=True``, or on a timeout (with what the program printed until then). A missing
program raises ``MissingToolError`` naming it.

``on_line`` streams: each line of output, stdout and stderr, is handed to it while the
program runs (on the caller's thread), so a 15-minute ``pdm lock`` can show what it is
doing. The captured output and the log files are the same as without it.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import os
import queue
import re
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from pyrepro.errors import ExternalToolError, MissingToolError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Completed:
    """Result of one external command."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration: float = 0.0


class Runner(Protocol):
    """What every stage calls to run a program."""

    def __call__(
        self,
        cmd: Sequence[str],
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        timeout: float | None = None,
        stdout_file: IO[str] | None = None,
        stderr_file: IO[str] | None = None,
        input: str | None = None,
        on_line: Callable[[str], None] | None = None,
    ) -> Completed: ...


def run(
    cmd: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    timeout: float | None = None,
    stdout_file: IO[str] | None = None,
    stderr_file: IO[str] | None = None,
    input: str | None = None,
    on_line: Callable[[str], None] | None = None,
) -> Completed:
    """Run ``cmd``. ``env`` replaces the environment entirely when given.

    When ``stdout_file``/``stderr_file`` are given, output goes there (for long runs with
    logs) and the returned ``stdout``/``stderr`` are empty strings. ``on_line`` receives
    every line of both streams as it is printed (without its line break; a carriage
    return also ends a line, as progress bars use it); lines of one stream arrive in order.
    """
    argv = [str(c) for c in cmd]
    if not argv:
        raise ValueError("empty command")
    exe = argv[0]
    search_path = (env or os.environ).get("PATH", os.defpath)
    if os.sep not in exe and shutil.which(exe, path=search_path) is None:
        raise MissingToolError(f"program '{exe}' is not installed or not on PATH",
                               hint=install_hint(exe))
    log.debug("$ %s", shlex.join(argv))
    start = time.monotonic()
    try:
        if on_line is None:
            returncode, out, err = _run_captured(argv, cwd, env, timeout, stdout_file, stderr_file, input)
        else:
            returncode, out, err = _run_streaming(argv, cwd, env, timeout, stdout_file, stderr_file, input, on_line)
    except FileNotFoundError as exc:
        raise MissingToolError(f"program '{exe}' could not be started: {exc}",
                               hint=install_hint(exe)) from exc
    except _TimedOut as exc:
        raise ExternalToolError(argv, -1, exc.stderr, exc.stdout, timeout=timeout) from None
    done = Completed(tuple(argv), returncode, out, err, time.monotonic() - start)
    if check and returncode != 0:
        raise ExternalToolError(argv, returncode, done.stderr, done.stdout)
    return done


class _TimedOut(Exception):
    """The program ran past its timeout and was killed; carries what it printed until then."""

    def __init__(self, stdout: str, stderr: str) -> None:
        super().__init__("timed out")
        self.stdout = stdout
        self.stderr = stderr


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    if isinstance(data, bytes):
        data = data.decode(errors="replace")
    return data.replace("\r\n", "\n").replace("\r", "\n")


def _run_captured(argv: list[str], cwd: Path | None, env: Mapping[str, str] | None, timeout: float | None,
                  stdout_file: IO[str] | None, stderr_file: IO[str] | None,
                  input: str | None) -> tuple[int, str, str]:
    try:
        proc = subprocess.run(
            argv,
            cwd=str(cwd) if cwd is not None else None,
            env=dict(env) if env is not None else None,
            stdout=stdout_file if stdout_file is not None else subprocess.PIPE,
            stderr=stderr_file if stderr_file is not None else subprocess.PIPE,
            text=True,
            errors="replace",
            timeout=timeout,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise _TimedOut(_text(exc.stdout), _text(exc.stderr)) from exc
    return proc.returncode, proc.stdout or "", proc.stderr or ""


# A line ends at \n, \r\n or a lone \r (universal newlines, as the captured text has them).
_LINE_END = re.compile(r"\r\n|\r|\n")
_EOF = None  # what a reader thread puts on the queue when its stream is done


def _split_lines(pending: str, text: str, final: bool) -> tuple[list[str], str]:
    """Complete lines of ``pending + text``, and the unfinished rest. A trailing \r waits for
    the next chunk (it may be the first half of \r\n) unless the stream is over."""
    text = pending + text
    parts = _LINE_END.split(text)
    rest = parts.pop()
    if not final and text.endswith("\r"):  # split() ate it: keep it for the next chunk
        rest = parts.pop() + "\r" if parts else "\r"
    elif final and rest:
        parts.append(rest)
        rest = ""
    return parts, rest


def _run_streaming(argv: list[str], cwd: Path | None, env: Mapping[str, str] | None, timeout: float | None,
                   stdout_file: IO[str] | None, stderr_file: IO[str] | None, input: str | None,
                   on_line: Callable[[str], None]) -> tuple[int, str, str]:
    """Like ``_run_captured``, but one reader thread per pipe hands every line to ``on_line``
    through a queue, so the callback runs here, in order, and a full pipe never blocks the
    program. The bytes are kept (or written to the log files) unchanged and decoded once at the
    end exactly as ``subprocess.run(text=True)`` does."""
    proc = subprocess.Popen(
        argv,
        cwd=str(cwd) if cwd is not None else None,
        env=dict(env) if env is not None else None,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        text=True, errors="replace",
    )
    assert proc.stdout is not None and proc.stderr is not None
    encoding: str = proc.stdout.encoding  # type: ignore[attr-defined]  # a TextIOWrapper (text=True)
    lines: queue.Queue[str | None] = queue.Queue()
    captured: list[bytearray] = [bytearray(), bytearray()]

    def read(stream: IO[str], keep: bytearray, sink: IO[str] | None) -> None:
        raw = stream.buffer  # type: ignore[attr-defined]  # the text wrapper itself is never read
        decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        pending = ""
        try:
            while True:
                chunk = raw.read1(65536)
                if sink is None:
                    keep.extend(chunk)
                else:
                    try:
                        _write_all(sink, chunk)
                    except OSError as exc:  # a full disk: keep draining, or the program would block
                        log.warning("could not write the output of %s to %s: %s", argv[0], sink, exc)
                        sink = None
                        keep = bytearray()
                done, pending = _split_lines(pending, decoder.decode(chunk, final=not chunk), final=not chunk)
                for line in done:
                    lines.put(line)
                if not chunk:
                    return
        finally:
            lines.put(_EOF)

    threads = [threading.Thread(target=read, args=(s, k, f), daemon=True, name=f"proc-{n}")
               for s, k, f, n in ((proc.stdout, captured[0], stdout_file, "stdout"),
                                  (proc.stderr, captured[1], stderr_file, "stderr"))]
    if input is not None:
        assert proc.stdin is not None
        threads.append(threading.Thread(target=_feed, args=(proc.stdin, input), daemon=True, name="proc-stdin"))
    for f in (stdout_file, stderr_file):
        if f is not None:
            f.flush()  # whatever the caller wrote first stays first
    for t in threads:
        t.start()
    deadline = None if timeout is None else time.monotonic() + timeout
    open_streams = 2
    try:
        while open_streams:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(argv, timeout or 0)
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is _EOF:
                open_streams -= 1
            else:
                on_line(line)
        returncode = proc.wait(timeout=None if deadline is None else max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _stop(proc, threads)
        raise _TimedOut(_decode(bytes(captured[0]), encoding), _decode(bytes(captured[1]), encoding)) from None
    except BaseException:  # Ctrl-C, or the callback failed: the program does not outlive us
        _stop(proc, threads)
        raise
    for t in threads:
        t.join()
    _close(proc)
    return returncode, _decode(bytes(captured[0]), encoding), _decode(bytes(captured[1]), encoding)


def _stop(proc: subprocess.Popen[str], threads: list[threading.Thread]) -> None:
    proc.kill()
    proc.wait()
    for t in threads:  # a grandchild may still hold a pipe open: do not wait for it for long
        t.join(timeout=1.0)
    if not any(t.is_alive() for t in threads):  # closing a pipe under a blocked reader could hang
        _close(proc)


def _close(proc: subprocess.Popen[str]) -> None:
    for s in (proc.stdout, proc.stderr, proc.stdin):
        if s is not None:
            with contextlib.suppress(OSError):
                s.close()


def _decode(data: bytes, encoding: str) -> str:
    """What ``subprocess.run(text=True, errors="replace")`` returns for ``data``."""
    return data.decode(encoding, "replace").replace("\r\n", "\n").replace("\r", "\n")


def _write_all(sink: IO[str], chunk: bytes) -> None:
    """The program's bytes, unchanged, into a log file opened by the caller."""
    fd = sink.fileno()
    view = memoryview(chunk)
    while view:
        view = view[os.write(fd, view):]


def _feed(stdin: IO[str], text: str) -> None:
    try:
        stdin.write(text)
        stdin.close()
    except (BrokenPipeError, OSError):  # the program stopped reading: its exit code tells
        pass


_HINTS = {
    "nix": "install Nix (Debian: 'apt-get install nix-bin'; elsewhere: https://nixos.org/download)",
    "nix-build": "install Nix (Debian: 'apt-get install nix-bin')",
    "nix-instantiate": "install Nix (Debian: 'apt-get install nix-bin')",
    "nix-store": "install Nix (Debian: 'apt-get install nix-bin')",
    "nix-hash": "install Nix (Debian: 'apt-get install nix-bin')",
    "dot": "install graphviz (Debian: 'apt-get install graphviz'; macOS: 'brew install graphviz')",
    "patch": "install GNU patch (Debian: 'apt-get install patch')",
    "git": "install git (Debian: 'apt-get install git')",
    "pdm": "reinstall pyrepro with its dependencies ('pip install -e .'), which pins pdm",
    "zip": "install zip (Debian: 'apt-get install zip')",
}


def install_hint(program: str) -> str:
    """How to install ``program``, for error messages."""
    return _HINTS.get(program, f"install '{program}' and make sure it is on PATH")


def which(program: str, path: str | None = None) -> str | None:
    """``shutil.which`` through the chokepoint module, so tests can monkeypatch one place."""
    return shutil.which(program, path=path)
