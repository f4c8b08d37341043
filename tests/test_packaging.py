"""Where pyrepro's Nix files live and what they name (issue 24).

The Nix files are the flake's top-level ``nix/`` (the project layout); Nix reads them from the
flake source, so the Python package does not carry them (pyproject.toml says why). What makes a
model folder portable is that the generated ``models/<name>/default.nix`` is data only: it names
nothing outside its folder, and ``nix/model.nix`` adds the module logic.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NIX_DIR = REPO / "nix"
# a path literal in Nix code: ./x, ../x, ../.. (after comments are taken out)
PATH_LITERAL = re.compile(r"(?<![\w/.+-])\.\.?/[\w./+-]*")


def _code(text: str) -> str:
    """Nix source without its comments."""
    return re.sub(r"(^|\s)#[^\n]*", r"\1", text)


def path_literals(path: Path) -> list[str]:
    return PATH_LITERAL.findall(_code(path.read_text(encoding="utf-8")))


def test_path_literals__seen_in_code_not_comments(tmp_path: Path) -> None:
    f = tmp_path / "t.nix"
    f.write_text('# ../in/a/comment\n{ root ? ../. }: { a = "${../pyrepro/data/x.sh}"; c = ./m.nix; }  # ./no\n')
    assert path_literals(f) == ["../.", "../pyrepro/data/x.sh", "./m.nix"]


def test_flake_nix_files__every_path_they_name_exists_inside_the_checkout() -> None:
    seen = {}
    for f in sorted(NIX_DIR.glob("*.nix")):
        for lit in path_literals(f):
            seen.setdefault(lit, f.name)
            target = (f.parent / lit).resolve()
            assert target.is_relative_to(REPO) and target.exists(), (f.name, lit)
    assert {"../pyrepro/data/gpu-wrapper.sh", "../pyrepro/data/cycle-breaks.toml", "./model-module.nix"} <= set(seen)


def test_generated_default_nix__names_nothing_outside_its_folder() -> None:
    files = sorted(REPO.glob("models/*/default.nix"))
    assert files
    for f in files:
        assert [lit for lit in path_literals(f) if not lit.startswith("./")] == [], f
        assert "imports" not in _code(f.read_text()), f


def test_package_data__does_not_claim_nix_files_it_cannot_carry() -> None:
    """A package-data glob for a folder the package does not have ships nothing and misleads."""
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["pyrepro"]
    pkg = REPO / "pyrepro"
    for pattern in data:
        assert list(pkg.glob(pattern)), f"package-data {pattern!r} matches nothing under pyrepro/"
