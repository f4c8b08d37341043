"""CLI: ``pyrepro ci github`` and ``pyrepro ci verdict`` (thin layer over ``pyrepro.ci_github``)."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from pyrepro.cli._common import emit_json, warn


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""
    ci = typer.Typer(help="Continuous integration for a benchmark platform's repository.", no_args_is_help=True)
    app.add_typer(ci, name="ci")

    @ci.command("github")
    def github_cmd(
        out: Path = typer.Option(Path(".github/workflows"), "--out", help="Where to write the two workflows"),
        contributions: str = typer.Option("contributions", "--contributions",
                                          help="The folder of contribution folders, relative to the repository root"),
        install: str = typer.Option("", "--install", help="The pip requirement that installs pyrepro on the runner "
                                                          "(default: the VCS URL and commit this pyrepro came from, "
                                                          "else pyrepro==<version>)"),
        timeout: int = typer.Option(15, "--timeout", help="Minutes for one gate job"),
        budget: int = typer.Option(11, "--budget", help="Minutes for one reproduction (inside --timeout)"),
        cron: str = typer.Option("23 3 * * 0", "--cron", help="When the back-catalogue runs (UTC, cron syntax)"),
        max_jobs: int = typer.Option(256, "--max-jobs", help="Back-catalogue jobs per run (at most 256)"),
        jobs: int = typer.Option(2, "--jobs", help="Submissions at once on one back-catalogue runner"),
        as_json: bool = typer.Option(False, "--json", help="What was written, as JSON"),
    ) -> None:
        """Write the submission gate (pull requests) and the back-catalogue (scheduled) workflows."""
        from pyrepro import ci_github

        settings = ci_github.Settings(contributions=contributions, install=install, timeout=timeout, budget=budget,
                                      cron=cron, max_jobs=max_jobs, jobs=jobs)
        written = ci_github.write_workflows(settings, out)
        spec = install or ci_github.default_install()
        if as_json:
            emit_json({"written": [str(p) for p in written], "install": spec, "contributions": contributions})
            return
        for p in written:
            typer.echo(f"wrote {p}")
        typer.echo(f"runners install pyrepro with: pip install '{spec}'")
        if spec.startswith("pyrepro=="):
            warn(f"'{spec}' must be installable from the runner's index; pass --install 'pyrepro @ "
                 "git+https://…@<commit>' otherwise")

    @ci.command("verdict")
    def verdict_cmd(
        record: Path = typer.Argument(..., help="The output of 'pyrepro reproduce DIR --json'"),
        folder: str = typer.Option("", "--folder", help="The contribution folder (for the messages)"),
        summary: Path = typer.Option(None, "--summary", help="Append the verdict (markdown) to this file: "
                                                             "$GITHUB_STEP_SUMMARY"),
        as_json: bool = typer.Option(False, "--json", help="The verdict as JSON"),
    ) -> None:
        """The gate's verdict on a reproduction record: a job summary, an annotation, and the exit code
        (0 when it passed; else 1, naming the stage it stopped at and the next step)."""
        from pyrepro import ci_github

        v = ci_github.verdict(ci_github.read_envelope(record), folder)
        target = summary or (Path(os.environ["GITHUB_STEP_SUMMARY"]) if os.environ.get("GITHUB_STEP_SUMMARY")
                             else None)
        if target is not None:
            with open(target, "a", encoding="utf-8") as f:
                f.write(v.markdown + "\n")
        if as_json:
            emit_json(v.to_json())
        else:
            typer.echo(v.annotation())
            if not summary:
                typer.echo(v.markdown)
        if not v.ok:
            raise ci_github.GateFailed(f"{v.folder or 'the submission'} stopped at {v.stage or 'the start'}: "
                                       f"{v.reason[:500]}", hint=v.next_step or None)
