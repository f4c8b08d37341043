"""IPython line magics in exported notebooks: code-carrying magics keep their imports, magics
inside indented blocks keep the file parseable (no fallback), line numbers never move."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pyrepro.scan import python as pysrc


def test_parse_code__time_and_timeit_magics__imports_kept() -> None:
    parsed = pysrc.parse_code("%time import lightgbm\n%timeit -n 1 -r1 import xgboost\n%prun -s cumtime import dgl\n")
    assert [(i.module, i.line) for i in parsed.imports] == [("lightgbm", 1), ("xgboost", 2), ("dgl", 3)]
    assert parsed.warnings == ()


def test_parse_code__bang_inside_if_block__parsed_without_fallback() -> None:
    code = "import os\nif os.environ.get('COLAB'):\n    !pip install tqdm\n    %cd /content\nimport torch\n"
    parsed = pysrc.parse_code(code)
    assert not parsed.fallback and parsed.warnings == ()
    assert [(i.module, i.line) for i in parsed.imports] == [("os", 1), ("torch", 5)]
    assert parsed.commands == (("pip install tqdm", 3),)


def test_parse_code__stray_indented_magic_at_top_level__still_parses() -> None:
    parsed = pysrc.parse_code("x = 1\n    !pip install a\nimport numpy\n")
    assert not parsed.fallback
    assert [(i.module, i.line) for i in parsed.imports] == [("numpy", 3)]


def test_blank_magics__other_line_magics__blanked_lines_keep_count() -> None:
    text = "%matplotlib inline\n%config InlineBackend.figure_format = 'svg'\nimport a\n"
    clean, cmds = pysrc.blank_magics(text)
    assert clean.split("\n") == ["", "", "import a", ""] and cmds == []


def test_parse_code__ipython_help_lines__blanked_no_fallback() -> None:
    """``?obj``, ``obj??`` (IPython's help syntax, kept in notebooks) are no Python: the cell
    still parses as a whole (no line-level fallback, no warning); a ``?`` inside code is untouched."""
    code = "import statsmodels.api as sm\n?sm.OLS\nsm.OLS??\n  ??np.dot\nx = a if b else c  # why?\nimport pandas\n"
    parsed = pysrc.parse_code(code)
    assert not parsed.fallback and parsed.warnings == ()
    assert [(i.module, i.line) for i in parsed.imports] == [("statsmodels.api", 1), ("pandas", 6)]


def test_parse_code__load_ext__the_extensions_module_is_imported() -> None:
    """compas-analysis (corpus13 held): the notebook's `%load_ext rpy2.ipython` runs its %%R cells
    through rpy2, and nothing else imports it, so rpy2 was no dependency. IPython's own extensions
    (the name table's [ipython_extensions]) are IPython's modules, not a project of that name."""
    parsed = pysrc.parse_code("%load_ext rpy2.ipython\n%load_ext autoreload\n%reload_ext line_profiler\n"
                              "%load_ext\n%load_ext not a name\nimport warnings\n")
    assert [(i.module, i.line) for i in parsed.imports] == [("rpy2.ipython", 1), ("IPython", 2),
                                                             ("line_profiler", 3), ("warnings", 6)]
    assert parsed.warnings == ()


def test_scan_path__notebook_that_loads_an_extension__its_distribution_required(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from pyrepro.scan import scan_path

    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": ["%load_ext rpy2.ipython\n", "import warnings"]},
             {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": ["%%R\n", "library(dplyr)\n"]}]
    (tmp_path / "a.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                                  "nbformat_minor": 2}))
    res = scan_path(tmp_path, python="3.11")
    assert "rpy2" in res.required


def _flags(code: str) -> list[tuple[str, bool]]:
    return [(i.module, i.optional) for i in pysrc.parse_code(code).imports]


def test_parse_code__fallback_import_in_handler__optional() -> None:
    code = "try:\n    import ujson as json_\nexcept ImportError:\n    import simplejson as json_\n"
    assert _flags(code) == [("ujson", True), ("simplejson", True)]


def test_parse_code__handler_reraises_or_exits__import_required() -> None:
    code = ("try:\n    import a1\nexcept ImportError as e:\n    raise RuntimeError('pip install a1') from e\n"
            "try:\n    import a2\nexcept ImportError:\n    print('need a2')\n    sys.exit(1)\n")
    assert _flags(code) == [("a1", False), ("a2", False)]


def test_parse_code__type_checking_and_suppress__optional() -> None:
    code = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pandas\nelse:\n    import numpy\n"
            "import contextlib\nwith contextlib.suppress(ImportError):\n    import b2\nwith open('x') as f:\n    import c3\n")
    assert _flags(code) == [("typing", False), ("pandas", True), ("numpy", False), ("contextlib", False),
                            ("b2", True), ("c3", False)]


_LINES = st.lists(st.sampled_from(["import a", "if x:", "    !pip install b \\", "    c", "%time import d",
                                   "%timeit -n 1", "  %cd x", "!ls", "def f():", "    %prun -s t import e", "",
                                   "x = 1  # !", "%%time", "\tpass"]), max_size=12)


@settings(max_examples=200, deadline=None)
@given(_LINES)
def test_blank_magics__any_lines__line_count_and_plain_lines_kept(lines: list[str]) -> None:
    text = "\n".join(lines)
    clean, cmds = pysrc.blank_magics(text)
    out = clean.split("\n")
    assert len(out) == len(text.split("\n"))
    for before, after in zip(text.split("\n"), out, strict=True):
        if not before.lstrip().startswith(("!", "%")):
            assert after in (before, "")  # kept, or blanked as a '!cmd \\' continuation
    assert all(1 <= ln <= len(out) for _, ln in cmds)
    pysrc.parse_code(text)  # never raises


def test_parse_code__nbconvert_export_magic_calls__imports_and_commands() -> None:
    code = ("get_ipython().run_line_magic('matplotlib', 'inline')\n"
            "get_ipython().run_line_magic('time', 'import lightgbm')\n"
            "get_ipython().run_line_magic('timeit', '-n1 import xgboost')\n"
            "get_ipython().getoutput('wget http://x/y')\n"
            "get_ipython().run_line_magic('pip', 'install ase')\n")
    parsed = pysrc.parse_code(code)
    assert [(i.module, i.line) for i in parsed.imports] == [("lightgbm", 2), ("xgboost", 3)]
    assert [c for c in parsed.commands if c[0] != "ipython"] == [("wget http://x/y", 4), ("pip install ase", 5)]


def test_parse_code__pip_and_conda_line_magics__commands() -> None:
    parsed = pysrc.parse_code("%pip install torch\n%conda install -c conda-forge rdkit\n%sx ls\n%matplotlib inline\n")
    assert parsed.commands == (("pip install torch", 1), ("conda install -c conda-forge rdkit", 2), ("ls", 3))
