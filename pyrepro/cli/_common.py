"""Output helpers shared by the command modules (CLI layer only)."""

from __future__ import annotations

import json
import sys
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


class CliProgress:
    """Progress for the terminal: a rich bar on a TTY, one line per event otherwise."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self._rich: Any = None
        self._tasks: dict[str, Any] = {}

    def start(self, label: str, total: int | None = None) -> None:
        if not self.enabled:
            return
        if self.tty:
            from rich.progress import Progress as RichProgress

            if self._rich is None:
                self._rich = RichProgress(transient=False)
                self._rich.start()
            self._tasks[label] = self._rich.add_task(label, total=total)
        else:
            typer.echo(f"[start] {label}" + (f" ({total})" if total else ""), err=True)

    def advance(self, label: str, n: int = 1, detail: str = "") -> None:
        if not self.enabled:
            return
        if self._rich is not None and label in self._tasks:
            self._rich.update(self._tasks[label], advance=n,
                              description=f"{label} {detail}".strip())
        else:
            typer.echo(f"[....] {label} {detail}".rstrip(), err=True)

    def finish(self, label: str, detail: str = "") -> None:
        if not self.enabled:
            return
        if self._rich is not None and label in self._tasks:
            task = self._tasks.pop(label)
            self._rich.update(task, completed=self._rich.tasks[task].total or 1,
                              description=f"{label} {detail}".strip())
            if not self._tasks:
                self._rich.stop()
                self._rich = None
        else:
            typer.echo(f"[done] {label} {detail}".rstrip(), err=True)


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
