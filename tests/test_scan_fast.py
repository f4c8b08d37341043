"""The fast reader (``fastpy.parse_fast``) finds exactly what the full parse finds.

Random files are assembled from snippets that stress what the fast path must place with
certainty: imports in try/except, platform guards, TYPE_CHECKING, class bodies and nested
functions, docstrings that mention imports, decorators, shell calls with a command held in a
name, sys.path inserts, one-line compound statements.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyrepro.scan import fastpy
from pyrepro.scan import python as pysrc

SNIPPETS = [
    "import numpy as np\n",
    "from scipy import stats, linalg\n",
    "import os, sys\n",
    "try:\n    import ujson as json\nexcept ImportError:\n    import json\n",
    "try:\n    import torch\nexcept ImportError:\n    raise SystemExit('need torch')\n",
    "if sys.platform == 'win32':\n    import winreg\nelse:\n    import fcntl\n",
    "if sys.version_info < (3, 8):\n    import importlib_metadata\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pandas\n",
    '"""Usage:\nimport notapackage\n"""\n',
    "x = '''\nfrom fake import y\n'''\n",
    "class A:\n    import matgl\n\n    def f(self):\n        import dgl\n        return dgl\n",
    "def outer():\n    def inner():\n        import lightgbm\n    import xgboost\n    return inner\n",
    "@decorator\ndef g():\n    import sklearn\n",
    "cmd = 'zip out.zip preds.csv'\nos.system(cmd)\n",
    "subprocess.run(['python', 'train.py', '--epochs', '2'])\n",
    "sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'lib'))\n",
    "if True: import yaml\n",
    "if False:\n    import pandas\nelse:\n    import numpy\n",
    "if 0:\n    import h5py\n",
    "x = 1; import h5py\n",
    "with contextlib.suppress(ImportError):\n    import tqdm\n",
    "for i in range(3):\n    import ase\n",
    "def h(\n    a,\n    b,\n):\n    import pymatgen.core\n    return a\n",
    "mod = importlib.import_module('jarvis.core.atoms')\n",
    "if __name__ == '__main__':\n    import argparse\n    main()\n",
    "try:\n    pass\nfinally:\n    import atexit\n",
    "if a:\n    pass\nelif b:\n    import optional_b\nelse:\n    import optional_c\n",
    "def k():\n    try:\n        import cupy\n    except ImportError:\n        cupy = None\n",
    "print('import this is not')\n",
    "value = {'a': 1,\n'b': 2}\n",
    "async def co():\n    import aiohttp\n",
    "raise_error = os.popen('ls').read()\n",
    "if os.system('nvidia-smi') == 0:\n    import pynvml\n",
]


SNIPPETS += [
    "# a comment with ''' and import fake_in_comment\n",
    "s = \"it's\"  # don't\nimport regex\n",
    "doc = '''one \"\"\" inside\nimport not_real\n'''\n",
    "def m():\n    if x:\n        pass\n    elif os.system('make') == 0:\n        import built_mod\n",
    "@app.route(subprocess.getoutput('hostname'))\ndef view():\n    import flask\n",
    "if platform.system() == 'Linux':\n    def load():\n        import resource\n",
    "while True:\n    import signal\n    break\n",
    "data = [\n1,\n2,\n]\nimport after_data\n",
    "match cmd:\n    case 'a':\n        import match_a\n",
    "try:\n    from . import sibling\nexcept ImportError:\n    import sibling\n",
    "import os\n\x0cimport formfeed_mod\n",
    "x = 1\r\nimport crlf_mod\r\n",
    "BASE_DIR = os.path.dirname(os.path.abspath(__file__))\nROOT = os.path.dirname(BASE_DIR)\n"
    "sys.path.append(os.path.join(ROOT, 'utils'))\nimport tf_util\n",
    "LIB = '../lib'\nsys.path.insert(0, LIB)\n",
]


def _norm(p: pysrc.Parsed) -> tuple[object, ...]:
    return (sorted(p.imports, key=lambda i: (i.line, i.module, i.names)), sorted(p.commands, key=lambda c: (c[1], c[0])),
            sorted(p.syspath), p.main_guard, sorted(p.python2))


def _same(text: str) -> None:
    full = pysrc.parse_code(text)
    if full.fallback:
        return  # the fast path hands such text to the full reader anyway
    assert _norm(fastpy.parse_fast(text)) == _norm(full), text


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(SNIPPETS), min_size=1, max_size=12), st.sampled_from(["", "    "]))
def test_parse_fast__random_files__same_as_full_parse(parts: list[str], indent: str) -> None:
    text = "".join(parts)
    _same(text)
    if indent:  # the same code inside a function and a class
        _same("def wrapper():\n" + textwrap.indent(text, indent) + "\n")
        _same("class Wrapper:\n" + textwrap.indent(text, indent) + "\n")


@pytest.mark.parametrize("snippet", SNIPPETS)
def test_parse_fast__each_snippet__same_as_full_parse(snippet: str) -> None:
    _same(snippet)


def test_parse_fast__syntax_error_outside_imports__thorough_reports_it() -> None:
    text = "import scipy\ndef f(:\n    pass\n"
    assert [i.module for i in fastpy.parse_fast(text).imports] == ["scipy"]
    assert pysrc.parse_code(text).warnings  # --thorough (and small trees) report it


def test_parse_fast__python2_and_magics__read_in_full() -> None:
    py2 = fastpy.parse_fast("import urllib2\nprint 'hello'\n")
    assert py2.python2 and py2.fallback
    magic = fastpy.parse_fast("!pip install x\nimport numpy\n")
    assert [i.module for i in magic.imports] == ["numpy"] and magic.commands


def _corpus() -> list[Path]:
    roots = [Path(__file__).parent / "scenarios", Path(__file__).parent.parent / "examples"]
    up = Path(__file__).resolve().parents[2] / "shared" / "upstream" / "jarvis_leaderboard" / "jarvis_leaderboard" / \
        "contributions"
    if up.is_dir():
        roots.append(up)
    extra = os.environ.get("PYREPRO_BENCH_TREE")
    if extra and Path(extra).is_dir():
        roots.append(Path(extra))
    return [p for r in roots for p in r.rglob("*.py") if p.is_file()]


def test_parse_fast__every_py_file_we_have__same_as_full_parse() -> None:
    files = _corpus()
    assert files
    for f in files:
        text, _ = pysrc.decode_source(f.read_bytes())
        full = pysrc.parse_code(text)
        if not full.fallback:
            assert _norm(fastpy.parse_fast(text)) == _norm(full), f
