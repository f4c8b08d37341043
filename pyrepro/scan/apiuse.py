"""Uses of APIs that a later series of their distribution removed (the name table's
``[api_eras]``: ``tf.placeholder`` is TensorFlow 1, ``np.float`` is NumPy before 1.24), found in
code text without running it.

A module's names in the code are the ones it was imported as: ``import tensorflow as tf``,
``import numpy``, ``from tensorflow import contrib``. An entry matches as a whole dotted name
(``np.float`` and never ``np.float32``), on lines that are not comments. ``import
tensorflow.compat.v1 as tf`` binds ``tf`` to another module, so its ``tf.placeholder`` is no
TensorFlow 1 evidence. Imports anywhere in a file (any cell of a notebook) bind for the whole file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_IMPORT_AS = re.compile(r"^[ \t]*import[ \t]+([A-Za-z_][\w.]*)[ \t]+as[ \t]+([A-Za-z_]\w*)[ \t]*(?:#.*)?$", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*)[ \t]*(?:#.*)?$", re.M)
_FROM = re.compile(r"^[ \t]*from[ \t]+([A-Za-z_][\w.]*)[ \t]+import[ \t]+([A-Za-z_]\w*)(?:[ \t]+as[ \t]+([A-Za-z_]\w*))?",
                   re.M)


def _bindings(texts: Sequence[str], tops: set[str]) -> dict[str, str]:
    """name in the code -> the module it stands for, for modules under ``tops``."""
    out: dict[str, str] = {}
    for text in texts:
        for m in _IMPORT_AS.finditer(text):
            if m.group(1).split(".")[0] in tops:
                out[m.group(2)] = m.group(1)
        for m in _IMPORT.finditer(text):
            for mod in (x.strip() for x in m.group(1).split(",")):
                if mod.split(".")[0] in tops and "." not in mod:
                    out.setdefault(mod, mod)
        for m in _FROM.finditer(text):
            if m.group(1).split(".")[0] in tops:
                out[m.group(3) or m.group(2)] = f"{m.group(1)}.{m.group(2)}"
    return out


def find_uses(cells: Sequence[tuple[int | None, str]], eras: dict[str, object]) -> list[tuple[str, int, int | None]]:
    """(dotted name of an ``eras`` entry, line, cell) of each first use per entry and cell in a
    file's code ``cells`` ((cell index or None, text) each)."""
    tops = {name.split(".")[0] for name in eras}
    if not tops or not any(t in text for _c, text in cells for t in tops):
        return []
    names = _bindings([text for _c, text in cells], tops)
    if not names:
        return []
    patterns = []
    for alias, module in names.items():
        for entry in eras:
            if entry == module:
                continue
            if entry.startswith(module + "."):
                rest = entry[len(module) + 1:]
                patterns.append((entry, re.compile(rf"(?<![\w.]){re.escape(alias)}\.{re.escape(rest)}(?![\w])")))
    out: list[tuple[str, int, int | None]] = []
    for cell, text in cells:
        seen: set[str] = set()
        for n, line in enumerate(text.splitlines(), 1):
            stripped = line.lstrip()
            if not stripped or stripped.startswith("#") or "." not in line:
                continue
            code = line.split("#", 1)[0]
            imported = [f"{m.group(1)}.{m.group(2)}" for m in _FROM.finditer(code)] + \
                [m.group(1) for m in _IMPORT_AS.finditer(code)]
            for entry in eras:  # the import itself: from tensorflow import contrib
                if entry not in seen and any(i == entry or i.startswith(entry + ".") for i in imported):
                    seen.add(entry)
                    out.append((entry, n, cell))
            for entry, rx in patterns:
                if entry not in seen and rx.search(code):
                    seen.add(entry)
                    out.append((entry, n, cell))
    return out
