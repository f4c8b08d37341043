"""CLI: ``pyrepro batch`` (thin layer over ``pyrepro.batch`` and ``pyrepro.engines``)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer

from pyrepro.cli._common import NO_SANDBOX_HELP, CliProgress, emit_json, table, warn


class EngineName(StrEnum):
    local = "local"
    slurm = "slurm"


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""

    @app.command("batch")
    def batch_cmd(
        source: Path = typer.Argument(..., help="A folder of contribution folders, or a manifest file (TOML: "
                                                "one submission table each: folder, name, date, benchmark)"),
        out: Path = typer.Option(None, "--out", help="The batch folder: results.jsonl, logs, report.html "
                                                     "(default: ./<source name>.batch); the same --out resumes"),
        engine: EngineName = typer.Option(EngineName.local, "--engine", help="local: a process pool on this "
                                          "machine; slurm: one job array (sbatch), then a gather job"),
        jobs: int = typer.Option(0, "--jobs", "-j", help="At most this many at once (local default: the "
                                                         "number of cores; slurm: the array's %K, default 16)"),
        test: bool = typer.Option(False, "--test", help="Also run each model's test mode where a patch series "
                                                        "gives one (reproduce --test)"),
        budget: float = typer.Option(10.0, "--budget", help="Minutes per submission (0: no limit); under "
                                                            "SLURM also the task's time limit, plus a margin"),
        timeout: float = typer.Option(15.0, "--timeout", help="Minutes per resolver attempt"),
        offline: bool = typer.Option(False, "--offline", help="Do not ask the package index while deciding Python"),
        chunk: str = typer.Option("", "--chunk", help="Only chunk I/N of the entries (0 <= I < N): N machines "
                                                      "that each take their own chunk cover the batch once"),
        retry_failed: bool = typer.Option(False, "--retry-failed", help="Run the failed and crashed ones again "
                                                                        "(passed ones never are)"),
        report_only: bool = typer.Option(False, "--report-only", help="Run nothing: rewrite report.html and "
                                                                      "report.md from results.jsonl"),
        wait: bool = typer.Option(True, "--wait/--no-wait", help="slurm: follow the jobs until the results are "
                                                                 "gathered (default), or return once submitted"),
        sbatch_arg: list[str] = typer.Option([], "--sbatch-arg", help="slurm: an #SBATCH line to add, e.g. "
                                             "--sbatch-arg=--partition=cpu (repeat for more)"),
        mirror: Path = typer.Option(None, "--mirror", help="Pinned mirror holding the folders (for real source pins)"),
        pdm_first: bool = typer.Option(False, "--pdm", help="Lock with pdm first (reproduce --pdm)"),
        no_sandbox: bool = typer.Option(False, "--no-sandbox", help=NO_SANDBOX_HELP),
        fail_on_failure: bool = typer.Option(False, "--fail-on-failure", help="Exit 1 unless every submission "
                                                                             "passed"),
        as_json: bool = typer.Option(False, "--json", help="The batch's record as JSON"),
    ) -> None:
        """Many submissions: each through reproduce, results appended as they finish, resumable; a report."""
        from pyrepro import batch
        from pyrepro.engines import engine as make_engine
        from pyrepro.paths import Paths

        entries, no_code = batch.load_entries(source)
        if chunk:
            entries = batch.chunk(entries, chunk)
        out_dir = out or batch.default_out(source)
        options = batch.Options(test=test, budget=budget * 60 if budget > 0 else None, online=not offline,
                                lock_timeout=timeout * 60, sandbox=not no_sandbox, uv_first=not pdm_first,
                                mirror=str(mirror.resolve()) if mirror else None)
        title = f"pyrepro batch: {source.resolve().name}"
        if report_only:
            outcome = batch.report_only(entries, out=out_dir, options=options, title=title, no_code=no_code)
        else:
            paths = Paths.discover()
            if (note := paths.outside_note()) is not None:
                warn(note)
            kw: dict[str, object] = {"jobs": jobs or None}
            if engine is EngineName.slurm:
                kw.update(wait=wait, sbatch_args=tuple(sbatch_arg))
            elif sbatch_arg or not wait:
                warn("--sbatch-arg and --no-wait are for --engine slurm; ignored")
            outcome = batch.run_batch(entries, out=out_dir, paths=paths, options=options,
                                      engine=make_engine(engine.value, **kw),
                                      progress=CliProgress(enabled=not as_json), retry_failed=retry_failed,
                                      no_code=no_code, title=title)
        if as_json:
            emit_json(outcome.to_json())
        else:
            _print(outcome)
        if fail_on_failure and outcome.engine is not None and not outcome.engine.finished:
            return
        if fail_on_failure and not outcome.all_passed:
            s = outcome.summary["statuses"]
            raise batch.BatchFailures(f"{s['passed']} of {outcome.summary['total']} submissions passed",
                                      hint=f"see {outcome.reports[0] if outcome.reports else out_dir}")


def _print(outcome: object) -> None:
    from pyrepro.batch import BatchOutcome

    assert isinstance(outcome, BatchOutcome)
    s = outcome.summary
    rows = [[r["name"], r["status"], r.get("stage") or "", "" if r.get("category") is None else str(r["category"]),
             "" if r.get("seconds") is None else f"{float(r['seconds']):.1f}",
             "" if r["status"] == "passed" else str(r.get("reason") or "")[:90]] for r in s["rows"]]
    typer.echo(table(rows, ["submission", "status", "stage", "cat", "seconds", "reason"]))
    st = s["statuses"]
    typer.echo(f"{s['total']} submissions: " + ", ".join(f"{v} {k}" for k, v in st.items() if v)
               + (f"; {len(outcome.skipped)} had a result already (resumed)" if outcome.skipped and outcome.ran else ""))
    if outcome.engine is not None and not outcome.engine.finished:
        typer.echo(f"submitted: jobs {', '.join(outcome.engine.jobs)}; {outcome.engine.note}")
    for note in outcome.notes:
        typer.echo(f"note: {note}")
    if outcome.reports:
        typer.echo(f"results: {outcome.out / 'results.jsonl'}; report: {outcome.reports[0]} and {outcome.reports[1]}")
