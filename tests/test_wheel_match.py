"""Imports with no known distribution, matched by what the declared distributions' wheels ship
(issue 12: "names are never invented"). The index is faked; the wheels are real zip files read
through HTTP-range-style reads of their central directory."""

from __future__ import annotations

import io
import json
import os
import tomllib
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyrepro.cli import main
from pyrepro.index import WheelIndex, _zip_names
from pyrepro.toplevel import distribution_top_levels, top_levels_of

Write = Callable[..., Path]


def _wheel(files: list[str], pad: int = 0) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for f in files:
            z.writestr(f, "x" * pad)
    return buf.getvalue()


WHEELS = {
    # a distribution whose module has another name, like PyMuPDF -> fitz
    "mupdfish-1.2.3-py3-none-any.whl": _wheel(["fitzy/__init__.py", "fitzy/core.py", "mupdfish-1.2.3.dist-info/RECORD"]),
    "otherpkg-2.0-py3-none-any.whl": _wheel(["otherpkg/__init__.py", "otherpkg-2.0.dist-info/RECORD"]),
    # a PyPI project called like a local helper module
    "helpers-9.9-py3-none-any.whl": _wheel(["helpers.py", "helpers-9.9.dist-info/RECORD"]),
    # an undeclared import's provider: the release of the submission's time ships the module
    "tabulatr-0.9-py3-none-any.whl": _wheel(["tabulatr/__init__.py", "tabulatr-0.9.dist-info/RECORD"]),
    "tabulatr-1.0-py3-none-any.whl": _wheel(["tabulatr/__init__.py", "tabulatr-1.0.dist-info/RECORD"]),
}
UPLOADS = {"tabulatr-0.9-py3-none-any.whl": "2021-05-01T10:00:00Z", "tabulatr-1.0-py3-none-any.whl": "2024-02-01T10:00:00Z",
           "helpers-9.9-py3-none-any.whl": "2019-01-01T10:00:00Z"}


def _fake_index(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    asked: list[str] = []

    def fetch(url: str) -> bytes | None:
        asked.append(url)
        proj = url.rstrip("/").rsplit("/", 1)[1]
        files = [{"filename": f, "url": f"https://files.example/{f}", "size": len(b),
                  **({"upload-time": UPLOADS[f]} if f in UPLOADS else {})}
                 for f, b in WHEELS.items() if f.split("-")[0] == proj.replace("-", "_")]
        return json.dumps({"files": files}).encode() if files else None

    def rng(url: str, start: int, length: int | None) -> bytes | None:
        asked.append(f"range {url} {start}")
        body = WHEELS[url.rsplit("/", 1)[1]]
        return body[start:] if start < 0 else body[start:start + (length or 0)]

    monkeypatch.setattr("pyrepro.index._urllib_fetch", fetch)
    monkeypatch.setattr("pyrepro.index._urllib_range", rng)
    return asked


def _init(folder: Path, models: Path) -> dict:
    assert main(["init", str(folder), "--name", "sub", "--models-dir", str(models), "--python", "3.10"]) == 0
    return tomllib.loads((models / "sub" / "model.toml").read_text())


def test_init__module_shipped_by_a_declared_wheel__mapping_with_the_wheel_named(
        write_files: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path) -> None:
    asked = _fake_index(monkeypatch)
    root = write_files({"sub/run.py": "import fitzy\nfrom fitzy.core import x\nimport otherpkg\n",
                        "sub/requirements.txt": "mupdfish==1.2.3\notherpkg\n"})
    doc = _init(root / "sub", tmp_path / "models")
    assert doc["mapping"]["fitzy"]["distribution"] == "mupdfish"
    assert "requirements.txt:1" in doc["mapping"]["fitzy"]["reason"]
    assert "mupdfish-1.2.3-py3-none-any.whl" in doc["mapping"]["fitzy"]["reason"]
    assert doc["dependencies"]["scanned"] == ["mupdfish", "otherpkg"]
    assert "fitzy" not in doc.get("notes", "")
    # the generated pyproject carries it, and the wheel's file list was read by range, once
    assert "mupdfish" in (tmp_path / "models" / "sub" / "pyproject.toml").read_text()
    assert sum(a.startswith("range") for a in asked) == 1
    assert (isolated_cache / "index" / "top-level" / "mupdfish-1.2.3-py3-none-any.whl.json").is_file()


def test_init__undeclared_generic_name__never_given_a_provider_said_why(
        write_files: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PyPI's 'helpers' wheel ships helpers, but an undeclared `import helpers` is the submission's
    own module left out of the folder: the name table says so, and nothing is installed."""
    _fake_index(monkeypatch)
    root = write_files({"sub/run.py": "import helpers\n"})
    doc = _init(root / "sub", tmp_path / "models")
    assert "mapping" not in doc and doc["dependencies"]["scanned"] == [] and doc["dependencies"]["extra"] == []
    assert "helpers" in doc["notes"] and "a generic name: the submission's own module" in doc["notes"]
    assert "helpers" not in (tmp_path / "models" / "sub" / "pyproject.toml").read_text().split("dependencies")[1]


def test_init__undeclared_import__provider_whose_wheel_of_the_submission_time_ships_it(
        write_files: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23: `import tabulatr`, nothing declared, submitted 2022: tabulatr 0.9 (uploaded 2021)
    ships tabulatr, so the draft maps it with that evidence (not 1.0, uploaded after the date), and
    it is a dependency from the first lock on."""
    _fake_index(monkeypatch)
    root = write_files({"sub/run.py": "import tabulatr\nimport otherpkg\n", "sub/requirements.txt": "otherpkg\n",
                        "sub/metadata.json": json.dumps({"date_submitted": "06-01-2022"})})
    doc = _init(root / "sub", tmp_path / "models")
    entry = doc["mapping"]["tabulatr"]
    assert entry["distribution"] == "tabulatr" and "tabulatr-0.9-py3-none-any.whl" in entry["reason"]
    assert "uploaded 2021-05-01, by the submission's date 2022-06-01" in entry["reason"]
    assert "rule import-provider" in entry["reason"]
    assert doc["dependencies"]["scanned"] == ["otherpkg", "tabulatr"]
    assert "tabulatr" not in doc.get("notes", "")
    assert '"tabulatr"' in (tmp_path / "models" / "sub" / "pyproject.toml").read_text()


def test_init__offline__no_index_asked_guess_stays_a_review_item(
        write_files: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _fake_index(monkeypatch)
    root = write_files({"sub/run.py": "import fitzy\n", "sub/requirements.txt": "mupdfish==1.2.3\n"})
    assert main(["init", str(root / "sub"), "--name", "sub", "--models-dir", str(tmp_path / "models"),
                 "--python", "3.10", "--offline"]) == 0
    doc = tomllib.loads((tmp_path / "models" / "sub" / "model.toml").read_text())
    assert asked == [] and "mapping" not in doc
    assert "import fitzy" in doc["notes"] and "only a guess" in doc["notes"]
    assert doc["dependencies"]["extra"] == ["mupdfish"]  # kept, as declared


def test_top_levels__big_zip_with_central_directory_outside_the_tail__second_read() -> None:
    body = _wheel([f"pkg{i}/__init__.py" for i in range(3)] + ["big/data.bin"], pad=200_000)
    reads: list[tuple[int, int | None]] = []

    def rng(url: str, start: int, length: int | None) -> bytes | None:
        reads.append((start, length))
        return body[start:] if start < 0 else body[start:start + (length or 0)]

    def fetch(url: str) -> bytes | None:
        return json.dumps({"files": [{"filename": "big-1.0-py3-none-any.whl", "url": "u", "size": len(body)}]}).encode()

    got = WheelIndex(None, fetch=fetch, range_fetch=rng).top_levels("big", "1.0")
    assert got == (frozenset({"pkg0", "pkg1", "pkg2", "big"}), "big-1.0-py3-none-any.whl")
    tail = body[-65536:]
    assert _zip_names(tail, len(body), lambda o, n: body[o:o + n]) is not None


def test_top_levels__not_a_zip_or_no_wheel__none() -> None:
    assert WheelIndex(None, fetch=lambda u: None, range_fetch=lambda u, s, n: None).top_levels("x") is None
    listing = json.dumps({"files": [{"filename": "x-1.0.tar.gz", "url": "u"}]}).encode()
    assert WheelIndex(None, fetch=lambda u: listing, range_fetch=lambda u, s, n: b"junk").top_levels("x") is None
    wl = json.dumps({"files": [{"filename": "x-1.0-py3-none-any.whl", "url": "u", "size": 4}]}).encode()
    assert WheelIndex(None, fetch=lambda u: wl, range_fetch=lambda u, s, n: b"junk").top_levels("x") is None


def test_top_levels_of__layouts() -> None:
    assert top_levels_of([
        "a/__init__.py", "b.py", "c.cpython-310-x86_64-linux-gnu.so", "d.abi3.so", "x-1.dist-info/RECORD",
        "x-1.data/purelib/e/__init__.py", "x-1.data/scripts/tool", "f.pth", "g-h/data.txt", "README",
    ]) == frozenset({"a", "b", "c", "d", "e"})


def test_distribution_top_levels__top_level_txt_first_else_installed_files() -> None:
    assert distribution_top_levels("yaml\n_yaml\n", ["yaml/__init__.py"]) == frozenset({"yaml", "_yaml"})
    installed = ["six.py", "six-1.16.0.dist-info/RECORD", "../../bin/tool", "bin/x", "__pycache__/six.cpython-311.pyc"]
    assert distribution_top_levels(None, installed) == frozenset({"six", "__pycache__"})
    assert distribution_top_levels("  \n", ["x-1.egg-info/PKG-INFO", "m.abi3.so"]) == frozenset({"m"})


def test_toplevel__the_import_probe_carries_it__runs_on_the_oldest_python(tmp_path: Path) -> None:
    """The import check sends pyrepro.toplevel's source to the model environment's interpreter:
    it must run there, down to CPython 3.6 (skipped when no 3.6 is installed)."""
    import subprocess

    from pyrepro import run
    from pyrepro.errors import PyreproError
    from pyrepro.interpreters import RELEASES, find_python

    try:
        py = find_python(RELEASES[0][0])
    except PyreproError as exc:
        pytest.skip(str(exc))
    src = run._import_probe()
    # a fake site-packages with one distribution: its top-level module is found from RECORD alone
    site = tmp_path / "site"
    (site / "fakedist-1.0.dist-info").mkdir(parents=True)
    (site / "fakedist-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: Fake_Dist\n\nbody\n")
    (site / "fakedist-1.0.dist-info" / "RECORD").write_text("fakemod/__init__.py,,\nfakedist-1.0.dist-info/RECORD,,\n")
    (site / "fakemod").mkdir()
    (site / "fakemod" / "__init__.py").write_text("X = 1\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([str(py), "-c", src, json.dumps({"modules": ["json"], "distributions": ["fake-dist"]})],
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(run.probe_result(out.stdout)) == [["json", "ok", ""], ["fakemod", "ok", ""]]
    probe = src.split("import importlib, json, os, re, sys, sysconfig", 1)[0] + (
        "print(sorted(top_levels_of(['a/__init__.py', 'b.py', 'x-1.dist-info/RECORD'])))")
    out2 = subprocess.run([str(py), "-c", probe], capture_output=True, text=True, timeout=60)
    assert out2.returncode == 0 and out2.stdout.strip() == "['a', 'b']", out2.stderr


@given(st.lists(st.from_regex(r"[a-z_][a-z0-9_]{0,6}(/[a-z0-9_]{1,5}){0,2}\.py", fullmatch=True), min_size=1,
                max_size=20, unique=True))
def test_zip_names__any_wheel__every_name_back(names: list[str]) -> None:
    body = _wheel(names)
    got = _zip_names(body[-65536:], len(body), lambda o, n: body[o:o + n])
    assert got is not None and sorted(got) == sorted(names)


def test_init__declared_git_requirements__sources_never_pypi_names(write_files: Write, tmp_path: Path) -> None:
    """Issue 12: a git requirement with a full commit becomes [[extra_sources]] (left out of the PyPI
    dependencies); one with a short ref or a branch is a review item; neither is a PyPI name."""
    full = "0123456789abcdef0123456789abcdef01234567"
    root = write_files({"sub/run.py": "import graphlist\nimport srcpkg\nimport numpy\n",
                        "sub/requirements.txt": f"numpy==1.26.4\ngit+https://github.com/x/graphlist@dcbf79e\n"
                                                f"srcpkg @ git+https://github.com/y/srcpkg.git@{full}\n"})
    assert main(["init", str(root / "sub"), "--name", "sub", "--models-dir", str(tmp_path / "models"),
                 "--python", "3.10", "--offline"]) == 0
    doc = tomllib.loads((tmp_path / "models" / "sub" / "model.toml").read_text())
    assert doc["extra_sources"] == [{"name": "srcpkg", "repository": "https://github.com/y/srcpkg.git",
                                     "commit": full, "install": "package"}]
    assert "graphlist" not in doc["dependencies"]["scanned"] and "graphlist" not in doc["dependencies"]["extra"]
    assert "declared VCS source graphlist (requirements.txt:2)" in doc["notes"] and "dcbf79e" in doc["notes"]
    pyproject = tomllib.loads((tmp_path / "models" / "sub" / "pyproject.toml").read_text())
    assert pyproject["project"]["dependencies"] == ["numpy==1.26.4"]


@pytest.mark.parametrize(("spec", "want"), [
    ("git+https://github.com/x/graphlist@dcbf79e", ("graphlist", "https://github.com/x/graphlist", "dcbf79e")),
    ("git+https://github.com/x/G-L.git@v1.0#egg=graphlist", ("graphlist", "https://github.com/x/G-L.git", "v1.0")),
    ("-e git+ssh://git@github.com/x/y.git#egg=yy", ("yy", "ssh://git@github.com/x/y.git", "")),
    ("pkg[extra] @ git+https://h/o/r@abc", ("pkg", "https://h/o/r", "abc")),
    ("numpy==1.2", None),
])
def test_vcs_source__forms(spec: str, want: tuple[str, str, str] | None) -> None:
    from pyrepro.scan.metadata import vcs_source

    assert vcs_source(spec) == want


@pytest.mark.integration
@pytest.mark.network
def test_init__real_pypi__import_hid_with_its_distribution_declared__mapped_by_its_wheel(
        write_files: Write, tmp_path: Path, isolated_cache: Path) -> None:
    """Against real PyPI: 'import hid' is in no name table (two projects ship it: hidapi and hid);
    hidapi==0.14.0 is declared, and its wheel's file list (read by range requests) shows it ships
    hid. (fitz, faiss and telegram, this test's earlier cases, went into the name table: PyPI's own
    'fitz', 'faiss' and 'telegram' are an unrelated project, a broken build and a placeholder.)"""
    root = write_files({"sub/run.py": "import hid\n", "sub/requirements.txt": "hidapi==0.14.0\n"})
    doc = _init(root / "sub", tmp_path / "models")
    assert doc["mapping"]["hid"]["distribution"] == "hidapi"
    assert "hidapi-0.14.0-" in doc["mapping"]["hid"]["reason"] and \
        "ships the top-level module hid" in doc["mapping"]["hid"]["reason"]
    assert doc["dependencies"]["scanned"] == ["hidapi"]
