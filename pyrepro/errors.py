"""The one exception hierarchy of pyrepro, and the one exit-code table.

Every error a user can cause or meet is a ``PyreproError``. Its message says what went
wrong, where (file, line, key), and how to fix it; ``hint`` adds the remedy when it does
not fit the message. Stage modules may subclass these, but they must not invent new
exit codes: the code comes from the nearest class in ``EXIT_CODES``.

Exit codes (documented in README, asserted in tests):

====  ==========================  ================================================
code  class                       meaning
====  ==========================  ================================================
0     --                          success (warnings included)
1     PyreproError                generic failure
2     UsageError                  bad command line (typer also uses 2)
3     InputError                  bad input file: names file, line/key, and the fix
4     NotFoundError               a path, model, benchmark or mirror does not exist
5     IntegrityError              hash / tree-id / lock mismatch, tampered source
6     ExternalToolError           pdm, nix, pip, patch, dot ... failed
7     MissingToolError            a required program or interpreter is absent
8     NetworkError                an index or host could not be reached
9     ResolutionError             dependencies could not be resolved / locked
10    PatchError                  a patch does not apply cleanly
11    BuildError                  an environment or package could not be built
12    RunError                    a model run failed or produced no output
130   KeyboardInterrupt           interrupted
====  ==========================  ================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class PyreproError(Exception):
    """Base class. ``str(err)`` is the full user-facing message."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(PyreproError):
    """The command line asks for something impossible."""


class InputError(PyreproError):
    """An input file is malformed. Always names the file (and line or key)."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | str | None = None,
        line: int | None = None,
        key: str | None = None,
        hint: str | None = None,
    ) -> None:
        where = ""
        if path is not None:
            where = str(path)
            if line is not None:
                where += f":{line}"
            if key is not None:
                where += f" [{key}]"
            where += ": "
        super().__init__(where + message, hint=hint)
        self.path = Path(path) if path is not None else None
        self.line = line
        self.key = key


class NotFoundError(PyreproError):
    """A path, model, benchmark or mirror does not exist."""


class SourceUnavailableError(NotFoundError):
    """An extra (git) source of model.toml is not available here: ``source`` is its
    (name, repository, commit)."""

    def __init__(self, message: str, *, source: tuple[str, str, str], hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.source = source


class IntegrityError(PyreproError):
    """Content does not match its pin: tree id, hash, lock content hash."""

    def __init__(self, message: str, *, expected: str | None = None, actual: str | None = None,
                 hint: str | None = None) -> None:
        if expected is not None or actual is not None:
            message = f"{message} (expected {expected}, got {actual})"
        super().__init__(message, hint=hint)
        self.expected = expected
        self.actual = actual


class ExternalToolError(PyreproError):
    """An external program failed or timed out. Keeps argv, return code, its output, and shows
    the last ``TAIL_LINES`` lines of it (stderr, or stdout when stderr is empty) in the message:
    every command that meets a failing tool shows what the tool said, without a log to open."""

    TAIL_LINES = 20

    def __init__(self, cmd: Sequence[str], returncode: int, stderr: str = "", stdout: str = "",
                 *, hint: str | None = None, timeout: float | None = None) -> None:
        import shlex

        tail = "\n".join((stderr.strip() or stdout.strip()).splitlines()[-self.TAIL_LINES:])
        what = f"timed out after {timeout} s" if timeout is not None else f"failed with exit code {returncode}"
        msg = f"'{shlex.join(cmd)}' {what}"
        if tail:
            msg += ":\n" + tail
        super().__init__(msg, hint=hint)
        self.cmd = list(cmd)
        self.returncode = returncode
        self.stderr = stderr
        self.stdout = stdout
        self.timeout = timeout


class MissingToolError(PyreproError):
    """A program or interpreter that is required is not installed."""


class NetworkError(PyreproError):
    """An index or host could not be reached. Names the host and the package/file."""


class ResolutionError(PyreproError):
    """Dependencies could not be resolved or locked."""


class PatchError(PyreproError):
    """A patch does not apply cleanly. Names the patch, file and hunk."""


class BuildError(PyreproError):
    """An environment or package could not be built."""


class SdistBuildError(BuildError):
    """Locked sdists that did not build: ``packages`` holds (name, version) of each."""

    def __init__(self, message: str, *, packages: tuple[tuple[str, str], ...] = (), slow: bool = False,
                 needs: tuple[str, ...] = (), **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.packages = packages
        self.slow = slow  # stopped for taking longer than one sdist's build may take, not for failing
        self.needs = needs  # what the failed builds said they need from the system (a header, R, gdal-config)


class RunError(PyreproError):
    """A model run failed or produced no output."""


class BudgetError(PyreproError):
    """A time budget (``pyrepro reproduce --budget``) ran out: names the stage's command."""


EXIT_CODES: dict[type[BaseException], int] = {
    UsageError: 2,
    InputError: 3,
    NotFoundError: 4,
    IntegrityError: 5,
    ExternalToolError: 6,
    MissingToolError: 7,
    NetworkError: 8,
    ResolutionError: 9,
    PatchError: 10,
    BuildError: 11,
    RunError: 12,
    BudgetError: 13,
    PyreproError: 1,
    KeyboardInterrupt: 130,
}


def exit_code_for(exc: BaseException) -> int:
    """Return the exit code for ``exc`` from the nearest class in ``EXIT_CODES``."""
    for klass in type(exc).__mro__:
        if klass in EXIT_CODES:
            return EXIT_CODES[klass]
    return 1


def toml_error_line(exc: Exception) -> int | None:
    """The line number of a ``tomllib.TOMLDecodeError`` (Python < 3.14 has it only in the text)."""
    import re

    line = getattr(exc, "lineno", None)
    if isinstance(line, int):
        return line
    m = re.search(r"at line (\d+)", str(exc))
    return int(m.group(1)) if m else None
