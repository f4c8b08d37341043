"""Declared names that are really import names or not packages at all (metadata.json, info.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyrepro.resolve import module_alias
from pyrepro.scan import metadata, scan_path


def test_parse_software_used__import_names__mapped_to_distributions() -> None:
    ms = metadata.parse_software_used(json.dumps({"software_used": "sklearn, PIL,jarvis-tools, pytorch"}),
                                      "metadata.json")
    assert [d.name for d in ms.declared] == ["scikit-learn", "pillow", "jarvis-tools", "torch"]
    assert all(d.line == 1 for d in ms.declared)


def test_parse_software_used__python_and_cuda__left_out() -> None:
    ms = metadata.parse_software_used('{"software_used": "python,numpy,cuda, pip"}', "metadata.json")
    assert [d.name for d in ms.declared] == ["numpy"]


def test_parse_info_json__free_text_with_python_version__python_left_out() -> None:
    ms = metadata.parse_info_json('{"requirements": "python 3.8 and torch 1.12 on a GPU"}', "info.json")
    assert [d.name for d in ms.declared] == ["torch"]
    assert "not machine-readable" in ms.warnings[0][2]


def test_module_alias__exact_module_only() -> None:
    assert module_alias("sklearn") == "scikit-learn"
    assert module_alias("yaml") == "pyyaml"
    assert module_alias("scikit-learn") is None
    assert module_alias("google") is None


def test_scan_path__software_used_names_the_import__not_reported_unused(tmp_path: Path) -> None:
    (tmp_path / "run.py").write_text("from sklearn.metrics import mean_absolute_error\nimport numpy as np\n")
    (tmp_path / "metadata.json").write_text(json.dumps({"software_used": "sklearn,numpy,python"}))
    res = scan_path(tmp_path, python="3.10")
    assert res.undeclared == () and res.unused_declared == ()
    assert res.declared_names == ("numpy", "scikit-learn")


def test_parse_info_json__grouped_by_language__specs_read() -> None:
    text = json.dumps({"requirements": {"python": ["modnet==0.1.12", "scikit-learn==1.0.1", "matbench"]}})
    ms = metadata.parse_info_json(text, "info.json")
    assert [(d.name, d.spec) for d in ms.declared] == [("modnet", "modnet==0.1.12"),
                                                       ("scikit-learn", "scikit-learn==1.0.1"), ("matbench", "matbench")]
    assert ms.warnings == ()


def test_parse_info_json__nested_groups_and_bare_versions__no_version_taken_for_a_name() -> None:
    text = json.dumps({"requirements": {"python": "3.8", "pip": {"numpy": "1.21", "torch": [">=1.10"]},
                                        "other": "cuda 11"}})
    ms = metadata.parse_info_json(text, "info.json")
    assert [(d.name, d.spec) for d in ms.declared] == [("numpy", "numpy==1.21"), ("torch", "torch>=1.10")]


def test_parse_info_json__package_with_dict_value__name_kept_not_its_keys() -> None:
    ms = metadata.parse_info_json(json.dumps({"requirements": {"torch": {"version": "1.12"}}}), "info.json")
    assert [d.name for d in ms.declared] == ["torch"]


def test_req__simple_specs_fast_path__same_names_as_pep508() -> None:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    for spec in ("numpy", "numpy==1.2", "Scikit_Learn>=1.0", "torch==1.12.0+cu113", "pkg-1", "a.b~=2.0", "x!=3"):
        d = metadata._req(spec, "requirements.txt", 1, [])
        assert d is not None and d.name == canonicalize_name(Requirement(spec).name), spec


# ------------------------------------------------------------------ every way a submission declares

def test_scan_cli__declarations_in_every_file_kind__located_dev_files_said_not_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unseen submission may declare in setup.py, setup.cfg, pyproject.toml (PEP 621 or Poetry),
    a Pipfile, requirements files under other names, or a conda file not called environment.yml.
    Each declaration is read with its file and line; development files are said not read; setup.py
    is never run and its imports (setuptools) are build tools, not the model's dependencies."""
    from pyrepro.cli import main
    from tests.fakes import json_result

    files = {
        "run.py": "import numpy\n",
        "setup.py": "from setuptools import setup\nREQS = ['torch==1.9.0']\nsetup(name='m', install_requires=REQS)\n",
        "setup.cfg": "[options]\ninstall_requires =\n    pandas>=1.3\n",
        "pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.8"\npymatgen = "^2022.0.8"\n'
                          'matminer = {version = "~0.7.4"}\ncrabnet = {git = "https://github.com/x/CrabNet.git", '
                          'rev = "abc1234"}\nown = {path = "."}\n',
        "Pipfile": '[packages]\nase = "==3.22.1"\n[dev-packages]\nblack = "*"\n',
        "requirements_gpu.txt": "dgl==1.1.0\n",
        "requirements/base.txt": "scipy==1.7.3\n",
        "requirements-dev.txt": "black\n",
        "docs/requirements.txt": "sphinx\n",
        "conda_env.yaml": "name: m\ndependencies:\n  - python=3.8\n  - xgboost=1.5.0\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert main(["scan", str(tmp_path), "--json", "--no-cache"]) == 0
    res = json_result(capsys.readouterr().out)
    got = {(d["name"], d["spec"], d["location"]["path"], d["location"]["line"]) for d in res["declarations"]}
    assert got == {
        ("torch", "torch==1.9.0", "setup.py", 2),
        ("pandas", "pandas>=1.3", "setup.cfg", 3),
        ("pymatgen", "pymatgen>=2022.0.8,<2023.0.0", "pyproject.toml", 3),
        ("matminer", "matminer>=0.7.4,<0.8.0", "pyproject.toml", 4),
        ("crabnet", "crabnet @ git+https://github.com/x/CrabNet.git@abc1234", "pyproject.toml", 5),
        ("ase", "ase==3.22.1", "Pipfile", 2),
        ("dgl", "dgl==1.1.0", "requirements_gpu.txt", 1),
        ("scipy", "scipy==1.7.3", "requirements/base.txt", 1),
        ("xgboost", "xgboost=1.5.0", "conda_env.yaml", 4),
    }
    assert res["distributions"] == ["numpy"]  # setup.py's setuptools import is not the model's
    warnings = "\n".join(res["warnings"])
    for said in ("requirements-dev.txt: a dev requirements file: not read",
                 "docs/requirements.txt: a docs requirements file: not read",
                 "pyproject.toml:6: own comes from ., not an index"):
        assert said in warnings


def test_declaration_files__broken__warning_with_file_and_line_nothing_read(tmp_path: Path) -> None:
    (tmp_path / "run.py").write_text("import numpy\n")
    (tmp_path / "pyproject.toml").write_text("[project\ndependencies = ['x']\n")
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(install_requires=open('r.txt').read())\n")
    (tmp_path / "Pipfile").write_text("[packages\n")
    res = scan_path(tmp_path, cache=False)
    text = "\n".join(map(str, res.warnings))
    assert "pyproject.toml:1: not valid TOML" in text and "Pipfile:1: not valid TOML" in text
    assert "setup.py:2: install_requires is computed" in text
    assert res.declared == () and res.distributions == ("numpy",)


@given(st.sampled_from("^~"), st.lists(st.integers(0, 30), min_size=1, max_size=4))
def test_poetry_spec__caret_and_tilde__the_version_itself_allowed_the_next_breaking_one_not(
        op: str, nums: list[int]) -> None:
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    base = ".".join(map(str, nums))
    spec = metadata.poetry_spec(f"{op}{base}")
    assert spec is not None
    s = SpecifierSet(spec)
    assert Version(base) in s
    upper = Version(spec.split("<")[1])
    assert upper > Version(base) and upper not in s
    if op == "^" and nums[0] > 0:
        assert upper == Version(f"{nums[0] + 1}.0")


def test_poetry_spec__other_forms() -> None:
    assert metadata.poetry_spec("*") == ""
    assert metadata.poetry_spec("1.2.3") == "==1.2.3"
    assert metadata.poetry_spec(">=1.2,<2") == ">=1.2,<2"
    assert metadata.poetry_spec("^0.2.3") == ">=0.2.3,<0.3.0"
    assert metadata.poetry_spec("~1.2.3") == ">=1.2.3,<1.3.0"
    assert metadata.poetry_spec("not a version") is None
