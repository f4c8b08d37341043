"""CLI command: export (thin layer over pyrepro.export)."""

from __future__ import annotations

from pathlib import Path

import typer

from pyrepro.cli._common import NO_SANDBOX_HELP, CliProgress, emit_json, sandbox_flag


def register(app: typer.Typer) -> None:
    """Add this command to ``app``."""

    @app.command("export")
    def export_cmd(
        name: str = typer.Argument(..., help="Model"),
        out: Path = typer.Option(None, "--out", help="Archive to write (default: <cache>/exports/<name>-<tag>.oci.tar)"),
        mirror: Path = typer.Option(None, "--mirror", help="Folder holding the pinned upstream repository"),
        no_sandbox: bool = typer.Option(False, "--no-sandbox", help=NO_SANDBOX_HELP),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output"),
    ) -> None:
        """Write the model's verified environment, its interpreter, every shared library they need and
        the patched source as an OCI image archive (podman load / docker load); entry point: the
        model's uniform CLI."""
        sandbox_flag(no_sandbox)
        from pyrepro.export import export_model
        from pyrepro.paths import Paths
        from pyrepro.registry import load_registry

        paths = Paths.discover()
        spec = load_registry(paths.models).get(name)
        done = export_model(spec, paths, out=out, mirror=mirror, progress=CliProgress(enabled=not as_json))
        if as_json:
            emit_json(done.to_json())
            return
        typer.echo(f"{done.model}: {done.archive} ({done.size / 1e6:.0f} MB), image {done.reference}, "
                   f"manifest {done.manifest_digest}")
        for layer in done.layers:
            typer.echo(f"  layer {layer['what']:12} {layer['size'] / 1e6:8.1f} MB  {layer['digest']}")
        for m in done.record["libraries"]["missing"]:
            typer.echo(f"warning: {m['name']} (needed by {m['needed_by']}) was found nowhere; the image lacks it",
                       err=True)
        typer.echo(f"load: podman load -i {done.archive}   (or docker load -i)")
        typer.echo(f"run:  podman run --rm --network=none -v BENCHMARKS:/data/benchmarks:ro -v DATASETS:/data/datasets:ro "
                   f"-v OUT:/out {done.reference} --test")
