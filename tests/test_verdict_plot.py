"""The verdict plot of the HTML report: one row per model and benchmark, the interval bar, the
reported value marked, the tier coloured and written; drawn from the report record."""

from __future__ import annotations

import math
import re
import shutil
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from pyrepro import report, report_html, verdict
from pyrepro.paths import Paths
from pyrepro.registry import load_registry
from tests.test_report_html import CHROMIUM, SC, XSS, parse_page, png_size, screenshot

NS = {"svg": "http://www.w3.org/2000/svg"}
IDS = [f"x{i:02d}" for i in range(30)]
TARGETS = {k: 20.0 + 10.0 * math.sin(i) + 3.0 * (i % 4) for i, k in enumerate(IDS)}
SUB = {k: TARGETS[k] + 4.0 * math.cos(2 * i + 0.5) for i, k in enumerate(IDS)}


def _zip(path: Path, values: dict[str, float]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("p.csv", "id,prediction\n" + "".join(f"{k},{values[k]!r}\n" for k in IDS))
    return path


def _verdict(tmp_path: Path, name: str, values: dict[str, float], **kw: object) -> dict[str, object]:
    sub = _zip(tmp_path / "sub.zip", SUB)
    args: dict[str, object] = {"benchmark": "dft_3d_exfoliation_energy", "exit_code": 0,
                               "output": _zip(tmp_path / f"{name}.zip", values), "data_kind": "jarvis",
                               "targets": TARGETS, "submitted": sub, "reported_mae": None, "n_resamples": 1000}
    args.update(kw)
    return verdict.judge(**args).to_json()  # type: ignore[arg-type]


def _model(name: str, runs: dict[str, dict[str, object]], benchmarks: list[str] | None = None) -> dict[str, object]:
    """A report record's model entry, as ``report.model_status`` writes it (the fields the page reads)."""
    default = next(iter(runs.items()), None)
    run = None
    if default:
        bench, kind = default[0].split("/")
        run = {"benchmark": bench, "test": False, "started": "20260101T000000Z", "seconds": 1.0, "exit_code": 0,
               "error": None, "stage": None, "data": kind, "verdict": default[1], "machine": "m"}
    return {"name": name, "upstream": name, "python": "3.11", "gpu": "none",
            "benchmarks": benchmarks or ["dft_3d_exfoliation_energy"], "scanned": [], "notes": "",
            "lock": {"category": None, "label": "not locked"}, "patches": [], "build": None, "imports": None,
            "run": run, "other_runs": {k: {"data": k.split("/")[1], "verdict": v, "exit_code": 0, "seconds": 1.0,
                                           "error": None} for k, v in list(runs.items())[1:]},
            "nix": "", "gpu_runs": "", "extra_sources": []}


@pytest.fixture
def rep(tmp_path: Path) -> dict[str, object]:
    consistent = _verdict(tmp_path, "noisy", {k: SUB[k] + (-1) ** i * 0.2 for i, k in enumerate(IDS)})
    differs = _verdict(tmp_path, "off", {k: SUB[k] + 4.0 for k in IDS})
    far = _verdict(tmp_path, "far", {k: SUB[k] + 200.0 for k in IDS})
    fixture = {"tier": "executable", "reason": "ran on fixture data", "benchmark": "dft_3d_exfoliation_energy"}
    models = [
        _model("good", {"dft_3d_exfoliation_energy/fixture": fixture, "dft_3d_exfoliation_energy/jarvis": consistent}),
        _model("bad", {"dft_3d_exfoliation_energy/jarvis": differs}),
        _model("faraway", {"dft_3d_exfoliation_energy/jarvis": far}),
        _model("fixture_only", {"dft_3d_exfoliation_energy/fixture": fixture}),
        # a record written before the statistical verdicts: an MAE, no interval
        _model("old", {"b2/jarvis": {"tier": "differs", "reason": "max relative difference 3", "benchmark": "b2",
                                      "mae": 5.0, "reported_mae": 4.0}}, benchmarks=["b1", "b2"]),
        _model(XSS, {"dft_3d_exfoliation_energy/jarvis": {"tier": "failed", "reason": XSS}}),
    ]
    return {"generated": "2026-01-01 00:00 UTC", "models": models}


def test_verdict_rows__one_per_model_and_benchmark__the_real_data_run(rep: dict[str, object]) -> None:
    rows = report_html.verdict_rows(rep)
    assert [(r.model, r.benchmark, r.tier) for r in rows] == [
        ("good", "dft_3d_exfoliation_energy", "consistent"), ("bad", "dft_3d_exfoliation_energy", "differs"),
        ("faraway", "dft_3d_exfoliation_energy", "differs"), ("fixture_only", "dft_3d_exfoliation_energy", None),
        ("old", "b1", None), ("old", "b2", "differs"), (XSS, "dft_3d_exfoliation_energy", "failed")]
    good = rows[0]
    assert good.numerical and good.low is not None and good.high is not None and good.reported is not None
    assert good.low <= good.reported <= good.high and good.confidence == 0.95
    assert good.reported_source == "recomputed from the submitted predictions"
    assert rows[3].fixture_tier == "executable" and not rows[3].numerical
    old = rows[5]
    assert (old.value, old.reported, old.low) == (5.0, 4.0, None) and not old.numerical


def _rows_of(svg: str) -> list[ET.Element]:
    root = ET.fromstring(svg)
    return root.findall("svg:g[@class='verdict-row']", NS)


def _x_of(path_d: str) -> float:
    return float(re.match(r"M([-\d.]+),", path_d).group(1))  # type: ignore[union-attr]


def test_verdict_svg__bars_diamonds_and_tiers_where_the_numbers_put_them(rep: dict[str, object]) -> None:
    rows = report_html.verdict_rows(rep)
    svg = report_html.verdict_svg(rows)
    groups = _rows_of(svg)
    assert [g.get("data-tier") for g in groups] == ["consistent", "differs", "differs", "none", "none", "differs",
                                                    "failed"]
    for g, r in zip(groups, rows, strict=True):
        chip = [t.text for t in g.findall("svg:text", NS)][-1]
        assert chip == (r.tier or "not run")
        fills = {e.get("fill") for e in g.findall("svg:rect", NS)}
        assert report_html.TIER_COLOURS.get(r.tier or "", report_html.NO_RUN_COLOUR) in fills
    # consistent: the reported value's diamond sits on the interval bar, and the value dot too
    good, bad, far = groups[0], groups[1], groups[2]
    bar = good.find("svg:line[@class='interval']", NS)
    assert bar is not None
    x1, x2 = float(bar.get("x1") or 0), float(bar.get("x2") or 0)
    diamond = _x_of(good.find("svg:path[@class='reported']", NS).get("d") or "")  # type: ignore[union-attr]
    dot = float(good.find("svg:circle[@class='value']", NS).get("cx") or 0)  # type: ignore[union-attr]
    assert x1 < diamond < x2 and x1 < dot < x2
    assert bar.get("stroke") == report_html.TIER_COLOURS["consistent"]
    # differs (+4 on every prediction): the bar lies to the right of the diamond
    bbar = bad.find("svg:line[@class='interval']", NS)
    bd = _x_of(bad.find("svg:path[@class='reported']", NS).get("d") or "")  # type: ignore[union-attr]
    assert bbar is not None and bd < float(bbar.get("x1") or 0) < float(bbar.get("x2") or 0)
    # beyond the axis (+200 on every prediction): an arrow at the edge, no dot off the plot
    assert far.find("svg:path[@class='clipped']", NS) is not None and far.find("svg:circle", NS) is None
    text = " ".join("".join(t.itertext()) for t in good.findall("svg:text", NS))
    r0 = rows[0]
    assert f"MAE {r0.value:.4g} [{r0.low:.4g}, {r0.high:.4g}] · {r0.reported:.4g}" in text
    assert "95% interval, reported recomputed" in text
    # rows without numbers say why, in words
    assert "no run on the real data yet (fixture data: executable)" in "".join(groups[3].itertext())
    assert "MAE 5 · reported 4; no interval" in "".join(groups[5].itertext())
    # markup is text
    assert XSS not in svg and "&lt;script&gt;" in svg


def test_verdict_svg__axis__widest_interval_sets_the_scale_capped_at_100_percent(rep: dict[str, object]) -> None:
    rows = report_html.verdict_rows(rep)
    texts = ["".join(t.itertext()) for t in ET.fromstring(report_html.verdict_svg(rows[:1])).findall("svg:text", NS)]
    assert "+100%" not in texts  # one consistent row: a narrow scale
    wide = ["".join(t.itertext()) for t in ET.fromstring(report_html.verdict_svg(rows)).findall("svg:text", NS)]
    assert wide.count("+100%") == 2 and wide.count("-100%") == 2 and "+200%" not in wide  # above and below the rows


def test_render_html__real_data_verdicts__plot_and_tier_legend_on_a_well_formed_page(rep: dict[str, object]) -> None:
    page = report_html.render_html(rep, {})
    p = parse_page(page)
    assert "script" not in p.tags
    assert page.count('class="verdict-plot"') == 1 and 'id="verdicts"' in page
    assert "1 consistent, 3 differs, 1 failed, 2 no real-data run." in page
    for tier in ("identical", "agree", "consistent", "differs", "executable", "not-comparable", "failed"):
        assert f"</span>{tier}</dt>" in page


def test_render_html__no_real_data_run__a_sentence_not_an_empty_plot(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(SC / "models", root / "models")
    paths = Paths(root=root, cache=tmp_path / "cache")
    page = report_html.render_html(report.build_report(load_registry(paths.models), paths), {})
    parse_page(page)
    assert 'class="verdict-plot"' not in page
    assert "No model has run on the real data yet (1 no real-data run), so there is no numerical verdict" in page


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium)")
def test_verdict_plot__headless_chromium__drawn(tmp_path: Path, rep: dict[str, object]) -> None:
    """The page with the plot and the same page without it: the plot is what differs."""
    with_plot, without = tmp_path / "with.html", tmp_path / "without.html"
    with_plot.write_text(report_html.render_html(rep, {}), encoding="utf-8")
    bare = dict(rep)
    bare["models"] = [m | {"run": None, "other_runs": {}} for m in rep["models"]]  # type: ignore[attr-defined]
    without.write_text(report_html.render_html(bare, {}), encoding="utf-8")
    a, b = screenshot(with_plot, tmp_path), screenshot(without, tmp_path)
    assert png_size(a) == png_size(b)
    assert len(a) > len(b) * 1.2, (len(a), len(b))


def test_verdict_svg__no_numerical_verdict__rows_in_words_and_no_axis(rep: dict[str, object]) -> None:
    rows = [r for r in report_html.verdict_rows(rep) if not r.numerical]
    svg = report_html.verdict_svg(rows)
    assert len(_rows_of(svg)) == len(rows) == 4
    assert "stroke-dasharray" not in svg and "%</text>" not in svg and "(re-executed − reported)" not in svg
    page = report_html.render_html(rep | {"models": [m for m in rep["models"]  # type: ignore[attr-defined]
                                                     if m["name"] in ("fixture_only", "old")]}, {})
    assert page.count('class="verdict-plot"') == 1
    assert "None of these runs has a numerical verdict yet, so nothing is drawn on the axis." in page
