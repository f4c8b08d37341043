"""CLI commands of the 'data' group: fixture, list, fetch (thin layer over pyrepro.data)."""

from __future__ import annotations

from pathlib import Path

import typer

from pyrepro.cli._common import emit_json, table


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""
    data_app = typer.Typer(help="Datasets: the offline fixture and the real (figshare) datasets.",
                           no_args_is_help=True)
    app.add_typer(data_app, name="data")

    @data_app.command("fixture")
    def fixture_cmd(
        out: Path = typer.Option(None, "--out", help="Folder to write (default: <cache>/data/fixture-v<N>)"),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output"),
    ) -> None:
        """Write the small deterministic offline dataset (jarvis-tools and benchmark formats)."""
        from pyrepro import data
        from pyrepro.paths import cache_dir

        dest = out or cache_dir() / "data" / f"fixture-v{data.FIXTURE_VERSION}"
        fx = data.write_fixture(dest)
        if as_json:
            emit_json(fx.to_json())
            return
        typer.echo(f"fixture data ({fx.digest}) in {fx.root}: benchmarks {fx.benchmarks_dir}, datasets {fx.data_dir}")
        typer.echo("fixture data proves executability, never a numerical result")

    @data_app.command("list")
    def list_cmd(as_json: bool = typer.Option(False, "--json", help="Machine-readable output")) -> None:
        """The real datasets the models read (figshare pins) and the pinned benchmark splits."""
        from pyrepro import data

        rows = data.real_datasets()
        pins = data.benchmark_pins()
        if as_json:
            emit_json({"datasets": [d.to_json() for d in rows],
                       "benchmarks": [{"name": b.name, "sha256": b.sha256} for b in pins]})
            return
        typer.echo(table([[d.name, d.file, d.figshare, d.sha256 or "unknown", ",".join(d.used_by) or "-"]
                          for d in rows], ["name", "file", "figshare", "sha256", "used by"]))
        typer.echo("")
        typer.echo(table([[b.name + ".json.zip", b.sha256] for b in pins], ["benchmark file", "sha256"]))

    @data_app.command("fetch")
    def fetch_cmd(
        name: str = typer.Argument(..., help="Dataset name (see 'pyrepro data list')"),
        out: Path = typer.Option(None, "--out", help="Folder (default: <cache>/data/jarvis)"),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output"),
    ) -> None:
        """Download a real dataset and record its sha256 (needs figshare; offline: a clear error)."""
        from pyrepro import data
        from pyrepro.paths import cache_dir

        got = data.fetch_real(name, out or cache_dir() / "data" / "jarvis")
        if as_json:
            emit_json(got.to_json())
            return
        typer.echo(f"wrote {got.path} ({got.size} bytes, sha256 {got.sha256})")
        if not got.pinned:
            typer.echo(f"{name} has no sha256 pin: review the file, then add sha256 = \"{got.sha256}\" "
                       "to its entry in pyrepro/data/datasets.toml")
