"""Inputs the parser gives up on still yield their imports, with a warning."""

from __future__ import annotations

from pathlib import Path

from pyrepro.scan import python as pysrc
from pyrepro.scan import scan_path


def test_parse_code__expression_too_deep_for_the_parser__fallback_keeps_imports() -> None:
    parsed = pysrc.parse_code("import sympy\nx = " + "-" * 100_000 + "1\n")
    assert [(i.module, i.line) for i in parsed.imports] == [("sympy", 1)]
    assert parsed.fallback and "line-level fallback" in parsed.warnings[0][1]


def test_decode_source__unknown_cookie__utf8_with_warning() -> None:
    text, warn = pysrc.decode_source(b"# -*- coding: foobar -*-\nimport numpy\n")
    assert text.endswith("import numpy\n")
    assert warn is not None and "foobar" in warn


def test_decode_source__latin1_cookie__decoded_without_warning() -> None:
    text, warn = pysrc.decode_source(b"# -*- coding: latin-1 -*-\ns = '\xe9'\n")
    assert "\u00e9" in text and warn is None


def test_scan_path__unknown_cookie__warning_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "run.py").write_bytes(b"# coding: nosuchcodec\nimport pandas\n")
    res = scan_path(tmp_path, python="3.10")
    assert res.distributions == ("pandas",)
    assert any(str(w).startswith("run.py:1: unknown encoding") for w in res.warnings), res.warnings


def test_scan_path__unknown_python_and_missing_pyenv__warned_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "run.py").write_text("import numpy\nimport tomllib\n")
    res = scan_path(tmp_path, python="3.99", pyenv=(tmp_path / "nope",))
    text = "\n".join(map(str, res.warnings))
    assert "no standard-library table for Python '3.99'; used 3.13" in text
    assert "--pyenv folder not found" in text
    assert res.distributions == ("numpy",)


def test_scan_path__known_python__no_version_warning(tmp_path: Path) -> None:
    (tmp_path / "run.py").write_text("import numpy\n")
    assert scan_path(tmp_path, python="3.10").warnings == ()


def test_scan_path__unknown_name_defined_elsewhere_in_tree__local_with_warning(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "utils" / "mylib").mkdir(parents=True)
    (tmp_path / "other" / "jarvis").mkdir(parents=True)
    (tmp_path / "lib").mkdir()
    (tmp_path / "scripts" / "run.py").write_text(
        "import sys\nsys.path.append('../utils')\nimport helpers\nimport mylib.core\nimport jarvis\nimport nosuchpkg\n"
        "import deep\n")
    (tmp_path / "utils" / "helpers.py").write_text("")
    (tmp_path / "utils" / "mylib" / "__init__.py").write_text("")
    (tmp_path / "other" / "jarvis" / "__init__.py").write_text("")
    (tmp_path / "lib" / "deep.py").write_text("")
    (tmp_path / "lib" / "__init__.py").write_text("")  # a package: deep.py is not a script of its own
    res = scan_path(tmp_path, python="3.10")
    assert res.distributions == ("jarvis-tools",)  # a folder named jarvis does not hide the package
    assert [g.module for g in res.guesses] == ["nosuchpkg"]  # a guess, never a dependency
    # the static sys.path.append makes utils/ a folder Python imports from: no warning for those
    assert {"helpers", "mylib", "deep"} <= set(res.local_modules)
    text = "\n".join(map(str, res.warnings))
    assert "helpers" not in text and "mylib" not in text
    assert "scripts/run.py:7: deep: not in a folder Python imports from, but lib/deep.py" in text


def test_parse_code__python2_with_imports_in_docstrings__fallback_skips_strings() -> None:
    code = ('"""Usage:\nimport notreal\nfrom alsonotreal import x\n"""\nprint "py2"\nimport numpy\n'
            's = """\nimport fake3\n"""\nif True:\n    import scipy.stats\nx = \'a\\\nimport fake4\'\n')
    parsed = pysrc.parse_code(code)
    assert parsed.fallback
    assert [(i.module, i.line) for i in parsed.imports] == [("numpy", 6), ("scipy.stats", 11)]
    assert parsed.python2 == ((5, "print statement"),)


def test_parse_code__untokenizable_python2__fallback_still_reads_lines() -> None:
    parsed = pysrc.parse_code('"""doc\nimport inside\n"""\nimport os, cPickle\nprint "x"\nx = """unterminated\n')
    assert [i.module for i in parsed.imports] == ["os", "cPickle"]


def test_scan_path__single_unreadable_kind_of_file__warning_not_silence(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("import numpy\n")
    res = scan_path(tmp_path / "notes.txt")
    assert res.distributions == () and "notes.txt: not a file the scanner reads" in str(res.warnings[0])
    (tmp_path / "run.py").write_text("import numpy\n")
    assert scan_path(tmp_path).warnings == ()  # inside a folder other files are skipped silently


def test_scan_path__link_to_outside_the_folder__not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("import secretpkg\n")
    root = tmp_path / "c"
    root.mkdir()
    (root / "run.py").write_text("import numpy\n")
    (root / "leak.py").symlink_to(outside)
    (root / "inside.py").symlink_to(root / "run.py")  # a link inside the folder is read
    res = scan_path(root, cache=False)
    assert res.distributions == ("numpy",) and not res.guesses
    assert any("outside the scanned folder" in str(w) and "leak.py" in str(w) for w in res.warnings)


# ------------------------------------------------------------------ declaration files in any shape

import json  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pyrepro.scan import metadata  # noqa: E402

_JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                            | st.text(max_size=12),
                            lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4),
                            max_leaves=25)


def _strings_with_lines(value: object, text: str) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    if isinstance(value, str):
        out.append((str(value), value.line))  # type: ignore[attr-defined]
    elif isinstance(value, dict):
        for k, v in value.items():
            out += _strings_with_lines(k, text) + _strings_with_lines(v, text)
    elif isinstance(value, list):
        for v in value:
            out += _strings_with_lines(v, text)
    return out


@settings(max_examples=200, deadline=None)
@given(_JSON_VALUES, st.sampled_from([None, 1, 2]))
def test_json_located__any_json__same_value_and_every_string_on_its_line(value: object, indent: int | None) -> None:
    text = json.dumps(value, indent=indent)
    located = metadata._json_located(text)
    assert located == json.loads(text)
    lines = text.splitlines()
    for s, line in _strings_with_lines(located, text):
        assert json.dumps(s) in lines[line - 1], (s, line, text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_declaration_parsers__any_text__never_raise_unreadable_is_located(text: str) -> None:
    for parse in (metadata.parse_info_json, metadata.parse_software_used, metadata.parse_requirements_txt,
                  metadata.parse_environment_yml, metadata.parse_pyproject, metadata.parse_pipfile):
        ms = parse(text, "f")
        if ms.unreadable:
            assert ms.declared == () and ms.warnings and ms.warnings[0][0] == "f"


def test_parse_info_json__nesting_deeper_than_the_parser__located_warning_nothing_read() -> None:
    text = '{"requirements": ' + "[" * 100_000 + "]" * 100_000 + "}"
    ms = metadata.parse_info_json(text, "info.json")
    assert ms.declared == () and ms.unreadable and ms.warnings[0][:2] == ("info.json", 1)
