"""PEP 723 inline script metadata: the ``# /// script`` block of a ``.py`` file.

MatBench Discovery requires one in every custom script (its ``contributing.md``), and ``uv run``
installs from it::

    # /// script
    # requires-python = ">=3.12,<3.13"
    # dependencies = [
    #   "alignn==2026.5.20",
    #   "matbench-discovery",
    # ]
    #
    # [tool.uv.sources]
    # matbench-discovery = { path = "../..", editable = true }
    # ///

The block is found with the PEP's own reference regular expression and read with ``tomllib``,
as the PEP specifies (``read`` is its reference ``read``). What pyrepro takes from it:

* ``dependencies``: declared requirements, each located at its own line of the file, read by the
  one requirement reader (``metadata._req``);
* ``requires-python``: a statement of the Python (``evidence.python_evidence`` reads it through
  ``requires_python``);
* ``[tool.uv.sources]``: a ``git`` source makes its requirement a VCS declaration; a ``path``,
  ``workspace`` or ``url`` source is no PyPI name (not read, said so, as Poetry's path entries);
* uv's package sources (``index-url``, ``extra-index-url``, ``find-links``, ``[[tool.uv.index]]``):
  refused with their line (``metadata.PackageSource``).

Two ``script`` blocks in one file, or a block that is not valid TOML, make the file's metadata
unreadable (uv refuses such a script too): one warning with the line, nothing read, and
``init`` refuses the folder as it does a broken ``pyproject.toml``. Nothing here raises.

``extract`` is a pure function of the text whose result is JSON-able (the per-file scan cache keeps
it); ``declarations`` turns it into declarations once the file's path is known.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from typing import Any

from packaging.utils import canonicalize_name

from pyrepro.scan import metadata as meta

# The reference implementation's expression (PEP 723, "Reference Implementation"), unchanged.
REGEX = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")
MARKER = "# /// "  # every block starts with it: a file without it is not searched
BLOCK_TYPE = "script"
UV_INDEX_KEYS = ("index-url", "extra-index-url", "find-links")


@dataclass(frozen=True)
class Block:
    type: str
    line: int  # the line of its ``# /// <type>`` opener (1-based)
    content: str  # the TOML text: each line without its leading ``# `` (or ``#``), as the PEP reads it
    lines: tuple[str, ...] = ()  # the block's comment lines as written (split at newlines only), for locations


def blocks(text: str) -> list[Block]:
    """Every metadata block of ``text``, in order (any type)."""
    if MARKER not in text:
        return []
    out = []
    for m in REGEX.finditer(text):
        content = "".join(line[2:] if line.startswith("# ") else line[1:]
                          for line in m.group("content").splitlines(keepends=True))
        out.append(Block(m.group("type"), text.count("\n", 0, m.start()) + 1, content,
                         tuple(m.group("content").split("\n")[:-1])))
    return out


def read(text: str) -> dict[str, Any] | None:
    """The PEP's reference ``read``: the ``script`` block's TOML as a dict, None without one;
    ``ValueError`` for two blocks, ``tomllib.TOMLDecodeError`` for bad TOML."""
    found = [b for b in blocks(text) if b.type == BLOCK_TYPE]
    if len(found) > 1:
        raise ValueError(f"Multiple {BLOCK_TYPE} blocks found")
    return tomllib.loads(found[0].content) if found else None


def _lines_of(block: Block, needle: str, start: int = 0) -> int | None:
    """The file line of the first block line at or after ``start`` (0-based, in the block) that
    holds ``needle`` as a TOML string (quoted), else as written."""
    for wanted in (f'"{needle}"', f"'{needle}'", needle):
        for k, line in enumerate(block.lines):
            if k >= start and wanted in line:
                return block.line + 1 + k
    return None


def _key_line(block: Block, key: str) -> int | None:
    """The file line where ``key`` (a bare TOML key, or a ``[table]`` header) is written."""
    rx = re.compile(rf"^#\s*(?:{re.escape(key)}\s*=|\[\[?\s*{re.escape(key)}\s*\]\]?)")
    for k, line in enumerate(block.lines):
        if rx.match(line):
            return block.line + 1 + k
    return None


def _strings(x: object) -> list[str]:
    if isinstance(x, str):
        return [x]
    return [s for s in x if isinstance(s, str)] if isinstance(x, list) else []


def extract(text: str) -> dict[str, Any]:
    """The script metadata of a file's text as a JSON-able record (no path):
    ``{"dependencies": [[spec, line]], "requires_python": [spec, line] | None,
    "sources": [[option, url, line]], "uv_sources": [[name, kind, value, ref, line]],
    "warnings": [[line, message]], "unreadable": bool}``; every list is empty without a block."""
    out: dict[str, Any] = {"dependencies": [], "requires_python": None, "sources": [], "uv_sources": [],
                           "warnings": [], "unreadable": False}
    found = [b for b in blocks(text) if b.type == BLOCK_TYPE]
    if not found:
        return out
    if len(found) > 1:
        out["warnings"].append([found[1].line, f"{len(found)} `# /// script` blocks (lines "
                                f"{', '.join(str(b.line) for b in found)}); PEP 723 allows one: none read (uv "
                                "refuses this script too): keep one"])
        out["unreadable"] = True
        return out
    block = found[0]
    try:
        data = tomllib.loads(block.content)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:  # arrays nested thousands deep: RecursionError
        said = re.search(r"at line (\d+)", str(exc))
        closer = block.line + len(block.lines) + 1  # the `# ///` line: where "at end of document" is
        line = min(block.line + int(said.group(1)), closer) if said else closer if "end of document" in str(exc) \
            else block.line
        why = str(exc).splitlines()[0][:120] if isinstance(exc, tomllib.TOMLDecodeError) else "nested too deep"
        out["warnings"].append([line, f"the `# /// script` block is not valid TOML ({why}); its dependencies were "
                                      "not read: fix the block"])
        out["unreadable"] = True
        return out
    deps = data.get("dependencies")
    if deps is not None and not isinstance(deps, list):
        out["warnings"].append([_key_line(block, "dependencies") or block.line,
                                "`dependencies` of the `# /// script` block is not a list of strings; not read"])
        deps = []
    key = _key_line(block, "dependencies")
    at = key - block.line - 1 if key else 0
    for item in deps or []:
        if not isinstance(item, str):
            out["warnings"].append([_key_line(block, "dependencies") or block.line,
                                    f"dependency {str(item)[:60]!r} is not a string; not read"])
            continue
        where = _lines_of(block, item, at)
        if where is not None:
            at = where - block.line - 1  # the next item is on this line or a later one
        out["dependencies"].append([item, where or key or block.line])
    rp = data.get("requires-python")
    if isinstance(rp, str):
        out["requires_python"] = [rp, _key_line(block, "requires-python") or block.line]
    elif rp is not None:
        out["warnings"].append([_key_line(block, "requires-python") or block.line,
                                "`requires-python` is not a string; not read"])
    tool = data.get("tool")
    uv = tool.get("uv") if isinstance(tool, dict) else None
    if isinstance(uv, dict):
        _uv(uv, block, out)
    return out


def _uv(uv: dict[str, Any], block: Block, out: dict[str, Any]) -> None:
    """uv's settings in the block: its package sources and its per-package sources."""
    for key in UV_INDEX_KEYS:
        for url in _strings(uv.get(key)):
            out["sources"].append([f"tool.uv {key}", url, _lines_of(block, url) or _key_line(block, key) or block.line])
    for idx in uv.get("index", []) if isinstance(uv.get("index"), list) else []:
        if isinstance(idx, dict) and isinstance(idx.get("url"), str):
            name = f" {idx['name']}" if isinstance(idx.get("name"), str) else ""
            out["sources"].append([f"[[tool.uv.index]]{name}", idx["url"],
                                   _lines_of(block, idx["url"]) or _key_line(block, "tool.uv.index") or block.line])
    sources = uv.get("sources")
    for name, val in sources.items() if isinstance(sources, dict) else []:
        line = _lines_of(block, f"{name} =") or _lines_of(block, str(name)) or block.line
        for v in val if isinstance(val, list) else [val]:  # a list: one source per marker
            if not isinstance(v, dict):
                continue
            kind = next((k for k in ("git", "path", "url", "index", "workspace") if k in v), "")
            ref = next((str(v[k]) for k in ("rev", "tag", "branch") if k in v), "")
            out["uv_sources"].append([str(name), kind, str(v.get(kind, "")), ref, line])


def declarations(record: dict[str, Any], path: str) -> meta.MetaScan:
    """The declarations, package sources and warnings of ``extract``'s record for the file at ``path``."""
    warnings: meta.Warnings = [(path, line, msg) for line, msg in record.get("warnings", ())]
    if record.get("unreadable"):
        return meta.MetaScan((), tuple(warnings), unreadable=True)
    by_name: dict[str, tuple[str, str, str, int]] = {}
    for name, kind, value, ref, line in record.get("uv_sources", ()):
        by_name.setdefault(canonicalize_name(name), (kind, value, ref, line))
    out: list[meta.Declared] = []
    for spec, line in record.get("dependencies", ()):
        d = meta._req(spec, path, line, warnings)
        if d is None:
            continue
        src = by_name.get(d.name)
        if src is None:
            out.append(d)
            continue
        kind, value, ref, sline = src
        if kind == "git":  # uv installs it from the repository: a VCS declaration, never a PyPI name
            url = value if value.startswith("git+") else f"git+{value}"
            if (v := meta._req(f"{d.name} @ {url}{'@' + ref if ref else ''}", path, line, warnings)) is not None:
                out.append(v)
        elif kind == "url":
            if (v := meta._req(f"{d.name} @ {value}", path, line, warnings)) is not None:
                out.append(v)
        elif kind == "index":  # a named [[tool.uv.index]], refused below with its address
            warnings.append((path, sline, f"{d.name} comes from the uv index {value!r}, not PyPI; read as "
                                          f"{d.spec} from PyPI"))
            out.append(d)
        else:  # path, workspace: code beside the script, not an index
            where = value or "the uv workspace"
            warnings.append((path, sline, f"{d.name} comes from {where[:60]} ([tool.uv.sources]), not an index: not "
                                          "read, and not a PyPI name (the platform's or the submission's own code, "
                                          "or a review item)"))
    sources = [meta.PackageSource(option, url, path, line) for option, url, line in record.get("sources", ())]
    warnings.extend((s.path, s.line, s.message()) for s in sources)
    return meta.MetaScan(tuple(out), tuple(warnings), sources=tuple(sources))


def parse_script(text: str, path: str) -> meta.MetaScan:
    """The declarations of a script's ``# /// script`` block (nothing without one)."""
    return declarations(extract(text), path)


def requires_python(text: str) -> tuple[str, int] | None:
    """(``requires-python`` as written, its line) of the script's block, or None."""
    rp = extract(text)["requires_python"]
    return (rp[0], rp[1]) if rp else None
