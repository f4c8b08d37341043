"""Declared names that are really import names or not packages at all (metadata.json, info.json)."""

from __future__ import annotations

import json
from pathlib import Path

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
