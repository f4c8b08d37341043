"""Shared frozen records. Stage-specific records live in their stage module."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Location:
    """Where a fact comes from: a file, and optionally a line and a notebook cell.

    ``path`` is relative to the scanned root when one is known (posix separators).
    ``cell`` is the 0-based index among a notebook's cells; ``line`` is 1-based within the
    file, or within the cell for notebooks.
    """

    path: str
    line: int | None = None
    cell: int | None = None

    def __str__(self) -> str:
        s = self.path
        if self.cell is not None:
            s += f"[cell {self.cell}]"
        if self.line is not None:
            s += f":{self.line}"
        return s

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "cell": self.cell}
