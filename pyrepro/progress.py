"""A progress seam: the library reports, the CLI decides how to show it.

Library code takes ``progress: Progress = NULL_PROGRESS`` and calls ``progress.start(label,
total)``, ``progress.advance(label, n, detail)`` and ``progress.finish(label)``. The CLI
passes a rich progress bar on a terminal and a line printer otherwise.
"""

from __future__ import annotations

from typing import Protocol


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
