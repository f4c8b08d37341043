"""CLI commands of the 'doctor' group (thin layer; logic lives in the library)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""
