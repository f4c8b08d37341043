"""Test doubles shared by the test modules."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pyrepro.errors import ExternalToolError
from pyrepro.proc import Completed


@dataclass
class FakeRunner:
    """Records every argv; answers from ``responses`` (first matching prefix wins).

    A response is a ``Completed``, or a callable ``(argv, cwd, env) -> Completed`` that may
    also write files (e.g. fake ``pdm lock`` writing ``pdm.lock``). With ``on_line``, the
    response's stdout lines and then its stderr lines are handed to it, as ``proc.run`` would
    while the program runs.
    """

    responses: list[tuple[tuple[str, ...], Completed | Callable[..., Completed]]] = field(default_factory=list)
    calls: list[tuple[tuple[str, ...], Path | None, Mapping[str, str] | None]] = field(default_factory=list)

    def on(self, prefix: Sequence[str], response: Completed | Callable[..., Completed] | str = "",
           returncode: int = 0, stderr: str = "") -> FakeRunner:
        if isinstance(response, str):
            response = Completed(tuple(prefix), returncode, response, stderr)
        self.responses.append((tuple(prefix), response))
        return self

    def __call__(self, cmd: Sequence[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None,
                 check: bool = True, timeout: float | None = None, stdout_file: IO[str] | None = None,
                 stderr_file: IO[str] | None = None, input: str | None = None,
                 on_line: Callable[[str], None] | None = None) -> Completed:
        argv = tuple(str(c) for c in cmd)
        self.calls.append((argv, cwd, env))
        for prefix, resp in self.responses:
            if argv[: len(prefix)] == prefix:
                done = resp(argv, cwd, env) if callable(resp) else resp
                if on_line is not None:
                    for line in [*done.stdout.splitlines(), *done.stderr.splitlines()]:
                        on_line(line)
                if check and done.returncode != 0:
                    raise ExternalToolError(argv, done.returncode, done.stderr, done.stdout)
                return done
        raise AssertionError(f"FakeRunner: unexpected command {argv}")


def json_result(text: str) -> Any:
    """The ``result`` of a ``--json`` envelope (docs/json.md), after checking its shape."""
    import json

    doc = json.loads(text)
    assert isinstance(doc, dict) and set(doc) == {"ok", "result", "error"}, doc
    assert isinstance(doc["ok"], bool) and (doc["error"] is None) == doc["ok"], doc
    return doc["result"]


NO_UV_RESOLUTION = ("  x No solution found when resolving dependencies:\n"
                    "  `-> Because there are no versions of six and you require six, we can conclude that your "
                    "requirements are unsatisfiable.\n")


def answer_uv_compile(runner: FakeRunner, stdout: str = "", returncode: int = 1,
                      stderr: str = NO_UV_RESOLUTION) -> FakeRunner:
    """Let ``runner`` answer the lock's guiding ``uv pip compile`` (``pyrepro.uvtool.guide``):
    by default uv finds no resolution either."""
    from pyrepro.uvtool import uv_executable

    return runner.on((uv_executable() or "uv", "pip", "compile"), stdout, returncode=returncode, stderr=stderr)
