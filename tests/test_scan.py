"""The scanner: scenario folders with expected results, bad input, hypothesis, the 15 targets."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyrepro.cli import main
from pyrepro.errors import NotFoundError
from pyrepro.resolve import Resolver
from pyrepro.scan import metadata, notebook, scan_path, shell
from pyrepro.scan import python as pysrc
from tests.fakes import json_result

SCENARIOS = Path(__file__).parent / "scenarios" / "scan"
GOLDEN = Path(__file__).parent / "golden" / "scan"


@pytest.mark.parametrize("name", sorted(p.name for p in SCENARIOS.iterdir() if p.is_dir()))
def test_scan_path__scenario__matches_expected(name: str) -> None:
    exp = json.loads((SCENARIOS / name / "expected.json").read_text())
    res = scan_path(SCENARIOS / name / "input", python="3.11")
    out = res.to_json()
    # "distributions" in a scenario's expected.json: every kind; the JSON keeps them apart
    assert sorted({*out["required"], *out["optional"], *(c["distribution"] for c in out["conditional"])}) == exp["distributions"]
    assert out["distributions"] == out["required"]
    assert [u["module"] for u in out["unresolved"]] == exp["unresolved"]
    assert out["runtime_tools"] == exp["runtime_tools"]
    assert sorted(i.module for i in res.imports if i.optional) == exp["optional"]
    for key in ("undeclared", "unused_declared"):
        if key in exp:
            assert out[key] == exp[key], key
    if "entry_points" in exp:
        assert [f"{e['interpreter']} {e['script']}" for e in out["entry_points"]] == exp["entry_points"]
    assert len(res.warnings) == exp["warnings"], [str(w) for w in res.warnings]
    text = "\n".join(out["warnings"])
    if "local_modules" in exp:
        assert [m["module"] for m in out["local_modules"]] == exp["local_modules"]
    for needle in exp.get("warning_contains", []):
        assert needle in text, (needle, text)
    for module, locs in exp.get("locations", {}).items():
        rec = next(i for i in res.imports if i.module == module)
        assert [[loc.path, loc.line, loc.cell] for loc in rec.locations] == locs


def test_scan_cli__json__matches_golden(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", str(SCENARIOS / "basic_jarvis" / "input"), "--json"]) == 0
    got = json_result(capsys.readouterr().out)
    want = json.loads((GOLDEN / "basic_jarvis.json").read_text())
    assert got == want


def test_scan_cli__missing_path__exit_4_no_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "/nonexistent/folder"]) == 4
    err = capsys.readouterr().err
    assert "path not found" in err and "Traceback" not in err


def test_scan_cli__empty_folder__exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", str(tmp_path), "--json"]) == 0
    assert json_result(capsys.readouterr().out)["distributions"] == []


def test_scan_path__missing__raises_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        scan_path(tmp_path / "nope")


def test_scan_path__symlink_loop_and_unreadable__warn(tmp_path: Path) -> None:
    (tmp_path / "run.py").write_text("import numpy\n")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "self.py").symlink_to(tmp_path / "self.py")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "link").symlink_to(tmp_path)  # a directory link back up: not followed
    secret = tmp_path / "secret.py"
    secret.write_text("import pandas\n")
    secret.chmod(0)
    try:
        res = scan_path(tmp_path)
    finally:
        secret.chmod(0o644)
    assert "numpy" in res.distributions
    text = "\n".join(map(str, res.warnings))
    assert "self.py: cannot read" in text
    if os.geteuid() != 0:  # root reads mode-0 files
        assert "secret.py: cannot read" in text


def test_scan_path__stdlib_per_version__tomllib_only_stdlib_on_311(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import tomllib\nimport distutils\n")
    assert scan_path(tmp_path, python="3.11").distributions == ()
    # not stdlib before 3.11: unresolved, saying which Pythons have it; never a guess or a dependency
    old = scan_path(tmp_path, python="3.10")
    assert "tomllib" not in {g.module for g in old.guesses} and "tomllib" not in old.distributions
    assert "standard library of Python 3.11-3.13 only" in next(u.note for u in old.unresolved if u.module == "tomllib")
    assert scan_path(tmp_path, python="3.12").distributions == ("setuptools",)  # distutils left the stdlib in 3.12


def test_resolver__prefix_rules__longest_prefix_wins() -> None:
    r = Resolver()
    assert r.resolve("google.protobuf").distribution == "protobuf"
    assert r.resolve("google.colab").resolved_with == "unresolved"
    # a Colab-only helper that refuses to import elsewhere (gnome, corpus5 held): no dependency
    assert r.resolve("condacolab").resolved_with == "unresolved" and r.resolve("condacolab").distribution is None
    assert r.resolve("tensorflow.keras").distribution == "tensorflow"
    assert r.resolve("sklearn").distribution == "scikit-learn"
    assert r.resolve("_pytest.fixtures").distribution == "pytest"
    private = r.resolve("_somelib_ext")
    assert (private.distribution, private.resolved_with) == (None, "unresolved") and "private" in private.note
    assert r.resolve("jarvis_leaderboard.rebuild").resolved_with == "unresolved"
    guess = r.resolve("somepkg")
    assert (guess.distribution, guess.resolved_with) == ("somepkg", "identity-guess")


def test_resolver__environment__reads_dist_info(tmp_path: Path) -> None:
    di = tmp_path / "Fancy_Dist-1.0.dist-info"
    di.mkdir()
    (di / "METADATA").write_text("Metadata-Version: 2.1\nName: Fancy-Dist\nVersion: 1.0\n")
    (di / "top_level.txt").write_text("fancymod\n")
    res = Resolver([tmp_path]).resolve("fancymod.sub")
    assert (res.distribution, res.resolved_with) == ("fancy-dist", "environment")


def test_parse_code__run_cell_magic__lines_point_into_the_string() -> None:
    code = "x = 1\nget_ipython().run_cell_magic('time', '', 'import a1\\nimport b2\\n')\n"
    parsed = pysrc.parse_code(code)
    assert [(i.module, i.line) for i in parsed.imports] == [("a1", 2), ("b2", 3)]


def test_parse_code__bang_continuation__blanked() -> None:
    parsed = pysrc.parse_code("!pip install a \\\n   b\nimport c\n")
    assert [(i.module, i.line) for i in parsed.imports] == [("c", 3)]
    assert parsed.commands[0][0].startswith("pip install a")


def test_parse_code__magic_on_first_and_indented_lines__blanked_with_true_lines() -> None:
    parsed = pysrc.parse_code("%matplotlib inline\nimport a\nif x:\n    !wget http://h/f\n    import b\n")
    assert [(i.module, i.line) for i in parsed.imports] == [("a", 2), ("b", 5)]
    assert parsed.commands == (("wget http://h/f", 4),)


@pytest.mark.parametrize(("cell", "imports", "commands"), [
    ("%%bash\npip install foo\n# c\nwget http://x\n", [], [("pip install foo", 2), ("wget http://x", 4)]),
    ("%%script bash --bg\nzip -r a.zip x\n", [], [("zip -r a.zip x", 2)]),
    ("\n%%time\nimport numpy\n", [("numpy", 3)], []),
    ("%%writefile notes.txt\nimport me\n", [], []),
    ("%%writefile train.py\n\nimport torch\n", [("torch", 3)], []),
    ("%%html\n<b>import x</b>\n", [], []),
])
def test_parse_code__cell_magic__body_read_by_kind(cell: str, imports: list[tuple[str, int]],
                                                   commands: list[tuple[str, int]]) -> None:
    parsed = pysrc.parse_code(cell)
    assert [(i.module, i.line) for i in parsed.imports] == imports
    assert list(parsed.commands) == commands
    assert parsed.warnings == ()


def test_parse_code__run_cell_magic_bash__shell_commands_at_file_lines() -> None:
    code = "x = 1\nget_ipython().run_cell_magic('bash', '', 'pip install a\\nzip x.zip y\\n')\n"
    parsed = pysrc.parse_code(code)
    assert parsed.imports == ()
    assert [c for c in parsed.commands if c[0] != "ipython"] == [("pip install a", 2), ("zip x.zip y", 3)]


def test_parse_code__shell_call_deep_in_file__line_of_the_call() -> None:
    code = "import os\n" + "x = 1\n" * 50 + "def f():\n    cmd = 'zip -r out.zip a'\n    os.system(cmd)\n"
    parsed = pysrc.parse_code(code)
    assert parsed.commands == (("zip -r out.zip a", 54),)


def test_scan_path__extension_module_and_folder_next_to_script__local(tmp_path: Path) -> None:
    (tmp_path / "fastmod.cpython-310-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "io.py").write_text("")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "numpy").mkdir()  # a folder elsewhere does not hide the real package
    (tmp_path / "run.py").write_text("import fastmod\nimport helpers.io\nimport numpy\n")
    res = scan_path(tmp_path)
    assert res.distributions == ("numpy",)
    assert {"fastmod", "helpers"} <= set(res.local_modules)


def test_shell__slurm_script__entry_points_and_tools() -> None:
    sh = shell.scan_shell("#!/bin/bash\n#SBATCH -N 1\nmodule load cuda\ncd /wrk/x && python3 run.py --x 1\n"
                          "git clone https://g/x.git\nwget http://x/y\nipython nb.py\n")
    assert sh.slurm
    assert [(e[0], e[1]) for e in sh.entry_points] == [("python", "run.py"), ("ipython", "nb.py")]
    assert {c.tool for c in sh.commands} >= {"module", "python3", "git", "wget", "ipython"}


def test_metadata__info_json_broken__warning_with_line() -> None:
    ms = metadata.parse_info_json('{\n  "requirements": [\n', "info.json")
    assert ms.declared == () and ms.warnings[0][1] is not None and "not valid JSON" in ms.warnings[0][2]


def test_metadata__requirements_txt_odd_lines__names_kept_with_warnings() -> None:
    text = "numpy=1.2=py38_0\n-c other.txt\nalignn (GitHub version)\nx @ file:///home/u/x\ngit+https://h/y.git\n"
    ms = metadata.parse_requirements_txt(text, "requirements.txt")
    # a VCS line is kept as a declaration (named after the repository): init makes it a source, never a PyPI name
    assert [d.name for d in ms.declared] == ["numpy", "alignn", "x", "y"]
    msgs = {line: msg for _, line, msg in ms.warnings if line is not None}
    assert sorted(msgs) == [2, 3, 4, 5] and len(ms.warnings) == 4
    assert "not followed" in msgs[2] and "took the name 'alignn'" in msgs[3]
    assert "local file" in msgs[4] and "is a VCS source, not a PyPI name" in msgs[5]


def test_notebook__v3_and_v4__code_cells_only() -> None:
    v4 = json.dumps({"cells": [{"cell_type": "markdown", "source": "x"}, {"cell_type": "code", "source": ["a\n", "b"]}]})
    cells, _ = notebook.code_cells(v4.encode())
    assert [(c.index, c.source) for c in cells] == [(1, "a\nb")]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_parse_code__any_text__never_raises(text: str) -> None:
    pysrc.parse_code(text)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_parsers__any_bytes__never_raise(data: bytes) -> None:
    with contextlib.suppress(notebook.NotebookError):
        notebook.code_cells(data)
    text = data.decode("latin-1")
    shell.scan_shell(text)
    for parse in metadata.PARSERS.values():
        parse(text, "f")
    pysrc.decode_source(data)


_JSON_KEYS = st.sampled_from(["requirements", "software_used", "cells", "worksheets", "source", "input", "cell_type",
                              "metadata", "language_info", "kernelspec", "language", "name", "nbformat"])
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8) |
                     st.sampled_from(["code", "numpy", "==1.2", ">=2", "torch=1.1=x", "import os\n", "%%bash\nzip a"]),
                     lambda c: st.lists(c, max_size=4) | st.dictionaries(_JSON_KEYS, c, max_size=4), max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(_JSON)
def test_parsers__any_json_shape__never_raise(value: object) -> None:
    text = json.dumps(value)
    for parse in metadata.PARSERS.values():
        parse(text, "f")
    with contextlib.suppress(notebook.NotebookError):
        cells, _ = notebook.code_cells(text.encode())
        for c in cells:
            pysrc.parse_code(c.source)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(["a.py", "b.ipynb", "info.json", "environment.yml", "run.sh",
                                        "requirements.txt", "metadata.json"]), st.binary(max_size=200), max_size=5))
def test_scan_path__any_folder_content__never_raises(tmp_path_factory: pytest.TempPathFactory,
                                                     files: dict[str, bytes]) -> None:
    d = tmp_path_factory.mktemp("h")
    for name, data in files.items():
        (d / name).write_bytes(data)
    scan_path(d).to_json()


# Direct third-party imports of each target folder, derived by reading the code (every script
# in the folder counts: alignn_model/run_seq.py is a stale kgcnn copy; cfid_chem/run_chem.py
# and matminer_lgbm/run_chem.py are notebook exports; ElemNet1's imports sit inside
# run_cell_magic strings).
UPSTREAM_EXPECTED = {
    "ElemNet1": ["jarvis-tools", "lightgbm", "numpy", "pandas", "scikit-learn", "tensorflow", "tqdm"],
    "alignn_model": ["alignn", "jarvis-tools", "kgcnn", "numpy", "pandas", "scikit-learn", "tensorflow"],
    "cfid": ["jarvis-tools", "lightgbm", "numpy", "pandas", "tqdm"],
    "cfid_chem": ["jarvis-tools", "lightgbm", "numpy", "pandas", "scikit-learn", "tqdm"],
    "cgcnn_model": ["jarvis-tools", "pandas"],
    "kgcnn_cgcnn": ["jarvis-tools", "kgcnn", "numpy", "pandas", "scikit-learn", "tensorflow"],
    "kgcnn_coGN": ["jarvis-tools", "kgcnn", "numpy", "pandas", "scikit-learn", "tensorflow"],
    "kgcnn_coNGN": ["jarvis-tools", "kgcnn", "numpy", "pandas", "scikit-learn", "tensorflow"],
    "kgcnn_dimenetPP": ["jarvis-tools", "kgcnn", "numpy", "pandas", "scikit-learn", "tensorflow"],
    "kgcnn_megnet": ["jarvis-tools", "kgcnn", "numpy", "pandas", "scikit-learn", "tensorflow"],
    "kgcnn_schnet": ["jarvis-tools", "kgcnn", "numpy", "pandas", "scikit-learn", "tensorflow"],
    "matformer": ["jarvis-tools", "numpy", "pytorch-ignite", "scikit-learn", "torch"],
    "matminer_lgbm": ["jarvis-tools", "lightgbm", "matminer", "numpy", "pandas", "pymatgen", "scikit-learn", "tqdm"],
    "matminer_rf": ["jarvis-tools", "matminer", "numpy", "pandas", "scikit-learn", "tqdm"],
    "matminer_xgboost": ["jarvis-tools", "matminer", "numpy", "pandas", "scikit-learn", "tqdm", "xgboost"],
}


@pytest.mark.upstream
@pytest.mark.parametrize("folder", sorted(UPSTREAM_EXPECTED))
def test_scan_path__target_contribution__exact_distributions(upstream: Path, folder: str) -> None:
    res = scan_path(upstream / "jarvis_leaderboard" / "jarvis_leaderboard" / "contributions" / folder, python="3.10")
    assert list(res.distributions) == UPSTREAM_EXPECTED[folder]
    assert all(i.locations for i in res.imports)
    assert all(i.resolved_with == "mapping" for i in res.imports if i.distribution)
    if folder == "matformer":
        assert [i.module for i in res.unresolved] == ["matformer"]
