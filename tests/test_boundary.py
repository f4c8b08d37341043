"""Issue 43, item 4: the submission folder is the boundary.

scan, init and staging never read or copy through a symbolic link that leads out of the submission
folder (each such link is a warning that names it, never the target's content); staged trees hold
no live link out; ``file:`` and URL requirements are sources or refusals, never a PyPI name; and
``pyrepro run`` of an unreviewed draft needs ``--draft``. Every case goes through the CLI.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tomllib
from pathlib import Path

import pytest

from pyrepro import sources
from pyrepro.cli import main
from pyrepro.registry import load_registry
from tests.fakes import json_result

REPO = Path(__file__).resolve().parent.parent
BACKEND = Path(__file__).parent / "scenarios" / "backend"
SECRET = ["alice:x:1000:1000:SECRET-LINE-ONE:/home/alice:/bin/bash",
          "bob:x:1001:1001:SECRET-LINE-TWO:/home/bob:/bin/sh",
          "hunter2-SECRET-TOKEN"]


def _outside(tmp_path: Path) -> Path:
    """A folder next to the submission: what a link may not lead to."""
    out = tmp_path / "outside"
    out.mkdir(exist_ok=True)
    (out / "passwd").write_text("\n".join(SECRET) + "\n")
    (out / "req.txt").write_text("outsidedep==1.0\n")
    return out


def _submission(tmp_path: Path, requirements: str, code: str = "import numpy\n") -> Path:
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "run.py").write_text(code)
    (sub / "requirements.txt").write_text(requirements)
    return sub


def _outputs(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    got = capsys.readouterr()
    return got.out, got.err


def _init(sub: Path, models: Path, *extra: str) -> int:
    return main(["init", str(sub), "--name", "sub", "--models-dir", str(models), "--offline", *extra])


def _model(models: Path) -> dict:
    return tomllib.loads((models / "sub" / "model.toml").read_text())


def _dependency_names(doc: dict) -> set[str]:
    deps = doc.get("dependencies", {})
    names = {r.split(";")[0].split("[")[0].strip() for r in [*deps.get("scanned", []), *deps.get("extra", [])]}
    return names | {p["name"] for p in deps.get("pins", [])}


# ------------------------------------------------------------------ links out of the folder

@pytest.mark.parametrize("target", ["fixture", "etc"])
def test_scan_and_init_cli__link_to_etc_and_include_through_it__warned_by_link_never_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_cache: Path, target: str) -> None:
    """``etc -> /etc`` and ``-r etc/passwd``: the include is refused at the link (named with the
    requirements file and line); no line of the target reaches stdout, stderr or --json."""
    if target == "etc":
        if not Path("/etc/passwd").is_file():
            pytest.skip("no /etc/passwd on this machine")
        link_to, lines = "/etc", [ln for ln in Path("/etc/passwd").read_text().splitlines() if ln.strip()]
    else:
        link_to, lines = str(_outside(tmp_path)), SECRET
    sub = _submission(tmp_path, "numpy\n-r etc/passwd\n")
    (sub / "etc").symlink_to(link_to)
    texts = []
    for argv in (["scan", str(sub)], ["scan", str(sub), "--json", "--no-cache"]):
        assert main(argv) == 0
        texts.append("\n".join(_outputs(capsys)))
    assert _init(sub, tmp_path / "models", "--json") == 0
    out, err = _outputs(capsys)
    texts.append(out + err)
    texts.append((tmp_path / "models" / "sub" / "model.toml").read_text())
    for text in texts:
        leaked = [ln for ln in lines if ln in text]
        assert not leaked, leaked
    warnings = json_result(out)["warnings"]
    assert any(w == f"requirements.txt:2: includes etc/passwd: etc is a link to {link_to!r}, outside the scanned "
                    "folder; not read" for w in warnings), warnings


def test_scan_and_init_cli__requirements_file_outside_through_a_link__not_a_dependency(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_cache: Path) -> None:
    """``o -> ../outside`` and ``-r o/req.txt``: the outside file's pins are never declarations."""
    _outside(tmp_path)
    sub = _submission(tmp_path, "numpy\n-r o/req.txt\n")
    (sub / "o").symlink_to("../outside")
    assert main(["scan", str(sub), "--json", "--no-cache"]) == 0
    res = json_result(capsys.readouterr().out)
    assert "outsidedep" not in res["declared"]
    assert "requirements.txt:2: includes o/req.txt: o is a link to '../outside', outside the scanned folder; " \
           "not read" in res["warnings"], res["warnings"]
    assert _init(sub, tmp_path / "models") == 0
    doc = _model(tmp_path / "models")
    assert "outsidedep" not in _dependency_names(doc) and "outsidedep" not in json.dumps(doc)


def test_scan_cli__links_inside_the_folder__followed_once_and_a_loop_ends(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A link that stays inside may be followed (``alias -> reqs``); a link back to the folder
    (``same -> .``) that an include goes through again is read once, not until the path is too long."""
    sub = _submission(tmp_path, "-r alias/base.txt\n-r same/requirements.txt\n", "import numpy, scipy\n")
    (sub / "reqs").mkdir()
    (sub / "reqs" / "base.txt").write_text("scipy==1.5.4\n")
    (sub / "alias").symlink_to("reqs")
    (sub / "same").symlink_to(".")
    (sub / "loop").symlink_to("loop")
    assert main(["scan", str(sub), "--json", "--no-cache"]) == 0
    res = json_result(capsys.readouterr().out)
    assert [(d["name"], d["location"]["path"]) for d in res["declarations"]] == [("scipy", "alias/base.txt")]
    assert not any("outside the scanned folder" in w for w in res["warnings"]), res["warnings"]


def test_scan_cli__code_file_linked_outside__not_read_and_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _outside(tmp_path)
    (out / "evil.py").write_text("import outsidemodule\n")
    sub = _submission(tmp_path, "numpy\n")
    (sub / "evil.py").symlink_to(out / "evil.py")
    assert main(["scan", str(sub), "--json", "--no-cache"]) == 0
    res = json_result(capsys.readouterr().out)
    assert "outsidemodule" not in json.dumps(res["imports"]) + json.dumps(res["guesses"])
    assert any(w.startswith("evil.py: evil.py is a link to ") and "outside the scanned folder; not read" in w
               for w in res["warnings"]), res["warnings"]


def test_init_cli__readme_linked_outside__its_text_is_no_evidence(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_cache: Path) -> None:
    """init's evidence readers (Python version, GPU, dates) see the folder without its links out: a
    README linked to a file elsewhere that says "Python 3.7" does not decide the Python."""
    out = _outside(tmp_path)
    (out / "notes.md").write_text("# Notes\n\n```\nconda create -n secret-env-name python=3.7\n```\n")
    sub = _submission(tmp_path, "numpy\n")
    (sub / "README.md").symlink_to(out / "notes.md")
    assert _init(sub, tmp_path / "models", "--json") == 0
    res = json_result(capsys.readouterr().out)
    assert res["python"]["version"] != "3.7" and "README" not in res["python"]["reason"], res["python"]
    assert "secret-env-name" not in json.dumps(res)
    assert "3.7" not in (tmp_path / "models" / "sub" / "model.toml").read_text()
    assert (sub / "README.md").is_symlink()  # the submission itself is untouched


# ------------------------------------------------------------------ staged trees

def test_build_cli__source_with_links_out__staged_tree_holds_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    """The pinned source holds an absolute link out, a relative one that climbs out, a link loop
    and a link inside: the staged tree keeps only the inside one, and each other one is a warning
    naming it (the marker lists them too)."""
    out = _outside(tmp_path)
    root = tmp_path / "root"
    shutil.copytree(BACKEND / "models", root / "models")
    shutil.copytree(BACKEND / "patches", root / "patches")
    (root / "flake.nix").write_text("{ }\n")
    mirror = tmp_path / "mirror"
    shutil.copytree(BACKEND / "mirror", mirror)
    contrib = mirror / "repo" / "contrib"
    (contrib / "secrets").symlink_to(out)  # absolute
    (contrib / "passwd").symlink_to("../../../outside/passwd")  # relative, climbs out
    (contrib / "data").mkdir()
    (contrib / "data" / "up").symlink_to("../../../../outside")
    (contrib / "loop").symlink_to("loop")
    (contrib / "same.py").symlink_to("run.py")  # stays inside: kept
    model = root / "models" / "mini" / "model.toml"
    old_tree = load_registry(root / "models").get("mini").source.tree
    model.write_text(model.read_text().replace(old_tree, sources.git_tree_id(contrib)))
    monkeypatch.setenv("PYREPRO_ROOT", str(root))
    monkeypatch.setenv("PYREPRO_CACHE", str(tmp_path / "cache"))
    with caplog.at_level(logging.WARNING):
        assert main(["build", "mini", "--mirror", str(mirror)]) == 0
    staged = next((tmp_path / "cache" / "staged").glob("mini-*"))
    src = staged / "src"
    links = {}
    for dirpath, dirnames, filenames in os.walk(staged):
        for n in [*dirnames, *filenames]:
            p = Path(dirpath, n)
            if p.is_symlink():
                links[p.relative_to(src).as_posix()] = os.readlink(p)
                assert Path(os.path.realpath(p)).is_relative_to(os.path.realpath(staged)), p
    assert links == {"same.py": "run.py"}
    marker = json.loads((staged / ".pyrepro-complete").read_text())
    assert sorted(marker["links_out"]) == ["data/up", "loop", "passwd", "secrets"]
    said = caplog.text + "\n".join(_outputs(capsys))
    for rel in ("data/up", "loop", "passwd", "secrets"):
        assert f"mini: {rel} is a link out of the source" in said, said
    assert not any(line in said for line in SECRET)


# ------------------------------------------------------------------ direct references

def test_init_cli__file_url_requirement_outside__refused_never_pypi_attrs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_cache: Path) -> None:
    out = _outside(tmp_path)
    (out / "attrs").mkdir()
    sub = _submission(tmp_path, f"numpy\nattrs @ file://{out / 'attrs'}\n")
    assert _init(sub, tmp_path / "models") == 0
    doc = _model(tmp_path / "models")
    assert "attrs" not in _dependency_names(doc), doc["dependencies"]
    capsys.readouterr()
    assert main(["scan", str(sub), "--json", "--no-cache"]) == 0
    warnings = json_result(capsys.readouterr().out)["warnings"]
    assert any(w.startswith("requirements.txt:2: attrs points at a local file") and "not a PyPI name" in w
               and "extra_sources" in w for w in warnings), warnings
    assert "attrs (requirements.txt:2: attrs @ file://" in doc["notes"] and "refused" in doc["notes"]
    pyproject = tomllib.loads((tmp_path / "models" / "sub" / "pyproject.toml").read_text())
    assert not any(r.startswith("attrs") for r in pyproject["project"]["dependencies"])


def test_init_cli__file_url_through_a_link_out__refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_cache: Path) -> None:
    """A ``file:`` address inside the folder's path that a link takes outside is outside."""
    out = _outside(tmp_path)
    (out / "lib").mkdir()
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "o").symlink_to("../outside")
    (sub / "run.py").write_text("import numpy\n")
    (sub / "requirements.txt").write_text(f"mylib @ file://{sub / 'o' / 'lib'}\n")
    assert _init(sub, tmp_path / "models") == 0
    doc = _model(tmp_path / "models")
    assert "mylib" not in _dependency_names(doc) and "code outside the submission: refused" in doc["notes"]


def test_init_cli__file_url_into_the_folder__recorded_as_its_own_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_cache: Path) -> None:
    sub = _submission(tmp_path, "numpy\n")
    (sub / "vendor" / "mylib").mkdir(parents=True)
    (sub / "vendor" / "mylib" / "setup.py").write_text("from setuptools import setup\nsetup(name='mylib')\n")
    (sub / "requirements.txt").write_text(f"numpy\nmylib @ file://{sub / 'vendor' / 'mylib'}\n")
    assert _init(sub, tmp_path / "models") == 0
    doc = _model(tmp_path / "models")
    assert "mylib" not in _dependency_names(doc)
    assert "mylib (requirements.txt:2: mylib @ file://" in doc["notes"]
    assert "the submission's own code (vendor/mylib)" in doc["notes"]


def test_init_cli__url_requirement__refused_never_a_pypi_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_cache: Path) -> None:
    sub = _submission(tmp_path, "numpy\nevilpkg @ https://example.com/downloads/latest.tar.gz\n",
                      "import numpy\nimport evilpkg\n")
    assert _init(sub, tmp_path / "models", "--json") == 0
    res = json_result(capsys.readouterr().out)
    doc = _model(tmp_path / "models")
    # imported too: the declaration does not confirm the guess 'evilpkg' as PyPI's evilpkg
    assert "evilpkg" not in _dependency_names(doc), doc["dependencies"]
    assert any(w.startswith("requirements.txt:2: evilpkg @ https://example.com/downloads/latest.tar.gz is a direct "
                            "reference to a web address: not a PyPI name") for w in res["warnings"]), res["warnings"]
    assert "evilpkg (requirements.txt:2: evilpkg @ https://example.com/" in doc["notes"]


def test_init_cli__imported_module_declared_as_a_conda_build_file__import_decides_and_is_noted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_cache: Path) -> None:
    """A ``pip freeze`` of a conda environment (``numpy @ file:///croot/...``): the code imports
    numpy, so numpy is a dependency by its import, never by that line, and the note says so."""
    sub = _submission(tmp_path, "numpy @ file:///croot/numpy_and_numpy_base_1672336185480/work\n"
                                "six @ file:///tmp/build/80754af9/six_1644875935023/work\n")
    assert _init(sub, tmp_path / "models") == 0
    doc = _model(tmp_path / "models")
    assert doc["dependencies"]["scanned"] == ["numpy"] and "six" not in _dependency_names(doc)
    assert "the code imports numpy, declared only as direct references" in doc["notes"]


def test_scan_cli__pipfile_path_and_file_entries__not_pypi_names(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "run.py").write_text("import numpy\n")
    (sub / "Pipfile").write_text('[packages]\nnumpy = "*"\nattrs = {path = "/somewhere/attrs"}\n'
                                 'evil = {file = "https://example.com/evil.tar.gz"}\n')
    assert main(["scan", str(sub), "--json", "--no-cache"]) == 0
    res = json_result(capsys.readouterr().out)
    assert res["declared"] == ["numpy"]
    assert any(w.startswith("Pipfile:3: attrs comes from /somewhere/attrs") for w in res["warnings"])


# ------------------------------------------------------------------ unreviewed drafts

def test_run_cli__unreviewed_draft__refused_without_draft_flag(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], repro_project: Path) -> None:
    sub = _submission(tmp_path, "numpy\n")
    models = repro_project / "models"
    assert _init(sub, models) == 0
    assert _model(models)["draft"] is True
    capsys.readouterr()
    assert main(["run", "sub", "--test"]) == 2
    err = capsys.readouterr().err
    assert "sub: an unreviewed draft" in err and "--draft" in err and "draft = true" in err
    assert not (repro_project.parent / "cache" / "staged").exists()  # nothing was staged or built
    assert main(["run", "exfoliation", "--test"]) == 2  # the benchmark's only model is the draft
    # with the flag it goes on to the run (which stops here at the missing lock, exit 4)
    assert main(["run", "sub", "--test", "--draft"]) == 4
    assert "no lock for sub" in capsys.readouterr().err
    # reviewed: the line deleted, it runs without the flag
    mt = models / "sub" / "model.toml"
    mt.write_text(mt.read_text().replace("draft = true\n", ""))
    assert main(["run", "sub", "--test"]) == 4


def test_run_cli__benchmark__drafts_left_out_and_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], repro_project: Path) -> None:
    models = repro_project / "models"
    for name in ("one", "two"):
        sub = tmp_path / name
        sub.mkdir()
        (sub / "run.py").write_text("import numpy\n")
        assert main(["init", str(sub), "--name", name, "--models-dir", str(models), "--offline"]) == 0
    mt = models / "one" / "model.toml"
    mt.write_text(mt.read_text().replace("draft = true\n", ""))
    capsys.readouterr()
    assert main(["run", "exfoliation", "--test"]) == 4  # one runs (and stops at its missing lock), two is left out
    err = capsys.readouterr().err
    assert "not run, unreviewed drafts: two" in err and "no lock for one" in err and "no lock for two" not in err


def test_registry__curated_models__none_is_a_draft_and_a_bad_value_is_named(tmp_path: Path) -> None:
    assert [s.name for s in load_registry(REPO / "models") if s.draft] == []
    shutil.copytree(BACKEND / "models", tmp_path / "models")
    mt = tmp_path / "models" / "mini" / "model.toml"
    mt.write_text(mt.read_text().replace('name = "mini"\n', 'name = "mini"\ndraft = "yes"\n'))
    from pyrepro.errors import InputError

    with pytest.raises(InputError, match=r"\[draft\]: expected true or false"):
        load_registry(tmp_path / "models")
