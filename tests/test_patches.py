"""Patch series: parsing, applying to a pristine copy, refusing drift, static checks, new."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pyrepro import patches, sources
from pyrepro.errors import InputError, IntegrityError, PatchError
from pyrepro.registry import SourcePin

SC = Path(__file__).parent / "scenarios" / "patch"
REPO = Path(__file__).resolve().parent.parent


def test_load_series__fixture__parsed_headers_and_hunks() -> None:
    series = patches.load_series(SC / "series")
    assert [(p.number, p.slug, p.category) for p in series] == [(1, "uniform-cli", "cli"), (2, "test-mode", "test-mode")]
    assert series[0].files == ("run.py",) and len(series[0].hunks) == 1
    assert series[1].effect.startswith("none:")


def test_apply_series__clean__patched_copy_and_pristine_untouched(tmp_path: Path) -> None:
    before = (SC / "contrib" / "run.py").read_text()
    out = patches.apply_series(patches.load_series(SC / "series"), SC / "contrib", tmp_path / "out")
    text = (out / "run.py").read_text()
    assert "EPOCHS = 2 if args.test else 100" in text and "--benchmarks-dir" in text
    assert (SC / "contrib" / "run.py").read_text() == before
    check = patches.static_check(out, "run.py")
    assert check.uniform and check.missing_flags == ()


def test_apply_series__offset_hunk__refused_nothing_left(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(SC / "contrib", src)
    # one extra line above the second patch's hunk: it would apply 1 line lower
    (src / "run.py").write_text((src / "run.py").read_text().replace("def load():", "# extra\ndef load():"))
    dest = tmp_path / "out"
    with pytest.raises(PatchError) as e:
        patches.apply_series(patches.load_series(SC / "series"), src, dest)
    assert "0002-test-mode.patch" in str(e.value) and "run.py" in str(e.value) and "hunk #1" in str(e.value)
    assert "offset of 1 lines" in str(e.value)
    assert not dest.exists() and [p.name for p in tmp_path.iterdir()] == ["src"]


def test_apply_series__patch_no_longer_applies__clear_error_no_partial(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(SC / "contrib", src)
    (src / "run.py").write_text((src / "run.py").read_text().replace("EPOCHS = 100", "EPOCHS = 300"))
    with pytest.raises(PatchError) as e:
        patches.apply_series(patches.load_series(SC / "series"), src, tmp_path / "out")
    assert "0002-test-mode.patch" in str(e.value) and "hunk #1 does not apply" in str(e.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def test_obtain_source__tampered_pristine__refused(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror" / "repo" / "contrib"
    shutil.copytree(SC / "contrib", mirror)
    pin = SourcePin("https://github.com/x/repo", "0" * 40, "contrib", sources.git_tree_id(mirror))
    got = sources.obtain_source(pin, mirror=tmp_path / "mirror", cache=tmp_path / "cache").path
    assert (got / "run.py").is_file()
    sources.make_writable(got)
    (got / "run.py").write_text("tampered\n")
    (mirror / "notes.txt").write_text("tampered too\n")
    with pytest.raises(IntegrityError) as e:
        sources.obtain_source(pin, mirror=tmp_path / "mirror", cache=tmp_path / "cache")
    assert pin.tree in str(e.value)


@pytest.mark.parametrize(("text", "needle"), [
    ("Subject: x\nCategory: magic\nWhy: y\nEffect: none: z\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n", "unknown category"),
    ("Subject: x\nCategory: cli\nWhy: y\nEffect: maybe\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n", "Effect must start"),
    ("Subject: x\nCategory: cli\nEffect: none: z\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n", "missing header field Why"),
    ("Subject: x\nCategory: cli\nWhy: y\nEffect: none: z\n", "no diff"),
    ("Bogus line\n--- a/f\n", "unexpected header line"),
])
def test_parse_patch__bad_header__input_error_names_file(tmp_path: Path, text: str, needle: str) -> None:
    p = tmp_path / "0001-x.patch"
    p.write_text(text)
    with pytest.raises(InputError) as e:
        patches.parse_patch(p)
    assert needle in str(e.value) and "0001-x.patch" in str(e.value)


def test_load_series__gap_in_numbers__input_error(tmp_path: Path) -> None:
    shutil.copy(SC / "series" / "0002-test-mode.patch", tmp_path / "0002-test-mode.patch")
    with pytest.raises(InputError, match="without gaps"):
        patches.load_series(tmp_path)


def test_new_patch__edited_copy__next_patch_applies_cleanly(tmp_path: Path) -> None:
    series_dir = tmp_path / "series"
    shutil.copytree(SC / "series", series_dir)
    base = patches.apply_series(patches.load_series(series_dir), SC / "contrib", tmp_path / "base")
    work = tmp_path / "work"
    shutil.copytree(base, work)
    (work / "notes.txt").write_text("line one\nline 2\nline three\n")
    out = patches.new_patch(series_dir, base, work, slug="notes", category="paths", subject="Edit notes",
                            why="a test", effect="none: a test")
    assert out.name == "0003-notes.patch"
    final = patches.apply_series(patches.load_series(series_dir), SC / "contrib", tmp_path / "final")
    assert (final / "notes.txt").read_text() == "line one\nline 2\nline three\n"
    with pytest.raises(InputError, match="nothing to record"):
        patches.new_patch(series_dir, final, final, slug="none", category="cli", subject="x", why="y", effect="none: z")


def test_static_check__missing_flags_and_leftovers(tmp_path: Path) -> None:
    (tmp_path / "run.py").write_text("import os\nos.system('zip a.zip a')\n")
    check = patches.static_check(tmp_path, "run.py")
    assert not check.uniform and "--benchmark" in check.missing_flags
    assert check.leftovers == ("run.py:2: shell zip",)


@pytest.mark.upstream
def test_patch_check__every_model_with_a_series__applies_and_has_uniform_flags(upstream: Path, tmp_path: Path) -> None:
    from pyrepro.registry import load_registry

    reg = load_registry(REPO / "models")
    checked = 0
    for spec in reg:
        pdir = REPO / "patches" / spec.name
        if not pdir.is_dir():
            continue
        pristine = sources.obtain_source(spec.source, mirror=upstream, cache=tmp_path / "cache").path
        res = patches.check_model(spec, pdir, pristine)
        assert res.ok, (spec.name, res.static)
        checked += 1
    assert checked >= 8
