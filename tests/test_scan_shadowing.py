"""Issue 42, item 5: Python 3 import semantics decide shadowing.

A file ``utils/matbench.py`` whose own code does ``from matbench.bench import MatbenchBenchmark``
had made ``matbench`` "the submission's own module": the declared dependency was dropped, and the
import check passed without it. In Python 3 a file in a sub-folder shadows a distribution only
where a run imports from that folder: the folder of a script run directly (and the files that
run imports), a ``sys.path`` insert, or a Python 2 file's implicit relative import; never merely
because a file of that name exists. Through ``pyrepro scan --json`` and ``pyrepro init``.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyrepro.cli import main
from tests.fakes import json_result

Write = Callable[..., Path]

MATBENCH_HELPER = "from matbench.bench import MatbenchBenchmark\n\ndef bench():\n    return MatbenchBenchmark()\n"


@pytest.fixture(autouse=True)
def _cache(isolated_cache: Path) -> Path:
    return isolated_cache


def scan_json(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["scan", str(path), "--json"]) == 0
    out: dict[str, Any] = json_result(capsys.readouterr().out)
    return out


def local_of(out: dict[str, Any]) -> dict[str, str]:
    return {m["module"]: m["path"] for m in out["local_modules"]}


UTILS_MATBENCH_CASES = {
    "the brief's folder": {"run.py": "from utils.matbench import bench\nbench()\n",
                           "utils/matbench.py": MATBENCH_HELPER},
    "import utils.matbench": {"run.py": "import utils.matbench\nutils.matbench.bench()\n",
                              "utils/matbench.py": MATBENCH_HELPER},
    # a script of utils/ that does not import the helper: its run never executes utils/matbench.py
    "another script in utils/": {"run.py": "from utils.matbench import bench\n",
                                 "utils/matbench.py": MATBENCH_HELPER,
                                 "utils/plot.py": "import numpy\nprint(numpy.ones(3))\n"},
    # the helper run directly: a module file holds no matbench.bench, so the import is the distribution's
    "the helper has a main guard": {"run.py": "from utils.matbench import bench\n",
                                    "utils/matbench.py": MATBENCH_HELPER + "\nif __name__ == '__main__':\n    bench()\n"},
    "a self-import by name": {"run.py": "from utils.matbench import bench\n",
                              "utils/matbench.py": "import matbench\n\ndef bench():\n    return matbench.__version__\n"
                                                   "\nif __name__ == '__main__':\n    bench()\n",
                              "utils/notes.py": "print('unrelated script')\n"},
}


@pytest.mark.parametrize("case", list(UTILS_MATBENCH_CASES))
def test_scan__a_helper_in_a_sub_folder_named_like_a_distribution__its_absolute_import_is_the_distribution(
        write_files: Write, capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str) -> None:
    root = write_files({"requirements.txt": "matbench==0.5\n", **UTILS_MATBENCH_CASES[case]}, tmp_path / "sub")
    out = scan_json(root, capsys)
    assert "matbench" in out["required"]
    assert "matbench" not in local_of(out)
    assert not any("local matbench" in w for w in out["warnings"])
    assert "matbench" not in out["unused_declared"]


def test_scan__a_script_beside_the_helper_imports_it__its_import_local_the_helper_s_the_distribution(
        write_files: Write, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``python utils/run_bench.py`` puts utils/ on sys.path: its ``import matbench`` is the
    helper; the helper's ``from matbench.bench import ...`` still needs the distribution (a module
    file holds no ``matbench.bench``)."""
    out = scan_json(write_files({"requirements.txt": "matbench==0.5\n",
                                 "utils/run_bench.py": "import matbench\nmatbench.bench()\n",
                                 "utils/matbench.py": MATBENCH_HELPER}, tmp_path / "sub"), capsys)
    assert "matbench" in out["required"]
    assert [(m["path"], [loc["path"] for loc in m["locations"]]) for m in out["local_modules"]
            if m["module"] == "matbench"] == [("utils/matbench.py", ["utils/run_bench.py"])]
    imp = next(i for i in out["imports"] if i["module"] == "matbench")
    assert [loc["path"] for loc in imp["locations"]] == ["utils/matbench.py"]


def test_init__a_helper_named_like_a_declared_distribution__stays_a_dependency(
        write_files: Write, tmp_path: Path) -> None:
    root = write_files({"requirements.txt": "matbench==0.5\n", **UTILS_MATBENCH_CASES["another script in utils/"]},
                       tmp_path / "sub")
    models = tmp_path / "models"
    assert main(["init", str(root), "--name", "mb", "--models-dir", str(models), "--offline"]) == 0
    doc = tomllib.loads((models / "mb" / "model.toml").read_text())
    assert "matbench" in doc["dependencies"]["scanned"]
    assert {p["name"]: p["spec"] for p in doc["dependencies"]["pins"]}["matbench"] == "==0.5"
    assert "submission itself" not in doc.get("notes", "")


def test_scan__a_package_module_importing_a_name_its_folder_also_holds__the_distribution_unless_a_run_there(
        write_files: Write, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    files = {"run.py": "from models.net import Net\n",
             "models/__init__.py": "",
             "models/net.py": "from transformers import AutoModel\n\nclass Net:\n    pass\n",
             "models/transformers.py": "import torch\n\nclass Block:\n    pass\n",
             "models/export.py": "import torch\n\nif __name__ == '__main__':\n    pass\n"}
    out = scan_json(write_files(files, tmp_path / "a"), capsys)
    assert "transformers" in out["required"] and "transformers" not in local_of(out)
    # a script in models/ that imports net.py: that run has models/ on sys.path, so there the
    # local transformers.py is what net.py imports
    files["models/train.py"] = "import net\n\nif __name__ == '__main__':\n    net.Net()\n"
    out = scan_json(write_files(files, tmp_path / "b"), capsys)
    assert local_of(out)["transformers"] == "models/transformers.py"
    assert "transformers" not in out["required"]


def test_scan__top_level_modules_and_a_sub_folder_script_s_imports__local(
        write_files: Write, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = scan_json(write_files({
        "run.py": "import features\nimport transformers\n",
        "features.py": "import numpy\n",
        "transformers.py": "import torch\n",  # a top-level module shadows the distribution for run.py
        "scripts/train.py": "import helpers\n\nif __name__ == '__main__':\n    helpers.go()\n",
        "scripts/helpers.py": "import layers\n\ndef go():\n    pass\n",  # run from scripts/: its siblings
        "scripts/layers.py": "import tqdm\n",
    }, tmp_path / "sub"), capsys)
    local = local_of(out)
    assert local["features"] == "features.py" and local["transformers"] == "transformers.py"
    assert local["helpers"] == "scripts/helpers.py" and local["layers"] == "scripts/layers.py"
    assert out["required"] == ["numpy", "torch", "tqdm"]
    assert not any("not in a folder Python imports from" in w for w in out["warnings"])


@pytest.mark.parametrize(("legacy", "run", "is_local"), [
    ('print "loading"\nimport matbench\n', "from pkg import legacy\n", True),  # Python 2: implicit relative
    ("import matbench\n", 'from pkg import legacy\nprint "Python 2 code"\n', True),  # the whole code is Python 2
    ("print('loading')\nimport matbench\n", "from pkg import legacy\n", False),  # Python 3: absolute
    ("print('loading')\nfrom . import matbench\n", "from pkg import legacy\n", None),  # explicit relative
])
def test_scan__a_sibling_named_like_a_distribution__local_only_to_python_2_code(
        write_files: Write, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        legacy: str, run: str, is_local: bool | None) -> None:
    out = scan_json(write_files({"run.py": run, "pkg/__init__.py": "", "pkg/legacy.py": legacy,
                                 "pkg/matbench.py": "SETS = ['matbench_steels']\n"}, tmp_path / "sub"), capsys)
    if is_local is None:  # never a third-party import
        assert "matbench" not in out["required"] and "matbench" not in local_of(out)
    elif is_local:
        assert local_of(out)["matbench"] == "pkg/matbench.py" and "matbench" not in out["required"]
    else:
        assert "matbench" in out["required"] and "matbench" not in local_of(out)


def test_scan__a_script_named_like_a_part_of_a_third_party_import__still_a_script(
        write_files: Write, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """JARVIS-Leaderboard's benchmarks/.../transform.py is run directly (no main guard) and imports
    its sibling format_data; kgcnn's ``kgcnn.data.transform`` elsewhere imports no file of the tree."""
    out = scan_json(write_files({
        "run.py": "from kgcnn.data.transform.scaler.standard import StandardScaler\n",
        "prep/transform.py": "from format_data import prepare\nprepare()\n",
        "prep/format_data.py": "def prepare():\n    pass\n\nif __name__ == '__main__':\n    prepare()\n",
    }, tmp_path / "sub"), capsys)
    assert local_of(out)["format_data"] == "prep/format_data.py"
    assert not any("not in a folder Python imports from" in w for w in out["warnings"])
