"""``pyrepro report --html PATH``: the status table and each model's dependency graph on one page.

The page is self-contained (inline CSS, inline SVG, no script, nothing fetched). Its data
comes from the report record (``pyrepro.report.build_report``; the table cells are
``report.status_cells``, the same as docs/STATUS.md's) and from ``pyrepro.graph`` (the
default summary view with its legend, from the committed ``pdm.lock``). A model whose graph
cannot be drawn (no lock, no graphviz ``dot``, a broken lock) gets a sentence saying why
instead of a picture. The template renders data only, and escapes everything except the
SVG that graphviz wrote (graphviz escapes the labels in it) and the verdict plot, which
``verdict_svg`` writes with every text escaped.

The verdict plot has one row per model and benchmark: the re-executed value of the benchmark's
metric and its bootstrap interval, relative to the reported value (so benchmarks in other units
share one axis; the reported value is the diamond at 0), coloured by tier, with the numbers and
the tier written beside it. A model without a run on the real data says so in its row.
"""

from __future__ import annotations

import html
import math
import re
import tempfile
from collections import Counter
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


# Tier colours: green for the same numbers, blue for statistically the same, red for a
# different result; the tier is also written in each row, so colour is never the only cue.
TIER_COLOURS = {"identical": "#1a7f37", "agree": "#2da44e", "consistent": "#0969da", "differs": "#cf222e",
                "executable": "#6e7781", "not-comparable": "#8250df", "failed": "#953800"}
NO_RUN_COLOUR = "#8c959f"


@dataclass(frozen=True)
class VerdictRow:
    """One row of the verdict plot: a model's latest real-data verdict on one benchmark."""

    model: str
    benchmark: str
    tier: str | None  # None: no run on the real data
    reason: str
    metric: str | None = None  # "MAE"
    value: float | None = None  # the re-executed value
    low: float | None = None
    high: float | None = None
    confidence: float | None = None
    reported: float | None = None
    reported_source: str | None = None
    fixture_tier: str | None = None  # what the fixture run says, for a row without a real-data run

    @property
    def numerical(self) -> bool:
        return None not in (self.value, self.low, self.high, self.reported) and self.reported != 0

    def relative(self, x: float) -> float:
        assert self.reported
        return (x - self.reported) / abs(self.reported)


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and math.isfinite(x) else None


def verdict_row(model: str, benchmark: str, v: dict[str, Any] | None, fixture_tier: str | None = None) -> VerdictRow:
    """The row for a verdict as records keep it (``Verdict.to_json``; records made before the
    statistical verdicts have no interval, and their rows say so)."""
    if not v:
        return VerdictRow(model, benchmark, None, "no run on the real data yet", fixture_tier=fixture_tier)
    metric = v.get("metric") or {}
    interval = metric.get("interval") or {}
    reported = v.get("reported") or {}
    label = str(metric.get("metric") or "mae").upper()
    return VerdictRow(model, benchmark, str(v.get("tier") or "failed"), str(v.get("reason") or ""), label,
                      _number(metric.get("value", v.get("mae"))), _number(interval.get("low")),
                      _number(interval.get("high")), _number(interval.get("confidence")),
                      _number(reported.get("value", v.get("reported_mae"))),
                      str(reported["source"]) if reported.get("source") else None, fixture_tier)


def verdict_rows(rep: dict[str, Any]) -> list[VerdictRow]:
    """One row per model and benchmark it serves, from the report record: its latest real-data
    (``jarvis``) run's verdict, or a row that says there is none."""
    rows = []
    for m in rep["models"]:
        runs: dict[str, dict[str, Any]] = {}
        if m.get("run"):
            runs[f"{m['run'].get('benchmark')}/{m['run'].get('data')}"] = m["run"]
        for key, r in (m.get("other_runs") or {}).items():
            runs[key] = r
        benchmarks = list(m.get("benchmarks") or sorted({k.split("/")[0] for k in runs}))
        for b in benchmarks:
            real = runs.get(f"{b}/jarvis") or {}
            fixture = (runs.get(f"{b}/fixture") or {}).get("verdict") or {}
            rows.append(verdict_row(m["name"], b, real.get("verdict"), fixture.get("tier")))
    return rows


def _ticks(extent: float) -> tuple[float, list[float]]:
    """The axis half-width (a fraction) and its ticks for relative differences up to ``extent``."""
    scales = ((0.05, 0.01), (0.1, 0.05), (0.2, 0.1), (0.5, 0.25), (1.0, 0.5))
    # beyond +-100 % an arrow at the edge says so (the numbers are written beside): one far-off
    # row must not squeeze every other interval into a few pixels
    half, step = next(((h, s) for h, s in scales if extent <= h), scales[-1])
    n = round(half / step)
    return half, [i * step for i in range(-n, n + 1)]


def _pct(x: float) -> str:
    return f"{x * 100:+.0f}%" if x else "0"


def _t(x: float | None) -> str:
    return "?" if x is None else f"{x:.4g}"


def verdict_svg(rows: list[VerdictRow]) -> str:
    """The verdict plot as an inline ``<svg>`` element (every text escaped)."""
    e = html.escape
    label_w, plot_x0, plot_w, text_x, chip_x, chip_w, width = 250, 270, 460, 760, 1070, 126, 1200
    top, row_h = 72, 40
    height = top + row_h * len(rows) + 56
    numerical = [r for r in rows if r.numerical]
    extent = max((abs(r.relative(x)) for r in numerical for x in (r.low, r.high, r.value) if x is not None),
                 default=0.05)
    half, ticks = _ticks(extent)
    cx = plot_x0 + plot_w / 2

    def xpos(rel: float) -> float:
        return cx + max(-1.0, min(1.0, rel / half)) * plot_w / 2

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="verdict-plot" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="img" aria-labelledby="verdict-plot-title" '
           'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="14">',
           '<title id="verdict-plot-title">Verdicts: re-executed metric with its bootstrap interval, relative to the '
           'reported value, one row per model and benchmark</title>',
           f'<text x="{label_w}" y="22" text-anchor="end" font-weight="600">model · benchmark</text>',
           f'<text x="{cx}" y="22" text-anchor="middle" font-weight="600">re-executed vs reported value</text>',
           f'<text x="{text_x}" y="22" font-weight="600">re-executed [interval] · reported</text>',
           f'<text x="{chip_x + chip_w / 2}" y="22" text-anchor="middle" font-weight="600">tier</text>']
    if numerical:  # an axis only where something is drawn on it
        out.append(f'<line x1="{cx}" y1="{top - 14}" x2="{cx}" y2="{top + row_h * len(rows)}" stroke="#57606a" '
                   'stroke-width="1.5" stroke-dasharray="4 3"/>')
    for t in ticks if numerical else []:
        x = xpos(t)
        if t:
            out.append(f'<line x1="{x:.1f}" y1="{top - 14}" x2="{x:.1f}" y2="{top + row_h * len(rows)}" '
                       'stroke="#d0d7de" stroke-width="1"/>')
        for ty in (top - 22, top + row_h * len(rows) + 20):  # the scale above the rows and below them
            out.append(f'<text x="{x:.1f}" y="{ty}" text-anchor="middle" font-size="13" fill="#424a53">{_pct(t)}</text>')
    if numerical:
        out.append(f'<text x="{cx}" y="{top + row_h * len(rows) + 42}" text-anchor="middle" font-size="13" '
                   'fill="#424a53">(re-executed − reported) / reported; left is lower (better for MAE)</text>')
    for i, r in enumerate(rows):
        y = top + i * row_h + row_h / 2
        colour = TIER_COLOURS.get(r.tier or "", NO_RUN_COLOUR)
        tip = e(f"{r.model} · {r.benchmark}: {r.tier or 'no real-data run'}: {r.reason}")
        out.append(f'<g class="verdict-row" data-tier="{e(r.tier or "none")}"><title>{tip}</title>')
        background = "#f6f8fa" if i % 2 else "#fff"
        if i % 2:
            out.append(f'<rect x="0" y="{y - row_h / 2:.1f}" width="{width}" height="{row_h}" fill="{background}"/>')
        out.append(f'<text x="{label_w}" y="{y - 3:.1f}" text-anchor="end" font-weight="600">{e(r.model)}</text>'
                   f'<text x="{label_w}" y="{y + 13:.1f}" text-anchor="end" font-size="12" fill="#57606a">'
                   f'{e(r.benchmark)}</text>')
        if r.numerical:
            assert r.low is not None and r.high is not None and r.value is not None and r.reported is not None
            lo, hi, val = r.relative(r.low), r.relative(r.high), r.relative(r.value)
            x1, x2 = xpos(lo), xpos(hi)
            out.append(f'<line class="interval" x1="{x1:.1f}" y1="{y:.1f}" x2="{x2:.1f}" y2="{y:.1f}" '
                       f'stroke="{colour}" stroke-width="6" stroke-linecap="butt" opacity="0.55"/>')
            for xe, clipped, sign in ((x1, lo < -half, -1), (x2, hi > half, 1)):
                if clipped:  # beyond the axis: an arrowhead at the edge
                    out.append(f'<path class="clipped" d="M{xe + sign * 9:.1f},{y:.1f} L{xe:.1f},{y - 7:.1f} L{xe:.1f},{y + 7:.1f} Z" '
                               f'fill="{colour}"/>')
                else:
                    out.append(f'<line x1="{xe:.1f}" y1="{y - 8:.1f}" x2="{xe:.1f}" y2="{y + 8:.1f}" '
                               f'stroke="{colour}" stroke-width="2"/>')
            if abs(val) <= half:  # beyond the axis, the arrow stands for it
                out.append(f'<circle class="value" cx="{xpos(val):.1f}" cy="{y:.1f}" r="5" fill="{colour}"/>')
            # hollow, drawn last: a value on the reported one shows as a dot inside the diamond
            out.append(f'<path class="reported" d="M{cx:.1f},{y - 9:.1f} l9,9 l-9,9 l-9,-9 Z" fill="none" '
                       'stroke="#1f2328" stroke-width="2"/>')
            conf = f"{r.confidence:.0%} " if r.confidence else ""
            out.append(f'<text x="{text_x}" y="{y - 3:.1f}">{e(r.metric or "")} {_t(r.value)} '
                       f'<tspan fill="#57606a">[{_t(r.low)}, {_t(r.high)}]</tspan> · {_t(r.reported)}</text>'
                       f'<text x="{text_x}" y="{y + 13:.1f}" font-size="12" fill="#57606a">'
                       f'{_pct(val) if abs(val) >= 0.005 else f"{val * 100:+.1f}%"} · {conf}interval, reported '
                       f'{e("recomputed" if (r.reported_source or "").startswith("recomputed") else "as stated")}'
                       '</text>')
        else:
            if r.tier is None:
                msg = "no run on the real data yet" + (f" (fixture data: {r.fixture_tier})" if r.fixture_tier else "")
            elif r.tier in ("executable", "failed"):  # no numerical claim: the reason, not numbers
                msg = r.reason
            elif r.value is not None and r.reported is not None:
                msg = f"{r.metric} {_t(r.value)} · reported {_t(r.reported)}; no interval"
            elif r.value is not None:
                msg = f"{r.metric} {_t(r.value)}; nothing to compare with"
            else:
                msg = r.reason
            if len(msg) > 110:
                msg = msg[:109] + "…"
            # the row's words cover the axis' lines: nothing is plotted in this row
            out.append(f'<rect x="{plot_x0 - 6}" y="{y - row_h / 2 + 1:.1f}" width="{chip_x - plot_x0}" '
                       f'height="{row_h - 2}" fill="{background}"/>')
            out.append(f'<text x="{plot_x0}" y="{y + 5:.1f}" font-size="13" font-style="italic" fill="#57606a">'
                       f'{e(msg)}</text>')
        out.append(f'<rect x="{chip_x}" y="{y - 12:.1f}" width="{chip_w}" height="24" rx="12" fill="{colour}"/>'
                   f'<text x="{chip_x + chip_w / 2}" y="{y + 5:.1f}" text-anchor="middle" font-size="13" '
                   f'font-weight="600" fill="#fff">{e(r.tier or "not run")}</text></g>')
    out.append("</svg>")
    return "\n".join(out)


def verdict_summary(rows: list[VerdictRow]) -> str:
    """One sentence for a batch: how many rows got each tier."""
    counts = Counter(r.tier or "no real-data run" for r in rows)
    order = [*TIER_COLOURS, "no real-data run"]
    return ", ".join(f"{counts[t]} {t}" for t in order if counts[t])


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
    vrows = verdict_rows(rep)
    plot = Markup(verdict_svg(vrows)) if any(r.tier is not None for r in vrows) else None  # escaped by verdict_svg
    return _ENV.get_template("report.html.j2").render(
        generated=rep["generated"], columns=report.STATUS_COLUMNS, rows=rows, sections=sections,
        verdict_plot=plot, verdict_summary=verdict_summary(vrows), verdict_colours=TIER_COLOURS,
        verdict_numerical=any(r.numerical for r in vrows))


def write_html(rep: dict[str, Any], registry: Registry, paths: Paths, out: Path, *,
               runner: Runner = proc.run) -> Path:
    """Write the page for ``rep`` (``report.build_report``) to ``out``, atomically."""
    graphs = {spec.name: model_graph(spec, paths, runner=runner) for spec in registry}
    atomic_write_text(out, render_html(rep, graphs))
    return out
