"""Issue 44, item 4: the platforms' own declaration formats, through ``pyrepro scan --json`` and
``pyrepro init``.

* MatBench Discovery's model file (``models/<family>/<model_key>.yml``): the 2026 schema's
  ``environment:`` block (``dependencies``, ``python_version``, ``find_links``,
  ``extra_index_urls``, ``project``) and ``dates:`` (``benchmark_added``, ``paper_published``),
  and the earlier schema's ``date_published``. The fixtures are small files written after the
  real ones (mace-mp-0.yml, alphanet-v1-mptrj.yml, alignn-ff.yml, equflash-29m-oam.yml of
  janosh/matbench-discovery), not copies.
* PEP 723 inline script metadata (``# /// script``), which that platform requires for custom
  scripts: ``dependencies``, ``requires-python``, ``[tool.uv.sources]`` and uv's index settings;
  the parser's properties with hypothesis.
"""

from __future__ import annotations

import json
import textwrap
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pyrepro.cli import main
from pyrepro.scan import pep723
from tests.fakes import json_result

Write = Callable[..., Path]


@pytest.fixture(autouse=True)
def _cache(isolated_cache: Path) -> Path:
    return isolated_cache


def _scan(folder: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["scan", str(folder), "--json", "--no-cache"]) == 0
    return json_result(capsys.readouterr().out)


def _init(folder: Path, models: Path, name: str = "sub") -> dict[str, Any]:
    assert main(["init", str(folder), "--name", name, "--models-dir", str(models), "--offline"]) == 0
    return tomllib.loads((models / name / "model.toml").read_text())


def _declared(res: dict[str, Any]) -> list[tuple[str, str, str, int | None]]:
    return [(d["name"], d["spec"], d["location"]["path"], d["location"]["line"]) for d in res["declarations"]]


# A model file of MatBench Discovery's 2026 schema (after models/alphanet/alphanet-v1-mptrj.yml):
# the keys around the environment block are there so that lines and nesting are as in the real files.
MODEL_YML = """\
model_name: AlphaNet-v1-MPtrj
model_key: alphanet-v1-mptrj
model_version: v1
dates:
  benchmark_added: '2025-03-05'
  paper_published: '2024-12-01'
authors:
- name: A Person
  affiliation: Somewhere
repo: https://github.com/zmyybc/AlphaNet

environment:
  dependencies:
    - alphanet @ git+https://github.com/zmyybc/AlphaNet
    - torch==2.5.1
    - torch-scatter
    - numpy<2
  python_version: '3.12'
  find_links: ['https://data.pyg.org/whl/torch-2.5.1+cu121.html']
  extra_index_urls:
  - https://download.pytorch.org/whl/cu121
openness: OSOD
hyperparams:
  evaluation:
    max_steps: 500
metrics:
  discovery:
    pred_file:
      name: models/alphanet/x.csv.gz
"""


def test_scan_cli__matbench_discovery_environment__declared_with_lines_and_sources_refused(
        write_files: Write, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({"sub/alphanet-v1-mptrj.yml": MODEL_YML, "sub/test_alphanet.py": "import torch\nimport numpy\n"})
    res = _scan(root / "sub", capsys)
    assert _declared(res) == [
        ("alphanet", "alphanet @ git+https://github.com/zmyybc/AlphaNet", "alphanet-v1-mptrj.yml", 14),
        ("torch", "torch==2.5.1", "alphanet-v1-mptrj.yml", 15),
        ("torch-scatter", "torch-scatter", "alphanet-v1-mptrj.yml", 16),
        ("numpy", "numpy<2", "alphanet-v1-mptrj.yml", 17)]
    # the package sources: each in the JSON and in a warning with its file and line, never dropped
    assert [(s["option"], s["url"], s["location"]["line"]) for s in res["package_sources"]] == [
        ("find_links", "https://data.pyg.org/whl/torch-2.5.1+cu121.html", 19),
        ("extra_index_urls", "https://download.pytorch.org/whl/cu121", 21)]
    said = [w for w in res["warnings"] if "a package source besides PyPI" in w]
    assert [w.split(": ", 1)[0] for w in said] == ["alphanet-v1-mptrj.yml:19", "alphanet-v1-mptrj.yml:21"]
    assert all("not used" in w and "review those packages in the lock" in w for w in said)
    assert "python" not in res["declared"]  # python_version states the Python, it is no package


def test_init_cli__matbench_discovery_model_file__python_date_pins_and_notes(
        write_files: Write, tmp_path: Path) -> None:
    root = write_files({"sub/alphanet-v1-mptrj.yml": MODEL_YML, "sub/test_alphanet.py": "import torch\nimport numpy\n"})
    doc = _init(root / "sub", tmp_path / "models")
    assert doc["python"] == "3.12" and "alphanet-v1-mptrj.yml:18" in doc["python_reason"], doc["python_reason"]
    assert doc["submitted"] == "2025-03-05"
    assert doc["submitted_reason"] == "alphanet-v1-mptrj.yml dates.benchmark_added: 2025-03-05"
    pins = {p["name"]: p["spec"] for p in doc["dependencies"]["pins"]}
    assert pins["torch"] == "==2.5.1" and pins["numpy"] == "<2"
    assert "find_links https://data.pyg.org/whl/torch-2.5.1+cu121.html (alphanet-v1-mptrj.yml:19)" in doc["notes"]
    assert "extra_index_urls https://download.pytorch.org/whl/cu121 (alphanet-v1-mptrj.yml:21)" in doc["notes"]
    # the git dependency is a VCS source (no commit: a review item), never the PyPI project alphanet
    assert "alphanet" not in doc["dependencies"]["scanned"] + doc["dependencies"]["extra"]
    assert "declared VCS source alphanet (alphanet-v1-mptrj.yml:14)" in doc["notes"]


@pytest.mark.parametrize(("dates", "day", "reason"), [
    # the benchmark's day is the submission's; the paper's day only when the file has no other
    ("dates:\n  benchmark_added: '2023-07-14'\n  paper_published: '2022-05-13'\n", "2023-07-14",
     "m.yml dates.benchmark_added: 2023-07-14"),
    ("dates:\n  benchmark_added: null\n  paper_published: '2022-05-13'\n", "2022-05-13",
     "m.yml dates.paper_published: 2022-05-13 (the paper's day"),
    # the earlier schema (until 2026-07): date_added, date_published at the top
    ("date_added: '2023-07-14'\ndate_published: '2022-05-13'\n", "2023-07-14", "m.yml date_added: 2023-07-14"),
    ("date_published: '2022-05-13'\n", "2022-05-13", "m.yml date_published: 2022-05-13 (the paper's day"),
])
def test_init_cli__matbench_discovery_dates__date_evidence(write_files: Write, tmp_path: Path, dates: str, day: str,
                                                           reason: str) -> None:
    yml = f"model_name: M\n{dates}environment:\n  dependencies:\n  - numpy==1.25.0\n  python_version: '3.11'\n"
    root = write_files({"sub/m.yml": yml, "sub/run.py": "import numpy\n"})
    doc = _init(root / "sub", tmp_path / "models")
    assert doc["submitted"] == day
    assert doc["submitted_reason"].startswith(reason), doc["submitted_reason"]


def test_scan_cli__matbench_discovery_project__said_and_its_pyproject_read(
        write_files: Write, capsys: pytest.CaptureFixture[str]) -> None:
    """equflash-29m-oam.yml: ``project:`` names a uv project that owns resolution; its
    dependencies are display pins, still read; the project's pyproject.toml, inside the folder,
    is read like any other (its ``[tool.uv] find-links`` is not PEP 621 and not read)."""
    root = write_files({
        "equflash/equflash-29m-oam.yml": "model_name: EquFlash\nenvironment:\n  # display pins\n  dependencies:\n"
                                         "  - fairchem-core==1.10.0\n  python_version: '3.12'\n"
                                         "  project: models/equflash/kappa-env\n",
        "equflash/kappa-env/pyproject.toml": "[project]\nname = 'x'\nversion = '0'\ndependencies = [\n"
                                             "  'fairchem-core==1.10.0',\n  'e3nn==0.5.6',\n]\n",
        "equflash/run.py": "import fairchem\nimport e3nn\n"})
    res = _scan(root / "equflash", capsys)
    assert ("e3nn", "e3nn==0.5.6", "kappa-env/pyproject.toml", 6) in _declared(res)
    assert ("fairchem-core", "fairchem-core==1.10.0", "equflash-29m-oam.yml", 5) in _declared(res)
    assert any(w.startswith("equflash-29m-oam.yml:7: environment.project models/equflash/kappa-env: a uv project")
               for w in res["warnings"]), res["warnings"]


@pytest.mark.parametrize("yml", [
    "environment: production\nrequirements:\n  numpy: 1.25.0\n",  # a config's environment name
    "environment:\n  name: prod\n  debug: true\n",  # a mapping without dependencies or python_version
])
def test_scan_cli__other_yaml_with_an_environment_key__not_a_model_file(
        write_files: Write, capsys: pytest.CaptureFixture[str], yml: str) -> None:
    root = write_files({"sub/config.yml": yml, "sub/run.py": "import numpy\n"})
    res = _scan(root / "sub", capsys)
    # the earlier schema's requirements still read; nothing made up from the environment key
    assert res["declared"] == (["numpy"] if "requirements" in yml else [])
    assert "package_sources" not in res


def test_scan_cli__earlier_schema_requirements__still_read(write_files: Write,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """mace-mp-0.yml until 2026-07: ``requirements: {name: version}`` and a Python in it (tace)."""
    root = write_files({"sub/mace-mp-0.yml": "model_name: MACE\ndate_added: '2023-07-14'\nrequirements:\n"
                                             "  mace-torch: 0.3.3\n  torch: 2.0.1\n  python: '3.12.11'\n",
                        "sub/run.py": "import torch\n"})
    res = _scan(root / "sub", capsys)
    assert _declared(res) == [("mace-torch", "mace-torch==0.3.3", "mace-mp-0.yml", 4),
                              ("torch", "torch==2.0.1", "mace-mp-0.yml", 5)]
    assert any("mace-mp-0.yml:6" in w and "init reads it as Python evidence" in w for w in res["warnings"])


def test_init_cli__earlier_schema_python__read_as_its_warning_says(write_files: Write, tmp_path: Path) -> None:
    root = write_files({"sub/tace.yml": "model_name: TACE\nrequirements:\n  python: '3.12.11'\n  torch: '2.9.1'\n",
                        "sub/run.py": "import torch\n"})
    doc = _init(root / "sub", tmp_path / "models")
    assert doc["python"] == "3.12" and "tace.yml:3" in doc["python_reason"], doc["python_reason"]


# ------------------------------------------------------------------ PEP 723

SCRIPT = '''\
"""Train ALIGNN on Materials Project formation energies."""

# /// script
# requires-python = ">=3.10,<3.11"
# dependencies = [
#   "alignn==2024.5.20",
#   "matbench-discovery",
#   "wandb>=0.17",
#   "mylib",
# ]
#
# [tool.uv]
# extra-index-url = ["https://download.pytorch.org/whl/cpu"]
#
# [tool.uv.sources]
# matbench-discovery = { path = "../..", editable = true }
# mylib = { git = "https://github.com/o/mylib", rev = "%s" }
# ///

import alignn
import wandb
import mylib
''' % ("a" * 40)


def test_scan_cli__pep723_block__declarations_sources_and_refusals(write_files: Write,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({"sub/train_alignn.py": SCRIPT})
    res = _scan(root / "sub", capsys)
    assert _declared(res) == [
        ("alignn", "alignn==2024.5.20", "train_alignn.py", 6),
        ("wandb", "wandb>=0.17", "train_alignn.py", 8),
        ("mylib", f"mylib @ git+https://github.com/o/mylib@{'a' * 40}", "train_alignn.py", 9)]
    # a path source is the platform's checkout: never read as the PyPI project of that name
    assert any(w.startswith("train_alignn.py:16: matbench-discovery comes from ../.. ([tool.uv.sources]), not an index")
               for w in res["warnings"]), res["warnings"]
    assert [(s["option"], s["url"], s["location"]["line"]) for s in res["package_sources"]] == [
        ("tool.uv extra-index-url", "https://download.pytorch.org/whl/cpu", 13)]
    imports = {i["module"]: i["resolved_with"] for i in res["imports"]}
    assert imports["mylib"] == "declared"  # the block's declaration names the module's distribution


def test_init_cli__pep723_block__python_range_and_git_source(write_files: Write, tmp_path: Path) -> None:
    root = write_files({"sub/train_alignn.py": SCRIPT})
    doc = _init(root / "sub", tmp_path / "models")
    assert doc["python"] == "3.10" and "train_alignn.py:4" in doc["python_reason"], doc["python_reason"]
    assert [(e["name"], e["commit"]) for e in doc["extra_sources"]] == [("mylib", "a" * 40)]
    assert {p["name"]: p["spec"] for p in doc["dependencies"]["pins"]}["alignn"] == "==2024.5.20"
    assert "tool.uv extra-index-url https://download.pytorch.org/whl/cpu (train_alignn.py:13)" in doc["notes"]


@pytest.mark.parametrize(("script", "line", "says"), [
    ("# /// script\n# dependencies = [\"numpy\"]\n# ///\nimport numpy\n# /// script\n# dependencies = []\n# ///\n",
     5, "2 `# /// script` blocks"),
    ("import numpy\n\n# /// script\n# dependencies = [\n#   \"numpy\"\n# ///\n", 6, "not valid TOML"),
])
def test_init_cli__broken_pep723_block__unreadable_and_refused(write_files: Write, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str], script: str,
                                                               line: int, says: str) -> None:
    root = write_files({"sub/run.py": script})
    res = _scan(root / "sub", capsys)
    assert [(u["location"]["path"], u["location"]["line"]) for u in res["unreadable_declarations"]] == [("run.py", line)]
    assert says in res["unreadable_declarations"][0]["message"]
    assert main(["init", str(root / "sub"), "--name", "sub", "--models-dir", str(tmp_path / "models"),
                 "--offline"]) == 3
    assert not (tmp_path / "models" / "sub").exists()


def test_scan_cli__pep723_look_alikes__declare_nothing(write_files: Write, capsys: pytest.CaptureFixture[str]) -> None:
    """Only a ``script`` block at the start of lines counts: another type, an indented one, or one
    that is never closed declares nothing and says nothing."""
    root = write_files({"sub/a.py": "# /// pyproject\n# dependencies = [\"x\"]\n# ///\n",
                        "sub/b.py": "def f():\n    # /// script\n    # dependencies = [\"y\"]\n    # ///\n    pass\n",
                        "sub/c.py": "# /// script\n# dependencies = [\"z\"]\n"})
    res = _scan(root / "sub", capsys)
    assert res["declarations"] == [] and "unreadable_declarations" not in res


# ------------------------------------------------------------------ package sources of other files

@pytest.mark.parametrize(("files", "where"), [
    ({"requirements.txt": "--extra-index-url https://download.pytorch.org/whl/cu113\ntorch==1.12.1+cu113\n"},
     "requirements.txt:1"),
    ({"requirements.txt": "numpy\n-f https://data.pyg.org/whl/torch-1.12.0+cu113.html\n"}, "requirements.txt:2"),
    ({"environment.yml": "dependencies:\n  - python=3.9\n  - pip:\n    - --find-links https://data.dgl.ai/wheels/repo.html\n"
                         "    - dgl\n"}, "environment.yml:4"),
])
def test_scan_cli__index_options_in_requirement_files__refused_not_dropped(
        write_files: Write, capsys: pytest.CaptureFixture[str], files: dict[str, str], where: str) -> None:
    root = write_files({"sub/run.py": "import numpy\n", **{f"sub/{k}": v for k, v in files.items()}})
    res = _scan(root / "sub", capsys)
    path, line = where.split(":")
    assert [(s["location"]["path"], s["location"]["line"]) for s in res["package_sources"]] == [(path, int(line))]
    assert sum(w.startswith(where + ": ") and "a package source besides PyPI" in w for w in res["warnings"]) == 1


def test_scan_cli__pip_install_find_links_in_a_script__said(write_files: Write,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    root = write_files({"sub/setup.sh": "pip install torch-scatter -f https://data.pyg.org/whl/torch-1.12.0.html\n",
                        "sub/run.py": "import torch_scatter\n"})
    res = _scan(root / "sub", capsys)
    assert ("torch-scatter", "torch-scatter", "setup.sh", 1) in _declared(res)
    assert any(w.startswith("setup.sh:1: pip install -f https://data.pyg.org/") and "not used" in w
               for w in res["warnings"]), res["warnings"]


# ------------------------------------------------------------------ the PEP 723 parser's properties

_REQ = st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,12}(==[0-9]{1,3}(\.[0-9]{1,3}){0,2}|>=[0-9]\.[0-9]|<[0-9])?",
                     fullmatch=True)


def _block(deps: list[str], python: str | None, blank_lines: int) -> str:
    body = [f'requires-python = "{python}"'] if python else []
    body += ["dependencies = [", *[f'  "{d}",' for d in deps], "]"]
    lines = ["# /// script", *[("# " + b) for b in body], *["#"] * blank_lines, "# ///"]
    return "\n".join(lines) + "\n"


@given(head=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200),
       deps=st.lists(_REQ, max_size=8), python=st.sampled_from([None, ">=3.8", ">=3.12,<3.13"]),
       blank=st.integers(0, 2))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_pep723_extract__written_block__round_trips_with_lines(head: str, deps: list[str], python: str | None,
                                                               blank: int) -> None:
    """A block written after any text that holds no block marker reads back as written: the same
    dependencies in order, each at the line it was written on, and requires-python on the line
    after the opener; the PEP's reference ``read`` agrees."""
    assume("# ///" not in head)
    head = head if head.endswith("\n") or not head else head + "\n"
    text = head + _block(deps, python, blank) + "import os\n"
    got = pep723.extract(text)
    assert not got["unreadable"] and got["warnings"] == []
    lines = text.split("\n")
    assert [d for d, _ in got["dependencies"]] == deps
    for dep, line in got["dependencies"]:
        assert f'"{dep}"' in lines[line - 1], (dep, line)
    opener = head.count("\n") + 1
    assert lines[opener - 1] == "# /// script"
    assert got["requires_python"] == ([python, opener + 1] if python else None)
    ref = pep723.read(text)
    assert ref is not None and ref["dependencies"] == deps and ref.get("requires-python") == python


@given(st.text(max_size=400))
@settings(max_examples=300, deadline=None)
def test_pep723_extract__any_text__never_raises(text: str) -> None:
    got = pep723.extract(text)
    assert set(got) == {"dependencies", "requires_python", "sources", "uv_sources", "warnings", "unreadable"}
    json.dumps(got)  # the per-file cache keeps it as JSON
    pep723.declarations(got, "x.py")


@given(st.lists(st.sampled_from(["# /// script", "# ///", "#", "# dependencies = [", '#   "numpy",', "# ]",
                                 '# requires-python = ">=3.9"', "# [tool.uv]", '# find-links = ["https://x"]',
                                 "# [tool.uv.sources]", '# numpy = { path = "." }', "import numpy", "",
                                 "# /// pyproject", '# dependencies = ["a", 1]', "# x = ["]), max_size=25))
@settings(max_examples=400, deadline=None)
def test_pep723_extract__block_shaped_text__never_raises(lines: list[str]) -> None:
    """Text made of block pieces (unclosed, nested, repeated, broken TOML) never makes the reader
    raise; a block the reference ``read`` rejects is unreadable here, and one it reads is read."""
    text = "\n".join(lines) + "\n"
    got = pep723.extract(text)
    pep723.declarations(got, "x.py")
    try:
        ref = pep723.read(text)
    except (ValueError, tomllib.TOMLDecodeError):
        assert got["unreadable"]
        return
    assert not got["unreadable"]
    if ref is None:
        assert got["dependencies"] == [] and got["requires_python"] is None
    elif isinstance(ref.get("dependencies"), list):
        assert [d for d, _ in got["dependencies"]] == [d for d in ref["dependencies"] if isinstance(d, str)]


def test_pep723_read__the_peps_own_example() -> None:
    text = textwrap.dedent("""\
        # /// script
        # requires-python = ">=3.11"
        # dependencies = [
        #   "requests<3",
        #   "rich",
        # ]
        # ///

        import requests
        """)
    assert pep723.read(text) == {"requires-python": ">=3.11", "dependencies": ["requests<3", "rich"]}
    assert pep723.extract(text)["dependencies"] == [["requests<3", 4], ["rich", 5]]
    assert pep723.requires_python(text) == (">=3.11", 2)
