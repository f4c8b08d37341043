"""docs/json.md: every command's --json output is one envelope, on success and on failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pyrepro.cli import main


@pytest.fixture(autouse=True)
def _pdm_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """These scenarios fake pdm's words: their reproductions lock with pdm first, as ``--pdm`` does
    (the uv-first lock has its own tests in tests/test_reproduce.py)."""
    from pyrepro import reproduce as _rep

    monkeypatch.setattr(_rep, "UV_FIRST", False)

REPO = Path(__file__).resolve().parent.parent
ERROR_KEYS = {"code", "kind", "message", "hint", "location"}


def check_envelope(text: str, code: int) -> dict[str, Any]:
    docs = [ln for ln in text.splitlines() if ln.strip()]
    assert len(docs) == 1, f"expected one JSON document, got {len(docs)} lines"
    doc: dict[str, Any] = json.loads(docs[0])
    assert set(doc) == {"ok", "result", "error"}
    assert doc["ok"] is (code == 0)
    if code == 0:
        assert doc["error"] is None
    else:
        err = doc["error"]
        assert set(err) == ERROR_KEYS and err["code"] == code and isinstance(err["message"], str) and err["message"]
        assert err["location"] is None or {"path", "line", "key"} == set(err["location"])
    return doc


@pytest.mark.parametrize("argv", [
    ["scan", str(REPO / "examples" / "contribution"), "--json"],
    ["models", "--json"],
    ["show", "cfid", "--json"],
    ["lock", "cfid", "--check", "--json"],
    ["doctor", "--json"],
    ["graph", str(REPO / "models" / "cfid" / "pdm.lock"), "--json"],
    ["data", "list", "--json"],
])
def test_json__succeeding_commands__one_ok_envelope(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(argv)
    doc = check_envelope(capsys.readouterr().out, code)
    assert code == 0 and doc["result"] is not None


@pytest.mark.parametrize(("argv", "code"), [
    (["scan", "/nonexistent/folder", "--json"], 4),
    (["show", "no_such_model", "--json"], 4),
    (["scan", ".", "--json", "--no-such-option"], 2),
    (["init", str(REPO / "examples" / "contribution"), "--name", "Bad Name", "--json", "--offline"], 2),
])
def test_json__failing_commands__one_error_envelope(argv: list[str], code: int,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == code
    out = capsys.readouterr()
    doc = check_envelope(out.out, code)
    assert doc["result"] is None
    assert "Traceback" not in out.err


def test_json__bad_mapping_file__error_names_file_and_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "m.toml"
    bad.write_text('[mapping]\nx = "y"\n')
    code = main(["scan", str(tmp_path), "--mapping", str(bad), "--json"])
    doc = check_envelope(capsys.readouterr().out, code)
    assert code == 3 and doc["error"]["location"]["path"] == str(bad) and doc["error"]["location"]["key"] == "mapping.x"


def test_json__reproduce_failure__result_and_error_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            isolated_cache: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "proj"
    (root / "models").mkdir(parents=True)
    (root / "flake.nix").write_text("{}\n")
    monkeypatch.setenv("PYREPRO_ROOT", str(root))
    sub = tmp_path / "old"
    sub.mkdir()
    (sub / "README.md").write_text("# no code here\n")  # (a Python 2 script stopped the lock before 2.7 locked)
    code = main(["reproduce", str(sub), "--json", "--offline"])
    doc = check_envelope(capsys.readouterr().out, code)
    assert code == 3 and doc["result"]["stopped_at"] == "init" and doc["error"]["kind"] == "InputError"
    assert "no Python code here" in doc["error"]["message"]


def test_main__unexpected_exception__internal_error_and_saved_traceback(monkeypatch: pytest.MonkeyPatch,
                                                                          isolated_cache: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    import pyrepro.scan

    def boom(*a: object, **k: object) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(pyrepro.scan, "scan_path", boom)
    code = main(["scan", ".", "--json"])
    out = capsys.readouterr()
    assert code == 70 and "Traceback" not in out.err and "internal error: ZeroDivisionError: a bug" in out.err
    doc = check_envelope(out.out, code)
    assert doc["error"]["kind"] == "InternalError"
    saved = list((isolated_cache / "crashes").glob("*.txt"))
    assert len(saved) == 1 and "ZeroDivisionError" in saved[0].read_text()


def test_main__unreadable_file__located_error_not_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "not-a-file.toml"
    folder.mkdir()  # reading it raises IsADirectoryError (root reads anything else)
    code = main(["scan", str(tmp_path), "--mapping", str(folder)])
    err = capsys.readouterr().err
    assert code == 3 and str(folder) in err and "Traceback" not in err
