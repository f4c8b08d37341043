"""check-imports in a built miniature environment."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from pyrepro import run
from pyrepro.backends import local
from pyrepro.paths import Paths
from pyrepro.registry import load_registry

SC = Path(__file__).parent / "scenarios" / "backend"


@pytest.fixture(autouse=True)
def _trees_verified(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The fake environments here have no manifest: their verification (tested in test_verify.py
    and test_sandbox.py) is recorded, not run; a real build (integration) is verified for real."""
    calls: list[str] = []
    if not request.node.get_closest_marker("integration"):
        monkeypatch.setattr(run, "verify_built", lambda spec, built: calls.append(built.name) or [])
    return calls


@pytest.mark.integration
def test_check_imports__mini_env__scanned_ok_unknown_reported(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(SC / "models", root / "models")
    shutil.copytree(SC / "patches", root / "patches")
    paths = Paths(root=root, cache=tmp_path / "cache")
    spec = load_registry(paths.models).get("mini")
    built = local.build(spec, paths, mirror=SC / "mirror")
    assert run.scanned_modules(spec, built) == ["six"]
    removed = dataclasses.replace(spec, dependencies=dataclasses.replace(spec.dependencies, remove=("Six",)))
    assert run.scanned_modules(removed, built) == []
    # a relaxation dropped it (dependencies.dropped): left out of the pyproject, still checked
    dropped = dataclasses.replace(spec, dependencies=dataclasses.replace(spec.dependencies, dropped=("six",)))
    assert run.scanned_modules(dropped, built) == ["six"]
    rows = run.check_imports(spec, built)
    assert ("six", "ok", "") in rows and all(r[1] == "ok" for r in rows)
    bad = run.check_imports(spec, built, modules=["six", "no_such_module_xyz"])
    assert bad[0] == ("six", "ok", "")
    assert bad[1][0] == "no_such_module_xyz" and bad[1][1] == "error" and "ModuleNotFoundError" in bad[1][2]


def test_import_probe__top_level_names_no_module__skipped_but_explicit_tried(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    site = tmp_path / "site"
    (site / "fakedist-1.0.dist-info").mkdir(parents=True)
    (site / "fakedist-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: fakedist\nVersion: 1.0\n")
    (site / "fakedist-1.0.dist-info" / "top_level.txt").write_text("libfake_nomodule\nfakemod\ntest\n")
    (site / "fakemod.py").write_text("X = 1\n")
    req = {"modules": ["libfake_explicit"], "distributions": ["fakedist"]}
    done = subprocess.run([sys.executable, "-c", run._import_probe(), json.dumps(req)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(site)}, check=True)
    rows = json.loads(run.probe_result(done.stdout))
    assert [r[:2] for r in rows] == [["libfake_explicit", "error"], ["fakemod", "ok"]]


def test_scanned_modules__import_no_distribution_provides__checked_not_skipped(tmp_path: Path) -> None:
    """Seen on ocp_schnet_10k: 'ocpmodels' is git-only (the name table's [unresolved]); the import
    check must try it, so a reproduction fails there with its name instead of passing unseen."""
    from pyrepro.backends import BuiltModel

    src, rt = tmp_path / "src", tmp_path / "rt"
    src.mkdir()
    rt.mkdir()
    (src / "run.py").write_text("import six\nimport ocpmodels\nfrom ocpmodels.models import SchNet\n")
    spec = load_registry(SC / "models").get("mini")
    built = BuiltModel("mini", "local", tmp_path / "env", "k" * 20, src, rt, "s" * 20, tmp_path / "l", "3.11.9",
                       True, True, 0.0)
    assert run.scanned_modules(spec, built) == ["ocpmodels", "six"]


def test_scanned_modules__own_module_missing_only_from_obsolete_code__not_checked_said(tmp_path: Path) -> None:
    """cbrain (corpus11 dev): notebooks/dev/old_notebooks/ imports `config` and `dataLoad`, modules
    the repository no longer has. Imported only there (a folder the name table's [obsolete_folders]
    knows), they are not import-checked and the reason is said; imported by current code too, or
    a distribution's module, they are checked as before."""
    from pyrepro.backends import BuiltModel

    src, rt = tmp_path / "src", tmp_path / "rt"
    (src / "notebooks" / "old_notebooks").mkdir(parents=True)
    rt.mkdir()
    (src / "run.py").write_text("import six\nimport sharedhelper\n")
    (src / "notebooks" / "old_notebooks" / "diag.py").write_text(
        "import dataLoad\nfrom config import parser\nimport sharedhelper\nimport six\n")
    spec = load_registry(SC / "models").get("mini")
    built = BuiltModel("mini", "local", tmp_path / "env", "k" * 20, src, rt, "s" * 20, tmp_path / "l", "3.11.9",
                       True, True, 0.0)
    assert run.scanned_modules(spec, built) == ["sharedhelper", "six"]
    aside = run.unchecked_modules(spec, built)
    assert len(aside) == 2 and all("old_notebooks/: earlier notebooks" in a for a in aside)
    assert aside[0].startswith("config (imported only in notebooks/old_notebooks/diag.py")


def test_check_imports__never_the_callers_folder__an_empty_one_of_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -c`` puts the working directory first on sys.path: run from a checkout, its
    models/ folder answered a submission's missing 'models' module (LocalRetro, corpus3 dev), and
    automatminer's import wrote its log file there."""
    import os
    import sys

    from pyrepro import run
    from pyrepro.backends import BuiltModel

    env = tmp_path / "env"
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").symlink_to(sys.executable)
    caller = tmp_path / "caller"
    (caller / "models").mkdir(parents=True)  # a namespace package, importable from the caller's folder
    (caller / "models" / "x.py").write_text("")
    monkeypatch.chdir(caller)
    built = BuiltModel("m", "local", env, "k" * 20, tmp_path / "src", tmp_path / "rt", "s" * 20, tmp_path / "l",
                       "3.11.9", True, True, 0.0)
    spec = load_registry(SC / "models").get("mini")
    rows = run.check_imports(spec, built, modules=["models", "json"])
    assert [(m, st) for m, st, _ in rows] == [("models", "error"), ("json", "ok")], rows
    assert sorted(os.listdir(caller)) == ["models"]


def test_check_imports__module_a_distribution_ships_in_a_sys_path_folder__imported_from_it(tmp_path: Path) -> None:
    """tartarus (corpus4 dev): `sys.path.append(os.path.join(RDConfig.RDContribDir, 'SA_Score'));
    import sascorer`. The scanner cannot read a computed path; the name table's [inside] says where
    the rdkit wheel ships sascorer, and the import check puts that folder on sys.path as the code
    does (sascorer, not found before, imports)."""
    import json
    import subprocess
    import sys

    from pyrepro.backends import BuiltModel
    from pyrepro.resolve import inside_folder
    from pyrepro.scan import scan_path

    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    site = next(env.glob("lib/python*/site-packages"))
    (site / "rdkit" / "Contrib" / "SA_Score").mkdir(parents=True)
    (site / "rdkit" / "__init__.py").write_text("")
    (site / "rdkit" / "Contrib" / "SA_Score" / "sascorer.py").write_text("def calculateScore(m):\n    return 1\n")
    src = tmp_path / "src"
    src.mkdir()
    (src / "pce.py").write_text("import os, sys\nfrom rdkit.Chem import RDConfig\n"
                                "sys.path.append(os.path.join(RDConfig.RDContribDir, 'SA_Score'))\nimport sascorer\n")
    rt = tmp_path / "rt"
    rt.mkdir()
    assert inside_folder("sascorer") == "rdkit/Contrib/SA_Score"
    assert {i.module: i.distribution for i in scan_path(src).imports}.get("sascorer") == "rdkit"
    spec = load_registry(SC / "models").get("mini")
    built = BuiltModel("mini", "local", env, "k" * 20, src, rt, "s" * 20, tmp_path / "l", "3", False, False, 0.0)
    rows = run.check_imports(spec, built, modules=["sascorer", "npscorer"])
    assert rows[0] == ("sascorer", "ok", "") and rows[1][0] == "npscorer" and rows[1][1] == "error"
    json.dumps(rows)


def test_check_imports__the_interpreter_dies__each_module_alone_and_the_killer_named(tmp_path: Path) -> None:
    """rosettafold (corpus8 dev): tensorflow and torch imported into one process abort it (exit -6),
    and the whole check came back as one unreadable row '*'. Each module then runs in a process of
    its own: those that import alone pass (said so), one that kills the interpreter by itself is
    named."""
    import sys

    from pyrepro.backends import BuiltModel

    env, rt = tmp_path / "env", tmp_path / "rt"
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").symlink_to(sys.executable)
    rt.mkdir()
    (rt / "flags_a.py").write_text("X = 1\n")
    (rt / "flags_b.py").write_text("import os, sys\nif 'flags_a' in sys.modules:\n    os.abort()\n")
    (rt / "always_dies.py").write_text("import os\nos.abort()\n")
    built = BuiltModel("m", "local", env, "k" * 20, tmp_path / "src", rt, "s" * 20, tmp_path / "l",
                       "3.11.9", True, True, 0.0)
    spec = load_registry(SC / "models").get("mini")
    rows = run.check_imports(spec, built, modules=["flags_a", "flags_b", "json"])
    assert [(m, st) for m, st, _ in rows] == [("flags_a", "ok"), ("flags_b", "ok"), ("json", "ok")], rows
    assert "all together, the interpreter died (exit -6)" in rows[0][2]
    rows = run.check_imports(spec, built, modules=["json", "always_dies"])
    assert rows[0][:2] == ("json", "ok")
    assert rows[1][:2] == ("always_dies", "error") and "the interpreter died importing it (exit -6)" in rows[1][2]
    one = run.check_imports(spec, built, modules=["always_dies"])
    assert one[0][:2] == ("always_dies", "error") and "the interpreter died importing it (exit -6)" in one[0][2]


def test_check_imports__installed_code_prints_before_and_after_the_result__rows_still_read(tmp_path: Path) -> None:
    """ravens (corpus15 held): pybullet's C code writes "pybullet build time: ..." through its own
    stdout buffer, which reaches the pipe at the interpreter's exit, after the probe's result; the
    check read the last line, found no result and said the interpreter died (exit 0). The result is
    the last line with the probe's mark, wherever other output falls."""
    import sys

    from pyrepro.backends import BuiltModel

    env, rt = tmp_path / "env", tmp_path / "rt"
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").symlink_to(sys.executable)
    rt.mkdir()
    # C's stdio buffer, as pybullet's printf: flushed when the process exits, after Python's own
    (rt / "chatty.py").write_text(
        "import ctypes\nprint('chatty says hello')\n"
        "ctypes.CDLL(None).printf(b'pybullet build time: Nov 28 2023\\n')\n")
    built = BuiltModel("m", "local", env, "k" * 20, tmp_path / "src", rt, "s" * 20, tmp_path / "l",
                       "3.11.9", True, True, 0.0)
    spec = load_registry(SC / "models").get("mini")
    rows = run.check_imports(spec, built, modules=["chatty", "json"])
    assert [(m, st) for m, st, _ in rows] == [("chatty", "ok"), ("json", "ok")], rows
    with pytest.raises(ValueError):
        run.probe_result("pybullet build time: Nov 28 2023\n[[\"x\", \"ok\", \"\"]]\n")
