"""Output helpers shared by the command modules (CLI layer only)."""

from __future__ import annotations

import json
import sys
import time
import weakref
from collections.abc import Callable
from enum import StrEnum
from typing import Any

import typer

# Every command's --json output is one envelope (docs/json.md), printed by ``pyrepro.cli.main``
# when the command ends, whether it succeeded or not:
#   {"ok": true|false, "result": <the command's record or null>,
#    "error": null | {"code", "kind", "message", "hint", "location": null | {"path", "line", "key"}}}
JSON_STATE: dict[str, Any] = {"active": False, "result": None, "emitted": False}


def emit_json(obj: Any) -> None:
    """Hand ``obj`` to the envelope (see above); outside ``main`` (a library caller), print it."""
    if JSON_STATE["active"]:
        JSON_STATE["result"] = obj
        JSON_STATE["emitted"] = True
        return
    print_json(obj)


def print_json(obj: Any) -> None:
    """Stable JSON on stdout: indented for a person at a terminal, compact (and written by the C
    encoder, several times faster on big results) for a pipe or file."""
    indent = 2 if sys.stdout.isatty() else None
    typer.echo(json.dumps(obj, indent=indent, sort_keys=False, default=str))


def error_json(exc: BaseException, code: int) -> dict[str, Any]:
    path = getattr(exc, "path", None)
    line = getattr(exc, "line", None)
    key = getattr(exc, "key", None)
    location = {"path": str(path), "line": line, "key": key} if path is not None else None
    message = getattr(exc, "message", None) or str(exc)
    return {"code": code, "kind": type(exc).__name__, "message": message, "hint": getattr(exc, "hint", None),
            "location": location}


NO_SANDBOX_HELP = ("Run foreign code (the submission's scripts, sdist builds) without the sandbox; the record "
                   "says so. Only for code you trust, or where bubblewrap cannot run")


def sandbox_flag(no_sandbox: bool) -> None:
    """``--no-sandbox``: the decision is ``pyrepro.sandbox``'s, which reads ``PYREPRO_SANDBOX``."""
    if no_sandbox:
        import os

        from pyrepro.sandbox import SETTING

        os.environ[SETTING] = "off"


def warn(msg: str) -> None:
    typer.echo(f"warning: {msg}", err=True)


def table(rows: list[list[str]], headers: list[str]) -> str:
    """A plain fixed-width table (no colour), stable for tests."""
    cols = [headers, *rows]
    widths = [max(len(str(r[i])) for r in cols) for i in range(len(headers))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()  # noqa: E731
    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    return "\n".join(out)


# Every CliProgress with a live display, so ``pyrepro.cli.main`` can end them before it prints an
# error: the message (and the tool's output tail in it) must not land inside a spinner line.
_LIVE: weakref.WeakSet[CliProgress] = weakref.WeakSet()


def close_progress() -> None:
    """Stop every live progress display (``main`` calls it when a command ends, however)."""
    for p in list(_LIVE):
        p.close()


def elapsed(seconds: float) -> str:
    """``12s``, ``4m05s``, ``1h02m``: a step's age in a log line."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class CliProgress:
    """Progress for the terminal (stderr), fed by the library through ``pyrepro.progress``.

    On a TTY: one live line per running step, a spinner, its label, a bar, the elapsed time
    and the latest detail (the package pip is fetching, the resolver's round), redrawn in place.

    Otherwise (CI logs, pipes): plain lines. One when a step starts and one when it finishes
    (with its time), one per counted step (``advance`` with ``n > 0``: a lock attempt, "venv",
    "installed"), and of the details (``n == 0``, the tool's output) at most one every
    ``DETAIL_EVERY`` seconds per step: a 15-minute ``pdm lock`` writes a few dozen lines, not the
    thousands it prints. A detail for a step that was never started is a one-off message: shown.
    """

    DETAIL_EVERY = 10.0

    def __init__(self, enabled: bool = True, *, tty: bool | None = None,
                 clock: Callable[[], float] = time.monotonic, console: Any = None) -> None:
        self.enabled = enabled
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.clock = clock
        self._console = console  # a rich Console (tests); default: stderr
        self._rich: Any = None
        self._tasks: dict[str, Any] = {}
        self._started: dict[str, float] = {}
        self._printed: dict[str, float] = {}

    # ------------------------------------------------------------------ the Progress protocol

    def start(self, label: str, total: int | None = None) -> None:
        if not self.enabled:
            return
        now = self.clock()
        self._started[label] = self._printed[label] = now
        if self.tty:
            if self._rich is None:
                self._rich = self._live()
                self._rich.start()
                _LIVE.add(self)
            self._tasks[label] = self._rich.add_task(label, total=total, detail="")
        else:
            typer.echo(f"[start] {label}" + (f" ({total})" if total else ""), err=True)

    def advance(self, label: str, n: int = 1, detail: str = "") -> None:
        if not self.enabled:
            return
        if self._rich is not None and label in self._tasks:
            fields = {"detail": detail} if detail else {}
            self._rich.update(self._tasks[label], advance=n, **fields)
        elif label not in self._started:
            self._say(f"[....] {label} {detail}".rstrip())
        elif not self.tty:
            now = self.clock()
            if n > 0 or now - self._printed[label] >= self.DETAIL_EVERY:
                self._printed[label] = now
                typer.echo(f"[....] {label} [{elapsed(now - self._started[label])}] {detail}".rstrip(), err=True)

    def finish(self, label: str, detail: str = "") -> None:
        if not self.enabled:
            return
        started = self._started.pop(label, None)
        self._printed.pop(label, None)
        if self._rich is not None and label in self._tasks:
            task = self._tasks.pop(label)
            total = self._rich.tasks[task].total or 1
            self._rich.update(task, total=total, completed=total, detail=detail)
            if not self._tasks:
                self.close()
        else:
            took = f" [{elapsed(self.clock() - started)}]" if started is not None else ""
            typer.echo(f"[done] {label} {detail}".rstrip() + took, err=True)

    def close(self) -> None:
        """End the live display (idempotent); what it shows last stays on the screen."""
        if self._rich is not None:
            self._rich.stop()
            self._rich = None
        self._tasks.clear()
        _LIVE.discard(self)

    # ------------------------------------------------------------------ helpers

    def _live(self) -> Any:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.table import Column

        return Progress(
            SpinnerColumn(finished_text="[green]✓[/]"),
            TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(bar_width=16),
            TimeElapsedColumn(),
            TextColumn("{task.fields[detail]}", style="dim", markup=False,  # tool output: no markup
                       table_column=Column(no_wrap=True, overflow="ellipsis")),
            console=self._console or Console(stderr=True),
            transient=False,
        )

    def _say(self, line: str) -> None:
        """A one-off message: above the live display when there is one."""
        if self._rich is not None:
            from rich.text import Text

            self._rich.console.print(Text(line))
        else:
            typer.echo(line, err=True)


# Options with a fixed set of values: typer lists them in --help and refuses others (exit 2).
class Backend(StrEnum):
    local = "local"
    nix = "nix"


class DataKind(StrEnum):
    fixture = "fixture"
    jarvis = "jarvis"


class GraphSource(StrEnum):
    auto = "auto"
    nix = "nix"
    lock = "lock"


class GraphFormat(StrEnum):
    svg = "svg"
    png = "png"
    pdf = "pdf"
    dot = "dot"
    json = "json"


class LockStrategy(StrEnum):
    as_declared = "as-declared"
    date_bounded = "date-bounded"
    relaxed = "relaxed"
