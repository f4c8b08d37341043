"""Issue 15: the scanner never merges, hides or invents a dependency.

Each test builds a small contribution folder and runs ``pyrepro scan --json`` through the CLI.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyrepro.cli import main
from tests.fakes import json_result

Write = Callable[..., Path]


@pytest.fixture(autouse=True)
def _cache(isolated_cache: Path) -> Path:
    return isolated_cache


def scan_json(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert main(["scan", str(path), "--json", *extra]) == 0
    out: dict[str, Any] = json_result(capsys.readouterr().out)
    return out


def _nb(*cells: str) -> str:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {"language_info": {"name": "python"}},
                       "cells": [{"cell_type": "code", "source": c, "metadata": {}, "outputs": []} for c in cells]})


def test_scan__tensorflow_family__each_its_own_distribution(write_files: Write,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({"run.py": """
        import tensorflow as tf
        import tensorflow_addons as tfa
        import tensorflow_probability as tfp
        import tensorflow_hub
        import tensorflow_datasets as tfds
        import tensorflowjs
        import tensorflow_text
        import tensorflow_io
        from tensorflow.keras import layers
    """})
    out = scan_json(root, capsys)
    assert out["required"] == ["tensorflow", "tensorflow-addons", "tensorflow-datasets", "tensorflow-hub",
                               "tensorflow-io", "tensorflow-probability", "tensorflow-text", "tensorflowjs"]
    assert out["distributions"] == out["required"]


def test_scan__namespace_packages__module_plus_imported_name(write_files: Write,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({"run.py": """
        import google.cloud.storage
        from google.cloud import bigquery
        from google.protobuf import text_format
        import google.auth
    """})
    out = scan_json(root, capsys)
    assert out["required"] == ["google-auth", "google-cloud-bigquery", "google-cloud-storage", "protobuf"]
    assert "google" not in out["distributions"]
    assert not any(g["module"].startswith("google") for g in out["guesses"])


def test_scan__local_modules__resolved_from_entry_folder_not_importer(write_files: Write,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({
        "run.py": "from utils.bench import go\nimport helpers\nimport datasets\nimport wandb\n",
        "helpers.py": "x = 1\n",
        "utils/__init__.py": "",
        "utils/bench.py": "from matbench.bench import MatbenchBenchmark\n",
        "utils/matbench.py": "def f():\n    return 1\n",
        "datasets/train.csv": "a,b\n1,2\n",
        "wandb/run-1/files/output.log": "log\n",
    })
    out = scan_json(root, capsys)
    assert out["required"] == ["datasets", "matbench", "wandb"]
    local = {m["module"]: m for m in out["local_modules"]}
    assert set(local) == {"helpers", "utils"}
    assert local["helpers"]["path"] == "helpers.py"
    assert local["helpers"]["locations"] == [{"path": "run.py", "line": 2, "cell": None}]


def test_scan__script_folder_and_sys_path_insert__local(write_files: Write,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({
        "sub/train.py": "import model_def\nimport sys, os\n"
                        "sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'lib'))\n"
                        "import mylib\n\nif __name__ == '__main__':\n    pass\n",
        "sub/model_def.py": "import numpy\n",
        "lib/mylib.py": "import scipy\n",
        "nb/analysis.ipynb": _nb("import plot_helpers\n"),
        "nb/plot_helpers.py": "import matplotlib\n",
    })
    out = scan_json(root, capsys)
    assert sorted(m["module"] for m in out["local_modules"]) == ["model_def", "mylib", "plot_helpers"]
    assert out["required"] == ["matplotlib", "numpy", "scipy"]


@pytest.mark.parametrize("thorough", [False, True])
def test_scan__sys_path_insert_through_names__local_inside__named_outside(
        write_files: Write, capsys: pytest.CaptureFixture[str], thorough: bool) -> None:
    """PointNet's pattern (pointnet-semantic-segmentation, corpus19 dev): ``BASE_DIR =
    os.path.dirname(os.path.abspath(__file__))``, ``ROOT_DIR = os.path.dirname(BASE_DIR)``, then
    ``sys.path.append(os.path.join(ROOT_DIR, 'utils'))`` and ``import tf_util``. The names are
    followed: a folder inside the scanned tree makes its modules local; one outside (the submission
    is a sub-folder of its repository) is named beside the guess, with the insert's line."""
    from pyrepro.cli import main

    code = ("import os\nimport sys\nBASE_DIR = os.path.dirname(os.path.abspath(__file__))\n"
            "ROOT_DIR = os.path.dirname(BASE_DIR)\nsys.path.append(os.path.join(ROOT_DIR, 'utils'))\n"
            "import tf_util\nimport numpy\n")
    root = write_files({"repo/sem_seg/train.py": code, "repo/utils/tf_util.py": "import tensorflow\n",
                        "alone/sem_seg/train.py": code})
    flags = ["--thorough"] if thorough else []
    assert main(["scan", str(root / "repo"), "--json", *flags]) == 0
    out = json.loads(capsys.readouterr().out)["result"]
    assert {m["module"]: m["path"] for m in out["local_modules"]}["tf_util"] == "utils/tf_util.py"
    assert out["required"] == ["numpy", "tensorflow"]
    assert main(["scan", str(root / "alone" / "sem_seg"), "--json", *flags]) == 0
    out = json.loads(capsys.readouterr().out)["result"]
    assert [g["module"] for g in out["guesses"]] == ["tf_util"]
    assert any("train.py:5 puts ../utils on sys.path before it, outside this folder: tf_util may be the "
               "repository's code there" in w for w in out["warnings"])


def test_scan__generic_name_beside_a_module_reached_by_sys_path__local_not_missing(
        write_files: Write, capsys: pytest.CaptureFixture[str]) -> None:
    """A notebook puts src/ on sys.path at run time; src/transformer.py imports its sibling utils.
    The generic name is the folder's own file (mat, corpus5), never "missing from the folder"."""
    root = write_files({
        "EXAMPLE.ipynb": _nb("import sys\nsys.path.append(SRC)\nimport transformer\n"),
        "src/transformer.py": "import torch\nfrom utils import xavier\n",
        "src/utils.py": "import torch\ndef xavier():\n    pass\n",
        "other/run.py": "import config\n",  # a generic name the folder does not hold stays unresolved
    })
    out = scan_json(root, capsys)
    assert out["required"] == ["torch"]
    assert [u["module"] for u in out["unresolved"]] == ["config"]
    local = {m["module"]: m["path"] for m in out["local_modules"]}
    assert local["utils"] == "src/utils.py" and local["transformer"] == "src/transformer.py"


def test_scan__the_folder_itself_as_a_package__its_own_name_is_local(
        write_files: Write, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """rexgen_direct (corpus7 held): the submitted folder is the package rexgen_direct of its
    repository, and its scripts import it by that name; the name is the folder, not PyPI's."""
    root = write_files({
        "__init__.py": "",
        "core_wln_global/__init__.py": "", "core_wln_global/nn.py": "import numpy\n",
        "scripts/eval.py": "from rexgen_direct.core_wln_global.nn import linearND\nimport numpy\n",
        "rank.py": "from rexgen_direct import core_wln_global\n",
    })
    out = scan_json(root, capsys)
    assert out["required"] == ["numpy"] and out["unresolved"] == []
    assert {m["module"]: m["path"] for m in out["local_modules"]}["rexgen_direct"] == "__init__.py"
    assert any("rexgen_direct" in w and "itself a package" in w for w in out["warnings"])
    # without an __init__.py of its own, or with one import going elsewhere, it is not the folder
    for i, files in enumerate(({"model.py": "import numpy\n", "run.py": "from zorblax.model import Net\n"},
                               {"__init__.py": "", "model.py": "", "run.py": "from zorblax.model import Net\n"
                                                                            "from zorblax.graph import Graph\n"})):
        out = scan_json(write_files(files, tmp_path / f"other{i}"), capsys)
        assert "zorblax" not in {m["module"] for m in out["local_modules"]}
        assert "zorblax" in {g["module"] for g in out["guesses"]}


def test_scan__local_name_of_a_distribution__warns(write_files: Write, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({"run.py": "import pandas\nimport jarvis\n", "jarvis/__init__.py": "x = 1\n"})
    out = scan_json(root, capsys)
    assert out["required"] == ["pandas"]
    assert any("jarvis" in w and "jarvis-tools" in w for w in out["warnings"])


def test_scan__three_kinds__required_optional_conditional(write_files: Write,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({"run.py": """
        import sys, platform
        import numpy
        try:
            import ujson as json
        except ImportError:
            import json
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            import pandas
        if sys.platform == "win32":
            import win32api
        if sys.version_info < (3, 8):
            import importlib_metadata
        else:
            import importlib.metadata as importlib_metadata
        if not sys.platform.startswith("linux"):
            import colorama
        if platform.system() == "Darwin":
            import appnope
    """})
    out = scan_json(root, capsys)
    assert out["required"] == ["numpy"]
    assert out["optional"] == ["pandas", "ujson"]
    assert out["conditional"] == [
        {"distribution": "appnope", "marker": 'platform_system == "Darwin"'},
        {"distribution": "colorama", "marker": 'sys_platform != "linux"'},
        {"distribution": "importlib-metadata", "marker": 'python_version < "3.8"'},
        {"distribution": "pywin32", "marker": 'sys_platform == "win32"'},
    ]
    assert out["distributions"] == ["numpy"]
    kinds = {i["module"]: i["kind"] for i in out["imports"]}
    assert kinds["numpy"] == "required" and kinds["ujson"] == "optional" and kinds["win32api"] == "conditional"


def test_scan__imports_in_code_that_never_runs__optional_not_required(
        write_files: Write, capsys: pytest.CaptureFixture[str]) -> None:
    """``if False:`` / ``if 0:`` bodies and ``if True:``'s else never run (Python compiles them
    away): their imports are noted as optional, never required, and carry no branch."""
    root = write_files({"run.py": """
        import numpy
        if False:
            import pandas
        if 0:
            import h5py
        else:
            import scipy
        if True:
            import yaml
        else:
            import ujson
    """})
    out = scan_json(root, capsys)
    assert out["required"] == ["numpy", "pyyaml", "scipy"]
    assert out["optional"] == ["h5py", "pandas", "ujson"]
    assert not any(i.get("branch") for i in out["imports"])


def test_scan__imports_under_a_run_time_if__still_required_and_located_with_the_condition(
        write_files: Write, capsys: pytest.CaptureFixture[str]) -> None:
    """An import under a run-time ``if`` (a flag, an architecture's name) stays a requirement (the
    environment should have it) and says which branch it needs; the main guard, platform guards and
    an unconditional import elsewhere are not branches."""
    root = write_files({"train.py": """
        import sys
        import numpy
        if args.use_apex:
            from apex import amp
        elif args.model == "tvm":
            import tvm
        else:
            import torch
        def build(name):
            if name in ("graph", "gcn"):
                if True:
                    import networkx
            import scipy
        if sys.platform == "win32":
            import win32api
        if __name__ == "__main__":
            import pandas
        if args.plot:
            import matplotlib
    """, "plot.py": "import matplotlib.pyplot as plt\n"})
    out = scan_json(root, capsys)
    branch = {i["module"]: i.get("branch") for i in out["imports"]}
    assert branch["apex"] == "train.py:4 (under `args.use_apex`)"
    assert branch["tvm"] == "train.py:6 (under `args.model == 'tvm'`)"
    assert branch["torch"] == "train.py:8 (under `not (args.model == 'tvm')`)"
    # ``if True:`` is no condition: the branch is the enclosing run-time ``if``
    assert branch["networkx"] == "train.py:12 (under `name in ('graph', 'gcn')`)"
    for unconditional in ("numpy", "scipy", "pandas", "matplotlib", "win32api"):
        assert branch[unconditional] is None, unconditional  # plot.py imports matplotlib unconditionally
    kinds = {i["module"]: i["kind"] for i in out["imports"]}
    assert kinds["apex"] == kinds["tvm"] == kinds["torch"] == "required" and kinds["win32api"] == "conditional"
    assert {"torch", "networkx", "numpy", "scipy", "pandas", "matplotlib"} <= set(out["required"])


def test_scan__required_somewhere__wins_over_optional(write_files: Write, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({"a.py": "try:\n    import yaml\nexcept ImportError:\n    yaml = None\n",
                        "run.py": "import yaml\n"})
    out = scan_json(root, capsys)
    assert out["required"] == ["pyyaml"] and out["optional"] == []


def test_scan__guesses__never_distributions(write_files: Write, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({"run.py": "import numpy\nimport zzqx_unknown_pkg\nfrom train_crabnet import main\n"})
    out = scan_json(root, capsys)
    assert out["distributions"] == ["numpy"]
    assert [g["module"] for g in out["guesses"]] == ["train_crabnet", "zzqx_unknown_pkg"]
    assert out["guesses"][1]["guess"] == "zzqx-unknown-pkg"


def test_scan__dynamic_import_names__warnings_not_names(write_files: Write,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({"run.py": """
        import importlib
        name = "x"
        a = importlib.import_module(f"models-{name}")
        b = importlib.import_module("ten" + name)
        c = __import__(name)
        d = importlib.import_module("scipy.linalg")
        e = importlib.import_module("sk" "learn")
    """})
    out = scan_json(root, capsys)
    assert out["distributions"] == ["scikit-learn", "scipy"]
    assert {i["module"] for i in out["imports"]} == {"scipy", "sklearn"}
    dyn = [w for w in out["warnings"] if "computed at run time" in w]
    assert [w.split(":")[1] for w in dyn] == ["3", "4", "5"]


def test_scan__pip_install_lines__located_declarations(write_files: Write,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({
        "nb.ipynb": _nb("%pip install matminer==0.7.4 'scikit-learn>=1.0'\n", "!pip install -q lightgbm\nx = !ls\n",
                        "import matminer\nimport sklearn\nimport lightgbm\n"),
        "setup.sh": "#!/bin/bash\npip install -U xgboost==1.7.6 -r requirements.txt\npython -m pip install ase\n",
    })
    out = scan_json(root, capsys)
    decl = {d["name"]: d for d in out["declarations"]}
    assert set(decl) == {"matminer", "scikit-learn", "lightgbm", "xgboost", "ase"}
    assert decl["matminer"]["spec"] == "matminer==0.7.4"
    assert decl["matminer"]["location"] == {"path": "nb.ipynb", "line": 1, "cell": 0}
    assert decl["lightgbm"]["location"] == {"path": "nb.ipynb", "line": 1, "cell": 1}
    assert decl["xgboost"]["location"] == {"path": "setup.sh", "line": 2, "cell": None}
    assert decl["ase"]["location"]["line"] == 3
    assert out["warnings"] == [] or all("parse" not in w for w in out["warnings"])
    assert "xgboost" in out["unused_declared"]


def test_scan__pip_install_written_as_prose__its_words_never_names(write_files: Write, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """catkit (corpus8 dev): a comment "# pip install pathlib2 and is in" declared and, is, in; a
    README sentence joins two names with "and" and goes on in English."""
    root = write_files({
        "hub/organize.py": "# pip install pathlib2 and is in\nimport pathlib2\nimport torch\n",
        "README.md": "Run `pip install torch and torchvision to get started`.\n",
    }, tmp_path / "prose")
    out = scan_json(root, capsys)
    names = {d["name"] for d in out["declarations"]}
    assert "pathlib2" in names and not names & {"and", "is", "in", "to", "get", "started"}
    assert {"torch", "torchvision"} <= names


def test_scan__a_lock_file_beside_the_project_file__its_versions_for_the_declared_ranges(
        write_files: Write, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """summit (corpus8 dev): a poetry project with its poetry.lock; ``torch = "^1.4.0"`` was
    resolved by the authors to 1.7.1, which is what the lock says. Packages only the lock has, and
    development ones, declare nothing; Pipfile.lock serves a Pipfile the same way."""
    root = write_files({
        "pyproject.toml": '[tool.poetry]\nname = "s"\n[tool.poetry.dependencies]\npython = "^3.7"\n'
                          'torch = "^1.4.0"\nnumpy = "*"\nrequests = "2.0.0"\n',
        "poetry.lock": '[[package]]\nname = "torch"\nversion = "1.7.1"\ncategory = "main"\n\n'
                       '[[package]]\nname = "NumPy"\nversion = "1.19.5"\ncategory = "main"\n\n'
                       '[[package]]\nname = "requests"\nversion = "2.1.0"\ncategory = "main"\n\n'
                       '[[package]]\nname = "six"\nversion = "1.15.0"\ncategory = "main"\n\n'
                       '[[package]]\nname = "pytest"\nversion = "6.2.1"\ncategory = "dev"\n',
        "run.py": "import torch\nimport numpy\nimport requests\n",
        "sub/Pipfile": '[packages]\npandas = ">=1.0"\n',
        "sub/Pipfile.lock": json.dumps({"_meta": {}, "default": {"pandas": {"version": "==1.1.5"}},
                                        "develop": {"black": {"version": "==20.8b1"}}}, indent=4),
    }, tmp_path / "poetry")
    out = scan_json(root, capsys)
    decl = {d["name"]: d for d in out["declarations"]}
    assert set(decl) == {"torch", "numpy", "requests", "pandas"}
    assert decl["torch"]["spec"] == "torch==1.7.1" and decl["torch"]["location"] == {
        "path": "poetry.lock", "line": 2, "cell": None}
    assert decl["numpy"]["spec"] == "numpy==1.19.5"
    assert decl["requests"]["spec"] == "requests==2.0.0" and decl["requests"]["location"]["path"] == "pyproject.toml"
    assert decl["pandas"]["spec"] == "pandas==1.1.5" and decl["pandas"]["location"]["path"] == "sub/Pipfile.lock"


def test_scan__pip_install_of_a_cloned_folder__never_a_pypi_name(write_files: Write,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """nequip_mlearn: `!git clone .../allegro.git` then `!pip install allegro/`. PyPI's 'allegro'
    is another project: the folder is said to be a local path, never declared."""
    root = write_files({"nb.ipynb": _nb("!git clone --depth 1 https://github.com/mir-group/allegro.git\n"
                                        "!pip install allegro/ lib/sub ~/src/x nequip==0.5.5\n", "import nequip\n")})
    out = scan_json(root, capsys)
    assert [d["name"] for d in out["declarations"]] == ["nequip"]
    said = [w for w in out["warnings"] if "a local path or file" in w]
    assert [w.split(": ", 1)[1].split(":")[0] for w in said] == ["pip install allegro/", "pip install lib/sub",
                                                                 "pip install ~/src/x"]


def test_scan__model_mapping__first_resolver(write_files: Write, capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    root = write_files({"c/run.py": "import numpy\nimport mystery_mod\n"})
    mapping = tmp_path / "model.toml"
    mapping.write_text('[mapping]\nmystery_mod = { distribution = "mystery-dist", reason = "ships mystery_mod" }\n'
                       'numpy = { distribution = "numpy", reason = "same" }\n')
    out = scan_json(root / "c", capsys, "--mapping", str(mapping))
    assert out["required"] == ["mystery-dist", "numpy"]
    rec = {i["module"]: i for i in out["imports"]}
    assert rec["mystery_mod"]["resolved_with"] == "model-mapping"


def test_scan__rescan_unchanged_tree__served_from_cache(write_files: Write, capsys: pytest.CaptureFixture[str],
                                                        isolated_cache: Path) -> None:
    root = write_files({"run.py": "import numpy\n", "b.py": "import scipy\n"})
    import sqlite3

    first = scan_json(root, capsys)
    db = sqlite3.connect(isolated_cache / "scan" / "extract.sqlite")
    assert db.execute("SELECT count(*) FROM payload").fetchone()[0] >= 2
    db.close()
    second = scan_json(root, capsys)
    assert first == second
    (root / "b.py").write_text("import pandas\n")
    third = scan_json(root, capsys)
    assert third["required"] == ["numpy", "pandas"]


def test_init__kinds__only_required_scanned_guarded_with_markers_guesses_as_notes(
        write_files: Write, tmp_path: Path) -> None:
    import tomllib

    root = write_files({"sub/run.py": """
        import sys
        import numpy
        import ax
        import mysterylib
        try:
            import ujson
        except ImportError:
            ujson = None
        if sys.platform == "win32":
            import win32api
        if sys.version_info < (3, 8):
            import importlib_metadata
    """})
    models = tmp_path / "models"
    assert main(["init", str(root / "sub"), "--name", "kinds", "--models-dir", str(models), "--offline"]) == 0
    doc = tomllib.loads((models / "kinds" / "model.toml").read_text())
    deps = doc["dependencies"]
    assert deps["scanned"] == ["ax-platform", "numpy"]
    assert deps["extra"] == ['importlib-metadata; python_version < "3.8"', 'pywin32; sys_platform == "win32"']
    assert "mysterylib" in doc["notes"] and "ujson" in doc["notes"]
    pyproject = tomllib.loads((models / "kinds" / "pyproject.toml").read_text())
    reqs = pyproject["project"]["dependencies"]
    assert "mysterylib" not in " ".join(reqs) and "ujson" not in " ".join(reqs)
    assert 'pywin32; sys_platform == "win32"' in reqs


def test_model_toml__mapping_table__validated_with_location(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "m.toml"
    bad.write_text('[mapping]\nmystery_mod = "mystery-dist"\n')
    assert main(["scan", str(tmp_path), "--mapping", str(bad)]) != 0
    err = capsys.readouterr().err
    assert "m.toml" in err and "mapping.mystery_mod" in err and "reason" in err and "Traceback" not in err


def test_scan__corrupt_cache__ignored_same_answer(write_files: Write, capsys: pytest.CaptureFixture[str],
                                                  isolated_cache: Path) -> None:
    root = write_files({"run.py": "import numpy\n"})
    (isolated_cache / "scan").mkdir(parents=True)
    (isolated_cache / "scan" / "extract.sqlite").write_bytes(b"not a database" * 100)
    assert scan_json(root, capsys)["required"] == ["numpy"]


def test_scan__edited_file_same_size_and_forged_mtime__not_served_stale(
        write_files: Write, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    import pyrepro.scan as scan_mod

    monkeypatch.setattr(scan_mod, "RACY_SECONDS", 0.0)  # let the tree index answer at once
    root = write_files({"proj/run.py": "import numpy\n"}) / "proj"  # the cache lives beside, not inside
    assert scan_json(root, capsys)["required"] == ["numpy"]
    assert scan_json(root, capsys)["required"] == ["numpy"]  # from the tree index
    st = os.stat(root / "run.py")
    (root / "run.py").write_text("import scipy\n")  # same size, same inode ...
    os.utime(root / "run.py", ns=(st.st_atime_ns, st.st_mtime_ns))  # ... and the old mtime
    assert scan_json(root, capsys)["required"] == ["scipy"]


def test_scan__unknown_module_declared_by_submission__declared_not_guess(
        write_files: Write, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({
        "run.py": "import zzatomlib\nimport zzIprLib\nimport mysterymod\n",
        "requirements.txt": "zzatomlib==1.4.6\nzzIprLib\n",
    })
    out = scan_json(root, capsys)
    assert out["required"] == ["zzatomlib", "zziprlib"]  # names no table knows
    rec = {i["module"]: i for i in out["imports"]}
    assert rec["zzatomlib"]["resolved_with"] == "declared" and rec["zzIprLib"]["resolved_with"] == "declared"
    assert [g["module"] for g in out["guesses"]] == ["mysterymod"]


def test_scan__colab_export_automagic_pip__declaration_no_parse_warning(write_files: Write,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({"run.py": "# -*- coding: utf-8 -*-\npip install -q chgnet==0.3.0\nimport chgnet\n"
                                  "if True:\n    pip install numpy==1.23.5\nimport numpy\n"})
    out = scan_json(root, capsys)
    assert out["required"] == ["chgnet", "numpy"]
    assert not [w for w in out["warnings"] if "does not parse" in w]
    specs = {d["spec"]: d["location"]["line"] for d in out["declarations"]}
    assert specs == {"chgnet==0.3.0": 2, "numpy==1.23.5": 5}


def test_scan__commented_pip_install__weaker_declarations_not_runtime_tools(
        write_files: Write, capsys: pytest.CaptureFixture[str]) -> None:
    """transformers_gpt2_medium_base's run.py keeps its notebook's install line as a comment
    ("#!pip install transformers datasets evaluate rouge_score jarvis-tools"): what the author
    installed; rouge_score, never imported, comes along (evaluate.load("rouge") needs it). A
    commented line is weaker than an active one: cdvae's abandoned "# !pip install
    pytorch-lightning==1.3.6" beside an active "!pip install pytorch-lightning" is not taken, nor
    snap_mlearn's "# # !pip install fitsnap3", which installs nothing the code imports."""
    root = write_files({
        "run.py": "#!pip install transformers datasets evaluate rouge_score jarvis-tools\n"
                  "# # !pip install fitsnap3\nimport evaluate\nimport pytorch_lightning\nx = 1  # pip install nothing\n",
        "nb.ipynb": _nb("!pip install -q pytorch-lightning wandb\n# !pip install -q pytorch-lightning==1.3.6\n",
                        "# !pip install lightgbm==3.3.5\nimport lightgbm\n"),
    })
    out = scan_json(root, capsys)
    decl = {d["name"]: d for d in out["declarations"]}
    assert set(decl) == {"transformers", "datasets", "evaluate", "rouge-score", "jarvis-tools", "lightgbm",
                         "pytorch-lightning", "wandb"}
    assert decl["pytorch-lightning"]["spec"] == "pytorch-lightning" and "commented" not in decl["pytorch-lightning"]
    assert decl["lightgbm"] == {"name": "lightgbm", "spec": "lightgbm==3.3.5", "commented": True,
                                "location": {"path": "nb.ipynb", "line": 1, "cell": 1}}
    warnings = "\n".join(out["warnings"])
    assert "nb.ipynb[cell 0]:2: pytorch-lightning==1.3.6: a commented-out install; an active" in warnings
    assert "fitsnap3: a commented-out install of nothing the code imports" in warnings
    assert "rouge-score" in out["unused_declared"]
    assert "pip" not in scan_json(root / "run.py", capsys)["runtime_tools"]  # a comment runs nothing


def test_scan__sphinx_conf_imports__optional_never_required(write_files: Write,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """molecular-transformer (corpus4 dev): docs/source/conf.py imports sphinx_rtd_theme and
    recommonmark, which build the documentation; they became model requirements."""
    root = write_files({"sub/train.py": "import numpy\n",
                        "sub/docs/source/conf.py": "import sphinx_rtd_theme\nimport recommonmark\nimport numpy\n",
                        "sub/conf.py": "import yaml\n"})  # a conf.py outside a docs folder is the model's
    data = scan_json(root / "sub", capsys)
    assert {d.lower() for d in data["required"]} == {"numpy", "pyyaml"}
    kinds = {i["module"]: i["kind"] for i in data["imports"]}
    assert kinds["sphinx_rtd_theme"] == kinds["recommonmark"] == "optional" and kinds["yaml"] == "required"


def test_scan__imports_whose_pypi_namesake_is_another_project__mapped_not_guessed(
        write_files: Write, capsys: pytest.CaptureFixture[str]) -> None:
    """``import acme`` is DeepMind's Acme, not Let's Encrypt's ``acme``; ``community`` is
    python-louvain, ``pyro`` pyro-ppl, ``tree`` dm-tree: PyPI's namesakes ship the same top-level
    module, so the import-provider's evidence would take the wrong project. The name table decides,
    and no guess is left for review."""
    root = write_files({"train.py": """
        import acme
        import community as community_louvain
        import pyro.distributions as dist
        import tree
        import sonnet as snt
        from jose import jwt
        import imblearn
        import pycrfsuite
        import gin
        from past.builtins import xrange
        import clip
    """})
    out = scan_json(root, capsys)
    assert out["required"] == ["dm-acme", "dm-sonnet", "dm-tree", "future", "gin-config", "imbalanced-learn",
                               "openai-clip", "pyro-ppl", "python-crfsuite", "python-jose", "python-louvain"]
    assert out["guesses"] == []
