"""CLI: ``pyrepro graph`` (thin layer over ``pyrepro.graph``)."""

from __future__ import annotations

from pathlib import Path

import typer

from pyrepro.cli._common import GraphFormat, GraphSource, emit_json, table, warn
from pyrepro.errors import NotFoundError, UsageError
from pyrepro.paths import Paths, cache_dir


def register(app: typer.Typer) -> None:
    @app.command("graph")
    def graph_cmd(
        name: str = typer.Argument(None, help="Model name, NAME@GIT-REV, or a path to a pdm.lock"),
        source_: GraphSource = typer.Option(GraphSource.auto, "--source", help="Where the closure comes from"),
        fmt_: GraphFormat = typer.Option(None, "--format", "-f", help="Output format (default: from -o's "
                                         "suffix, else svg)", show_default=False),
        output: Path = typer.Option(None, "--output", "-o", help="Output file (default NAME.FORMAT)"),
        depth: int = typer.Option(None, "--depth", min=0, help="Show only this many levels"),
        reduced: bool = typer.Option(False, "--reduce", help="Transitive reduction"),
        hl: str = typer.Option(None, "--highlight", help="Show every path from the root to this package"),
        diff: tuple[str, str] | None = typer.Option(None, "--diff", help="Compare two closures: --diff A B"),
        nix_out: str = typer.Option(None, "--nix-out", help="A built store path to graph (nix source)"),
        full: bool = typer.Option(False, "--full", help="Every package (default picture: the direct "
                                  "dependencies, each with the size of the rest of its closure)"),
        as_json: bool = typer.Option(False, "--json", help="Print JSON (graph or diff) on stdout"),
    ) -> None:
        """Render the dependency DAG of a model's closure (lock or Nix)."""
        if fmt_ is None:  # `-o elemnet.png` means a PNG; an unknown or missing suffix means svg
            suffix = output.suffix.lstrip(".").lower() if output is not None else ""
            fmt_ = GraphFormat(suffix) if suffix in {f.value for f in GraphFormat} else GraphFormat.svg
        elif output is not None and output.suffix.lstrip(".").lower() in {f.value for f in GraphFormat} \
                and output.suffix.lstrip(".").lower() != fmt_.value:
            raise UsageError(f"-o {output} has the suffix of another format than --format {fmt_.value}",
                             hint=f"use -o {output.with_suffix('.' + fmt_.value)} or drop --format")
        source, fmt = source_.value, fmt_.value
        from pyrepro import graph as g  # networkx: loaded only when a graph is drawn

        try:
            paths: Paths | None = Paths.discover()
        except NotFoundError:  # a lock-file path works outside a checkout
            paths = None
        root, cache = (paths.root, paths.cache) if paths else (None, cache_dir())
        if diff and diff[0] is not None:
            a = g.load_graph(diff[0], root=root, cache=cache, source=source, nix_out=nix_out)
            b = g.load_graph(diff[1], root=root, cache=cache, source=source)
            d = g.diff(a, b)
            if as_json:
                emit_json(d.to_json())
                return
            if output is not None:  # a picture of the difference
                rendered = g.render(g.diff_to_dot(a, b, d), output, fmt)
                typer.echo(f"wrote {rendered.path} ({fmt}): {len(d.added)} added, {len(d.removed)} removed, "
                           f"{len(d.changed)} changed")
                return
            rows = [["+", n, "", v] for n, v in d.added] + [["-", n, v, ""] for n, v in d.removed]
            rows += [["~", n, x, y] for n, x, y in d.changed]
            typer.echo(f"{d.a} ({a.source}) -> {d.b} ({b.source}): {len(d.added)} added, "
                       f"{len(d.removed)} removed, {len(d.changed)} changed")
            if rows:
                typer.echo(table(rows, ["", "package", d.a, d.b]))
            return
        if name is None:
            raise UsageError("give a model name (or --diff A B)")
        dg = g.load_graph(name, root=root, cache=cache, source=source, nix_out=nix_out)
        dg = g.view(dg, depth=depth, reduced=reduced)
        h = g.highlight(dg, hl) if hl else None
        for p in dg.problems:
            warn(p.message)
        if as_json or fmt == "json":
            data = g.to_json(dg, hl=h)
            if output is not None:
                output.write_text(__import__("json").dumps(data, indent=2) + "\n", encoding="utf-8")
                typer.echo(f"wrote {output}", err=True)
            if as_json or output is None:
                emit_json(data)
            return
        out = output or Path(f"{name.replace('/', '_').replace('@', '_')}.{fmt}")
        if not (full or depth is not None or reduced or h is not None):
            dg = g.summarize(dg)  # a picture that fits a screen; --full draws everything
        rendered = g.render(g.to_dot(dg, h), out, fmt)
        n, e = dg.graph.number_of_nodes(), dg.graph.number_of_edges()
        typer.echo(f"wrote {rendered.path} ({fmt}) from the {dg.source} source: {n} nodes, {e} edges")
        if h is not None:
            typer.echo(f"{h.path_count} path(s) from {dg.title} to {dg.node(h.target).name}:")
            for p in h.paths:
                typer.echo("  " + " -> ".join(p))
