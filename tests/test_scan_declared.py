"""Declared names that are really import names or not packages at all (metadata.json, info.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
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


# ------------------------------------------------------------------ declarations in other shapes
# Scenario folders under tests/scenarios/declared/: each expected.json lists the declarations read
# (name, spec, file, line), the warnings of the declaration files (each "path:line: ..." must start
# exactly one warning, and there are no others), and what `pyrepro init --offline` drafts from it.

DECLARED = Path(__file__).parent / "scenarios" / "declared"
_DECLARATION_FILES = ("info.json", "metadata.json", "requirements.txt")


@pytest.mark.parametrize("name", sorted(p.name for p in DECLARED.iterdir() if p.is_dir()))
def test_scan_cli__declared_scenario__pins_and_located_warnings(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    from pyrepro.cli import main
    from tests.fakes import json_result

    exp = json.loads((DECLARED / name / "expected.json").read_text())
    assert main(["scan", str(DECLARED / name / "input"), "--json", "--no-cache"]) == 0
    res = json_result(capsys.readouterr().out)
    got = [[d["name"], d["spec"], d["location"]["path"], d["location"]["line"]] for d in res["declarations"]]
    assert got == exp["declarations"]
    mine = [w for w in res["warnings"] if w.split(":", 1)[0] in _DECLARATION_FILES
            or w.split(":", 1)[0].endswith((".yml", ".yaml"))]
    assert len(mine) == len(exp["warnings"]), mine
    for want in exp["warnings"]:
        assert sum(w.startswith(want) for w in mine) == 1, (want, mine)
    unreadable = [[u["location"]["path"], u["location"]["line"]] for u in res.get("unreadable_declarations", [])]
    assert unreadable == exp.get("unreadable", [])


@pytest.mark.parametrize("name", sorted(p.name for p in DECLARED.iterdir() if p.is_dir()))
def test_init_cli__declared_scenario__draft_from_what_was_read(name: str, tmp_path: Path, isolated_cache: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    import tomllib

    from packaging.requirements import Requirement

    from pyrepro.cli import main

    exp = json.loads((DECLARED / name / "expected.json").read_text())["init"]
    models = tmp_path / "models"
    code = main(["init", str(DECLARED / name / "input"), "--name", "draft", "--models-dir", str(models), "--offline"])
    assert code == exp["exit"]
    if code != 0:
        assert exp["error_contains"] in capsys.readouterr().err
        assert not (models / "draft").exists() and not any(models.glob("*")) if models.exists() else True
        return
    doc = tomllib.loads((models / "draft" / "model.toml").read_text())
    deps = doc["dependencies"]
    assert deps["scanned"] == exp["scanned"] and deps["extra"] == exp["extra"]
    assert {p["name"]: p["spec"] for p in deps.get("pins", [])} == exp["pins"]
    assert [[e["name"], e["repository"], e["commit"]] for e in doc.get("extra_sources", [])] == exp["extra_sources"]
    for note in exp["notes_contain"]:
        assert note in doc.get("notes", ""), note
    if "python" in exp:
        assert doc["python"] == exp["python"]
    if "submitted" in exp:
        assert doc["submitted"] == exp["submitted"]
    # nothing that is not a PEP 508 requirement reaches model.toml or the generated pyproject
    for r in [*deps["scanned"], *deps["extra"], *(p["name"] + p["spec"] for p in deps.get("pins", []))]:
        Requirement(r)
    pyproject = tomllib.loads((models / "draft" / "pyproject.toml").read_text())
    for r in pyproject["project"]["dependencies"]:
        Requirement(r)


def test_init__unreadable_info_json__refused_nothing_written(tmp_path: Path, isolated_cache: Path) -> None:
    from pyrepro.errors import InputError
    from pyrepro.init import init_model

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "run.py").write_text("import numpy\n")
    (tmp_path / "sub" / "info.json").write_text('{"requirements": ["numpy==1.2",\n  "torch"\n')
    with pytest.raises(InputError) as err:
        init_model(tmp_path / "sub", name="sub", models_dir=tmp_path / "models", online=False)
    assert err.value.line == 3 and str(err.value).startswith(str(tmp_path / "sub" / "info.json") + ":3: ")
    assert not (tmp_path / "models").exists()
    assert not (isolated_cache / "sources").exists() or not any((isolated_cache / "sources").rglob("*"))


@pytest.mark.parametrize(("item", "name", "spec", "said"), [
    ("numpy>=1.0;", "numpy", "numpy>=1.0", "stray ';' left out"),
    ("numpy>=1.0,", "numpy", "numpy>=1.0", "stray ',' left out"),
    ("torch (1.12.0)", "torch", "torch==1.12.0", "read as torch==1.12.0"),
    ("torch (>=1.10)", "torch", "torch (>=1.10)", None),  # PEP 508 allows the parentheses
    ("pymatgen: 2022.0.8", "pymatgen", "pymatgen==2022.0.8", "read as pymatgen==2022.0.8"),
    ("ase 3.22.1", "ase", "ase==3.22.1", "read as ase==3.22.1"),
    ("dgl v1.1.0", "dgl", "dgl==1.1.0", "read as dgl==1.1.0"),
    ("matminer version 0.7.4", "matminer", "matminer==0.7.4", "read as matminer==0.7.4"),
    ("x==latest", "x", "x", "took the name 'x'"),
    ("conda-forge::rdkit=2020.09.1", "rdkit", "rdkit=2020.09.1", "from the conda-forge channel"),
    ("pytorch::pytorch=1.12", "torch", "pytorch=1.12", "torch on PyPI"),
    ("https://pypi.org/project/modnet/0.1.12/", "modnet", "modnet==0.1.12", "a PyPI project page"),
    ("git+https://github.com/o/r@" + "a" * 40, "r", "git+https://github.com/o/r@" + "a" * 40, "becomes an extra source"),
    ("git+https://github.com/o/r.git@v1.0#egg=thing", "thing", "git+https://github.com/o/r.git@v1.0#egg=thing",
     "is a VCS source"),
    ("https://github.com/o/R/tree/" + "b" * 40 + "/src", "r", "r @ git+https://github.com/o/R@" + "b" * 40,
     "(folder src)"),
    ("https://github.com/o/r/archive/" + "c" * 40 + ".zip", "r", "r @ git+https://github.com/o/r@" + "c" * 40,
     "becomes an extra source"),
    ("github.com/o/r.git", "r", "r @ git+https://github.com/o/r", "(no ref)"),
    ("mylib @ https://github.com/o/mylib/archive/" + "d" * 40 + ".zip", "mylib",
     "mylib @ git+https://github.com/o/mylib@" + "d" * 40, "becomes an extra source"),
    ("pip install lightgbm==3.3.5", "lightgbm", "lightgbm==3.3.5", None),
    ("!pip install -q xgboost", "xgboost", "xgboost", None),
])
def test_parse_info_json__one_item__read_with_its_line(item: str, name: str, spec: str, said: str | None) -> None:
    text = '{\n  "requirements": [\n    "first",\n    ' + json.dumps(item) + "\n  ]\n}\n"
    ms = metadata.parse_info_json(text, "info.json")
    assert [(d.name, d.spec, d.line) for d in ms.declared] == [("first", "first", 3), (name, spec, 4)]
    if said is None:
        assert ms.warnings == ()
    else:
        assert len(ms.warnings) == 1 and ms.warnings[0][1] == 4 and said in ms.warnings[0][2], ms.warnings


@pytest.mark.parametrize(("item", "said"), [
    ("See GitHub page for X, X version: be89e92.", "is not a requirement (free text); not read"),
    ("https://example.com/our-code", "is a web address, not a requirement"),
    ("./vendor/pkg", "local path or archive"),
    ("1.21.0", "bare version with no name"),
    ("gcc_linux-64", "gcc-linux-64 is not a Python distribution"),
    ("gxx_linux-64=9.3.0", "gxx-linux-64 is not a Python distribution"),
    ("libgcc-ng", "libgcc-ng is not a Python distribution"),
    ("cudatoolkit==11.3", "cudatoolkit is not a Python distribution"),
    ("cudnn", "cudnn is not a Python distribution"),
    ("mkl", "mkl is not a Python distribution"),
    ("pip", "pip is not a Python distribution"),
    ("python", "names the interpreter, not a package"),
    ("python=3.7", "states the Python (3.7)"),
    ("Python (3.8)", "states the Python (3.8)"),
    ("conda install -c conda-forge cudatoolkit=11.3", "not a Python distribution"),
])
def test_parse_info_json__not_a_requirement__warning_with_line_nothing_declared(item: str, said: str) -> None:
    text = '{\n  "requirements": [\n    ' + json.dumps(item) + "\n  ]\n}\n"
    ms = metadata.parse_info_json(text, "info.json")
    assert ms.declared == ()
    assert [w[1] for w in ms.warnings] == [3] and said in ms.warnings[0][2], ms.warnings


@pytest.mark.parametrize(("value", "want"), [
    ({"numpy": "1.21", "torch": ">=1.10"}, [("numpy", "numpy==1.21"), ("torch", "torch>=1.10")]),
    ({"numpy": 1.21, "ase": 3}, [("numpy", "numpy==1.21"), ("ase", "ase==3")]),
    ({"torch": {"version": "1.12"}}, [("torch", "torch==1.12")]),
    ("numpy, scipy torch", [("numpy", "numpy"), ("scipy", "scipy"), ("torch", "torch")]),
    ("numpy>=1.0,<2.0, scipy", [("numpy", "numpy>=1.0,<2.0"), ("scipy", "scipy")]),
    ("numpy==1.2 scipy==1.7", [("numpy", "numpy==1.2"), ("scipy", "scipy==1.7")]),
    ("numpy\nscipy==1.7\n", [("numpy", "numpy"), ("scipy", "scipy==1.7")]),
    ("pip install numpy torch==1.12 && pip install -U ase", [("numpy", "numpy"), ("torch", "torch==1.12"),
                                                             ("ase", "ase")]),
    ([["a==1", ["b==2"]], "c"], [("a", "a==1"), ("b", "b==2"), ("c", "c")]),
    ({"conda": ["pytorch=1.12", "cudatoolkit=11.3"], "pip": ["ase"]}, [("torch", "pytorch=1.12"), ("ase", "ase")]),
])
def test_parse_info_json__requirement_shapes__read(value: object, want: list[tuple[str, str]]) -> None:
    ms = metadata.parse_info_json(json.dumps({"requirements": value}), "info.json")
    assert [(d.name, d.spec) for d in ms.declared] == want, ms.warnings


def test_parse_info_json__free_text__names_with_versions_and_repositories_read_rest_said() -> None:
    text = json.dumps({"requirements": "We used matminer version 0.7.4 and the code at https://github.com/o/tool "
                                       "(X version: be89e92)."})
    ms = metadata.parse_info_json(text, "info.json")
    assert [(d.name, d.spec) for d in ms.declared] == [("matminer", "matminer"), ("tool", "tool @ git+https://github.com/o/tool")]
    assert "free text, not machine-readable; took the names matminer" in ms.warnings[0][2]
    assert "is the repository https://github.com/o/tool (no ref)" in ms.warnings[1][2]


@pytest.mark.parametrize("line", ["gcc_linux-64", "gxx_linux-64==9.3", "python>=3.8", "pip==21.0", "cudatoolkit",
                                  "https://github.com/o/r", "See the README"])
def test_parse_requirements_txt__not_packages_and_addresses__never_a_pypi_name(line: str) -> None:
    ms = metadata.parse_requirements_txt(f"numpy\n{line}\n", "requirements.txt")
    names = [d.name for d in ms.declared]
    assert names[0] == "numpy" and all(n not in ("gcc-linux-64", "gxx-linux-64", "python", "pip", "cudatoolkit",
                                                 "https", "see") for n in names)
    assert [w[1] for w in ms.warnings] == [2]
    for d in ms.declared[1:]:  # a repository stays a source
        assert metadata.vcs_source(d.spec) is not None


def test_pip_install_line__urls_and_the_installer__sources_and_warnings() -> None:
    ds, ws = metadata.pip_install_line("pip install --upgrade pip https://github.com/o/tool/archive/" + "e" * 40
                                       + ".zip numpy==1.2;", "nb.ipynb", 3, 1)
    assert [(d.name, d.spec, d.cell) for d in ds] == [("tool", "tool @ git+https://github.com/o/tool@" + "e" * 40, 1),
                                                      ("numpy", "numpy==1.2", 1)]
    text = "\n".join(w[2] for w in ws)
    assert "pip is not a Python distribution" in text and "stray ';'" in text


@pytest.mark.parametrize("form", ["python=3.7", "python==3.8", "python>=3.9", "python 3.10", "python3.8",
                                  "python: 3.8", "Python (3.8)", "python<3.9", "python~=3.7"])
def test_python_entry__warning_says_evidence_exactly_when_init_reads_it(form: str, tmp_path: Path) -> None:
    """The scanner's warning claims init reads the Python from info.json exactly when evidence.py does."""
    from pyrepro import evidence

    (tmp_path / "info.json").write_text(json.dumps({"requirements": [form, "numpy"]}))
    ms = metadata.parse_info_json((tmp_path / "info.json").read_text(), "info.json")
    assert [d.name for d in ms.declared] == ["numpy"]
    claims = "init reads it as Python evidence" in ms.warnings[0][2]
    found = [e for e in evidence.python_evidence(tmp_path) if e.kind == "pin"]
    assert claims == bool(found), (form, ms.warnings, found)


# ------------------------------------------------------------------ property tests

_SHAPES = st.sampled_from([
    "numpy", "numpy==1.2", "numpy>=1.0;", "torch (1.12.0)", "ase: 3.22.1", "dgl v1.1", "x==latest", "1.2",
    "python=3.7", "python>=3.8", "pip", "gcc_linux-64", "cudatoolkit=11.3", "conda-forge::rdkit=2020.09",
    "https://github.com/o/r", "https://github.com/o/r/tree/" + "a" * 40, "git+https://github.com/o/r@abc#egg=r",
    "pip install a b==1", "conda install -c c x=1", "See GitHub page for X, X version: be89e92.", "-e .",
    "x @ file:///tmp/x", "name @ https://e.org/x.whl", "a, b", "numpy>=1,<2", "", " ", "\n", ";", "::", "@", "(", "#",
])
_TEXT = st.one_of(_SHAPES, st.text(max_size=40), st.builds(lambda a, b: a + b, _SHAPES, st.text(max_size=10)))
_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _TEXT,
                       lambda c: st.lists(c, max_size=5) | st.dictionaries(
                           st.one_of(_TEXT, st.sampled_from(["python", "pip", "conda", "numpy", "version"])), c,
                           max_size=4), max_leaves=20)


def _check(ms: metadata.MetaScan) -> None:
    """Every declaration has a valid canonical name, and a spec that is PEP 508, conda's
    name=version[=build] (init turns it into PEP 440), or a VCS source."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    for d in ms.declared:
        assert d.name == canonicalize_name(d.name) and str(Requirement(d.name)) == d.name, d
        try:
            Requirement(d.spec)
        except InvalidRequirement:
            assert metadata.vcs_source(d.spec) is not None or re.fullmatch(
                r"[A-Za-z0-9][A-Za-z0-9._-]*\s*={1,2}\s*[0-9][^=\s]*(=[\w.*+!]+)?", d.spec), d
    for path, line, msg in ms.warnings:
        assert path and msg and (line is None or line >= 1)


@settings(max_examples=300, deadline=None)
@given(_VALUES)
@example("0=0 =0")  # found by hypothesis: a conda build after a space is no build of that version
def test_parse_info_json__any_requirements_value__never_raises_never_an_invalid_name(value: object) -> None:
    for key in ("requirements", "software_used"):
        text = json.dumps({key: value}, indent=1)
        _check(metadata.parse_info_json(text, "info.json"))
        _check(metadata.parse_software_used(text, "metadata.json"))


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXT, max_size=6))
def test_requirement_lines__any_text__never_raise_never_an_invalid_name(lines: list[str]) -> None:
    text = "\n".join(lines)
    _check(metadata.parse_requirements_txt(text, "requirements.txt"))
    _check(metadata.parse_info_json(json.dumps({"requirements": text}), "info.json"))
    ds, _ws = metadata.pip_install_line("pip install " + " ".join(lines), "run.sh", 1)
    _check(metadata.MetaScan(tuple(ds), ()))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_TEXT, min_size=1, max_size=5))
def test_init__any_info_json_requirements__every_written_requirement_parses(
        tmp_path_factory: pytest.TempPathFactory, items: list[str]) -> None:
    import tomllib

    from packaging.requirements import Requirement

    from pyrepro.init import init_model

    root = tmp_path_factory.mktemp("p")
    (root / "sub").mkdir()
    (root / "sub" / "run.py").write_text("import numpy\n")
    (root / "sub" / "info.json").write_text(json.dumps({"requirements": items}, indent=1))
    init_model(root / "sub", name="sub", models_dir=root / "models", online=False, cache=root / "cache")
    doc = tomllib.loads((root / "models" / "sub" / "model.toml").read_text())
    deps = doc["dependencies"]
    for r in [*deps["scanned"], *deps["extra"], *(p["name"] + p["spec"] for p in deps.get("pins", []))]:
        Requirement(r)
    for r in tomllib.loads((root / "models" / "sub" / "pyproject.toml").read_text())["project"]["dependencies"]:
        Requirement(r)
    for e in doc.get("extra_sources", []):
        assert re.fullmatch(r"[0-9a-f]{40}", e["commit"]) and e["repository"].startswith("https://")


# ------------------------------------------------------------------ model-metadata YAML
def test_yaml_top__block_flow_quoted_comments__located_values() -> None:
    text = ('a: 1  # c\n"b": "x # not a comment"\nreq:\n  numpy: 1.10\n  grp:\n    - s==1\n    - [t, u]\n'
            'flow: {k: v, w: "2"}\nseq:\n- one\n- two: 2\n  three: 3\nlater: z\n')
    top = metadata.yaml_top(text, {"a", "b", "req", "flow", "seq", "later"})
    assert top["a"] == "1" and top["b"] == "x # not a comment" and top["later"] == "z"
    assert top["req"] == {"numpy": "1.10", "grp": ["s==1", ["t", "u"]]}  # 1.10 stays text
    assert top["req"]["numpy"].line == 4 and top["req"]["grp"][0].line == 6
    assert top["flow"] == {"k": "v", "w": "2"}
    assert top["seq"] == ["one", {"two": "2", "three": "3"}]


@pytest.mark.parametrize("name,parser", [("megnet.yml", "parse_any_yml"), ("metadata.yaml", "parse_any_yml"),
                                         ("environment.yml", "parse_environment_yml"),
                                         ("conda-env.yaml", "parse_environment_yml")])
def test_parser_for__yaml__environment_or_model_metadata(name: str, parser: str) -> None:
    assert metadata.parser_for(name) is getattr(metadata, parser)


def test_yaml_of_any_name__a_conda_environment_by_its_content(write_files, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """deepdta (corpus8 dev): ``deepdta.yml`` is a conda environment (python=3.6, keras==2.1.6);
    read as model metadata it declared nothing and the Python fell to the newest."""
    env = "name: deepdta\nchannels:\n  - defaults\ndependencies:\n  - python=3.6\n  - keras==2.1.6\n" \
          "  - scikit-learn==0.22\n"
    ms = metadata.parse_any_yml(env, "deepdta.yml")
    assert {(d.name, d.spec) for d in ms.declared} == {("keras", "keras==2.1.6"), ("scikit-learn", "scikit-learn==0.22")}
    meta = metadata.parse_any_yml("model_name: x\nrequirements:\n  torch: 1.13.0\n", "megnet.yml")
    assert [d.name for d in meta.declared] == ["torch"]
    from pyrepro import evidence

    root = write_files({"run.py": "import keras\n", "deepdta.yml": env}, tmp_path / "deepdta")
    found = evidence.python_evidence(root)
    assert [(e.version, str(e.location)) for e in found] == [("3.6", "deepdta.yml:5")]


def test_parse_metadata_yml__conda_recipe__only_run_requirements() -> None:
    text = ("package:\n  name: x\nrequirements:\n  build:\n    - {{ compiler('c') }}\n    - cmake\n"
            "  host:\n    - python\n    - pip\n  run:\n    - python >=3.8\n    - numpy >=1.20\n    - scipy\n")
    ms = metadata.parse_metadata_yml(text, "meta.yaml")
    assert [(d.name, d.line) for d in ms.declared] == [("numpy", 12), ("scipy", 13)]


def test_parse_metadata_yml__no_requirements_key__declares_nothing() -> None:
    ms = metadata.parse_metadata_yml("name: ci\non: push\njobs:\n  test:\n    requirements: x\n", ".github/ci.yml")
    assert ms.declared == () and ms.warnings == ()


def test_stated_date__model_yaml__date_added_newest_of_several_files(tmp_path: Path) -> None:
    from pyrepro import evidence

    (tmp_path / "a.yml").write_text('date_added: "2021-02-03"\nrequirements:\n  numpy: 1.20.0\n')
    (tmp_path / "b.yaml").write_text("date_published: 2019-01-01\ndate_added: 2022-07-08\n")
    (tmp_path / "environment.yml").write_text("date_added: 2030-01-01\ndependencies: [numpy]\n")
    day, why = evidence.stated_date(tmp_path)
    assert day is not None and day.isoformat() == "2022-07-08"
    assert why == "b.yaml date_added: 2022-07-08 (newest of 2 model files)"
    (tmp_path / "metadata.json").write_text(json.dumps({"date_submitted": "01-02-2020"}))
    assert evidence.stated_date(tmp_path)[0].isoformat() == "2020-01-02"  # the JARVIS field comes first


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list("ab: -#'\"[]{},\n\t|>1.=@+")), max_size=200))
def test_yaml_top__any_text__never_raises_and_metadata_never_an_invalid_name(text: str) -> None:
    from packaging.utils import canonicalize_name

    metadata.yaml_top(text, {"requirements", "a", "b"})
    for d in metadata.parse_metadata_yml(text, "m.yml").declared:
        assert d.name == canonicalize_name(d.name) and re.fullmatch(r"[a-z0-9][a-z0-9.-]*", d.name), d


def test_scan__conda_environment_with_cpp_libraries__never_pypi_names(tmp_path: Path) -> None:
    # chemical_vae's environment.yml (dev corpus): boost is the C++ library rdkit's conda build
    # links; PyPI's 'boost' is an unrelated project, so reading it as a PyPI name installs that
    (tmp_path / "environment.yml").write_text("name: x\nchannels:\n  - rdkit\ndependencies:\n  - boost\n"
                                              "  - boost-cpp\n  - eigen\n  - hdf5\n  - h5py\n  - rdkit\n")
    (tmp_path / "run.py").write_text("import h5py\nimport rdkit\n")
    res = scan_path(tmp_path, cache=False)
    names = {d.name for d in res.declared}
    assert {"h5py", "rdkit"} <= names and not names & {"boost", "boost-cpp", "eigen", "hdf5"}
    said = " ".join(w.message for w in res.warnings)
    assert "4 conda packages are not a Python distribution" in said and "boost, boost-cpp, eigen, hdf5" in said


def test_scan__conda_pytorch_channel_names__pypi_names_and_selectors_dropped(tmp_path: Path) -> None:
    # a roost/CrabNet-style environment.yml: the pyg and pytorch channels' names are not PyPI's,
    # and 'cpuonly' only chooses a torch build
    (tmp_path / "environment.yml").write_text(
        "name: x\nchannels:\n  - pytorch\n  - pyg\ndependencies:\n  - pytorch=1.7\n  - cpuonly\n"
        "  - pytorch-cluster\n  - pytorch_geometric\n  - pytables\n  - python-graphviz\n  - graphviz\n")
    (tmp_path / "run.py").write_text("import torch\n")
    res = scan_path(tmp_path, cache=False)
    names = {d.name for d in res.declared}
    assert {"torch", "torch-cluster", "torch-geometric", "tables", "graphviz"} == names
    said = " ".join(w.message for w in res.warnings)
    assert "cpuonly" in said and "graphviz" in said


def test_scan__conda_lmdb_is_the_c_library__python_lmdb_is_pypis_lmdb(tmp_path: Path) -> None:
    """pocket2mol (corpus14 dev): a conda export lists lmdb=0.9.29 (the C library) and
    python-lmdb=1.2.1 (the binding, PyPI's lmdb). The C library's version had been read as PyPI's
    lmdb==0.9.29, which does not exist, and moved to lmdb 0.58."""
    (tmp_path / "env.yml").write_text("name: x\ndependencies:\n  - python=3.8.13=h12debd9_0\n"
                                      "  - lmdb=0.9.29=h2531618_0\n  - python-lmdb=1.2.1=py38h2531618_1\n")
    (tmp_path / "run.py").write_text("import lmdb\n")
    res = scan_path(tmp_path, cache=False)
    assert [(d.name, d.spec) for d in res.declared if d.name == "lmdb"] == [("lmdb", "python-lmdb=1.2.1=py38h2531618_1")]


def test_conda_form__build_after_a_space__is_not_read_as_conda_and_is_named_by_line() -> None:
    ms = metadata.parse_requirements_txt("numpy=1.2 =py36\nscipy=1.5=py37_0\n", "requirements.txt")
    assert [(d.name, d.spec) for d in ms.declared] == [("scipy", "scipy=1.5=py37_0")]
    assert any(line == 1 and "numpy=1.2 =py36" in m and "not read" in m for _p, line, m in ms.warnings)


def test_environment_yml__conda_entries_with_match_specs__conda_names__pip_sublist_is_pypi() -> None:
    """gemnet (corpus6 dev): `- pytorch==1.10` in a conda list is conda's pytorch (PyPI's torch),
    not a PyPI requirement named pytorch; a pip: sub-list's entries are PyPI's, and the conda list
    goes on after it."""
    yml = ("dependencies:\n  - python==3.8\n  - pytorch==1.10\n  - scipy>=1.3\n  - pip:\n"
           "    - pytorch-lightning==1.5.0\n    - xgboost~=1.2.0\n  - pytorch-scatter\n")
    ms = metadata.parse_environment_yml(yml, "environment.yml")
    got = [(d.name, d.spec, d.line) for d in ms.declared]
    assert got == [("torch", "pytorch==1.10", 3), ("scipy", "scipy>=1.3", 4),
                   ("pytorch-lightning", "pytorch-lightning==1.5.0", 6), ("xgboost", "xgboost~=1.2.0", 7),
                   ("torch-scatter", "pytorch-scatter", 8)]


DOCKERFILE = """FROM pytorch/pytorch:1.9.0-cuda11.1-cudnn8-runtime
ARG CUDA=11.1
# Install conda packages.
RUN conda install -y -c conda-forge \\
      openmm=7.5.1 \\
      # a comment between continued lines
      python=3.7
COPY . /app
RUN pip3 install --upgrade pip \\
    && pip3 install \\
      jax==0.2.14 \\
      jaxlib==0.1.69+cuda$(cut -f1,2 -d. <<< ${CUDA} | sed 's/\\\\.//g') \\
      -f https://storage.googleapis.com/jax-releases/jax_cuda_releases.html
RUN ["pip", "install", "tqdm==4.62.0"]
CMD ["python", "run.py"]
"""


def test_scan_path__dockerfile_only__its_pip_and_conda_installs_are_declarations(tmp_path: Path) -> None:
    """A Dockerfile-only repository (corpus6, corpus7) declares its packages in RUN instructions,
    continued over lines, in shell or exec form; a version completed by a shell expansion is read
    up to it, said so."""
    (tmp_path / "Dockerfile").write_text(DOCKERFILE)
    (tmp_path / "run.py").write_text("import jax\nimport tqdm\nimport simtk.openmm\n")
    res = scan_path(tmp_path)
    got = {(d.name, d.spec, d.line) for d in res.declared}
    assert {("jax", "jax==0.2.14", 9), ("jaxlib", "jaxlib==0.1.69", 9), ("tqdm", "tqdm==4.62.0", 14),
            ("openmm", "openmm=7.5.1", 4)} <= got
    assert any("shell expansion" in str(w) and "'jaxlib==0.1.69'" in str(w) for w in res.warnings)
    assert not any(d.name == "python" for d in res.declared)


def test_scan_path__shell_script__backslash_continued_pip_install_is_one_command(tmp_path: Path) -> None:
    (tmp_path / "install.sh").write_text("pip install \\\n    numpy==1.19.5 \\\n    scipy==1.5.4\n")
    (tmp_path / "run.py").write_text("import numpy, scipy\n")
    got = {(d.name, d.spec, d.line) for d in scan_path(tmp_path).declared}
    assert got == {("numpy", "numpy==1.19.5", 1), ("scipy", "scipy==1.5.4", 1)}


def test_parse_environment_yml__a_windows_export__its_runtime_packages_never_pypi_names() -> None:
    """ftcp-inverse (corpus11 dev): a Windows conda export lists vc=14.2 (conda's Visual C++
    runtime) and vs2015_runtime; PyPI's unrelated 'vc' was locked (vc 2018.7.10) for it."""
    text = ("name: ftcp\ndependencies:\n  - python=3.6.13=h3758d61_0\n  - vc=14.2=h21ff451_1\n"
            "  - vs2015_runtime=14.27.29016=h5e58377_2\n  - ucrt=10.0.20348.0=h57928b3_0\n"
            "  - m2w64-gcc-libs=5.3.0=7\n  - numpy=1.18.5=py36h6530119_0\n")
    ms = metadata.parse_environment_yml(text, "environment.yml")
    assert [d.name for d in ms.declared] == ["numpy"]


def _declared(root: Path) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """name -> (spec, "path:line") of a folder's declarations, and its warnings (scan_path)."""
    res = scan_path(root)
    got = {d.name: (d.spec, f"{d.path}:{d.line}") for d in res.declared}
    return got, [f"{w.location.path}:{w.location.line}: {w.message}" for w in res.warnings]


def test_scan__utf16_requirements_from_powershell__read_like_pip(tmp_path: Path) -> None:
    """Windows PowerShell's `pip freeze > requirements.txt` writes UTF-16 with a byte-order mark;
    pip reads it, and so does the scan (it had read NUL-riddled free text, every pin lost). UTF-8
    with a BOM and UTF-16 without one are read too."""
    (tmp_path / "run.py").write_text("import numpy, yaml\n")
    (tmp_path / "requirements.txt").write_bytes("numpy==1.19.5\r\nPyYAML==5.4.1\r\n".encode("utf-16"))
    got, warns = _declared(tmp_path)
    assert got == {"numpy": ("numpy==1.19.5", "requirements.txt:1"), "pyyaml": ("PyYAML==5.4.1", "requirements.txt:2")}
    assert warns == []
    for data in ("\ufeffnumpy==1.19.5\n".encode("utf-8"), "numpy==1.19.5\n".encode("utf-16-le")):
        (tmp_path / "requirements.txt").write_bytes(data)
        assert _declared(tmp_path)[0] == {"numpy": ("numpy==1.19.5", "requirements.txt:1")}


def test_scan__requirements_with_continuations_hashes_includes_and_file_urls(tmp_path: Path) -> None:
    """As pip reads a requirements file: backslash continuations (pip-compile's `--hash` lines),
    `-r` includes relative to the including file (read once, cycles end, a missing one named with
    its line), and a direct reference to a wheel or sdist file pins the release its name gives."""
    (tmp_path / "run.py").write_text("import numpy, yaml, scipy, torch, certifi, pandas\n")
    (tmp_path / "reqs").mkdir()
    (tmp_path / "requirements.txt").write_text(
        "PyYAML==5.4.1 \\\n    --hash=sha256:aaaa \\\n    --hash=sha256:bbbb\n"
        "-r reqs/base.txt\n"
        "--requirement=missing.txt\n"
        "torch @ https://download.pytorch.org/whl/cu111/torch-1.9.0%2Bcu111-cp38-cp38-linux_x86_64.whl\n"
        "certifi @ file:///home/conda/feedstock_root/build_artifacts/certifi-2020.6.20-py3-none-any.whl\n"
        "numpy @ file:///tmp/build/80754af9/numpy_and_numpy_base_1603483703303/work\n")
    (tmp_path / "reqs" / "base.txt").write_text("scipy==1.5.4\n-r ../requirements.txt\n-r more.txt\n")
    (tmp_path / "reqs" / "more.txt").write_text("pandas==1.1.5\n")
    got, warns = _declared(tmp_path)
    assert got == {"pyyaml": ("PyYAML==5.4.1", "requirements.txt:1"),
                   "torch": ("torch==1.9.0+cu111", "requirements.txt:6"),
                   "certifi": ("certifi==2020.6.20", "requirements.txt:7"),
                   "numpy": ("numpy @ file:///tmp/build/80754af9/numpy_and_numpy_base_1603483703303/work",
                             "requirements.txt:8"),
                   "scipy": ("scipy==1.5.4", "reqs/base.txt:1"),
                   "pandas": ("pandas==1.1.5", "reqs/more.txt:1")}
    assert any(w.startswith("requirements.txt:5: includes missing.txt: no such file") for w in warns), warns
    assert any(w.startswith("requirements.txt:8: numpy points at a local file") for w in warns), warns
    assert not any("cannot read requirement" in w or "not followed" in w for w in warns), warns


def test_scan__environment_yml_pip_section_includes_a_requirements_file__read_beside_it(tmp_path: Path) -> None:
    """`- -r requirements-gpu.txt` in environment.yml's pip: list (conda runs pip from the
    environment file's folder): that file's pins are declarations, whatever its name."""
    (tmp_path / "env").mkdir()
    (tmp_path / "run.py").write_text("import numpy, scipy\n")
    (tmp_path / "env" / "environment.yml").write_text(
        "name: x\ndependencies:\n  - python=3.8\n  - numpy=1.19\n  - pip\n  - pip:\n    - -r ../pinned.txt\n")
    (tmp_path / "pinned.txt").write_text("scipy==1.7.3\n")
    got, warns = _declared(tmp_path)
    assert got["scipy"] == ("scipy==1.7.3", "pinned.txt:1")
    assert not any("not followed" in w for w in warns), warns


def test_scan__setup_py_install_requires_built_from_parts__literal_parts_read_file_reads_followed(
        tmp_path: Path) -> None:
    """`install_requires=BASE + reqs + ["pyyaml==5.3.1"]`: the literal parts (a module-level list,
    an inline list) are declarations; the computed part is named once; a `.txt` file a computed
    part reads by name (`open("deps.txt").read().splitlines()`) is read as a requirements file."""
    (tmp_path / "main.py").write_text("import numpy, scipy, yaml, torch\n")
    (tmp_path / "deps.txt").write_text("torch==1.6.0\n")
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\n"
        "BASE = ['numpy>=1.18', 'scipy']\n"
        "with open('x') as f:\n"
        "    reqs = [l.strip() for l in f]\n"
        "setup(name='m', install_requires=BASE + reqs + ['pyyaml==5.3.1'] + open('deps.txt').read().splitlines())\n")
    got, warns = _declared(tmp_path)
    assert got == {"numpy": ("numpy>=1.18", "setup.py:2"), "scipy": ("scipy", "setup.py:2"),
                   "pyyaml": ("pyyaml==5.3.1", "setup.py:5"), "torch": ("torch==1.6.0", "deps.txt:1")}
    assert sum("install_requires is computed in part" in w for w in warns) == 1, warns
    assert any("the file it reads (deps.txt)" in w for w in warns), warns
