"""The reviewed module map is well-formed: every key an importable dotted name, every value a
valid distribution name, no module both mapped and flagged."""

from __future__ import annotations

import re
import tomllib
from importlib import resources

import pytest
from packaging.utils import canonicalize_name

from pyrepro.resolve import Resolver

_MAP = tomllib.loads(resources.files("pyrepro").joinpath("data", "module_map.toml").read_text(encoding="utf-8"))
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_DIST = re.compile(r"^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$", re.IGNORECASE)  # PEP 508 name


def test_module_map__keys_and_values__well_formed() -> None:
    bad = [(k, v) for k, v in _MAP["modules"].items() if not _IDENT.match(k) or not _DIST.match(v)]
    assert bad == []
    for table in ("not_installable", "unresolved"):
        assert all(_IDENT.match(k) and isinstance(v, str) and v for k, v in _MAP[table].items()), table


def test_module_map__flagged_modules__resolve_unresolved_with_hint() -> None:
    r = Resolver()
    for table in ("not_installable", "unresolved"):
        for module, hint in _MAP[table].items():
            res = r.resolve(module + ".sub")
            assert (res.distribution, res.resolved_with, res.note) == (None, "unresolved", hint), module


def test_resolver__names_that_differ_from_the_module__mapped() -> None:
    r = Resolver()
    expect = {"umap": "umap-learn", "haiku": "dm-haiku", "emmet.core.thermo": "emmet-core", "git": "gitpython",
              "pytorch_lightning": "pytorch-lightning", "Levenshtein": "python-levenshtein", "keras.layers": "keras",
              # PyPI's namesakes are other projects: 'fitz', 'docx'; mpl_toolkits is a namespace
              "fitz": "pymupdf", "docx": "python-docx", "mpl_toolkits.mplot3d": "matplotlib",
              "mpl_toolkits.basemap": "basemap", "setuptools": "setuptools", "phi.torch": "phiflow"}
    got = {m: r.resolve(m).distribution for m in expect}
    assert got == expect
    assert all(r.resolve(m).resolved_with == "mapping" for m in expect)
    assert all(canonicalize_name(v) == r.resolve(k).distribution for k, v in _MAP["modules"].items()
               if k not in _MAP["unresolved"] and k not in _MAP["not_installable"])


@pytest.mark.parametrize(("name", "system"), [
    ("libgcc-ng", True), ("_openmp_mutex", True), ("pytorch-cuda", True), ("python_abi", True), ("qt-main", True),
    ("librosa", False), ("qtconsole", False), ("mkl-service", False), ("gstools", False), ("numpy", False),
    ("cpuonly", True), ("graphviz", True), ("python-graphviz", False), ("pytorch-cluster", False),
    ("lmdb", True), ("python-lmdb", False),
])
def test_conda_system_table__system_libraries_out_python_packages_in(name: str, system: bool) -> None:
    """environment.yml's conda list: system libraries and metapackages are never dependencies, Python
    packages whose names look like them are (one data table with reasons, pyrepro/data/module_map.toml)."""
    from pyrepro.resolve import conda_system_reason

    assert (conda_system_reason(name) is not None) == system
