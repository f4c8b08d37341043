"""CLI commands of the registry group: models, generate, init, source (thin layer)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from pyrepro.cli._common import emit_json, table, warn
from pyrepro.paths import Paths

if TYPE_CHECKING:
    from pyrepro.registry import ModelSpec


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""

    @app.command("models")
    def models_cmd(as_json: bool = typer.Option(False, "--json", help="Machine-readable output")) -> None:
        """List the models of the registry."""
        from pyrepro.registry import load_registry

        reg = load_registry(Paths.discover().models)
        if as_json:
            emit_json([{"name": m.name, "aliases": list(m.aliases), "python": m.python, "gpu": m.gpu,
                        "benchmarks": list(m.benchmarks), "entry": list(m.entry)} for m in reg])
            return
        typer.echo(table([[m.name, ",".join(m.aliases), m.python, m.gpu, ",".join(m.benchmarks)] for m in reg],
                         ["name", "aliases", "python", "gpu", "benchmarks"]))

    @app.command("show")
    def show_cmd(
        name: str = typer.Argument(..., help="Model name or alias"),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output"),
    ) -> None:
        """Show one model's registry entry (source pin, entry, test mode, dependencies, predictions)."""
        from pyrepro import generate
        from pyrepro.registry import load_registry

        spec = load_registry(Paths.discover().models).get(name)
        data = spec_json(spec, generate.dependencies(spec))
        if as_json:
            emit_json(data)
            return
        for k, v in data.items():
            typer.echo(f"{k}: {v}")

    @app.command("generate")
    def generate_cmd(
        names: list[str] = typer.Argument(None, help="Models (default: all)"),
        check: bool = typer.Option(False, "--check", help="Fail, listing files, if a generated file differs"),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output"),
    ) -> None:
        """Regenerate pyproject.toml and default.nix from each model.toml."""
        from pyrepro import generate
        from pyrepro.registry import load_registry

        reg = load_registry(Paths.discover().models)
        specs = reg.select(list(names)) if names else list(reg)
        results = generate.generate(specs, check=check)
        if as_json:
            emit_json([{"path": str(r.path), "status": r.status} for r in results])
            return
        changed = [r for r in results if r.status == "written"]
        for r in changed:
            typer.echo(f"wrote {r.path}")
        typer.echo(f"{len(results)} generated files, {len(changed)} written"
                   + (" (all up to date)" if check else ""))

    @app.command("init")
    def init_cmd(
        folder: Path = typer.Argument(..., help="A contribution folder (JARVIS-Leaderboard or MatBench style)"),
        name: str = typer.Option(..., "--name", help="Lower-case model name"),
        python: str = typer.Option(None, "--python", help="Target Python (major.minor); default: from the "
                                   "submission's evidence (environment.yml, notebooks, scripts, date)"),
        models_dir: Path = typer.Option(None, "--models-dir", help="Where models/<name>/ goes (default: the project's models/)"),
        offline: bool = typer.Option(False, "--offline", help="Do not ask the package index (which Python has "
                                     "wheels for the declared pins)"),
        force: bool = typer.Option(False, "--force", help="Overwrite an existing model folder"),
        mirror: Path = typer.Option(None, "--mirror", help="Pinned mirror holding the folder (for a real source pin)"),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output"),
    ) -> None:
        """Scan a contribution folder and write a draft model.toml, pyproject.toml and default.nix."""
        from pyrepro import init as init_mod
        from pyrepro.errors import PyreproError

        if models_dir is not None:
            target = models_dir
        else:
            found = Paths.discover()
            if (note := found.outside_note()) is not None:
                warn(note)
            target = found.models
        paths_mirror = mirror
        if paths_mirror is None:
            try:
                paths_mirror = Paths.discover().mirror()
            except PyreproError:  # outside a checkout: no default mirror
                paths_mirror = None
        res = init_mod.init_model(folder, name=name, models_dir=target, python=python, force=force, mirror=paths_mirror,
                                  online=not offline)
        if as_json:
            emit_json(res.to_json())
            return
        for p in res.written:
            typer.echo(f"wrote {p}")
        if res.decisions is not None:
            typer.echo(f"python {res.decisions.python}: {res.decisions.python_reason}")
            typer.echo(f"gpu {res.decisions.gpu}: {res.decisions.gpu_reason}")
        for w in res.warnings:
            typer.echo(f"warning: {w}", err=True)

    source_app = typer.Typer(help="Pinned upstream sources: fetch a verified copy, verify or record the pins.",
                             no_args_is_help=True)
    app.add_typer(source_app, name="source")

    @source_app.command("fetch")
    def source_fetch_cmd(
        name: str = typer.Argument(..., help="Model name or alias"),
        mirror: Path = typer.Option(None, "--mirror", help="A mirror folder holding <repo-name>/<subdir> (default: ../shared/upstream if present)"),
        offline: bool = typer.Option(False, "--offline", help="Never download"),
        benchmarks: bool = typer.Option(False, "--benchmarks",
                                        help="Fetch the model's benchmark files instead (checked against benchmarks_nar_hash)"),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output"),
    ) -> None:
        """Obtain the model's pinned upstream folder (cache, mirror or download), tree id verified."""
        from pyrepro import sources
        from pyrepro.registry import load_registry

        paths = Paths.discover()
        spec = load_registry(paths.models).get(name)
        m = paths.mirror(mirror)
        if benchmarks:
            got = sources.obtain_benchmarks(spec, mirror=m, cache=paths.cache, online=not offline)
            what = f"benchmark files, NAR hash {got.tree} verified"
        else:
            got = sources.obtain_source(spec.source, mirror=m, cache=paths.cache, online=not offline)
            what = f"tree {got.tree} verified"
        if as_json:
            emit_json({"name": spec.name, "path": str(got.path), "origin": got.origin,
                       "kind": "benchmarks" if benchmarks else "source", "pin": got.tree,
                       "commit": spec.source.commit})
            return
        typer.echo(f"{spec.name}: {got.path} (from {got.origin}, {what})")

    @source_app.command("verify")
    def source_verify_cmd(
        names: list[str] = typer.Argument(None, help="Models (default: all)"),
        mirror: Path = typer.Option(None, "--mirror", help="Mirror holding <repo-name>/ at the pinned commit (default: ../shared/upstream)"),
        write: bool = typer.Option(False, "--write", help="Record the computed NAR hashes in model.toml (after review)"),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output"),
    ) -> None:
        """Check each model's tree id and the NAR hashes of its Nix fetches against the mirror."""
        from pyrepro import sources
        from pyrepro.errors import IntegrityError, NotFoundError
        from pyrepro.registry import load_registry

        paths = Paths.discover()
        reg = load_registry(paths.models)
        m = paths.mirror(mirror)
        if m is None:
            raise NotFoundError("no mirror: verify needs a local copy of the pinned repository",
                                hint="pass --mirror DIR (a folder holding <repo-name>/, e.g. ../shared/upstream)")
        specs = reg.select(list(names)) if names else list(reg)
        checks = [sources.check_pins(s, m) for s in specs]
        if write:
            for s, c in zip(specs, checks, strict=True):
                if not c.ok and sources.write_pin_hashes(s, c.hashes):
                    typer.echo(f"wrote {s.path}", err=True)
        if as_json:
            emit_json([c.to_json() for c in checks])
        else:
            for c in checks:
                typer.echo(f"{c.name}: tree {c.tree} ok; " + ("hashes ok" if c.ok else "; ".join(c.problems)))
        bad = [c.name for c in checks if not c.ok]
        if bad and not write:
            raise IntegrityError(f"recorded NAR hashes differ or are missing for: {', '.join(bad)}",
                                 hint="review, then run `pyrepro source verify --write`")


def spec_json(spec: ModelSpec, deps: list[str]) -> dict[str, object]:
    """The JSON view of a registry entry (``show --json``)."""
    from dataclasses import asdict

    src = asdict(spec.source)
    return {
        "name": spec.name, "upstream_name": spec.upstream_name, "aliases": list(spec.aliases),
        "title": spec.title, "python": spec.python, "gpu": spec.gpu, "benchmarks": list(spec.benchmarks),
        "submitted": spec.submitted.isoformat() if spec.submitted else None, "source": src,
        "extra_sources": [asdict(e) for e in spec.extra_sources], "entry": list(spec.entry),
        "test": {"args": list(spec.test.args), "description": spec.test.description},
        "tools": list(spec.tools), "dependencies": deps,
        "pins": [{"name": p.name, "spec": p.spec, "reason": p.reason} for p in spec.dependencies.pins],
        "predictions": [asdict(p) for p in spec.predictions], "notes": spec.notes, "path": str(spec.path),
    }
