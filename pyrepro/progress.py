"""A progress seam: the library reports, the CLI decides how to show it.

Library code takes ``progress: Progress = NULL_PROGRESS`` and calls ``progress.start(label,
total)``, ``progress.advance(label, n, detail)`` and ``progress.finish(label)``. The CLI
passes a rich progress bar on a terminal and a line printer otherwise.

A long external step (``pip install``, ``pdm lock``, a model run) passes
``on_line=output_detail(progress, label, summarise)`` to the runner: what the tool prints
becomes ``advance(label, 0, detail)``, one short line at a time (``n=0``: a detail is news,
not a step).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

DETAIL_WIDTH = 80
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
_SPACE = re.compile(r"\s+")


class Progress(Protocol):
    def start(self, label: str, total: int | None = None) -> None: ...
    def advance(self, label: str, n: int = 1, detail: str = "") -> None: ...
    def finish(self, label: str, detail: str = "") -> None: ...


class NullProgress:
    def start(self, label: str, total: int | None = None) -> None:
        pass

    def advance(self, label: str, n: int = 1, detail: str = "") -> None:
        pass

    def finish(self, label: str, detail: str = "") -> None:
        pass


NULL_PROGRESS: Progress = NullProgress()


class RecordingProgress:
    """For tests: records every call."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, object]] = []

    def start(self, label: str, total: int | None = None) -> None:
        self.events.append(("start", label, total))

    def advance(self, label: str, n: int = 1, detail: str = "") -> None:
        self.events.append(("advance", label, detail))

    def finish(self, label: str, detail: str = "") -> None:
        self.events.append(("finish", label, detail))


def shorten(text: str, width: int = DETAIL_WIDTH) -> str:
    """``text`` as one plain line of at most ``width`` characters: colour codes dropped,
    whitespace collapsed, the end cut to an ellipsis."""
    line = _SPACE.sub(" ", _ANSI.sub("", text)).strip()
    return line if len(line) <= width else line[: width - 1].rstrip() + "…"


_RELEASE = re.compile(r"^(.+?-\d[^-]*?)(?:-.*)?(?:\.whl|\.tar\.gz|\.zip|\.tar\.bz2)$")


def release_of(filename: str) -> str:
    """``torch-2.0.0-cp310-cp310-manylinux1_x86_64.whl`` -> ``torch-2.0.0``: a package file
    named short enough for a detail line (other names unchanged)."""
    m = _RELEASE.match(filename)
    return m.group(1) if m else filename


def last_line(line: str) -> str | None:
    """The summary of a program that says nothing structured: its latest non-blank line."""
    return line if line.strip() else None


def output_detail(progress: Progress, label: str,
                  summarise: Callable[[str], str | None] = last_line) -> Callable[[str], None]:
    """An ``on_line`` callback for the runner: each output line that ``summarise`` turns into a
    detail (``None``: nothing worth showing) becomes ``progress.advance(label, 0, detail)``,
    shortened to ``DETAIL_WIDTH`` and only when it changed."""
    shown = [""]

    def on_line(line: str) -> None:
        detail = summarise(line)
        if detail is None:
            return
        detail = shorten(detail)
        if detail and detail != shown[0]:
            shown[0] = detail
            progress.advance(label, 0, detail)

    return on_line
