"""CLI commands of the 'patch' group: check, apply, new (thin layer over pyrepro.patches)."""

from __future__ import annotations

from pathlib import Path

import typer

from pyrepro.cli._common import emit_json, table


def _pristine(spec, paths, mirror: Path | None) -> Path:  # type: ignore[no-untyped-def]
    from pyrepro import sources

    return sources.obtain_source(spec.source, mirror=paths.mirror(mirror), cache=paths.cache).path


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""
    patch_app = typer.Typer(help="Reviewed patch series: check, apply, new, accept.", no_args_is_help=True)
    app.add_typer(patch_app, name="patch")

    @patch_app.command("check")
    def check_cmd(
        names: list[str] = typer.Argument(None, help="Models (default with --all: every model)"),
        all_: bool = typer.Option(False, "--all", help="Check every model"),
        mirror: Path = typer.Option(None, "--mirror", help="Folder holding the pinned upstream repository"),
        strict: bool = typer.Option(False, "--strict", help="Runtime fetches left in patched code are errors"),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output"),
    ) -> None:
        """Apply each series to a pristine, pin-verified copy (no fuzz, no offset) and check the entry."""
        from pyrepro import patches
        from pyrepro.errors import PatchError, UsageError
        from pyrepro.paths import Paths
        from pyrepro.registry import load_registry

        paths = Paths.discover()
        reg = load_registry(paths.models)
        if not names and not all_:
            raise UsageError("name models or pass --all")
        specs = list(reg) if all_ else reg.select(list(names))
        results = [patches.check_model(s, paths.patch_dir(s.name), _pristine(s, paths, mirror)) for s in specs]
        bad = [r for r in results if not r.ok or (strict and r.static.leftovers)]
        if as_json:
            emit_json([r.to_json() for r in results])
        else:
            rows = [[r.model, str(len(r.patches)), ",".join(sorted({p.category for p in r.patches})) or "-",
                     "ok" if r.static.uniform else "missing " + " ".join(r.static.missing_flags),
                     str(len(r.static.leftovers))] for r in results]
            typer.echo(table(rows, ["model", "patches", "categories", "uniform flags", "runtime fetches left"]))
            for r in results:
                for lo in r.static.leftovers:
                    typer.echo(f"warning: {r.model}: {lo}", err=True)
        if bad:
            raise PatchError("patch check failed for: " + ", ".join(r.model for r in bad))

    @patch_app.command("accept")
    def accept_cmd(
        name: str = typer.Argument(..., help="Model whose patch series you reviewed"),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output"),
    ) -> None:
        """Record the model's current patch series as reviewed (patches/<name>/REVIEWED)."""
        from pyrepro import patches
        from pyrepro.paths import Paths
        from pyrepro.registry import load_registry

        paths = Paths.discover()
        spec = load_registry(paths.models).get(name)
        changes, path = patches.accept_series(paths.patch_dir(spec.name))
        if as_json:
            emit_json({"model": spec.name, "reviewed": str(path), "changes": changes})
            return
        typer.echo(f"{path}: " + ("; ".join(changes) if changes else "no change"))

    @patch_app.command("apply")
    def apply_cmd(
        name: str = typer.Argument(..., help="Model"),
        out: Path = typer.Option(..., "--out", help="Folder to create with the patched source"),
        mirror: Path = typer.Option(None, "--mirror", help="Folder holding the pinned upstream repository"),
    ) -> None:
        """Materialise the patched source of a model (for patch authors)."""
        from pyrepro import patches
        from pyrepro.paths import Paths
        from pyrepro.registry import load_registry

        paths = Paths.discover()
        spec = load_registry(paths.models).get(name)
        patches.apply_series(patches.load_series(paths.patch_dir(spec.name)), _pristine(spec, paths, mirror), out)
        typer.echo(f"wrote {out}")

    @patch_app.command("new")
    def new_cmd(
        name: str = typer.Argument(..., help="Model"),
        from_: Path = typer.Option(..., "--from", help="Your edited copy (made with 'pyrepro patch apply')"),
        slug: str = typer.Option(..., "--slug", help="Short lower-case name, e.g. test-mode"),
        category: str = typer.Option(..., "--category", help="cli, test-mode, paths, api-drift, nix, runtime-fetch"),
        subject: str = typer.Option(None, "--subject", help="One line (default: from the slug)"),
        why: str = typer.Option("TODO: why this patch is needed", "--why"),
        effect: str = typer.Option("none: TODO: why results cannot change", "--effect",
                                   help="'none: ...' or 'changes: ...'"),
        mirror: Path = typer.Option(None, "--mirror", help="Folder holding the pinned upstream repository"),
    ) -> None:
        """Turn an edited working copy into the next patch of the series."""
        import shutil
        import tempfile

        from pyrepro import patches
        from pyrepro.paths import Paths
        from pyrepro.registry import load_registry

        paths = Paths.discover()
        spec = load_registry(paths.models).get(name)
        pdir = paths.patch_dir(spec.name)
        tmp = Path(tempfile.mkdtemp(prefix="pyrepro-patch-new."))
        try:
            series = patches.load_series(pdir)
            patches.check_reviewed(pdir, series)  # build on a reviewed series only
            base = patches.apply_series(series, _pristine(spec, paths, mirror), tmp / "base")
            out = patches.new_patch(pdir, base, from_, slug=slug, category=category,
                                    subject=subject or slug.replace("-", " ").capitalize(), why=why, effect=effect)
            patches.accept_series(pdir)  # the author's own new patch is recorded as reviewed
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        typer.echo(f"wrote {out} (recorded in {pdir / patches.REVIEWED}); review its header, then run "
                   f"'pyrepro patch check {spec.name}'")
