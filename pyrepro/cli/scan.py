"""CLI: ``pyrepro scan`` (thin layer over ``pyrepro.scan``)."""

from __future__ import annotations

from pathlib import Path

import typer

from pyrepro.cli._common import emit_json, table


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""

    @app.command("scan")
    def scan_cmd(
        path: Path = typer.Argument(..., help="A contribution folder (or one file)"),
        python: str = typer.Option("3.11", "--python", help="Target Python (major.minor) for the stdlib list"),
        pyenv: list[Path] = typer.Option(None, "--pyenv", help="site-packages folder(s) to resolve names from"),
        mapping: Path = typer.Option(None, "--mapping", help="A TOML file (e.g. a model.toml) whose [mapping] "
                                     "table is the first resolver"),
        no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the per-file scan cache"),
        thorough: bool = typer.Option(None, "--thorough/--fast", help="Parse every .py file in full (reports "
                                      "syntax errors anywhere), or only the statements that can hold imports "
                                      "(same imports, faster). Default: in full below 2 MB of Python"),
        as_json: bool = typer.Option(False, "--json", help="The documented JSON contract (docs/scan.md)"),
    ) -> None:
        """Find the third-party imports of a contribution (never executing it) and their distributions."""
        from pyrepro.registry import load_mapping
        from pyrepro.scan import scan_path

        table_ = load_mapping(mapping) if mapping is not None else None
        res = scan_path(path, python=python, pyenv=tuple(pyenv or ()), mapping=table_, cache=not no_cache,
                        thorough=thorough)
        if as_json:
            emit_json(res.to_json())
            return
        rows = []
        for i in res.imports:
            first = i.locations[0]
            more = f" (+{len(i.locations) - 1})" if len(i.locations) > 1 else ""
            dist = i.distribution or (f"{i.guess}?" if i.guess else "UNRESOLVED")
            kind = i.kind + (f" ({i.marker})" if i.marker else "")
            rows.append([i.module, dist, i.resolved_with, kind, f"{first}{more}"])
        if rows:
            typer.echo(table(rows, ["module", "distribution", "resolved with", "kind", "first seen"]))
        else:
            typer.echo("no third-party imports found")
        typer.echo(f"\n{res.files} code files, {res.lines} lines; required: {', '.join(res.required) or '-'}")
        if res.optional_distributions:
            typer.echo("optional: " + ", ".join(res.optional_distributions))
        for dist, marker in res.conditional.items():
            typer.echo(f"conditional: {dist}; {marker}")
        for i in res.guesses:
            typer.echo(f"guess (not a dependency until reviewed): {i.module} -> {i.guess}?")
        for i in res.unresolved:
            typer.echo(f"unresolved: {i.module}: {i.note}")
        if res.local:
            typer.echo("local modules: " + ", ".join(f"{m.module} ({m.path})" for m in res.local))
        if res.entry_points:
            typer.echo("entry points: " + ", ".join(f"{e.interpreter} {e.script} ({e.location})" for e in res.entry_points))
        tools = sorted({t.name for t in res.runtime_tools})
        if tools:
            typer.echo("runtime tools: " + ", ".join(tools))
        if res.declared:
            typer.echo("undeclared: " + (", ".join(res.undeclared) or "-"))
            typer.echo("declared but unused: " + (", ".join(res.unused_declared) or "-"))
        for w in (*res.warnings, *res.python2_evidence):
            typer.echo(f"warning: {w}", err=True)
