"""``pyrepro report --html PATH``: the status table and each model's dependency graph on one page.

The page is self-contained (inline CSS, inline SVG, no script, nothing fetched). Its data
comes from the report record (``pyrepro.report.build_report``; the table cells are
``report.status_cells``, the same as docs/STATUS.md's) and from ``pyrepro.graph`` (the
default summary view with its legend, from the committed ``pdm.lock``). A model whose graph
cannot be drawn (no lock, no graphviz ``dot``, a broken lock) gets a sentence saying why
instead of a picture. The template renders data only, and escapes everything except the
SVG that graphviz wrote (graphviz escapes the labels in it).
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from pyrepro import proc, report
from pyrepro.errors import PyreproError
from pyrepro.fsutil import atomic_write_text
from pyrepro.paths import Paths
from pyrepro.proc import Runner
from pyrepro.registry import ModelSpec, Registry

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("pyrepro", "templates"),
    undefined=jinja2.StrictUndefined,
    autoescape=True,
    keep_trailing_newline=True,
)


@dataclass(frozen=True)
class ModelGraph:
    """One model's picture: an inline ``<svg>`` element, or the reason there is none."""

    svg: str | None
    reason: str | None


def _inline_svg(svg: str, prefix: str) -> str:
    """dot's SVG file as an element for an HTML page: no XML prolog or doctype, and ids made
    unique on the page (every graph has ``graph0``, ``node1``, ...)."""
    start = svg.find("<svg")
    return re.sub(r'\bid="', f'id="{prefix}-', svg[start:] if start >= 0 else svg).strip()


def model_graph(spec: ModelSpec, paths: Paths, *, runner: Runner = proc.run) -> ModelGraph:
    """The default ``pyrepro graph NAME --source lock`` picture of ``spec``, or why there is none."""
    if not (spec.dir / "pdm.lock").is_file():
        return ModelGraph(None, f"No graph: {spec.name} is not locked yet (no models/{spec.name}/pdm.lock); "
                                f"'pyrepro lock {spec.name}' writes it.")
    if proc.which("dot") is None:
        return ModelGraph(None, f"No graph: graphviz 'dot' is not installed on the machine that wrote this page; "
                                f"{proc.install_hint('dot')}.")
    from pyrepro import graph  # networkx and graphviz: loaded only when a page has graphs

    try:
        dg = graph.summarize(graph.load_graph(spec.name, root=paths.root, cache=paths.cache, source="lock",
                                              runner=runner))
        with tempfile.TemporaryDirectory(prefix="pyrepro-report-") as tmp:
            out = graph.render(graph.to_dot(dg), Path(tmp) / f"{spec.name}.svg", "svg", runner=runner)
            svg = out.path.read_text(encoding="utf-8")
    except PyreproError as exc:  # a broken lock or a failing dot: said on the page, the page is still written
        return ModelGraph(None, f"No graph: {exc}" + (f" ({exc.hint})" if exc.hint else ""))
    return ModelGraph(_inline_svg(svg, f"g-{spec.name}"), None)


def render_html(rep: dict[str, Any], graphs: dict[str, ModelGraph]) -> str:
    """The page for the report record ``rep``, with ``graphs`` by model name (a missing entry
    says that no graph was made)."""
    rows = [{"name": m["name"], "cells": report.status_cells(m)[1:]} for m in rep["models"]]
    sections = []
    for m in rep["models"]:
        gr = graphs.get(m["name"]) or ModelGraph(None, "No graph was made for this model.")
        sections.append({
            "name": m["name"], "upstream": m["upstream"],
            "scanned": ", ".join(m["scanned"]) or "none",
            "notes": m.get("notes") or "",
            "svg": Markup(gr.svg) if gr.svg else None,  # graphviz output; its labels are escaped by dot
            "reason": gr.reason,
        })
    return _ENV.get_template("report.html.j2").render(
        generated=rep["generated"], columns=report.STATUS_COLUMNS, rows=rows, sections=sections)


def write_html(rep: dict[str, Any], registry: Registry, paths: Paths, out: Path, *,
               runner: Runner = proc.run) -> Path:
    """Write the page for ``rep`` (``report.build_report``) to ``out``, atomically."""
    graphs = {spec.name: model_graph(spec, paths, runner=runner) for spec in registry}
    atomic_write_text(out, render_html(rep, graphs))
    return out
