"""Issue 12: init decides Python, GPU, benchmarks and aliases from the submission's evidence,
and writes each choice with its reason. Through ``pyrepro init`` (offline, or with a fake index)."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyrepro import evidence
from pyrepro.cli import main
from pyrepro.types import Location

Write = Callable[..., Path]


@pytest.fixture(autouse=True)
def _cache(isolated_cache: Path) -> Path:
    return isolated_cache


def _init(folder: Path, models: Path, *extra: str, name: str = "sub") -> dict[str, Any]:
    assert main(["init", str(folder), "--name", name, "--models-dir", str(models), *extra]) == 0
    return tomllib.loads((models / name / "model.toml").read_text())


def _nb(version: str) -> str:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5,
                       "metadata": {"language_info": {"name": "python", "version": version}},
                       "cells": [{"cell_type": "code", "source": "import numpy\n", "metadata": {}, "outputs": []}]})


_kernel_nb = _nb  # a notebook last run on a kernel of this version (another _nb below)


@pytest.mark.parametrize(("files", "version", "where"), [
    ({"environment.yml": "name: x\ndependencies:\n  - python=3.8\n  - numpy\n"}, "3.8", "environment.yml:3"),
    ({"run.sh": "#!/bin/bash\nconda create -n m python=3.9 -y\npython run.py\n"}, "3.9", "run.sh:2"),
    ({"nb.ipynb": _nb("3.7.12")}, "3.7", "nb.ipynb"),
    ({"runtime.txt": "python-3.6.15\n"}, "3.6", "runtime.txt:1"),
    # a `conda list --export` saved as requirements.txt (grover, corpus5 dev), and a pip-style line
    ({"requirements.txt": "# platform: linux-64\nnumpy=1.16.4=py36h7e9f1db_0\npython=3.6.8=h0371630_0\n"},
     "3.6", "requirements.txt:3"),
    ({"requirements-dev.txt": "python==3.7.10\nnumpy==1.21.0\n"}, "3.7", "requirements-dev.txt:1"),
    ({"info.json": json.dumps({"requirements": {"python": "3.9", "pip": ["numpy==1.20.1"]}})}, "3.9", "info.json"),
])
def test_init__python_from_evidence__written_with_reason(write_files: Write, tmp_path: Path, files: dict[str, str],
                                                         version: str, where: str) -> None:
    root = write_files({"sub/run.py": "import numpy\n", **{f"sub/{k}": v for k, v in files.items()}})
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    assert doc["python"] == version
    assert where in doc["python_reason"]


@pytest.mark.parametrize(("files", "version", "says"), [
    # a range whose floor is 2.7 but that allows Python 3 is no statement of Python 2: by date, in range
    ({"setup.py": "setup(python_requires='>=2.7, !=3.0.*, !=3.1.*, !=3.2.*, !=3.3.*, !=3.4.*, <4',)\n",
      "metadata.json": json.dumps({"date_submitted": "03-15-2019"})}, "3.7", "within the stated range"),
    # a floor above what the date gives: the oldest the range allows
    ({"setup.cfg": "[options]\npython_requires = >=3.9\n",
      "metadata.json": json.dumps({"date_submitted": "03-15-2019"})}, "3.9", "within the stated range"),
    ({"pyproject.toml": "[project]\nname='x'\nrequires-python = '>=3.8,<3.11'\n"}, "3.10", "within the stated range"),
    ({"setup.py": "setup(python_requires='==3.7.*')\n"}, "3.7", "setup.py:1"),
    # Pipfile's [requires]
    ({"Pipfile": "[packages]\nnumpy = '*'\n\n[requires]\npython_version = \"3.6\"\n",
      "setup.py": "setup(python_requires='>=2.7, <4')\n"}, "3.6", "Pipfile:5"),
    # an environment file's `python>=3.6` is a floor, not a pin: the README's conda create decides
    # (xtal2png, corpus5 held, found after its measurement: 3.6 had been taken as "the oldest pin")
    ({"environment.yml": "name: x\ndependencies:\n  - python>=3.6\n  - numpy\n",
      "README.md": "```\nconda create -n x python==3.9.*\n```\n"}, "3.9", "README.md:2"),
    # a notebook last run on 3.5: the oldest Python pyrepro targets, said so
    ({"docs/nb.ipynb": _nb("3.5.2")}, "3.6", "older than any pyrepro targets"),
])
def test_init__python_ranges_pipfile_and_untargeted_versions(write_files: Write, tmp_path: Path,
                                                             files: dict[str, str], version: str, says: str) -> None:
    root = write_files({"sub/run.py": "import numpy\n", **{f"sub/{k}": v for k, v in files.items()}})
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    assert (doc["python"], says in doc["python_reason"]) == (version, True), doc["python_reason"]


def test_choose_python__a_pin_outside_a_stated_range__kept_and_said() -> None:
    ev = [evidence.Evidence("3.6", "pin", Location("environment.yml", 2), "python=3.6"),
          evidence.Evidence("3.8", "range", Location("setup.py", 9), "python_requires='>=3.8'", spec=">=3.8")]
    choice = evidence.choose_python(ev)
    assert choice.version == "3.6" and "does not allow it" in choice.reason and "setup.py:9" in choice.reason


def test_init__a_stated_python_that_its_own_metadata_and_its_code_refuse__the_nearest_both_allow(
        write_files: Write, tmp_path: Path) -> None:
    """scgen (corpus12 dev, 2023): its docs say `conda create -n scgen-env python=3.7`, its
    pyproject.toml (Poetry) says python = ">=3.8,<4.0" and its code imports typing.Literal (3.8+):
    3.8, said so. A pin only the metadata refuses is kept (test above); Poetry's caret reads too."""
    root = write_files({
        "sub/scgen/model.py": "from typing import Literal\nimport numpy\n",
        "sub/docs/installation.rst": "Install::\n\n    conda create -n scgen-env python=3.7\n",
        "sub/pyproject.toml": '[tool.poetry]\nname = "scgen"\n\n[tool.poetry.dependencies]\npython = "^3.8"\n'
                              'numpy = "*"\n'})
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    assert doc["python"] == "3.8", doc["python_reason"]
    assert "pyproject.toml:5" in doc["python_reason"] and "nearest Python both allow" in doc["python_reason"]


def test_init__environment_yml_beats_notebook(write_files: Write, tmp_path: Path) -> None:
    root = write_files({"sub/run.py": "import numpy\n", "sub/nb.ipynb": _nb("3.10.4"),
                        "sub/environment.yml": "dependencies:\n  - python==3.8.5\n"})
    assert _init(root / "sub", tmp_path / "models", "--offline")["python"] == "3.8"


def test_init__no_evidence__date_bound_and_said_so(write_files: Write, tmp_path: Path) -> None:
    root = write_files({"sub/run.py": "import numpy\n",
                        "sub/metadata.json": json.dumps({"date_submitted": "03-15-2021", "software_used": "numpy"})})
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    # 3.10 came out in October 2021; 3.9 (October 2020) had been out only 5 months: too new for the
    # wheels of its time (the adoption lag)
    assert doc["python"] == "3.8"
    assert "no Python stated" in doc["python_reason"] and "2021-03-15" in doc["python_reason"]
    assert "3.9 was too new for the wheels of its time" in doc["python_reason"]


def test_settled_pythons__adoption_lag_boundaries() -> None:
    import datetime as dt

    from pyrepro.interpreters import ADOPTION_LAG, settled_pythons

    released = dt.date(2022, 10, 24)  # 3.11
    assert settled_pythons(released + ADOPTION_LAG)[-1] == "3.11"
    assert settled_pythons(released + ADOPTION_LAG - dt.timedelta(days=1))[-1] == "3.10"
    assert settled_pythons(dt.date(2017, 1, 1)) == ["3.6"]  # none out that long: the ones released by then
    assert settled_pythons(dt.date(2015, 1, 1)) == []
    assert settled_pythons(None)[-1] == "3.13"


def test_init__no_evidence__newest_python_with_wheels_for_the_pins(write_files: Write, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # a fake index: scikit-learn 0.24.1 has wheels for cp36..cp39 only
    listing = {"files": [{"filename": f"scikit_learn-0.24.1-cp3{m}-cp3{m}-manylinux2010_x86_64.whl"}
                         for m in (6, 7, 8, 9)] + [{"filename": "scikit-learn-0.24.1.tar.gz"}]}
    asked: list[str] = []

    def fetch(url: str) -> bytes | None:
        asked.append(url)
        return json.dumps(listing).encode() if url.rstrip("/").endswith("scikit-learn") else None

    monkeypatch.setattr("pyrepro.index._urllib_fetch", fetch)
    root = write_files({"sub/run.py": "import sklearn\n", "sub/requirements.txt": "scikit-learn==0.24.1\n",
                        "sub/metadata.json": json.dumps({"date_submitted": "2023-06-01"})})
    doc = _init(root / "sub", tmp_path / "models")
    assert doc["python"] == "3.9"
    assert "wheels for all 1 exact pins" in doc["python_reason"]
    assert asked


def test_init__stdlib_module_other_pythons_lack__bounds_the_choice(write_files: Write, tmp_path: Path) -> None:
    """An adversarial case: `import imp` (gone in 3.12) with a 2025 date and no stated Python.
    The newest Python of the date (3.13) would fail the import; the choice stays within 3.6-3.11
    and says why. A guarded import (try/except ImportError) is no evidence."""
    root = write_files({"sub/run.py": "import imp\nimport numpy\ntry:\n    import telnetlib\nexcept ImportError:\n"
                                      "    telnetlib = None\n",
                        "sub/metadata.json": json.dumps({"date_submitted": "06-01-2025"})})
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    assert doc["python"] == "3.11"
    assert "run.py:1 imports imp (standard library of Python 3.6-3.11 only)" in doc["python_reason"]
    assert "telnetlib" not in doc["python_reason"]
    # tomllib (3.11+) with a 2021 date: the oldest Python that has it, though it postdates the date
    root2 = write_files({"new/run.py": "import tomllib\n", "new/metadata.json": json.dumps({"date_submitted": "03-15-2021"})})
    doc2 = _init(root2 / "new", tmp_path / "models2", "--offline", name="new")
    assert doc2["python"] == "3.11" and "tomllib" in doc2["python_reason"]


def test_init__a_name_inside_the_standard_library_other_pythons_lack__bounds_the_choice(
        write_files: Write, tmp_path: Path) -> None:
    """vasp-procar (corpus8 dev): one undated file with `from collections import Iterable`, gone
    in 3.10; the newest CPython imported its numpy and failed at the first line of the run. Names
    other Pythons lack bound the choice as modules do, in both directions (`math.prod`: 3.8 on)."""
    root = write_files({"old/procar.py": "import numpy as np\nfrom collections import Iterable, OrderedDict\n"
                                         "from os import path\n"})
    doc = _init(root / "old", tmp_path / "models", "--offline", name="old")
    assert doc["python"] == "3.9"
    assert "procar.py:2 imports collections.Iterable (standard library of Python 3.6-3.9 only)" in doc["python_reason"]
    assert "OrderedDict" not in doc["python_reason"]
    root2 = write_files({"new/run.py": "from __future__ import annotations\nfrom math import prod\n",
                         "new/metadata.json": json.dumps({"date_submitted": "03-15-2019"})})
    doc2 = _init(root2 / "new", tmp_path / "models2", "--offline", name="new")
    assert doc2["python"] == "3.8" and "math.prod" in doc2["python_reason"]
    # a generated table: every span is within the Pythons pyrepro targets, first <= last
    from pyrepro.interpreters import version_key
    from pyrepro.scan.stdlib import _names_table

    table = _names_table()
    assert len(table) > 1000 and table["collections.Iterable"] == ("3.6", "3.9")
    assert all(version_key(a) <= version_key(b) for a, b in table.values())


def test_choose_python__stdlib_bounds__replaced_modules_and_stated_pythons() -> None:
    from pyrepro.scan import StdlibUse

    imp = StdlibUse("imp", "3.6", "3.11", Location("a.py", 3), False)
    distutils = StdlibUse("distutils", "3.6", "3.11", Location("a.py", 4), False)  # setuptools replaces it
    tomllib_ = StdlibUse("tomllib", "3.11", "3.13", Location("b.py", 1), False)
    assert evidence.choose_python([], stdlib_uses=[distutils]).version == evidence.NEWEST
    assert evidence.choose_python([], stdlib_uses=[imp, tomllib_]).version == "3.11"  # both allow 3.11 only
    gone = StdlibUse("formatter", "3.6", "3.9", Location("c.py", 1), False)
    clash = evidence.choose_python([], stdlib_uses=[gone, tomllib_])
    assert clash.version == evidence.NEWEST and "contradict" in clash.reason
    # a stated Python wins, but the reason says what disagrees with it
    stated = evidence.choose_python([evidence.Evidence("3.12", "pin", Location("environment.yml", 2), "python=3.12")],
                                    stdlib_uses=[imp])
    assert stated.version == "3.12" and "a.py:3 imports imp" in stated.reason


def test_scan_cli__stdlib_module_of_other_pythons__never_a_pypi_guess(
        write_files: Write, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.fakes import json_result

    root = write_files({"sub/run.py": "import imp\nimport asyncore\n"})
    assert main(["scan", str(root / "sub"), "--python", "3.13", "--json", "--no-cache"]) == 0
    res = json_result(capsys.readouterr().out)
    assert res["guesses"] == [] and res["distributions"] == []
    notes = {u["module"]: u["hint"] for u in res["unresolved"]}
    assert "standard library of Python 3.6-3.11 only" in notes["imp"] and "asyncore" in notes
    assert {u["module"] for u in res["stdlib_uses"]} == {"imp", "asyncore"}


def test_choose_python__disagreeing_pins__oldest_with_both_named() -> None:
    ev = [evidence.Evidence("3.9", "pin", Location("environment.yml", 2), "python=3.9"),
          evidence.Evidence("3.8", "pin", Location("run.sh", 3), "conda create python=3.8")]
    choice = evidence.choose_python(ev)
    assert choice.version == "3.8" and "environment.yml:2" in choice.reason and "run.sh:3" in choice.reason


def test_choose_python__disagreeing_pins__the_top_level_files_speak_for_the_folder() -> None:
    """hydrodl (corpus14 dev): README.md and environment.yml at the top say 3.10 (whose pins need
    >=3.9), an example's yml in a sub-folder 3.7: 3.10, said why. Top-level files that disagree among
    themselves, or a Python 2 statement at the top, leave the oldest rule as it was."""
    ev = [evidence.Evidence("3.10", "pin", Location("README.md", 11), "conda create -n x python=3.10"),
          evidence.Evidence("3.10", "pin", Location("environment.yml", 142), "python=3.10.13=h955ad1f_0"),
          evidence.Evidence("3.7", "pin", Location("example/multiscale/hydroDL-rel.yml", 51), "python=3.7.12")]
    choice = evidence.choose_python(ev)
    assert choice.version == "3.10" and "top-level files" in choice.reason
    assert "example/multiscale/hydroDL-rel.yml:51" in choice.reason
    split = [*ev[:1], evidence.Evidence("3.8", "pin", Location("run.sh", 2), "python=3.8"), ev[2]]
    assert evidence.choose_python(split).version == "3.7"
    py2_top = [evidence.Evidence("2.7", "pin", Location("environment.yml", 3), "python=2.7"), ev[2]]
    assert evidence.choose_python(py2_top).version == "3.7"


def test_init__python2_code__27_with_the_line(write_files: Write, tmp_path: Path) -> None:
    root = write_files({"sub/old.py": "import urllib2\nprint 'x'\n"})
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    assert doc["python"] == "2.7" and "old.py" in doc["python_reason"]


def test_init__benchmarks_and_gpu_from_files(write_files: Write, tmp_path: Path) -> None:
    root = write_files({
        "sub/run.py": "import numpy\n",
        "sub/AI-SinglePropertyPrediction-exfoliation_energy-dft_3d-test-mae.csv.zip": b"PK",
        "sub/AI-SinglePropertyPrediction-formation_energy_peratom-dft_3d-test-mae.csv.zip": b"PK",
        "sub/job.slurm": "#!/bin/bash\n#SBATCH --gres=gpu:1\npython run.py\n",
    })
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    assert doc["benchmarks"] == ["dft_3d_exfoliation_energy", "dft_3d_formation_energy_peratom"]
    assert doc["gpu"] == "optional" and "job.slurm:2" in doc["gpu_reason"]


def test_init__alias_clash__not_added_and_registry_still_loads(write_files: Write, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    models = tmp_path / "models"
    root = write_files({"a/contrib/run.py": "import numpy\n", "b/contrib/run.py": "import scipy\n"})
    first = _init(root / "a" / "contrib", models, "--offline", name="first")
    assert first["aliases"] == ["contrib"]
    second = _init(root / "b" / "contrib", models, "--offline", name="second")
    assert second["aliases"] == []
    assert "already used by model 'first'" in capsys.readouterr().err
    from pyrepro.registry import (
        load_registry,  # a clash would make loading (and every command) fail
    )

    assert sorted(load_registry(models).names()) == ["first", "second"]


def test_init__declared_but_not_imported_kept_dev_tools_dropped_duplicates_merged(write_files: Write,
                                                                                  tmp_path: Path) -> None:
    root = write_files({
        "sub/run.py": "import numpy\nos.system('train_folder.py --x 1')\n",
        "sub/requirements.txt": "numpy==1.23.5\nnumpy==1.23.5\nalignn==2023.4.1\nblack==23.1.0\n",
    })
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    deps = doc["dependencies"]
    assert deps["scanned"] == ["numpy"]
    assert "alignn" in deps["extra"] and "black" not in deps["extra"]
    assert "black (code formatter)" in doc["notes"]
    pins = [(p["name"], p["spec"]) for p in deps["pins"]]
    assert pins.count(("numpy", "==1.23.5")) == 1 and ("alignn", "==2023.4.1") in pins


def test_init__draft_pin__source_in_cache_by_tree_id(write_files: Write, tmp_path: Path,
                                                     isolated_cache: Path) -> None:
    root = write_files({"sub/run.py": "import numpy\n"})
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    assert (isolated_cache / "sources" / doc["source"]["tree"] / "run.py").is_file()


def test_init__free_text_software_used__never_adds_names(write_files: Write, tmp_path: Path) -> None:
    root = write_files({"sub/run.py": "import numpy\n",
                        "sub/metadata.json": json.dumps({"software_used": "quantum espresso,numpy,torch"})})
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    assert doc["dependencies"]["scanned"] == ["numpy"] and doc["dependencies"]["extra"] == []


def test_init__conda_style_pins__valid_pep440_pins(write_files: Write, tmp_path: Path) -> None:
    """An exported conda list (name=version=build) gives PEP 440 pins; an unreadable spec is left
    out rather than making the draft invalid (it was refused with exit 3)."""
    root = write_files({"sub/run.py": "import numpy\nimport annotated_types\nimport yaml\n",
                        "sub/requirements.txt": "annotated-types=0.6.0=py310h06a4308_0\nnumpy=1.26\n"
                                                "pyyaml=garbage=x\n"})
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    pins = {p["name"]: p["spec"] for p in doc["dependencies"].get("pins", [])}
    assert pins == {"annotated-types": "==0.6.0", "numpy": "==1.26.*"}


@pytest.mark.integration
@pytest.mark.network
def test_init__real_pypi__2021_pins__newest_python_with_wheels_for_all(write_files: Write, tmp_path: Path) -> None:
    """The failure class as observed: 2021 pins (scikit-learn 0.24.1, numpy 1.20.1) have no
    wheels for 3.10+, so init must not pick 3.10 by default; real PyPI decides 3.9."""
    root = write_files({"sub/run.py": "import sklearn\nimport numpy\n",
                        "sub/requirements.txt": "scikit-learn==0.24.1\nnumpy==1.20.1\n",
                        "sub/metadata.json": json.dumps({"date_submitted": "2023-06-01"})})
    doc = _init(root / "sub", tmp_path / "models")
    assert doc["python"] == "3.9", doc["python_reason"]
    assert "wheels for all 2 exact pins" in doc["python_reason"]


# ------------------------------------------------------------------------- submission date

def test_submission_date__stated_then_git_then_newest_pin_upload(tmp_path: Path) -> None:
    import datetime as dt
    import subprocess

    from pyrepro import evidence

    sub = tmp_path / "repo" / "sub"
    sub.mkdir(parents=True)
    (sub / "run.py").write_text("import numpy\n")
    uploads = {("numpy", "1.19.5"): "2021-01-05T10:00:00Z", ("pandas", "1.1.5"): "2020-12-07T01:00:00Z"}
    pins = [("numpy", "1.19.5"), ("pandas", "1.1.5"), ("never", "0.1")]
    got = evidence.submission_date(sub, pins=pins, uploaded=lambda n, v: uploads.get((n, v)))
    assert got.day == dt.date(2021, 1, 5) and "numpy 1.19.5 (2021-01-05)" in got.reason
    assert "3 exact pins" in got.reason
    assert evidence.submission_date(sub, pins=pins, uploaded=None) == evidence.DateChoice(None, "")

    git = ["git", "-C", str(tmp_path / "repo")]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    env = {"GIT_AUTHOR_DATE": "2022-03-04T12:00:00", "GIT_COMMITTER_DATE": "2022-03-04T12:00:00",
           "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b",
           "PATH": __import__("os").environ["PATH"]}
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True, env=env)
    got = evidence.submission_date(sub, pins=pins, uploaded=lambda n, v: uploads.get((n, v)))
    assert got.day == dt.date(2022, 3, 4) and "last git commit" in got.reason

    (sub / "metadata.json").write_text('{"date_submitted": "02-16-2023"}')
    got = evidence.submission_date(sub, pins=pins, uploaded=lambda n, v: uploads.get((n, v)))
    assert got.day == dt.date(2023, 2, 16) and got.reason == "metadata.json date_submitted: 02-16-2023"
    (sub / "metadata.json").write_text('{"date_submitted": "13-45-2023"}')  # no such day: not evidence
    assert evidence.submission_date(sub).day == dt.date(2022, 3, 4)


# ------------------------------------------------------------------------- notebook run time

def _nb(cells: list[dict[str, Any]], **meta: Any) -> str:
    return json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": meta, "cells": cells})


def _code(*outputs: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"cell_type": "code", "source": "import numpy\n", "metadata": meta, "outputs": list(outputs),
            "execution_count": 1}


def test_init__notebook_log_timestamp__is_the_date_and_bounds_python(write_files: Write, tmp_path: Path) -> None:
    tf_log = {"output_type": "stream", "name": "stderr",
              "text": ["2021-03-01 14:02:11.532961: I tensorflow/core/platform/cpu_feature_guard.cc:142] ...\n"]}
    printed_data = {"output_type": "stream", "name": "stdout",  # a datetime column: midnight, not a run
                    "text": "0   2024-06-30 00:00:00\n"}
    result = {"output_type": "execute_result", "execution_count": 1, "metadata": {},  # not a stream
              "data": {"text/plain": "'2025-01-02 10:11:12'"}}
    root = write_files({
        "sub/train.ipynb": _nb([_code(tf_log), _code(printed_data, result)]),
        "sub/.ipynb_checkpoints/train-checkpoint.ipynb": _nb([_code({"output_type": "stream", "name": "stdout",
                                                                     "text": "2024-05-05 10:00:01 INFO\n"})]),
    })
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    assert doc["submitted"] == "2021-03-01"
    assert "train.ipynb" in doc["submitted_reason"] and "timestamp its output printed" in doc["submitted_reason"]
    assert doc["python"] == "3.8"  # 3.9 (October 2020) was under 180 days old then
    assert "2021-03-01" in doc["python_reason"]


def test_notebook_date__execution_metadata_papermill_nbformat3_and_bad_files(tmp_path: Path) -> None:
    import datetime as dt

    d = tmp_path / "f"
    d.mkdir()
    (d / "a.ipynb").write_text(_nb([_code(execution={"iopub.execute_input": "2020-05-06T07:08:09.123Z",
                                                      "shell.execute_reply": "2020-05-06T07:08:10.001Z"})]))
    assert evidence.notebook_date(d) == (dt.date(2020, 5, 6),
                                         "the day its notebook last ran (a.ipynb: a cell's execution time, 2020-05-06)")
    (d / "b.ipynb").write_text(_nb([], papermill={"start_time": "2022-02-03T04:05:06", "end_time": None}))
    assert evidence.notebook_date(d)[0] == dt.date(2022, 2, 3)  # the newest notebook wins
    v3 = {"nbformat": 3, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "outputs": [{"output_type": "stream", "text": ["2023-01-02 03:04:05 start\n"]}]}]}]}
    (d / "c.ipynb").write_text(json.dumps(v3))
    assert evidence.notebook_date(d)[0] == dt.date(2023, 1, 2)
    (d / "d.ipynb").write_text("{ not json")  # no evidence, no crash
    (d / "e.ipynb").write_text(json.dumps([1, 2]))
    assert evidence.notebook_date(d)[0] == dt.date(2023, 1, 2)
    # a day after today or before notebooks existed, and an impossible day, are not evidence
    (d / "f.ipynb").write_text(_nb([_code({"output_type": "stream", "text": "2099-01-01 10:00:00 x\n"
                                                                              "2009-01-01 10:00:00 y\n"
                                                                              "2023-02-30 10:00:00 z\n"})]))
    assert evidence.notebook_date(d, today=dt.date(2026, 1, 1))[0] == dt.date(2023, 1, 2)
    assert evidence.notebook_date(tmp_path / "empty") == (None, "")


def test_submission_date__notebook_older_than_a_pin__the_pin_upload_wins(tmp_path: Path) -> None:
    import datetime as dt

    d = tmp_path / "f"
    d.mkdir()
    (d / "a.ipynb").write_text(_nb([_code({"output_type": "stream", "text": "2020-01-02 03:04:05 INFO\n"})]))
    up = {("numpy", "1.21.0"): "2021-06-22T12:00:00Z"}
    got = evidence.submission_date(d, pins=[("numpy", "1.21.0")], uploaded=lambda n, v: up.get((n, v)))
    assert got.day == dt.date(2021, 6, 22) and "numpy 1.21.0" in got.reason and "notebook last ran" in got.reason
    got = evidence.submission_date(d, pins=[("numpy", "1.21.0")], uploaded=None)
    assert got.day == dt.date(2020, 1, 2) and got.reason.startswith("no date stated; the day its notebook last ran")


def test_notebook_date__any_json__never_raises(tmp_path_factory: pytest.TempPathFactory) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=40),
                               lambda kids: st.lists(kids, max_size=4) | st.dictionaries(
                                   st.sampled_from(["cells", "outputs", "output_type", "text", "metadata",
                                                    "execution", "papermill", "worksheets", "start_time"]),
                                   kids, max_size=4), max_leaves=20)
    d = tmp_path_factory.mktemp("nb")

    @settings(max_examples=200, deadline=None)
    @given(json_values)
    def check(value: Any) -> None:
        (d / "x.ipynb").write_text(json.dumps(value))
        day, why = evidence.notebook_date(d)
        assert (day is None) == (why == "")

    check()


def test_init__notebooks_disagree_one_on_python_2__oldest_python_3_taken(write_files: Write, tmp_path: Path) -> None:
    # ElemNet 2020 (corpus2): one notebook last ran on a 2.7 kernel, the others on 3.6
    root = write_files({"sub/a.ipynb": _kernel_nb("3.6.3"), "sub/b.ipynb": _kernel_nb("3.6.9"), "sub/c.ipynb": _kernel_nb("2.7.12"),
                        "sub/d.ipynb": _kernel_nb("3.7.1")})
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    assert doc["python"] == "3.6"
    assert "disagree" in doc["python_reason"] and "c.ipynb" in doc["python_reason"]
    assert "the one most notebooks name, 3.6 (2 of 4)" in doc["python_reason"]


def test_init__every_file_on_python_2__python_2_named(write_files: Write, tmp_path: Path) -> None:
    root = write_files({"sub/a.ipynb": _kernel_nb("2.7.12"), "sub/b.ipynb": _kernel_nb("2.7.6")})
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    assert doc["python"] == "2.7"


def test_init__python_2_script_beside_python_3_code__a_leftover_not_the_python(
        write_files: Write, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a 2023 project with one old helper script (a print statement) among f-string code
    root = write_files({"sub/bin/old_tool.py": "import sys\nprint 'done'\n",
                        "sub/train.py": "import numpy\nname = 'x'\nprint(f'{name}')\n",
                        "sub/lib/model.py": "async def fetch():\n    return 1\n"})
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    assert doc["python"] != "2.7"
    said = capsys.readouterr()
    assert "bin/old_tool.py" in said.out + said.err and "leftovers" in said.out + said.err


def test_init__python_2_code_only_in_the_documentation__not_the_python(
        write_files: Write, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # qml 2017 (corpus7 dev): Sphinx's docs/source/conf.py has a print statement; the package's
    # code parses on both Pythons. A documentation build's configuration is not the model's code.
    root = write_files({"sub/docs/source/conf.py": "import os\nprint 'building'\n",
                        "sub/qml/kernels.py": "import numpy\nx = '%s' % 1\n"})
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    assert doc["python"] != "2.7"
    said = capsys.readouterr()
    assert "Python 2 code only in documentation (docs/source/conf.py)" in said.out + said.err
    # the same file outside a documentation folder: Python 2
    again = write_files({"sub2/tools/conf.py": "import os\nprint 'building'\n",
                         "sub2/qml/kernels.py": "import numpy\nx = '%s' % 1\n"})
    assert _init(again / "sub2", tmp_path / "models2", "--offline")["python"] == "2.7"


def test_init__python_2_code_and_nothing_only_python_3_parses__python_2(write_files: Write, tmp_path: Path) -> None:
    root = write_files({"sub/a.py": "import numpy\nprint 'x'\n", "sub/b.py": "import os\nx = '%s' % 1\n"})
    assert _init(root / "sub", tmp_path / "models", "--offline")["python"] == "2.7"


@pytest.mark.parametrize(("line", "py3"), [
    ("x = f'{a}'", True), ("x = rf\"{a}\"", True), ("async def f():", True), ("    nonlocal n", True),
    ("    yield from g()", True), ("def f(a) -> int:", True), ("def f(a) -> Dict[str, int]:  # doc", True),
    ("if x: y = 'elif'", False), ("# f'{a}'", False), ("print 'x'", False), ("x = 'a' if b else\"c\"", False),
    ("import foo as f", False),
])
def test_python3_only__syntax_python_2_cannot_parse(line: str, py3: bool) -> None:
    from pyrepro.scan import _python3_only

    assert (_python3_only(line + "\n") is not None) is py3


def test_init__notebook_kernels_disagree__the_one_most_name_never_one_below_the_targets(
        write_files: Write, tmp_path: Path) -> None:
    # SMACT's examples (corpus3 held, seen after its measurement): five notebooks on 3.7.1, two on
    # 3.6.8, one on 3.5.2; the oldest, 3.5, is no Python pyrepro targets and its lock timed out
    nbs = {f"sub/n{i}.ipynb": _kernel_nb(v) for i, v in enumerate(
        ["3.7.1"] * 5 + ["3.6.8"] * 2 + ["3.5.2"])}
    doc = _init(write_files(nbs) / "sub", tmp_path / "models", "--offline")
    assert doc["python"] == "3.7" and "5 of 8" in doc["python_reason"]
    # a tie: the oldest of the tied
    tie = {"sub/a.ipynb": _kernel_nb("3.8.1"), "sub/b.ipynb": _kernel_nb("3.9.2")}
    assert _init(write_files(tie, base=tmp_path / "t") / "sub", tmp_path / "m2", "--offline")["python"] == "3.8"


def test_init__undated_submission_stating_an_old_python__its_end_of_life_bounds_the_date(
        write_files: Write, tmp_path: Path) -> None:
    """bo-benchmark (corpus7 dev): notebooks ran on 3.7.6, nothing dates the folder. pyDOE's 2026
    releases use typing.Literal, which 3.7 lacks, without saying so in their metadata. The stated
    Python's end of life is the date bound (a release made after it is none its authors used)."""
    root = write_files({"sub/a.ipynb": _kernel_nb("3.7.6")})
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    assert doc["python"] == "3.7" and doc["submitted"] == "2023-06-27"
    assert "CPython 3.7, the Python the submission states" in doc["submitted_reason"]
    assert "end of life on 2023-06-27" in doc["submitted_reason"]
    # a stated date wins; a Python chosen without evidence bounds nothing
    dated = write_files({"d/a.ipynb": _kernel_nb("3.7.6"), "d/metadata.json": json.dumps({"date_submitted": "03-01-2021"})})
    assert _init(dated / "d", tmp_path / "m2", "--offline")["submitted"] == "2021-03-01"
    plain = write_files({"p/run.py": "import numpy\n"})
    assert "submitted" not in _init(plain / "p", tmp_path / "m3", "--offline")
    # and the Python given on the command line is the user's choice, not the submission's statement
    assert "submitted" not in _init(root / "sub", tmp_path / "m4", "--offline", "--python", "3.7")


@pytest.mark.parametrize(("dockerfile", "version"), [
    ("FROM python:3.8-slim\nRUN pip install numpy\n", "3.8"),
    ("FROM continuumio/miniconda3\nRUN conda install -y \\\n    numpy \\\n    python=3.7\n", "3.7"),
])
def test_init__dockerfile_states_the_python(write_files: Write, tmp_path: Path, dockerfile: str, version: str) -> None:
    root = write_files({"sub/Dockerfile": dockerfile, "sub/run.py": "import numpy\n"})
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    assert doc["python"] == version and "Dockerfile" in doc["python_reason"]


def test_init__top_level_environment_and_an_examples_env_disagree__top_level_python(
        write_files: Write, tmp_path: Path) -> None:
    """hydrodl (corpus14 dev), through `pyrepro init`: the folder's environment.yml says 3.10 and an
    example's environment file in a sub-folder 3.7; the model's Python is 3.10, both named."""
    root = write_files({"sub/run.py": "import numpy\n",
                        "sub/environment.yml": "dependencies:\n  - python=3.10.13=h955ad1f_0\n  - numpy=1.26.0\n",
                        "sub/example/multi/old.yml": "dependencies:\n  - python=3.7.12=hf930737_100_cpython\n"})
    doc = _init(root / "sub", tmp_path / "models", "--offline")
    assert doc["python"] == "3.10", doc["python_reason"]
    assert "top-level files" in doc["python_reason"] and "example/multi/old.yml" in doc["python_reason"]
