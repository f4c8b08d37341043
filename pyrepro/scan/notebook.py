"""Code cells of Jupyter notebooks (nbformat v3 and v4), without nbformat.

v4 keeps ``cells[]`` with ``cell_type == "code"`` and ``source``; v3 keeps
``worksheets[].cells[]`` with ``cell_type == "code"`` and ``input``. ``source``/``input`` is a
string or a list of lines. Non-Python notebooks (``language_info.name`` / kernelspec) are skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Cell:
    index: int  # 0-based among all cells of the notebook
    source: str


class NotebookError(ValueError):
    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def _text(src: object) -> str:
    if isinstance(src, str):
        return src
    if isinstance(src, list) and all(isinstance(s, str) for s in src):
        return "".join(src)
    return ""


def code_cells(data: bytes) -> tuple[list[Cell], str | None]:
    """(code cells, language) of a notebook; raises NotebookError with a line when broken."""
    try:
        nb = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise NotebookError(f"not UTF-8 text: {exc.reason}") from exc
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not valid JSON: {exc.msg}", exc.lineno) from exc
    if not isinstance(nb, dict):
        raise NotebookError("not a notebook (the JSON top level is not an object)", 1)
    raw_meta = nb.get("metadata")
    meta: dict[str, object] = raw_meta if isinstance(raw_meta, dict) else {}
    lang = None
    li = meta.get("language_info")
    if isinstance(li, dict) and isinstance(li.get("name"), str):
        lang = li["name"].lower()
    ks = meta.get("kernelspec")
    if lang is None and isinstance(ks, dict) and isinstance(ks.get("language"), str):
        lang = ks["language"].lower()
    raw_cells: list[object]
    if isinstance(nb.get("cells"), list):
        raw_cells = nb["cells"]
        key = "source"
    elif isinstance(nb.get("worksheets"), list):
        raw_cells = [c for ws in nb["worksheets"] if isinstance(ws, dict) and isinstance(ws.get("cells"), list)
                     for c in ws["cells"]]
        key = "input"
    else:
        raise NotebookError("no 'cells' (nbformat 4) or 'worksheets' (nbformat 3)", 1)
    cells = []
    for i, c in enumerate(raw_cells):
        if isinstance(c, dict) and c.get("cell_type") == "code":
            cells.append(Cell(i, _text(c.get(key, c.get("source", "")))))
    return cells, lang
