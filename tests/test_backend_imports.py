"""check-imports in a built miniature environment."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pyrepro import run
from pyrepro.backends import local
from pyrepro.paths import Paths
from pyrepro.registry import load_registry

SC = Path(__file__).parent / "scenarios" / "backend"


@pytest.mark.integration
def test_check_imports__mini_env__scanned_ok_unknown_reported(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(SC / "models", root / "models")
    shutil.copytree(SC / "patches", root / "patches")
    paths = Paths(root=root, cache=tmp_path / "cache")
    spec = load_registry(paths.models).get("mini")
    built = local.build(spec, paths, mirror=SC / "mirror")
    assert run.scanned_modules(spec, built) == ["six"]
    rows = run.check_imports(spec, built)
    assert ("six", "ok", "") in rows and all(r[1] == "ok" for r in rows)
    bad = run.check_imports(spec, built, modules=["six", "no_such_module_xyz"])
    assert bad[0] == ("six", "ok", "")
    assert bad[1][0] == "no_such_module_xyz" and bad[1][1] == "error" and "ModuleNotFoundError" in bad[1][2]
