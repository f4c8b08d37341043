"""CLI commands: build, gc, check-imports, run, report (thin layer over the backends and run)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import typer

from pyrepro.cli._common import NO_SANDBOX_HELP, Backend, CliProgress, DataKind, emit_json, sandbox_flag, table


def _split(values: list[str] | None) -> list[str]:
    return [v for item in (values or []) for v in item.split(",") if v]


def _whereabouts(r: Any) -> str:
    """Where a run (a ``run.RunRecord``) left its files: ``record PATH; predictions PATH (N rows) |
    no predictions written; logs DIR``."""
    record, data = r.record_path, r.data
    pred = data.get("predictions") or {}
    rows = f" ({pred['rows']} rows)" if isinstance(pred.get("rows"), int) else f" ({pred['error']})" \
        if pred.get("error") else ""
    preds = f"predictions {record.parent / 'out' / pred['file']}{rows}" if pred.get("file") else \
        "no predictions written"
    return f"record {record}; {preds}; logs {record.parent / 'logs'}"


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""

    @app.command("build")
    def build_cmd(
        names: list[str] = typer.Argument(..., help="Models to build"),
        backend_: Backend = typer.Option(Backend.local, "--backend", help="Where to build"),
        mirror: Path = typer.Option(None, "--mirror", help="Folder holding the pinned upstream repository"),
        no_sandbox: bool = typer.Option(False, "--no-sandbox", help=NO_SANDBOX_HELP),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output"),
    ) -> None:
        """Build models: a hash-checked environment from pdm.lock plus the patched source."""
        sandbox_flag(no_sandbox)
        backend = backend_.value
        from pyrepro.backends import local, nix
        from pyrepro.errors import UsageError
        from pyrepro.paths import Paths
        from pyrepro.registry import load_registry

        paths = Paths.discover()
        specs = load_registry(paths.models).select(list(names))
        results: list[dict[str, object]] = []
        for s in specs:
            if backend == "local":
                results.append(local.build(s, paths, mirror=mirror, progress=CliProgress(enabled=not as_json),
                                           repair=True).to_json())
            elif backend == "nix":
                results.append(nix.build(s, paths.root).to_json())
            else:
                raise UsageError(f"--backend {backend!r}: use local or nix")
        if as_json:
            emit_json(results)
            return
        for r in results:
            if r.get("backend") == "nix":
                typer.echo(f"{r['name']}: {r['out_path']}")
            else:
                hit = "cache hit" if r["env_cached"] and r["src_cached"] else \
                    "restaged source" if r["env_cached"] else "built"
                typer.echo(f"{r['name']}: {hit} in {r['seconds']} s; launcher {r['launcher']}")

    @app.command("gc")
    def gc_cmd(
        names: list[str] = typer.Argument(None, help="Also remove these models' environments and staged sources"),
        everything: bool = typer.Option(False, "--all", help="Remove every model's environment and staged source"),
        dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would be removed"),
    ) -> None:
        """Remove environments and staged sources that no registry entry references, and downloaded
        files no lock names; with NAMES or --all, also those of the named (or every) model (--all:
        the whole download store). A later build makes them again."""
        from pyrepro.backends import local
        from pyrepro.paths import Paths
        from pyrepro.registry import load_registry

        paths = Paths.discover()
        removed = local.gc(paths, list(load_registry(paths.models)), dry_run=dry_run, remove=tuple(names or ()),
                           everything=everything)
        for p in removed:
            typer.echo(("would remove " if dry_run else "removed ") + str(p))
        what = "entries" if names or everything else "unreferenced entries"
        typer.echo(f"{len(removed)} {what}{' (dry run)' if dry_run else ''}")

    @app.command("check-imports")
    def check_imports_cmd(
        name: str = typer.Argument(..., help="Model"),
        no_sandbox: bool = typer.Option(False, "--no-sandbox", help=NO_SANDBOX_HELP),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output"),
    ) -> None:
        """Import every module the scan found, and every module of the model's distributions, in its environment."""
        sandbox_flag(no_sandbox)
        from pyrepro import repair, run
        from pyrepro.backends import local
        from pyrepro.errors import BuildError
        from pyrepro.paths import Paths
        from pyrepro.registry import load_registry

        paths = Paths.discover()
        spec = load_registry(paths.models).get(name)
        built = local.build(spec, paths, progress=CliProgress(enabled=not as_json))
        rows = run.check_imports(spec, built)
        bad = [r for r in rows if r[1] != "ok"]
        accepted = repair.accept_branches(rows, run.branch_only_modules(
            spec, built, failing=[r[0] for r in bad])) if bad else None
        rec = {"model": spec.name, "env_key": built.env_key, "results": [list(r) for r in rows],
               "accepted": [list(m) for m in accepted.modules] if accepted else []}
        out = paths.cache / "imports" / f"{spec.name}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.{os.getpid()}")
        tmp.write_text(json.dumps(rec, indent=2) + "\n")
        os.replace(tmp, out)
        if as_json:
            emit_json(rec)
        else:
            typer.echo(table([list(r) for r in rows], ["module", "import", "message"]))
        if not rows:  # an environment that imports nothing proves nothing
            raise BuildError(f"{spec.name}: the import check had no module to import (the scan found no "
                             "third-party import and the model has no distributions)",
                             hint=f"check that models/{spec.name}/model.toml points at the model's code "
                                  "([source] subdir, [dependencies] scanned)")
        if accepted is not None:  # the same verdict as reproduce's import stage
            if not as_json:
                typer.echo(f"imported only where a run may never go (under a run-time condition, or in a function "
                           f"nothing refers to or whose module the code tries under except ImportError), and not "
                           f"importable: {accepted.summary}")
        elif bad:
            raise BuildError(f"{len(bad)} of {len(rows)} modules fail to import in {spec.name}'s environment")

    @app.command("run")
    def run_cmd(
        target: str = typer.Argument(..., help="A model, or a benchmark (e.g. exfoliation) to run every model serving it"),
        test: bool = typer.Option(False, "--test", help="Test mode: a cheap run (few epochs/estimators)"),
        data_: DataKind = typer.Option(DataKind.fixture, "--data", help="fixture (offline, proves executability) or "
                                       "jarvis (real data)"),
        backend_: Backend = typer.Option(Backend.local, "--backend", help="local (nix: build with 'pyrepro build "
                                         "--backend nix' and run with 'nix run .#<name>')"),
        only: list[str] = typer.Option(None, "--only", help="Run only these models (comma-separated)"),
        exclude: list[str] = typer.Option(None, "--exclude", help="Skip these models (comma-separated)"),
        benchmark: str = typer.Option(None, "--benchmark", help="Benchmark for a single model (default: its first)"),
        gpu: bool = typer.Option(False, "--gpu", help="Use the host's NVIDIA driver when found"),
        mirror: Path = typer.Option(None, "--mirror", help="Folder holding the pinned upstream repository"),
        timeout: float = typer.Option(None, "--timeout", help="Minutes per model run"),
        no_sandbox: bool = typer.Option(False, "--no-sandbox", help=NO_SANDBOX_HELP),
        draft: bool = typer.Option(False, "--draft", help="Also run unreviewed drafts (draft = true in model.toml, "
                                   "as 'pyrepro init' writes them): their code and pins nobody has reviewed"),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output"),
    ) -> None:
        """Run a model or every model of a benchmark, record provenance and give a verdict."""
        sandbox_flag(no_sandbox)
        backend, data = backend_.value, data_.value
        from pyrepro import run
        from pyrepro.errors import NotFoundError, RunError, UsageError
        from pyrepro.paths import Paths
        from pyrepro.registry import load_registry

        if backend != "local":
            raise UsageError("runs use the local backend here; a Nix build runs with 'nix run .#<name>'")
        paths = Paths.discover()
        reg = load_registry(paths.models)
        if not reg.for_benchmark(run.resolve_benchmark(target)):
            try:
                reg.get(target)
            except NotFoundError as exc:  # no model, no benchmark: a misspelt benchmark gets its suggestion
                served = {b for s in reg for b in s.benchmarks}
                err = run.unknown_benchmark(target, served, f"{target!r} is neither a model nor a benchmark")
                if err.hint and err.hint.startswith("did you mean"):
                    raise err from exc
                raise
        bench, specs = run.select(reg, target, only=_split(only), exclude=_split(exclude))
        drafts = [s.name for s in specs if s.draft]
        if drafts and not draft:  # code nobody reviewed runs only when asked for by name
            fix = ("review models/<name>/model.toml (its code, pins and notes), then delete its 'draft = true' line; "
                   "or pass --draft to run it unreviewed")
            if not bench or len(drafts) == len(specs):
                raise UsageError(f"{', '.join(drafts)}: an unreviewed draft (draft = true in model.toml, written by "
                                 "'pyrepro init'); not run", hint=fix)
            typer.echo(f"not run, unreviewed drafts: {', '.join(drafts)} ({fix})", err=True)
            specs = [s for s in specs if not s.draft]
        progress = CliProgress(enabled=not as_json)
        records = run.run_many(specs, paths, benchmark=bench or benchmark, test=test, data_kind=data, use_gpu=gpu,
                               mirror=mirror, progress=progress, timeout=timeout * 60 if timeout else None)
        # one model stopped by an error: ``main`` says it (and its hint) on stderr, once
        raised = records[0].cause if len(records) == 1 and records[0].cause is not None else None
        if as_json:
            emit_json([r.to_json() for r in records])
        else:
            rows = []
            for r in records:
                v = r.verdict
                # an error is said once, on stderr (below); the table points at it
                rows.append([r.model, r.benchmark, str(r.data.get("exit_code", "-")), str(r.data.get("seconds", "-")),
                             v.tier if v else "failed", (v.reason if v else "(the error below)" if r.error else "")[:90]])
            typer.echo(table(rows, ["model", "benchmark", "exit", "seconds", "verdict", "reason"]))
            for r in records:  # where each run left its predictions, logs and record
                if r.record_path and r.record_path.name == "record.json":
                    typer.echo(f"{r.model}: {_whereabouts(r)}")
            if records and records[0].data.get("data", {}).get("kind") == "fixture":
                typer.echo("data: pyrepro fixture (offline); it proves executability, never a numerical result")
            for r in records:
                if r.error and r.cause is not raised:
                    typer.echo(f"{r.model}: {r.error}", err=True)
                elif not r.ok and r.record_path.name == "record.json":
                    tail = r.data.get("logs", {}).get("stderr_tail", "") if r.data.get("exit_code") else ""
                    if tail:  # what the model said last, as a failing tool's error shows it
                        typer.echo(f"{r.model}: exit {r.data['exit_code']}; the end of its stderr:", err=True)
                        typer.echo("\n".join("  " + ln for ln in tail.splitlines()), err=True)
                    typer.echo(f"{r.model}: logs in {r.record_path.parent / 'logs'}", err=True)
        failed = [r.model for r in records if not r.ok]
        if raised is not None:
            raise raised  # one model: its own error, exit code and hint (integrity 5, patch 10, ...)
        for r in records:
            if r.cause is not None and r.cause.hint:
                typer.echo(f"{r.model}: hint: {r.cause.hint}", err=True)
        if failed:
            raise RunError(f"{len(failed)} of {len(records)} runs did not pass: {', '.join(failed)}")

    @app.command("report")
    def report_cmd(
        out: Path = typer.Option(None, "--out", help="Markdown file (default docs/STATUS.md; JSON twin next to it)"),
        as_json: bool = typer.Option(False, "--json", help="Print the JSON on stdout"),
        no_refresh: bool = typer.Option(False, "--no-refresh",
                                        help="Do not update models/<name>/last-run.json from this machine's cache"),
        html: Path = typer.Option(None, "--html", help="Also write one self-contained HTML page: the status table "
                                  "and each model's dependency graph"),
        check: bool = typer.Option(False, "--check", help="Write nothing; fail (exit 5, naming the lines) when the "
                                   "report differs from what the committed records generate (the time aside)"),
    ) -> None:
        """Write docs/STATUS.md and docs/status.json from the registry, locks, patches and run summaries.

        First updates the committable run summaries models/<name>/last-run.json from this
        machine's latest run records and import checks (unless --no-refresh)."""
        from pyrepro import report
        from pyrepro.paths import Paths
        from pyrepro.registry import load_registry

        paths = Paths.discover()
        md = out or paths.root / "docs" / "STATUS.md"
        registry = load_registry(paths.models)
        if check:  # the file is only ever generated: a hand edit, or a generator change not yet run, fails
            report.check_report(registry, paths, md, md.with_name("status.json"))
            typer.echo(f"{md} and {md.with_name('status.json')} are what `pyrepro report` generates")
            return
        rep = report.write_report(registry, paths, md, md.with_name("status.json"), refresh=not no_refresh)
        if html is not None:
            from pyrepro import report_html

            report_html.write_html(rep, registry, paths, html)
        if as_json:
            emit_json(rep | {"html": str(html) if html is not None else None})
        else:
            typer.echo(f"wrote {md} and {md.with_name('status.json')}" + (f" and {html}" if html is not None else ""))
