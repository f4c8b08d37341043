"""CLI commands of the 'lock' group (thin layer; logic lives in the library)."""

from __future__ import annotations

from pathlib import Path

import typer

from pyrepro.cli._common import CliProgress, LockStrategy, emit_json, table
from pyrepro.errors import IntegrityError, ResolutionError, UsageError


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""

    @app.command("lock")
    def lock_cmd(
        names: list[str] = typer.Argument(None, help="Models to lock (names or aliases)"),
        all_: bool = typer.Option(False, "--all", help="Lock every model in the registry"),
        check: bool = typer.Option(False, "--check",
                                   help="Verify offline that each lock matches its pyproject and has hashes"),
        strategy_: LockStrategy | None = typer.Option(None, "--strategy",
                                                      help="First strategy to try (later ones follow in that order; "
                                                           "default: date-bounded when the submission date is "
                                                           "known, else as-declared)"),
        timeout: float = typer.Option(20.0, "--timeout", help="Minutes per resolver attempt"),
        aarch64: bool = typer.Option(True, "--aarch64/--no-aarch64",
                                     help="Also lock linux aarch64 where wheels allow"),
        project: Path | None = typer.Option(None, "--project", help="Lock a folder with a pyproject.toml "
                                            "instead of a registry model (needs --python)"),
        python: str | None = typer.Option(None, "--python", help="Target Python (major.minor) for --project"),
        submitted: str | None = typer.Option(None, "--submitted",
                                             help="Submission date (YYYY-MM-DD) for --project"),
        reuse_from: str | None = typer.Option(None, "--reuse-from",
                                              help="Copy this model's lock instead of resolving (only when "
                                                   "both pyprojects have the same pdm content hash)"),
        uv_first: bool = typer.Option(False, "--uv-first",
                                      help="Lock from uv's resolution for this machine first, as reproduce does "
                                           "(pdm only where uv cannot answer); the lock is for one target"),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output"),
    ) -> None:
        """Lock models with pdm: as declared, then date-bounded, then error-guided relaxation."""
        strategy = strategy_.value if strategy_ is not None else None
        import datetime as dt

        from pyrepro import lock
        from pyrepro.paths import Paths
        from pyrepro.registry import load_registry

        if strategy is not None and strategy not in lock.STRATEGIES:
            raise UsageError(f"--strategy {strategy!r}: use one of {', '.join(lock.STRATEGIES)}")
        if project is not None:
            if names or all_:
                raise UsageError("--project locks one folder; do not also give model names or --all")
            if check:
                problems = lock.check_lock_dir(project)
                _report_check({project.name: problems}, as_json)
                return
            if python is None:
                raise UsageError("--project needs --python MAJOR.MINOR (e.g. --python 3.10)")
            try:
                date = dt.date.fromisoformat(submitted) if submitted else None
            except ValueError as exc:
                raise UsageError(f"--submitted {submitted!r}: write a date like 2023-05-02") from exc
            req = lock.LockRequest(name=project.name, project_dir=project.resolve(), python=python,
                                   submitted=date)
            outcome = lock.lock_request(req, progress=CliProgress(enabled=not as_json), start=strategy,
                                        timeout=timeout * 60, aarch64=aarch64, uv_first=uv_first)
            _report([outcome], as_json)
            return
        paths = Paths.discover()
        registry = load_registry(paths.models)
        if all_ and names:
            raise UsageError("give model names or --all, not both")
        if not all_ and not names and not check:
            raise UsageError("name the models to lock, or pass --all", hint="pyrepro lock cfid matminer_rf")
        specs = list(registry) if (all_ or not names) else registry.select(list(names))
        if check:
            _report_check({s.name: lock.check_lock(s) for s in specs}, as_json)
            return
        progress = CliProgress(enabled=not as_json)
        outcomes = []
        if reuse_from is not None:
            if all_ or not names:
                raise UsageError("--reuse-from copies one model's lock to the named models; name them")
            source = registry.select([reuse_from])[0]
            for spec in specs:
                outcomes.append(lock.reuse_lock(spec, source, progress=progress))
            _report(outcomes, as_json)
            return
        for spec in specs:
            outcomes.append(lock.lock_model(spec, paths, progress=progress, start=strategy,
                                            timeout=timeout * 60, aarch64=aarch64, uv_first=uv_first))
        _report(outcomes, as_json)


def _report(outcomes: list, as_json: bool) -> None:  # type: ignore[type-arg]
    if as_json:
        emit_json([o.to_json() for o in outcomes])
    else:
        rows = [[o.name, str(o.category), o.label, o.strategy or "-", str(o.packages), f"{o.seconds:.0f}",
                 "; ".join(str(d) for d in o.drift) or "-"] for o in outcomes]
        typer.echo(table(rows, ["model", "cat", "outcome", "strategy", "packages", "seconds", "drift"]))
        if any(o.ok for o in outcomes):
            typer.echo("a lock's category counts once an environment builds from it: pyrepro build NAME")
        for o in outcomes:
            for s in o.steps:
                typer.echo(f"  {o.name}: {s.summary}: {s.reason}")
                if s.trigger:
                    typer.echo("    triggered by: " + s.trigger.strip().splitlines()[0])
            if o.category == 4:
                typer.echo(f"  {o.message}")
    failed = [o.name for o in outcomes if o.category == 4]
    if failed:
        raise ResolutionError(f"could not lock: {', '.join(failed)} (category 4; see each lock.toml)")


def _report_check(results: dict, as_json: bool) -> None:  # type: ignore[type-arg]
    if as_json:
        emit_json({name: [str(p) for p in probs] for name, probs in results.items()})
    else:
        for name, probs in results.items():
            typer.echo(f"{name}: {'ok' if not probs else f'{len(probs)} problem(s)'}")
            for p in probs:
                typer.echo(f"  {p}")
    bad = [n for n, p in results.items() if p]
    if bad:
        raise IntegrityError(f"lock check failed for: {', '.join(bad)}",
                             hint="relock with: pyrepro lock " + " ".join(bad))
