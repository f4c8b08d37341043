"""CLI commands of the registry group: models, generate, init, source (thin layer)."""

from __future__ import annotations

from pathlib import Path

import typer

from pyrepro.cli._common import emit_json, table


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""

    @app.command("models")
    def models_cmd(as_json: bool = typer.Option(False, "--json", help="Machine-readable output")) -> None:
        """List the models of the registry."""
        from pyrepro.paths import Paths
        from pyrepro.registry import load_registry

        reg = load_registry(Paths.discover().models)
        if as_json:
            emit_json([{"name": m.name, "aliases": list(m.aliases), "python": m.python, "gpu": m.gpu,
                        "benchmarks": list(m.benchmarks), "entry": list(m.entry)} for m in reg])
            return
        typer.echo(table([[m.name, ",".join(m.aliases), m.python, m.gpu, ",".join(m.benchmarks)] for m in reg],
                         ["name", "aliases", "python", "gpu", "benchmarks"]))

    @app.command("generate")
    def generate_cmd(
        names: list[str] = typer.Argument(None, help="Models (default: all)"),
        check: bool = typer.Option(False, "--check", help="Fail, listing files, if a generated file differs"),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output"),
    ) -> None:
        """Regenerate pyproject.toml and default.nix from each model.toml."""
        from pyrepro import generate
        from pyrepro.paths import Paths
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
        python: str = typer.Option("3.10", "--python", help="Target Python (major.minor)"),
        models_dir: Path = typer.Option(None, "--models-dir", help="Where models/<name>/ goes (default: the project's models/)"),
        force: bool = typer.Option(False, "--force", help="Overwrite an existing model folder"),
        mirror: Path = typer.Option(None, "--mirror", help="Pinned mirror holding the folder (for a real source pin)"),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output"),
    ) -> None:
        """Scan a contribution folder and write a draft model.toml, pyproject.toml and default.nix."""
        from pyrepro import init as init_mod
        from pyrepro.errors import PyreproError
        from pyrepro.paths import Paths

        target = models_dir if models_dir is not None else Paths.discover().models
        paths_mirror = mirror
        if paths_mirror is None:
            try:
                dm = Paths.discover().default_mirror()
                paths_mirror = dm if dm.is_dir() else None
            except PyreproError:  # outside a checkout: no default mirror
                paths_mirror = None
        res = init_mod.init_model(folder, name=name, models_dir=target, python=python, force=force, mirror=paths_mirror)
        if as_json:
            emit_json(res.to_json())
            return
        for p in res.written:
            typer.echo(f"wrote {p}")
        for w in res.warnings:
            typer.echo(f"warning: {w}", err=True)

    @app.command("source")
    def source_cmd(
        name: str = typer.Argument(..., help="Model name"),
        mirror: Path = typer.Option(None, "--mirror", help="A mirror folder holding the pinned repository tree"),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output"),
    ) -> None:
        """Obtain the model's pinned upstream folder (cache, mirror or download) and verify its tree id."""
        from pyrepro import sources
        from pyrepro.paths import Paths
        from pyrepro.registry import load_registry

        paths = Paths.discover()
        spec = load_registry(paths.models).get(name)
        mirror_dir = mirror if mirror is not None else (paths.default_mirror() if paths.default_mirror().is_dir() else None)
        path = sources.obtain_source(spec.source, mirror=mirror_dir, cache=paths.cache)
        if as_json:
            emit_json({"name": spec.name, "path": str(path), "tree": spec.source.tree, "commit": spec.source.commit})
            return
        typer.echo(f"{spec.name}: {path} (tree {spec.source.tree} verified)")
