"""CLI: ``pyrepro doctor`` (thin layer over ``pyrepro.doctor``)."""

from __future__ import annotations

from pathlib import Path

import typer

from pyrepro.cli._common import emit_json, table
from pyrepro.paths import cache_dir


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    def doctor_cmd(
        as_json: bool = typer.Option(False, "--json", help="Print the checks as JSON"),
        env_python: Path = typer.Option(None, "--env-python",
                                        help="A model environment's python: check CUDA in torch/TensorFlow"),
    ) -> None:
        """Report Nix, flakes, sandbox, graphviz, interpreters, GPU driver, disk and caches."""
        from pyrepro.doctor import run_doctor

        checks = run_doctor(cache_dir(), env_python=env_python)
        if as_json:
            emit_json({"checks": [c.to_json() for c in checks]})
            return
        typer.echo(table([[c.status, c.name, c.detail] for c in checks], ["status", "check", "detail"]))
        fixes = [c for c in checks if c.fix]
        if fixes:
            typer.echo("\nTo fix:")
            for c in fixes:
                typer.echo(f"  {c.name}: {c.fix}")
