"""CLI: ``pyrepro reproduce`` (thin layer over ``pyrepro.reproduce``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from pyrepro.cli._common import NO_SANDBOX_HELP, CliProgress, emit_json, sandbox_flag, table, warn


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""

    @app.command("reproduce")
    def reproduce_cmd(
        folder: Path = typer.Argument(..., help="A submission folder (JARVIS-Leaderboard or MatBench style)"),
        name: str = typer.Option(None, "--name", help="Model name (default: from the folder name)"),
        python: str = typer.Option(None, "--python", help="Target Python (default: from the submission's evidence)"),
        test: bool = typer.Option(False, "--test", help="Also run the model's test mode when a patch series gives one"),
        offline: bool = typer.Option(False, "--offline", help="Do not ask the package index while deciding Python"),
        force: bool = typer.Option(False, "--force", help="Rewrite models/<name>/ even if it describes another folder"),
        mirror: Path = typer.Option(None, "--mirror", help="Pinned mirror holding the folder (for a real source pin)"),
        timeout: float = typer.Option(15.0, "--timeout", help="Minutes per resolver attempt"),
        budget: float = typer.Option(10.0, "--budget", help="Minutes for the whole reproduction (0: no limit); "
                                                            "when it runs out, the stage says so"),
        pdm_first: bool = typer.Option(False, "--pdm", help="Lock with pdm for every target first (slower); "
                                                            "by default a lock is uv's resolution for this machine "
                                                            "first, pdm where uv cannot answer"),
        no_sandbox: bool = typer.Option(False, "--no-sandbox", help=NO_SANDBOX_HELP),
        as_json: bool = typer.Option(False, "--json", help="The record as JSON"),
    ) -> None:
        """init -> lock -> build -> import check (-> test run): a verified environment, no human step."""
        sandbox_flag(no_sandbox)
        from pyrepro import reproduce as rep
        from pyrepro.paths import Paths

        paths = Paths.discover()
        if (note := paths.outside_note()) is not None:
            warn(note)
        result = rep.reproduce(folder, paths=paths, name=rep.check_name(name) if name else None, python=python,
                               test=test, online=not offline, force=force, mirror=mirror, lock_timeout=timeout * 60,
                               progress=CliProgress(enabled=not as_json), budget=budget * 60 if budget > 0 else None, uv_first=not pdm_first)
        if as_json:
            emit_json(result.to_json())
        else:
            stop = result.stopped_at
            # the error that stopped it is said once, on stderr, by ``pyrepro.cli.main`` ("error: ...",
            # "hint: ..."): the table and the last line point at it instead of saying it again
            said = _said_below(stop, result.error)
            rows = [[s.name, s.status, f"{s.seconds:.1f}", ("(the error below)" if s is stop and said else
                                                            s.detail if s.category is None
                                                            else f"[cat {s.category}] {s.detail}")[:110]]
                    for s in result.stages]
            typer.echo(table(rows, ["stage", "status", "seconds", "detail"]))
            if result.python:
                typer.echo(f"python {result.python}: {result.python_reason or 'as model.toml says (no reason recorded)'}")
            for r in result.relaxed:
                typer.echo(f"relaxed: {r}")
            if stop is not None:
                hinted = result.error is not None and stop.next_step == (result.error.hint or "")
                typer.echo(f"stopped at {stop.name}" + ("" if hinted else f"; next step: {stop.next_step}"))
        if result.error is not None:
            raise result.error


def _said_below(stop: Any, error: Any) -> bool:
    """Whether the failed stage's detail is the error ``main`` prints (as written, or the gist a
    table shows of a tool's long output): then the table does not repeat it. A detail that adds to
    the error (the time budget ran out during it) stays."""
    if stop is None or error is None:
        return False
    from pyrepro.reproduce import gist

    text = str(error)
    return stop.detail.strip() in (text.strip(), gist(text), gist(text).strip())
