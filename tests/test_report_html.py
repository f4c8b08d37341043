"""``pyrepro report --html``: one self-contained page, the status table and each model's graph."""

from __future__ import annotations

import copy
import os
import shutil
import struct
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pyrepro import proc, report, report_html
from pyrepro.cli import app, main
from pyrepro.paths import Paths
from pyrepro.registry import load_registry
from tests.conftest import have
from tests.test_json_envelope import check_envelope

SC = Path(__file__).parent / "scenarios" / "backend"
XSS = "<script>alert(1)</script>"
VOID = {"meta", "link", "br", "hr", "img", "input", "col", "wbr", "source", "area", "base", "embed", "track"}


class PageParser(HTMLParser):
    """Checks that every element is closed in order, and collects the status table's rows (the
    first cell's text) and the per-model sections (their ids)."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: set[str] = set()
        self.rows: list[str] = []
        self.sections: list[str] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag in VOID:
            return
        self.stack.append(tag)
        if tag == "section":
            self.sections.append(dict(attrs).get("id") or "")
        elif tag == "tr" and "tbody" in self.stack:
            self._row = []
        elif tag == "td" and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()
        if tag == "td" and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row[0])
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def parse_page(text: str) -> PageParser:
    p = PageParser()
    p.feed(text)
    p.close()
    assert p.errors == [] and p.stack == [], (p.errors, p.stack)
    return p


def fixture_project(tmp_path: Path) -> Paths:
    """Two models: ``mini`` with a pdm.lock, ``nolock`` without one and with markup in its
    upstream name and notes."""
    root = tmp_path / "root"
    shutil.copytree(SC / "models", root / "models")
    nolock = root / "models" / "nolock"
    nolock.mkdir()
    text = (SC / "models" / "mini" / "model.toml").read_text()
    text = text.replace('name = "mini"', f'name = "nolock"\nupstream_name = "{XSS}"\nnotes = "{XSS} & more"')
    (nolock / "model.toml").write_text(text)
    (root / "flake.nix").write_text("{}\n")
    (root / "docs").mkdir()
    return Paths(root=root, cache=tmp_path / "cache")


def write_page(paths: Paths, out: Path) -> str:
    reg = load_registry(paths.models)
    report_html.write_html(report.build_report(reg, paths), reg, paths, out)
    return out.read_text(encoding="utf-8")


def test_report_cli__html__well_formed_page_with_a_row_and_section_per_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = fixture_project(tmp_path)
    monkeypatch.setenv("PYREPRO_ROOT", str(paths.root))
    monkeypatch.setenv("PYREPRO_CACHE", str(paths.cache))
    out = tmp_path / "page" / "status.html"
    res = CliRunner().invoke(app, ["report", "--no-refresh", "--html", str(out)])
    assert res.exit_code == 0, res.output
    assert str(out) in res.stdout
    page = out.read_text(encoding="utf-8")
    p = parse_page(page)
    names = load_registry(paths.models).names()
    assert p.rows == names == ["mini", "nolock"]
    assert p.sections == [f"model-{n}" for n in names]
    assert [c for c in report.STATUS_COLUMNS if f"<th scope=\"col\">{c}</th>" not in page] == []
    # markup from the registry is text on the page, never an element
    assert "script" not in p.tags and XSS not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in page
    # self-contained: nothing fetched
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "").replace(
        'xmlns:xlink="http://www.w3.org/1999/xlink"', "") and "https://" not in page
    if have("dot"):
        assert page.count("<svg") == 1 and "max-width: 100%" in page and "legend" in page
        assert "<?xml" not in page and "<!DOCTYPE svg" not in page


def test_render_html__model_name_with_markup__escaped(tmp_path: Path) -> None:
    """Registry names cannot hold markup (NAME_RE), but the renderer does not rely on that."""
    paths = fixture_project(tmp_path)
    rep = report.build_report(load_registry(paths.models), paths)
    bad = copy.deepcopy(rep["models"][0]) | {"name": XSS}
    bad["run"] = {"exit_code": None, "error": f"failed: {XSS}", "verdict": {"tier": "failed", "reason": XSS}}
    page = report_html.render_html(rep | {"models": [bad]}, {XSS: report_html.ModelGraph(None, f"why: {XSS}")})
    p = parse_page(page)
    assert "script" not in p.tags and XSS not in page
    assert p.rows == [XSS]  # the text, decoded by the parser
    assert page.count("&lt;script&gt;") >= 5  # row, heading, run error, verdict reason, graph reason


def test_report_cli__json_and_html__envelope_names_the_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    paths = fixture_project(tmp_path)
    monkeypatch.setenv("PYREPRO_ROOT", str(paths.root))
    monkeypatch.setenv("PYREPRO_CACHE", str(paths.cache))
    out = tmp_path / "status.html"
    assert main(["report", "--no-refresh", "--json", "--html", str(out)]) == 0
    doc = check_envelope(capsys.readouterr().out, 0)
    assert doc["result"]["html"] == str(out) and out.is_file()
    assert [m["name"] for m in doc["result"]["models"]] == ["mini", "nolock"]
    assert main(["report", "--no-refresh", "--json"]) == 0
    assert check_envelope(capsys.readouterr().out, 0)["result"]["html"] is None


def test_write_html__no_dot_and_no_lock__reasons_instead_of_graphs(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    paths = fixture_project(tmp_path)
    monkeypatch.setattr(proc, "which", lambda _p, path=None: None)
    page = write_page(paths, tmp_path / "status.html")
    parse_page(page)
    assert "<svg" not in page
    assert "No graph: graphviz &#39;dot&#39; is not installed" in page and "apt-get install graphviz" in page
    assert "No graph: nolock is not locked yet (no models/nolock/pdm.lock)" in page


def test_write_html__broken_lock__reason_and_the_rest_of_the_page(tmp_path: Path) -> None:
    paths = fixture_project(tmp_path)
    (paths.models / "mini" / "pdm.lock").write_text("[[package]\nbroken = = 1\n")
    page = write_page(paths, tmp_path / "status.html")
    assert parse_page(page).sections == ["model-mini", "model-nolock"]
    assert "No graph: " in page and "not a valid pdm.lock" in page and "pyrepro lock NAME" in page


# --------------------------------------------------------------------------- in a real browser

CHROMIUM = shutil.which("chromium")
SIZE = (1280, 2000)


def screenshot(page: Path, tmp: Path) -> bytes:
    """A headless chromium screenshot of ``page`` at ``SIZE``, with its own profile and HOME."""
    png = tmp / f"{page.stem}.png"
    (tmp / "home").mkdir(exist_ok=True)
    proc.run([str(CHROMIUM), "--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp / 'profile'}",
              f"--screenshot={png}", f"--window-size={SIZE[0]},{SIZE[1]}", page.resolve().as_uri()],
             env={**os.environ, "HOME": str(tmp / "home")}, timeout=60)
    return png.read_bytes()


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from the IHDR chunk, which follows the 8-byte signature."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium)")
def test_report_html__headless_chromium__screenshot_is_the_page_not_blank(tmp_path: Path) -> None:
    paths = fixture_project(tmp_path)
    page = tmp_path / "status.html"
    write_page(paths, page)
    empty = tmp_path / "empty.html"
    empty.write_text('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>empty</title></head>'
                     "<body></body></html>\n")
    shot, blank = screenshot(page, tmp_path), screenshot(empty, tmp_path)
    assert png_size(shot) == png_size(blank) == SIZE
    assert shot != blank
    assert len(shot) > 3 * len(blank), (len(shot), len(blank))  # text, table and graph compress far worse
