"""Issue 44, item 2: the batch report: one self-contained page and a markdown summary, with the
counts, a sortable row per submission and docs/STATUS.md's own caveats."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pyrepro import batch, batch_report, report
from pyrepro.batch import Entry, Options


def _summary() -> dict[str, Any]:
    es = [Entry("alpha", Path("/c/alpha"), "2023-01-15", "dft_3d_exfoliation_energy"),
          Entry("beta", Path("/c/beta_model")), Entry("gamma", Path("/c/gamma")), Entry("delta", Path("/c/delta")),
          Entry("evil", Path("/c/evil"))]
    res = {
        "alpha": {"name": "alpha", "folder": "/c/alpha", "status": "passed", "stage": "imports", "category": 1,
                  "seconds": 41.5, "reason": "", "next_step": None},
        "beta": {"name": "beta", "folder": "/c/beta_model", "status": "failed", "stage": "lock", "category": 4,
                 "seconds": 300.25, "reason": "no lock (category 4: failed): tensorflow==1.15.0 has no wheel",
                 "next_step": "add a reviewed pin to model.toml"},
        "gamma": {"name": "gamma", "folder": "/c/gamma", "status": "crashed", "stage": None, "category": None,
                  "seconds": 9.0, "reason": "the worker was killed by signal 9", "next_step": "read the log"},
        "evil": {"name": "evil", "folder": "/c/evil", "status": "failed", "stage": "init", "category": None,
                 "seconds": 0.1, "reason": "<script>alert(1)</script> | pipes", "next_step": "x"},
    }
    return batch.summarise(es, res, options=Options(test=True), title="pyrepro batch: c", no_code=[Path("/c/docs")])


def test_summarise__counts_per_status_stage_and_category() -> None:
    s = _summary()
    assert s["statuses"] == {"passed": 1, "failed": 2, "crashed": 1, "interrupted": 0, "pending": 1}
    assert s["by_stage"] == {"init": {"passed": 0, "failed": 1}, "lock": {"passed": 0, "failed": 1},
                             "imports": {"passed": 1, "failed": 0}}
    assert s["by_category"] == {"1": 1, "4": 1, "none": 1}
    assert [r["status"] for r in s["rows"]] == ["passed", "failed", "crashed", "pending", "failed"]


def test_render_html__self_contained__no_external_resource() -> None:
    page = batch_report.render_html(_summary())
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link" not in page and "@import" not in page and "<script src" not in page
    assert page.count("<style>") == 1 and page.count("<script>") == 1


def test_render_html__rows_colours_and_escaping() -> None:
    page = batch_report.render_html(_summary())
    for name in ("alpha", "beta", "gamma", "delta", "evil"):
        assert f'data-v="{name}"' in page
    assert '<tr class="passed">' in page and '<tr class="failed">' in page and '<tr class="crashed">' in page
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "add a reviewed pin to model.toml" in page and "beta_model" in page  # folder shown where it differs
    assert "2023-01-15" in page and "dft_3d_exfoliation_energy" in page


def test_caveats__docs_status_statements__imported_not_copied() -> None:
    md = report.render_markdown({"generated": "", "models": []})
    section = md.split("## What this does and does not show", 1)[1].split("\n## ", 1)[0]
    bullets = [b for b in section.split("\n- ") if b.strip()]
    got = batch_report.caveats()
    assert len(got) == len(bullets) - 2  # without the two about the registry's curated models
    assert any(c.startswith("Not verified on the machines this was made on") for c in got)
    assert any("bubblewrap sandbox" in c for c in got)
    for page in (batch_report.render_html(_summary()), batch_report.render_markdown(_summary())):
        assert "Not verified on the machines this was made on" in page
        assert "Asked for test runs (--test)" in page


def test_caveats__status_section_gone__lookup_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "render_markdown", lambda rep: "# Status\n")
    with pytest.raises(LookupError):
        batch_report.caveats()


def test_render_markdown__tables_and_one_row_each() -> None:
    md = batch_report.render_markdown(_summary())
    assert "5 submissions, 1 passed, 2 failed, 1 crashed, 1 pending." in md
    assert "| lock | 0 | 1 |" in md and "| 4: failed | 1 |" in md
    assert "| alpha | passed | imports | 1 | 41.5 |  |  |" in md
    assert "| beta | failed | lock | 4 | 300.2 | no lock" in md
    assert "\\| pipes" in md  # a pipe in a reason does not split the row
    assert "Not run: 1 sub-folder(s) without Python code: `docs`." in md


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs headless chromium")
def test_render_html__sort_and_filter__work_in_a_browser(tmp_path: Path) -> None:
    page = batch_report.render_html(_summary())
    clicks = ("<script>var h=document.querySelectorAll('#rows th');h[4].click();h[4].click();"
              "var f=document.getElementById('filter');f.value='signal';f.dispatchEvent(new Event('input'));</script>")
    (tmp_path / "p.html").write_text(page.replace("</body>", clicks + "</body>"))
    dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--dump-dom", (tmp_path / "p.html").as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    secs = re.findall(r'data-label="seconds" data-v="([^"]*)"', dom)
    assert secs == ["300.25", "41.5", "9.0", "0.1", ""]  # the slowest first, no time last
    assert 'aria-sort="descending"' in dom
    shown = re.search(r'id="shown">(\d+) of (\d+) shown', dom)
    assert shown is not None and shown.groups() == ("1", "5")
