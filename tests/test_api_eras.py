"""APIs a later series of their distribution removed (the name table's [api_eras]): found in the
code through the names modules were imported as, pinned by init with the use and reason, and
bounding the Python when none is stated. Through ``pyrepro scan`` and ``pyrepro init``."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyrepro.cli import main
from pyrepro.resolve import api_eras
from pyrepro.scan import apiuse
from tests.fakes import json_result


def _init(folder: Path, models: Path, *extra: str) -> dict[str, Any]:
    assert main(["init", str(folder), "--name", "sub", "--models-dir", str(models), "--offline", *extra]) == 0
    return tomllib.loads((models / "sub" / "model.toml").read_text())


TF1 = """import numpy as np
import tensorflow as tf
# old = tf.Session()   (a comment: no evidence)

def net(n):
    x = tf.placeholder(tf.float32, [None, n])
    return tf.layers.dense(x, np.float32(1.0))
"""


def test_scan_cli__tf1_code__its_uses_named_with_where(tmp_path: Path, write_files: Any,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({"sub/model.py": TF1, "sub/nb.ipynb": json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [{"cell_type": "code", "source": "import numpy\n", "metadata": {}, "outputs": []},
                  {"cell_type": "code", "source": "a = numpy.float(2)\n", "metadata": {}, "outputs": []}]})})
    assert main(["scan", str(root / "sub"), "--json"]) == 0
    got = json_result(capsys.readouterr().out)["api_uses"]
    assert [(u["name"], u["location"]["path"], u["location"]["line"], u["location"]["cell"]) for u in got] == [
        ("tensorflow.placeholder", "model.py", 6, None), ("numpy.float", "nb.ipynb", 1, 1)]
    assert got[0]["requirement"] == "tensorflow<2" and got[0]["python_max"] == "3.7"


def test_init__tf1_code_undeclared__tensorflow_held_below_2_and_python_37(tmp_path: Path, write_files: Any) -> None:
    """deephpm (corpus9 dev, 2018): TensorFlow 1 code (tf.placeholder, tf.Session) with nothing
    declared was locked on 3.13 with TensorFlow 2.20, where it imports and cannot run."""
    root = write_files({"sub/model.py": TF1})
    doc = _init(root / "sub", tmp_path / "models")
    pin = next(p for p in doc["dependencies"]["pins"] if p["name"] == "tensorflow")
    assert pin["spec"] == "<2" and "tensorflow.placeholder (model.py:6)" in pin["reason"]
    assert "rule api-era" in pin["reason"]
    assert doc["python"] == "3.7" and "uses tensorflow.placeholder" in doc["python_reason"]
    pyproject = (tmp_path / "models" / "sub" / "pyproject.toml").read_text()
    assert '"tensorflow<2"' in pyproject


@pytest.mark.parametrize(("declared", "spec"), [("tensorflow==2.4.0\n", "==2.4.0"), ("tensorflow>=1.4\n", ">=1.4,<2")])
def test_init__tf1_code_with_a_declaration__an_exact_pin_wins_a_range_is_narrowed(
        tmp_path: Path, write_files: Any, declared: str, spec: str) -> None:
    root = write_files({"sub/model.py": TF1, "sub/requirements.txt": declared + "numpy\n"})
    _init(root / "sub", tmp_path / "models", "--python", "3.7")
    pyproject = (tmp_path / "models" / "sub" / "pyproject.toml").read_text()
    assert f'"tensorflow{spec}"' in pyproject


def test_find_uses__other_module_bound_to_the_name__whole_names_only() -> None:
    eras = api_eras()
    assert apiuse.find_uses([(None, "import tensorflow.compat.v1 as tf\nx = tf.placeholder()\n")], eras) == []
    assert apiuse.find_uses([(None, "import numpy as np\nx = np.float32(1) + np.float64(2) + np.int_(3)\n")],
                            eras) == []
    assert apiuse.find_uses([(None, "from tensorflow.contrib import slim\n")], eras) == [("tensorflow.contrib", 1, None)]
    assert apiuse.find_uses([(None, "import tensorflow\ntensorflow.Session()\n")], eras) == \
        [("tensorflow.Session", 2, None)]
    assert apiuse.find_uses([(None, "tf = 1\ntf.placeholder\n")], eras) == []  # never imported


@given(st.text(max_size=300))
def test_find_uses__any_text__only_table_names_on_real_lines(text: str) -> None:
    eras = api_eras()
    for name, line, cell in apiuse.find_uses([(None, text)], eras):
        assert name in eras and 1 <= line <= max(1, len(text.splitlines())) and cell is None


def test_init__tf1_code_but_a_declared_range_that_excludes_it__the_declaration_kept_and_said(
        tmp_path: Path, write_files: Any) -> None:
    """summit (corpus8, 2021) declares tensorflow ^2 and has one strategy file in TensorFlow 1: the
    declared range is the authors' word; the note says what was seen."""
    root = write_files({"sub/model.py": TF1, "sub/requirements.txt": "tensorflow>=2.3\nnumpy\n"})
    doc = _init(root / "sub", tmp_path / "models", "--python", "3.8")
    pyproject = (tmp_path / "models" / "sub" / "pyproject.toml").read_text()
    assert '"tensorflow>=2.3"' in pyproject
    assert "uses tensorflow.placeholder (tensorflow<2), but the submission declares tensorflow>=2.3" in doc["notes"]


def test_init__tf1_code_but_a_declared_range_that_excludes_it__python_not_bounded_by_it(
        tmp_path: Path, write_files: Any) -> None:
    root = write_files({"sub/model.py": TF1, "sub/requirements.txt": "tensorflow>=2.3\nnumpy\n"})
    doc = _init(root / "sub", tmp_path / "models")
    assert "tensorflow.placeholder" not in doc["python_reason"] and doc["python"] != "3.7"


def test_init__tf1_code_with_no_date__bounded_a_year_after_tensorflow_2(tmp_path: Path, write_files: Any) -> None:
    """deephpm (corpus9 dev): undated TensorFlow 1 code took pyDOE's release of 2026 (which needs
    Python 3.8) beside TensorFlow 1.15 on 3.7. A year after TensorFlow 2.0 removed tf.placeholder
    bounds it; a stated date wins."""
    root = write_files({"sub/model.py": TF1})
    doc = _init(root / "sub", tmp_path / "models")
    assert doc["submitted"] == "2020-09-29" and "tensorflow.placeholder, removed on 2019-09-30" in \
        doc["submitted_reason"]
    dated = write_files({"dated/model.py": TF1, "dated/metadata.json": json.dumps({"date_submitted": "03-01-2021"})})
    assert main(["init", str(dated / "dated"), "--name", "dated", "--models-dir", str(tmp_path / "models"),
                 "--offline"]) == 0
    assert tomllib.loads((tmp_path / "models" / "dated" / "model.toml").read_text())["submitted"] == "2021-03-01"


def test_init__api_era_pin__automatic_so_a_lock_with_it_is_category_2_at_most(tmp_path: Path, write_files: Any) -> None:
    from pyrepro import lock
    from pyrepro.registry import parse_model

    root = write_files({"sub/model.py": TF1})
    _init(root / "sub", tmp_path / "models")
    spec = parse_model(tmp_path / "models" / "sub" / "model.toml")
    assert lock.LockRequest.from_spec(spec).overrides == ()  # no reviewed override: category 3 never
