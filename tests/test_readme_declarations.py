"""Declarations a submission gives only in its README (install commands, a requirement list in a
code block) and in conda commands of its scripts: read, located, and weaker than a declaration
file. Through ``pyrepro init`` (the public entry point) and the README parser."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyrepro.cli import main
from pyrepro.scan import metadata

Write = Callable[[dict[str, str]], Path]


@pytest.fixture(autouse=True)
def _cache(isolated_cache: Path) -> Path:
    return isolated_cache


def _init(folder: Path, models: Path) -> dict[str, Any]:
    assert main(["init", str(folder), "--name", "sub", "--models-dir", str(models), "--offline"]) == 0
    return tomllib.loads((models / "sub" / "model.toml").read_text())


def _pins(doc: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {p["name"]: (p["spec"], p["reason"]) for p in doc["dependencies"].get("pins", [])}


README_MD = """\
# G-thing

Requirements:
- python >= 3.7 (prose: not read)

The following creates the environment:

    conda create -n g python=3.7 pytorch=1.5.0 torchvision cudatoolkit=10.2 ase=3.19.0 -c pytorch
    conda activate g
    pip install 'schnetpack==0.3'

Optional: logging with `pip install wandb` (the code never imports it).

```
$ pip install tensorboard==2.1.0
```
"""


def test_init__readme_install_commands__pins_located_python_stated(write_files: Write, tmp_path: Path) -> None:
    root = write_files({"sub/README.md": README_MD,
                        "sub/train.py": "import torch\nimport schnetpack\nimport ase\n"})
    doc = _init(root / "sub", tmp_path / "models")
    pins = _pins(doc)
    assert pins["torch"][0] == "==1.5.0" and "README.md:8" in pins["torch"][1]
    assert pins["ase"][0] == "==3.19.0"
    assert pins["schnetpack"][0] == "==0.3" and "README.md:10" in pins["schnetpack"][1]
    # a README command installing nothing the code imports is not taken; cudatoolkit is no distribution
    deps = doc["dependencies"]
    everything = {*deps["scanned"], *deps["extra"], *pins}
    assert "wandb" not in everything and "tensorboard" not in everything and "cudatoolkit" not in everything
    assert "torchvision" in everything  # on the same command as torch, which the code imports
    assert doc["python"] == "3.7" and "README.md:8" in doc["python_reason"]


def test_init__readme_requirement_block__read_and_a_declaration_file_wins(write_files: Write, tmp_path: Path) -> None:
    readme = ("# D\n\n### Dependencies\n\n```\npython==3.8.13\ntorch==1.9.0\npandas==1.3.0\n```\n\n"
              "```\nPROJECT_ROOT: the path of this repo\n```\n")
    root = write_files({"sub/README.md": readme, "sub/requirements.txt": "pandas==1.4.2\n",
                        "sub/run.py": "import torch\nimport pandas\n"})
    doc = _init(root / "sub", tmp_path / "models")
    pins = _pins(doc)
    assert pins["torch"][0] == "==1.9.0" and "README.md:7" in pins["torch"][1]
    assert pins["pandas"][0] == "==1.4.2" and "requirements.txt:1" in pins["pandas"][1]
    assert doc["python"] == "3.8" and "README.md:6" in doc["python_reason"]
    assert "project-root" not in str(doc["dependencies"]).lower()


def test_init__conda_install_in_a_script__a_declaration(write_files: Write, tmp_path: Path) -> None:
    root = write_files({"sub/scripts/setup.sh": "conda create -y -n g python=3.6 tqdm\n"
                                                "conda install -y pytorch=1.6.0 cudatoolkit=10.1 -c pytorch\n"
                                                "conda env create -f environment.yml\n",
                        "sub/run.py": "import torch\nimport tqdm\n"})
    doc = _init(root / "sub", tmp_path / "models")
    pins = _pins(doc)
    assert pins["torch"][0] == "==1.6.0" and "scripts/setup.sh:2" in pins["torch"][1]
    assert doc["python"] == "3.6"
    assert "environment-yml" not in str(doc["dependencies"])


def test_readme__vendored_readme_deeper_than_one_folder__not_read() -> None:
    assert metadata.parser_for("README.md") is metadata.parse_readme
    assert metadata.parser_for("docs/README.rst") is metadata.parse_readme
    assert metadata.parser_for("third_party/lib/README.md") is None


def test_readme__rst_literal_block_and_prose__commands_only() -> None:
    text = ("Install\n=======\n\nRun this::\n\n    pip install numpy==1.19.5 scipy\n\n"
            "Then pip install the package as usual (prose: no command).\n")
    ms = metadata.parse_readme(text, "README.rst")
    assert [(d.name, d.spec, d.line) for d in ms.declared] == [("numpy", "numpy==1.19.5", 6), ("scipy", "scipy", 6)]
    assert all(d.doc == 6 for d in ms.declared)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("`~:$>!# \n\tpipcondainstalcreate=1.0abc-_")), max_size=40),
                max_size=8))
def test_readme__any_text__never_raises_never_an_invalid_name(lines: list[str]) -> None:
    from packaging.utils import canonicalize_name

    ms = metadata.parse_readme("\n".join(lines), "README.md")
    for d in ms.declared:
        assert d.name == canonicalize_name(d.name) and d.name and d.doc is not None and d.line is not None
    for _path, line, msg in ms.warnings:
        assert msg and (line is None or line >= 1)


def test_init__full_conda_export__only_pins_of_imported_packages_kept(write_files: Write, tmp_path: Path) -> None:
    """perovskite-ordering (corpus4 dev): a `conda env export` of 155 builds. Pins of packages the
    code never imports are conda's resolution, not the authors': a dozen system libraries and
    transitive pins conflicted until the relaxation limit. Only the imported ones are kept."""
    conda = [f"  - lib{i}pkg=1.{i}=h{i}abc_0" for i in range(12)]
    yml = "\n".join(["name: x", "channels:", "  - conda-forge", "dependencies:", *conda,
                     "  - numpy=1.22.4=py310h4ef5377_0", "  - bottleneck=1.3.5=py310ha9d4c09_0",
                     "  - python=3.10.11=h7a1cb2a_2", "  - pip:", "    - sigopt==8.8.2", "    - wandb==0.15.0", ""])
    root = write_files({"sub/environment.yml": yml, "sub/run.py": "import numpy\nimport sigopt\n"})
    doc = _init(root / "sub", tmp_path / "models")
    pins = _pins(doc)
    assert pins["numpy"][0] == "==1.22.4" and pins["sigopt"][0] == "==8.8.2"
    deps = doc["dependencies"]
    assert {*deps["scanned"], *deps["extra"], *pins} == {"numpy", "sigopt"}
    assert doc["python"] == "3.10"


def test_init__conda_list_export_as_requirements_txt__read_like_an_env_export(write_files: Write,
                                                                               tmp_path: Path) -> None:
    """grover (corpus5 dev): `conda list --export` saved as requirements.txt (name=version=build).
    conda's system libraries (boost, readline) had become PyPI's unrelated `boost` 0.1, whose sdist
    moved the Python, and the `python=3.6.8` line was not read: the Python fell to the newest."""
    lines = [f"lib{i}pkg=1.{i}=h{i}abc_0" for i in range(10)]
    req = "\n".join(["# platform: linux-64", "boost=1.68.0=py36h8619c78_1001", "readline=7.0=h7b6447c_5",
                     "numpy=1.16.4=py36h7e9f1db_0", "python=3.6.8=h0371630_0", "tqdm=4.32.1=py_0", *lines, ""])
    root = write_files({"sub/requirements.txt": req, "sub/run.py": "import numpy\n"})
    doc = _init(root / "sub", tmp_path / "models")
    deps = doc["dependencies"]
    assert {*deps["scanned"], *deps["extra"], *_pins(doc)} == {"numpy"}
    assert _pins(doc)["numpy"][0] == "==1.16.4" and doc["python"] == "3.6"
    ms = metadata.parse_requirements_txt(req, "requirements.txt")
    assert any("not a Python distribution" in m and "boost" in m for _p, _l, m in ms.warnings)
    assert any("conda list --export" in m for _p, _l, m in ms.warnings)
    # a short list in conda form is no export: every entry stays declared
    ms = metadata.parse_requirements_txt("numpy=1.16.4=py36h7e9f1db_0\ntqdm=4.32.1=py_0\n", "requirements.txt")
    assert {d.name for d in ms.declared} == {"numpy", "tqdm"} and all(d.doc is None for d in ms.declared)


def test_environment_yml__a_few_build_strings__not_an_export() -> None:
    yml = "dependencies:\n  - numpy=1.22.4=py310h4ef5377_0\n  - scipy=1.9\n  - pip:\n    - wandb==0.15.0\n"
    ms = metadata.parse_environment_yml(yml, "environment.yml")
    assert {d.name for d in ms.declared} == {"numpy", "scipy", "wandb"} and all(d.doc is None for d in ms.declared)


def test_init__a_notebook_clones_a_repository__noted_with_where(write_files: Write, tmp_path: Path) -> None:
    import json

    nb = json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": "!git clone https://github.com/o/bench.git\n"},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": "import sys\nsys.path.append('bench')\n"
                                                                         "from train_agent import train\n"}]})
    root = write_files({"sub/run.ipynb": nb})
    doc = _init(root / "sub", tmp_path / "models")
    assert "the code clones https://github.com/o/bench (run.ipynb[cell 0]:1)" in doc["notes"]


def test_init__the_readme_links_the_repository_of_an_unknown_import__noted_with_where(write_files: Write,
                                                                                      tmp_path: Path) -> None:
    """vnet-volumetric (corpus18 dev): ``import torchbiomed.datasets``, on no index, and the README
    links https://github.com/mattmacy/torchbiomed. The note names the link and its line; a link to
    a repository of another name (and a module no link names) gets none."""
    root = write_files({
        "sub/README.md": "# V-Net\nSee [docs](https://github.com/o/other-docs).\n\n"
                         "Needs the [Torchbiomed](https://github.com/someone/TorchBiomed.git) package.\n",
        "sub/train.py": "import torchbiomed.datasets as dset\nimport qqqzzunknownmod\n"})
    doc = _init(root / "sub", tmp_path / "models")
    assert ("the README links https://github.com/someone/TorchBiomed (README.md:4): torchbiomed may come from it"
            in doc["notes"])
    assert "other-docs" not in doc["notes"] and "qqqzzunknownmod may come from it" not in doc["notes"]


def test_init__the_readme_links_a_scikit_repository__its_sk_import_name_is_noted(write_files: Write,
                                                                                 tmp_path: Path) -> None:
    """holographic-embeddings (corpus19 dev): ``import skge``, and the README links
    https://github.com/mnick/scikit-kge (the SciKits' import convention: scikit-learn is sklearn).
    A scikit- repository whose sk-name the code does not import gets no note."""
    root = write_files({
        "sub/README.md": "# HolE\nInstall [scikit-kge](https://github.com/mnick/scikit-kge) first.\n"
                         "Also https://github.com/o/scikit-zzqq.\n",
        "sub/kg/run.py": "import skge\nfrom skge import sample\n"})
    doc = _init(root / "sub", tmp_path / "models")
    assert "the README links https://github.com/mnick/scikit-kge (README.md:2): skge may come from it" in doc["notes"]
    assert "scikit-zzqq" not in doc["notes"]


def test_init__an_import_after_a_sys_path_insert_of_a_folder_outside__noted_with_where(write_files: Write,
                                                                                      tmp_path: Path) -> None:
    """pointnet-semantic-segmentation (corpus19 dev): the sem_seg/ sub-folder appends its
    repository's utils/ (``os.path.join(ROOT_DIR, 'utils')``) and imports tf_util from it; the
    note says where the code looks for it."""
    root = write_files({"sub/train.py": "import os, sys\nBASE = os.path.dirname(os.path.abspath(__file__))\n"
                                        "sys.path.append(os.path.join(os.path.dirname(BASE), 'utils'))\n"
                                        "import tf_util\n"})
    doc = _init(root / "sub", tmp_path / "models")
    assert ("train.py:3 puts ../utils on sys.path, outside the folder: tf_util may come from there; pin that code "
            "as an extra source") in doc["notes"]


def test_init__the_submission_itself_declared__not_a_dependency(write_files: Write, tmp_path: Path) -> None:
    """pyemma-msm-tutorials (corpus19 held, studied after its measurement): binder/environment.yml
    lists the conda package pyemma_tutorials, the repository itself, whose package
    pyemma_tutorials/ is in the folder; PyPI has no such project, and the lock spent its budget
    before saying so. A declared name that is the folder's own package or module is no dependency,
    said with where it was declared; another declared name stays."""
    root = write_files({
        "sub/binder/environment.yml": "channels:\n  - conda-forge\ndependencies:\n  - mdshare\n  - my_tutorials\n",
        "sub/my_tutorials/__init__.py": "import numpy\n",
        "sub/my_tutorials/cli.py": "import mdshare\n",
        "sub/requirements.txt": "helper-mod\nnumpy\n",
        "sub/helper_mod.py": "import numpy\n"})
    doc = _init(root / "sub", tmp_path / "models")
    extra = doc["dependencies"]["extra"]
    assert "my-tutorials" not in extra and "helper-mod" not in extra
    assert "my-tutorials (binder/environment.yml:5) is this submission itself (its own package my_tutorials/): not a dependency" \
        in doc["notes"]
    assert "helper-mod (requirements.txt:1) is this submission itself (its own module helper_mod.py)" in doc["notes"]
    assert "mdshare" in doc["dependencies"]["scanned"] + extra


def test_init__ranges_of_two_files_exclude_each_other__main_file_kept_and_said(write_files: Write,
                                                                               tmp_path: Path) -> None:
    """oximachine (corpus5): requirements.txt says xgboost~=1.4.2, a docs/environment.yml of a year
    before says ~=1.2.0; both written as pins they would intersect to nothing and never lock. The
    top-level requirement file is kept, the other set aside with a note; ranges that agree stay."""
    root = write_files({
        "sub/run.py": "import xgboost\nimport featurizer\n",
        "sub/requirements.txt": "xgboost~=1.4.2\nfeaturizer>=0.3.1\n",
        "sub/docs/environment.yml": "dependencies:\n  - pip:\n    - xgboost~=1.2.0\n    - featurizer>=0.2.2\n",
    })
    doc = _init(root / "sub", tmp_path / "models")
    pins = doc["dependencies"]["pins"]
    assert [(p["name"], p["spec"]) for p in pins if p["name"] == "xgboost"] == [("xgboost", "~=1.4.2")]
    assert sorted(p["spec"] for p in pins if p["name"] == "featurizer") == [">=0.2.2", ">=0.3.1"]
    assert "xgboost is declared with ranges that exclude each other: kept xgboost~=1.4.2 (requirements.txt:1)" \
        in doc["notes"] and "not xgboost~=1.2.0 (docs/environment.yml:" in doc["notes"]


@pytest.mark.parametrize(("specs", "ok"), [
    (["~=1.4.2", "~=1.2.0"], False), ([">=1.0,<2.0", ">=1.5"], True), ([">1.0", "<1.1"], True),
    (["==1.2.*", ">=1.2.3"], True), (["==1.0", "==1.0.0"], True), (["<1.0", ">=1.0"], False), (["", "==2"], True),
])
def test_jointly_satisfiable__ranges_that_meet_or_not(specs: list[str], ok: bool) -> None:
    from pyrepro.init import jointly_satisfiable

    assert jointly_satisfiable(specs) is ok


README_PROSE_LIST = """\
# GATGNN

## Requirements
* Python 3.6
* Pytorch (tested on 1.2.0) - preferably version 1.2.0 or later
* Numpy   (tested on 1.17.3)
* [PyTorch Geometric](https://pytorch-geometric.readthedocs.io) (1.6.1)
* scikit-learn 0.22 or later
* CUDA 10.1
* a GPU with 8 GB

## Results
- Model A 0.35 eV (a list under another heading: not read)
"""


def test_init__readme_requirement_list_in_prose__versions_read_python_stated(write_files: Write,
                                                                           tmp_path: Path) -> None:
    """gatgnn and struct2seq (corpus9 dev, 2019-2020) state their requirements only as a README
    list in prose ("Pytorch (tested on 1.2.0)", "PyTorch Geometric (1.6.1)"): each item with a
    version under a heading that names requirements is a weak declaration (README line), the
    Python item is Python evidence, "or later" is a lower bound; CUDA is no distribution, and
    lists under other headings are not read."""
    root = write_files({"sub/README.md": README_PROSE_LIST,
                        "sub/train.py": "import torch\nimport numpy\nimport torch_geometric\nimport sklearn\n"})
    doc = _init(root / "sub", tmp_path / "models")
    pins = _pins(doc)
    assert pins["torch"][0] == "==1.2.0" and "README.md:5" in pins["torch"][1]
    assert pins["numpy"][0] == "==1.17.3"
    assert pins["torch-geometric"][0] == "==1.6.1"
    assert pins["scikit-learn"][0] == ">=0.22"
    assert doc["python"] == "3.6" and "README.md:4" in doc["python_reason"]
    assert "model-a" not in {*doc["dependencies"]["scanned"], *doc["dependencies"]["extra"], *pins}
    assert metadata.readme_lists(["Dependencies:", "- numpy (1.2)", "", "Usage:", "- step 1.2.3 run"]) == \
        [(2, "numpy==1.2", 2)]
    # an item its authors call optional is no requirement (combo-bo, corpus10 held: "mpi4py >= 2.0 (optional)",
    # whose sdist needs mpi.h)
    assert metadata.readme_lists(["## Required Packages", "* numpy  >=1.10", "* mpi4py >= 2.0 (optional)",
                                  "* Cython >= 0.22.1, optionally"]) == [(2, "numpy>=1.10", 2)]


README_PLAIN_LINES = """\
# CubicGAN

## Prerequisites
python 3.7  
tensorflow-gpu==2.2.0  
pymatgen==2020.3.13  
numpy==1.16.4\\
We tested it with CUDA 10.1 on two GPUs.

we recommend that you build a virtual environment.

## How to use the code
torch 1.8 (a line under another heading: not read)
"""


def test_init__readme_requirements_on_lines_of_their_own__read_prose_lines_are_not(write_files: Write,
                                                                                  tmp_path: Path) -> None:
    """cubicgan (corpus10 dev): "## Prerequisites" lists "python 3.7" and "tensorflow-gpu==2.2.0" on
    lines of their own (Markdown line breaks), no list markers: it had been locked on 3.13 with
    nothing declared. Each such line is a weak declaration; a sentence that mentions a version is not."""
    root = write_files({"sub/README.md": README_PLAIN_LINES,
                        "sub/wgan.py": "import tensorflow\nimport pymatgen\nimport numpy\nimport torch\n"})
    doc = _init(root / "sub", tmp_path / "models")
    pins = _pins(doc)
    assert pins["pymatgen"][0] == "==2020.3.13" and "README.md:6" in pins["pymatgen"][1]
    assert pins["numpy"][0] == "==1.16.4"
    assert doc["python"] == "3.7" and "README.md:4" in doc["python_reason"]
    assert "torch" not in pins
    assert [t for _n, t, _s in metadata.readme_lists(README_PLAIN_LINES.splitlines())] == \
        ["python==3.7", "tensorflow==2.2.0", "pymatgen==2020.3.13", "numpy==1.16.4"]  # tensorflow-gpu: its rename


def test_environment_yml__conda_r_packages__not_python_distributions() -> None:
    """scgpt-singlecell (corpus18 held, after its measurement): its docs' environment file lists
    conda-forge's r-devtools, which was taken as a PyPI name and stopped the as-declared lock. Every
    conda ``r-*`` package is R's ([conda_system]); a pip: entry of any name is still PyPI's."""
    yml = ("dependencies:\n  - python=3.9\n  - r-base=4.1\n  - r-devtools\n  - numpy=1.22\n"
           "  - pip:\n    - wandb==0.15.0\n")
    ms = metadata.parse_environment_yml(yml, "environment.yml")
    assert {d.name for d in ms.declared} == {"numpy", "wandb"}
